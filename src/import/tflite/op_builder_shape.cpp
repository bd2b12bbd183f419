// TFLite operators -> Tessera nodes: shape and data-movement operators (reshape, squeeze,
// transpose, concatenation, pack/unpack, split/split_v, pad, slices, gather, resizes, arg
// max, cast). DEPTH_TO_SPACE, MIRROR_PAD, TILE, FILL and the like: op_builder_movement.cpp.
// Shape operands must be constants (or fold to constants at import, shape_fold.cpp):
// Tessera plans static shapes.
#include <algorithm>
#include <cstring>

#include "import/tflite/import_context.h"

namespace tessera::tflite {

namespace T = ::tflite;

namespace {

int64_t rank_of(const Graph& g, TensorId id) { return static_cast<int64_t>(g.tensor(id).shape.size()); }

Result<int64_t> normalize_axis(OpSite& s, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1))
    return s.fail("axis " + std::to_string(axis) + " is outside rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

// The target shape of RESHAPE as the interpreter reads it (reshape.cc GetOutputShape): the
// shape operand when it is a 1-D i32 tensor, else ReshapeOptions.new_shape (legacy [0] is
// a scalar). The operand must be constant (or folded at import from constant shape
// arithmetic); a computed one falls back to the file's declared output shape.
Result<Shape> reshape_target(OpSite& s, TensorId y) {
  const Graph& g = s.cx.graph;
  if (s.has_input(1)) {
    TS_ASSIGN_OR_RETURN(TensorId st, s.input(1));
    const Tensor& t = g.tensor(st);
    if (t.shape.size() == 1 && t.dtype == DType::i32) {
      if (!t.data) return g.tensor(y).shape;
      TS_ASSIGN_OR_RETURN(std::vector<int64_t> v, s.const_input(1));
      return Shape(v.begin(), v.end());
    }
  }
  if (const auto* o = s.op->builtin_options_as_ReshapeOptions(); o && o->new_shape()) {
    Shape sh(o->new_shape()->begin(), o->new_shape()->end());
    if (sh == Shape{0}) sh.clear();
    return sh;
  }
  return g.tensor(y).shape;
}

// SQUEEZE: the input's shape without squeeze_dims (every dim of 1 when none is given).
Result<Shape> squeeze_target(OpSite& s, const Shape& xs) {
  const auto* o = s.op->builtin_options_as_SqueezeOptions();
  const int64_t rank = static_cast<int64_t>(xs.size());
  std::vector<bool> drop(xs.size(), false);
  if (o && o->squeeze_dims() && o->squeeze_dims()->size() > 0) {
    for (int32_t d : *o->squeeze_dims()) {
      TS_ASSIGN_OR_RETURN(int64_t a, normalize_axis(s, d, rank));
      if (xs[static_cast<size_t>(a)] != 1)
        return s.fail("squeeze_dims names dim " + std::to_string(a) + " of size " + std::to_string(xs[a]) + ", not 1");
      drop[static_cast<size_t>(a)] = true;
    }
  } else {
    for (size_t d = 0; d < xs.size(); ++d) drop[d] = xs[d] == 1;
  }
  Shape out;
  for (size_t d = 0; d < xs.size(); ++d)
    if (!drop[d]) out.push_back(xs[d]);
  return out;
}

// EXPAND_DIMS: a dim of 1 inserted at the constant axis (input 1), -1 = after the last.
Result<Shape> expand_dims_target(OpSite& s, const Shape& xs) {
  TS_ASSIGN_OR_RETURN(std::vector<int64_t> axis, s.const_input(1));
  if (axis.size() != 1) return s.fail("axis must be one value, got " + std::to_string(axis.size()));
  const int64_t rank = static_cast<int64_t>(xs.size());
  int64_t a = axis[0] < 0 ? axis[0] + rank + 1 : axis[0];
  if (a < 0 || a > rank) return s.fail("axis " + std::to_string(axis[0]) + " is outside [" + std::to_string(-rank - 1) + ", " + std::to_string(rank) + "]");
  Shape out = xs;
  out.insert(out.begin() + a, 1);
  return out;
}

// RESHAPE / SQUEEZE / EXPAND_DIMS: a reshape to the shape the operator computes from its
// input (so that it follows an input resized at load).
Status build_reshape(OpSite& s) {
  if (s.num_inputs() < 1 || s.num_outputs() != 1) return s.fail("expects 1 data input and 1 output");
  TS_ASSIGN_OR_RETURN(TensorId x, s.input(0));
  TS_ASSIGN_OR_RETURN(TensorId y, s.output(0));
  const Graph& g = s.cx.graph;
  if (g.tensor(x).dtype != g.tensor(y).dtype) return s.fail("input and output dtypes differ");
  if (g.tensor(x).quant != g.tensor(y).quant) return s.fail("input and output quantization differ");
  const Shape xs = g.tensor(x).shape;
  Shape target;
  if (s.code == T::BuiltinOperator_SQUEEZE) {
    TS_ASSIGN_OR_RETURN(target, squeeze_target(s, xs));
  } else if (s.code == T::BuiltinOperator_EXPAND_DIMS) {
    TS_ASSIGN_OR_RETURN(target, expand_dims_target(s, xs));
  } else {
    TS_ASSIGN_OR_RETURN(target, reshape_target(s, y));
    // One -1 takes the rest of the input's elements: resolved here, so that the node
    // carries the concrete shape (as it did when it came from the declared output).
    const auto unknown = std::count(target.begin(), target.end(), int64_t{-1});
    int64_t known = 1;
    for (int64_t d : target)
      if (d != -1) known = d > 0 && known <= (int64_t{1} << 40) / d ? known * d : 0;
    const int64_t elems = g.tensor(x).elements();
    if (unknown == 1 && known > 0 && elems % known == 0) *std::find(target.begin(), target.end(), int64_t{-1}) = elems / known;
  }
  return s.add(OpKind::reshape, {x}, {y}, {{"shape", target}});
}

Status build_transpose(OpSite& s) {
  TS_RETURN_IF_ERROR(s.expect_io(2, 2, 1));
  TS_ASSIGN_OR_RETURN(TensorId x, s.input(0));
  TS_ASSIGN_OR_RETURN(TensorId y, s.output(0));
  TS_ASSIGN_OR_RETURN(std::vector<int64_t> perm, s.const_input(1));
  return s.add(OpKind::transpose, {x}, {y}, {{"perm", perm}});
}

Status build_concat(OpSite& s) {
  if (s.num_inputs() < 1 || s.num_outputs() != 1) return s.fail("expects at least 1 input and 1 output");
  const auto* o = s.op->builtin_options_as_ConcatenationOptions();
  if (!o) return s.fail("ConcatenationOptions are missing");
  bool ok;
  std::string act = activation_name(o->fused_activation_function(), &ok);
  if (!ok) return s.fail("fused activation " + act + " is not supported");
  std::vector<TensorId> ins;
  for (int k = 0; k < s.num_inputs(); ++k) {
    TS_ASSIGN_OR_RETURN(TensorId x, s.input(k));
    ins.push_back(x);
  }
  TS_ASSIGN_OR_RETURN(TensorId y, s.output(0));
  TS_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(s, o->axis(), rank_of(s.cx.graph, y)));
  return s.add(OpKind::concat, ins, {y}, {{"axis", axis}, {"activation", act}});
}

// PACK: each input gains a unit dim at `axis`, then they are concatenated along it.
Status build_pack(OpSite& s) {
  const auto* o = s.op->builtin_options_as_PackOptions();
  if (!o) return s.fail("PackOptions are missing");
  if (s.num_inputs() < 1 || s.num_inputs() != o->values_count() || s.num_outputs() != 1)
    return s.fail("values_count " + std::to_string(o->values_count()) + " does not match " +
                  std::to_string(s.num_inputs()) + " inputs");
  TS_ASSIGN_OR_RETURN(TensorId y, s.output(0));
  TS_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(s, o->axis(), rank_of(s.cx.graph, y)));
  std::vector<TensorId> parts;
  for (int k = 0; k < s.num_inputs(); ++k) {
    TS_ASSIGN_OR_RETURN(TensorId x, s.input(k));
    const Tensor xt = s.cx.graph.tensor(x);
    if (axis > static_cast<int64_t>(xt.shape.size())) return s.fail("axis is outside the inputs' rank");
    Shape sh = xt.shape;
    sh.insert(sh.begin() + axis, 1);
    TensorId r = s.cx.temp_tensor(xt.name + "/pack_" + std::to_string(s.index), sh, xt.dtype, xt.quant);
    TS_RETURN_IF_ERROR(s.add(OpKind::reshape, {x}, {r}, {{"shape", sh}}, " input " + std::to_string(k)));
    parts.push_back(r);
  }
  return s.add(OpKind::concat, parts, {y}, {{"axis", axis}, {"activation", std::string("none")}});
}

