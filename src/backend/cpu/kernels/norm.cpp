// Reference kernels: rms_norm, layer_norm and rope on f32 activations.
// Row statistics (sum of squares, mean, variance) and rope angles are computed in double,
// so the oracle's own rounding stays far below any device's.
#include "backend/cpu/kernels/kernel_util.h"

namespace tessera::cpu {

namespace {

// Default epsilon of rms_norm and layer_norm when the attribute is absent (the value
// PyTorch's LayerNorm and most llama configurations use).
constexpr double kDefaultNormEps = 1e-5;
// Default rope base frequency (RoFormer, Su et al. 2021; llama's rope_freq_base).
constexpr double kDefaultRopeBase = 10000.0;

// A per-channel parameter vector [D] in f32, f16 or bf16 (absent: all `fallback`).
class Param {
 public:
  Param(const TensorRef& r, float fallback) : r_(r), fallback_(fallback) {}
  float operator[](int64_t i) const {
    if (!r_) return fallback_;
    switch (r_.dtype()) {
      case DType::f16: return f16_to_f32(r_.as<uint16_t>()[i]);
      case DType::bf16: return bf16_to_f32(r_.as<uint16_t>()[i]);
      default: return r_.as<float>()[i];
    }
  }

 private:
  TensorRef r_;
  float fallback_;
};

Status check_params(const KernelContext& c) {
  if (c.in[0].dtype() != DType::f32 || c.out[0].dtype() != DType::f32)
    return kernel_error(c.n, std::string("plain kernel takes f32, got ") + dtype_name(c.in[0].dtype()));
  for (size_t i = 1; i < c.in.size(); ++i) {
    DType t = c.in[i] ? c.in[i].dtype() : DType::f32;
    if (t != DType::f32 && t != DType::f16 && t != DType::bf16)
      return kernel_error(c.n, "parameter '" + c.in[i].t->name + "' must be f32, f16 or bf16, got " + dtype_name(t));
  }
  return Status::Ok();
}

TensorRef optional_in(const KernelContext& c, size_t i) { return i < c.in.size() ? c.in[i] : TensorRef{}; }

// y = x / sqrt(mean(x^2) + eps) * weight, per row of the last dim.
Status rms_norm(KernelContext& c) {
  TS_RETURN_IF_ERROR(check_params(c));
  const int64_t d = c.in[0].shape().back();
  const int64_t rows = d == 0 ? 0 : c.in[0].elements() / d;
  const double eps = c.n.get(attr::eps);
  // The weights as f32 once (the values Param gives), not a dtype switch per element.
  Param wp(optional_in(c, 1), 1.0f);
  thread_local std::vector<float> wbuf;
  if (static_cast<int64_t>(wbuf.size()) < d) wbuf.resize(static_cast<size_t>(d));
  for (int64_t i = 0; i < d; ++i) wbuf[i] = wp[i];
  const float* w = wbuf.data();
  const float* x = c.in[0].as<float>();
  float* y = c.out[0].as<float>();
  // Row by row, so any split over the pool gives the same values.
  parallel_rows(c, rows, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = x + r * d;
      double ss = 0;
      for (int64_t i = 0; i < d; ++i) ss += static_cast<double>(xr[i]) * xr[i];
      const double inv = 1.0 / std::sqrt(ss / static_cast<double>(d) + eps);
      for (int64_t i = 0; i < d; ++i) y[r * d + i] = static_cast<float>(xr[i] * inv * w[i]);
    }
  }, min_rows_per_chunk(4 * d));
  return Status::Ok();
}

// y = (x - mean) / sqrt(var + eps) * gamma + beta, per row of the last dim (biased variance).
Status layer_norm(KernelContext& c) {
  TS_RETURN_IF_ERROR(check_params(c));
  const int64_t d = c.in[0].shape().back();
  const int64_t rows = d == 0 ? 0 : c.in[0].elements() / d;
  const double eps = c.n.get(attr::eps);
  Param gamma(optional_in(c, 1), 1.0f), beta(optional_in(c, 2), 0.0f);
  const float* x = c.in[0].as<float>();
  float* y = c.out[0].as<float>();
  parallel_rows(c, rows, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = x + r * d;
      double mean = 0;
      for (int64_t i = 0; i < d; ++i) mean += xr[i];
      mean /= static_cast<double>(d);
      double var = 0;
      for (int64_t i = 0; i < d; ++i) var += (xr[i] - mean) * (xr[i] - mean);
      var /= static_cast<double>(d);
      const double inv = 1.0 / std::sqrt(var + eps);
      for (int64_t i = 0; i < d; ++i) y[r * d + i] = static_cast<float>((xr[i] - mean) * inv * gamma[i] + beta[i]);
    }
  }, min_rows_per_chunk(8 * d));
  return Status::Ok();
}

