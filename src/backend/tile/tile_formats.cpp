#include "backend/tile/tile_formats.h"

namespace tessera::tile {

namespace {
enum Use : uint32_t { kMatrixB = 1, kConvWeight = 2, kTable = 4, kOther = 8 };

uint32_t uses_of(const Graph& g, TensorId id) {
  uint32_t u = 0;
  for (const Node& n : g.nodes()) {
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      if (n.inputs[k] != id) continue;
      bool matrix = n.op == OpKind::fully_connected || n.op == OpKind::matmul;
      bool conv = n.op == OpKind::conv2d || n.op == OpKind::depthwise_conv2d;
      if (matrix && k == 1) u |= kMatrixB;
      else if (conv && k == 1) u |= kConvWeight;
      else if (n.op == OpKind::get_rows && k == 0) u |= kTable;
      else u |= kOther;
    }
  }
  return u;
}
}  // namespace

const char* weight_policy_name(WeightPolicy w) {
  switch (w) {
    case WeightPolicy::automatic: return "auto";
    case WeightPolicy::bf16: return "bf16";
    case WeightPolicy::bfp8_b: return "bfp8_b";
    case WeightPolicy::bfp4_b: return "bfp4_b";
  }
  return "?";
}

Result<FormatPolicy> parse_format_policy(const DeviceOptions& opts) {
  FormatPolicy p;
  if (auto it = opts.find("weights"); it != opts.end()) {
    const std::string& v = it->second;
    if (v == "auto") p.weights = WeightPolicy::automatic;
    else if (v == "bf16") p.weights = WeightPolicy::bf16;
    else if (v == "bfp8_b" || v == "bfp8") p.weights = WeightPolicy::bfp8_b;
    else if (v == "bfp4_b" || v == "bfp4") p.weights = WeightPolicy::bfp4_b;
    else return error(StatusCode::invalid_argument, "tile: weights must be bf16, bfp8_b, bfp4_b or auto, got '", v, "'");
  }
  if (auto it = opts.find("quantized"); it != opts.end()) {
    if (it->second == "cpu") p.quantized_float = false;
    else if (it->second == "float") p.quantized_float = true;
    else return error(StatusCode::invalid_argument, "tile: quantized must be cpu or float, got '", it->second, "'");
  }
  if (auto it = opts.find("activations"); it != opts.end()) {
    if (it->second == "f32") p.activations = Encoding::f32;
    else if (it->second == "bf16") p.activations = Encoding::bf16;
    else return error(StatusCode::invalid_argument, "tile: activations must be f32 or bf16, got '", it->second, "'");
  }
  return p;
}

Encoding weight_encoding(const FormatPolicy& p, DType t) {
  switch (p.weights) {
    case WeightPolicy::bf16: return Encoding::bf16;
    case WeightPolicy::bfp8_b: return Encoding::bfp8_b;
    case WeightPolicy::bfp4_b: return Encoding::bfp4_b;
    case WeightPolicy::automatic: break;
  }
  // q4_0 (one scale per 32 values, codes -8..7) fits bfp4_b's sign + 3-bit mantissas almost
  // exactly; the other GGUF blocks carry mins or per-16/32 sub-scales that bfp4_b rounds
  // badly (Q4_K_M logits: 26% of their std off with bfp4_b, 2% with bfp8_b;
  // tests/import/gguf/kquant_file_test.cpp), so they take bfp8_b unless weights=bfp4_b.
  if (t == DType::q4_0) return Encoding::bfp4_b;
  if (dtype_is_block(t)) return Encoding::bfp8_b;
  return Encoding::bf16;
}

std::optional<Format> tile_native_format(const Graph& g, TensorId id, const FormatPolicy& p) {
  const Tensor& t = g.tensor(id);
  if (t.dtype == DType::i32) return Format::row_major(DType::i32, t.shape);
  if ((t.dtype == DType::u8 || t.dtype == DType::i8) && !t.quant.empty()) {
    if (!p.quantized_float) return std::nullopt;
    if (t.role == Role::weight) return Format::row_major(t.dtype, t.shape);
    return Format::tiled(encoding_of(t.dtype), t.shape);
  }
  bool block = dtype_is_block(t.dtype);
  if (!dtype_is_float(t.dtype) && !block) return std::nullopt;
  if (t.role != Role::weight) {
    if (block) return std::nullopt;
    return Format::tiled(p.activations, t.shape);
  }
  uint32_t u = uses_of(g, id);
  if (u & kMatrixB) return Format::tiled(weight_encoding(p, t.dtype), t.shape);
  if (block) return Format::tiled(weight_encoding(p, t.dtype), t.shape);
  if (u & kConvWeight) return Format{Encoding::bf16, Layout::row_major, t.shape};
  if (u == kTable) return Format{p.activations, Layout::row_major, t.shape};
  return Format::tiled(p.activations, t.shape);
}

}  // namespace tessera::tile
