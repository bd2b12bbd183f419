// TFLite recurrent operators -> Tessera nodes: UNIDIRECTIONAL_SEQUENCE_LSTM -> lstm;
// BIDIRECTIONAL_SEQUENCE_LSTM -> two lstm (the second with reverse = 1) and, when it merges
// its outputs, a concat (at the end of the file).
//
// The TFLite operator has 24 inputs (20 in old files): x; input-to-gate weights 1-4 and
// recurrent weights 5-8 (gates input, forget, cell, output; the input gate's may be
// absent: CIFG); peephole weights 9-11; gate biases 12-15; projection weights and bias
// 16-17; the hidden ("output") and cell state 18-19, variable tensors that keep their
// values between invocations; layer-norm coefficients 20-23. Tessera runs the f32 form and
// the integer 8x8_16 form (i8 x / weights / hidden state, i32 biases, i16 cell state), with
// or without the input gate; peephole, projection, layer norm, the hybrid form (f32 x with
// i8 weights) and int16 activations are refused, naming the operator and the tensor.
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
constexpr int kProjectionWeights = 16, kProjectionBias = 17;
constexpr int kOutputState = 18, kCellState = 19;
constexpr int kLayerNorm = 20;        // 20..23
// The integer kernel's intermediate tensor that carries o * tanh(c)'s quantization.
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

// The lstm node's inputs for direction d (x given): the gate weights and biases, and the
// two state tensors, which must be variable tensors of batch x cells values.
Result<std::vector<TensorId>> direction_inputs(OpSite& s, const Direction& d, TensorId x, int64_t batch, int64_t cells) {
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
    // Batch rows x cells values (TFLite accepts any shape of that size).
    if (st.elements() != batch * cells)
      return s.fail(std::string("the ") + what + " (input " + std::to_string(idx) + " '" + st.name + "') " +
                    shape_str(st.shape) + " must hold batch " + std::to_string(batch) + " x " + std::to_string(cells) +
                    " cells = " + std::to_string(batch * cells) + " values");
  }
  return ins;
}

}  // namespace