// UNPACK: output k is the slice k along `axis`, with that dim removed.
Status build_unpack(OpSite& s) {
  const auto* o = s.op->builtin_options_as_UnpackOptions();
  if (!o) return s.fail("UnpackOptions are missing");
  if (s.num_inputs() != 1) return s.fail("expects 1 input");
  TS_ASSIGN_OR_RETURN(TensorId x, s.input(0));
  const Tensor xt = s.cx.graph.tensor(x);
  TS_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(s, o->axis(), static_cast<int64_t>(xt.shape.size())));
  if (xt.shape[axis] != o->num() || s.num_outputs() != o->num())
    return s.fail("num " + std::to_string(o->num()) + " does not match dim " + std::to_string(xt.shape[axis]) +
                  " and " + std::to_string(s.num_outputs()) + " outputs");
  for (int k = 0; k < o->num(); ++k) {
    TS_ASSIGN_OR_RETURN(TensorId y, s.output(k));
    std::vector<int64_t> begin(xt.shape.size(), 0), size(xt.shape.begin(), xt.shape.end());
    begin[axis] = k;
    size[axis] = 1;
    Shape sh = size;
    TensorId part = s.cx.temp_tensor(xt.name + "/unpack_" + std::to_string(k), sh, xt.dtype, xt.quant);
    TS_RETURN_IF_ERROR(s.add(OpKind::slice, {x}, {part}, {{"begin", begin}, {"size", size}}, " part " + std::to_string(k)));
    Shape squeezed = sh;
    squeezed.erase(squeezed.begin() + axis);
    TS_RETURN_IF_ERROR(s.add(OpKind::reshape, {part}, {y}, {{"shape", squeezed}},
                             " output " + std::to_string(k)));
  }
  return Status::Ok();
}

