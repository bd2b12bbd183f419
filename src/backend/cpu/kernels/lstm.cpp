// lstm (ops.def): a one-layer LSTM over a sequence, as the TFLite interpreter's builtin
// UNIDIRECTIONAL_SEQUENCE_LSTM computes it (lstm_eval.cc: EvalFloat, EvalInteger8x8_16),
// without peephole, projection or layer norm. Batch rows are independent; every step reads
// the state the previous one wrote. The state lives in outputs 1 and 2, which share the
// storage of the state inputs 10 and 11 (Role::state, persistent across runs).
//
// f32, per step and batch row: for each gate, g = b + (w . x) + (r . h) with each dot
// product summed on its own, then sigmoid (the cell gate: `activation`); c = f * c, then
// c += g * i (CIFG: i = 1 - f), clipped to +-cell_clip; h = o * activation(c).
//
// Integer (8x8_16): x, w, r, h and y i8, biases i32, c i16 with scale 2^cell_shift.
// Prepared once per node (TFLite's Prepare, PopulateQuantizedLstmParams8x8_16):
//  * gate g's accumulators are rescaled to Q3.12 by w_scale * x_scale / 2^-12 and
//    r_scale * h_scale / 2^-12, each product and quotient in float, then as a Q31
//    multiplier (QuantizeMultiplier);
//  * the zero points fold into the biases: bias_x = b - x_zp * rowsum(w), bias_h =
//    -h_zp * rowsum(r) (int32);
//  * o * tanh(c) (Q0.15 * Q0.15) goes to h by 2^-15 / hidden_scale * 2^-15 (in double,
//    stored as float) with hidden_zero_point; hidden_scale is TFLite's intermediate
//    tensor 4 (the converters give it h's own parameters);
//  * cell_clip becomes int16 as cell_clip / c_scale, clamped, truncated.
// Per step: gate = clamp16(M_x(bias_x + x . w)); gate = clamp16(M_h(bias_h + h . r) + gate);
// sigmoid on Q3.12 (tanh on Q3.12 for the cell gate) -> Q0.15 (gemmlowp fixed point,
// fixed_point16.h); c = rdivpot(f * c, 15); c = sat16(c + rdivpot(i * g, 30 + cell_shift))
// (CIFG: i = 32767 - f); clip; h = clamp8(M_hidden(o * tanh_{15 + cell_shift}(c)) -
// hidden_zero_point) (the interpreter subtracts the zero point there: PortableCwiseMul).
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backend/cpu/kernels/fixed_point16.h"
#include "backend/cpu/kernels/kernel_util.h"
#include "backend/cpu/kernels/quant_math.h"
#include "ops/lstm_inputs.h"

