// Portable scalar micro-kernels of the packed quantized conv path (see qconv.h): the
// definition the AVX2 and NEON kernels are tested against, and the path on other CPUs.
#include <algorithm>
#include <cfenv>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "backend/cpu/kernels/quant_math.h"
#include "backend/cpu/ukernels/qconv.h"
#include "convert/simd.h"

namespace tessera::cpu::uk {

int32_t requantize(int32_t acc, int64_t ch, const Requant& rq) {
  const int32_t x = acc + rq.bias[ch];
  const int shift = rq.lshift[ch] - rq.rshift[ch];
  const int32_t v = rq.single_round ? q::multiply_single_round(x, rq.mult[ch], shift) : q::multiply(x, rq.mult[ch], shift);
  return q::clamp(v + rq.zp, rq.lo, rq.hi);
}

namespace {

// fma(a, b, c) rounded once to float (to nearest): a * b is exact in double, and where the
// double sum is exact too (TwoSum's error zero: the usual case here) its conversion is the
// one rounding; else the library's fma (slow where the CPU has no FMA instruction).
inline float fma_once(float a, float b, float c) {
  const double p = static_cast<double>(a) * b;
  const double s = p + c;
  const double cb = s - p;
  if ((p - (s - cb)) + (c - cb) == 0.0) return static_cast<float>(s);
  return std::fma(a, b, c);
}

// floor(f) as int32, INT32_MIN outside the int32 range (vcvtps2dq's answer there too).
inline int32_t floor_i32(float f) {
  if (!(f >= -2147483648.0f && f < 2147483648.0f)) return std::numeric_limits<int32_t>::min();
  int32_t i = static_cast<int32_t>(f);  // towards zero
  if (static_cast<float>(i) > f) --i;
  return i;
}

}  // namespace

int32_t float_requant_floor(int32_t x, float scale, float offset, int32_t base) {
  const int32_t q = floor_i32(fma_once(static_cast<float>(x), scale, offset));
  if (q == std::numeric_limits<int32_t>::min()) return q;
  return static_cast<int32_t>(std::min<int64_t>(int64_t{q} + base, std::numeric_limits<int32_t>::max()));
}

bool float_requant_form(int32_t mult, int32_t lshift, int32_t rshift, bool single_round, int32_t zp, int32_t lo,
                        int32_t hi, bool by_sign, int32_t base, FloatRq& out) {
  // The checks evaluate float(x) and fma in the current rounding mode; the kernels round to
  // nearest.
  if (std::fegetround() != FE_TONEAREST || mult <= 0) return false;
  const int shift = lshift - rshift;
  auto ref = [&](int64_t x) {
    const int32_t xi = static_cast<int32_t>(x);
    const int32_t v = single_round ? q::multiply_single_round(xi, mult, shift) : q::multiply(xi, mult, shift);
    return static_cast<int32_t>(std::clamp<int64_t>(int64_t{v} + zp, lo, hi));
  };
  constexpr int64_t kMin = std::numeric_limits<int32_t>::min(), kMax = std::numeric_limits<int32_t>::max();
  const int32_t vmin = ref(kMin), vmax = ref(kMax);
  if (vmin >= vmax) return false;
  // The steps: t[i] = the least x with ref(x) >= vmin + 1 + i, each found from a guess
  // (gallop, then bisect).
  const double m = std::ldexp(static_cast<double>(mult), shift - 31);  // outputs per unit of x
  const int nsteps = vmax - vmin;
  std::vector<int64_t> t(static_cast<size_t>(nsteps));
  auto first_at_least = [&](int32_t v, int64_t guess) {
    int64_t lo_x, hi_x, step = 1;
    guess = std::clamp(guess, kMin, kMax);
    if (ref(guess) >= v) {
      hi_x = guess;
      while (hi_x - step >= kMin && ref(hi_x - step) >= v) hi_x -= step, step *= 2;
      lo_x = std::max(kMin, hi_x - step + 1);
    } else {
      lo_x = guess + 1;
      while (lo_x + step - 1 < kMax && ref(lo_x + step - 1) < v) lo_x += step, step *= 2;
      hi_x = std::min(kMax, lo_x + step - 1);
    }
    while (lo_x < hi_x) {
      const int64_t mid = lo_x + (hi_x - lo_x) / 2;
      if (ref(mid) >= v) hi_x = mid;
      else lo_x = mid + 1;
    }
    return lo_x;
  };
  // (the real step: x m crosses v - zp - 1/2; exact up to double's rounding and the ties)
  for (int i = 0; i < nsteps; ++i) {
    const double x = std::ceil((vmin + 1 + i - zp - 0.5) / m);
    t[i] = first_at_least(vmin + 1 + i, static_cast<int64_t>(std::clamp(x, -4e9, 4e9)));
  }
  auto fits = [&](const FloatRq& f) {
    auto g = [&](int64_t x) {
      return std::clamp(float_requant_floor(static_cast<int32_t>(x), f.scale, x < 0 ? f.off_neg : f.off_pos, base),
                        lo, hi);
    };
    if (g(kMin) != vmin || g(kMax) != vmax || g(-1) > g(0)) return false;
    for (int i = 0; i < nsteps; ++i) {
      const int32_t v = vmin + 1 + i;
      if (g(t[i]) < v || g(t[i] - 1) >= v) return false;
    }
    return true;
  };
  // Scales a few float steps around the real multiplier; for each, the offsets in the middle
  // of the intervals the steps allow (in double, then checked as float): one for both signs
  // of x, or (by_sign) one per sign.
  const float s0 = static_cast<float>(m);
  float up = s0, down = s0;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  for (int k = 0; k < 5; ++k) {
    const float s = k == 0 ? s0 : k % 2 ? (up = std::nextafter(up, 2 * up)) : (down = std::nextafter(down, 0.0f));
    double olo[2] = {-kInf, -kInf}, ohi[2] = {kInf, kInf};  // [0]: x >= 0, [1]: x < 0
    auto side = [&](int64_t x) { return by_sign && x < 0 ? 1 : 0; };
    for (int i = 0; i < nsteps; ++i) {
      const double v = vmin + 1 + i - base;
      olo[side(t[i])] = std::max(olo[side(t[i])], v - static_cast<double>(t[i]) * s);
      ohi[side(t[i] - 1)] = std::min(ohi[side(t[i] - 1)], v - static_cast<double>(t[i] - 1) * s);
    }
    // Per side: the interval's middle; half a step inside its one finite end; no constraint
    // (no steps on that side: x < 0 without by_sign) takes the other side's offset.
    if (!(olo[0] < ohi[0] && olo[1] < ohi[1])) continue;  // no offset fits
    double o[2];
    for (int h = 0; h < 2; ++h)
      o[h] = std::isfinite(olo[h]) && std::isfinite(ohi[h]) ? (olo[h] + ohi[h]) / 2
             : std::isfinite(olo[h])                         ? olo[h] + 0.5 * s
             : std::isfinite(ohi[h])                         ? ohi[h] - 0.5 * s
                                                             : kInf;
    if (!std::isfinite(o[0])) o[0] = o[1];
    if (!std::isfinite(o[1])) o[1] = o[0];
    const FloatRq f{s, static_cast<float>(o[0]), static_cast<float>(o[1])};
    // No value of the form near the float range's bottom, so that a caller's flush-to-zero
    // or denormals-are-zero setting cannot change it: the scale and nonzero offsets at least
    // 2^-60 make every nonzero x * scale + offset at least 2^-84 in size.
    auto tiny = [](float v) { return v != 0.0f && std::fabs(v) < 0x1p-60f; };
    if (!(s >= 0x1p-60f) || tiny(f.off_pos) || tiny(f.off_neg)) continue;
    if (fits(f)) {
      out = f;
      return true;
    }
  }
  return false;
}

namespace {

void centre(const uint8_t* x, int64_t n, int32_t zp, bool is_i8, int16_t* out) {
  if (is_i8) {
    const int8_t* s = reinterpret_cast<const int8_t*>(x);
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<int16_t>(s[i] - zp);
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<int16_t>(x[i] - zp);
  }
}

inline void store(uint8_t* y, int64_t i, int32_t v, bool i8) {
  y[i] = i8 ? static_cast<uint8_t>(static_cast<int8_t>(v)) : static_cast<uint8_t>(v);
}

void gemm_panel(int64_t m, int64_t kpairs, const int16_t* a, int64_t lda, const int16_t* panel, const Requant& rq,
                int64_t n0, int nvalid, uint8_t* y, int64_t ldy) {
  for (int64_t r = 0; r < m; ++r) {
    const int16_t* ar = a + r * lda;
    for (int j = 0; j < nvalid; ++j) {
      int32_t acc = 0;
      for (int64_t p = 0; p < kpairs; ++p) {
        const int16_t* b = panel + (p * kPanel + j) * 2;
        acc += static_cast<int32_t>(ar[2 * p]) * b[0] + static_cast<int32_t>(ar[2 * p + 1]) * b[1];
      }
      store(y + r * ldy, j, requantize(acc, n0 + j, rq), rq.out_i8);
    }
  }
}

void dw_row(const DwRow& r) {
  const int pairs = (r.taps + 1) / 2;
  for (int64_t ox = 0; ox < r.ow; ++ox) {
    const int16_t* xp = r.x + ox * r.xstep;
    uint8_t* yp = r.y + ox * r.channels;
    for (int64_t g = 0; g * kPanel < r.cpad; ++g) {
      const int16_t* wg = r.w + g * pairs * 32;
      for (int l = 0; l < kPanel; ++l) {
        const int64_t c = g * kPanel + dw_lane_channel(l);
        if (c >= r.channels) continue;
        int32_t acc = 0;
        for (int p = 0; p < pairs; ++p) {
          const int16_t* wp = wg + p * 32 + l * 2;
          const int t0 = 2 * p, t1 = 2 * p + 1;
          acc += static_cast<int32_t>(xp[r.tap_off[t0] + c]) * wp[0];
          if (t1 < r.taps) acc += static_cast<int32_t>(xp[r.tap_off[t1] + c]) * wp[1];
        }
        store(yp, c, requantize(acc, g * kPanel + l, *r.rq), r.rq->out_i8);
      }
    }
  }
}

}  // namespace

bool pack_u8_panels(const int16_t* v, int64_t oc, int64_t k, int64_t max_fixes, U8Panels& out, U8Split split) {
  const auto to_s8 = [](int32_t x) { return x < -128 ? -128 : x > 127 ? 127 : x; };
  if (k % 4 != 0) return false;
  out.kquads = k / 4;
  out.npanels = (oc + kPanel - 1) / kPanel;
  out.panels.assign(static_cast<size_t>(out.npanels * out.kquads * kPanel * 4), 0);
  out.fixes.clear();
  out.fix_start.assign(static_cast<size_t>(out.npanels + 1), 0);
  out.vsum.assign(static_cast<size_t>(oc), 0);
  for (int64_t pn = 0; pn < out.npanels; ++pn) {
    for (int64_t j = 0; j < kPanel && pn * kPanel + j < oc; ++j) {
      const int64_t o = pn * kPanel + j;
      const int16_t* vo = v + o * k;
      for (int64_t i = 0; i < k; i += 2) {
        const int32_t v1 = vo[i], v2 = vo[i + 1];
        out.vsum[o] += v1 + v2;
        int32_t s1 = 0, s2 = 0;
        if (split == U8Split::pairs)
          split_u8s8(v1, v2, s1, s2);
        else
          s1 = to_s8(v1), s2 = to_s8(v2);
        int8_t* dst = out.panels.data() + ((pn * out.kquads + i / 4) * kPanel + j) * 4 + i % 4;
        dst[0] = static_cast<int8_t>(s1);
        dst[1] = static_cast<int8_t>(s2);
        if (v1 != s1) out.fixes.push_back({static_cast<int32_t>(i), static_cast<int32_t>(j), v1 - s1});
        if (v2 != s2) out.fixes.push_back({static_cast<int32_t>(i + 1), static_cast<int32_t>(j), v2 - s2});
      }
      if (static_cast<int64_t>(out.fixes.size()) > max_fixes) return false;
    }
    out.fix_start[pn + 1] = static_cast<int64_t>(out.fixes.size());
  }
  return true;
}

namespace {

// kFlip: int8 input bytes read as x + 128 (x ^ 0x80).
template <bool kFlip>
void gemm_u8_t(int64_t m, int64_t kquads, const uint8_t* a, int64_t lda, const int8_t* panel, const U8Fix* fix,
               int64_t nfix, const Requant& rq, int64_t n0, int nvalid, uint8_t* y, int64_t ldy) {
  const auto in = [](uint8_t x) { return static_cast<int32_t>(kFlip ? x ^ 0x80u : x); };
  for (int64_t r = 0; r < m; ++r) {
    const uint8_t* ar = a + r * lda;
    for (int j = 0; j < nvalid; ++j) {
      uint32_t acc = 0;  // int32 arithmetic modulo 2^32, as the SIMD lanes
      for (int64_t q = 0; q < kquads; ++q)
        for (int t = 0; t < 4; ++t) acc += static_cast<uint32_t>(in(ar[4 * q + t]) * panel[(q * kPanel + j) * 4 + t]);
      for (int64_t f = 0; f < nfix; ++f)
        if (fix[f].lane == j) acc += static_cast<uint32_t>(in(ar[fix[f].k]) * fix[f].r);
      store(y + r * ldy, j, requantize(static_cast<int32_t>(acc), n0 + j, rq), rq.out_i8);
    }
  }
}

}  // namespace

void gemm_u8_scalar(int64_t m, int64_t kquads, const uint8_t* a, int64_t lda, const int8_t* panel, const U8Fix* fix,
                    int64_t nfix, const Requant& rq, int64_t n0, int nvalid, uint8_t* y, int64_t ldy) {
  gemm_u8_t<false>(m, kquads, a, lda, panel, fix, nfix, rq, n0, nvalid, y, ldy);
}

void gemm_u8_flip_scalar(int64_t m, int64_t kquads, const uint8_t* a, int64_t lda, const int8_t* panel,
                         const U8Fix* fix, int64_t nfix, const Requant& rq, int64_t n0, int nvalid, uint8_t* y,
                         int64_t ldy) {
  gemm_u8_t<true>(m, kquads, a, lda, panel, fix, nfix, rq, n0, nvalid, y, ldy);
}

const QConvKernels& scalar_qconv_kernels() {
  static const QConvKernels k{centre, gemm_panel, dw_row, nullptr, "scalar", nullptr, nullptr, U8Split::pairs, kTileRows};
  return k;
}

const QConvKernels& qconv_kernels() {
#if defined(__x86_64__)
  if (convert::use_avx2()) {
    static const QConvKernels* vnni =
        avx512_vnni_qconv_kernels() ? avx512_vnni_qconv_kernels() : avx2_vnni_qconv_kernels(convert::cpu_vnni());
    return vnni ? *vnni : avx2_qconv_kernels();
  }
#elif defined(__aarch64__)
  if (convert::use_neon()) return neon_qconv_kernels();
#endif
  return scalar_qconv_kernels();
}

}  // namespace tessera::cpu::uk
