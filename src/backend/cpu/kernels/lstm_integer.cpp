// lstm (ops.def), the integer 8x8_16 form, as the TFLite interpreter's
// UNIDIRECTIONAL_SEQUENCE_LSTM computes it (lstm_eval.cc: EvalInteger8x8_16): x, w, r, h,
// y and the projection weights i8; gate and projection biases i32; c i16 with scale
// 2^cell_shift; peephole weights and layer-norm coefficients i16.
//
// Prepared once per node (TFLite's Prepare, PopulateQuantizedLstmParams8x8_16):
//  * gate g's accumulators go to its pre-activation scale s_g (Q3.12, 2^-12, without layer
//    norm; with layer norm the node's gate_scales[g], TFLite's intermediate tensor g) by
//    w_scale * x_scale / s_g and r_scale * h_scale / s_g, each product and quotient in
//    float, then as a Q31 multiplier (QuantizeMultiplier); the peephole product p * c by
//    2^cell_shift * p_scale / s_g (in double, stored as float);
//  * the zero points fold into the biases: bias_x = b - x_zp * rowsum(w) (with layer norm
//    without b, which is added after the normalization), bias_h = -h_zp * rowsum(r);
//    the projection's bias_p = b_p + hidden_zero_point * rowsum(w_p) (int32);
//  * o * tanh(c) (Q0.15 * Q0.15) goes to the hidden value m by 2^-15 / hidden_scale *
//    2^-15 (in double, stored as float) with hidden_zero_point; hidden_scale is TFLite's
//    intermediate tensor 4 (without projection the converters give it h's own parameters);
//    the projection rescales by w_p_scale * hidden_scale / h_scale (float);
//  * cell_clip becomes int16 as cell_clip / c_scale, proj_clip int8 as proj_clip / y_scale,
//    each clamped and truncated; each layer-norm gate's variance guard is
//    max(1, int32(10000 * ln_scale)).
// Per step and batch row, gates forget, cell, input, output:
//   gate = clamp16(M_x(bias_x + x . w)); gate = clamp16(M_h(bias_h + h . r) + gate);
//   peephole: gate = clamp16(M_p(p * c) + gate) (the output gate reads the new c);
//   layer norm (PortableApplyLayerNorm): mean and variance of the gate's C values in
//   integers scaled by 2^10 and 2^20, 1/stddev as GetInvSqrtQuantizedMultiplierExp,
//   v = rdiv1024(M_inv(1024 a - mean) * ln + b), gate = clamp16(M_ln * 2^12 (v));
//   sigmoid on Q3.12 (tanh on Q3.12 for the cell gate) -> Q0.15 (gemmlowp fixed point,
//   fixed_point16.h); c = rdivpot(f * c, 15); c = sat16(c + rdivpot(i * g, 30 + cell_shift))
//   (CIFG: i = 32767 - f); clip; m = clamp8(M_hidden(o * tanh_{15 + cell_shift}(c)) -
//   hidden_zero_point) (the interpreter subtracts the zero point there: PortableCwiseMul);
//   h = m, or h = clip(clamp8(M_proj(bias_p + m . w_p) + h_zp)).
// The interpreter's peephole product runs over P values per batch row (it passes n_output
// where the vector has n_cell), which is not an LSTM when P != C: such nodes are refused.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend/cpu/kernels/fixed_point16.h"
#include "backend/cpu/kernels/lstm_common.h"
#include "backend/cpu/kernels/quant_math.h"

