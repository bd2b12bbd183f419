// Micro-kernels of the packed quantized conv path (kernels/quant_conv_fast.cpp): an int16
// GEMM tile for conv2d / fully connected, a depthwise row, input centring, and TFLite's
// requantization of int32 accumulators. Each exists as portable scalar code, on x86-64 as
// AVX2, AVX2 with VNNI and AVX512-VNNI sets (x86/qconv_avx2.h, qconv_avx2.cpp,
// qconv_avx512.cpp) and on aarch64 as NEON (arm/qconv_neon.cpp); all give the reference
// kernels' exact integers, since int32 sums do not depend on their order and the
// requantization is the same fixed-point arithmetic lane by lane (or, on AVX-512, a float
// form shown at compile time to give the same result for every sum: float_requant_form).
//
// Operands are centred int16 (x - x_zp, w - w_zp: within [-255, 255]), so a pair of
// products fits vpmaddwd's int32 lanes exactly. Where the kernels have it and a layer's
// weights allow it, conv2d / fully connected take an 8-bit form instead (GemmU8Fn below):
// the raw input bytes (int8 ones read as x + 128) times signed 8-bit weight parts (small
// enough that AVX2's vpmaddubsw pair sums cannot saturate; any signed byte for VNNI's
// vpdpbusd), plus the rest of the weights as a short list of fixes; the same int32 sums.
#pragma once

#include <cstdint>
#include <vector>

#include "convert/simd.h"

