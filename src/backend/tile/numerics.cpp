#include "backend/tile/numerics.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>

namespace tessera::tile {

namespace {
// Wormhole source registers hold 19-bit values: 10 stored mantissa bits (tt-isa-documentation,
// "SrcA/SrcB"), i.e. 11 significant bits with the hidden bit.
constexpr int kSourceRegisterBits = 11;
// tile-device.md "Arithmetic": one LoFi pass uses the top 7 significant bits of in0 and 5 of in1.
constexpr int kIn0PassBits = 7;
constexpr int kIn1PassBits = 5;
// tile-device.md: with bf16 accumulation the destination is rounded after every 16 terms.
constexpr int64_t kBf16AccumulateChunk = 16;

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

SplitOperand split(const float* x, int64_t n, int hi_bits) {
  SplitOperand s;
  s.hi.resize(static_cast<size_t>(n));
  s.lo.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    float full = keep_significant_bits(x[i], kSourceRegisterBits);
    float hi = keep_significant_bits(full, hi_bits);
    s.hi[i] = hi;
    s.lo[i] = full - hi;  // exact: the bits below `hi`
  }
  return s;
}
}  // namespace

int fidelity_passes(Fidelity f) { return static_cast<int>(f) + 1; }

const char* fidelity_name(Fidelity f) {
  switch (f) {
    case Fidelity::lofi: return "LoFi";
    case Fidelity::hifi2: return "HiFi2";
    case Fidelity::hifi3: return "HiFi3";
    case Fidelity::hifi4: return "HiFi4";
  }
  return "?";
}

std::optional<Fidelity> fidelity_from_name(const std::string& name) {
  std::string n = lower(name);
  if (n == "lofi") return Fidelity::lofi;
  if (n == "hifi2") return Fidelity::hifi2;
  if (n == "hifi3") return Fidelity::hifi3;
  if (n == "hifi4") return Fidelity::hifi4;
  return std::nullopt;
}

const char* accumulate_name(Accumulate a) { return a == Accumulate::fp32 ? "fp32" : "bf16"; }

std::optional<Accumulate> accumulate_from_name(const std::string& name) {
  std::string n = lower(name);
  if (n == "fp32" || n == "f32") return Accumulate::fp32;
  if (n == "bf16") return Accumulate::bf16;
  return std::nullopt;
}

float round_bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7F800000u) == 0x7F800000u && (u & 0x007FFFFFu)) return x;  // NaN
  u = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u;
  float r;
  std::memcpy(&r, &u, 4);
  return r;
}

float keep_significant_bits(float x, int bits) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  uint32_t exp = (u >> 23) & 0xFFu;
  if (exp == 0xFFu) return x;  // Inf / NaN pass through
  if (exp == 0) return 0.0f * x;  // denormals flush to (signed) zero, as the registers do
  uint32_t drop = 24u - static_cast<uint32_t>(bits);
  u &= ~((1u << drop) - 1u);
  float r;
  std::memcpy(&r, &u, 4);
  return r;
}

double product_error_bound(Fidelity f) {
  // Truncating to b significant bits loses less than 2^-(b-1) of the value.
  auto e = [](int bits) { return std::ldexp(1.0, -(bits - 1)); };
  const double reg = e(kSourceRegisterBits);
  switch (f) {
    case Fidelity::lofi: return (1 + e(kIn0PassBits)) * (1 + e(kIn1PassBits)) - 1;
    case Fidelity::hifi2: return (1 + e(kIn0PassBits)) * (1 + reg) - 1;
    // in0[lo] x in1[lo] is missing: |lo0| < 2^-6 |a|, |lo1| < 2^-4 |b|.
    case Fidelity::hifi3:
      return (1 + reg) * (1 + reg) - 1 + e(kIn0PassBits) * e(kIn1PassBits) * (1 + reg) * (1 + reg);
    case Fidelity::hifi4: return (1 + reg) * (1 + reg) - 1;
  }
  return 1.0;
}

SplitOperand split_in0(const float* x, int64_t n) { return split(x, n, kIn0PassBits); }
SplitOperand split_in1(const float* x, int64_t n) { return split(x, n, kIn1PassBits); }

