// lstm (ops.def): a one-layer LSTM over a sequence, as the TFLite interpreter's builtin
// UNIDIRECTIONAL_SEQUENCE_LSTM computes it (lstm_eval.cc), with or without peephole
// weights, projection and layer norm. This file: the f32 form (EvalFloat) and the
// registration; lstm_integer.cpp: the integer 8x8_16 form. Batch rows are independent;
// every step reads the state the previous one wrote. The state lives in outputs 1 and 2,
// which share the storage of the state inputs 10 and 11 (Role::state, persistent across
// runs).
//
// f32, per step and batch row, gates in the interpreter's order (input, forget, cell, then
// the cell update, then output): a = b + (w . x) + (r . h) with each dot product summed on
// its own, + p * c with peephole weights (the input and forget gates read the old cell
// state, the output gate the updated one). With layer norm a starts at 0 instead of b, is
// normalized over the C cells ((a - mean) / sqrt(variance + 1e-8), both in float), then
// a = a * ln + b. Then sigmoid (the cell gate: `activation`); c = f * c, then c += g * i
// (CIFG: i = 1 - f), clipped to +-cell_clip; m = o * activation(c); h = m, or with
// projection h = b_p + (w_p . m) (b_p absent: 0), clipped to +-proj_clip.
//
// Hybrid (f32 x with i8 weights: TFLite's EvalHybrid), the same steps with the products
// of w, r and w_p made in integers: at each step x, h (for the gates) and m (for the
// projection) are quantized to int8 per batch row (symmetric: scale max|v| / 127, codes
// roundf(v * 127 / max|v|); hybrid_inputs asymmetric: TFLite's AsymmetricQuantizeFloats, min..max
// with a zero point; an all-zero row: scale 1, codes 0), each row's int32 dot product less
// zero point x the weights' row sum becomes float(dot) * (row scale * weight scale) and
// is added to the gate; peephole weights are p_code * p_scale (float) before p * c.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backend/cpu/kernels/hybrid.h"
#include "backend/cpu/kernels/lstm_common.h"

namespace tessera::cpu {

namespace {

using namespace lstm_kernel;

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

// The interpreter's MeanStddevNormalization over n values, in place.
void normalize(float* v, int64_t n) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += v[i];
  const float mean = sum / static_cast<float>(n);
  float sum_diff_sq = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    const float diff = v[i] - mean;
    sum_diff_sq += diff * diff;
  }
  const float variance = sum_diff_sq / static_cast<float>(n);
  const float stddev_inv = 1.0f / std::sqrt(variance + 1e-8f);
  for (int64_t i = 0; i < n; ++i) v[i] = (v[i] - mean) * stddev_inv;
}

// ---- hybrid: int8 codes of a float row ----

struct RowCodes {
  std::vector<int8_t> q;
  float scale = 1.0f;
  int32_t offset = 0;
};

// TFLite's AsymmetricQuantizeFloats (tensor_utils): the range min(0, min) .. max(0, max)
// in double, the zero point from whichever end rounds with the smaller error.
void quantize_asymmetric(const float* v, int64_t n, RowCodes& r) {
  float mn = v[0], mx = v[0];
  for (int64_t i = 1; i < n; ++i) {
    mn = std::min(mn, v[i]);
    mx = std::max(mx, v[i]);
  }
  const double rmin = std::min(0.0f, mn), rmax = std::max(0.0f, mx);
  if (rmin == rmax) {
    std::fill(r.q.begin(), r.q.begin() + n, int8_t{0});
    r.scale = 1.0f;
    r.offset = 0;
    return;
  }
  const double qmin = -128, qmax = 127;
  const double scale = (rmax - rmin) / (qmax - qmin);
  const double zp_from_min = qmin - rmin / scale, zp_from_max = qmax - rmax / scale;
  const double err_min = std::fabs(qmin) + std::fabs(rmin / scale), err_max = std::fabs(qmax) + std::fabs(rmax / scale);
  const double zp = err_min < err_max ? zp_from_min : zp_from_max;
  const int32_t offset = zp <= qmin ? -128 : zp >= qmax ? 127 : static_cast<int32_t>(static_cast<int8_t>(std::round(zp)));
  r.scale = static_cast<float>(scale);
  r.offset = offset;
  const float inv = 1.0f / r.scale;
  for (int64_t i = 0; i < n; ++i) {
    const float q = std::round(static_cast<float>(offset) + v[i] * inv);
    r.q[static_cast<size_t>(i)] = static_cast<int8_t>(std::min(127.0f, std::max(-128.0f, q)));
  }
}