namespace tessera::cpu::lstm_kernel {

namespace {

// Q3.12: the gates' pre-activation format without layer norm.
constexpr float kGateScale = 1.0f / 4096.0f;

struct IntegerLstm : PreparedKernel {
  struct GateParams {
    std::vector<int32_t> bias_x, bias_h;  // [C]: bias and zero-point terms (see the file comment)
    q::Multiplier m_x, m_h;               // accumulator -> the gate's scale
    q::Multiplier m_peephole;             // p * c -> the gate's scale
    q::Multiplier m_norm;                 // layer norm: the coefficients' scale (shift + 12 applied)
    int32_t variance_guard = 1;
  };
  GateParams gate[4];
  q::Multiplier m_hidden;      // o * tanh(c) (Q0.30) -> m codes
  int32_t hidden_zero_point = 0;
  q::Multiplier m_proj;        // projection accumulator -> h codes
  std::vector<int32_t> bias_p; // [P]
  int32_t h_zero_point = 0;
  int8_t proj_clip = 0;        // 0: none
  int cell_shift = 0;          // c scale = 2^cell_shift
  int16_t cell_clip = 0;       // 0: none
};

// int32 arithmetic as the interpreter does it, wrapping instead of overflowing (only
// absurd sizes or biases get there; real models stay far inside int32).
int32_t wrap32(int64_t v) { return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(v))); }

// v . row, modulo 2^32 (all that wrap32 keeps of the interpreter's int32 sum): int32 partial
// sums of at most 65536 products (each at most 2^14, so no overflow), which the compiler
// vectorises, added with wrapping. The bits of the int64 sum wrapped once.
uint32_t dot_mod32(const int8_t* v, const int8_t* row, int64_t n) {
  uint32_t total = 0;
  for (int64_t k0 = 0; k0 < n; k0 += 65536) {
    const int64_t k1 = std::min<int64_t>(n, k0 + 65536);
    int32_t s = 0;
    for (int64_t k = k0; k < k1; ++k) s += int32_t{v[k]} * int32_t{row[k]};
    total += static_cast<uint32_t>(s);
  }
  return total;
}

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
Result<q::Multiplier> multiplier(double real, const std::string& what) {
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
  if (d.peephole && d.outputs != d.cells)
    return fail("peephole weights with a projection to " + std::to_string(d.outputs) + " outputs from " +
                std::to_string(d.cells) + " cells are not supported by the integer LSTM (the interpreter's peephole "
                "product runs over the outputs, not the cells)");
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
  const std::vector<double> gate_scales = n.get(attr::gate_scales);
  if (d.layer_norm && gate_scales.size() != 4)
    return fail("the layer-norm LSTM needs 4 gate scales (gate_scales), has " + std::to_string(gate_scales.size()));
  for (int k = d.cifg ? 1 : 0; k < 4; ++k) {
    TS_ASSIGN_OR_RETURN(const Tensor* w, per_tensor(weights(k)));
    TS_ASSIGN_OR_RETURN(const Tensor* r, per_tensor(recurrent(k)));
    TS_ASSIGN_OR_RETURN(const uint8_t* wd, constant(weights(k)));
    TS_ASSIGN_OR_RETURN(const uint8_t* rd, constant(recurrent(k)));
    TS_ASSIGN_OR_RETURN(const uint8_t* bd, constant(bias(k)));
    if (w->quant.zero_point_at(0) != 0 || r->quant.zero_point_at(0) != 0)
      return fail("weights '" + w->name + "' and '" + r->name + "' must have zero point 0");
    const float gate_scale = d.layer_norm ? static_cast<float>(gate_scales[static_cast<size_t>(k)]) : kGateScale;
    if (!(gate_scale > 0.0f) || !std::isfinite(gate_scale))
      return fail(std::string("the ") + lstm::kGateName[k] + " gate's scale " + std::to_string(gate_scale) + " is not positive");
    IntegerLstm::GateParams& gp = p.gate[k];
    const float eff_x = w->quant.scale[0] * x_scale / gate_scale;
    const float eff_h = r->quant.scale[0] * h_scale / gate_scale;
    TS_ASSIGN_OR_RETURN(gp.m_x, multiplier(eff_x, "input-to-gate"));
    TS_ASSIGN_OR_RETURN(gp.m_h, multiplier(eff_h, "recurrent-to-gate"));
    gp.bias_x.assign(static_cast<size_t>(d.cells), 0);
    gp.bias_h.assign(static_cast<size_t>(d.cells), 0);
    if (!d.layer_norm) std::memcpy(gp.bias_x.data(), bd, static_cast<size_t>(d.cells) * 4);
    if (x_zp != 0) add_row_sums(reinterpret_cast<const int8_t*>(wd), d.cells, d.features, -x_zp, gp.bias_x);
    if (h_zp != 0) add_row_sums(reinterpret_cast<const int8_t*>(rd), d.cells, d.outputs, -h_zp, gp.bias_h);
    if (d.peephole && k != kCell) {
      TS_ASSIGN_OR_RETURN(const Tensor* pw, per_tensor(peephole(k)));
      TS_RETURN_IF_ERROR(constant(peephole(k)).status());
      const float eff_p = static_cast<float>(std::pow(2.0, p.cell_shift) * pw->quant.scale[0] / gate_scale);
      TS_ASSIGN_OR_RETURN(gp.m_peephole, multiplier(eff_p, "cell-to-gate"));
    }
    if (d.layer_norm) {
      TS_ASSIGN_OR_RETURN(const Tensor* ln, per_tensor(layer_norm(k)));
      TS_RETURN_IF_ERROR(constant(layer_norm(k)).status());
      const float ln_scale = ln->quant.scale[0];
      TS_ASSIGN_OR_RETURN(gp.m_norm, multiplier(ln_scale, "layer-norm"));
      gp.m_norm.shift += 12;
      gp.variance_guard = std::max(1, static_cast<int32_t>(10000 * ln_scale));
    }
  }
  const float hidden_scale = static_cast<float>(n.find(attr::hidden_scale).value_or(h_scale));
  const float eff_hidden = static_cast<float>(std::pow(2.0, -15) / hidden_scale * std::pow(2.0, -15));
  TS_ASSIGN_OR_RETURN(p.m_hidden, multiplier(eff_hidden, "hidden"));
  p.hidden_zero_point = static_cast<int32_t>(n.get(attr::hidden_zero_point));
  p.h_zero_point = h_zp;
  p.proj_clip = 0;
  if (d.projection) {
    TS_ASSIGN_OR_RETURN(const Tensor* wp, per_tensor(lstm::kProjectionWeights));
    TS_ASSIGN_OR_RETURN(const uint8_t* wpd, constant(lstm::kProjectionWeights));
    if (wp->quant.zero_point_at(0) != 0) return fail("projection weights '" + wp->name + "' must have zero point 0");
    const float eff_proj = wp->quant.scale[0] * hidden_scale / h_scale;
    TS_ASSIGN_OR_RETURN(p.m_proj, multiplier(eff_proj, "projection"));
    p.bias_p.assign(static_cast<size_t>(d.outputs), 0);
    if (present(n, lstm::kProjectionBias)) {
      TS_ASSIGN_OR_RETURN(const uint8_t* bpd, constant(lstm::kProjectionBias));
      std::memcpy(p.bias_p.data(), bpd, static_cast<size_t>(d.outputs) * 4);
    }
    if (p.hidden_zero_point != 0)
      add_row_sums(reinterpret_cast<const int8_t*>(wpd), d.outputs, d.cells, p.hidden_zero_point, p.bias_p);
    const float proj_clip = static_cast<float>(n.get(attr::proj_clip));
    if (proj_clip > 0.0f)
      p.proj_clip = static_cast<int8_t>(std::min(std::max(proj_clip / y.quant.scale[0], -128.0f), 127.0f));
  }
  return Status::Ok();
}

