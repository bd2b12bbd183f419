// TFLite operators -> Tessera nodes: data movement built from existing ops at import, no
// new Tessera op: DEPTH_TO_SPACE / SPACE_TO_DEPTH (reshape + transpose + reshape),
// MIRROR_PAD, TILE, BROADCAST_TO, FILL and ZEROS_LIKE (gathers with constant indices), and
// SHAPE (folded to a constant). Shape operands must be constants: Tessera plans static
// shapes.
#include <algorithm>
#include <cstring>
#include <functional>
#include <numeric>

#include "import/tflite/import_context.h"

namespace tessera::tflite {

namespace T = ::tflite;

namespace {

// DEPTH_TO_SPACE / SPACE_TO_DEPTH (NHWC, block b): a reshape to rank 6, a transpose that
// swaps the block rows with the columns, and a reshape back, as TFLite's kernels index:
//   DEPTH_TO_SPACE  [N, H, W, b*b*C] -> [N, H, W, b, b, C] -> [N, H, b, W, b, C] -> [N, H*b, W*b, C]
//   SPACE_TO_DEPTH  [N, H*b, W*b, C] -> [N, H, b, W, b, C] -> [N, H, W, b, b, C] -> [N, H, W, b*b*C]
// The movement copies codes: a quantized output must carry the input's quantization.
Status build_depth_space(OpSite& s, bool to_space) {
  TS_RETURN_IF_ERROR(s.expect_io(1, 1, 1));
  TS_ASSIGN_OR_RETURN(TensorId x, s.input(0));
  TS_ASSIGN_OR_RETURN(TensorId y, s.output(0));
  int64_t b = 0;
  if (to_space) {
    const auto* o = s.op->builtin_options_as_DepthToSpaceOptions();
    if (!o) return s.fail("DepthToSpaceOptions are missing");
    b = o->block_size();
  } else {
    const auto* o = s.op->builtin_options_as_SpaceToDepthOptions();
    if (!o) return s.fail("SpaceToDepthOptions are missing");
    b = o->block_size();
  }
  const Tensor xt = s.cx.graph.tensor(x);
  const Tensor& yt = s.cx.graph.tensor(y);
  if (b < 1 || b > 4096) return s.fail("block_size " + std::to_string(b) + " must be in [1, 4096]");
  if (xt.shape.size() != 4) return s.fail("input '" + xt.name + "' must be rank 4 NHWC, got " + shape_str(xt.shape));
  if (xt.dtype != DType::f32 && xt.dtype != DType::u8 && xt.dtype != DType::i8 && xt.dtype != DType::i32 &&
      xt.dtype != DType::i64)
    return s.fail(std::string("input '") + xt.name + "' of dtype " + dtype_name(xt.dtype) +
                  " is not supported (f32, u8, i8, i32, i64)");
  if (yt.dtype != xt.dtype || yt.quant != xt.quant)
    return s.fail("output '" + yt.name + "' must have the dtype and quantization of input '" + xt.name + "'");
  const int64_t N = xt.shape[0], H = xt.shape[1], W = xt.shape[2], C = xt.shape[3];
  Shape mid, moved, out;
  if (to_space) {
    if (C % (b * b) != 0)
      return s.fail("input '" + xt.name + "' depth " + std::to_string(C) + " is not a multiple of block_size^2 = " +
                    std::to_string(b * b));
    mid = {N, H, W, b, b, C / (b * b)};
    moved = {N, H, b, W, b, C / (b * b)};
    out = {N, H * b, W * b, C / (b * b)};
  } else {
    if (H % b != 0 || W % b != 0)
      return s.fail("input '" + xt.name + "' " + shape_str(xt.shape) + ": height and width must be multiples of block_size " +
                    std::to_string(b));
    mid = {N, H / b, b, W / b, b, C};
    moved = {N, H / b, W / b, b, b, C};
    out = {N, H / b, W / b, b * b * C};
  }
  const std::string base = xt.name + (to_space ? "/depth_to_space_" : "/space_to_depth_") + std::to_string(s.index);
  TensorId r = s.cx.temp_tensor(base + "_blocks", mid, xt.dtype, xt.quant);
  TS_RETURN_IF_ERROR(s.add(OpKind::reshape, {x}, {r}, {{"shape", mid}}, " blocks"));
  TensorId t = s.cx.temp_tensor(base + "_moved", moved, xt.dtype, xt.quant);
  TS_RETURN_IF_ERROR(s.add(OpKind::transpose, {r}, {t}, {{"perm", std::vector<int64_t>{0, 1, 3, 2, 4, 5}}}, " move"));
  return s.add(OpKind::reshape, {t}, {y}, {{"shape", out}});
}

// The gathers' constant index vectors (MIRROR_PAD, TILE, BROADCAST_TO, FILL, ZEROS_LIKE) are
// made here, one int32 per output position along each axis: an axis longer than this (from a
// file's shape or multiples) is refused before anything is allocated (16,777,216 indices: 64 MiB).
constexpr int64_t kMaxGatherIndices = int64_t{1} << 24;
Status check_index_count(OpSite& s, int64_t count, int64_t axis, const std::string& what) {
  if (count <= kMaxGatherIndices) return Status::Ok();
  return s.fail(what + " axis " + std::to_string(axis) + " would have " + std::to_string(count) +
                " positions; more than " + std::to_string(kMaxGatherIndices) + " along one axis is not supported");
}

// y = x gathered along each listed axis in turn, axis d at the constant indices given for
// it (i32 weights made here); no axis: a reshape copies x. The data movement of MIRROR_PAD,
// TILE and BROADCAST_TO, which copy values: y must carry x's dtype and quantization.
Status gather_chain(OpSite& s, TensorId x, TensorId y, const std::vector<std::pair<int64_t, std::vector<int32_t>>>& steps,
                    const std::string& what) {
  const Tensor xt = s.cx.graph.tensor(x);
  const Tensor& yt = s.cx.graph.tensor(y);
  if (yt.dtype != xt.dtype || yt.quant != xt.quant)
    return s.fail("output '" + yt.name + "' must have the dtype and quantization of input '" + xt.name + "'");
  if (dtype_size(xt.dtype) == 0) return s.fail(std::string("input dtype ") + dtype_name(xt.dtype) + " is not supported");
  if (steps.empty()) return s.add(OpKind::reshape, {x}, {y}, {{"shape", yt.shape}});
  TensorId cur = x;
  Shape shape = xt.shape;
  for (size_t k = 0; k < steps.size(); ++k) {
    const auto& [d, index] = steps[k];
    std::vector<uint8_t> bytes(index.size() * 4);
    if (!bytes.empty()) std::memcpy(bytes.data(), index.data(), bytes.size());
    const std::string base = xt.name + "/" + what + "_" + std::to_string(s.index) + "_axis" + std::to_string(d);
    const TensorId idx = s.cx.temp_tensor(base + "_indices", Shape{static_cast<int64_t>(index.size())}, DType::i32, QuantParams{});
    Tensor& it = s.cx.graph.tensor(idx);
    it.role = Role::weight;
    it.data = ConstData::from_vector(std::move(bytes));
    shape[static_cast<size_t>(d)] = static_cast<int64_t>(index.size());
    const bool last = k + 1 == steps.size();
    const TensorId out = last ? y : s.cx.temp_tensor(base, shape, xt.dtype, xt.quant);
    TS_RETURN_IF_ERROR(s.add(OpKind::gather, {cur, idx}, {out}, {{"axis", d}}, last ? "" : " axis " + std::to_string(d)));
    cur = out;
  }
  return Status::Ok();
}

// MIRROR_PAD: one `gather` per padded axis with constant indices (no new op). Index j of
// the padded axis reads input index GetInputDimension(j) of TFLite's mirror_pad.cc, with
// offset 1 for REFLECT (the edge is not repeated) and 0 for SYMMETRIC; a padding must be
// at most size - offset on both sides, as TensorFlow requires.
Status build_mirror_pad(OpSite& s) {
  TS_RETURN_IF_ERROR(s.expect_io(2, 2, 1));
  TS_ASSIGN_OR_RETURN(TensorId x, s.input(0));
  TS_ASSIGN_OR_RETURN(TensorId y, s.output(0));
  const auto* o = s.op->builtin_options_as_MirrorPadOptions();
  if (!o) return s.fail("MirrorPadOptions are missing");
  if (o->mode() != T::MirrorPadMode_REFLECT && o->mode() != T::MirrorPadMode_SYMMETRIC)
    return s.fail("mirror mode " + std::to_string(static_cast<int>(o->mode())) + " is not REFLECT (0) or SYMMETRIC (1)");
  const int64_t offset = o->mode() == T::MirrorPadMode_REFLECT ? 1 : 0;
  TS_ASSIGN_OR_RETURN(std::vector<int64_t> pads, s.const_input(1));
  const Tensor xt = s.cx.graph.tensor(x);
  const int64_t rank = static_cast<int64_t>(xt.shape.size());
  if (static_cast<int64_t>(pads.size()) != rank * 2)
    return s.fail("paddings have " + std::to_string(pads.size()) + " values, input '" + xt.name + "' of rank " +
                  std::to_string(rank) + " needs " + std::to_string(rank * 2));
  std::vector<int64_t> padded_axes;
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t before = pads[2 * d], after = pads[2 * d + 1], n = xt.shape[d];
    if (before < 0 || after < 0 || before > n - offset || after > n - offset)
      return s.fail("paddings (" + std::to_string(before) + ", " + std::to_string(after) + ") of axis " + std::to_string(d) +
                    " of input '" + xt.name + "' " + shape_str(xt.shape) + " exceed " + std::to_string(n - offset) + " (" +
                    (offset ? "REFLECT" : "SYMMETRIC") + ")");
    if (before || after) padded_axes.push_back(d);
  }
  std::vector<std::pair<int64_t, std::vector<int32_t>>> steps;
  for (int64_t d : padded_axes) {
    const int64_t before = pads[2 * d], after = pads[2 * d + 1], n = xt.shape[d], len = n + before + after;
    TS_RETURN_IF_ERROR(check_index_count(s, len, d, "the padded"));
    std::vector<int32_t> index(static_cast<size_t>(len));
    for (int64_t j = 0; j < len; ++j) {
      int64_t k = j;  // GetInputDimension
      if (k < before) {
        const int64_t original = before + offset - 1;
        k = original - std::min(k, original - offset);
      } else if ((k -= before) >= n) {
        k -= n;
        const int64_t original = n - (1 + offset);
        k = original - std::min(k, original);
      }
      index[static_cast<size_t>(j)] = static_cast<int32_t>(k);
    }
    steps.emplace_back(d, std::move(index));
  }
  return gather_chain(s, x, y, steps, "mirror_pad");
}

// TILE: one gather per repeated axis, index j reading j mod size; multiples (constant
// int32 / int64, one per input dim) must be >= 1.
Status build_tile(OpSite& s) {
  TS_RETURN_IF_ERROR(s.expect_io(2, 2, 1));
  TS_ASSIGN_OR_RETURN(TensorId x, s.input(0));
  TS_ASSIGN_OR_RETURN(TensorId y, s.output(0));
  TS_ASSIGN_OR_RETURN(std::vector<int64_t> multiples, s.const_input(1));
  const Tensor xt = s.cx.graph.tensor(x);
  if (multiples.size() != xt.shape.size())
    return s.fail("multiples have " + std::to_string(multiples.size()) + " values, input '" + xt.name + "' has rank " +
                  std::to_string(xt.shape.size()));
  std::vector<std::pair<int64_t, std::vector<int32_t>>> steps;
  for (size_t d = 0; d < multiples.size(); ++d) {
    const int64_t m = multiples[d], n = xt.shape[d];
    if (m < 1 || m > ((int64_t{1} << 31) - 1) / std::max<int64_t>(n, 1))
      return s.fail("multiple " + std::to_string(m) + " of axis " + std::to_string(d) + " of input '" + xt.name +
                    "' must be >= 1 (and the tiled size below 2^31)");
    if (m == 1) continue;
    TS_RETURN_IF_ERROR(check_index_count(s, n * m, static_cast<int64_t>(d), "the tiled"));
    std::vector<int32_t> index(static_cast<size_t>(n * m));
    for (int64_t j = 0; j < n * m; ++j) index[static_cast<size_t>(j)] = static_cast<int32_t>(j % n);
    steps.emplace_back(static_cast<int64_t>(d), std::move(index));
  }
  return gather_chain(s, x, y, steps, "tile");
}

// BROADCAST_TO: a reshape to the target rank (leading 1s), then one gather of index 0
// repeated along each axis the target widens from 1. The target shape is constant.
Status build_broadcast_to(OpSite& s) {
  TS_RETURN_IF_ERROR(s.expect_io(2, 2, 1));
  TS_ASSIGN_OR_RETURN(TensorId x, s.input(0));
  TS_ASSIGN_OR_RETURN(TensorId y, s.output(0));
  // Version 1 is not a builtin version: the interpreter registers BROADCAST_TO from 2.
  if (s.version < 2) return s.fail("version 1 is not a builtin version of BROADCAST_TO (they start at 2)");
  TS_ASSIGN_OR_RETURN(std::vector<int64_t> target, s.const_input(1));
  const Tensor xt = s.cx.graph.tensor(x);
  if (target.size() < xt.shape.size() || target.size() > 8)
    return s.fail("shape " + shape_str(Shape(target.begin(), target.end())) + " has a rank below input '" + xt.name + "' " +
                  shape_str(xt.shape) + "'s or above 8");
  const size_t lead = target.size() - xt.shape.size();
  Shape ranked(lead, 1);
  ranked.insert(ranked.end(), xt.shape.begin(), xt.shape.end());
  std::vector<std::pair<int64_t, std::vector<int32_t>>> steps;
  for (size_t d = 0; d < target.size(); ++d) {
    if (ranked[d] == target[d]) continue;
    if (ranked[d] != 1 || target[d] < 1 || target[d] > (int64_t{1} << 31) - 1)
      return s.fail("input '" + xt.name + "' " + shape_str(xt.shape) + " does not broadcast to " +
                    shape_str(Shape(target.begin(), target.end())) + " (axis " + std::to_string(d) + ")");
    TS_RETURN_IF_ERROR(check_index_count(s, target[d], static_cast<int64_t>(d), "the broadcast"));
    steps.emplace_back(static_cast<int64_t>(d), std::vector<int32_t>(static_cast<size_t>(target[d]), 0));
  }
  TensorId src = x;
  if (lead > 0 && !steps.empty()) {
    src = s.cx.temp_tensor(xt.name + "/broadcast_to_" + std::to_string(s.index) + "_ranked", ranked, xt.dtype, xt.quant);
    TS_RETURN_IF_ERROR(s.add(OpKind::reshape, {x}, {src}, {{"shape", ranked}}, " rank"));
  }
  return gather_chain(s, src, y, steps, "broadcast_to");
}

// A constant tensor made at import (i32 indices, folded values): Role::weight, its bytes
// owned by the graph.
TensorId const_tensor(OpSite& s, const std::string& name, Shape shape, DType dtype, std::vector<uint8_t> bytes) {
  const TensorId id = s.cx.temp_tensor(name, std::move(shape), dtype, QuantParams{});
  Tensor& t = s.cx.graph.tensor(id);
  t.role = Role::weight;
  t.data = ConstData::from_vector(std::move(bytes));
  return id;
}

// y = the one value of `v` repeated over y's shape: a reshape of v to y's rank in 1s, then
// a gather of index 0 along every axis wider than 1. v may be computed at run time.
Status fill_from(OpSite& s, TensorId v, TensorId y, const std::string& what) {
  const Tensor vt = s.cx.graph.tensor(v);
  const Shape out = s.cx.graph.tensor(y).shape;
  if (vt.elements() != 1) return s.fail("value '" + vt.name + "' must hold one element, it is " + shape_str(vt.shape));
  std::vector<std::pair<int64_t, std::vector<int32_t>>> steps;
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d] < 1 || out[d] > (int64_t{1} << 31) - 1)
      return s.fail("output '" + s.cx.graph.tensor(y).name + "' " + shape_str(out) + " has an empty or oversized dim");
    TS_RETURN_IF_ERROR(check_index_count(s, out[d], static_cast<int64_t>(d), "the output's"));
    if (out[d] > 1) steps.emplace_back(static_cast<int64_t>(d), std::vector<int32_t>(static_cast<size_t>(out[d]), 0));
  }
  if (steps.empty()) return s.add(OpKind::reshape, {v}, {y}, {{"shape", out}});
  const Shape ones(out.size(), 1);
  const TensorId r = s.cx.temp_tensor(vt.name + "/" + what + "_" + std::to_string(s.index) + "_ranked", ones, vt.dtype, vt.quant);
  TS_RETURN_IF_ERROR(s.add(OpKind::reshape, {v}, {r}, {{"shape", ones}}, " rank"));
  return gather_chain(s, r, y, steps, what);
}

