// Synthetic llama models: a valid GGUF file of any shape with seeded random weights
// (`tessera gguf-synth`, benchmarks and tests), and GGUF block quantizers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "import/gguf/gguf_writer.h"

namespace tessera::gguf {

struct SynthOptions {
  std::string arch = "llama";  // or "qwen2": q/k/v biases (llama.cpp's qwen2 reads NEOX rope)
  int64_t dim = 768;
  int64_t layers = 12;
  int64_t heads = 12;
  int64_t kv_heads = 0;   // 0: same as heads
  int64_t ffn = 2048;
  int64_t vocab = 32000;
  int64_t context = 512;
  DType type = DType::q8_0;  // matrices: f32, f16, q8_0 or q4_0; norms stay f32
  bool tied_output = false;  // no output.weight: logits use token_embd
  uint64_t seed = 1;
  double rope_base = 10000.0;
  // The file is built in memory: refuse shapes whose weights need more bytes than this.
  int64_t max_bytes = int64_t{4} << 30;
};

// Bytes of the weights synth_llama would write (overflow-checked), before any is made.
Result<int64_t> synth_weight_bytes(const SynthOptions& o);

// The writer holding the whole model (metadata, a byte-fallback vocabulary, weights).
Result<Writer> synth_llama(const SynthOptions& o);

// ggml's reference quantizers (quantize_row_q8_0_ref / quantize_row_q4_0_ref): `n` values
// (a multiple of 32) -> n/32 blocks.
std::vector<uint8_t> quantize_q8_0(const float* x, int64_t n);
std::vector<uint8_t> quantize_q4_0(const float* x, int64_t n);
// f32 values -> stored bytes of `t` (f32, f16, bf16, q8_0, q4_0).
Result<std::vector<uint8_t>> encode_values(const std::vector<float>& x, DType t);

}  // namespace tessera::gguf
