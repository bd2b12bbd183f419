// NEON kernels of linear_q8.h's F16 weights for aarch64, bit-identical to the scalar ones:
// - fewer than kF16SeqMinRows activation rows (decode): four chains of eight lanes per
//   output, each chain's lanes 0-3 and 4-7 held as two float32x4 (lo + hi is the hsum8
//   tree's first step), one weight row per pass read start to end, two activation rows at
//   a time;
// - prompts: one fma chain per output, outer-product tiles of 4 activation rows x 16
//   outputs over f32 weight panels ([k][16], converted once per call) and activation rows
//   packed step-major ([k][4]: one load feeds the four rows by lane).
// Activations rounded to binary16 with round_x by the hardware conversion (round to
// nearest even, as the scalar f32_to_f16).
#if defined(__aarch64__)  // aarch64 only (cmake/arch.cmake leaves it out elsewhere)
#include <arm_neon.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "backend/cpu/kernels/kernel_util.h"
#include "backend/cpu/kernels/linear_q8.h"
#include "backend/cpu/arm/hsum8_neon.h"

namespace tessera::cpu::q8::neon {

namespace {

inline float32x4_t round_h(float32x4_t v) { return vcvt_f32_f16(vcvt_f16_f32(v)); }

using arm::hsum8;

inline float32x4_t load_w4(const uint16_t* p) { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p))); }

// The activations as the values the chains read (rounded with round_x) into a per-thread
// scratch, or the rows as given.
const float* activations(const F16Gemm& g) {
  if (!g.round_x) return g.x;
  thread_local std::vector<float> s;
  const size_t n = static_cast<size_t>(g.m * g.k);
  if (s.size() < n) s.resize(n);
  size_t i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(s.data() + i, round_h(vld1q_f32(g.x + i)));
  for (; i < n; ++i) s[i] = f16_to_f32(f32_to_f16(g.x[i]));
  return s.data();
}

// ---- fewer rows: four chains of eight lanes per output ----
// Weight row o against activation rows m0 .. m0 + MR: chain q of row m as two float32x4
// (lanes 0-3 and 4-7; lo + hi is the hsum8 tree's first step), each weight row read start
// to end once per pass.
template <int MR>
void rows4(const F16Gemm& g, const float* x, int64_t m0, int64_t o) {
  const uint16_t* w = g.w + o * g.k;
  const int64_t k8 = g.k / 8 * 8;
  float32x4_t lo[MR][4], hi[MR][4];
  for (int m = 0; m < MR; ++m)
    for (int q = 0; q < 4; ++q) lo[m][q] = hi[m][q] = vdupq_n_f32(0.0f);
  auto step = [&](int64_t j, int q) {
    const float32x4_t w0 = load_w4(w + j), w1 = load_w4(w + j + 4);
    for (int m = 0; m < MR; ++m) {
      const float* xm = x + (m0 + m) * g.k + j;
      lo[m][q] = vfmaq_f32(lo[m][q], w0, vld1q_f32(xm));
      hi[m][q] = vfmaq_f32(hi[m][q], w1, vld1q_f32(xm + 4));
    }
  };
  const int64_t k32 = g.k / 32 * 32;
  int64_t j = 0;
  for (; j < k32; j += 32) step(j, 0), step(j + 8, 1), step(j + 16, 2), step(j + 24, 3);
  for (int q = 0; j < k8; j += 8, ++q) step(j, q);  // at most three steps, chains 0, 1, 2
  for (int m = 0; m < MR; ++m) {
    const float* xm = x + (m0 + m) * g.k;
    float t = 0;
    for (int64_t e = k8; e < g.k; ++e) t = std::fma(f16_to_f32(w[e]), xm[e], t);
    const float32x4_t slo = vaddq_f32(vaddq_f32(lo[m][0], lo[m][1]), vaddq_f32(lo[m][2], lo[m][3]));
    const float32x4_t shi = vaddq_f32(vaddq_f32(hi[m][0], hi[m][1]), vaddq_f32(hi[m][2], hi[m][3]));
    g.y[(m0 + m) * g.ldy + o] = hsum8(slo, shi) + t;
  }
}

void gemm_lanes(const F16Gemm& g, const float* x, int64_t o0, int64_t o1) {
  for (int64_t o = o0; o < o1; ++o) {
    int64_t m = 0;
    for (; m + 2 <= g.m; m += 2) rows4<2>(g, x, m, o);
    if (m < g.m) rows4<1>(g, x, m, o);
  }
}

// ---- prompts: one chain per output ----
constexpr int kPanel = 16;
constexpr int kTileRows = 4;

