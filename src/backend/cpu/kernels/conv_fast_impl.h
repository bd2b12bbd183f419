// The float conv2d fast path's rows (conv_fast.h), as a template over the vector width:
// included by conv_fast.cpp (portable vectors) and x86/conv_fast_x86.cpp (AVX2, AVX-512).
// Everything with vectors is always inlined into the caller, whose target attribute (if
// any) then decides the instructions.
// Compiled with -ffp-contract=off: each product is rounded before it is added.
#pragma once

#include <algorithm>
#include <cstring>

#include "backend/cpu/kernels/conv_fast.h"

namespace tessera::cpu::fconv {

// GCC / Clang vector types of L floats.
template <int L> struct VecOf;
template <> struct VecOf<4> { typedef float type __attribute__((vector_size(16))); };
template <> struct VecOf<8> { typedef float type __attribute__((vector_size(32))); };
template <> struct VecOf<16> { typedef float type __attribute__((vector_size(64))); };

// (By reference: a vector returned by value would change the ABI of a function compiled
// for another target.)
template <typename V>
inline __attribute__((always_inline)) void load_vec(V& v, const float* p) {
  std::memcpy(&v, p, sizeof v);
}

// The sums of P pixels (input rows xr[p], `depth` values each) by T vectors of L output
// channels (packed filter columns from wp, row stride ocpad), each lane in GemmSum's order:
// per depth block, the peeled terms into even and odd sums, those two added, the rest one by
// one, the block's result added onto the total (which starts at +0). `single`: the pixels
// are one-by-one columns (no peeled terms). out: [P][T * L].
template <typename V, int L, int P, int T>
inline __attribute__((always_inline)) void tile(const float* const* xr, const float* wp, int64_t ocpad,
                                                const GemmDepthBlocks& db, bool single, float* out) {
  V total[P][T];
  for (int p = 0; p < P; ++p)
    for (int t = 0; t < T; ++t) total[p][t] = V{};
  for (int64_t start = 0; start < db.depth; start += db.block) {
    const int64_t end = std::min(db.depth, start + db.block);
    const int64_t peeled = single ? start : start + (end - start) / GemmDepthBlocks::kPeel * GemmDepthBlocks::kPeel;
    V ev[P][T], od[P][T];
    for (int p = 0; p < P; ++p)
      for (int t = 0; t < T; ++t) ev[p][t] = od[p][t] = V{};
    const float* w = wp + start * ocpad;
    int64_t k = start;
    for (; k < peeled; k += 2, w += 2 * ocpad) {  // peeled: a multiple of kPeel terms
      V w0[T], w1[T];
      for (int t = 0; t < T; ++t) {
        load_vec(w0[t], w + t * L);
        load_vec(w1[t], w + ocpad + t * L);
      }
      for (int p = 0; p < P; ++p) {
        const float a = xr[p][k], b = xr[p][k + 1];
        for (int t = 0; t < T; ++t) {
          ev[p][t] = ev[p][t] + a * w0[t];
          od[p][t] = od[p][t] + b * w1[t];
        }
      }
    }
    V r[P][T];
    for (int p = 0; p < P; ++p)
      for (int t = 0; t < T; ++t) r[p][t] = ev[p][t] + od[p][t];
    for (; k < end; ++k, w += ocpad) {
      V w0[T];
      for (int t = 0; t < T; ++t) load_vec(w0[t], w + t * L);
      for (int p = 0; p < P; ++p) {
        const float a = xr[p][k];
        for (int t = 0; t < T; ++t) r[p][t] = r[p][t] + a * w0[t];
      }
    }
    for (int p = 0; p < P; ++p)
      for (int t = 0; t < T; ++t) total[p][t] = total[p][t] + r[p][t];
  }
  for (int p = 0; p < P; ++p)
    for (int t = 0; t < T; ++t) std::memcpy(out + (p * T + t) * L, &total[p][t], sizeof(V));
}

// Copies n floats (short runs: no library call).
inline __attribute__((always_inline)) void copy_floats(float* d, const float* s, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    float t[4];
    std::memcpy(t, s + i, sizeof t);
    std::memcpy(d + i, t, sizeof t);
  }
  for (; i < n; ++i) d[i] = s[i];
}
inline __attribute__((always_inline)) void zero_floats(float* d, int64_t n) {
  for (int64_t i = 0; i < n; ++i) d[i] = 0.0f;
}

// activate() on every lane (in place: a vector passed by value would change the ABI):
// std::max(v, lo) is (v < lo ? lo : v), std::min(v, hi) is (hi < v ? hi : v), NaN kept, as
// in the scalar form.
template <typename V>
inline __attribute__((always_inline)) void activate_vec(V& v, Activation act) {
  const V zero = V{} + 0.0f;
  switch (act) {
    case Activation::relu:
      v = v < zero ? zero : v;
      return;
    case Activation::relu6: {
      const V six = zero + 6.0f;
      v = v < zero ? zero : v;
      v = six < v ? six : v;
      return;
    }
    case Activation::relu_n1_to_1: {
      const V lo = zero - 1.0f, hi = zero + 1.0f;
      v = v < lo ? lo : v;
      v = hi < v ? hi : v;
      return;
    }
    default: return;
  }
}