Status build_pad(OpSite& s, bool v2) {
  TS_RETURN_IF_ERROR(s.expect_io(2, v2 ? 3 : 2, 1));
  TS_ASSIGN_OR_RETURN(TensorId x, s.input(0));
  TS_ASSIGN_OR_RETURN(TensorId y, s.output(0));
  TS_ASSIGN_OR_RETURN(std::vector<int64_t> pads, s.const_input(1));
  AttrMap a{{"paddings", pads}};
  if (v2 && s.has_input(2)) {
    // The constant pad value, in the input's stored units (a quantized value for u8/i8).
    TS_ASSIGN_OR_RETURN(TensorId c, s.input(2));
    const Tensor& ct = s.cx.graph.tensor(c);
    if (!ct.data || ct.elements() != 1 || ct.dtype != s.cx.graph.tensor(x).dtype)
      return s.fail("constant_values must be one constant of the input's dtype");
    double v = 0;
    switch (ct.dtype) {
      case DType::f32: { float f; std::memcpy(&f, ct.data->data, 4); v = f; break; }
      case DType::u8: v = ct.data->data[0]; break;
      case DType::i8: v = static_cast<int8_t>(ct.data->data[0]); break;
      case DType::i32: { int32_t i; std::memcpy(&i, ct.data->data, 4); v = i; break; }
      default: return s.fail(std::string("constant_values dtype ") + dtype_name(ct.dtype) + " is not supported");
    }
    a["value"] = v;
  }
  return s.add(OpKind::pad, {x}, {y}, a);
}