void pack_panel(const F16Gemm& g, int64_t o, int nr, float* panel) {
  for (int n = 0; n < kPanel; ++n) {
    const uint16_t* w = n < nr ? g.w + (o + n) * g.k : nullptr;
    for (int64_t j = 0; j < g.k; ++j) panel[j * kPanel + n] = w ? f16_to_f32(w[j]) : 0.0f;
  }
}

void pack_rows(const float* x, int64_t k, int64_t m0, int64_t m1, float* xp) {
  for (int64_t mt = m0; mt < m1; mt += kTileRows, xp += kTileRows * k)
    for (int m = 0; m < kTileRows; ++m)
      for (int64_t j = 0; j < k; ++j) xp[j * kTileRows + m] = mt + m < m1 ? x[(mt + m) * k + j] : 0.0f;
}

void tile(const float* xp, int64_t k, const float* panel, float* y, int64_t ldy, int mr, int nr) {
  float32x4_t acc[kTileRows][4];
  for (auto& row : acc)
    for (auto& a : row) a = vdupq_n_f32(0.0f);
  for (int64_t j = 0; j < k; ++j) {
    const float32x4_t xv = vld1q_f32(xp + j * kTileRows);
    const float* wj = panel + j * kPanel;
    const float32x4_t w0 = vld1q_f32(wj), w1 = vld1q_f32(wj + 4), w2 = vld1q_f32(wj + 8), w3 = vld1q_f32(wj + 12);
#define TESSERA_F16_ROW(M)                           \
  acc[M][0] = vfmaq_laneq_f32(acc[M][0], w0, xv, M); \
  acc[M][1] = vfmaq_laneq_f32(acc[M][1], w1, xv, M); \
  acc[M][2] = vfmaq_laneq_f32(acc[M][2], w2, xv, M); \
  acc[M][3] = vfmaq_laneq_f32(acc[M][3], w3, xv, M);
    TESSERA_F16_ROW(0)
    TESSERA_F16_ROW(1)
    TESSERA_F16_ROW(2)
    TESSERA_F16_ROW(3)
#undef TESSERA_F16_ROW
  }
  float buf[kTileRows][kPanel];
  for (int m = 0; m < kTileRows; ++m)
    for (int q = 0; q < 4; ++q) vst1q_f32(buf[m] + 4 * q, acc[m][q]);
  for (int m = 0; m < mr; ++m) std::memcpy(y + m * ldy, buf[m], static_cast<size_t>(nr) * 4);
}

void gemm_seq(const F16Gemm& g, const float* x, int64_t o0, int64_t o1) {
  thread_local std::vector<float> wbuf, xbuf;
  const int64_t npanel = (o1 - o0 + kPanel - 1) / kPanel;
  const size_t wneed = static_cast<size_t>(npanel * kPanel * g.k);
  if (wbuf.size() < wneed) wbuf.resize(wneed);
  for (int64_t p = 0; p < npanel; ++p)
    pack_panel(g, o0 + p * kPanel, static_cast<int>(std::min<int64_t>(kPanel, o1 - o0 - p * kPanel)),
               wbuf.data() + p * kPanel * g.k);
  // Chunks of activation rows of about 128 KiB, a multiple of the tile.
  const int64_t chunk = std::clamp<int64_t>((int64_t{128} << 10) / (4 * std::max<int64_t>(g.k, 1)), kTileRows, 256) /
                        kTileRows * kTileRows;
  const size_t xneed = static_cast<size_t>(chunk * g.k);
  if (xbuf.size() < xneed) xbuf.resize(xneed);
  for (int64_t mc = 0; mc < g.m; mc += chunk) {
    const int64_t mend = std::min(g.m, mc + chunk);
    pack_rows(x, g.k, mc, mend, xbuf.data());
    for (int64_t p = 0; p < npanel; ++p) {
      const int64_t o = o0 + p * kPanel;
      const int nr = static_cast<int>(std::min<int64_t>(kPanel, o1 - o));
      for (int64_t m = mc; m < mend; m += kTileRows)
        tile(xbuf.data() + (m - mc) * g.k, g.k, wbuf.data() + p * kPanel * g.k, g.y + m * g.ldy + o, g.ldy,
             static_cast<int>(std::min<int64_t>(kTileRows, mend - m)), nr);
    }
  }
}

}  // namespace

void gemm_f16(const F16Gemm& g, int64_t o0, int64_t o1) {
  const float* x = activations(g);
  if (g.m >= kF16SeqMinRows) return gemm_seq(g, x, o0, o1);
  gemm_lanes(g, x, o0, o1);
}

}  // namespace tessera::cpu::q8::neon

#endif  // __aarch64__