// fx16::logistic or fx16::tanh of every int16 input read with `int_bits` integer bits,
// computed once per process: each gate value is then one load instead of gemmlowp's
// fixed-point evaluation (exp by a barrel shifter, Newton-Raphson divisions), with the
// same bits by construction. 128 KiB a table; the LSTM uses int_bits 3 (the gates) and
// 15 + the cell state's power-of-two exponent (0..6, tanh of the cell).
const int16_t* activation_table(bool is_tanh, int int_bits) {
  constexpr int kMaxBits = 15;
  static std::array<std::once_flag, 2 * (kMaxBits + 1)> once;
  static std::array<std::vector<int16_t>, 2 * (kMaxBits + 1)> tables;
  const size_t k = static_cast<size_t>((is_tanh ? kMaxBits + 1 : 0) + int_bits);
  std::call_once(once[k], [&] {
    std::vector<int16_t>& t = tables[k];
    t.resize(65536);
    for (int32_t x = -32768; x <= 32767; ++x)
      t[static_cast<size_t>(x + 32768)] = is_tanh ? fx16::tanh(static_cast<int16_t>(x), int_bits)
                                                  : fx16::logistic(static_cast<int16_t>(x), int_bits);
  });
  return tables[k].data() + 32768;  // indexed by the int16 value itself
}