// FILL: dims (constant) must equal the output's declared shape; the value (input 1) may be
// a run-time input. f32, i32, i64 (TFLite's forms the cpu runs).
Status build_fill(OpSite& s) {
  TS_RETURN_IF_ERROR(s.expect_io(2, 2, 1));
  TS_ASSIGN_OR_RETURN(std::vector<int64_t> dims, s.const_input(0));
  TS_ASSIGN_OR_RETURN(TensorId v, s.input(1));
  TS_ASSIGN_OR_RETURN(TensorId y, s.output(0));
  const Tensor& vt = s.cx.graph.tensor(v);
  const Tensor& yt = s.cx.graph.tensor(y);
  if (vt.dtype != DType::f32 && vt.dtype != DType::i32 && vt.dtype != DType::i64)
    return s.fail(std::string("value '") + vt.name + "' of dtype " + dtype_name(vt.dtype) + " is not supported (f32, i32, i64)");
  // An intermediate output takes the dims (its declared shape may be a placeholder, or
  // that of another input size); a model output must agree.
  if (Shape(dims.begin(), dims.end()) != yt.shape && yt.role == Role::activation && !yt.data && !s.cx.is_model_output(y) &&
      std::all_of(dims.begin(), dims.end(), [](int64_t d) { return d >= 1 && d <= (int64_t{1} << 31) - 1; }) &&
      yt.quant.empty() && std::accumulate(dims.begin(), dims.end(), 1.0, std::multiplies<double>()) <= double(int64_t{1} << 40))
    s.cx.graph.tensor(y).shape = Shape(dims.begin(), dims.end());
  if (Shape(dims.begin(), dims.end()) != s.cx.graph.tensor(y).shape)
    return s.fail("dims " + shape_str(Shape(dims.begin(), dims.end())) + " differ from output '" + yt.name + "' " + shape_str(yt.shape));
  return fill_from(s, v, y, "fill");
}