namespace tessera::cpu {

namespace {

using lstm::bias;
using lstm::recurrent;
using lstm::weights;
using lstm::kX;
constexpr size_t kH = lstm::kHidden, kC = lstm::kCell;
enum Gate { kInput = lstm::kInputGate, kForget = lstm::kForgetGate, kCell = lstm::kCellGate, kOutput = lstm::kOutputGate };

struct Dims {
  int64_t batch = 0, steps = 0, features = 0, cells = 0;
  bool time_major = false;
  bool reverse = false;  // steps from the last to the first
  bool cifg = false;  // no input gate: i = 1 - f
  // The step taken s-th.
  int64_t step(int64_t s) const { return reverse ? steps - 1 - s : s; }
  // Row of x / y holding (batch row b, step t).
  int64_t row(int64_t b, int64_t t) const { return time_major ? t * batch + b : b * steps + t; }
};

Dims dims_of(const Graph& g, const Node& n) {
  const Shape& xs = g.tensor(n.inputs[kX]).shape;
  Dims d;
  d.time_major = n.get(attr::time_major) != 0;
  d.reverse = n.get(attr::reverse) != 0;
  d.batch = d.time_major ? xs[1] : xs[0];
  d.steps = d.time_major ? xs[0] : xs[1];
  d.features = xs[2];
  d.cells = g.tensor(n.inputs[weights(kOutput)]).shape[0];
  d.cifg = n.inputs.size() <= weights(kInput) || n.inputs[weights(kInput)] == kNoTensor;
  return d;
}

// The state outputs share the state inputs' storage; copies in case a caller bound them apart.
Status state_in_place(KernelContext& c) {
  if (c.out.size() != 3)
    return kernel_error(c.n, "needs 3 outputs (the sequence and the updated state), has " +
                                 std::to_string(c.out.size()));
  for (size_t k = 0; k < 2; ++k) {
    const TensorRef &in = c.in[kH + k], &out = c.out[1 + k];
    if (out.data != in.data) std::memcpy(out.data, in.data, static_cast<size_t>(in.elements() * dtype_size(in.dtype())));
  }
  return Status::Ok();
}

// ---- f32 ----

enum class Act { tanh, relu, relu6, relu_n1_to_1 };

Act act_of(const std::string& s) {
  if (s == "relu") return Act::relu;
  if (s == "relu6") return Act::relu6;
  if (s == "relu_n1_to_1") return Act::relu_n1_to_1;
  return Act::tanh;
}

float apply(Act a, float v) {
  switch (a) {
    case Act::relu: return std::max(0.0f, v);
    case Act::relu6: return std::min(std::max(0.0f, v), 6.0f);
    case Act::relu_n1_to_1: return std::min(std::max(-1.0f, v), 1.0f);
    case Act::tanh: break;
  }
  return std::tanh(v);
}

float sigmoid(float v) { return 1.0f / (1.0f + std::exp(-v)); }

float dot(const float* a, const float* b, int64_t n) {
  float s = 0.0f;
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

Status lstm_f32(KernelContext& c) {
  if (c.in[kX].dtype() != DType::f32)
    return kernel_error(c.n, "input 0 '" + c.in[kX].t->name + "' is " + dtype_name(c.in[kX].dtype()) +
                                 " without quantization parameters");
  const Dims d = dims_of(c.g, c.n);
  const Act act = act_of(c.n.get(attr::activation));
  const float clip = static_cast<float>(c.n.get(attr::cell_clip));
  TS_RETURN_IF_ERROR(state_in_place(c));
  const int64_t C = d.cells, I = d.features;
  const float* x = c.in[kX].as<float>();
  float* y = c.out[0].as<float>();
  float* hs = c.out[1].as<float>();
  float* cs = c.out[2].as<float>();
  thread_local std::vector<float> gate[4];  // [C] each; grows once, so runs allocate nothing
  for (auto& v : gate)
    if (v.size() < static_cast<size_t>(C)) v.resize(static_cast<size_t>(C));
  for (int64_t b = 0; b < d.batch; ++b) {
    float* h = hs + b * C;
    float* cell = cs + b * C;
    for (int64_t s = 0; s < d.steps; ++s) {
      const int64_t t = d.step(s);
      const float* xt = x + d.row(b, t) * I;
      for (int k = d.cifg ? 1 : 0; k < 4; ++k) {
        const float* w = c.in[weights(k)].as<float>();
        const float* r = c.in[recurrent(k)].as<float>();
        const float* b0 = c.in[bias(k)].as<float>();
        for (int64_t j = 0; j < C; ++j) {
          float v = b0[j];
          v += dot(w + j * I, xt, I);
          v += dot(r + j * C, h, C);
          gate[k][j] = k == kCell ? apply(act, v) : sigmoid(v);
        }
      }
      for (int64_t j = 0; j < C; ++j) {
        const float i = d.cifg ? 1.0f - gate[kForget][j] : gate[kInput][j];
        float v = gate[kForget][j] * cell[j];
        v += gate[kCell][j] * i;
        if (clip > 0.0f) v = std::min(std::max(v, -clip), clip);
        cell[j] = v;
        h[j] = gate[kOutput][j] * apply(act, v);
      }
      std::memcpy(y + d.row(b, t) * C, h, static_cast<size_t>(C) * sizeof(float));
    }
  }
  return Status::Ok();
}

// ---- integer 8x8_16 ----

// Q3.12: the gates' pre-activation format (TFLite's intermediate scale 2^-12 without layer norm).
constexpr float kGateScale = 1.0f / 4096.0f;

struct IntegerLstm : PreparedKernel {
  struct GateParams {
    std::vector<int32_t> bias_x, bias_h;  // [C]: bias and zero-point terms (see the file comment)
    q::Multiplier m_x, m_h;               // accumulator -> Q3.12
  };
  GateParams gate[4];
  q::Multiplier m_hidden;      // o * tanh(c) (Q0.30) -> h codes
  int32_t hidden_zero_point = 0;
  int cell_shift = 0;          // c scale = 2^cell_shift
  int16_t cell_clip = 0;       // 0: none
};

// int32 arithmetic as the interpreter does it, wrapping instead of overflowing (only
// absurd sizes or biases get there; real models stay far inside int32).
int32_t wrap32(int64_t v) { return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(v))); }

// Row sums of an int8 [rows, cols] matrix times `scalar`, added to `out` (TFLite's
// MatrixScalarMultiplyAccumulate).
void add_row_sums(const int8_t* m, int64_t rows, int64_t cols, int32_t scalar, std::vector<int32_t>& out) {
  for (int64_t r = 0; r < rows; ++r) {
    int64_t s = 0;
    for (int64_t k = 0; k < cols; ++k) s += m[r * cols + k];
    out[static_cast<size_t>(r)] = wrap32(out[static_cast<size_t>(r)] + int64_t{wrap32(s)} * scalar);
  }
}

// A positive finite real multiplier as TFLite's QuantizeMultiplier makes it; 0 stays 0.
Result<q::Multiplier> multiplier(float real, const std::string& what) {
  if (!std::isfinite(real) || real < 0)
    return error(StatusCode::unsupported, "the " + what + " rescaling factor " + std::to_string(real) + " is not a finite positive number");
  return q::quantize_multiplier(real);
}

// The parameters' errors name the tensor; the caller adds the node.
Status fail(const std::string& msg) { return error(StatusCode::unsupported, msg); }

// Fills `p` (reusing its vectors' storage, so that the unprepared path allocates nothing
// once warm).
Status integer_params(const Graph& g, const Node& n, IntegerLstm& p) {
  const Dims d = dims_of(g, n);
  auto per_tensor = [&](size_t k) -> Result<const Tensor*> {
    const Tensor& t = g.tensor(n.inputs[k]);
    if (t.quant.scale.size() != 1)
      return fail("input " + std::to_string(k) + " '" + t.name + "' needs one quantization scale (per-tensor)");
    return &t;
  };
  auto constant = [&](size_t k) -> Result<const uint8_t*> {
    const Tensor& t = g.tensor(n.inputs[k]);
    if (!t.data) return fail("input " + std::to_string(k) + " '" + t.name + "' must be a constant");
    return t.data->data;
  };
  TS_ASSIGN_OR_RETURN(const Tensor* x, per_tensor(kX));
  TS_ASSIGN_OR_RETURN(const Tensor* h, per_tensor(kH));
  TS_ASSIGN_OR_RETURN(const Tensor* cst, per_tensor(kC));
  const Tensor& y = g.tensor(n.outputs[0]);
  if (y.quant.scale.size() != 1) return fail("output '" + y.name + "' needs one quantization scale");
  if (cst->quant.zero_point_at(0) != 0)
    return fail("cell state '" + cst->name + "' must have zero point 0");
  p.cell_clip = 0;
  // TFLite's CheckedLog2: the cell state's scale must be a power of two.
  const float c_scale = cst->quant.scale[0];
  const float log2 = std::log(c_scale) * (1.0f / std::log(2.0f));
  const float rounded = std::round(log2);
  if (!(std::fabs(log2 - rounded) < 1e-3f))
    return fail("cell state '" + cst->name + "' scale " + std::to_string(c_scale) + " is not a power of two");
  p.cell_shift = static_cast<int>(rounded);
  // tanh(c) reads c as Q(15 + cell_shift); the interpreter handles 0..6 integer bits.
  if (15 + p.cell_shift < 0 || 15 + p.cell_shift > 6)
    return fail("cell state '" + cst->name + "' scale 2^" + std::to_string(p.cell_shift) +
                               " is outside 2^-15 .. 2^-9, which the integer LSTM supports");
  const float clip = static_cast<float>(n.get(attr::cell_clip));
  if (clip > 0.0f) p.cell_clip = static_cast<int16_t>(std::min(std::max(clip / c_scale, -32768.0f), 32767.0f));
  const float x_scale = x->quant.scale[0], h_scale = h->quant.scale[0];
  const int32_t x_zp = static_cast<int32_t>(x->quant.zero_point_at(0)), h_zp = static_cast<int32_t>(h->quant.zero_point_at(0));
  for (int k = d.cifg ? 1 : 0; k < 4; ++k) {
    TS_ASSIGN_OR_RETURN(const Tensor* w, per_tensor(weights(k)));
    TS_ASSIGN_OR_RETURN(const Tensor* r, per_tensor(recurrent(k)));
    TS_ASSIGN_OR_RETURN(const uint8_t* wd, constant(weights(k)));
    TS_ASSIGN_OR_RETURN(const uint8_t* rd, constant(recurrent(k)));
    TS_ASSIGN_OR_RETURN(const uint8_t* bd, constant(bias(k)));
    if (w->quant.zero_point_at(0) != 0 || r->quant.zero_point_at(0) != 0)
      return fail("weights '" + w->name + "' and '" + r->name + "' must have zero point 0");
    IntegerLstm::GateParams& gp = p.gate[k];
    const float eff_x = w->quant.scale[0] * x_scale / kGateScale;
    const float eff_h = r->quant.scale[0] * h_scale / kGateScale;
    TS_ASSIGN_OR_RETURN(gp.m_x, multiplier(eff_x, "input-to-gate"));
    TS_ASSIGN_OR_RETURN(gp.m_h, multiplier(eff_h, "recurrent-to-gate"));
    gp.bias_x.assign(static_cast<size_t>(d.cells), 0);
    gp.bias_h.assign(static_cast<size_t>(d.cells), 0);
    std::memcpy(gp.bias_x.data(), bd, static_cast<size_t>(d.cells) * 4);
    if (x_zp != 0) add_row_sums(reinterpret_cast<const int8_t*>(wd), d.cells, d.features, -x_zp, gp.bias_x);
    if (h_zp != 0) add_row_sums(reinterpret_cast<const int8_t*>(rd), d.cells, d.cells, -h_zp, gp.bias_h);
  }
  const float hidden_scale = static_cast<float>(n.find(attr::hidden_scale).value_or(h_scale));
  const float eff_hidden = static_cast<float>(std::pow(2.0, -15) / hidden_scale * std::pow(2.0, -15));
  TS_ASSIGN_OR_RETURN(p.m_hidden, multiplier(eff_hidden, "hidden"));
  p.hidden_zero_point = static_cast<int32_t>(n.get(attr::hidden_zero_point));
  return Status::Ok();
}

Result<std::unique_ptr<PreparedKernel>> prepare_lstm_integer(const Graph& g, const Node& n) {
  auto p = std::make_unique<IntegerLstm>();
  TS_RETURN_IF_ERROR(integer_params(g, n, *p));
  return std::unique_ptr<PreparedKernel>(std::move(p));
}

int16_t sat16(int32_t v) { return static_cast<int16_t>(std::min(std::max(v, -32768), 32767)); }

// gate[j] = sat16(M(bias[j] + v . m[j]) + gate[j]) for an int8 vector v and int8 matrix m.
void accumulate(const int8_t* v, const int8_t* m, const int32_t* bias, const q::Multiplier& mult, int64_t rows,
                int64_t cols, int16_t* gate) {
  for (int64_t j = 0; j < rows; ++j) {
    int64_t acc = bias[j];
    const int8_t* row = m + j * cols;
    for (int64_t k = 0; k < cols; ++k) acc += int32_t{v[k]} * row[k];
    gate[j] = sat16(wrap32(int64_t{q::multiply(wrap32(acc), mult)} + gate[j]));
  }
}

Status lstm_integer(KernelContext& c) {
  const Dims d = dims_of(c.g, c.n);
  thread_local IntegerLstm made;  // the unprepared path (no packed kernels): rebuilt per run
  if (!c.prepared) {
    Status st = integer_params(c.g, c.n, made);
    if (!st.ok()) return kernel_error(c.n, st.message());
  }
  const IntegerLstm& p = c.prepared ? static_cast<const IntegerLstm&>(*c.prepared) : made;
  TS_RETURN_IF_ERROR(state_in_place(c));
  const int64_t C = d.cells, I = d.features;
  const int8_t* x = c.in[kX].as<int8_t>();
  int8_t* y = c.out[0].as<int8_t>();
  int8_t* hs = c.out[1].as<int8_t>();
  int16_t* cs = c.out[2].as<int16_t>();
  thread_local std::vector<int16_t> gate[4];  // [C] each, Q0.15 after the activations
  thread_local std::vector<int8_t> h_new;     // [C]
  for (auto& v : gate)
    if (v.size() < static_cast<size_t>(C)) v.resize(static_cast<size_t>(C));
  if (h_new.size() < static_cast<size_t>(C)) h_new.resize(static_cast<size_t>(C));
  const int cell_bits = 15 + p.cell_shift;  // integer bits of c as a Q(n).(15-n) value
  for (int64_t b = 0; b < d.batch; ++b) {
    int8_t* h = hs + b * C;
    int16_t* cell = cs + b * C;
    for (int64_t s = 0; s < d.steps; ++s) {
      const int64_t t = d.step(s);
      const int8_t* xt = x + d.row(b, t) * I;
      for (int k = d.cifg ? 1 : 0; k < 4; ++k) {
        const IntegerLstm::GateParams& gp = p.gate[k];
        int16_t* gk = gate[k].data();
        std::fill(gk, gk + C, int16_t{0});
        accumulate(xt, c.in[weights(k)].as<int8_t>(), gp.bias_x.data(), gp.m_x, C, I, gk);
        accumulate(h, c.in[recurrent(k)].as<int8_t>(), gp.bias_h.data(), gp.m_h, C, C, gk);
        for (int64_t j = 0; j < C; ++j) gk[j] = k == kCell ? fx16::tanh(gk[j], 3) : fx16::logistic(gk[j], 3);
      }
      for (int64_t j = 0; j < C; ++j) {
        const int16_t f = gate[kForget][j];
        const int16_t i = d.cifg ? static_cast<int16_t>(32767 - f) : gate[kInput][j];
        const int16_t kept = static_cast<int16_t>(q::rounding_divide_by_pot(int32_t{f} * cell[j], 15));
        const int16_t added =
            static_cast<int16_t>(q::rounding_divide_by_pot(int32_t{i} * gate[kCell][j], 30 + p.cell_shift));
        int16_t v = sat16(int32_t{kept} + added);
        if (p.cell_clip > 0) v = std::min<int16_t>(std::max<int16_t>(v, static_cast<int16_t>(-p.cell_clip)), p.cell_clip);
        cell[j] = v;
        const int32_t prod = int32_t{gate[kOutput][j]} * fx16::tanh(v, cell_bits);
        const int64_t code = int64_t{q::multiply(prod, p.m_hidden)} - p.hidden_zero_point;
        h_new[static_cast<size_t>(j)] = static_cast<int8_t>(std::min<int64_t>(std::max<int64_t>(code, -128), 127));
      }
      std::memcpy(h, h_new.data(), static_cast<size_t>(C));
      std::memcpy(y + d.row(b, t) * C, h, static_cast<size_t>(C));
    }
  }
  return Status::Ok();
}

}  // namespace

void register_lstm_kernels(KernelTable& t) {
  t.add(OpKind::lstm, KernelKind::plain, lstm_f32);
  t.add(OpKind::lstm, KernelKind::quant, lstm_integer, prepare_lstm_integer);
}

}  // namespace tessera::cpu
