// The file of base log-probabilities that llama-perplexity writes with
// `--kl-divergence-base FILE` and reads back with `--kl-divergence`, so that one model's
// token distributions can be compared with another's (a quantization against its F16/F32
// original, or Tessera against llama.cpp on the same file) over the same tokens.
//
// Layout (little endian):
//   "_logits_"                       8 bytes
//   n_ctx   u32, n_vocab i32, n_chunk i32
//   tokens  i32 x n_ctx * n_chunk    the text's tokens, chunk after chunk (BOS not substituted)
//   then per chunk, per scored position j = n_ctx/2 .. n_ctx-2 (n_ctx - 1 - n_ctx/2 of them),
//   a record of record_values(n_vocab) u16 values:
//     f32 scale, f32 min_log_prob   (the first four u16 values)
//     n_vocab codes (padded to an even count): log p[i] = scale * code[i] + min_log_prob
//       for the logits within 16 of the largest; the rest are code 0 (at or below the floor).
//
// The statistics (KL divergence, Δp, same top token, ln PPL ratio) are llama-perplexity's
// definitions, so the figures of the two programs compare.
#pragma once

#include <cstdint>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include "tessera/status.h"

namespace tessera::cli::kld {

// u16 values of one scored position's record.
inline int64_t record_values(int64_t n_vocab) { return 2 * ((n_vocab + 1) / 2) + 4; }
// Scored positions per chunk.
inline int64_t scored_per_chunk(int64_t n_ctx) { return n_ctx - 1 - n_ctx / 2; }

struct Header {
  int64_t n_ctx = 0, n_vocab = 0, n_chunk = 0;
};

// The limits a file is held to (beyond them it is refused by name, before any allocation).
constexpr int64_t kMaxCtx = int64_t{1} << 20;
constexpr int64_t kMaxVocab = int64_t{1} << 24;
constexpr int64_t kMaxChunks = int64_t{1} << 30;

// Encodes one position's logits as llama-perplexity does into `out` (record_values(n) values).
void encode(std::span<const float> logits, uint16_t* out);

// Writes a base file as the scored positions come.
class Writer {
 public:
  Status open(const std::string& path, const Header& h, std::span<const int32_t> tokens);
  Status add(std::span<const float> logits);  // the next scored position, in order
  Status close();                             // checks that every record was written

 private:
  std::string path_;
  std::ofstream out_;
  Header h_;
  int64_t written_ = 0;
  std::vector<uint16_t> rec_;
};

// Reads a base file: the header and tokens on open (the file's size must be exactly what
// they imply), then one chunk's records at a time.
class Reader {
 public:
  // `bytes` is the file's content when it is already in memory (the fuzzer); else the path is read.
  Status open(const std::string& path);
  Status open_bytes(std::vector<uint8_t> bytes, const std::string& name);
  const Header& header() const { return h_; }
  const std::vector<int32_t>& tokens() const { return tokens_; }
  // Chunk `c`'s records (scored_per_chunk x record_values values), each checked: finite
  // scale >= 0 and min_log_prob <= 0.
  Status chunk(int64_t c, std::vector<uint16_t>& records);

 private:
  Status parse_header(const uint8_t* p, int64_t size);
  Status check_tokens();  // every token inside the vocabulary; where the records start
  std::string name_;
  std::vector<uint8_t> bytes_;  // whole file when opened from bytes
  std::ifstream in_;
  Header h_;
  std::vector<int32_t> tokens_;
  int64_t records_at_ = 0;  // byte offset of the first record
};

// The running sums of llama-perplexity's KL-divergence mode.
class Stats {
 public:
  // One scored position: the model's logits, the base record, the next token.
  void add(std::span<const float> logits, const uint16_t* base, int32_t tok);
  int64_t count() const { return count_; }
  // "   3    1234.5678 ± 12.3456    0.01234 ± 0.00123    0.00012 ± 0.00001     0.123 ± 0.012 %    98.765 ± 0.123 %"
  std::string chunk_line(int64_t chunk) const;
  static std::string chunk_header();
  // The final blocks: perplexity, KL divergence and token probability statistics.
  std::string summary() const;

 private:
  double sum_nll_ = 0, sum_nll2_ = 0, sum_nll_base_ = 0, sum_nll_base2_ = 0, sum_nll_nll_base_ = 0;
  double sum_kld_ = 0, sum_kld2_ = 0, sum_p_diff_ = 0, sum_p_diff2_ = 0, sum_p_diff4_ = 0;
  int64_t same_top_ = 0, count_ = 0;
  std::vector<float> kld_, p_diff_;
};

}  // namespace tessera::cli::kld
