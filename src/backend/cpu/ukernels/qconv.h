// Micro-kernels of the packed quantized conv path (kernels/quant_conv_fast.cpp): an int16
// GEMM tile for conv2d / fully connected, a depthwise row, input centring, and TFLite's
// requantization of int32 accumulators. Each exists as portable scalar code, on x86-64 as
// AVX2 (x86/qconv_avx2.cpp) and on aarch64 as NEON (arm/qconv_neon.cpp); all give the
// reference kernels' exact integers, since int32 sums do not depend on their order and the
// requantization is the same fixed-point arithmetic lane by lane.
//
// Operands are centred int16 (x - x_zp, w - w_zp: within [-255, 255]), so a pair of
// products fits vpmaddwd's int32 lanes exactly; 8-bit operand instructions (vpmaddubsw)
// would saturate on u8 x u8 products and are not used.
#pragma once

#include <cstdint>

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
};

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

struct QConvKernels {
  CentreFn centre;
  GemmPanelFn gemm_panel;
  DwRowFn dw_row;
  AddFn add;  // nullptr (scalar): the cpu keeps its 256 x 256 table for ADD / SUB
  const char* isa;
};

const QConvKernels& scalar_qconv_kernels();
#if defined(__x86_64__)
const QConvKernels& avx2_qconv_kernels();
// The AVX2 kernels with the GEMM's k steps as VNNI vpdpwssd (kind vex or evex; nullptr for
// none). Only for CPUs convert::cpu_vnni() reports.
const QConvKernels* avx2_vnni_qconv_kernels(convert::Vnni kind);
#endif
#if defined(__aarch64__)
const QConvKernels& neon_qconv_kernels();
#endif
// The kernels the cpu uses now: AVX2 (x86-64 CPUs that have it; with VNNI where
// convert::cpu_vnni() finds it) or NEON (aarch64) unless TESSERA_SIMD=scalar or
// convert::set_simd_level() asks for the scalar ones.
const QConvKernels& qconv_kernels();

}  // namespace tessera::cpu::uk
