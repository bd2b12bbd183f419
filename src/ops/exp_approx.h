// e^x in float (and TFLite's float tanh, below), one definition for every path that vectorises it (the cpu's attention
// softmax and silu; their AVX2 twins in backend/cpu/x86/exp_avx2.h compute the same bits):
// x < -87 gives 0, x > 88 gives +inf, NaN stays NaN, otherwise within 2 ulp of e^x.
// x = n ln2 + r with n = round(x log2 e) (rounded by adding 1.5 * 2^23 in one fma), r by the
// two-part ln 2 of Cody and Waite, e^r by its Taylor polynomial of degree 7 in Horner form
// (|r| <= ln2 / 2: the first omitted term is below 2^-28), times 2^n built in the exponent
// bits. Defined out of line in a file compiled without fma contraction.
#pragma once

#include <cstdint>

namespace tessera::ops {

namespace expc {
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kMagic = 12582912.0f;  // 1.5 * 2^23
constexpr uint32_t kMagicBits = 0x4B400000u;
constexpr float kLn2Hi = 0.693145751953125f;
constexpr float kLn2Lo = 1.42860682030941723212e-6f;
constexpr float kLow = -87.0f, kHigh = 88.0f;
constexpr float kC[8] = {1.0f, 1.0f, 0.5f, 1.0f / 6, 1.0f / 24, 1.0f / 120, 1.0f / 720, 1.0f / 5040};
}  // namespace expc

float exp_approx(float x);

// silu(x) = x / (1 + exp_approx(-x)).
float silu_value(float x);

// tanh(x) as TFLite's float TANH computes it (its builtin kernel evaluates Eigen's tanh,
// generic_fast_tanh_float without fma): x clamped to +-7.90531110763549805, the odd degree-13
// over even degree-6 rational polynomial in Horner form, each step a * b + c rounded twice;
// |x| < 0.0004 gives x. Bit-identical to the interpreter on 200,000 seeded inputs, where
// std::tanh differs on more than half (tests/oracle/float_tanh_oracle_test.cpp).
float tanh_value(float x);

}  // namespace tessera::ops
