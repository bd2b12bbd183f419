// Reference kernels: elementwise binary and unary ops on f32 (computed in double where it
// matters for accuracy is not needed: these are the plain float definitions).
#include <cmath>

#include "backend/cpu/kernel.h"

namespace tessera::cpu {

namespace {

// Maps an output index to the broadcast input index.
struct Broadcast {
  Shape out;
  std::vector<int64_t> a_strides, b_strides;
  Broadcast(const Shape& o, const Shape& a, const Shape& b) : out(o) {
    a_strides = strides_for(a);
    b_strides = strides_for(b);
  }
  std::vector<int64_t> strides_for(const Shape& s) const {
    std::vector<int64_t> st(out.size(), 0);
    auto rs = row_major_strides(s);
    size_t off = out.size() - s.size();
    for (size_t i = 0; i < s.size(); ++i) st[off + i] = s[i] == 1 ? 0 : rs[i];
    return st;
  }
};

float apply_activation(float v, const std::string& act) {
  if (act == "relu") return std::max(v, 0.0f);
  if (act == "relu6") return std::min(std::max(v, 0.0f), 6.0f);
  if (act == "relu_n1_to_1") return std::min(std::max(v, -1.0f), 1.0f);
  return v;
}

template <typename F>
Status binary_f32(KernelContext& c, F f) {
  if (c.in[0].dtype() != DType::f32 || c.in[1].dtype() != DType::f32)
    return kernel_error(c.n, std::string("plain kernel takes f32, got ") + dtype_name(c.in[0].dtype()));
  Broadcast bc(c.out[0].shape(), c.in[0].shape(), c.in[1].shape());
  const float* a = c.in[0].as<float>();
  const float* b = c.in[1].as<float>();
  float* y = c.out[0].as<float>();
  std::string act = c.n.attr_str("activation", "none");
  int rank = static_cast<int>(bc.out.size());
  std::vector<int64_t> idx(rank, 0);
  int64_t total = num_elements(bc.out);
  for (int64_t i = 0; i < total; ++i) {
    int64_t ia = 0, ib = 0;
    for (int d = 0; d < rank; ++d) {
      ia += idx[d] * bc.a_strides[d];
      ib += idx[d] * bc.b_strides[d];
    }
    y[i] = apply_activation(f(a[ia], b[ib]), act);
    for (int d = rank - 1; d >= 0; --d) {
      if (++idx[d] < bc.out[d]) break;
      idx[d] = 0;
    }
  }
  return Status::Ok();
}

template <typename F>
Status unary_f32(KernelContext& c, F f) {
  if (c.in[0].dtype() != DType::f32)
    return kernel_error(c.n, std::string("plain kernel takes f32, got ") + dtype_name(c.in[0].dtype()));
  const float* x = c.in[0].as<float>();
  float* y = c.out[0].as<float>();
  for (int64_t i = 0, n = c.in[0].elements(); i < n; ++i) y[i] = f(x[i]);
  return Status::Ok();
}

Status add(KernelContext& c) { return binary_f32(c, [](float a, float b) { return a + b; }); }
Status relu(KernelContext& c) { return unary_f32(c, [](float x) { return std::max(x, 0.0f); }); }

}  // namespace

void register_elementwise_kernels(KernelTable& t) {
  t.add(OpKind::add, KernelKind::plain, add);
  t.add(OpKind::relu, KernelKind::plain, relu);
}

}  // namespace tessera::cpu
