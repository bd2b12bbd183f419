// Sampler: picks the next token from a row of logits.
//
// The order of the steps follows llama.cpp's default chain: repetition penalty, then at
// temperature 0 the arg max (greedy; ties go to the lowest id); otherwise top-k, top-p
// (on the probabilities at temperature 1), temperature, and a draw from the remaining
// distribution with a seeded generator (the same seed gives the same tokens).
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "tessera/status.h"

namespace tessera::llm {

struct SamplerOptions {
  float temperature = 0.0f;   // 0: greedy
  int top_k = 40;             // keep the k most likely tokens (<= 0: all)
  float top_p = 0.95f;        // keep the smallest set with probability >= top_p (>= 1: all)
  float repeat_penalty = 1.0f;  // > 1 discourages tokens among the last repeat_last_n
  int repeat_last_n = 64;
  uint64_t seed = 0;
};

class Sampler {
 public:
  explicit Sampler(SamplerOptions o);
  // Checks option ranges (temperature >= 0, top_p in (0, 1], repeat_penalty > 0).
  static Status validate(const SamplerOptions& o);

  // The next token for `logits` [vocab]; `history` holds the tokens so far (for the
  // repetition penalty).
  int32_t sample(std::span<const float> logits, std::span<const int32_t> history);

 private:
  SamplerOptions o_;
  std::mt19937_64 rng_;
  std::vector<float> work_;                      // [vocab] penalised logits
  std::vector<std::pair<float, int32_t>> cand_;  // candidates (logit or probability, id)
};

}  // namespace tessera::llm
