// Helpers shared by the plain reference kernels (see kernel_util.h).
#include "backend/cpu/kernels/kernel_util.h"

namespace tessera::cpu {

const float* f16_table() {
  static const std::vector<float> table = [] {
    std::vector<float> t(65536);
    for (uint32_t h = 0; h < 65536; ++h) t[h] = f16_to_f32(static_cast<uint16_t>(h));
    return t;
  }();
  return table.data();
}

Status require_f32(const KernelContext& c, std::initializer_list<int> inputs) {
  for (int i : inputs) {
    if (i >= static_cast<int>(c.in.size()) || !c.in[i]) continue;
    if (c.in[i].dtype() != DType::f32)
      return kernel_error(c.n, "input " + std::to_string(i) + " '" + c.in[i].t->name + "' is " +
                                   dtype_name(c.in[i].dtype()) + "; the plain kernel takes f32");
  }
  if (c.out[0].dtype() != DType::f32)
    return kernel_error(c.n, "output '" + c.out[0].t->name + "' is " + dtype_name(c.out[0].dtype()) +
                                 "; the plain kernel produces f32");
  return Status::Ok();
}

void broadcast_strides_into(const Shape& out, const Shape& in, std::vector<int64_t>& st) {
  st.assign(out.size(), 0);
  const size_t off = out.size() - in.size();
  int64_t stride = 1;
  for (size_t i = in.size(); i-- > 0;) {
    st[off + i] = in[i] == 1 ? 0 : stride;
    stride *= in[i];
  }
}

DimList row_major_dims(const Shape& s) {
  DimList st(s.size());
  int64_t stride = 1;
  for (size_t i = s.size(); i-- > 0;) {
    st[i] = stride;
    stride *= s[i];
  }
  return st;
}

DimList broadcast_strides(std::span<const int64_t> out, std::span<const int64_t> in) {
  DimList st(out.size());
  const size_t off = out.size() - in.size();
  int64_t stride = 1;
  for (size_t i = in.size(); i-- > 0;) {
    st[off + i] = in[i] == 1 ? 0 : stride;
    stride *= in[i];
  }
  return st;
}

Result<Activation> activation_of(const Node& n) {
  const std::string& a = n.get(attr::activation);
  if (a == "none") return Activation::none;
  if (a == "relu") return Activation::relu;
  if (a == "relu6") return Activation::relu6;
  if (a == "relu_n1_to_1") return Activation::relu_n1_to_1;
  return kernel_error(n, "unknown activation '" + a + "' (none, relu, relu6, relu_n1_to_1)");
}

Window window_of(const Node& n, int64_t kh, int64_t kw) {
  Window w;
  w.kh = kh;
  w.kw = kw;
  w.sh = n.get(attr::stride_h);
  w.sw = n.get(attr::stride_w);
  // Pools have no dilation (ops.def declares it for the convolutions only).
  const bool dilated = attr::declares(n.op, attr::dilation_h);
  w.dh = dilated ? n.get(attr::dilation_h) : 1;
  w.dw = dilated ? n.get(attr::dilation_w) : 1;
  w.pad_top = n.get(attr::pad_top);
  w.pad_left = n.get(attr::pad_left);
  return w;
}

}  // namespace tessera::cpu
