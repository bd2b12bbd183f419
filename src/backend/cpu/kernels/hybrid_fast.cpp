// The hybrid conv2d fast path (hybrid_fast.h): packing at compile time, the run, and the
// portable functions. Compiled with -ffp-contract=off (cmake/components.cmake).
#include "backend/cpu/kernels/hybrid_fast.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "backend/cpu/kernels/hybrid.h"
#include "convert/simd.h"

namespace tessera::cpu {

namespace hconv {

namespace {

void panel_generic(int64_t rows, int64_t kpairs, const int16_t* a, int64_t lda, const int16_t* panel, const Out& o) {
  for (int64_t r = 0; r < rows; ++r) {
    int32_t acc[kPanel] = {};
    const int16_t* ar = a + r * lda;
    for (int64_t p = 0; p < kpairs; ++p) {
      const int32_t a0 = ar[2 * p], a1 = ar[2 * p + 1];
      const int16_t* w = panel + p * kPanel * 2;
      for (int j = 0; j < kPanel; ++j) acc[j] += a0 * w[2 * j] + a1 * w[2 * j + 1];
    }
    float* y = o.y + r * o.ldy;
    for (int j = 0; j < o.nvalid; ++j) {
      float v = static_cast<float>(acc[j]) * o.scale[j];
      if (o.bias) v += o.bias[j];
      y[j] = activate(v, o.act);
    }
  }
}

bool min_max_generic(const float* x, int64_t n, float* mn, float* mx) {
  float lo = x[0], hi = x[0];
  bool nan = std::isnan(x[0]);
  for (int64_t i = 1; i < n; ++i) {
    nan |= std::isnan(x[i]);
    if (x[i] < lo) lo = x[i];
    if (hi < x[i]) hi = x[i];
  }
  *mn = lo, *mx = hi;
  return !nan;
}

void codes_generic(const float* x, int64_t n, float inv, float add, int32_t lo, int32_t hi, int32_t offset,
                   int16_t* out) {
  const float flo = static_cast<float>(lo), fhi = static_cast<float>(hi);
  for (int64_t i = 0; i < n; ++i) {
    const float r = std::round(add + x[i] * inv);
    int32_t c;
    if (!(r >= flo)) c = std::isnan(r) ? 0 : lo;
    else if (r > fhi) c = hi;
    else c = static_cast<int32_t>(r);
    out[i] = static_cast<int16_t>(c - offset);
  }
}

}  // namespace

// The 8-bit form's codes as signed bytes (byte_bias 0): code itself.
void codes_s8_generic(const float* x, int64_t n, float inv, float add, int32_t lo, int32_t hi, uint8_t* out) {
  int16_t buf[256];
  for (int64_t i = 0; i < n; i += 256) {
    const int64_t m = std::min<int64_t>(256, n - i);
    codes_generic(x + i, m, inv, add, lo, hi, 0, buf);
    for (int64_t j = 0; j < m; ++j) out[i + j] = static_cast<uint8_t>(static_cast<int8_t>(buf[j]));
  }
}

const Fns& generic_fns() {
  static const Fns f{panel_generic, min_max_generic, codes_generic, "generic"};
  return f;
}

const Fns& pick_fns() {
#if defined(__x86_64__)
  if (convert::use_avx2()) {
    if (convert::cpu_avx512_vnni()) return avx512_vnni_fns();
    if (convert::cpu_avx512()) return avx512_fns();
    return avx2_fns();
  }
#endif
#if defined(__aarch64__)
  if (convert::use_neon() && neon_dot_available()) return neon_dot_fns();
#endif
  return generic_fns();
}

namespace {

struct Packed : PreparedKernel {
  int64_t OC = 0, KH = 0, KW = 0, IC = 0, K = 0, kpairs = 0, npanels = 0;
  bool asymmetric = false;
  std::vector<float> wscale;    // [OC]
  std::vector<int16_t> panels;  // [npanels][kpairs][kPanel][2] (without the 8-bit form)
  const Fns* fns = nullptr;
  // The 8-bit form (fns->panel_u8): [npanels][kquads][kPanel][4] and sum_k w per channel
  // (padded to whole panels).
  int64_t kquads = 0;
  std::vector<int8_t> panels8;
  std::vector<int64_t> wsum;
};

// The calling thread's buffers, grown to the largest layer it has run.
template <typename T>
T* grow(std::vector<T>& v, int64_t n) {
  if (static_cast<int64_t>(v.size()) < n) v.resize(static_cast<size_t>(n));
  return v.data();
}

}  // namespace

}  // namespace hconv

Result<std::unique_ptr<PreparedKernel>> prepare_hybrid_conv2d(const Graph& g, const Node& n) {
  using hconv::kPanel;
  auto none = [] { return std::unique_ptr<PreparedKernel>(); };
  if (n.inputs.size() < 2 || n.outputs.empty()) return none();
  const Tensor& x = g.tensor(n.inputs[0]);
  const Tensor& w = g.tensor(n.inputs[1]);
  const Tensor& y = g.tensor(n.outputs[0]);
  if (x.dtype != DType::f32 || w.dtype != DType::i8 || y.dtype != DType::f32 || !w.data || w.quant.empty() ||
      x.shape.size() != 4 || w.shape.size() != 4 || y.shape.size() != 4)
    return none();
  if (n.inputs.size() > 2 && n.inputs[2] != kNoTensor && g.tensor(n.inputs[2]).dtype != DType::f32) return none();
  const int64_t OC = w.shape[0], KH = w.shape[1], KW = w.shape[2], IC = w.shape[3];
  if (OC <= 0 || KH <= 0 || KW <= 0 || IC <= 0 || IC > 65535 || x.shape[3] != IC || y.shape[3] != OC) return none();
  const QuantParams& q = w.quant;
  if (q.scale.size() != 1 && (static_cast<int64_t>(q.scale.size()) != OC || q.axis != 0)) return none();
  for (int64_t z : q.zero_point)
    if (z != 0) return none();
  const int64_t K = KH * KW * IC;
  if (w.data->size != static_cast<size_t>(OC * K)) return none();
  // The sums go through int32 lanes: |w (code - offset)| <= 128 * 255 per tap, so K taps stay
  // inside int32 up to 65,793 of them (the reference sums in 64 bits: deeper layers take it).
  if (K > (int64_t{1} << 31) / (128 * 255)) return none();
  auto pk = std::make_unique<hconv::Packed>();
  pk->OC = OC, pk->KH = KH, pk->KW = KW, pk->IC = IC, pk->K = K;
  pk->kpairs = (K + 1) / 2;
  pk->npanels = (OC + kPanel - 1) / kPanel;
  pk->wscale.resize(static_cast<size_t>(OC));
  for (int64_t o = 0; o < OC; ++o) pk->wscale[o] = q.scale.size() == 1 ? q.scale[0] : q.scale[static_cast<size_t>(o)];
  // TFLite (hybrid.cpp): per-channel filters (scales not all equal) quantize the input
  // asymmetrically, per-tensor ones symmetrically.
  for (float s : q.scale) pk->asymmetric |= s != q.scale[0];
  const auto* wd = reinterpret_cast<const int8_t*>(w.data->data);
  pk->fns = &hconv::pick_fns();
  // One packing: the 8-bit form's where this CPU's functions have it, else the int16 pairs.
  if (!pk->fns->panel_u8) {
    pk->panels.assign(static_cast<size_t>(pk->npanels * pk->kpairs * kPanel * 2), 0);
    for (int64_t o = 0; o < OC; ++o) {
      int16_t* panel = pk->panels.data() + (o / kPanel) * pk->kpairs * kPanel * 2;
      for (int64_t k = 0; k < K; ++k) panel[((k / 2) * kPanel + o % kPanel) * 2 + k % 2] = wd[o * K + k];
    }
  } else {
    pk->kquads = (K + 3) / 4;
    pk->panels8.assign(static_cast<size_t>(pk->npanels * pk->kquads * kPanel * 4), 0);
    pk->wsum.assign(static_cast<size_t>(pk->npanels * kPanel), 0);
    for (int64_t o = 0; o < OC; ++o) {
      int8_t* panel = pk->panels8.data() + (o / kPanel) * pk->kquads * kPanel * 4;
      for (int64_t k = 0; k < K; ++k) {
        panel[((k / 4) * kPanel + o % kPanel) * 4 + k % 4] = wd[o * K + k];
        pk->wsum[static_cast<size_t>(o)] += wd[o * K + k];
      }
    }
  }
  return std::unique_ptr<PreparedKernel>(std::move(pk));
}

bool is_hybrid_conv(const PreparedKernel* p) { return dynamic_cast<const hconv::Packed*>(p) != nullptr; }

namespace {

// The gathered A rows (im2col) of pixels [p, p + nb) of image b: each kernel row's taps from
// the zero-bordered image (`Wp` wide, C channels), K values a row, `lda` apart, the rest of a
// row zero (its weights are zero).
template <typename T>
void gather_rows(const T* img, int64_t Wp, int64_t C, int64_t KH, int64_t KW, int64_t K, int64_t OW, const Window& win,
                 int64_t q0, int64_t nb, int64_t lda, T* a) {
  for (int64_t i = 0; i < nb; ++i) {
    const int64_t q = q0 + i, oy = q / OW, ox = q % OW;
    T* ar = a + i * lda;
    for (int64_t ky = 0; ky < KH; ++ky) {
      const T* src = img + ((oy * win.sh + ky * win.dh) * Wp + ox * win.sw) * C;
      if (win.dw == 1) {
        std::memcpy(ar, src, static_cast<size_t>(KW * C) * sizeof(T));
        ar += KW * C;
      } else {
        for (int64_t kx = 0; kx < KW; ++kx, ar += C)
          std::memcpy(ar, src + kx * win.dw * C, static_cast<size_t>(C) * sizeof(T));
      }
    }
    std::fill(a + i * lda + K, a + (i + 1) * lda, T{0});
  }
}

}  // namespace

Status run_hybrid_conv2d(KernelContext& c) {
  using hconv::kPanel;
  const auto& pk = static_cast<const hconv::Packed&>(*c.prepared);
  const Shape &xs = c.in[0].shape(), &ys = c.out[0].shape();
  if (xs.size() != 4 || ys.size() != 4 || xs[3] != pk.IC || ys[3] != pk.OC || c.in[1].dtype() != DType::i8)
    return hybrid_conv2d(c);  // not the compiled shapes: the reference checks and runs
  TS_ASSIGN_OR_RETURN(Activation act, activation_of(c.n));
  const hconv::Fns& fn = *pk.fns;
  const bool u8 = !pk.panels8.empty();  // the 8-bit form (packed at compile time for these kernels)
  const int64_t N = xs[0], H = xs[1], W = xs[2], C = xs[3], OH = ys[1], OW = ys[2], OC = pk.OC;
  const Window win = window_of(c.n, pk.KH, pk.KW);
  // A row of A holds `kstep` values (pairs, or quads in the 8-bit form). A 1x1 layer that
  // reads every input pixel once, in order, with whole steps of channels reads the image as
  // its A rows; other layers gather them (im2col).
  const int64_t kstep = u8 ? 4 : 2, ksteps = u8 ? pk.kquads : pk.kpairs, lda_gather = ksteps * kstep;
  const bool pointwise = pk.KH == 1 && pk.KW == 1 && win.sh == 1 && win.sw == 1 && win.pad_top == 0 &&
                         win.pad_left == 0 && OH == H && OW == W && C % kstep == 0;
  const int64_t Hp = pointwise ? H : std::max(H + win.pad_top, (OH - 1) * win.sh + (pk.KH - 1) * win.dh + 1);
  const int64_t Wp = pointwise ? W : std::max(W + win.pad_left, (OW - 1) * win.sw + (pk.KW - 1) * win.dw + 1);
  const int64_t image = Hp * Wp * C;
  const int64_t ocpad = pk.npanels * kPanel;
  // The images' codes (centred int16 with zero borders, or bytes code + bias with borders
  // offset + bias), their channel scales and (8-bit form) corrections: made by the calling
  // thread, read by every worker.
  thread_local std::vector<int16_t> img_buf;
  thread_local std::vector<uint8_t> img8_buf;
  thread_local std::vector<float> scale_buf;
  thread_local std::vector<int32_t> corr_buf;
  int16_t* img = u8 ? nullptr : hconv::grow(img_buf, N * image);
  uint8_t* img8 = u8 ? hconv::grow(img8_buf, N * image) : nullptr;
  float* scales = hconv::grow(scale_buf, N * ocpad);
  int32_t* corrs = u8 ? hconv::grow(corr_buf, N * ocpad) : nullptr;
  const float* x = c.in[0].as<float>();
  for (int64_t b = 0; b < N; ++b) {
    const float* xb = x + b * H * W * C;
    float mn = 0, mx = 0;
    if (H * W * C > 0 && !fn.min_max(xb, H * W * C, &mn, &mx)) return hybrid_conv2d(c);  // a NaN: the reference's order
    const HybridQuant h = hybrid_quant(mn, mx, pk.asymmetric);
    const int64_t row0 = pointwise ? 0 : win.pad_top, col0 = pointwise ? 0 : win.pad_left;
    if (u8) {
      uint8_t* ib = img8 + b * image;
      if (!pointwise || h.zero) std::memset(ib, static_cast<uint8_t>(h.offset + fn.byte_bias), static_cast<size_t>(image));
      if (!h.zero)
        for (int64_t iy = 0; iy < H; ++iy)
          fn.codes_u8(xb + iy * W * C, W * C, h.inv, h.add, h.lo, h.hi, ib + ((iy + row0) * Wp + col0) * C);
      for (int64_t o = 0; o < ocpad; ++o)  // modulo 2^32, as the lanes' sums
        corrs[b * ocpad + o] = static_cast<int32_t>(static_cast<uint32_t>((fn.byte_bias + h.offset) * pk.wsum[o]));
    } else {
      int16_t* ib = img + b * image;
      if (!pointwise || h.zero) std::memset(ib, 0, static_cast<size_t>(image) * sizeof(int16_t));
      if (!h.zero)
        for (int64_t iy = 0; iy < H; ++iy)
          fn.codes(xb + iy * W * C, W * C, h.inv, h.add, h.lo, h.hi, h.offset, ib + ((iy + row0) * Wp + col0) * C);
    }
    float* sb = scales + b * ocpad;
    // The reference's product (float multiplication commutes: one formula for both forms).
    for (int64_t o = 0; o < ocpad; ++o) sb[o] = o < OC ? pk.wscale[o] * h.scale : 0.0f;
  }
  // The bias padded to whole panels (the kernels read 16 entries a panel).
  const float* bias_in = c.in.size() > 2 && c.in[2] ? c.in[2].as<float>() : nullptr;
  thread_local std::vector<float> bias_buf;
  float* bias = bias_in ? hconv::grow(bias_buf, ocpad) : nullptr;
  if (bias) {
    std::copy(bias_in, bias_in + OC, bias);
    std::fill(bias + OC, bias + ocpad, 0.0f);
  }
  float* y = c.out[0].as<float>();
  const int64_t pixels_per_image = OH * OW;
  // Pixels per A block: about 64 KB of int16 rows (32 KB of bytes), a multiple of 12 (the
  // micro-tiles' rows).
  const int64_t row_bytes = lda_gather * (u8 ? 1 : 2);
  const int64_t block = std::clamp<int64_t>((u8 ? 32768 : 65536) / row_bytes / 12 * 12, 12, 192);
  auto work = [&](int64_t r0, int64_t r1) {
    thread_local std::vector<int16_t> a_buf;
    thread_local std::vector<uint8_t> a8_buf;
    int16_t* abuf = pointwise || u8 ? nullptr : hconv::grow(a_buf, block * lda_gather);
    uint8_t* abuf8 = pointwise || !u8 ? nullptr : hconv::grow(a8_buf, block * lda_gather);
    for (int64_t p = r0 * OW, pend = r1 * OW; p < pend;) {
      const int64_t b = p / pixels_per_image, q0 = p - b * pixels_per_image;
      const int64_t nb = std::min({block, pend - p, (b + 1) * pixels_per_image - p});
      const int64_t lda = pointwise ? C : lda_gather;
      const int16_t* a = nullptr;
      const uint8_t* a8 = nullptr;
      if (pointwise) {  // [N][H][W][C]: pixel p's channels
        if (u8) a8 = img8 + p * C;
        else a = img + p * C;
      } else if (u8) {
        gather_rows(img8 + b * image, Wp, C, pk.KH, pk.KW, pk.K, OW, win, q0, nb, lda, abuf8);
        a8 = abuf8;
      } else {
        gather_rows(img + b * image, Wp, C, pk.KH, pk.KW, pk.K, OW, win, q0, nb, lda, abuf);
        a = abuf;
      }
      for (int64_t pn = 0; pn < pk.npanels; ++pn) {
        hconv::Out o;
        o.scale = scales + b * ocpad + pn * kPanel;
        o.bias = bias ? bias + pn * kPanel : nullptr;
        o.act = act;
        o.nvalid = static_cast<int>(std::min<int64_t>(kPanel, OC - pn * kPanel));
        o.y = y + p * OC + pn * kPanel;
        o.ldy = OC;
        if (u8)
          fn.panel_u8(nb, pk.kquads, a8, lda, pk.panels8.data() + pn * pk.kquads * kPanel * 4,
                      corrs + b * ocpad + pn * kPanel, o);
        else
          fn.panel(nb, pk.kpairs, a, lda, pk.panels.data() + pn * pk.kpairs * kPanel * 2, o);
      }
      p += nb;
    }
  };
  parallel_rows(c, N * OH, work, min_rows_per_chunk(OW * OC * pk.K));
  return Status::Ok();
}

}  // namespace tessera::cpu
