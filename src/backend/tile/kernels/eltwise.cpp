// Vector-engine elementwise kernels: binary ops with numpy broadcasting (and a fused
// activation), and unary ops. The vector engine computes in float32; the result is
// rounded only when it is packed into the output's format.
#include <algorithm>
#include <cmath>

#include "backend/tile/kernel.h"
#include "ops/unary_math.h"

namespace tessera::tile {

namespace {

// Strides mapping an output index to an input index under broadcasting (0 on broadcast dims).
std::vector<int64_t> broadcast_strides(const Shape& out, const Shape& in) {
  std::vector<int64_t> st(out.size(), 0);
  auto rs = row_major_strides(in);
  size_t off = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d) st[off + d] = in[d] == 1 ? 0 : rs[d];
  return st;
}

template <typename F>
Status binary(KernelContext& c, F f) {
  TS_ASSIGN_OR_RETURN(std::vector<float> a, c.io.load(0));
  TS_ASSIGN_OR_RETURN(std::vector<float> b, c.io.load(1));
  const Shape& out = c.out(0).shape;
  auto as = broadcast_strides(out, c.in(0).shape), bs = broadcast_strides(out, c.in(1).shape);
  const std::string act = c.n.get(attr::activation);
  std::vector<float> y(static_cast<size_t>(num_elements(out)));
  int rank = static_cast<int>(out.size());
  std::vector<int64_t> idx(rank, 0);
  int64_t ia = 0, ib = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    y[i] = apply_activation(f(a[ia], b[ib]), act);
    for (int d = rank - 1; d >= 0; --d) {
      ia += as[d];
      ib += bs[d];
      if (++idx[d] < out[d]) break;
      ia -= as[d] * out[d];
      ib -= bs[d] * out[d];
      idx[d] = 0;
    }
  }
  return c.io.store(0, y);
}

Status add(KernelContext& c) { return binary(c, [](float a, float b) { return a + b; }); }
Status sub(KernelContext& c) { return binary(c, [](float a, float b) { return a - b; }); }
Status mul(KernelContext& c) { return binary(c, [](float a, float b) { return a * b; }); }
Status div(KernelContext& c) { return binary(c, [](float a, float b) { return a / b; }); }
Status floor_div(KernelContext& c) { return binary(c, [](float a, float b) { return std::floor(a / b); }); }
Status maximum(KernelContext& c) { return binary(c, [](float a, float b) { return std::max(a, b); }); }
Status minimum(KernelContext& c) { return binary(c, [](float a, float b) { return std::min(a, b); }); }

KernelWork binary_work(const Graph& g, const Node& n) {
  return {0, static_cast<double>(tiles_of(g.tensor(n.outputs[0]).shape))};
}

template <typename F>
Status unary(KernelContext& c, F f) {
  TS_ASSIGN_OR_RETURN(std::vector<float> x, c.io.load(0));
  for (float& v : x) v = f(v);
  return c.io.store(0, x);
}

// The vector engine's unary ops: the scalar formula comes from ops/unary_math.h.
Status unary_op(KernelContext& c) {
  return ops::with_unary_fn(c.n, [&](auto f) { return unary(c, f); });
}

KernelWork unary_work(const Graph& g, const Node& n) {
  return {0, static_cast<double>(tiles_of(g.tensor(n.outputs[0]).shape))};
}

std::string binary_check(const Graph& g, const Node& n) { return check_activation(n); }

}  // namespace

void add_eltwise_kernels(std::vector<TileKernel>& k) {
  using Entry = std::pair<OpKind, Status (*)(KernelContext&)>;
  for (auto [op, fn] : {Entry{OpKind::add, add}, {OpKind::sub, sub}, {OpKind::mul, mul}, {OpKind::div, div},
                        {OpKind::floor_div, floor_div},
                        {OpKind::maximum, maximum}, {OpKind::minimum, minimum}})
    k.push_back({op, 0, 0, binary_check, fn, binary_work});
  for (OpKind op : {OpKind::relu, OpKind::relu6, OpKind::leaky_relu, OpKind::logistic, OpKind::tanh,
                    OpKind::hard_swish, OpKind::silu, OpKind::gelu, OpKind::exp, OpKind::rsqrt, OpKind::sqrt})
    k.push_back({op, 0, 0, nullptr, unary_op, unary_work});
}

}  // namespace tessera::tile