float tile_dot(const SplitOperand& in0, int64_t a, const SplitOperand& in1, int64_t b, int64_t K,
               const MatrixNumerics& num) {
  const float* ah = in0.hi.data() + a;
  const float* al = in0.lo.data() + a;
  const float* bh = in1.hi.data() + b;
  const float* bl = in1.lo.data() + b;
  auto term = [&](int64_t k) -> float {
    switch (num.fidelity) {
      case Fidelity::lofi: return ah[k] * bh[k];
      case Fidelity::hifi2: return ah[k] * (bh[k] + bl[k]);
      case Fidelity::hifi3: return ah[k] * (bh[k] + bl[k]) + al[k] * bh[k];
      case Fidelity::hifi4: return (ah[k] + al[k]) * (bh[k] + bl[k]);
    }
    return 0.0f;
  };
  if (num.accumulate == Accumulate::fp32) {
    float acc = 0.0f;
    for (int64_t k = 0; k < K; ++k) acc += term(k);
    return acc;
  }
  float acc = 0.0f;
  for (int64_t k0 = 0; k0 < K; k0 += kBf16AccumulateChunk) {
    float chunk = 0.0f;
    for (int64_t k = k0; k < std::min(K, k0 + kBf16AccumulateChunk); ++k) chunk += term(k);
    acc = round_bf16(acc + chunk);
  }
  return acc;
}

Requantizer make_requantizer(double real, bool single_round) {
  Requantizer r;
  r.single_round = single_round;
  if (!(real > 0.0) || !std::isfinite(real)) return r;  // zero (or unusable): every sum maps to 0
  int shift = 0;
  const double frac = std::frexp(real, &shift);
  double fixed = std::round(frac * 2147483648.0);  // Q31
  if (fixed == 2147483648.0) {
    fixed /= 2;
    ++shift;
  }
  if (shift < -31) return r;  // too small to represent: zero, as TFLite
  if (shift > 30) {           // TFLite saturates multipliers above 2^30
    shift = 30;
    fixed = 2147483647.0;
  }
  r.significand = static_cast<float>(fixed / 2147483648.0);
  r.significand_rest = static_cast<float>(fixed / 2147483648.0 - static_cast<double>(r.significand));  // <= 8 bits: exact
  r.shift = shift;
  return r;
}

namespace {

// Veltkamp's split of a float32 into two halves of at most 12 significant bits (hi + lo == a).
void split12(float a, float& hi, float& lo) {
  const float c = 4097.0f * a;  // 2^12 + 1
  hi = c - (c - a);
  lo = a - hi;
}

// Dekker's two-product: a * b == p + e exactly (p the float32 product, e its rounding
// error), with float32 multiplies and adds only (this file is built without contraction
// into fused multiply-adds, which would change the error terms).
void two_product(float a, float b, float& p, float& e) {
  p = a * b;
  float ah, al, bh, bl;
  split12(a, ah, al);
  split12(b, bh, bl);
  e = ((ah * bh - p) + ah * bl + al * bh) + al * bl;
}

// x x (sig + rest) x 2^scale rounded half up (toward +infinity), for an integer-valued x:
// the product as p + e (exact) + t (x x rest, below 2^-24 of it, rounded with a relative
// error of 2^-24). The integer part comes from p, the rounding decision from the small
// remainder (p - floor(p), exact) + e + t. Half up on the negative side is half toward
// zero on the magnitude.
float round_half_up_product(float x, float sig, float rest, int scale) {
  float p, e;
  two_product(x, sig, p, e);
  float t = x * rest;
  p = std::ldexp(p, scale);
  e = std::ldexp(e, scale);
  t = std::ldexp(t, scale);
  const bool negative = p < 0.0f;
  if (negative) {
    p = -p;
    e = -e;
    t = -t;
  }
  const float whole = std::floor(p);
  // Below 2^23, |e| < ulp(p) / 2 < 1/2, so rem lies in (-1/2, 3/2); above, p is whole and
  // rem = e + t is at most half an ulp of p: split it into its floor and fraction.
  const float rem = (p - whole) + (e + t);
  const float rem_whole = std::floor(rem);
  const float frac = rem - rem_whole;
  const float magnitude = whole + rem_whole + ((negative ? frac > 0.5f : frac >= 0.5f) ? 1.0f : 0.0f);
  return negative ? -magnitude : magnitude;
}

}  // namespace

float Requantizer::apply(float sum) const {
  // ruy: sum x multiplier x 2^(shift - 31), rounded half up.
  if (single_round) return round_half_up_product(sum, significand, significand_rest, shift);
  // gemmlowp: the high multiply of (sum x 2^left) rounded half up, then the right shift
  // rounded half away from zero (scalings by powers of two are exact).
  const int left = shift > 0 ? shift : 0, right = shift > 0 ? 0 : -shift;
  const float high = round_half_up_product(std::ldexp(sum, left), significand, significand_rest, 0);
  return std::round(std::ldexp(high, -right));
}

}  // namespace tessera::tile