int16_t sat16(int32_t v) { return static_cast<int16_t>(std::min(std::max(v, -32768), 32767)); }

// gate[j] = sat16(M(bias[j] + v . m[j]) + gate[j]) for an int8 vector v and int8 matrix m.
void accumulate(const int8_t* v, const int8_t* m, const int32_t* bias, const q::Multiplier& mult, int64_t rows,
                int64_t cols, int16_t* gate) {
  for (int64_t j = 0; j < rows; ++j) {
    const auto acc = static_cast<int32_t>(static_cast<uint32_t>(bias[j]) + dot_mod32(v, m + j * cols, cols));
    gate[j] = sat16(wrap32(int64_t{q::multiply(acc, mult)} + gate[j]));
  }
}

// TFLite's PortableApplyLayerNorm on one batch row of n values, in place.
void apply_layer_norm(int16_t* gate, const int16_t* coef, const int32_t* bias, const q::Multiplier& scale, int32_t guard,
                      int64_t n) {
  constexpr int64_t kTwoToPower20 = int64_t{1} << 20;
  int64_t sum = 0, sum_sq = 0;
  for (int64_t j = 0; j < n; ++j) {
    const int32_t v = gate[j];
    sum += v;
    sum_sq += v * v;
  }
  const int32_t mean = static_cast<int32_t>(sum * 1024 / n);
  const int32_t temp = static_cast<int32_t>(kTwoToPower20 / n);
  const int64_t variance = sum_sq * temp - int64_t{mean} * mean;
  int32_t variance2 = static_cast<int32_t>(variance / kTwoToPower20);
  if (variance2 < 1) variance2 = guard;
  const q::Multiplier inv = q::fp::inv_sqrt_multiplier_exp(variance2);
  for (int64_t j = 0; j < n; ++j) {
    const int32_t shifted = wrap32(1024 * int64_t{gate[j]} - mean);
    const int32_t rescaled = q::multiply(shifted, inv);
    const int64_t v3 = wrap32(int64_t{rescaled} * coef[j] + bias[j]);
    const int32_t v4 = static_cast<int32_t>((v3 > 0 ? v3 + 512 : v3 - 512) / 1024);
    gate[j] = sat16(q::multiply(v4, scale));
  }
}

}  // namespace

