// Post-training quantization of float TFLite models (tessera/quantize.h, docs/quantize.md):
// the float model runs on the cpu over the calibration inputs with every activation kept,
// each tensor's range sets its int8 parameters, and the flatbuffer is rewritten in place
// (tensor types, quantization, constant buffers, operator versions, QUANTIZE / DEQUANTIZE
// at the edges), so that every operator keeps its options exactly as the file had them.
#include "tessera/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <set>

#include "convert/dtype.h"
#include "core/checked.h"
#include "import/tflite/embedded_files.h"
#include "import/tflite/tflite_importer.h"
#include "tessera/session.h"
#include "tflite_schema_generated.h"

namespace tessera {
namespace {

namespace T = ::tflite;

Status fail(const std::string& what) { return error(StatusCode::unsupported, "quantize: ", what); }

struct Params {
  float scale = 0;
  int64_t zp = 0;
  double lo() const { return double(scale) * double(-128 - zp); }
  double hi() const { return double(scale) * double(127 - zp); }
};

// TFLite's asymmetric int8 parameters for a real range (0 always representable).
Params asymmetric(double lo, double hi) {
  lo = std::min(lo, 0.0);
  hi = std::max(hi, 0.0);
  double scale = (hi - lo) / 255.0;
  if (!(scale > 0) || !std::isfinite(scale)) scale = 1.0 / 255.0;  // a tensor that stayed 0
  const double zp = std::round(-128.0 - lo / scale);
  return {static_cast<float>(scale), static_cast<int64_t>(std::clamp(zp, -128.0, 127.0))};
}

struct Range {
  double lo = std::numeric_limits<double>::infinity(), hi = -std::numeric_limits<double>::infinity();
  void add(float v) {
    if (!std::isfinite(v)) return;
    lo = std::min(lo, double(v)), hi = std::max(hi, double(v));
  }
  bool seen() const { return lo <= hi; }
};

int32_t code_of(const T::ModelT& m, const T::OperatorT& op) {
  if (op.opcode_index >= m.operator_codes.size()) return -1;
  const T::OperatorCodeT& c = *m.operator_codes[op.opcode_index];
  return std::max<int32_t>(c.deprecated_builtin_code, static_cast<int32_t>(c.builtin_code));
}

std::string op_what(const T::ModelT& m, const T::OperatorT& op, size_t index) {
  const int32_t code = code_of(m, op);
  const char* name = code >= T::BuiltinOperator_MIN && code <= T::BuiltinOperator_MAX
                         ? T::EnumNameBuiltinOperator(static_cast<T::BuiltinOperator>(code))
                         : "";
  return "operator " + std::to_string(index) + " (" + (name && *name ? name : "code " + std::to_string(code)) + ")";
}

// The operators quantized, with the int8 form's version (TFLite's op_version.cc).
const std::map<int32_t, int> kInt8Version = {
    {T::BuiltinOperator_CONV_2D, 3},        {T::BuiltinOperator_DEPTHWISE_CONV_2D, 3},
    {T::BuiltinOperator_FULLY_CONNECTED, 4}, {T::BuiltinOperator_ADD, 2},
    {T::BuiltinOperator_SUB, 2},            {T::BuiltinOperator_MUL, 2},
    {T::BuiltinOperator_LOGISTIC, 2},       {T::BuiltinOperator_TANH, 2},
    {T::BuiltinOperator_SOFTMAX, 2},        {T::BuiltinOperator_CONCATENATION, 2},
    {T::BuiltinOperator_MAX_POOL_2D, 2},    {T::BuiltinOperator_AVERAGE_POOL_2D, 2},
    {T::BuiltinOperator_RESHAPE, 1},        {T::BuiltinOperator_SQUEEZE, 1},
    {T::BuiltinOperator_STRIDED_SLICE, 2},  {T::BuiltinOperator_TRANSPOSE, 2},
    {T::BuiltinOperator_PAD, 2},            {T::BuiltinOperator_RESIZE_NEAREST_NEIGHBOR, 2},
    {T::BuiltinOperator_QUANTIZE, 2},       {T::BuiltinOperator_DEQUANTIZE, 2},
    {T::BuiltinOperator_RELU, 2},           {T::BuiltinOperator_RELU6, 2},
    {T::BuiltinOperator_LEAKY_RELU, 2},     {T::BuiltinOperator_HARD_SWISH, 1},
    {T::BuiltinOperator_MEAN, 2},           {T::BuiltinOperator_MAXIMUM, 2},
    {T::BuiltinOperator_MINIMUM, 2},
};

// Operators whose int8 kernels take every input at the output's parameters (they compare or
// copy codes): their inputs and output share one range.
bool shares_params(int32_t code) {
  return code == T::BuiltinOperator_CONCATENATION || code == T::BuiltinOperator_MAXIMUM ||
         code == T::BuiltinOperator_MINIMUM;
}

// Output parameters equal to input 0's (the int8 kernels require it, or move codes only).
bool keeps_input_params(int32_t code) {
  switch (code) {
    case T::BuiltinOperator_MAX_POOL_2D:
    case T::BuiltinOperator_AVERAGE_POOL_2D:
    case T::BuiltinOperator_RESHAPE:
    case T::BuiltinOperator_SQUEEZE:
    case T::BuiltinOperator_STRIDED_SLICE:
    case T::BuiltinOperator_TRANSPOSE:
    case T::BuiltinOperator_PAD:
    case T::BuiltinOperator_RESIZE_NEAREST_NEIGHBOR:
      return true;
    default:
      return false;
  }
}

class Rewriter {
 public:
  explicit Rewriter(T::ModelT& m) : m_(m), sg_(*m.subgraphs[0]) {}