Status build_slice(OpSite& s) {
  TS_RETURN_IF_ERROR(s.expect_io(3, 3, 1));
  TS_ASSIGN_OR_RETURN(TensorId x, s.input(0));
  TS_ASSIGN_OR_RETURN(TensorId y, s.output(0));
  TS_ASSIGN_OR_RETURN(std::vector<int64_t> begin, s.const_input(1));
  TS_ASSIGN_OR_RETURN(std::vector<int64_t> size, s.const_input(2));
  return s.add(OpKind::slice, {x}, {y}, {{"begin", begin}, {"size", size}});
}

// STRIDED_SLICE: begin/end/stride masks resolved against the input shape, as TFLite's
// strided_slice reference kernel does (StartForAxis / StopForAxis).
Status build_strided_slice(OpSite& s) {
  TS_RETURN_IF_ERROR(s.expect_io(4, 4, 1));
  TS_ASSIGN_OR_RETURN(TensorId x, s.input(0));
  TS_ASSIGN_OR_RETURN(TensorId y, s.output(0));
  TS_ASSIGN_OR_RETURN(std::vector<int64_t> begin, s.const_input(1));
  TS_ASSIGN_OR_RETURN(std::vector<int64_t> end, s.const_input(2));
  TS_ASSIGN_OR_RETURN(std::vector<int64_t> strides, s.const_input(3));
  const auto* o = s.op->builtin_options_as_StridedSliceOptions();
  if (!o) return s.fail("StridedSliceOptions are missing");
  if (o->ellipsis_mask() || o->new_axis_mask()) return s.fail("ellipsis_mask and new_axis_mask are not supported");
  if (o->offset()) return s.fail("offset=true is not supported");
  const Shape xs = s.cx.graph.tensor(x).shape;
  size_t rank = xs.size();
  if (begin.size() != rank || end.size() != rank || strides.size() != rank)
    return s.fail("begin/end/strides need one entry per input dim (" + std::to_string(rank) + ")");
  std::vector<int64_t> shrink;
  for (size_t i = 0; i < rank; ++i) {
    int64_t dim = xs[i], st = strides[i];
    if (st == 0) return s.fail("stride 0 in dim " + std::to_string(i));
    auto clamp = [&](int64_t v) { return st > 0 ? std::clamp<int64_t>(v, 0, dim) : std::clamp<int64_t>(v, -1, dim - 1); };
    bool shrink_i = (o->shrink_axis_mask() >> i) & 1;
    int64_t b = (o->begin_mask() >> i) & 1 && !shrink_i ? (st > 0 ? 0 : dim - 1) : clamp(begin[i] < 0 ? begin[i] + dim : begin[i]);
    int64_t e;
    if (shrink_i) {
      if (begin[i] < -dim || begin[i] >= dim) return s.fail("shrink index out of range in dim " + std::to_string(i));
      b = begin[i] < 0 ? begin[i] + dim : begin[i];
      e = b + 1;
      strides[i] = 1;
      shrink.push_back(static_cast<int64_t>(i));
    } else if ((o->end_mask() >> i) & 1) {
      e = st > 0 ? dim : -1;
    } else {
      e = clamp(end[i] < 0 ? end[i] + dim : end[i]);
    }
    begin[i] = b;
    end[i] = e;
  }
  return s.add(OpKind::strided_slice, {x}, {y},
               {{"begin", begin}, {"end", end}, {"strides", strides}, {"shrink_axes", shrink}});
}