Result<std::unique_ptr<PreparedKernel>> prepare_lstm_integer(const Graph& g, const Node& n) {
  auto p = std::make_unique<IntegerLstm>();
  TS_RETURN_IF_ERROR(integer_params(g, n, *p));
  // The activation tables are built here, at load, so the first run costs what the others do.
  if (p->cell_shift >= -15 && p->cell_shift <= 0) {
    activation_table(false, 3);
    activation_table(true, 3);
    activation_table(true, 15 + p->cell_shift);
  }
  return std::unique_ptr<PreparedKernel>(std::move(p));
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
  const int64_t C = d.cells, I = d.features, P = d.outputs;
  const int8_t* x = c.in[kX].as<int8_t>();
  int8_t* y = c.out[0].as<int8_t>();
  int8_t* hs = c.out[1].as<int8_t>();
  int16_t* cs = c.out[2].as<int16_t>();
  const int8_t* wp = d.projection ? c.in[lstm::kProjectionWeights].as<int8_t>() : nullptr;
  thread_local std::vector<int16_t> gate[4];  // [C] each, Q0.15 after the activations
  thread_local std::vector<int8_t> m;         // [C]
  for (auto& v : gate)
    if (v.size() < static_cast<size_t>(C)) v.resize(static_cast<size_t>(C));
  if (m.size() < static_cast<size_t>(C)) m.resize(static_cast<size_t>(C));
  const int cell_bits = 15 + p.cell_shift;  // integer bits of c as a Q(n).(15-n) value
  if (cell_bits < 0 || cell_bits > 15) return kernel_error(c.n, "cell state scale 2^" + std::to_string(p.cell_shift) + " is outside 2^-15..2^0");
  const int16_t* logistic3 = activation_table(false, 3);
  const int16_t* tanh3 = activation_table(true, 3);
  const int16_t* tanh_cell = activation_table(true, cell_bits);
  for (int64_t b = 0; b < d.batch; ++b) {
    int8_t* h = hs + b * P;
    int16_t* cell = cs + b * C;
    for (int64_t s = 0; s < d.steps; ++s) {
      const int64_t t = d.step(s);
      const int8_t* xt = x + d.row(b, t) * I;
      auto compute = [&](int k) {
        const IntegerLstm::GateParams& gp = p.gate[k];
        int16_t* gk = gate[k].data();
        std::fill(gk, gk + C, int16_t{0});
        accumulate(xt, c.in[weights(k)].as<int8_t>(), gp.bias_x.data(), gp.m_x, C, I, gk);
        accumulate(h, c.in[recurrent(k)].as<int8_t>(), gp.bias_h.data(), gp.m_h, C, P, gk);
        if (d.peephole && k != kCell) {
          const int16_t* pw = c.in[peephole(k)].as<int16_t>();
          for (int64_t j = 0; j < C; ++j)
            gk[j] = sat16(wrap32(int64_t{q::multiply(int32_t{pw[j]} * cell[j], gp.m_peephole)} + gk[j]));
        }
        if (d.layer_norm)
          apply_layer_norm(gk, c.in[layer_norm(k)].as<int16_t>(), c.in[bias(k)].as<int32_t>(), gp.m_norm, gp.variance_guard, C);
        const int16_t* act = k == kCell ? tanh3 : logistic3;
        for (int64_t j = 0; j < C; ++j) gk[j] = act[gk[j]];
      };
      compute(kForget);
      compute(kCell);
      if (!d.cifg) compute(kInput);
      for (int64_t j = 0; j < C; ++j) {
        const int16_t f = gate[kForget][j];
        const int16_t i = d.cifg ? static_cast<int16_t>(32767 - f) : gate[kInput][j];
        const int16_t kept = static_cast<int16_t>(q::rounding_divide_by_pot(int32_t{f} * cell[j], 15));
        const int16_t added =
            static_cast<int16_t>(q::rounding_divide_by_pot(int32_t{i} * gate[kCell][j], 30 + p.cell_shift));
        int16_t v = sat16(int32_t{kept} + added);
        if (p.cell_clip > 0) v = std::min<int16_t>(std::max<int16_t>(v, static_cast<int16_t>(-p.cell_clip)), p.cell_clip);
        cell[j] = v;
      }
      compute(kOutput);  // its peephole reads the updated cell state
      for (int64_t j = 0; j < C; ++j) {
        const int32_t prod = int32_t{gate[kOutput][j]} * tanh_cell[cell[j]];
        const int64_t code = int64_t{q::multiply(prod, p.m_hidden)} - p.hidden_zero_point;
        m[static_cast<size_t>(j)] = static_cast<int8_t>(std::min<int64_t>(std::max<int64_t>(code, -128), 127));
      }
      if (wp) {
        for (int64_t o = 0; o < P; ++o) {
          const auto acc =
              static_cast<int32_t>(static_cast<uint32_t>(p.bias_p[static_cast<size_t>(o)]) + dot_mod32(m.data(), wp + o * C, C));
          int64_t v = int64_t{q::multiply(acc, p.m_proj)} + p.h_zero_point;
          v = std::min<int64_t>(std::max<int64_t>(v, -128), 127);
          if (p.proj_clip > 0) v = std::min<int64_t>(std::max<int64_t>(v, -p.proj_clip), p.proj_clip);
          h[o] = static_cast<int8_t>(v);
        }
      } else {
        std::memcpy(h, m.data(), static_cast<size_t>(C));
      }
      std::memcpy(y + d.row(b, t) * P, h, static_cast<size_t>(P));
    }
  }
  return Status::Ok();
}

}  // namespace tessera::cpu::lstm_kernel