  T::TensorT& tensor(int32_t i) { return *sg_.tensors[static_cast<size_t>(i)]; }
  bool valid(int32_t i) const { return i >= 0 && static_cast<size_t>(i) < sg_.tensors.size(); }

  const std::vector<uint8_t>* data(int32_t i) {
    const uint32_t b = tensor(i).buffer;
    if (b == 0 || b >= m_.buffers.size() || !m_.buffers[b] || m_.buffers[b]->data.empty()) return nullptr;
    return &m_.buffers[b]->data;
  }
  bool constant(int32_t i) { return valid(i) && data(i) != nullptr; }

  // The element count the shape claims, overflow-checked.
  Result<int64_t> elements(int32_t i) {
    int64_t n = 1;
    for (int32_t d : tensor(i).shape) {
      if (d < 0) return fail("tensor '" + tensor(i).name + "' has a negative dimension");
      TS_ASSIGN_OR_RETURN(n, checked_mul(n, d, "quantize: tensor '" + tensor(i).name + "' elements"));
    }
    return n;
  }

  // A constant's real values: float32, float16, or int8 with per-tensor or per-axis
  // parameters (a hybrid model's filters). Non-finite values have no int8 code: refused.
  Result<std::vector<float>> values(int32_t i) {
    const T::TensorT& t = tensor(i);
    const std::vector<uint8_t>* d = data(i);
    if (!d) return fail("tensor '" + t.name + "' is not a constant");
    const bool f32 = t.type == T::TensorType_FLOAT32, f16 = t.type == T::TensorType_FLOAT16;
    if (!f32 && !f16 && !(t.type == T::TensorType_INT8 && t.quantization && !t.quantization->scale.empty()))
      return fail("constant '" + t.name + "' is " + T::EnumNameTensorType(t.type) + ", not a float value");
    TS_ASSIGN_OR_RETURN(const int64_t n, elements(i));
    // The bytes must be there before anything is allocated for the values.
    const int64_t width = f32 ? 4 : f16 ? 2 : 1;
    if (n > static_cast<int64_t>(d->size()) / width || static_cast<int64_t>(d->size()) != n * width)
      return fail("constant '" + t.name + "' holds " + std::to_string(d->size()) + " bytes for " + std::to_string(n) +
                  " values");
    std::vector<float> v(static_cast<size_t>(n));
    if (f32) {
      std::memcpy(v.data(), d->data(), d->size());
    } else if (f16) {
      std::vector<uint16_t> h(static_cast<size_t>(n));
      std::memcpy(h.data(), d->data(), d->size());
      convert::f16_to_f32_n(h.data(), v.data(), n);
    } else {
      const auto& q = *t.quantization;
      const size_t axis_n = q.scale.size();
      int64_t inner = 1;
      if (axis_n > 1) {
        if (q.quantized_dimension < 0 || static_cast<size_t>(q.quantized_dimension) >= t.shape.size() ||
            t.shape[q.quantized_dimension] != static_cast<int32_t>(axis_n))
          return fail("constant '" + t.name + "' has " + std::to_string(axis_n) + " scales that match no dimension");
        for (size_t k = static_cast<size_t>(q.quantized_dimension) + 1; k < t.shape.size(); ++k) inner *= t.shape[k];
      }
      for (int64_t k = 0; k < n; ++k) {
        const size_t c = axis_n > 1 ? static_cast<size_t>((k / inner) % static_cast<int64_t>(axis_n)) : 0;
        const int64_t zp = c < q.zero_point.size() ? q.zero_point[c] : 0;
        v[k] = q.scale[c] * float(int64_t(static_cast<int8_t>((*d)[k])) - zp);
      }
    }
    for (size_t k = 0; k < v.size(); ++k)
      if (!std::isfinite(v[k]))
        return fail("constant '" + t.name + "' holds a non-finite value (" + std::to_string(v[k]) + " at element " +
                    std::to_string(k) + "): it has no int8 code");
    return v;
  }