// SPLIT / SPLIT_V: output k is the slice [offset_k, offset_k + size_k) of the input along
// `axis`, as TFLite's split kernels copy it (bytes: an output keeps the input's
// quantization). `sizes` holds one entry per output; SPLIT_V's single -1 takes the rest.
Status build_split_parts(OpSite& s, TensorId x, int64_t axis_value, std::vector<int64_t> sizes,
                         const std::string& sizes_name) {
  const Tensor xt = s.cx.graph.tensor(x);
  const int64_t rank = static_cast<int64_t>(xt.shape.size());
  if (rank == 0) return s.fail("input '" + xt.name + "' is a scalar: nothing to split");
  TS_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(s, axis_value, rank));
  const int64_t dim = xt.shape[axis];
  if (static_cast<int64_t>(sizes.size()) != s.num_outputs())
    return s.fail(sizes_name + " has " + std::to_string(sizes.size()) + " entries for " +
                  std::to_string(s.num_outputs()) + " outputs");
  int64_t known = 0;  // the sum of the explicit sizes, each in [0, dim], stopped once above dim
  int infer = -1;
  for (size_t k = 0; k < sizes.size(); ++k) {
    if (sizes[k] == -1) {
      if (infer >= 0) return s.fail(sizes_name + " has more than one -1");
      infer = static_cast<int>(k);
      continue;
    }
    if (sizes[k] < 0 || sizes[k] > dim)
      return s.fail(sizes_name + "[" + std::to_string(k) + "] = " + std::to_string(sizes[k]) + " is outside [0, " +
                    std::to_string(dim) + "] (dim " + std::to_string(axis) + " of input '" + xt.name + "' " +
                    shape_str(xt.shape) + ")");
    known += sizes[k];
    if (known > dim) break;
  }
  if (known > dim || (infer < 0 && known != dim))
    return s.fail(sizes_name + " sums to " + std::to_string(known) + (known > dim ? "+" : "") + ", dim " +
                  std::to_string(axis) + " of input '" + xt.name + "' " + shape_str(xt.shape) + " is " +
                  std::to_string(dim));
  if (infer >= 0) sizes[infer] = dim - known;
  int64_t offset = 0;
  for (int k = 0; k < s.num_outputs(); ++k) {
    TS_ASSIGN_OR_RETURN(TensorId y, s.output(k));
    const Tensor& yt = s.cx.graph.tensor(y);
    if (yt.dtype != xt.dtype || yt.quant != xt.quant)
      return s.fail("output '" + yt.name + "' differs from input '" + xt.name +
                    "' in dtype or quantization (the split copies the input's values)");
    if (sizes[k] == 0) return s.fail("output '" + yt.name + "' would be empty (size 0 along the axis)");
    std::vector<int64_t> begin(static_cast<size_t>(rank), 0), size(xt.shape.begin(), xt.shape.end());
    begin[axis] = offset;
    size[axis] = sizes[k];
    offset += sizes[k];
    TS_RETURN_IF_ERROR(s.add(OpKind::slice, {x}, {y}, {{"begin", begin}, {"size", size}}, " output " + std::to_string(k)));
  }
  return Status::Ok();
}

