// TFLite model reader: verifies the flatbuffer, then turns tensors, buffers and
// quantization parameters into graph tensors, checking each one before it is used.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/checked.h"
#include "core/file_io.h"
#include "import/tflite/embedded_files.h"
#include "import/tflite/import_context.h"
#include "import/tflite/tflite_importer.h"

namespace tessera::tflite {

namespace {

// TFLite schema version 3 is the only one in use since 2018 (schema.fbs: "version 3").
constexpr uint32_t kSchemaVersion = 3;
// Largest element count accepted; far above any real model, low enough that byte sizes
// cannot overflow int64 (dimensions themselves are int32 in the schema).
constexpr int64_t kMaxElements = int64_t{1} << 40;
// flatbuffers cannot address more than 2 GiB (FLATBUFFERS_MAX_BUFFER_SIZE); larger
// models keep buffers outside the flatbuffer (Buffer.offset / size).
constexpr size_t kMaxFlatbufferBytes = (size_t{1} << 31) - 1;
// Largest model file read into memory: a flatbuffer with its buffers outside it may pass
// 2 GiB, but no vision model this runtime serves comes near 4 GiB.
constexpr int64_t kMaxModelFileBytes = int64_t{4} << 30;

Result<DType> map_dtype(::tflite::TensorType t) {
  switch (t) {
    case ::tflite::TensorType_FLOAT32: return DType::f32;
    case ::tflite::TensorType_FLOAT16: return DType::f16;
    case ::tflite::TensorType_INT32: return DType::i32;
    case ::tflite::TensorType_UINT8: return DType::u8;
    case ::tflite::TensorType_INT64: return DType::i64;
    case ::tflite::TensorType_BOOL: return DType::boolean;
    case ::tflite::TensorType_INT16: return DType::i16;
    case ::tflite::TensorType_INT8: return DType::i8;
    default:
      return error(StatusCode::unsupported, "tensor type ", ::tflite::EnumNameTensorType(t), " (", int(t),
                   ") is not supported");
  }
}

// Zero-point range of a quantized dtype.
bool zero_point_fits(DType t, int64_t zp) {
  switch (t) {
    case DType::u8: return zp >= 0 && zp <= 255;
    case DType::i8: return zp >= -128 && zp <= 127;
    case DType::i16: return zp >= -32768 && zp <= 32767;
    default: return zp == 0;  // i32 biases, i64: TFLite requires zero
  }
}

Result<QuantParams> read_quant(const ::tflite::QuantizationParameters* q, const Tensor& t, bool constant) {
  QuantParams out;
  if (!q || !q->scale() || q->scale()->size() == 0) return out;  // not quantized
  if (q->details_type() != ::tflite::QuantizationDetails_NONE)
    return error(StatusCode::unsupported, "custom quantization details are not supported");
  size_t n = q->scale()->size();
  if (!q->zero_point() || q->zero_point()->size() != n)
    return error(StatusCode::invalid_argument, "has ", n, " quantization scales but ",
                 q->zero_point() ? q->zero_point()->size() : 0, " zero points");
  if (n > 1) {
    int axis = q->quantized_dimension();
    // Converters copy the filter's quantized_dimension onto per-channel biases (e.g. 3
    // for a depthwise bias of rank 1); TFLite reads such a bias along its only axis.
    if (t.shape.size() == 1 && t.shape[0] == static_cast<int64_t>(n)) axis = 0;
    if (axis < 0 || axis >= static_cast<int>(t.shape.size()))
      return error(StatusCode::invalid_argument, "quantized_dimension ", axis, " is outside its rank ",
                   t.shape.size());
    if (t.shape[axis] != static_cast<int64_t>(n))
      return error(StatusCode::invalid_argument, "has ", n, " per-channel scales for dimension ", axis, " of size ",
                   t.shape[axis]);
    out.axis = axis;
  }
  // The flatbuffer verifier aligns a vector's length, not its 8-byte elements: copy the
  // values out instead of loading them in place.
  const uint8_t* scales = q->scale()->Data();
  const uint8_t* zero_points = q->zero_point()->Data();
  for (size_t i = 0; i < n; ++i) {
    float s;
    int64_t zp;
    std::memcpy(&s, scales + i * sizeof(float), sizeof(float));
    std::memcpy(&zp, zero_points + i * sizeof(int64_t), sizeof(int64_t));
    // Constant per-channel weights may carry a zero scale for an all-zero channel.
    if (!std::isfinite(s) || s < 0 || (s == 0 && !constant))
      return error(StatusCode::invalid_argument, "quantization scale ", s, " is not a positive finite number");
    if (!zero_point_fits(t.dtype, zp))
      return error(StatusCode::invalid_argument, "zero point ", zp, " does not fit dtype ", dtype_name(t.dtype));
    out.scale.push_back(s);
    out.zero_point.push_back(zp);
  }
  return out;
}

}  // namespace

bool tflite_available() { return true; }

Result<InputShapeOverride> parse_input_shape(const std::string& spec) {
  const size_t eq = spec.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
    return error(StatusCode::invalid_argument, "input shape '", spec, "': expected NAME=D0,D1,... (or INDEX=D0,D1,...)");
  InputShapeOverride o;
  o.input = spec.substr(0, eq);
  const std::string dims = spec.substr(eq + 1);
  size_t pos = 0;
  while (pos <= dims.size()) {
    const size_t comma = std::min(dims.find(',', pos), dims.size());
    const std::string item = dims.substr(pos, comma - pos);
    int64_t v = 0;
    bool ok = !item.empty() && item.size() <= 12;
    for (size_t c = (ok && item[0] == '-') ? 1 : 0; ok && c < item.size(); ++c)
      ok = item[c] >= '0' && item[c] <= '9';
    if (ok) ok = item != "-";
    if (ok) v = std::stoll(item);
    if (!ok)
      return error(StatusCode::invalid_argument, "input shape '", spec, "': dim ", o.shape.size(), " '", item,
                   "' is not an integer");
    o.shape.push_back(v);
    pos = comma + 1;
  }
  return o;
}

TensorId ImportContext::temp_tensor(const std::string& name, Shape shape, DType dtype, QuantParams q) {
  Tensor t;
  t.name = name;
  t.shape = std::move(shape);
  t.dtype = dtype;
  t.quant = std::move(q);
  return graph.add_tensor(std::move(t));
}

Result<TensorId> ImportContext::tensor(int32_t index, const std::string& what) {
  if (index < 0 || index >= num_tensors)
    return error(StatusCode::out_of_range, what, ": tensor index ", index, " is outside [0, ", num_tensors, ")");
  if (ids[index] != kNoTensor) return ids[index];
  const ::tflite::Tensor* ft = subgraph->tensors()->Get(index);
  if (!ft) return error(StatusCode::invalid_argument, what, ": tensor ", index, " is null");
  Tensor t;
  t.name = ft->name() ? ft->name()->str() : "tensor_" + std::to_string(index);
  std::string where = what + ": tensor " + std::to_string(index) + " '" + t.name + "'";
  auto dt = map_dtype(ft->type());
  if (!dt.ok()) return dt.status().with_context(where);
  t.dtype = *dt;
  if (ft->sparsity()) return error(StatusCode::unsupported, where, ": sparse tensors are not supported");
  Size elems = 1;
  if (ft->shape()) {
    for (int32_t d : *ft->shape()) {
      if (d < 0)
        return error(StatusCode::invalid_argument, where, ": dimension ", d, " is out of range");
      t.shape.push_back(d);
      elems *= std::max<int64_t>(d, 1);
      if (!elems.ok() || elems.value_or_zero() > kMaxElements)
        return error(StatusCode::invalid_argument, where, " ", shape_str(t.shape), "...: more than ", kMaxElements,
                     " elements");
    }
  }
  auto q = read_quant(ft->quantization(), t, false);
  uint32_t bi = ft->buffer();
  const auto* buffers = model->buffers();
  if (!buffers || bi >= buffers->size())
    return error(StatusCode::out_of_range, where, ": buffer index ", bi, " is outside [0, ",
                 buffers ? buffers->size() : 0, ")");
  const ::tflite::Buffer* b = buffers->Get(bi);
  const uint8_t* data = nullptr;
  uint64_t size = 0;
  if (b && b->offset() > 1) {  // data outside the flatbuffer (schema: offset > 1 means external)
    if (b->offset() > static_cast<uint64_t>(file.size) || b->size() > static_cast<uint64_t>(file.size) - b->offset())
      return error(StatusCode::out_of_range, where, ": buffer ", bi, " [", b->offset(), ", +", b->size(),
                   ") lies outside the ", file.size, "-byte file");
    data = file.data + b->offset();
    size = b->size();
  } else if (b && b->data() && b->data()->size() > 0) {
    data = b->data()->data();
    size = b->data()->size();
  }
  bool constant = data != nullptr;
  if (constant) q = read_quant(ft->quantization(), t, true);
  if (!q.ok()) return q.status().with_context(where);
  t.quant = *q;
  if (ft->is_variable()) {
    // A variable tensor (an LSTM's state) keeps its values between runs and starts at
    // real 0, as the interpreter resets it; an initial value in the file is not supported.
    if (constant) return error(StatusCode::unsupported, where, ": a variable tensor with initial data is not supported");
    t.role = Role::state;
  }
  if (constant) {
    auto need = t.host_bytes();
    if (!need.ok()) return need.status().with_context(where);
    if (size != static_cast<uint64_t>(*need))
      return error(StatusCode::invalid_argument, where, " ", shape_str(t.shape), " ", dtype_name(t.dtype), ": buffer ",
                   bi, " has ", size, " bytes, the tensor needs ", *need);
    t.role = Role::weight;
    t.data = ConstData{data, static_cast<int64_t>(size), file.owner};
  }
  ids[index] = graph.add_tensor(std::move(t));
  return ids[index];
}

bool ImportContext::is_model_output(TensorId id) const {
  if (!subgraph || !subgraph->outputs()) return false;
  for (int32_t i : *subgraph->outputs())
    if (i >= 0 && i < num_tensors && ids[static_cast<size_t>(i)] == id) return true;
  return false;
}

Result<std::vector<int64_t>> ImportContext::const_ints(int32_t index, const std::string& what) {
  TS_ASSIGN_OR_RETURN(TensorId id, tensor(index, what));
  const Tensor& t = graph.tensor(id);
  if (!t.data)
    return error(StatusCode::unsupported, what, ": tensor '", t.name, "' must be a constant (dynamic shapes are not supported)");
  std::vector<int64_t> v(static_cast<size_t>(t.elements()));
  for (size_t i = 0; i < v.size(); ++i) {
    if (t.dtype == DType::i32) {
      int32_t x;
      std::memcpy(&x, t.data->data + 4 * i, 4);
      v[i] = x;
    } else if (t.dtype == DType::i64) {
      std::memcpy(&v[i], t.data->data + 8 * i, 8);
    } else {
      return error(StatusCode::invalid_argument, what, ": tensor '", t.name, "' must be i32 or i64, got ",
                   dtype_name(t.dtype));
    }
  }
  return v;
}

Status OpSite::fail(const std::string& msg) const {
  return error(StatusCode::invalid_argument, "tflite ", label, ": ", msg);
}

Result<TensorId> OpSite::input(int k) {
  if (!has_input(k)) return fail("input " + std::to_string(k) + " is missing");
  return cx.tensor(op->inputs()->Get(k), "tflite " + label + " input " + std::to_string(k));
}

Result<TensorId> OpSite::output(int k) {
  if (k >= num_outputs()) return fail("output " + std::to_string(k) + " is missing");
  return cx.tensor(op->outputs()->Get(k), "tflite " + label + " output " + std::to_string(k));
}

Result<std::vector<int64_t>> OpSite::const_input(int k) {
  if (!has_input(k)) return fail("input " + std::to_string(k) + " is missing");
  return cx.const_ints(op->inputs()->Get(k), "tflite " + label + " input " + std::to_string(k));
}

Status OpSite::expect_io(int lo, int hi, int outs) const {
  if (num_inputs() < lo || num_inputs() > hi)
    return fail("has " + std::to_string(num_inputs()) + " inputs, expected " + std::to_string(lo) +
                (hi != lo ? ".." + std::to_string(hi) : ""));
  for (int k = 0; k < lo; ++k)
    if (op->inputs()->Get(k) < 0) return fail("required input " + std::to_string(k) + " is absent (-1)");
  if (num_outputs() != outs)
    return fail("has " + std::to_string(num_outputs()) + " outputs, expected " + std::to_string(outs));
  return Status::Ok();
}

Status OpSite::check_rescale(const Node& n) const {
  // The quantized kernels rescale int32 values by input scale / output scale (TFLite's
  // reference arithmetic, which assumes sane scales). Codes differ by at most 255 (65,025
  // for a product), so a ratio up to 2^14 cannot overflow; real models stay far below 1,000.
  constexpr double kMaxRescale = 16384;
  // Softmax works in float from a table of exponentials: no integer rescaling (and an i16
  // output's scale is 1/65536, far below any input's).
  if (n.op == OpKind::softmax) return Status::Ok();
  // Logistic and tanh: a float table (8-bit), or the int16 arithmetic whose input scales
  // check_int16_operator bounds (its output scale is always 2^-15).
  if (n.op == OpKind::logistic || n.op == OpKind::tanh) return Status::Ok();
  auto quantized = [](const Tensor& t) { return dtype_is_quantized_int(t.dtype) && !t.quant.empty(); };
  for (TensorId o : n.outputs) {
    const Tensor& out = cx.graph.tensor(o);
    if (!quantized(out)) continue;
    const double out_scale = *std::min_element(out.quant.scale.begin(), out.quant.scale.end());
    for (TensorId i : n.inputs) {
      if (i == kNoTensor) continue;
      const Tensor& in = cx.graph.tensor(i);
      if (!quantized(in) || in.role == Role::weight) continue;
      const double in_scale = *std::max_element(in.quant.scale.begin(), in.quant.scale.end());
      if (!(in_scale <= kMaxRescale * out_scale))
        return fail("input '" + in.name + "' scale " + std::to_string(in_scale) + " over output '" + out.name +
                    "' scale " + std::to_string(out_scale) + " exceeds " + std::to_string(kMaxRescale) +
                    ": the integer rescaling could overflow");
    }
  }
  return Status::Ok();
}

Status OpSite::add(OpKind kind, std::vector<TensorId> inputs, std::vector<TensorId> outputs,
                   AttrMap attrs, const std::string& suffix) {
  Node n;
  n.op = kind;
  n.name = label + suffix;
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  n.attrs = std::move(attrs);
  for (TensorId o : n.outputs) {
    if (cx.graph.tensor(o).role == Role::weight) return fail("writes constant tensor '" + cx.graph.tensor(o).name + "'");
    if (cx.graph.tensor(o).role == Role::state) return fail("writes variable tensor '" + cx.graph.tensor(o).name + "'");
  }
  TS_RETURN_IF_ERROR(check_rescale(n));
  TS_RETURN_IF_ERROR(cx.graph.add_node(n));
  // Check the file's declared output shape against Tessera's shape inference now, so that
  // an inconsistent model is reported at the operator that is wrong. Converters leave
  // placeholder shapes on some intermediate tensors (the interpreter recomputes them when
  // it allocates): an intermediate tensor takes the inferred shape; a model output keeps
  // its declared one, which must agree.
  const size_t node_index = cx.graph.nodes().size() - 1;
  const Node& added = cx.graph.nodes().back();
  auto inferred = infer_outputs(cx.graph, added);
  if (!inferred.ok()) return inferred.status().with_context("tflite " + label);
  for (size_t i = 0; i < added.outputs.size() && i < inferred->size(); ++i) {
    const TensorId id = cx.graph.nodes()[node_index].outputs[i];
    Tensor& t = cx.graph.tensor(id);
    const Shape& want = (*inferred)[i].shape;
    // The inferred shape of a later operator's input must be as bounded as a file's
    // (shape inference multiplies dims: a matmul of two 2^40-element operands would not be).
    auto elems = checked_elements(want, "inferred output");
    if (!elems.ok() || *elems > kMaxElements)
      return fail("output '" + t.name + "' would be " + shape_str(want) + ": more than " + std::to_string(kMaxElements) +
                  " elements");
    if (t.shape == want) continue;
    const std::string mismatch = "output '" + t.name + "' is declared " + shape_str(t.shape) +
                                 " but the operator produces " + shape_str(want);
    if (cx.is_model_output(id)) {
      // A model output's declared dims may differ only where they follow a dynamic input:
      // dims its shape_signature marks -1, or any dim once a load option resized an input.
      bool follows_input = t.shape.size() == want.size();
      for (size_t d = 0; follows_input && d < want.size(); ++d)
        if (t.shape[d] != want[d] && !cx.inputs_resized && !cx.dynamic_in_file(id, d)) follows_input = false;
      if (!follows_input) return fail(mismatch + " (a model output keeps its declared shape)");
      t.shape = want;
      continue;
    }
    if (t.role != Role::activation || t.data) return fail(mismatch);
    for (size_t k = 0; k < node_index; ++k)
      for (TensorId used : cx.graph.nodes()[k].inputs)
        if (used == id) return fail(mismatch + ", and an earlier operator already read it");
    if (!t.quant.empty() && t.quant.per_axis() && (t.quant.axis >= static_cast<int>(want.size()) ||
                                                    want[static_cast<size_t>(t.quant.axis)] != static_cast<int64_t>(t.quant.scale.size())))
      return fail(mismatch + ", which its per-axis quantization does not fit");
    t.shape = want;
  }
  TS_ASSIGN_OR_RETURN(bool folded, fold_constant_node(cx));
  (void)folded;
  return Status::Ok();
}

bool ImportContext::dynamic_in_file(TensorId id, size_t d) const {
  for (int i = 0; i < num_tensors; ++i) {
    if (ids[static_cast<size_t>(i)] != id) continue;
    const ::tflite::Tensor* ft = subgraph->tensors()->Get(i);
    const auto* sig = ft ? ft->shape_signature() : nullptr;
    return sig && d < sig->size() && sig->Get(static_cast<flatbuffers::uoffset_t>(d)) == -1;
  }
  return false;
}

namespace {

// WHILE, IF and CALL_ONCE run other subgraphs of the file; only subgraph 0 is imported. The
// message names the subgraphs the operator would run (WhileOptions: cond_subgraph_index and
// body_subgraph_index, union type 93, newer than the compiled schema; read from the table).
Status control_flow_refusal(const ImportContext& cx, const ::tflite::Operator* op, int index, const std::string& name) {
  constexpr uint8_t kWhileOptions = 93;
  constexpr flatbuffers::voffset_t kCond = 4, kBody = 6;
  std::string detail;
  const auto* sgs = cx.model->subgraphs();
  auto subgraph = [&](int32_t k) {
    std::string s = std::to_string(k);
    if (k >= 0 && static_cast<uint32_t>(k) < sgs->size() && sgs->Get(static_cast<uint32_t>(k))->name())
      s += " '" + sgs->Get(static_cast<uint32_t>(k))->name()->str() + "'";
    return s;
  };
  const auto* t = static_cast<const flatbuffers::Table*>(op->builtin_options());
  // The file's verifier passes over union types the schema lacks: verify this table here.
  flatbuffers::Verifier v(cx.file.data, std::min(static_cast<size_t>(cx.file.size), kMaxFlatbufferBytes));
  if (name == "WHILE" && static_cast<uint8_t>(op->builtin_options_type()) == kWhileOptions && t &&
      t->VerifyTableStart(v) && t->VerifyField<int32_t>(v, kCond, 4) && t->VerifyField<int32_t>(v, kBody, 4)) {
    detail = " (cond subgraph " + subgraph(t->GetField<int32_t>(kCond, 0)) + ", body subgraph " +
             subgraph(t->GetField<int32_t>(kBody, 0)) + ")";
  }
  return error(StatusCode::unsupported, "tflite op ", index, ": operator ", name, detail,
               " is not supported: control flow over subgraphs is not imported (a recurrent layer converted "
               "unrolled, one set of builtins per time step, imports)");
}

// The dims of model input `index` that the file leaves dynamic: -1 in its shape_signature
// (converters write 1 there in `shape`). A signature of another rank, or other negative
// values, is an error.
Result<std::vector<int64_t>> dynamic_dims(const ImportContext& cx, int32_t index, const Tensor& t, const std::string& where) {
  std::vector<int64_t> dims;
  const auto* sig = cx.subgraph->tensors()->Get(index)->shape_signature();
  if (!sig || sig->size() == 0) return dims;
  if (sig->size() != t.shape.size())
    return error(StatusCode::invalid_argument, where, ": shape_signature has rank ", sig->size(), ", its shape ",
                 shape_str(t.shape), " rank ", t.shape.size());
  for (size_t d = 0; d < sig->size(); ++d) {
    const int32_t v = sig->Get(static_cast<flatbuffers::uoffset_t>(d));
    if (v == -1) {
      dims.push_back(static_cast<int64_t>(d));
    } else if (v != t.shape[d]) {
      return error(StatusCode::invalid_argument, where, ": shape_signature dim ", d, " is ", v, ", its shape ",
                   shape_str(t.shape), " says ", t.shape[d]);
    }
  }
  return dims;
}

std::string signature_str(const Tensor& t, const std::vector<int64_t>& dynamic) {
  std::string s = "[";
  for (size_t d = 0; d < t.shape.size(); ++d) {
    if (d) s += ",";
    const bool dyn = std::find(dynamic.begin(), dynamic.end(), static_cast<int64_t>(d)) != dynamic.end();
    s += dyn ? "-1" : std::to_string(t.shape[d]);
  }
  return s + "]";
}

// Gives the model inputs the shapes in `opts` (their dims the file leaves dynamic).
Status apply_input_shapes(ImportContext& cx, const ImportOptions& opts) {
  const Graph& g = cx.graph;
  std::vector<bool> set(g.inputs.size(), false);
  for (const InputShapeOverride& o : opts.input_shapes) {
    size_t k = g.inputs.size();
    for (size_t i = 0; i < g.inputs.size() && k == g.inputs.size(); ++i)
      if (g.tensor(g.inputs[i]).name == o.input) k = i;
    const bool digits = !o.input.empty() && o.input.size() < 10 &&
                        std::all_of(o.input.begin(), o.input.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (k == g.inputs.size() && digits && std::stoul(o.input) < g.inputs.size()) k = std::stoul(o.input);
    if (k == g.inputs.size()) {
      std::string names;
      for (size_t i = 0; i < g.inputs.size(); ++i) names += (i ? ", " : "") + std::to_string(i) + " '" + g.tensor(g.inputs[i]).name + "'";
      return error(StatusCode::invalid_argument, "input shape for '", o.input, "': the model has no such input (inputs: ",
                   names.empty() ? std::string("none") : names, ")");
    }
    Tensor& t = cx.graph.tensor(cx.graph.inputs[k]);
    const std::vector<int64_t>& dynamic = cx.dynamic_dims[k];
    const std::string where = "input shape for input " + std::to_string(k) + " '" + t.name + "' " + signature_str(t, dynamic);
    if (set[k]) return error(StatusCode::invalid_argument, where, ": given more than once");
    set[k] = true;
    if (o.shape.size() != t.shape.size())
      return error(StatusCode::invalid_argument, where, ": ", shape_str(o.shape), " has rank ", o.shape.size(),
                   ", the input has rank ", t.shape.size());
    Size elems = 1;
    for (size_t d = 0; d < o.shape.size(); ++d) {
      const bool dyn = std::find(dynamic.begin(), dynamic.end(), static_cast<int64_t>(d)) != dynamic.end();
      if (!dyn && !opts.any_dim && o.shape[d] != t.shape[d])
        return error(StatusCode::invalid_argument, where, ": dim ", d, " is fixed at ", t.shape[d],
                     " by the model, got ", o.shape[d], " (only dims marked -1 can be set)");
      if (o.shape[d] < 1 || o.shape[d] > std::numeric_limits<int32_t>::max())
        return error(StatusCode::invalid_argument, where, ": dim ", d, " is ", o.shape[d], ", it must be in [1, ",
                     std::numeric_limits<int32_t>::max(), "]");
      elems *= o.shape[d];
      if (!elems.ok() || elems.value_or_zero() > kMaxElements)
        return error(StatusCode::invalid_argument, where, ": ", shape_str(o.shape), " has more than ", kMaxElements,
                     " elements");
    }
    if (t.shape != o.shape) cx.inputs_resized = true;
    t.shape = o.shape;
  }
  return Status::Ok();
}

Status import_model(ImportContext& cx, const ImportOptions& opts) {
  const auto* m = cx.model;
  if (m->version() != kSchemaVersion)
    return error(StatusCode::unsupported, "tflite schema version ", m->version(), " (expected ", kSchemaVersion, ")");
  if (!m->subgraphs() || m->subgraphs()->size() == 0)
    return error(StatusCode::invalid_argument, "tflite model has no subgraphs");
  cx.subgraph = m->subgraphs()->Get(0);
  const auto* sg = cx.subgraph;
  if (!sg || !sg->tensors() || !sg->inputs() || !sg->outputs())
    return error(StatusCode::invalid_argument, "tflite subgraph 0 lacks tensors, inputs or outputs");
  cx.num_tensors = static_cast<int>(sg->tensors()->size());
  cx.ids.assign(cx.num_tensors, kNoTensor);
  for (size_t i = 0; i < sg->inputs()->size(); ++i) {
    TS_ASSIGN_OR_RETURN(TensorId id, cx.tensor(sg->inputs()->Get(i), "model input " + std::to_string(i)));
    Tensor& t = cx.graph.tensor(id);
    if (t.role == Role::weight) continue;  // a constant listed as an input: keep it constant
    if (t.role == Role::state)
      return error(StatusCode::unsupported, "model input ", i, " '", t.name, "' is a variable tensor");
    t.role = Role::input;
    auto dyn = dynamic_dims(cx, sg->inputs()->Get(i), t, "model input " + std::to_string(i) + " '" + t.name + "'");
    if (!dyn.ok()) return dyn.status();
    cx.dynamic_dims.push_back(std::move(*dyn));
    cx.graph.inputs.push_back(id);
  }
  TS_RETURN_IF_ERROR(apply_input_shapes(cx, opts));
  const auto* codes = m->operator_codes();
  int num_codes = codes ? static_cast<int>(codes->size()) : 0;
  int num_ops = sg->operators() ? static_cast<int>(sg->operators()->size()) : 0;
  for (int i = 0; i < num_ops; ++i) {
    const ::tflite::Operator* op = sg->operators()->Get(i);
    if (!op) return error(StatusCode::invalid_argument, "tflite op ", i, " is null");
    if (op->opcode_index() >= static_cast<uint32_t>(num_codes))
      return error(StatusCode::out_of_range, "tflite op ", i, ": opcode index ", op->opcode_index(),
                   " is outside [0, ", num_codes, ")");
    const ::tflite::OperatorCode* oc = codes->Get(op->opcode_index());
    // Schema 3a: the real code is the larger of the deprecated int8 field and the new one.
    int32_t raw = std::max<int32_t>(oc->deprecated_builtin_code(), oc->builtin_code());
    if (raw < ::tflite::BuiltinOperator_MIN || raw > ::tflite::BuiltinOperator_MAX)
      return error(StatusCode::unsupported, "tflite op ", i, ": unknown builtin operator code ", raw);
    auto code = static_cast<::tflite::BuiltinOperator>(raw);
    int version = oc->version();
    std::string name = ::tflite::EnumNameBuiltinOperator(code);
    if (code == ::tflite::BuiltinOperator_CUSTOM)
      name = "CUSTOM '" + (oc->custom_code() ? oc->custom_code()->str() : std::string("?")) + "'";
    OpSite site{cx, op, i, code, version, "op " + std::to_string(i) + " (" + name + " v" + std::to_string(version) + ")"};
    if (code == ::tflite::BuiltinOperator_WHILE || code == ::tflite::BuiltinOperator_IF ||
        code == ::tflite::BuiltinOperator_CALL_ONCE)
      return control_flow_refusal(cx, op, i, name);
    int max_v = max_supported_version(code);
    if (max_v == 0)
      return error(StatusCode::unsupported, "tflite op ", i, ": operator ", name, " (version ", version,
                   ") is not supported");
    if (version < 1 || version > max_v)
      return error(StatusCode::unsupported, "tflite op ", i, ": operator ", name, " version ", version,
                   " is not supported (up to version ", max_v, ")");
    TS_RETURN_IF_ERROR(build_operator(site));
  }
  for (size_t i = 0; i < sg->outputs()->size(); ++i) {
    TS_ASSIGN_OR_RETURN(TensorId id, cx.tensor(sg->outputs()->Get(i), "model output " + std::to_string(i)));
    Tensor& t = cx.graph.tensor(id);
    if (t.role == Role::input || t.role == Role::weight || t.role == Role::state)
      return error(StatusCode::unsupported, "model output ", i, " '", t.name, "' is a model input, constant or variable");
    t.role = Role::output;
    cx.graph.outputs.push_back(id);
  }
  return cx.graph.validate().with_context("tflite model");
}

}  // namespace

Result<Graph> load_tflite_buffer(const ConstData& bytes, const ImportOptions& opts, ImportReport* report) {
  if (!bytes.data || bytes.size < 8)
    return error(StatusCode::invalid_argument, "tflite: file of ", bytes.size, " bytes is too short to be a model");
  if (static_cast<size_t>(bytes.size) > kMaxFlatbufferBytes && !::tflite::ModelBufferHasIdentifier(bytes.data))
    return error(StatusCode::invalid_argument, "tflite: not a TFLite file (identifier is not 'TFL3')");
  if (!::tflite::ModelBufferHasIdentifier(bytes.data)) {
    char id[5] = {0};
    for (int i = 0; i < 4; ++i) {
      char c = static_cast<char>(bytes.data[4 + i]);
      id[i] = (c >= 32 && c < 127) ? c : '?';
    }
    return error(StatusCode::invalid_argument, "tflite: not a TFLite file (identifier '", id, "', expected 'TFL3')");
  }
  size_t verify_len = std::min(static_cast<size_t>(bytes.size), kMaxFlatbufferBytes);
  flatbuffers::Verifier verifier(bytes.data, verify_len);
  if (!::tflite::VerifyModelBuffer(verifier))
    return error(StatusCode::invalid_argument,
                 "tflite: the flatbuffer verifier rejected the file (truncated or corrupted, ", bytes.size, " bytes)");
  ImportContext cx;
  cx.file = bytes;
  cx.model = ::tflite::GetModel(bytes.data);
  TS_RETURN_IF_ERROR(import_model(cx, opts));
  if (report) {
    report->dynamic_dims = std::move(cx.dynamic_dims);
    report->tensor_ids = cx.ids;
    auto files = embedded_files(bytes.data, static_cast<size_t>(bytes.size));
    if (files.ok()) report->labels = embedded_class_names(*files, &report->labels_source);
    else report->labels_note = files.status().message();
  }
  return std::move(cx.graph);
}

Result<Graph> load_tflite_file(const std::string& path, const ImportOptions& opts, ImportReport* report) {
  TS_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, read_file_bounded(path, kMaxModelFileBytes, "model file"));
  auto g = load_tflite_buffer(ConstData::from_vector(std::move(bytes)), opts, report);
  if (!g.ok()) return g.status().with_context("model '" + path + "'");
  return g;
}

}  // namespace tessera::tflite