// Rotary embedding of x [T, H, D] or [B, T, H, D] at positions [T]. Pair p of a head
// (p < n_dims / 2) is rotated by theta_p = pos * freq_base^(-2p / n_dims):
//   mode "normal" (llama): elements (2p, 2p + 1);  mode "neox": elements (p, p + n_dims/2).
// Elements at n_dims and beyond pass through unchanged.
Status rope(KernelContext& c) {
  if (c.in[0].dtype() != DType::f32 || c.out[0].dtype() != DType::f32)
    return kernel_error(c.n, std::string("plain kernel takes f32, got ") + dtype_name(c.in[0].dtype()));
  const Shape& s = c.in[0].shape();
  const int64_t d = s.back(), h = s[s.size() - 2], t = s[s.size() - 3];
  const int64_t batches = c.in[0].elements() / (t * h * d);
  const int64_t n_dims = c.n.find(attr::n_dims).value_or(d);
  const double base = c.n.get(attr::freq_base);
  const std::string mode = c.n.get(attr::mode);
  if (mode != "normal" && mode != "neox") return kernel_error(c.n, "unknown rope mode '" + mode + "' (normal, neox)");
  if (n_dims < 2 || n_dims > d || n_dims % 2) return kernel_error(c.n, "n_dims must be even and in [2, D]");
  const bool neox = mode == "neox";
  const int32_t* pos = c.in[1].as<int32_t>();
  const float* x = c.in[0].as<float>();
  float* y = c.out[0].as<float>();
  if (y != x) std::memcpy(y, x, c.in[0].elements() * sizeof(float));
  const int64_t half = n_dims / 2;
  // The pair frequencies freq_base^(-2p / n_dims) once per call (the same doubles the
  // angle used to recompute per token), then token by token (each its own angles), split
  // over the pool: the same values for any split. Tables that keep their size: a decode
  // step allocates nothing here.
  thread_local std::vector<double> freq;
  if (static_cast<int64_t>(freq.size()) < half) freq.resize(half);
  for (int64_t p = 0; p < half; ++p)
    freq[p] = std::pow(base, -2.0 * static_cast<double>(p) / static_cast<double>(n_dims));
  const double* fr = freq.data();
  parallel_rows(c, batches * t, [&](int64_t u0, int64_t u1) {
    thread_local std::vector<double> cs, sn;
    if (static_cast<int64_t>(cs.size()) < half) cs.resize(half), sn.resize(half);
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t b = u / t, ti = u % t;
      for (int64_t p = 0; p < half; ++p) {
        double theta = pos[ti] * fr[p];
        cs[p] = std::cos(theta);
        sn[p] = std::sin(theta);
      }
      for (int64_t hi = 0; hi < h; ++hi) {
        const int64_t off = ((b * t + ti) * h + hi) * d;
        for (int64_t p = 0; p < half; ++p) {
          const int64_t i0 = neox ? p : 2 * p, i1 = neox ? p + half : 2 * p + 1;
          const double x0 = x[off + i0], x1 = x[off + i1];
          y[off + i0] = static_cast<float>(x0 * cs[p] - x1 * sn[p]);
          y[off + i1] = static_cast<float>(x0 * sn[p] + x1 * cs[p]);
        }
      }
    }
  }, min_rows_per_chunk(h * d + 64 * half));
  return Status::Ok();
}

}  // namespace

void register_norm_kernels(KernelTable& t) {
  t.add(OpKind::rms_norm, KernelKind::plain, rms_norm);
  t.add(OpKind::layer_norm, KernelKind::plain, layer_norm);
  t.add(OpKind::rope, KernelKind::plain, rope);
}

}  // namespace tessera::cpu
