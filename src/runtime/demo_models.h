// The built-in demo models: small graphs with seeded weights, built in memory (no file),
// used by `tessera demo` and by tests.
//
//  - quantized_cnn: a TFLite-style uint8 image classifier,
//      x u8[1,16,16,3] -> conv2d 3x3/2 (8 ch, relu6) -> depthwise_conv2d 3x3 (relu6)
//      -> avg_pool2d 8x8 -> reshape [1,8] -> fully_connected (10) -> softmax -> u8[1,10]
//    with per-tensor u8 weights, i32 biases at scale in_scale * w_scale, and TFLite's fixed
//    softmax output parameters (scale 1/256, zero point 0).
//  - transformer_block: one llama-style decoder block over a KV cache,
//      h = x + W_o attention(rope(W_q rms_norm(x)), rope(W_k ..), W_v ..) with a causal mask
//      out = h + W_down (silu(W_gate rms_norm(h)) * W_up rms_norm(h))
//    with f16 attention weights, q8_0 gate/up and q4_0 down projections (as GGUF stores
//    them), and two runs: a prompt of T tokens at position 0, then T more at position T,
//    whose attention reads the keys and values the first run left in the cache.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/graph.h"
#include "tessera/backend/plan.h"

namespace tessera::demo {

struct DemoModel {
  std::string name;         // "quantized CNN"
  std::string description;  // one line: the layers
  Graph graph;
  // Per run, the host bytes of every graph input, in graph.inputs order. State tensors
  // (the KV cache) carry over from one run to the next.
  std::vector<std::vector<std::vector<uint8_t>>> runs;
};

DemoModel quantized_cnn(uint32_t seed);

struct TransformerConfig {
  int64_t tokens = 6;      // T: tokens per run
  int64_t dim = 64;        // D: model width (a multiple of 32 for the GGUF block weights)
  int64_t heads = 4;       // H: attention heads; head_dim = D / H
  int64_t ffn = 128;       // F: feed-forward width (a multiple of 32)
  int64_t context = 16;    // L: KV cache rows (>= 2 T)
  double rope_base = 10000.0;
  double eps = 1e-5;       // rms_norm epsilon
};
DemoModel transformer_block(uint32_t seed, const TransformerConfig& cfg = {});

// Names of the transformer block's tensors, for tests that compute it independently.
namespace names {
inline constexpr const char* kX = "x";                // input f32 [T, D]
inline constexpr const char* kPos = "pos";            // input i32 [1]: first position
inline constexpr const char* kPositions = "positions";  // input i32 [T]: pos + 0..T-1
inline constexpr const char* kMask = "mask";          // input f32 [T, L]: 0 or -inf
inline constexpr const char* kKCache = "k_cache";     // state f32 [H, L, D/H]
inline constexpr const char* kVCache = "v_cache";     // state f32 [H, L, D/H]
}  // namespace names

// The tolerance within which a device's output should agree with the cpu's, derived from
// the formats of the plan: each node adds the unit error of the coarsest encoding that
// holds one of its tensors in a coarser form than the tensor's dtype, plus f32 rounding of
// its sums (relative to `output_scale`, the largest |cpu output|), and each quantized
// arithmetic node may round one code differently (TFLite fixed point vs a device's own
// requantization). For quantized outputs the result is in codes.
double agreement_tolerance(const Plan& plan, double output_scale, bool quantized_output);

}  // namespace tessera::demo
