// Tessera's embedding API for LLMs: load a GGUF llama/qwen2 model and generate text.
//
//   tessera::LanguageModelOptions lo;  lo.session.device = "cpu";
//   auto lm = tessera::LanguageModel::load("model.gguf", lo);
//   tessera::GenerateOptions go;  go.max_tokens = 32;
//   auto r = (*lm)->generate("Once upon a time", go, [](std::string_view piece) {
//     std::fwrite(piece.data(), 1, piece.size(), stdout);
//     return true;                                     // false stops generation
//   });
//
// Thread safety: a LanguageModel holds one KV cache and is used by one thread at a time
// (generate, feed and tokenize calls on one object must not overlap). Load one per thread
// to generate concurrently; each maps the file and holds its own cache.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/session.h"
#include "tessera/status.h"
#include "tessera/types.h"

namespace tessera {

struct LanguageModelOptions {
  SessionOptions session;       // device, device options (threads), plan options
  int64_t context = 0;          // KV cache rows; 0: the file's context length, at most 4096
  int64_t batch = 32;           // prompt tokens per step
  int64_t offload_layers = -1;  // >= 0: the first N layers on session.device, the rest on the cpu
  DType kv_type = DType::f16;   // KV cache of the cpu layers: f16 or f32
};

struct GenerateOptions {
  int64_t max_tokens = 64;      // stops earlier at end of sequence or a full context
  float temperature = 0.0f;     // 0: greedy
  int top_k = 40;               // with temperature > 0; <= 0 keeps all
  float top_p = 0.95f;
  float repeat_penalty = 1.0f;
  int repeat_last_n = 64;
  uint64_t seed = 0;
};

struct GenerateResult {
  std::string text;             // the generated text (without the prompt)
  std::vector<int32_t> tokens;  // the generated token ids
  int64_t prompt_tokens = 0;
  double prompt_seconds = 0;
  double generate_seconds = 0;
  bool stopped_at_eos = false;
  bool context_full = false;
};

// Called with each generated piece of text as it is produced; returning false stops.
using TokenCallback = std::function<bool(std::string_view piece)>;

class LanguageModel {
 public:
  static Result<std::unique_ptr<LanguageModel>> load(const std::string& path,
                                                     const LanguageModelOptions& opts = {});
  ~LanguageModel();

  // Starts from an empty cache, feeds the prompt, then samples up to max_tokens tokens.
  Result<GenerateResult> generate(const std::string& prompt, const GenerateOptions& opts = {},
                                  const TokenCallback& on_piece = {});

  // The tokenizer of the file: text to ids (with the file's beginning-of-sequence token
  // when add_bos) and ids back to text.
  std::vector<int32_t> tokenize(const std::string& text, bool add_bos = true) const;
  std::string detokenize(const std::vector<int32_t>& ids) const;
  // Feeds `ids` after the tokens already in the cache and returns the logits [vocab] after
  // the last one; reset() empties the cache.
  Result<std::vector<float>> feed(const std::vector<int32_t>& ids);
  void reset();

  int64_t context_length() const;
  int64_t vocab_size() const;
  int64_t layers() const;
  std::string architecture() const;  // "llama", "qwen2"
  int32_t eos_token() const;
  int32_t bos_token() const;

 private:
  LanguageModel();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera
