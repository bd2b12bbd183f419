// The tile kernel table and helpers shared by the kernel families.
#include <algorithm>

#include "backend/tile/kernel.h"

namespace tessera::tile {

const TileKernel* find_kernel(OpKind op) {
  static const std::vector<TileKernel> kTable = [] {
    std::vector<TileKernel> k;
    add_matrix_kernels(k);
    add_eltwise_kernels(k);
    add_norm_kernels(k);
    add_data_kernels(k);
    // Ops with a float path for quantized tensors (option quantized=float): their inputs
    // arrive as real values and quantized outputs are requantized on store.
    for (TileKernel& t : k)
      for (OpKind q : {OpKind::conv2d, OpKind::depthwise_conv2d, OpKind::fully_connected, OpKind::add, OpKind::sub,
                       OpKind::mul, OpKind::reshape, OpKind::concat, OpKind::mean, OpKind::softmax, OpKind::quantize,
                       OpKind::dequantize, OpKind::requantize, OpKind::logistic, OpKind::relu, OpKind::relu6,
                       OpKind::avg_pool2d, OpKind::max_pool2d})
        if (t.op == q) t.quantized = true;
    std::vector<TileKernel> by_op(kNumOps);
    for (const TileKernel& t : k) by_op[static_cast<size_t>(t.op)] = t;
    return by_op;
  }();
  const TileKernel& k = kTable[static_cast<size_t>(op)];
  return k.run ? &k : nullptr;
}

Status tile_kernel_error(const Node& n, const std::string& msg) {
  return error(StatusCode::invalid_argument, "[", op_name(n.op), "] ", n.name.empty() ? "" : "'" + n.name + "': ", msg);
}

int64_t tiles_of(const Shape& s) {
  Format f = Format::tiled(Encoding::f32, s);
  Shape p = f.padded_shape();
  return p[0] / kTileDim * (p[1] / kTileDim);
}

float apply_activation(float v, const std::string& act) {
  if (act == "relu") return std::max(v, 0.0f);
  if (act == "relu6") return std::min(std::max(v, 0.0f), 6.0f);
  if (act == "relu_n1_to_1") return std::min(std::max(v, -1.0f), 1.0f);
  return v;
}

std::string check_activation(const Node& n) {
  std::string a = n.get(attr::activation);
  if (a == "none" || a == "relu" || a == "relu6" || a == "relu_n1_to_1") return "";
  return "activation '" + a + "' has no tile kernel";
}

}  // namespace tessera::tile