// Bias and activation of `count` pixels' sums (out [count][width]) into y, channels
// oc0 .. oc0 + width (those below OC): total + bias, then the activation, L lanes at a time
// where L channels remain, else one by one.
template <typename V, int L>
inline __attribute__((always_inline)) void finish(const Args& a, int64_t q, int64_t count, int64_t oc0, int64_t width,
                                                  const float* out) {
  const int64_t n = std::min(width, a.OC - oc0);
  for (int64_t p = 0; p < count; ++p) {
    float* yq = a.y + (q + p) * a.OC + oc0;
    const float* o = out + p * width;
    int64_t j = 0;
    for (; j + L <= n; j += L) {
      V v;
      load_vec(v, o + j);
      if (a.bias) {
        V b;
        load_vec(b, a.bias + oc0 + j);
        v = v + b;
      }
      activate_vec(v, a.act);
      std::memcpy(yq + j, &v, sizeof v);
    }
    for (; j < n; ++j) {
      float acc = o[j];
      if (a.bias) acc += a.bias[oc0 + j];
      yq[j] = activate(acc, a.act);
    }
  }
}

// Output channels oc0 .. oc0 + T * L of pixels q0 .. q0 + n (input rows `rows`): groups of P
// pixels, one by one where fewer are left or a pixel is a one-by-one column.
template <typename V, int L, int P, int T>
inline __attribute__((always_inline)) void channel_tile(const Args& a, const float* const* rows, int64_t q0, int64_t n,
                                                        int64_t oc0) {
  constexpr int64_t kWidth = int64_t{T} * L;
  alignas(64) float out[P * kWidth];
  const float* wp = a.wp + oc0;
  int64_t i = 0;
  for (; i + P <= n && !gemm_single_column(q0 + i + P - 1, a.pixels); i += P) {
    tile<V, L, P, T>(rows + i, wp, a.ocpad, a.blocks, false, out);
    finish<V, L>(a, q0 + i, P, oc0, kWidth, out);
  }
  if constexpr (P > 4) {
    for (; i + 4 <= n && !gemm_single_column(q0 + i + 3, a.pixels); i += 4) {
      tile<V, L, 4, T>(rows + i, wp, a.ocpad, a.blocks, false, out);
      finish<V, L>(a, q0 + i, 4, oc0, kWidth, out);
    }
  }
  for (; i < n; ++i) {
    tile<V, L, 1, T>(rows + i, wp, a.ocpad, a.blocks, gemm_single_column(q0 + i, a.pixels), out);
    finish<V, L>(a, q0 + i, 1, oc0, kWidth, out);
  }
}

// RowsFn: chunks of pixels (input rows gathered: in place for 1x1 windows, else copied
// with zeros for padding taps), each through every channel tile.
template <typename V, int L, int P, int T>
inline __attribute__((always_inline)) void rows(const Args& a, int64_t r0, int64_t r1, const Scratch& s) {
  const Window& wn = a.win;
  const bool pointwise = a.KH == 1 && a.KW == 1;
  const int64_t plane = a.OH * a.OW;
  for (int64_t q0 = r0 * a.OW; q0 < r1 * a.OW; q0 += s.chunk) {
    const int64_t n = std::min(s.chunk, r1 * a.OW - q0);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t q = q0 + i, b = q / plane, oy = (q % plane) / a.OW, ox = q % a.OW;
      if (pointwise) {
        const int64_t iy = oy * wn.sh - wn.pad_top, ix = ox * wn.sw - wn.pad_left;
        s.rows[i] = iy < 0 || iy >= a.H || ix < 0 || ix >= a.W ? a.zeros : a.x + ((b * a.H + iy) * a.W + ix) * a.C;
        continue;
      }
      float* col = s.cols + i * a.depth;
      const int64_t ix0 = ox * wn.sw - wn.pad_left;
      for (int64_t ky = 0; ky < a.KH; ++ky, col += a.KW * a.C) {
        const int64_t iy = oy * wn.sh - wn.pad_top + ky * wn.dh;
        if (iy < 0 || iy >= a.H) {
          std::memset(col, 0, static_cast<size_t>(a.KW * a.C) * sizeof(float));
          continue;
        }
        const float* row = a.x + (b * a.H + iy) * a.W * a.C;
        if (wn.dw == 1) {  // the taps inside the input are one run of the input row
          const int64_t lo = std::clamp<int64_t>(-ix0, 0, a.KW), hi = std::clamp<int64_t>(a.W - ix0, lo, a.KW);
          zero_floats(col, lo * a.C);
          copy_floats(col + lo * a.C, row + (ix0 + lo) * a.C, (hi - lo) * a.C);
          zero_floats(col + hi * a.C, (a.KW - hi) * a.C);
          continue;
        }
        for (int64_t kx = 0; kx < a.KW; ++kx) {
          const int64_t ix = ix0 + kx * wn.dw;
          float* dst = col + kx * a.C;
          if (ix < 0 || ix >= a.W) std::memset(dst, 0, static_cast<size_t>(a.C) * sizeof(float));
          else std::memcpy(dst, row + ix * a.C, static_cast<size_t>(a.C) * sizeof(float));
        }
      }
      s.rows[i] = s.cols + i * a.depth;
    }
    int64_t oc0 = 0;
    for (; oc0 + T * L <= a.ocpad; oc0 += T * L) channel_tile<V, L, P, T>(a, s.rows, q0, n, oc0);
    // the last channels, fewer than T vectors: as many sums from twice the pixels
    for (; oc0 < a.ocpad; oc0 += L) channel_tile<V, L, (T > 1 ? 2 * P : P), 1>(a, s.rows, q0, n, oc0);
  }
}

}  // namespace tessera::cpu::fconv