void quantize_row(const float* v, int64_t n, bool asymmetric, RowCodes& r) {
  if (r.q.size() < static_cast<size_t>(n)) r.q.resize(static_cast<size_t>(n));
  if (asymmetric) return quantize_asymmetric(v, n, r);
  r.offset = 0;
  r.scale = quantize_symmetric_row(v, n, r.q.data());
}

// float(w . codes - offset * rowsum(w)) * scale: one row of TFLite's hybrid
// MatrixBatchVectorMultiplyAccumulate (scale = row scale * weight scale, in float).
float hybrid_dot(const int8_t* w, const RowCodes& r, int64_t n, float scale) {
  int32_t acc = 0, row_sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    acc += int32_t{w[i]} * r.q[static_cast<size_t>(i)];
    row_sum += w[i];
  }
  acc -= row_sum * r.offset;
  return static_cast<float>(acc) * scale;
}

// A hybrid weight's per-tensor scale.
Result<float> weight_scale(const KernelContext& c, size_t k) {
  const Tensor& t = *c.in[k].t;
  if (t.quant.scale.size() != 1)
    return kernel_error(c.n, "hybrid weights (input " + std::to_string(k) + " '" + t.name +
                                 "') need one quantization scale (per-tensor)");
  return t.quant.scale[0];
}

const float* data_or_null(const KernelContext& c, size_t k) {
  return present(c.n, k) && k < c.in.size() ? c.in[k].as<float>() : nullptr;
}

