// libFuzzer target for the base log-probability files of `tessera perplexity
// --kl-divergence` (tools/tessera/kld.h, llama-perplexity's format): any input must open or
// give a Status, and every chunk of a file that opens must read or give a Status and feed
// the statistics, within the size the input implies: never a crash, a sanitizer report or
// an allocation beyond the input.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kld.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera::cli::kld;
  Reader r;
  if (!r.open_bytes(std::vector<uint8_t>(data, data + size), "fuzz").ok()) return 0;
  const Header& h = r.header();
  const int64_t per = scored_per_chunk(h.n_ctx), nv = record_values(h.n_vocab);
  // Logits of the model side: a fixed ramp (the base side is the input).
  std::vector<float> logits(static_cast<size_t>(h.n_vocab));
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<float>(i % 97) * 0.25f - 8.0f;
  std::vector<uint16_t> records;
  Stats stats;
  for (int64_t c = 0; c < h.n_chunk && c < 64; ++c) {
    if (!r.chunk(c, records).ok()) break;
    for (int64_t j = 0; j < per; ++j)
      stats.add(logits, records.data() + j * nv, r.tokens()[static_cast<size_t>(c * h.n_ctx + h.n_ctx / 2 + j + 1)]);
    (void)stats.chunk_line(c + 1);
  }
  (void)stats.summary();
  return 0;
}