  uint32_t new_buffer(std::vector<uint8_t> bytes) {
    auto b = std::make_unique<T::BufferT>();
    b->data = std::move(bytes);
    m_.buffers.push_back(std::move(b));
    return static_cast<uint32_t>(m_.buffers.size() - 1);
  }

  void set_quant(int32_t i, T::TensorType type, std::vector<float> scale, std::vector<int64_t> zp, int32_t dim = 0) {
    T::TensorT& t = tensor(i);
    t.type = type;
    t.quantization = std::make_unique<T::QuantizationParametersT>();
    t.quantization->scale = std::move(scale);
    t.quantization->zero_point = std::move(zp);
    t.quantization->quantized_dimension = dim;
  }

  // An int8 activation (or per-tensor constant) at `p`.
  void set_int8(int32_t i, const Params& p) { set_quant(i, T::TensorType_INT8, {p.scale}, {p.zp}); }

  // A float constant as int8 with its own asymmetric per-tensor parameters.
  // `at`: given parameters (a concatenation's own) instead of the constant's range.
  Result<Params> quantize_constant(int32_t i, const Params* at = nullptr) {
    TS_ASSIGN_OR_RETURN(std::vector<float> v, values(i));
    Range r;
    for (float x : v) r.add(x);
    const Params p = at ? *at : r.seen() ? asymmetric(r.lo, r.hi) : asymmetric(0, 0);
    std::vector<uint8_t> codes(v.size());
    for (size_t k = 0; k < v.size(); ++k)
      codes[k] = static_cast<uint8_t>(static_cast<int8_t>(
          std::clamp<double>(std::round(double(v[k]) / p.scale) + double(p.zp), -128.0, 127.0)));
    tensor(i).buffer = new_buffer(std::move(codes));
    set_int8(i, p);
    return p;
  }

  // A filter as symmetric int8, one scale per index of dimension `dim` (or one in all when
  // dim < 0); returns the scales.
  Result<std::vector<float>> quantize_filter(int32_t i, int dim) {
    TS_ASSIGN_OR_RETURN(std::vector<float> v, values(i));
    const T::TensorT& t = tensor(i);
    if (dim >= static_cast<int>(t.shape.size())) return fail("filter '" + t.name + "' has no dimension " + std::to_string(dim));
    const int64_t channels = dim < 0 ? 1 : t.shape[dim];
    int64_t inner = 1;
    for (size_t k = static_cast<size_t>(dim + 1); k < t.shape.size() && dim >= 0; ++k) inner *= t.shape[k];
    if (dim < 0) inner = static_cast<int64_t>(v.size());
    std::vector<double> amax(static_cast<size_t>(channels), 0.0);
    auto channel = [&](int64_t k) { return static_cast<size_t>((k / inner) % channels); };
    for (int64_t k = 0; k < static_cast<int64_t>(v.size()); ++k) amax[channel(k)] = std::max(amax[channel(k)], std::fabs(double(v[k])));
    std::vector<float> scale(static_cast<size_t>(channels));
    for (int64_t c = 0; c < channels; ++c) scale[c] = amax[c] > 0 ? static_cast<float>(amax[c] / 127.0) : 1.0f;
    std::vector<uint8_t> codes(v.size());
    for (int64_t k = 0; k < static_cast<int64_t>(v.size()); ++k)
      codes[k] = static_cast<uint8_t>(static_cast<int8_t>(
          std::clamp<double>(std::round(double(v[k]) / scale[channel(k)]), -127.0, 127.0)));
    tensor(i).buffer = new_buffer(std::move(codes));
    set_quant(i, T::TensorType_INT8, scale, std::vector<int64_t>(scale.size(), 0), std::max(dim, 0));
    return scale;
  }

  // A bias as int32 at input scale x filter scale per channel.
  Status quantize_bias(int32_t i, float input_scale, const std::vector<float>& filter_scale) {
    TS_ASSIGN_OR_RETURN(std::vector<float> v, values(i));
    const T::TensorT& t = tensor(i);
    if (filter_scale.size() != 1 && filter_scale.size() != v.size())
      return fail("bias '" + t.name + "' has " + std::to_string(v.size()) + " values for " +
                  std::to_string(filter_scale.size()) + " filter scales");
    std::vector<float> scale(v.size());
    std::vector<uint8_t> bytes(v.size() * 4);
    for (size_t c = 0; c < v.size(); ++c) {
      scale[c] = input_scale * filter_scale[filter_scale.size() == 1 ? 0 : c];
      const double q = std::clamp<double>(std::round(double(v[c]) / double(scale[c])), -2147483647.0, 2147483647.0);
      const int32_t q32 = static_cast<int32_t>(q);
      std::memcpy(bytes.data() + 4 * c, &q32, 4);
    }
    tensor(i).buffer = new_buffer(std::move(bytes));
    set_quant(i, T::TensorType_INT32, scale, std::vector<int64_t>(scale.size(), 0), 0);
    return Status::Ok();
  }

