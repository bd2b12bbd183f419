// e^x in float as the TFLite interpreter computes it: its float EXP and LOGISTIC kernels call
// the expf of the C library it is built with, a double-precision design this function follows
// step for step, so its results are the interpreter's bit for bit by construction (the
// oracle tests in tests/oracle/float_logistic_oracle_test.cpp hold it to that). The cpu's
// reference kernels take e^x from here, not from the host's libm: glibc's expf (x86-64) equals
// it on every float but two, x = 0x1.04845ep+5 and x = -0x1.f8cbb2p+5, where exp_f32 gives
// the correctly rounded result and glibc the other neighbour (found by a run over all 2^32
// floats); other C libraries may differ more.
//
// The method, in double: x = (k + r) ln2 / 32 with k = round(32 x / ln2) (rounded by adding
// 1.5 * 2^52 and reading k from the low bits) and |r| <= 1/2; e^x = 2^(k / 32) * 2^(r / 32),
// where 2^(k / 32) = 2^floor(k / 32) * 2^((k mod 32) / 32) comes from a 32-entry table with the
// integer part added into the exponent bits, and 2^(r / 32) from a degree-3 polynomial in r.
// The double result is rounded to float once. x > kHigh gives +inf, x < kLow gives +0 (and
// -inf gives +0), NaN gives NaN (x + x, quieted). Defined out of line in a file compiled
// without fma contraction; the vector twins (backend/cpu/x86/unary_avx2.cpp, unary_avx512.cpp,
// backend/cpu/arm/unary_neon.cpp) compute the same operations in the same order and equal it
// on every float.
#pragma once

#include <cstdint>

namespace tessera::ops {

namespace expf32 {
// 32 / ln 2 and the rounding constant 1.5 * 2^52.
constexpr double kInvLn2N = 0x1.71547652b82fep+0 * 32;
constexpr double kShift = 0x1.8p+52;
// 2^(r / 32) ~ 1 + kC2 r + kC1 r^2 + kC0 r^3 (r in units of 1/32 of a binary exponent).
constexpr double kC0 = 0x1.c6af84b912394p-5 / 32 / 32 / 32;
constexpr double kC1 = 0x1.ebfce50fac4f3p-3 / 32 / 32;
constexpr double kC2 = 0x1.62e42ff0c52d6p-1 / 32;
// Past these e^x overflows to +inf / underflows to +0 in float.
constexpr float kHigh = 0x1.62e42ep6f;   // 88.72283...
constexpr float kLow = -0x1.9fe368p6f;   // -103.97207...
// kTable[i] = the bits of 2^(i / 32) in double (rounded to nearest) minus i << 47, so that adding
// k << 47 (k = 32 q + i) adds q to the exponent and cancels the i. Checked against exp2l in
// tests/runtime/exp_f32_test.cpp.
constexpr uint64_t kTable[32] = {
    0x3ff0000000000000ull, 0x3fefd9b0d3158574ull, 0x3fefb5586cf9890full, 0x3fef9301d0125b51ull,
    0x3fef72b83c7d517bull, 0x3fef54873168b9aaull, 0x3fef387a6e756238ull, 0x3fef1e9df51fdee1ull,
    0x3fef06fe0a31b715ull, 0x3feef1a7373aa9cbull, 0x3feedea64c123422ull, 0x3feece086061892dull,
    0x3feebfdad5362a27ull, 0x3feeb42b569d4f82ull, 0x3feeab07dd485429ull, 0x3feea47eb03a5585ull,
    0x3feea09e667f3bcdull, 0x3fee9f75e8ec5f74ull, 0x3feea11473eb0187ull, 0x3feea589994cce13ull,
    0x3feeace5422aa0dbull, 0x3feeb737b0cdc5e5ull, 0x3feec49182a3f090ull, 0x3feed503b23e255dull,
    0x3feee89f995ad3adull, 0x3feeff76f2fb5e47ull, 0x3fef199bdd85529cull, 0x3fef3720dcef9069ull,
    0x3fef5818dcfba487ull, 0x3fef7c97337b9b5full, 0x3fefa4afa2a490daull, 0x3fefd0765b6e4540ull,
};
}  // namespace expf32

float exp_f32(float x);

}  // namespace tessera::ops