Status build_unidirectional_sequence_lstm(OpSite& s) {
  if (s.num_inputs() != 20 && s.num_inputs() != 24)
    return s.fail("has " + std::to_string(s.num_inputs()) + " inputs, expected 24 (or 20)");
  if (s.num_outputs() != 1) return s.fail("has " + std::to_string(s.num_outputs()) + " outputs, expected 1");
  TS_RETURN_IF_ERROR(refuse_present(s, kPeephole, kPeephole + 2, "peephole weights"));
  TS_RETURN_IF_ERROR(refuse_present(s, kProjectionWeights, kProjectionBias, "projection weights and bias"));
  if (s.num_inputs() == 24) TS_RETURN_IF_ERROR(refuse_present(s, kLayerNorm, kLayerNorm + 3, "layer-norm coefficients"));
  Graph& g = s.cx.graph;
  TS_ASSIGN_OR_RETURN(TensorId x, s.input(kInput));
  TS_ASSIGN_OR_RETURN(TensorId w_out, s.input(kInputWeights + 3));
  {
    // References into the graph's tensors last only until the next tensor is created.
    const Tensor &xt = g.tensor(x), &wt = g.tensor(w_out);
    if (xt.dtype == DType::f32 && wt.dtype != DType::f32)
      return s.fail("hybrid LSTM (f32 input '" + xt.name + "' with " + dtype_name(wt.dtype) + " weights '" + wt.name +
                    "') is not supported");
    if (xt.dtype != DType::f32 && xt.dtype != DType::i8)
      return s.fail("input '" + xt.name + "' is " + dtype_name(xt.dtype) + ": only f32 and int8 (8x8_16) LSTMs are supported");
    if (xt.shape.size() != 3)
      return s.fail("input 0 '" + xt.name + "' " + shape_str(xt.shape) +
                    " must have rank 3 ([batch, time, features], or [time, batch, features] when time-major)");
  }
  const bool integer = g.tensor(x).dtype == DType::i8;
  const int64_t batch = g.tensor(x).shape[o_time_major(s) ? 1 : 0];
  const int64_t cells = g.tensor(w_out).shape.empty() ? 0 : g.tensor(w_out).shape[0];

  TS_ASSIGN_OR_RETURN(std::vector<TensorId> ins, direction_inputs(s, kUnidirectional, x, batch, cells));
  TS_ASSIGN_OR_RETURN(TensorId y, s.output(0));

  const auto* o = s.op->builtin_options_as_UnidirectionalSequenceLSTMOptions();
  const auto act = o ? o->fused_activation_function() : T::ActivationFunctionType_NONE;
  TS_ASSIGN_OR_RETURN(std::string activation, lstm_activation(s, act, integer));
  const float cell_clip = o ? o->cell_clip() : 0.0f;
  if (!(cell_clip >= 0.0f) || !std::isfinite(cell_clip)) return s.fail("cell_clip " + std::to_string(cell_clip) + " is not >= 0");
  AttrMap attrs = {{"activation", activation},
                   {"cell_clip", double{cell_clip}},
                   {"time_major", int64_t{o && o->time_major() ? 1 : 0}}};

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
    std::vector<TensorId> quantized = {x, ins[lstm::kHidden], ins[lstm::kCell]};
    for (int k = 0; k < 4; ++k)
      for (size_t i : {lstm::weights(k), lstm::recurrent(k)})
        if (ins[i] != kNoTensor) quantized.push_back(ins[i]);
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
// bw_output), and with merge_outputs their outputs joined along the last axis. Refused by
// name: auxiliary inputs (39-47), peephole weights, projection, the hybrid form (TFLite
// has no integer one).
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
  for (const Direction* d : {&kForward, &kBackward}) {
    TS_RETURN_IF_ERROR(refuse_present(s, d->peephole, d->peephole + 2, "peephole weights"));
    TS_RETURN_IF_ERROR(refuse_present(s, d->projection, d->projection + 1, "projection weights and bias"));
  }
  Graph& g = s.cx.graph;
  TS_ASSIGN_OR_RETURN(TensorId x, s.input(kInput));
  int64_t cells[2] = {0, 0};
  for (int dir = 0; dir < 2; ++dir) {
    const Direction& d = dir == 0 ? kForward : kBackward;
    TS_ASSIGN_OR_RETURN(TensorId w_out, s.input(d.input_weights + 3));
    const Tensor &xt = g.tensor(x), &wt = g.tensor(w_out);
    if (xt.dtype != DType::f32)
      return s.fail("input '" + xt.name + "' is " + dtype_name(xt.dtype) + ": only the f32 bidirectional LSTM is supported");
    if (wt.dtype != DType::f32)
      return s.fail("hybrid LSTM (f32 input '" + xt.name + "' with " + dtype_name(wt.dtype) + " weights '" + wt.name +
                    "') is not supported");
    if (xt.shape.size() != 3)
      return s.fail("input 0 '" + xt.name + "' " + shape_str(xt.shape) +
                    " must have rank 3 ([time, batch, features] when time-major, else [batch, time, features])");
    cells[dir] = wt.shape.empty() ? 0 : wt.shape[0];
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

  TS_ASSIGN_OR_RETURN(TensorId y0, s.output(0));
  TensorId ys[2];
  if (merge) {
    const Tensor out = g.tensor(y0);  // a copy: tensors are added below
    Shape shape = g.tensor(x).shape;
    for (int dir = 0; dir < 2; ++dir) {
      shape[2] = cells[dir];
      ys[dir] = s.cx.temp_tensor(out.name + (dir == 0 ? "/forward" : "/backward"), shape, DType::f32, {});
    }
  } else {
    ys[0] = y0;
    TS_ASSIGN_OR_RETURN(ys[1], s.output(1));
  }
  for (int dir = 0; dir < 2; ++dir) {
    TS_ASSIGN_OR_RETURN(std::vector<TensorId> ins, direction_inputs(s, dir == 0 ? kForward : kBackward, x, batch, cells[dir]));
    const Tensor h = g.tensor(ins[lstm::kHidden]), c = g.tensor(ins[lstm::kCell]);  // copies: tensors are added below
    const std::string base = g.tensor(ys[dir]).name;
    const TensorId h2 = s.cx.temp_tensor(base + "/hidden_state", h.shape, h.dtype, h.quant);
    const TensorId c2 = s.cx.temp_tensor(base + "/cell_state", c.shape, c.dtype, c.quant);
    AttrMap attrs = {{"activation", activation},
                     {"cell_clip", double{cell_clip}},
                     {"time_major", int64_t{time_major ? 1 : 0}},
                     {"reverse", int64_t{dir}}};
    TS_RETURN_IF_ERROR(s.add(OpKind::lstm, ins, {ys[dir], h2, c2}, std::move(attrs), dir == 0 ? "/forward" : "/backward"));
  }
  if (merge) return s.add(OpKind::concat, {ys[0], ys[1]}, {y0}, {{"axis", int64_t{2}}}, "/merge");
  return Status::Ok();
}

}  // namespace tessera::tflite
