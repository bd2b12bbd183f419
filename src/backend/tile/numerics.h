// The tile device's arithmetic (the device model's numerics, docs/tile-device.md).
//
// Matrix engine (matmul, fully connected, convolutions): operands enter 19-bit source
// registers (sign, 8-bit exponent, 10 stored mantissa bits: 11 significant bits; values
// with more bits are truncated toward zero). The multiplier takes 7 significant bits of
// in0 (activations) and 5 of in1 (weights) per pass (tile-device.md "Arithmetic"); each
// fidelity adds passes over the low bits:
//   LoFi : in0[hi 7] x in1[hi 5]                       1 pass
//   HiFi2: + in0[hi 7] x in1[lo 6]   (in1 complete)     2 passes
//   HiFi3: + in0[lo 4] x in1[hi 5]                      3 passes
//   HiFi4: + in0[lo 4] x in1[lo 6]   (both complete)    4 passes
// so bfp4_b operands are exact at LoFi, bfp8_b as in0 at LoFi and as in1 at HiFi2, bf16
// in1 at HiFi2 and bf16 in0 at HiFi3. Products are exact; they are summed in float32
// (fp32 destination accumulation) or, with bf16 accumulation, in float32 chunks of 16
// terms that are added to a bfloat16 accumulator rounded to nearest even after each chunk.
// Vector-engine ops (elementwise, softmax, norms, ...) compute in float32.
//
// Requantization (the integer path of quantized convolutions): the vector engine scales an
// integer sum to output codes with float32 operations only, with the multiplier the host
// derives as TFLite does (a Q31 significand and a power-of-two shift) and TFLite's rounding
// structure: once (half up) for int8 CONV_2D / FULLY_CONNECTED, twice (the high multiply
// half up, then the shift half away from zero) for DEPTHWISE_CONV_2D and uint8 models. The
// Q31 significand is held as two float32 values (24 + 7 bits) and the product
// sum x significand is formed without loss (Dekker's two-product: Veltkamp splits into
// 12-bit halves whose products float32 holds exactly), so a rounding decision can differ
// from the integer arithmetic only where the exact product lies within about 2^-25 of a
// rounding boundary (true near-ties), not within float32's 2^-24 relative.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tessera::tile {

enum class Fidelity : uint8_t { lofi, hifi2, hifi3, hifi4 };
enum class Accumulate : uint8_t { fp32, bf16 };

// Passes of the matrix engine per multiply: 1, 2, 3, 4 (tile-device.md).
int fidelity_passes(Fidelity f);
const char* fidelity_name(Fidelity f);                               // "LoFi", "HiFi2", ...
std::optional<Fidelity> fidelity_from_name(const std::string& name);  // case-insensitive
const char* accumulate_name(Accumulate a);                            // "fp32", "bf16"
std::optional<Accumulate> accumulate_from_name(const std::string& name);

// Rounds to bfloat16 (nearest even) and back to float; NaN stays NaN.
float round_bf16(float x);
// Keeps the top `bits` significant bits of x (hidden bit included), truncating toward zero.
float keep_significant_bits(float x, int bits);

struct MatrixNumerics {
  Fidelity fidelity = Fidelity::hifi4;
  Accumulate accumulate = Accumulate::fp32;
};

// One matmul operand as the multiplier sees it: each value split into its high and low
// significant bits (hi + lo = the value truncated to the source register's 11 bits).
struct SplitOperand {
  std::vector<float> hi;
  std::vector<float> lo;
};
// Splits values for use as in0 (hi = 7 bits) or in1 (hi = 5 bits).
SplitOperand split_in0(const float* x, int64_t n);
SplitOperand split_in1(const float* x, int64_t n);

// Relative error bound of one product term at fidelity `f` (operand truncation), used as
// DeviceProperties::matrix_product_error. Accumulation rounding comes on top.
double product_error_bound(Fidelity f);

// Sum over k < K of in0[a + k] * in1[b + k] at the given fidelity and accumulation.
float tile_dot(const SplitOperand& in0, int64_t a, const SplitOperand& in1, int64_t b, int64_t K,
               const MatrixNumerics& num);

// A requantization multiplier: real ~= (significand / 2^31) x 2^shift, as TFLite's
// QuantizeMultiplier derives it (significand in [2^30, 2^31), shift clamped to [-31, 30]).
struct Requantizer {
  // The Q31 significand / 2^31, in [0.5, 1): its float32 rounding and the exact remainder.
  float significand = 0, significand_rest = 0;
  int shift = 0;
  bool single_round = false;
  // The integer-valued sum (|sum| < 2^24) scaled and rounded to an integer-valued float32
  // (before the output zero point and clamp).
  float apply(float sum) const;
};
Requantizer make_requantizer(double real, bool single_round);

}  // namespace tessera::tile