// SPLIT: inputs (axis, input); num_splits equal parts.
Status build_split(OpSite& s) {
  const auto* o = s.op->builtin_options_as_SplitOptions();
  if (!o) return s.fail("SplitOptions are missing");
  if (s.num_inputs() != 2) return s.fail("has " + std::to_string(s.num_inputs()) + " inputs, expected 2 (axis, input)");
  if (o->num_splits() < 1 || o->num_splits() != s.num_outputs())
    return s.fail("num_splits " + std::to_string(o->num_splits()) + " does not match its " +
                  std::to_string(s.num_outputs()) + " outputs");
  TS_ASSIGN_OR_RETURN(std::vector<int64_t> axis, s.const_input(0));
  if (axis.size() != 1) return s.fail("axis must be one value, got " + std::to_string(axis.size()));
  TS_ASSIGN_OR_RETURN(TensorId x, s.input(1));
  const Tensor& xt = s.cx.graph.tensor(x);
  TS_ASSIGN_OR_RETURN(int64_t ax, normalize_axis(s, axis[0], static_cast<int64_t>(xt.shape.size())));
  const int64_t n = o->num_splits();
  if (xt.shape[ax] % n != 0)
    return s.fail("num_splits " + std::to_string(n) + " does not divide dim " + std::to_string(ax) + " (" +
                  std::to_string(xt.shape[ax]) + ") of input '" + xt.name + "' " + shape_str(xt.shape));
  return build_split_parts(s, x, ax, std::vector<int64_t>(static_cast<size_t>(n), xt.shape[ax] / n), "num_splits");
}

// SPLIT_V: inputs (input, size_splits, axis).
Status build_split_v(OpSite& s) {
  if (s.num_inputs() != 3)
    return s.fail("has " + std::to_string(s.num_inputs()) + " inputs, expected 3 (input, size_splits, axis)");
  if (s.num_outputs() < 1) return s.fail("has no outputs");
  if (const auto* o = s.op->builtin_options_as_SplitVOptions())
    if (o->num_splits() != s.num_outputs())
      return s.fail("num_splits " + std::to_string(o->num_splits()) + " does not match its " +
                    std::to_string(s.num_outputs()) + " outputs");
  TS_ASSIGN_OR_RETURN(TensorId x, s.input(0));
  TS_ASSIGN_OR_RETURN(std::vector<int64_t> sizes, s.const_input(1));
  TS_ASSIGN_OR_RETURN(std::vector<int64_t> axis, s.const_input(2));
  if (axis.size() != 1) return s.fail("axis must be one value, got " + std::to_string(axis.size()));
  const std::string name = "size_splits '" + s.cx.graph.tensor(s.cx.ids[s.op->inputs()->Get(1)]).name + "'";
  return build_split_parts(s, x, axis[0], std::move(sizes), name);
}

Status build_gather(OpSite& s) {
  TS_RETURN_IF_ERROR(s.expect_io(2, 2, 1));
  TS_ASSIGN_OR_RETURN(TensorId x, s.input(0));
  TS_ASSIGN_OR_RETURN(TensorId idx, s.input(1));
  TS_ASSIGN_OR_RETURN(TensorId y, s.output(0));
  const auto* o = s.op->builtin_options_as_GatherOptions();
  if (o && o->batch_dims() != 0) return s.fail("batch_dims != 0 is not supported");
  TS_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(s, o ? o->axis() : 0, rank_of(s.cx.graph, x)));
  return s.add(OpKind::gather, {x, idx}, {y}, {{"axis", axis}});
}

Status build_resize(OpSite& s, bool bilinear) {
  TS_RETURN_IF_ERROR(s.expect_io(2, 2, 1));
  TS_ASSIGN_OR_RETURN(TensorId x, s.input(0));
  TS_ASSIGN_OR_RETURN(TensorId y, s.output(0));
  TS_ASSIGN_OR_RETURN(std::vector<int64_t> size, s.const_input(1));
  if (size.size() != 2 || size[0] < 1 || size[1] < 1) return s.fail("size must be two positive values");
  bool align = false, half = false;
  if (bilinear) {
    if (const auto* o = s.op->builtin_options_as_ResizeBilinearOptions()) {
      align = o->align_corners();
      half = o->half_pixel_centers();
    }
  } else if (const auto* o = s.op->builtin_options_as_ResizeNearestNeighborOptions()) {
    align = o->align_corners();
    half = o->half_pixel_centers();
  }
  if (align && half) return s.fail("align_corners and half_pixel_centers are exclusive");
  const Graph& g = s.cx.graph;
  if (g.tensor(x).quant != g.tensor(y).quant) return s.fail("input and output quantization must match");
  return s.add(bilinear ? OpKind::resize_bilinear : OpKind::resize_nearest, {x}, {y},
               {{"out_h", size[0]}, {"out_w", size[1]}, {"align_corners", int64_t{align}},
                {"half_pixel_centers", int64_t{half}}});
}