namespace tessera::cpu::uk {

// Output channels per packed weight panel (two 8-lane int32 vectors).
constexpr int kPanel = 16;
// Rows of a GEMM micro-tile.
constexpr int kTileRows = 6;

// Per-output-channel requantization: y = clamp(requant(acc + bias) + zp, lo, hi), with
// requant TFLite's MultiplyByQuantizedMultiplier (double rounding: shift left, rounding
// doubling high multiply, rounding divide by 2^rshift) or, with `single_round`, the
// single-rounding form (acc * mult + 2^(30 - shift)) >> (31 - shift) (the micro-kernels keep
// its low 32 bits, where q::multiply_single_round saturates: callers use single rounding
// only with multipliers below 1, which cannot overflow).
struct Requant {
  // Arrays per output channel, padded to whole panels (the SIMD tiles read 16 entries
  // from a panel's first channel whatever its valid count).
  const int32_t* bias = nullptr;    // [channels]
  const int32_t* mult = nullptr;    // [channels] Q31 multiplier, >= 0
  const int32_t* lshift = nullptr;  // [channels] max(shift, 0)
  const int32_t* rshift = nullptr;  // [channels] max(-shift, 0)
  int32_t zp = 0, lo = 0, hi = 255;
  bool single_round = false;
  bool out_i8 = false;              // store int8 (else uint8)
  // Optional (kernel sets with QConvKernels::float_requant): per channel, the float form of
  // the requantization (float_requant_form); fscale 0 where a channel has none.
  const float* fscale = nullptr;
  const float* foff_pos = nullptr;
  const float* foff_neg = nullptr;
};

// The requantization of one channel in float arithmetic: for the sum x (bias included),
//   clamp(floor(fma(float(x), scale, x < 0 ? off_neg : off_pos)) + base, lo, hi)
// (float(x) and the fused multiply-add rounded to nearest, then rounded down), where that
// gives requantize()'s result for every int32 x; false where no (scale, offsets) near the
// real multiplier does. Both are non-decreasing step functions of x, so they are equal
// everywhere when they are equal on both sides of every step of requantize() and at the
// ends of the int32 range: the steps are found with the scalar definition and the float
// form evaluated there as the SIMD kernels compute it. Without `by_sign` the two offsets
// are one (double rounding's ties go away from zero, so a range reaching below the zero
// point needs both). `base` centres the float values (float_rq_base: their rounding error
// grows with their size).
struct FloatRq {
  float scale = 0, off_pos = 0, off_neg = 0;
};
bool float_requant_form(int32_t mult, int32_t lshift, int32_t rshift, bool single_round, int32_t zp, int32_t lo,
                        int32_t hi, bool by_sign, int32_t base, FloatRq& out);
inline int32_t float_rq_base(bool out_i8) { return out_i8 ? 0 : 128; }
// The float form's result for one sum (before the clamp), as the SIMD kernels compute it
// (INT32_MIN where the float is outside int32's range: vcvtps2dq's answer, which the
// kernels' narrowing takes to the low end).
int32_t float_requant_floor(int32_t x, float scale, float offset, int32_t base);

// One accumulator requantized as the reference kernels do (the scalar definition).
int32_t requantize(int32_t acc, int64_t channel, const Requant& rq);

// out[i] = x[i] - zp as int16, for u8 (`is_i8` false) or i8 input.
using CentreFn = void (*)(const uint8_t* x, int64_t n, int32_t zp, bool is_i8, int16_t* out);

// GEMM of an A block [m rows][lda int16, k pairs used] by one packed weight panel
// ([kpairs][kPanel][2] int16: column j, pair p at (p * kPanel + j) * 2), requantized with
// channels n0 .. n0 + nvalid - 1 of `rq`, row r stored at y + r * ldy (nvalid bytes).
using GemmPanelFn = void (*)(int64_t m, int64_t kpairs, const int16_t* a, int64_t lda, const int16_t* panel,
                             const Requant& rq, int64_t n0, int nvalid, uint8_t* y, int64_t ldy);

// One output row of a depthwise conv (depth multiplier 1). The input is centred and
// padded: channels rounded up to a multiple of kPanel (`cpad`), borders zero, so every tap
// is in bounds. Output pixel ox reads tap t at x + ox * xstep + tap_off[t] (int16 units).
// Weights: per group of kPanel channels, per pair of taps (the last pair's second tap zero
// when taps are odd), 32 int16 in the order of DwLayout below. Requantization arrays
// follow the same per-group permutation (see dw_lane_channel).
struct DwRow {
  const int16_t* x = nullptr;
  int64_t xstep = 0;
  const int64_t* tap_off = nullptr;
  int taps = 0;
  int64_t ow = 0;
  int64_t cpad = 0, channels = 0;
  const int16_t* w = nullptr;
  const Requant* rq = nullptr;      // arrays permuted per group: lane l of group g is channel g*16 + dw_lane_channel(l)
  uint8_t* y = nullptr;             // output row: [ow][channels] bytes
  // The calling thread's previous call was a row of the same op (same w, rq, cpad, taps):
  // the kernel may reuse what it derived from them then (the requantization constants).
  bool same_op = false;
};
using DwRowFn = void (*)(const DwRow& r);

// The channel (within a group of 16) that accumulator lane l (0..15) holds: the AVX2 row
// interleaves two taps with unpacklo/unpackhi, which split each 128-bit half.
constexpr int dw_lane_channel(int l) { return (l < 8 ? 0 : 4) + (l % 8 < 4 ? l % 4 : 8 + l % 4); }

// TFLite's quantized ADD / SUB of 8-bit operands of one shape (q::add_codes, then the
// activation clamp): each operand less its zero point, shifted left by 20, times its Q31
// multiplier (double rounding, as q::multiply); sum or difference; times the output
// multiplier; plus the output zero point; clamped. Multipliers as in Requant (Q31 >= 0,
// lshift = max(shift, 0), rshift = max(-shift, 0)). Zero points within the dtype's range.
struct QAdd {
  int32_t z1 = 0, z2 = 0, zo = 0, lo = 0, hi = 255;
  int32_t mult[3] = {0, 0, 0}, lshift[3] = {0, 0, 0}, rshift[3] = {0, 0, 0};  // a, b, output
  bool subtract = false;
  bool i8 = false;
};
using AddFn = void (*)(const uint8_t* a, const uint8_t* b, int64_t n, const QAdd& p, uint8_t* y);

// ---- u8 x s8 GEMM (AVX2 vpmaddubsw) ----
//
// sum_k (x_k - x_zp) v_k = sum_k x_k v_k - x_zp sum_k v_k: the raw u8 input x times the
// centred weights v = w - w_zp, the second term folded into the bias. vpmaddubsw adds two
// u8 x s8 products into a saturating int16; with x <= 255 a pair of weight parts (s1, s2)
// with |s1| + |s2| <= 128 gives at most 255 * 128 = 32640, so it never saturates. Each pair
// of centred weights (k = 2i, 2i + 1 of one channel) is split by split_u8s8: kept whole
// where it allows that, else both parts clamped to [-64, 64] and the rest (v - s, nonzero
// for few weights of a trained layer: a weight's size is mostly well below the range its
// quantization spans) kept as a fix, added to the int32 sum before the requantization.
inline void split_u8s8(int32_t v1, int32_t v2, int32_t& s1, int32_t& s2) {
  const auto mag = [](int32_t v) { return v < 0 ? -v : v; };
  if (v1 >= -128 && v1 <= 127 && v2 >= -128 && v2 <= 127 && mag(v1) + mag(v2) <= 128) {
    s1 = v1, s2 = v2;
    return;
  }
  s1 = v1 < -64 ? -64 : v1 > 64 ? 64 : v1;
  s2 = v2 < -64 ? -64 : v2 > 64 ? 64 : v2;
}

// How a layer's centred weights are cut into the panels' signed 8-bit parts:
//  - pairs (vpmaddubsw, AVX2): split_u8s8 per pair of k values, so no int16 pair sum saturates;
//  - bytes (vpdpbusd, VNNI: four u8 x s8 products added straight into int32, nothing to
//    saturate): each weight clamped to [-128, 127] alone (u8 models' centred weights span
//    [-255, 255]; int8 models' weights always fit, so their layers have no fixes at all).
enum class U8Split { pairs, bytes };

// One fix: channel `lane` of the panel gets a[row][k] * r added to its sum.
struct U8Fix {
  int32_t k = 0, lane = 0, r = 0;
};

// The 8-bit form of a layer's centred weights v ([oc][k] row-major, |v| <= 255, k a
// multiple of 4): panels of split_u8s8's parts ([npanels][kquads][kPanel][4]), the fixes of
// panel p at fixes[fix_start[p] .. fix_start[p + 1]), and sum_k v per channel (for the
// bias). Returns false, `out` unspecified, where more than max_fixes fixes would be needed.
struct U8Panels {
  int64_t kquads = 0, npanels = 0;
  std::vector<int8_t> panels;
  std::vector<U8Fix> fixes;
  std::vector<int64_t> fix_start;
  std::vector<int64_t> vsum;
};
bool pack_u8_panels(const int16_t* v, int64_t oc, int64_t k, int64_t max_fixes, U8Panels& out,
                    U8Split split = U8Split::pairs);

// GEMM of raw u8 A rows [m][lda bytes, 4 * kquads used] by one s8 panel
// ([kquads][kPanel][4]: channel j, k = 4q + t at (q * kPanel + j) * 4 + t) plus the panel's
// fixes, requantized as GemmPanelFn (rq.bias holds the bias less x_zp * sum_k v_k).
using GemmU8Fn = void (*)(int64_t m, int64_t kquads, const uint8_t* a, int64_t lda, const int8_t* panel,
                          const U8Fix* fix, int64_t nfix, const Requant& rq, int64_t n0, int nvalid, uint8_t* y,
                          int64_t ldy);
// The scalar definition of GemmU8Fn (the tests' reference; the cpu's fallback when a
// program changes the SIMD level after compiling a network).
void gemm_u8_scalar(int64_t m, int64_t kquads, const uint8_t* a, int64_t lda, const int8_t* panel, const U8Fix* fix,
                    int64_t nfix, const Requant& rq, int64_t n0, int nvalid, uint8_t* y, int64_t ldy);
// The same for int8 input: each byte x read as the u8 x + 128 (its top bit flipped), so
// sum_k (x_k - x_zp) v_k = sum_k (x_k + 128) v_k - (x_zp + 128) sum_k v_k, the second term
// again in the bias. Fixes multiply the flipped byte too.
void gemm_u8_flip_scalar(int64_t m, int64_t kquads, const uint8_t* a, int64_t lda, const int8_t* panel,
                         const U8Fix* fix, int64_t nfix, const Requant& rq, int64_t n0, int nvalid, uint8_t* y,
                         int64_t ldy);

// Two adjacent panels at once (panel1 = panel0 + kquads * kPanel * 4): channels n0 .. n0 + 15
// (all valid; fixes fix0) and n0 + 16 .. n0 + 15 + nvalid1 (fixes fix1), rows stored from y
// (the second panel's bytes from y + 16). The same bytes as GemmU8Fn on each panel.
using GemmU8PairFn = void (*)(int64_t m, int64_t kquads, const uint8_t* a, int64_t lda, const int8_t* panel0,
                              const U8Fix* fix0, int64_t nfix0, const U8Fix* fix1, int64_t nfix1, const Requant& rq,
                              int64_t n0, int nvalid1, uint8_t* y, int64_t ldy);

struct QConvKernels {
  CentreFn centre;
  GemmPanelFn gemm_panel;
  DwRowFn dw_row;
  AddFn add;  // nullptr (scalar): the cpu keeps its 256 x 256 table for ADD / SUB
  const char* isa;
  GemmU8Fn gemm_u8;       // nullptr: the int16 GEMM for every layer
  GemmU8Fn gemm_u8_flip;  // int8 input (gemm_u8_flip_scalar); nullptr: int8 layers take the int16 GEMM
  U8Split u8_split;       // the weight parts gemm_u8 / gemm_u8_flip are exact for
  int u8_tile_rows;       // rows of gemm_u8's full tile (row blocks are cut in multiples of it)
  GemmU8PairFn gemm_u8_pair = nullptr;       // nullptr: gemm_u8 panel by panel
  GemmU8PairFn gemm_u8_pair_flip = nullptr;  // the same for int8 input
  bool float_requant = false;  // the kernels read Requant::fscale / foff_pos / foff_neg (prepare fills them)
};

const QConvKernels& scalar_qconv_kernels();
#if defined(__x86_64__)
const QConvKernels& avx2_qconv_kernels();
// The AVX2 kernels with VNNI's k steps (kind vex or evex; nullptr for none): the int16 GEMM
// as vpdpwssd, the 8-bit GEMM as vpdpbusd (U8Split::bytes, for u8 and int8 input). Only for
// CPUs convert::cpu_vnni() reports.
const QConvKernels* avx2_vnni_qconv_kernels(convert::Vnni kind);
// The same with the 8-bit GEMM on 512-bit vectors (one vector per panel row); nullptr
// unless convert::cpu_avx512_vnni().
const QConvKernels* avx512_vnni_qconv_kernels();
#endif
#if defined(__aarch64__)
const QConvKernels& neon_qconv_kernels();
#endif
// The kernels the cpu uses now: AVX2 (x86-64 CPUs that have it; with AVX512-VNNI or
// VNNI where convert::cpu_avx512_vnni() / cpu_vnni() find them) or NEON (aarch64) unless TESSERA_SIMD=scalar or
// convert::set_simd_level() asks for the scalar ones.
const QConvKernels& qconv_kernels();

}  // namespace tessera::cpu::uk
