// TFLite recurrent operators -> Tessera nodes: UNIDIRECTIONAL_SEQUENCE_LSTM -> lstm;
// BIDIRECTIONAL_SEQUENCE_LSTM -> two lstm (the second with reverse = 1) and, when it merges
// its outputs, a concat (at the end of the file).
//
// The TFLite operator has 24 inputs (20 in old files): x; input-to-gate weights 1-4 and
// recurrent weights 5-8 (gates input, forget, cell, output; the input gate's may be
// absent: CIFG); peephole weights 9-11; gate biases 12-15; projection weights and bias
// 16-17; the hidden ("output") and cell state 18-19, variable tensors that keep their
// values between invocations; layer-norm coefficients 20-23. Tessera runs the f32 form and
// the integer 8x8_16 form (i8 x / weights / hidden state / projection weights, i32 biases,
// i16 cell state, peephole weights and layer-norm coefficients), with or without the input
// gate, peephole weights, projection and layer norm, and the hybrid form (f32 x, state and
// biases with i8 weights, symmetric or asymmetric_quantize_inputs); int16 activations and
// hybrid weights of another type are refused, naming the operator and the tensor.
#include <cmath>
#include <cstring>

#include "import/tflite/import_context.h"
#include "ops/lstm_inputs.h"

namespace tessera::tflite {

namespace T = ::tflite;

namespace {

// TFLite input indices (lstm_shared.h, kernels/unidirectional_sequence_lstm.cc).
constexpr int kInput = 0;
constexpr int kInputWeights = 1;      // 1..4: to the input, forget, cell, output gates
constexpr int kRecurrentWeights = 5;  // 5..8
constexpr int kPeephole = 9;          // 9..11
constexpr int kBias = 12;             // 12..15
constexpr int kProjectionWeights = 16;  // 16, and its bias 17
constexpr int kOutputState = 18, kCellState = 19;
constexpr int kLayerNorm = 20;        // 20..23
// The integer kernel's intermediate tensors: 0-3 carry the gates' scales before layer
// norm (used only with layer norm), 4 carries o * tanh(c)'s quantization.
constexpr int kHiddenIntermediate = 4;

// The name of input k for a message; the index comes from the file, so it is checked.
std::string tensor_name(OpSite& s, int k) {
  const int32_t index = s.op->inputs()->Get(static_cast<flatbuffers::uoffset_t>(k));
  const auto* tensors = s.cx.subgraph->tensors();
  if (!tensors || index < 0 || static_cast<uint32_t>(index) >= tensors->size())
    return "tensor " + std::to_string(index) + ", outside the subgraph's tensors";
  const auto* t = tensors->Get(static_cast<flatbuffers::uoffset_t>(index));
  return t && t->name() ? t->name()->str() : "tensor " + std::to_string(index);
}

Status refuse_present(OpSite& s, int first, int last, const std::string& what) {
  for (int k = first; k <= last; ++k)
    if (s.has_input(k))
      return s.fail(what + " (input " + std::to_string(k) + " '" + tensor_name(s, k) + "') are not supported");
  return Status::Ok();
}

bool o_time_major(OpSite& s) {
  const auto* o = s.op->builtin_options_as_UnidirectionalSequenceLSTMOptions();
  return o && o->time_major();
}

Result<std::string> lstm_activation(OpSite& s, T::ActivationFunctionType a, bool integer) {
  switch (a) {
    case T::ActivationFunctionType_TANH: return std::string("tanh");
    case T::ActivationFunctionType_RELU: if (!integer) return std::string("relu"); break;
    case T::ActivationFunctionType_RELU6: if (!integer) return std::string("relu6"); break;
    case T::ActivationFunctionType_RELU_N1_TO_1: if (!integer) return std::string("relu_n1_to_1"); break;
    default: break;
  }
  return s.fail(std::string("activation ") + T::EnumNameActivationFunctionType(a) + " is not supported" +
                (integer ? " by the integer LSTM (tanh only)" : " (tanh, relu, relu6, relu_n1_to_1)"));
}

// TFLite input indices of one direction's LSTM: UNIDIRECTIONAL_SEQUENCE_LSTM's, and the
// forward and backward halves of BIDIRECTIONAL_SEQUENCE_LSTM's 48 (bidirectional_sequence_lstm.cc).
struct Direction {
  int input_weights, recurrent_weights, peephole, bias, projection, output_state, cell_state;
};
constexpr Direction kUnidirectional{kInputWeights, kRecurrentWeights, kPeephole, kBias, kProjectionWeights,
                                    kOutputState, kCellState};
constexpr Direction kForward{1, 5, 9, 12, 16, 35, 36};
constexpr Direction kBackward{18, 22, 26, 29, 33, 37, 38};

// The hidden state's width (TFLite's n_output): the recurrent weights' columns, which the
// projection's rows must match when there is one.
Result<int64_t> lstm_outputs(OpSite& s, const Direction& d) {
  TS_ASSIGN_OR_RETURN(TensorId r_out, s.input(d.recurrent_weights + 3));
  const Tensor& r = s.cx.graph.tensor(r_out);
  if (r.shape.size() != 2)
    return s.fail("recurrent weights (input " + std::to_string(d.recurrent_weights + 3) + " '" + r.name + "') " +
                  shape_str(r.shape) + " must have rank 2 ([cells, outputs])");
  return r.shape[1];
}

// The scale of the integer form's intermediate tensor k, which must have one scale.
Result<double> intermediate_scale(OpSite& s, int k) {
  const int32_t index = s.op->intermediates()->Get(static_cast<flatbuffers::uoffset_t>(k));
  if (index < 0 || index >= s.cx.num_tensors)
    return s.fail("intermediate tensor index " + std::to_string(index) + " is out of range");
  const auto* t = s.cx.subgraph->tensors()->Get(index);
  const auto* q = t ? t->quantization() : nullptr;
  float scale = 0.0f;
  if (q && q->scale() && q->scale()->size() == 1) std::memcpy(&scale, q->scale()->Data(), sizeof scale);
  if (!(scale > 0.0f) || !std::isfinite(scale))
    return s.fail("intermediate tensor " + std::to_string(index) + " (the " + lstm::kGateName[k] +
                  " gate's, layer norm) needs one positive scale");
  return double{scale};
}

// The hybrid form's weights (gates, peephole, projection): TFLite's hybrid kernel reads
// one scale per weight tensor and no zero point.
Status check_hybrid_weights(OpSite& s, const std::vector<TensorId>& ins) {
  const Graph& g = s.cx.graph;
  for (size_t i = 1; i < ins.size(); ++i) {
    if (ins[i] == kNoTensor || i == lstm::kHidden || i == lstm::kCell) continue;
    const Tensor& t = g.tensor(ins[i]);
    if (t.dtype == DType::i8 && (t.quant.scale.size() != 1 || t.quant.zero_point_at(0) != 0))
      return s.fail("hybrid LSTM weights '" + t.name + "' need one quantization scale and zero point 0 (per-tensor)");
  }
  return Status::Ok();
}

// The lstm node's inputs for direction d (x given): the gate weights and biases, the
// peephole weights and projection when present, the layer-norm coefficients from TFLite
// input `layer_norm` on (-1: none), and the two state tensors, which must be variable
// tensors of batch x outputs (hidden) and batch x cells (cell) values.
Result<std::vector<TensorId>> direction_inputs(OpSite& s, const Direction& d, TensorId x, int64_t batch, int64_t cells,
                                               int64_t outputs, int layer_norm = -1) {
  Graph& g = s.cx.graph;
  std::vector<TensorId> ins(lstm::kNumInputs, kNoTensor);
  ins[lstm::kX] = x;
  for (int k = 0; k < 4; ++k) {  // TFLite's gate order is lstm's: input, forget, cell, output
    const int from[3] = {d.input_weights + k, d.recurrent_weights + k, d.bias + k};
    const size_t to[3] = {lstm::weights(k), lstm::recurrent(k), lstm::bias(k)};
    for (int j = 0; j < 3; ++j) {
      if (!s.has_input(from[j])) continue;
      TS_ASSIGN_OR_RETURN(ins[to[j]], s.input(from[j]));
    }
  }
  // Present all together or not at all, as the interpreter checks (the input gate's only
  // with an input gate).
  const bool cifg = !s.has_input(d.input_weights);
  auto missing = [&](int first, const char* what, int count, int skip_when_cifg) -> Status {
    const int anchor = first + 1;  // the forget gate's decides
    for (int k = 0; k < count; ++k) {
      const int idx = first + k;
      if (idx == anchor) continue;
      const bool want = s.has_input(anchor) && !(k == skip_when_cifg && cifg);
      if (s.has_input(idx) && !s.has_input(anchor))
        return s.fail(std::string(what) + " (input " + std::to_string(idx) + " '" + tensor_name(s, idx) +
                      "') are given without the forget gate's (input " + std::to_string(anchor) + ")");
      if (s.has_input(idx) && !want)
        return s.fail(std::string("the input gate's ") + what + " (input " + std::to_string(idx) + " '" +
                      tensor_name(s, idx) + "') are given, but the LSTM has no input gate (CIFG)");
      if (!s.has_input(idx) && want) {
        const char* gate = count == 3 ? (k == 0 ? "input" : "output") : lstm::kGateName[k];
        return s.fail(std::string("the ") + gate + " gate's " + what + " (input " + std::to_string(idx) + ") are missing");
      }
    }
    return Status::Ok();
  };
  TS_RETURN_IF_ERROR(missing(d.peephole, "peephole weights", 3, 0));
  if (layer_norm >= 0) TS_RETURN_IF_ERROR(missing(layer_norm, "layer-norm coefficients", 4, 0));
  if (s.has_input(d.projection + 1) && !s.has_input(d.projection))
    return s.fail("the projection bias (input " + std::to_string(d.projection + 1) + " '" + tensor_name(s, d.projection + 1) +
                  "') is given without projection weights (input " + std::to_string(d.projection) + ")");
  // Peephole weights: TFLite's order is input, forget, output.
  const int peep_gate[3] = {lstm::kInputGate, lstm::kForgetGate, lstm::kOutputGate};
  for (int k = 0; k < 3; ++k)
    if (s.has_input(d.peephole + k)) {
      TS_ASSIGN_OR_RETURN(ins[lstm::peephole(peep_gate[k])], s.input(d.peephole + k));
    }
  for (int k = 0; k < 2; ++k)
    if (s.has_input(d.projection + k)) {
      TS_ASSIGN_OR_RETURN(ins[k == 0 ? lstm::kProjectionWeights : lstm::kProjectionBias], s.input(d.projection + k));
    }
  if (layer_norm >= 0)
    for (int k = 0; k < 4; ++k)
      if (s.has_input(layer_norm + k)) {
        TS_ASSIGN_OR_RETURN(ins[lstm::layer_norm(k)], s.input(layer_norm + k));
      }
  for (int k = 0; k < 2; ++k) {
    const int idx = k == 0 ? d.output_state : d.cell_state;
    const char* what = k == 0 ? "output (hidden) state" : "cell state";
    if (!s.has_input(idx)) return s.fail(std::string("the ") + what + " (input " + std::to_string(idx) + ") is missing");
    TensorId& slot = ins[k == 0 ? lstm::kHidden : lstm::kCell];
    TS_ASSIGN_OR_RETURN(slot, s.input(idx));
    const Tensor& st = g.tensor(slot);
    if (st.role != Role::state)
      return s.fail(std::string("the ") + what + " (input " + std::to_string(idx) + " '" + st.name +
                    "') must be a variable tensor");
    // Batch rows x outputs / cells values (TFLite accepts any shape of that size).
    const int64_t width = k == 0 ? outputs : cells;
    if (st.elements() != batch * width)
      return s.fail(std::string("the ") + what + " (input " + std::to_string(idx) + " '" + st.name + "') " +
                    shape_str(st.shape) + " must hold batch " + std::to_string(batch) + " x " + std::to_string(width) +
                    (k == 0 ? " outputs" : " cells") + " = " + std::to_string(batch * width) + " values");
  }
  return ins;
}

}  // namespace

Status build_unidirectional_sequence_lstm(OpSite& s) {
  if (s.num_inputs() != 20 && s.num_inputs() != 24)
    return s.fail("has " + std::to_string(s.num_inputs()) + " inputs, expected 24 (or 20)");
  if (s.num_outputs() != 1) return s.fail("has " + std::to_string(s.num_outputs()) + " outputs, expected 1");
  // The interpreter uses layer norm when the forget gate's coefficients are there (and
  // ignores the others otherwise; Tessera refuses them then, in shape inference).
  const bool layer_norm = s.num_inputs() == 24 && s.has_input(kLayerNorm + 1);
  if (s.num_inputs() == 24 && !layer_norm)
    TS_RETURN_IF_ERROR(refuse_present(s, kLayerNorm, kLayerNorm + 3, "layer-norm coefficients without the forget gate's"));
  Graph& g = s.cx.graph;
  TS_ASSIGN_OR_RETURN(TensorId x, s.input(kInput));
  TS_ASSIGN_OR_RETURN(TensorId w_out, s.input(kInputWeights + 3));
  {
    // References into the graph's tensors last only until the next tensor is created.
    const Tensor &xt = g.tensor(x), &wt = g.tensor(w_out);
    if (xt.dtype == DType::f32 && wt.dtype != DType::f32 && wt.dtype != DType::i8)
      return s.fail("hybrid LSTM (f32 input '" + xt.name + "' with " + dtype_name(wt.dtype) + " weights '" + wt.name +
                    "') is not supported (int8 weights only)");
    if (xt.dtype != DType::f32 && xt.dtype != DType::i8)
      return s.fail("input '" + xt.name + "' is " + dtype_name(xt.dtype) + ": only f32 and int8 (8x8_16) LSTMs are supported");
    if (xt.shape.size() != 3)
      return s.fail("input 0 '" + xt.name + "' " + shape_str(xt.shape) +
                    " must have rank 3 ([batch, time, features], or [time, batch, features] when time-major)");
  }
  const bool integer = g.tensor(x).dtype == DType::i8;
  const bool hybrid = !integer && g.tensor(w_out).dtype == DType::i8;
  const int64_t batch = g.tensor(x).shape[o_time_major(s) ? 1 : 0];
  const int64_t cells = g.tensor(w_out).shape.empty() ? 0 : g.tensor(w_out).shape[0];
  TS_ASSIGN_OR_RETURN(const int64_t outputs, lstm_outputs(s, kUnidirectional));

  TS_ASSIGN_OR_RETURN(std::vector<TensorId> ins,
                      direction_inputs(s, kUnidirectional, x, batch, cells, outputs, layer_norm ? kLayerNorm : -1));
  TS_ASSIGN_OR_RETURN(TensorId y, s.output(0));

  const auto* o = s.op->builtin_options_as_UnidirectionalSequenceLSTMOptions();
  const auto act = o ? o->fused_activation_function() : T::ActivationFunctionType_NONE;
  TS_ASSIGN_OR_RETURN(std::string activation, lstm_activation(s, act, integer));
  const float cell_clip = o ? o->cell_clip() : 0.0f;
  if (!(cell_clip >= 0.0f) || !std::isfinite(cell_clip)) return s.fail("cell_clip " + std::to_string(cell_clip) + " is not >= 0");
  const float proj_clip = o ? o->proj_clip() : 0.0f;
  if (!(proj_clip >= 0.0f) || !std::isfinite(proj_clip)) return s.fail("proj_clip " + std::to_string(proj_clip) + " is not >= 0");
  AttrMap attrs = {{"activation", activation},
                   {"cell_clip", double{cell_clip}},
                   {"proj_clip", double{proj_clip}},
                   {"time_major", int64_t{o && o->time_major() ? 1 : 0}}};
  if (hybrid) {
    // TFLite's hybrid kernel reads one scale per weight tensor and no zero point.
    attrs["hybrid_inputs"] = std::string(o && o->asymmetric_quantize_inputs() ? "asymmetric" : "symmetric");
    TS_RETURN_IF_ERROR(check_hybrid_weights(s, ins));
  }

  if (integer) {
    // The interpreter requires the five intermediate tensors of the integer form; the last
    // carries o * tanh(c)'s scale and zero point.
    const auto* im = s.op->intermediates();
    if (!im || im->size() != 5)
      return s.fail("the integer LSTM needs 5 intermediate tensors, the operator has " +
                    std::to_string(im ? im->size() : 0));
    const int32_t hi = im->Get(kHiddenIntermediate);
    if (hi < 0 || hi >= s.cx.num_tensors) return s.fail("intermediate tensor index " + std::to_string(hi) + " is out of range");
    const auto* ht = s.cx.subgraph->tensors()->Get(hi);
    const auto* hq = ht ? ht->quantization() : nullptr;
    if (!hq || !hq->scale() || hq->scale()->size() != 1 || !hq->zero_point() || hq->zero_point()->size() != 1)
      return s.fail("intermediate tensor " + std::to_string(hi) + " (hidden) needs one scale and zero point");
    // Copied out: the verifier does not align the 8-byte zero points (model_reader.cpp).
    float hs;
    int64_t hz;
    std::memcpy(&hs, hq->scale()->Data(), sizeof hs);
    std::memcpy(&hz, hq->zero_point()->Data(), sizeof hz);
    if (!(hs > 0.0f) || !std::isfinite(hs) || hz < -128 || hz > 127)
      return s.fail("intermediate tensor " + std::to_string(hi) + " (hidden) has scale " + std::to_string(hs) +
                    " and zero point " + std::to_string(hz) + "; needs a positive scale and an int8 zero point");
    attrs["hidden_scale"] = double{hs};
    attrs["hidden_zero_point"] = hz;
    if (layer_norm) {
      // The gates' accumulators before the normalization: intermediates 0-3 (the input
      // gate's is read only with an input gate).
      std::vector<double> scales(4, 1.0);
      const bool cifg = ins[lstm::weights(lstm::kInputGate)] == kNoTensor;
      for (int k = cifg ? 1 : 0; k < 4; ++k) {
        TS_ASSIGN_OR_RETURN(scales[static_cast<size_t>(k)], intermediate_scale(s, k));
      }
      attrs["gate_scales"] = scales;
    }
    std::vector<TensorId> quantized = {x, ins[lstm::kHidden], ins[lstm::kCell]};
    for (int k = 0; k < 4; ++k)
      for (size_t i : {lstm::weights(k), lstm::recurrent(k), lstm::peephole(k), lstm::layer_norm(k)})
        if (ins[i] != kNoTensor) quantized.push_back(ins[i]);
    if (ins[lstm::kProjectionWeights] != kNoTensor) quantized.push_back(ins[lstm::kProjectionWeights]);
    for (TensorId id : quantized)
      if (g.tensor(id).quant.scale.size() != 1)
        return s.fail("tensor '" + g.tensor(id).name + "' needs one quantization scale and zero point (per-tensor)");
    if (g.tensor(y).quant.scale.size() != 1) return s.fail("output '" + g.tensor(y).name + "' needs per-tensor quantization");
    // The cell state's scale must be a power of two 2^-15 .. 2^-9 (the interpreter's
    // CheckedLog2, and the integer bits its tanh handles); its zero point 0.
    const Tensor& cs = g.tensor(ins[lstm::kCell]);
    const float log2 = std::log(cs.quant.scale[0]) * (1.0f / std::log(2.0f));
    if (!(std::fabs(log2 - std::round(log2)) < 1e-3f) || std::round(log2) < -15 || std::round(log2) > -9 ||
        cs.quant.zero_point[0] != 0)
      return s.fail("the cell state (input 19 '" + cs.name + "') has scale " + std::to_string(cs.quant.scale[0]) +
                    " and zero point " + std::to_string(cs.quant.zero_point[0]) +
                    "; the integer LSTM needs a power of two 2^-15 .. 2^-9 and zero point 0");
  }
  const Tensor h = g.tensor(ins[lstm::kHidden]), c = g.tensor(ins[lstm::kCell]);  // copies: tensors are added below
  const std::string base = g.tensor(y).name;
  const TensorId h2 = s.cx.temp_tensor(base + "/hidden_state", h.shape, h.dtype, h.quant);
  const TensorId c2 = s.cx.temp_tensor(base + "/cell_state", c.shape, c.dtype, c.quant);
  return s.add(OpKind::lstm, ins, {y, h2, c2}, std::move(attrs));
}


// BIDIRECTIONAL_SEQUENCE_LSTM (f32): two lstm nodes over the same input, the backward one
// with reverse = 1 (its y[t] is its state after reading steps T-1 .. t, as TFLite's
// bw_output), and with merge_outputs their outputs joined along the last axis. Peephole
// weights and projection as in the unidirectional LSTM, f32 or hybrid (int8 weights).
// Refused by name: auxiliary inputs (39-47); TFLite has no integer form.
Status build_bidirectional_sequence_lstm(OpSite& s) {
  if (s.num_inputs() != 48) return s.fail("has " + std::to_string(s.num_inputs()) + " inputs, expected 48");
  const auto* o = s.op->builtin_options_as_BidirectionalSequenceLSTMOptions();
  const bool merge = o && o->merge_outputs();
  const bool time_major = o ? o->time_major() : true;  // the schema's default
  // The interpreter's merged output of a batch-major sequence is not its two outputs joined
  // (from the second batch row on, both halves differ): refused rather than guessed.
  if (merge && !time_major)
    return s.fail("merge_outputs with a batch-major (time_major = false) sequence is not supported");
  if (s.num_outputs() != (merge ? 1 : 2))
    return s.fail("has " + std::to_string(s.num_outputs()) + " outputs, expected " + (merge ? "1 (merge_outputs)" : "2"));
  TS_RETURN_IF_ERROR(refuse_present(s, 39, 47, "auxiliary inputs and their weights"));
  Graph& g = s.cx.graph;
  TS_ASSIGN_OR_RETURN(TensorId x, s.input(kInput));
  int64_t cells[2] = {0, 0}, outputs[2] = {0, 0};
  bool hybrid[2] = {false, false};
  for (int dir = 0; dir < 2; ++dir) {
    const Direction& d = dir == 0 ? kForward : kBackward;
    TS_ASSIGN_OR_RETURN(TensorId w_out, s.input(d.input_weights + 3));
    const Tensor &xt = g.tensor(x), &wt = g.tensor(w_out);
    if (xt.dtype != DType::f32)
      return s.fail("input '" + xt.name + "' is " + dtype_name(xt.dtype) + ": only the f32 bidirectional LSTM is supported");
    if (wt.dtype != DType::f32 && wt.dtype != DType::i8)
      return s.fail("hybrid LSTM (f32 input '" + xt.name + "' with " + dtype_name(wt.dtype) + " weights '" + wt.name +
                    "') is not supported (int8 weights only)");
    hybrid[dir] = wt.dtype == DType::i8;
    if (xt.shape.size() != 3)
      return s.fail("input 0 '" + xt.name + "' " + shape_str(xt.shape) +
                    " must have rank 3 ([time, batch, features] when time-major, else [batch, time, features])");
    cells[dir] = wt.shape.empty() ? 0 : wt.shape[0];
    TS_ASSIGN_OR_RETURN(outputs[dir], lstm_outputs(s, d));
  }
  // The interpreter checks both directions' weights against one cell count.
  if (cells[0] != cells[1])
    return s.fail("the forward and backward LSTMs have " + std::to_string(cells[0]) + " and " + std::to_string(cells[1]) +
                  " cells; the operator needs the same number");
  const int64_t batch = g.tensor(x).shape[time_major ? 1 : 0];
  const auto act = o ? o->fused_activation_function() : T::ActivationFunctionType_NONE;
  TS_ASSIGN_OR_RETURN(std::string activation, lstm_activation(s, act, false));
  const float cell_clip = o ? o->cell_clip() : 0.0f;
  if (!(cell_clip >= 0.0f) || !std::isfinite(cell_clip)) return s.fail("cell_clip " + std::to_string(cell_clip) + " is not >= 0");
  const float proj_clip = o ? o->proj_clip() : 0.0f;
  if (!(proj_clip >= 0.0f) || !std::isfinite(proj_clip)) return s.fail("proj_clip " + std::to_string(proj_clip) + " is not >= 0");

  TS_ASSIGN_OR_RETURN(TensorId y0, s.output(0));
  TensorId ys[2];
  if (merge) {
    const Tensor out = g.tensor(y0);  // a copy: tensors are added below
    Shape shape = g.tensor(x).shape;
    for (int dir = 0; dir < 2; ++dir) {
      shape[2] = outputs[dir];
      ys[dir] = s.cx.temp_tensor(out.name + (dir == 0 ? "/forward" : "/backward"), shape, DType::f32, {});
    }
  } else {
    ys[0] = y0;
    TS_ASSIGN_OR_RETURN(ys[1], s.output(1));
  }
  for (int dir = 0; dir < 2; ++dir) {
    TS_ASSIGN_OR_RETURN(std::vector<TensorId> ins,
                        direction_inputs(s, dir == 0 ? kForward : kBackward, x, batch, cells[dir], outputs[dir]));
    const Tensor h = g.tensor(ins[lstm::kHidden]), c = g.tensor(ins[lstm::kCell]);  // copies: tensors are added below
    const std::string base = g.tensor(ys[dir]).name;
    const TensorId h2 = s.cx.temp_tensor(base + "/hidden_state", h.shape, h.dtype, h.quant);
    const TensorId c2 = s.cx.temp_tensor(base + "/cell_state", c.shape, c.dtype, c.quant);
    AttrMap attrs = {{"activation", activation},
                     {"cell_clip", double{cell_clip}},
                     {"proj_clip", double{proj_clip}},
                     {"time_major", int64_t{time_major ? 1 : 0}},
                     {"reverse", int64_t{dir}}};
    if (hybrid[dir]) {
      attrs["hybrid_inputs"] = std::string(o && o->asymmetric_quantize_inputs() ? "asymmetric" : "symmetric");
      TS_RETURN_IF_ERROR(check_hybrid_weights(s, ins));
    }
    TS_RETURN_IF_ERROR(s.add(OpKind::lstm, ins, {ys[dir], h2, c2}, std::move(attrs), dir == 0 ? "/forward" : "/backward"));
  }
  if (merge) return s.add(OpKind::concat, {ys[0], ys[1]}, {y0}, {{"axis", int64_t{2}}}, "/merge");
  return Status::Ok();
}

}  // namespace tessera::tflite