Status build_arg_max(OpSite& s) {
  TS_RETURN_IF_ERROR(s.expect_io(2, 2, 1));
  TS_ASSIGN_OR_RETURN(TensorId x, s.input(0));
  TS_ASSIGN_OR_RETURN(TensorId y, s.output(0));
  TS_ASSIGN_OR_RETURN(std::vector<int64_t> axis, s.const_input(1));
  if (axis.size() != 1) return s.fail("axis must be one value");
  DType t = s.cx.graph.tensor(y).dtype;
  if (t != DType::i32 && t != DType::i64) return s.fail("output must be i32 or i64");
  TS_ASSIGN_OR_RETURN(int64_t ax, normalize_axis(s, axis[0], rank_of(s.cx.graph, x)));
  return s.add(OpKind::arg_max, {x}, {y}, {{"axis", ax}});
}

Status build_gather_nd(OpSite& s) {
  TS_RETURN_IF_ERROR(s.expect_io(2, 2, 1));
  TS_ASSIGN_OR_RETURN(TensorId x, s.input(0));
  TS_ASSIGN_OR_RETURN(TensorId idx, s.input(1));
  TS_ASSIGN_OR_RETURN(TensorId y, s.output(0));
  if (s.cx.graph.tensor(x).quant != s.cx.graph.tensor(y).quant) return s.fail("input and output quantization differ");
  return s.add(OpKind::gather_nd, {x, idx}, {y});
}

Status build_cast(OpSite& s) {
  TS_RETURN_IF_ERROR(s.expect_io(1, 1, 1));
  TS_ASSIGN_OR_RETURN(TensorId x, s.input(0));
  TS_ASSIGN_OR_RETURN(TensorId y, s.output(0));
  return s.add(OpKind::cast, {x}, {y});
}

}  // namespace

// Implemented in op_builder_movement.cpp.
Status build_movement_operator(OpSite& s);

Status build_shape_operator(OpSite& s) {
  switch (s.code) {
    case T::BuiltinOperator_RESHAPE:
    case T::BuiltinOperator_SQUEEZE:
    case T::BuiltinOperator_EXPAND_DIMS: return build_reshape(s);
    case T::BuiltinOperator_GATHER_ND: return build_gather_nd(s);
    case T::BuiltinOperator_TRANSPOSE: return build_transpose(s);
    case T::BuiltinOperator_CONCATENATION: return build_concat(s);
    case T::BuiltinOperator_PACK: return build_pack(s);
    case T::BuiltinOperator_UNPACK: return build_unpack(s);
    case T::BuiltinOperator_PAD: return build_pad(s, false);
    case T::BuiltinOperator_PADV2: return build_pad(s, true);
    case T::BuiltinOperator_SLICE: return build_slice(s);
    case T::BuiltinOperator_SPLIT: return build_split(s);
    case T::BuiltinOperator_SPLIT_V: return build_split_v(s);
    case T::BuiltinOperator_STRIDED_SLICE: return build_strided_slice(s);
    case T::BuiltinOperator_GATHER: return build_gather(s);
    case T::BuiltinOperator_RESIZE_BILINEAR: return build_resize(s, true);
    case T::BuiltinOperator_RESIZE_NEAREST_NEIGHBOR: return build_resize(s, false);
    case T::BuiltinOperator_ARG_MAX: return build_arg_max(s);
    case T::BuiltinOperator_CAST: return build_cast(s);
    default: return build_movement_operator(s);
  }
}

}  // namespace tessera::tflite