// ZEROS_LIKE: zeros of the input's shape and dtype (f32, i32, i64), from a constant zero.
Status build_zeros_like(OpSite& s) {
  TS_RETURN_IF_ERROR(s.expect_io(1, 1, 1));
  TS_ASSIGN_OR_RETURN(TensorId x, s.input(0));
  TS_ASSIGN_OR_RETURN(TensorId y, s.output(0));
  const Tensor xt = s.cx.graph.tensor(x);
  if (xt.dtype != DType::f32 && xt.dtype != DType::i32 && xt.dtype != DType::i64)
    return s.fail(std::string("input '") + xt.name + "' of dtype " + dtype_name(xt.dtype) + " is not supported (f32, i32, i64)");
  if (s.cx.graph.tensor(y).shape != xt.shape)
    return s.fail("output '" + s.cx.graph.tensor(y).name + "' must have the shape of input '" + xt.name + "' " + shape_str(xt.shape));
  const TensorId zero = const_tensor(s, xt.name + "/zeros_like_" + std::to_string(s.index), Shape{1}, xt.dtype,
                                     std::vector<uint8_t>(static_cast<size_t>(dtype_size(xt.dtype)), 0));
  return fill_from(s, zero, y, "zeros_like");
}

// SHAPE: the input's static shape, folded at import: an intermediate output becomes a
// constant (no node); a model output is copied from one.
Status build_shape(OpSite& s) {
  TS_RETURN_IF_ERROR(s.expect_io(1, 1, 1));
  TS_ASSIGN_OR_RETURN(TensorId x, s.input(0));
  TS_ASSIGN_OR_RETURN(TensorId y, s.output(0));
  const Shape xs = s.cx.graph.tensor(x).shape;
  Tensor& yt = s.cx.graph.tensor(y);
  if (yt.dtype != DType::i32 && yt.dtype != DType::i64)
    return s.fail(std::string("output '") + yt.name + "' must be i32 or i64, it is " + dtype_name(yt.dtype));
  // The interpreter sizes the output by ShapeOptions.out_type (FLOAT32, its default, fails).
  const auto* o = s.op->builtin_options_as_ShapeOptions();
  const T::TensorType want = yt.dtype == DType::i32 ? T::TensorType_INT32 : T::TensorType_INT64;
  if (!o || o->out_type() != want)
    return s.fail("ShapeOptions.out_type " + std::string(o ? T::EnumNameTensorType(o->out_type()) : "(missing)") +
                  " does not match output '" + yt.name + "' of dtype " + dtype_name(yt.dtype));
  if (yt.shape != Shape{static_cast<int64_t>(xs.size())})
    return s.fail("output '" + yt.name + "' " + shape_str(yt.shape) + " must be [" + std::to_string(xs.size()) + "]");
  const size_t width = yt.dtype == DType::i32 ? 4 : 8;
  std::vector<uint8_t> bytes(xs.size() * width);
  for (size_t d = 0; d < xs.size(); ++d) {
    const int64_t v64 = xs[d];
    const int32_t v32 = static_cast<int32_t>(xs[d]);
    std::memcpy(bytes.data() + d * width, width == 4 ? static_cast<const void*>(&v32) : static_cast<const void*>(&v64), width);
  }
  if (yt.role == Role::activation && !s.cx.is_model_output(y)) {
    yt.role = Role::weight;
    yt.data = ConstData::from_vector(std::move(bytes));
    return Status::Ok();
  }
  const Shape out = yt.shape;  // const_tensor adds a tensor: yt may move
  const TensorId c = const_tensor(s, yt.name + "/shape_" + std::to_string(s.index), out, yt.dtype, std::move(bytes));
  return s.add(OpKind::reshape, {c}, {y}, {{"shape", out}});
}

}  // namespace

Status build_movement_operator(OpSite& s) {
  switch (s.code) {
    case T::BuiltinOperator_DEPTH_TO_SPACE: return build_depth_space(s, true);
    case T::BuiltinOperator_SPACE_TO_DEPTH: return build_depth_space(s, false);
    case T::BuiltinOperator_MIRROR_PAD: return build_mirror_pad(s);
    case T::BuiltinOperator_TILE: return build_tile(s);
    case T::BuiltinOperator_BROADCAST_TO: return build_broadcast_to(s);
    case T::BuiltinOperator_FILL: return build_fill(s);
    case T::BuiltinOperator_ZEROS_LIKE: return build_zeros_like(s);
    case T::BuiltinOperator_SHAPE: return build_shape(s);
    default: return error(StatusCode::unsupported, "tflite ", s.label, ": operator is not supported");
  }
}

}  // namespace tessera::tflite