  uint32_t opcode(int32_t code, int version) {
    for (size_t k = 0; k < m_.operator_codes.size(); ++k) {
      const T::OperatorCodeT& c = *m_.operator_codes[k];
      if (std::max<int32_t>(c.deprecated_builtin_code, static_cast<int32_t>(c.builtin_code)) == code) return static_cast<uint32_t>(k);
    }
    auto c = std::make_unique<T::OperatorCodeT>();
    c->builtin_code = static_cast<T::BuiltinOperator>(code);
    c->deprecated_builtin_code = static_cast<int8_t>(std::min(code, 127));
    c->version = version;
    m_.operator_codes.push_back(std::move(c));
    return static_cast<uint32_t>(m_.operator_codes.size() - 1);
  }

  int32_t add_tensor(const T::TensorT& like, const std::string& name) {
    auto t = std::make_unique<T::TensorT>();
    t->shape = like.shape;
    t->shape_signature = like.shape_signature;
    t->type = like.type;
    t->name = name;
    if (like.quantization) t->quantization = std::make_unique<T::QuantizationParametersT>(*like.quantization);
    sg_.tensors.push_back(std::move(t));
    return static_cast<int32_t>(sg_.tensors.size() - 1);
  }

  T::ModelT& m_;
  T::SubGraphT& sg_;
};

}  // namespace

Result<std::vector<uint8_t>> quantize_tflite(const std::vector<uint8_t>& model, const std::vector<CalibrationRun>& calibration,
                                             const QuantizeOptions& opts, QuantizeReport* report,
                                             const std::function<void(int, int)>& progress) {
  QuantizeReport rep;
  if (calibration.empty()) return error(StatusCode::invalid_argument, "quantize: no calibration input (give at least one)");
  // The float model as the cpu runs it: every float activation kept as an output.
  const ConstData bytes = ConstData::from_vector(model);
  tflite::ImportReport ir;
  TS_ASSIGN_OR_RETURN(Graph g, tflite::load_tflite_buffer(bytes, {}, &ir));
  std::unique_ptr<T::ModelT> mp(T::UnPackModel(bytes.data));
  if (!mp || mp->subgraphs.size() != 1)
    return fail("the model has " + std::to_string(mp ? mp->subgraphs.size() : 0) + " subgraphs; only one-subgraph models are quantized");
  for (const auto& b : mp->buffers)
    if (b && b->offset > 1) return fail("the model keeps its buffers outside the flatbuffer (over 2 GB): not supported");
  Rewriter rw(*mp);
  T::SubGraphT& sg = rw.sg_;
  const size_t nt = sg.tensors.size();
  if (ir.tensor_ids.size() != nt) return error(StatusCode::internal, "quantize: the importer's tensor map has ", ir.tensor_ids.size(), " entries for ", nt, " tensors");

  bool any_float = false;
  for (int32_t in : sg.inputs) any_float = any_float || (rw.valid(in) && rw.tensor(in).type == T::TensorType_FLOAT32);
  if (!any_float) return fail("no float32 input: the model is already quantized (or not a float model)");

  // Every operator must have an int8 form before the calibration runs (which take long on
  // a large model): the supported set, and DEQUANTIZE of a constant (folded below).
  for (size_t oi = 0; oi < sg.operators.size(); ++oi) {
    const T::OperatorT& op = *sg.operators[oi];
    const int32_t code = code_of(*mp, op);
    if (code == T::BuiltinOperator_DEQUANTIZE && op.inputs.size() == 1 && rw.constant(op.inputs[0])) continue;
    if (!kInt8Version.count(code) || code == T::BuiltinOperator_QUANTIZE || code == T::BuiltinOperator_DEQUANTIZE)
      return fail(op_what(*mp, op, oi) +
                  " has no int8 form here (quantized: CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, ADD, SUB, MUL, "
                  "LOGISTIC, TANH, SOFTMAX, RELU, RELU6, LEAKY_RELU, HARD_SWISH, MEAN, MAXIMUM, MINIMUM, CONCATENATION, MAX_POOL_2D, "
                  "AVERAGE_POOL_2D, RESHAPE, SQUEEZE, STRIDED_SLICE, TRANSPOSE, PAD, RESIZE_NEAREST_NEIGHBOR)");
  }

  // Calibration: run the float graph, keeping each float activation.
  std::vector<TensorId> kept;
  std::map<TensorId, size_t> out_of;
  for (size_t i = 0; i < nt; ++i) {
    const TensorId id = ir.tensor_ids[i];
    if (id == kNoTensor || g.tensor(id).data || g.tensor(id).dtype != DType::f32 || out_of.count(id)) continue;
    bool is_input = std::find(g.inputs.begin(), g.inputs.end(), id) != g.inputs.end();
    if (is_input) continue;
    auto it = std::find(g.outputs.begin(), g.outputs.end(), id);
    if (it == g.outputs.end()) {
      g.outputs.push_back(id);
      g.tensor(id).role = Role::output;
      it = g.outputs.end() - 1;
    }
    out_of[id] = static_cast<size_t>(it - g.outputs.begin());
    kept.push_back(id);
  }
  std::map<TensorId, Range> range;
  std::vector<TensorId> inputs = g.inputs;
  {
    SessionOptions so;
    so.device = "cpu";
    TS_ASSIGN_OR_RETURN(auto s, Session::create(g, so));
    const Graph& sg_graph = s->graph();
    for (size_t r = 0; r < calibration.size(); ++r) {
      const CalibrationRun& run = calibration[r];
      if (run.size() != inputs.size())
        return error(StatusCode::invalid_argument, "quantize: calibration run ", r, " has ", run.size(), " inputs, the model takes ",
                     inputs.size());
      for (size_t k = 0; k < inputs.size(); ++k) {
        const Tensor& t = sg_graph.tensor(inputs[k]);
        if (t.dtype == DType::f32) {
          const size_t n = run[k].size() / 4;
          for (size_t e = 0; e < n; ++e) {
            float v;
            std::memcpy(&v, run[k].data() + 4 * e, 4);
            range[inputs[k]].add(v);
          }
        }
        TS_RETURN_IF_ERROR(s->set_input(k, run[k].data(), static_cast<int64_t>(run[k].size()))
                               .with_context("quantize: calibration run " + std::to_string(r) + ", input " + t.name));
      }
      TS_RETURN_IF_ERROR(s->run().with_context("quantize: calibration run " + std::to_string(r)));
      for (TensorId id : kept) {
        TS_ASSIGN_OR_RETURN(std::vector<uint8_t> y, s->output(out_of[id]));
        Range& rg = range[id];
        for (size_t e = 0; e + 4 <= y.size(); e += 4) {
          float v;
          std::memcpy(&v, y.data() + e, 4);
          rg.add(v);
        }
      }
      ++rep.calibration_runs;
      if (progress) progress(static_cast<int>(r + 1), static_cast<int>(calibration.size()));
    }
  }
  const auto calibrated = [&](int32_t i) -> const Range* {
    if (i < 0 || static_cast<size_t>(i) >= ir.tensor_ids.size()) return nullptr;
    auto it = range.find(ir.tensor_ids[static_cast<size_t>(i)]);
    return it == range.end() || !it->second.seen() ? nullptr : &it->second;
  };

  // Constant DEQUANTIZE operators (fp16 or int8 weights of the float graph): their outputs
  // become float constants, the operators go.
  {
    std::vector<std::unique_ptr<T::OperatorT>> keep;
    int folded = 0;
    for (auto& op : sg.operators) {
      if (code_of(*mp, *op) == T::BuiltinOperator_DEQUANTIZE && op->inputs.size() == 1 && op->outputs.size() == 1 &&
          rw.constant(op->inputs[0])) {
        TS_ASSIGN_OR_RETURN(std::vector<float> v, rw.values(op->inputs[0]));
        std::vector<uint8_t> b(v.size() * 4);
        std::memcpy(b.data(), v.data(), b.size());
        T::TensorT& out = rw.tensor(op->outputs[0]);
        out.type = T::TensorType_FLOAT32;
        out.quantization.reset();
        out.buffer = rw.new_buffer(std::move(b));
        ++folded;
        continue;
      }
      keep.push_back(std::move(op));
    }
    sg.operators = std::move(keep);
    if (folded > 0) rep.notes.push_back(std::to_string(folded) + " constant DEQUANTIZE operators folded into float weights");
  }

  // Parameters of every float activation, in operator order. `raw` holds the real range
  // each tensor's parameters were made from. A concatenation's inputs take its parameters
  // where their producer is free to (as TFLite's converter does), so that the int8
  // concatenation copies codes instead of requantizing them (the NPU writes such inputs in
  // place); with QuantizeOptions::shared_add_params an ADD's likewise, so that its three
  // scales are equal and the NPU's element-wise stage adds exactly as TFLite's ADD does.
  // `widen` spreads such a producer's range to the joining operator's, repeated until none
  // widens anything (chains of them).
  std::map<int32_t, Params> params;
  std::map<int32_t, std::pair<double, double>> raw, widen;
  std::map<int32_t, size_t> producer;  // tensor -> the operator making it
  const auto is_float_activation = [&](int32_t i) {
    return rw.valid(i) && !rw.constant(i) && rw.tensor(i).type == T::TensorType_FLOAT32;
  };
  for (size_t oi = 0; oi < sg.operators.size(); ++oi)
    for (int32_t out : sg.operators[oi]->outputs) producer[out] = oi;
  std::set<std::string> uncalibrated;
  const bool unify_adds = opts.shared_add_params;
  const auto assign = [&]() -> Status {
    params.clear();
    raw.clear();
    const auto set = [&](int32_t t, double lo, double hi) {
      if (auto w = widen.find(t); w != widen.end()) lo = std::min(lo, w->second.first), hi = std::max(hi, w->second.second);
      raw[t] = {std::min(lo, 0.0), std::max(hi, 0.0)};
      params[t] = asymmetric(lo, hi);
    };
    for (int32_t in : sg.inputs) {
      if (!is_float_activation(in)) continue;
      const Range* r = calibrated(in);
      set(in, r ? r->lo : 0, r ? r->hi : 0);
    }
    for (size_t oi = 0; oi < sg.operators.size(); ++oi) {
      T::OperatorT& op = *sg.operators[oi];
      const int32_t code = code_of(*mp, op);
      const std::string what = op_what(*mp, op, oi);
      for (int32_t in : op.inputs)
        if (is_float_activation(in) && !params.count(in))
          return fail(what + " reads '" + rw.tensor(in).name + "' before any operator makes it");
      for (int32_t out : op.outputs) {
        if (!is_float_activation(out)) continue;
        const Range* r = calibrated(out);
        if (code == T::BuiltinOperator_LOGISTIC || code == T::BuiltinOperator_SOFTMAX) {
          params[out] = {1.0f / 256.0f, -128};
          raw[out] = {params[out].lo(), params[out].hi()};
        } else if (code == T::BuiltinOperator_TANH) {
          params[out] = {1.0f / 128.0f, 0};
          raw[out] = {params[out].lo(), params[out].hi()};
        } else if (keeps_input_params(code)) {
          if (op.inputs.empty() || !params.count(op.inputs[0])) return fail(what + ": its data input is not a float activation");
          params[out] = params[op.inputs[0]];
          raw[out] = raw[op.inputs[0]];
        } else if (shares_params(code) || (unify_adds && code == T::BuiltinOperator_ADD)) {
          double lo = r ? r->lo : 0, hi = r ? r->hi : 0;
          for (int32_t in : op.inputs) {
            if (raw.count(in)) {
              lo = std::min(lo, raw[in].first), hi = std::max(hi, raw[in].second);
            } else if (shares_params(code) && rw.constant(in) && rw.tensor(in).type == T::TensorType_FLOAT32) {
              // A constant input is coded at these parameters: its values must fit them.
              TS_ASSIGN_OR_RETURN(std::vector<float> v, rw.values(in));
              for (float x : v) lo = std::min(lo, double(x)), hi = std::max(hi, double(x));
            }
          }
          set(out, lo, hi);
        } else {
          if (!r) uncalibrated.insert("'" + rw.tensor(out).name + "' (" + what + ")");
          set(out, r ? r->lo : 0, r ? r->hi : 0);
        }
      }
    }
    return Status::Ok();
  };
  for (int round = 0;; ++round) {
    TS_RETURN_IF_ERROR(assign());
    bool changed = false;
    for (const auto& op : sg.operators) {
      const int32_t oc = code_of(*mp, *op);
      if ((!shares_params(oc) && !(unify_adds && oc == T::BuiltinOperator_ADD)) || op->outputs.empty() ||
          !raw.count(op->outputs[0]))
        continue;
      const auto u = raw[op->outputs[0]];
      for (int32_t in : op->inputs) {
        if (!raw.count(in) || raw[in] == u) continue;
        // Back through the operators that keep their input's parameters, to the tensor whose
        // parameters are made from a range.
        int32_t root = in;
        for (size_t hops = 0; hops <= sg.operators.size() && producer.count(root) &&
                              keeps_input_params(code_of(*mp, *sg.operators[producer[root]])) &&
                              !sg.operators[producer[root]]->inputs.empty();
             ++hops)
          root = sg.operators[producer[root]]->inputs[0];
        const bool free = producer.count(root) && [&] {
          const int32_t c = code_of(*mp, *sg.operators[producer[root]]);
          return c != T::BuiltinOperator_LOGISTIC && c != T::BuiltinOperator_SOFTMAX && c != T::BuiltinOperator_TANH;
        }();
        if (!free || round >= 16) continue;  // a QUANTIZE in front (below), or the ADD's own rescaling
        auto& w = widen.try_emplace(root, u).first->second;
        w = {std::min(w.first, u.first), std::max(w.second, u.second)};
        changed = true;
      }
    }
    if (!changed) break;
  }
  for (const std::string& t : uncalibrated)
    rep.notes.push_back(t + " was never computed or stayed non-finite in the calibration runs (range 0)");
  // TFLite's int8 CONCATENATION, MAXIMUM and MINIMUM take inputs at their output's
  // parameters only: an input whose producer has fixed ones (a LOGISTIC's, through slices)
  // is requantized by a QUANTIZE (int8 -> int8) in front of it, as the converter does.
  {
    std::vector<std::unique_ptr<T::OperatorT>> ops;
    int inserted = 0;
    for (auto& op : sg.operators) {
      if (shares_params(code_of(*mp, *op)) && !op->outputs.empty() && params.count(op->outputs[0])) {
        const Params want = params[op->outputs[0]];
        for (int32_t& in : op->inputs) {
          if (!params.count(in) || (params[in].scale == want.scale && params[in].zp == want.zp)) continue;
          const int32_t r = rw.add_tensor(rw.tensor(in), rw.tensor(in).name + "/requantized");
          params[r] = want;
          auto q = std::make_unique<T::OperatorT>();
          q->opcode_index = rw.opcode(T::BuiltinOperator_QUANTIZE, kInt8Version.at(T::BuiltinOperator_QUANTIZE));
          q->inputs = {in};
          q->outputs = {r};
          ops.push_back(std::move(q));
          in = r;
          ++inserted;
        }
      }
      ops.push_back(std::move(op));
    }
    sg.operators = std::move(ops);
    if (inserted > 0)
      rep.notes.push_back(std::to_string(inserted) + " CONCATENATION / MAXIMUM / MINIMUM inputs requantized by a QUANTIZE "
                                                     "in front (their producer's range is fixed)");
  }

  // Constants: filters and biases of the matrix operators, then any other float operand.
  std::set<int32_t> done;
  for (size_t oi = 0; oi < sg.operators.size(); ++oi) {
    T::OperatorT& op = *sg.operators[oi];
    const int32_t code = code_of(*mp, op);
    const std::string what = op_what(*mp, op, oi);
    if (code == T::BuiltinOperator_CONV_2D || code == T::BuiltinOperator_DEPTHWISE_CONV_2D ||
        code == T::BuiltinOperator_FULLY_CONNECTED) {
      if (op.inputs.size() < 2 || !params.count(op.inputs[0])) return fail(what + ": its input is not a float activation");
      const int32_t w = op.inputs[1];
      if (!rw.constant(w)) return fail(what + ": its filter is not a constant");
      if (done.count(w)) return fail(what + ": its filter is shared with another operator");
      const int dim = code == T::BuiltinOperator_CONV_2D ? 0 : code == T::BuiltinOperator_DEPTHWISE_CONV_2D ? 3 : -1;
      TS_ASSIGN_OR_RETURN(std::vector<float> ws, rw.quantize_filter(w, dim));
      done.insert(w);
      ++rep.tensors_quantized;
      if (op.inputs.size() > 2 && op.inputs[2] >= 0) {
        const int32_t b = op.inputs[2];
        if (!rw.constant(b)) return fail(what + ": its bias is not a constant");
        if (done.count(b)) return fail(what + ": its bias is shared with another operator");
        TS_RETURN_IF_ERROR(rw.quantize_bias(b, params[op.inputs[0]].scale, ws));
        done.insert(b);
        ++rep.tensors_quantized;
      }
    }
  }
  for (size_t oi = 0; oi < sg.operators.size(); ++oi) {
    T::OperatorT& op = *sg.operators[oi];
    // The constant inputs of a CONCATENATION / MAXIMUM / MINIMUM are coded at its output's
    // parameters (the int8 kernels take no other); the output's range covers them.
    const bool join = shares_params(code_of(*mp, op)) && !op.outputs.empty() && params.count(op.outputs[0]);
    for (int32_t in : op.inputs) {
      if (!rw.valid(in) || !rw.constant(in) ||
          (rw.tensor(in).type != T::TensorType_FLOAT32 && rw.tensor(in).type != T::TensorType_FLOAT16))
        continue;
      if (done.count(in)) {
        if (join) return fail(op_what(*mp, op, oi) + ": its constant input '" + rw.tensor(in).name + "' is shared with another operator");
        continue;
      }
      TS_ASSIGN_OR_RETURN(Params p, rw.quantize_constant(in, join ? &params[op.outputs[0]] : nullptr));
      (void)p;
      done.insert(in);
      ++rep.tensors_quantized;
    }
  }
  for (const auto& [i, p] : params) {
    rw.set_int8(i, p);
    ++rep.tensors_quantized;
  }

  // Versions of the int8 forms.
  for (auto& op : sg.operators) {
    const int32_t code = code_of(*mp, *op);
    auto v = kInt8Version.find(code);
    if (v != kInt8Version.end()) {
      T::OperatorCodeT& c = *mp->operator_codes[op->opcode_index];
      c.version = std::max(c.version, v->second);
    }
  }

  // The edges: float inputs quantized by QUANTIZE, outputs dequantized by DEQUANTIZE,
  // unless int8 ones were asked for.
  if (!opts.int8_io) {
    std::vector<std::unique_ptr<T::OperatorT>> front;
    for (int32_t& in : sg.inputs) {
      if (!params.count(in)) continue;
      const int32_t q = rw.add_tensor(rw.tensor(in), rw.tensor(in).name + "/int8");
      rw.tensor(in).type = T::TensorType_FLOAT32;
      rw.tensor(in).quantization.reset();
      for (auto& op : sg.operators)
        for (int32_t& x : op->inputs)
          if (x == in) x = q;
      for (int32_t& o : sg.outputs)
        if (o == in) o = q;
      auto op = std::make_unique<T::OperatorT>();
      op->opcode_index = rw.opcode(T::BuiltinOperator_QUANTIZE, kInt8Version.at(T::BuiltinOperator_QUANTIZE));
      op->inputs = {in};
      op->outputs = {q};
      front.push_back(std::move(op));
    }
    for (auto& op : sg.operators) front.push_back(std::move(op));
    sg.operators = std::move(front);
    for (int32_t& out : sg.outputs) {
      if (!params.count(out)) continue;
      T::TensorT& internal = rw.tensor(out);
      const std::string name = internal.name;
      internal.name = name + "/int8";
      const int32_t f = rw.add_tensor(internal, name);
      rw.tensor(f).type = T::TensorType_FLOAT32;
      rw.tensor(f).quantization.reset();
      auto op = std::make_unique<T::OperatorT>();
      op->opcode_index = rw.opcode(T::BuiltinOperator_DEQUANTIZE, kInt8Version.at(T::BuiltinOperator_DEQUANTIZE));
      op->inputs = {out};
      op->outputs = {f};
      sg.operators.push_back(std::move(op));
      out = f;
    }
  }

  // Buffers no tensor reads any more (the float weights) are emptied.
  {
    std::vector<bool> used(mp->buffers.size(), false), referenced(sg.tensors.size(), false);
    const auto ref = [&](int32_t i) {
      if (rw.valid(i)) referenced[static_cast<size_t>(i)] = true;
    };
    for (const auto& op : sg.operators) {
      for (int32_t i : op->inputs) ref(i);
      for (int32_t i : op->outputs) ref(i);
    }
    for (int32_t i : sg.inputs) ref(i);
    for (int32_t i : sg.outputs) ref(i);
    for (size_t i = 0; i < sg.tensors.size(); ++i) {
      if (!referenced[i]) sg.tensors[i]->buffer = 0;  // a folded DEQUANTIZE's fp16 source
      if (sg.tensors[i]->buffer < used.size()) used[sg.tensors[i]->buffer] = true;
    }
    for (size_t b = 1; b < mp->buffers.size(); ++b)
      if (!used[b] && mp->buffers[b]) mp->buffers[b]->data.clear();
  }
  // A file may name an options type without the table (the importer reads defaults then):
  // the object API keeps the type with no value, which packing would dereference.
  for (auto& op : sg.operators)
    if (op->builtin_options.type != T::BuiltinOptions_NONE && !op->builtin_options.value) op->builtin_options.Reset();
  mp->description = "quantized by Tessera (post-training, int8)";
  rep.ops = static_cast<int>(sg.operators.size());

  flatbuffers::FlatBufferBuilder fbb(model.size() / 2 + 4096);
  T::FinishModelBuffer(fbb, T::Model::Pack(fbb, mp.get()));
  std::vector<uint8_t> out(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
  // The files packed after the flatbuffer (TFLite metadata's associated files, Ultralytics'
  // class names) travel with it: the archive records offsets from its own start.
  {
    auto archive = tflite::embedded_archive_moved(model.data(), model.size(), out.size());
    if (!archive.ok()) {
      rep.notes.push_back("the packed files were not carried over: " + archive.status().message());
    } else if (!archive->empty()) {
      out.insert(out.end(), archive->begin(), archive->end());
      rep.notes.push_back("the packed files (" + std::to_string(archive->size()) + " bytes: labels, metadata) carried over");
    }
  }
  rep.bytes = static_cast<int64_t>(out.size());
  // The written model must load: the importer checks every operator of it.
  {
    auto back = tflite::load_tflite_buffer(ConstData::from_vector(out));
    if (!back.ok()) return back.status().with_context("quantize: the written model does not load");
  }
  if (report) *report = std::move(rep);
  return out;
}

}  // namespace tessera
