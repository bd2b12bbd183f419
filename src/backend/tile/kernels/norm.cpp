// Vector-engine kernels for attention and normalisation: softmax (with an optional
// additive mask), rms_norm, layer_norm and rope. Statistics are accumulated in float32,
// as the vector engine does; rope's cos/sin tables are computed on the host in double
// and rounded to float32, as host-prepared rotation tables are.
#include <algorithm>
#include <cmath>
#include <limits>

#include "backend/tile/kernel.h"

namespace tessera::tile {

namespace {

// Same defaults as the cpu reference kernels: eps 1e-5 (PyTorch LayerNorm, llama) and
// rope base 10000 (RoFormer).
constexpr double kDefaultNormEps = 1e-5;
constexpr double kDefaultRopeBase = 10000.0;

int norm_axis(const Node& n, size_t rank) {
  int64_t a = n.get(attr::axis);
  return static_cast<int>(a < 0 ? a + static_cast<int64_t>(rank) : a);
}

std::string softmax_check(const Graph& g, const Node& n) {
  size_t rank = g.tensor(n.inputs[0]).shape.size();
  int axis = norm_axis(n, rank);
  if (rank == 0 || axis < 0 || axis >= static_cast<int>(rank)) return "softmax axis out of range";
  return "";
}

// y = softmax(beta * x + mask) along axis; a slice that is all -inf gives zeros.
Status softmax(KernelContext& c) {
  const Shape& s = c.in(0).shape;
  const int axis = norm_axis(c.n, s.size());
  const float beta = static_cast<float>(c.n.get(attr::beta));
  TS_ASSIGN_OR_RETURN(std::vector<float> x, c.io.load(0));
  std::vector<float> mask;
  if (c.has_in(1)) {
    TS_ASSIGN_OR_RETURN(mask, c.io.load(1));
  }
  // Expand the mask through broadcasting into z = beta * x + mask.
  std::vector<float> z(x.size());
  {
    const Shape& ms = c.has_in(1) ? c.in(1).shape : Shape{};
    std::vector<int64_t> st(s.size(), 0);
    auto rs = row_major_strides(ms);
    for (size_t d = 0; d < ms.size(); ++d) st[s.size() - ms.size() + d] = ms[d] == 1 ? 0 : rs[d];
    std::vector<int64_t> idx(s.size(), 0);
    int64_t mi = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      z[i] = beta * x[i] + (mask.empty() ? 0.0f : mask[mi]);
      for (int d = static_cast<int>(s.size()) - 1; d >= 0; --d) {
        mi += st[d];
        if (++idx[d] < s[d]) break;
        mi -= st[d] * s[d];
        idx[d] = 0;
      }
    }
  }
  const int64_t len = s[axis];
  int64_t inner = 1;
  for (size_t d = axis + 1; d < s.size(); ++d) inner *= s[d];
  const int64_t outer = len == 0 ? 0 : static_cast<int64_t>(x.size()) / (len * inner);
  std::vector<float> y(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = o * len * inner + i;
      float mx = -std::numeric_limits<float>::infinity();
      for (int64_t j = 0; j < len; ++j) mx = std::max(mx, z[base + j * inner]);
      if (mx == -std::numeric_limits<float>::infinity()) {
        for (int64_t j = 0; j < len; ++j) y[base + j * inner] = 0.0f;
        continue;
      }
      float sum = 0.0f;
      for (int64_t j = 0; j < len; ++j) {
        float e = std::exp(z[base + j * inner] - mx);
        y[base + j * inner] = e;
        sum += e;
      }
      const float inv = 1.0f / sum;
      for (int64_t j = 0; j < len; ++j) y[base + j * inner] *= inv;
    }
  return c.io.store(0, y);
}

Status load_param(KernelContext& c, int i, int64_t d, float fallback, std::vector<float>& p) {
  if (!c.has_in(i)) {
    p.assign(static_cast<size_t>(d), fallback);
    return Status::Ok();
  }
  TS_ASSIGN_OR_RETURN(p, c.io.load(i));
  if (static_cast<int64_t>(p.size()) != d)
    return tile_kernel_error(c.n, "parameter '" + c.in(i).name + "' has " + std::to_string(p.size()) +
                                      " values for rows of " + std::to_string(d));
  return Status::Ok();
}

Status rms_norm(KernelContext& c) {
  const int64_t d = c.in(0).shape.back();
  const float eps = static_cast<float>(c.n.get(attr::eps));
  TS_ASSIGN_OR_RETURN(std::vector<float> x, c.io.load(0));
  std::vector<float> w;
  TS_RETURN_IF_ERROR(load_param(c, 1, d, 1.0f, w));
  const int64_t rows = d == 0 ? 0 : static_cast<int64_t>(x.size()) / d;
  for (int64_t r = 0; r < rows; ++r) {
    float* xr = x.data() + r * d;
    float ss = 0.0f;
    for (int64_t i = 0; i < d; ++i) ss += xr[i] * xr[i];
    const float inv = 1.0f / std::sqrt(ss / static_cast<float>(d) + eps);
    for (int64_t i = 0; i < d; ++i) xr[i] = xr[i] * inv * w[i];
  }
  return c.io.store(0, x);
}

Status layer_norm(KernelContext& c) {
  const int64_t d = c.in(0).shape.back();
  const float eps = static_cast<float>(c.n.get(attr::eps));
  TS_ASSIGN_OR_RETURN(std::vector<float> x, c.io.load(0));
  std::vector<float> gamma, beta;
  TS_RETURN_IF_ERROR(load_param(c, 1, d, 1.0f, gamma));
  TS_RETURN_IF_ERROR(load_param(c, 2, d, 0.0f, beta));
  const int64_t rows = d == 0 ? 0 : static_cast<int64_t>(x.size()) / d;
  for (int64_t r = 0; r < rows; ++r) {
    float* xr = x.data() + r * d;
    float mean = 0.0f;
    for (int64_t i = 0; i < d; ++i) mean += xr[i];
    mean /= static_cast<float>(d);
    float var = 0.0f;
    for (int64_t i = 0; i < d; ++i) var += (xr[i] - mean) * (xr[i] - mean);
    var /= static_cast<float>(d);
    const float inv = 1.0f / std::sqrt(var + eps);
    for (int64_t i = 0; i < d; ++i) xr[i] = (xr[i] - mean) * inv * gamma[i] + beta[i];
  }
  return c.io.store(0, x);
}

std::string rope_check(const Graph& g, const Node& n) {
  const Shape& s = g.tensor(n.inputs[0]).shape;
  if (s.size() < 3) return "rope needs x of rank >= 3 ([T, H, D] or [B, T, H, D])";
  std::string mode = n.get(attr::mode);
  if (mode != "normal" && mode != "neox") return "unknown rope mode '" + mode + "'";
  int64_t nd = n.find(attr::n_dims).value_or(s.back());
  if (nd < 2 || nd > s.back() || nd % 2) return "rope n_dims must be even and in [2, D]";
  return "";
}

// Pair p of each head is rotated by theta = pos * base^(-2p / n_dims); "normal" pairs
// (2p, 2p + 1), "neox" pairs (p, p + n_dims / 2).
Status rope(KernelContext& c) {
  const Shape& s = c.in(0).shape;
  const int64_t d = s.back(), h = s[s.size() - 2], t = s[s.size() - 3];
  const int64_t batches = num_elements(s) / std::max<int64_t>(t * h * d, 1);
  const int64_t n_dims = c.n.find(attr::n_dims).value_or(d);
  const double base = c.n.get(attr::freq_base);
  const bool neox = c.n.get(attr::mode) == "neox";
  TS_ASSIGN_OR_RETURN(std::vector<float> x, c.io.load(0));
  TS_ASSIGN_OR_RETURN(std::vector<int32_t> pos, c.io.load_i32(1));
  if (static_cast<int64_t>(pos.size()) != t)
    return tile_kernel_error(c.n, "positions have " + std::to_string(pos.size()) + " entries for " +
                                      std::to_string(t) + " tokens");
  const int64_t half = n_dims / 2;
  std::vector<float> cs(static_cast<size_t>(t * half)), sn(static_cast<size_t>(t * half));
  for (int64_t ti = 0; ti < t; ++ti)
    for (int64_t p = 0; p < half; ++p) {
      double theta = pos[ti] * std::pow(base, -2.0 * static_cast<double>(p) / static_cast<double>(n_dims));
      cs[ti * half + p] = static_cast<float>(std::cos(theta));
      sn[ti * half + p] = static_cast<float>(std::sin(theta));
    }
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t ti = 0; ti < t; ++ti)
      for (int64_t hi = 0; hi < h; ++hi) {
        float* row = x.data() + ((b * t + ti) * h + hi) * d;
        for (int64_t p = 0; p < half; ++p) {
          const int64_t i0 = neox ? p : 2 * p, i1 = neox ? p + half : 2 * p + 1;
          const float x0 = row[i0], x1 = row[i1], cv = cs[ti * half + p], sv = sn[ti * half + p];
          row[i0] = x0 * cv - x1 * sv;
          row[i1] = x0 * sv + x1 * cv;
        }
      }
  return c.io.store(0, x);
}

std::string rank_check(const Graph& g, const Node& n) {
  return g.tensor(n.inputs[0]).shape.empty() ? "normalising a scalar has no tile kernel" : "";
}

KernelWork row_work(const Graph& g, const Node& n) {
  // Two passes over the data (statistics, then scaling).
  return {0, 2.0 * static_cast<double>(tiles_of(g.tensor(n.inputs[0]).shape))};
}

}  // namespace

void add_norm_kernels(std::vector<TileKernel>& k) {
  k.push_back({OpKind::softmax, 0, 0, softmax_check, softmax, row_work});
  k.push_back({OpKind::rms_norm, 0, 0, rank_check, rms_norm, row_work});
  k.push_back({OpKind::layer_norm, 0, 0, rank_check, layer_norm, row_work});
  k.push_back({OpKind::rope, 1u << 1, 0, rope_check, rope, row_work});
}

}  // namespace tessera::tile