Status lstm_f32(KernelContext& c) {
  if (c.in[kX].dtype() != DType::f32)
    return kernel_error(c.n, "input 0 '" + c.in[kX].t->name + "' is " + dtype_name(c.in[kX].dtype()) +
                                 " without quantization parameters");
  const Dims d = dims_of(c.g, c.n);
  const Act act = act_of(c.n.get(attr::activation));
  const float clip = static_cast<float>(c.n.get(attr::cell_clip));
  const float proj_clip = static_cast<float>(c.n.get(attr::proj_clip));
  TS_RETURN_IF_ERROR(state_in_place(c));
  const int64_t C = d.cells, I = d.features, P = d.outputs;
  const float* x = c.in[kX].as<float>();
  float* y = c.out[0].as<float>();
  float* hs = c.out[1].as<float>();
  float* cs = c.out[2].as<float>();
  const bool hybrid = c.in[weights(kOutput)].dtype() == DType::i8;
  const bool asymmetric = c.n.get(attr::hybrid_inputs) == "asymmetric";
  // Hybrid: each weight's scale ([0] input, [1] recurrent, [2] peephole per gate; the
  // projection's), and the peephole weights as floats.
  float scale[4][3] = {}, proj_scale = 0.0f;
  thread_local std::vector<float> recovered[4];
  const float* peep[4] = {};
  const float* norm[4] = {};
  for (int k = d.cifg ? 1 : 0; k < 4; ++k) {
    if (hybrid) {
      TS_ASSIGN_OR_RETURN(scale[k][0], weight_scale(c, weights(k)));
      TS_ASSIGN_OR_RETURN(scale[k][1], weight_scale(c, recurrent(k)));
    }
    if (d.peephole && k != kCell) {
      if (hybrid) {  // TFLite's VectorScalarMultiply: p_code * scale, once per step
        TS_ASSIGN_OR_RETURN(scale[k][2], weight_scale(c, peephole(k)));
        const int8_t* pq = c.in[peephole(k)].as<int8_t>();
        recovered[k].resize(static_cast<size_t>(C));
        for (int64_t j = 0; j < C; ++j) recovered[k][static_cast<size_t>(j)] = scale[k][2] * static_cast<float>(pq[j]);
        peep[k] = recovered[k].data();
      } else {
        peep[k] = data_or_null(c, peephole(k));
      }
    }
    if (d.layer_norm) norm[k] = data_or_null(c, layer_norm(k));
  }
  if (hybrid && d.projection) {
    TS_ASSIGN_OR_RETURN(proj_scale, weight_scale(c, lstm::kProjectionWeights));
  }
  const float* wp = d.projection && !hybrid ? c.in[lstm::kProjectionWeights].as<float>() : nullptr;
  const int8_t* wpq = d.projection && hybrid ? c.in[lstm::kProjectionWeights].as<int8_t>() : nullptr;
  const float* bp = d.projection ? data_or_null(c, lstm::kProjectionBias) : nullptr;
  thread_local std::vector<float> gate[4], m;  // [C] each; grow once, so runs allocate nothing
  thread_local RowCodes xq, hq, mq;            // hybrid: this step's x, h and m codes
  for (auto* v : {&gate[0], &gate[1], &gate[2], &gate[3], &m})
    if (v->size() < static_cast<size_t>(C)) v->resize(static_cast<size_t>(C));
  for (int64_t b = 0; b < d.batch; ++b) {
    float* h = hs + b * P;
    float* cell = cs + b * C;
    for (int64_t s = 0; s < d.steps; ++s) {
      const int64_t t = d.step(s);
      const float* xt = x + d.row(b, t) * I;
      if (hybrid) {
        quantize_row(xt, I, asymmetric, xq);
        quantize_row(h, P, asymmetric, hq);
      }
      auto compute = [&](int k) {
        const float* b0 = c.in[bias(k)].as<float>();
        float* gk = gate[k].data();
        if (hybrid) {
          const int8_t* w = c.in[weights(k)].as<int8_t>();
          const int8_t* r = c.in[recurrent(k)].as<int8_t>();
          const float sx = xq.scale * scale[k][0], sh = hq.scale * scale[k][1];
          for (int64_t j = 0; j < C; ++j) {
            float v = norm[k] ? 0.0f : b0[j];
            v += hybrid_dot(w + j * I, xq, I, sx);
            v += hybrid_dot(r + j * P, hq, P, sh);
            if (peep[k]) v += peep[k][j] * cell[j];
            gk[j] = v;
          }
        } else {
          const float* w = c.in[weights(k)].as<float>();
          const float* r = c.in[recurrent(k)].as<float>();
          for (int64_t j = 0; j < C; ++j) {
            float v = norm[k] ? 0.0f : b0[j];
            v += dot(w + j * I, xt, I);
            v += dot(r + j * P, h, P);
            if (peep[k]) v += peep[k][j] * cell[j];
            gk[j] = v;
          }
        }
        if (norm[k]) {
          normalize(gk, C);
          for (int64_t j = 0; j < C; ++j) gk[j] = norm[k][j] * gk[j] + b0[j];
        }
        for (int64_t j = 0; j < C; ++j) gk[j] = k == kCell ? apply(act, gk[j]) : sigmoid(gk[j]);
      };
      if (!d.cifg) compute(kInput);
      compute(kForget);
      compute(kCell);
      for (int64_t j = 0; j < C; ++j) {
        const float i = d.cifg ? 1.0f - gate[kForget][j] : gate[kInput][j];
        float v = gate[kForget][j] * cell[j];
        v += gate[kCell][j] * i;
        if (clip > 0.0f) v = std::min(std::max(v, -clip), clip);
        cell[j] = v;
      }
      compute(kOutput);  // its peephole reads the updated cell state
      for (int64_t j = 0; j < C; ++j) m[static_cast<size_t>(j)] = gate[kOutput][j] * apply(act, cell[j]);
      if (d.projection) {
        if (wpq) quantize_row(m.data(), C, asymmetric, mq);
        for (int64_t p = 0; p < P; ++p) {
          float v = bp ? bp[p] : 0.0f;
          v += wpq ? hybrid_dot(wpq + p * C, mq, C, mq.scale * proj_scale) : dot(wp + p * C, m.data(), C);
          if (proj_clip > 0.0f) v = std::min(std::max(v, -proj_clip), proj_clip);
          h[p] = v;
        }
      } else {
        std::memcpy(h, m.data(), static_cast<size_t>(C) * sizeof(float));
      }
      std::memcpy(y + d.row(b, t) * P, h, static_cast<size_t>(P) * sizeof(float));
    }
  }
  return Status::Ok();
}

}  // namespace

void register_lstm_kernels(KernelTable& t) {
  t.add(OpKind::lstm, KernelKind::plain, lstm_f32);
  t.add(OpKind::lstm, KernelKind::quant, lstm_kernel::lstm_integer, lstm_kernel::prepare_lstm_integer);
}

}  // namespace tessera::cpu
