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
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

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
  const float* peep[4] = {};
  const float* norm[4] = {};
  for (int k = d.cifg ? 1 : 0; k < 4; ++k) {
    if (d.peephole && k != kCell) peep[k] = data_or_null(c, peephole(k));
    if (d.layer_norm) norm[k] = data_or_null(c, layer_norm(k));
  }
  const float* wp = d.projection ? c.in[lstm::kProjectionWeights].as<float>() : nullptr;
  const float* bp = d.projection ? data_or_null(c, lstm::kProjectionBias) : nullptr;
  thread_local std::vector<float> gate[4], m;  // [C] each; grow once, so runs allocate nothing
  for (auto* v : {&gate[0], &gate[1], &gate[2], &gate[3], &m})
    if (v->size() < static_cast<size_t>(C)) v->resize(static_cast<size_t>(C));
  for (int64_t b = 0; b < d.batch; ++b) {
    float* h = hs + b * P;
    float* cell = cs + b * C;
    for (int64_t s = 0; s < d.steps; ++s) {
      const int64_t t = d.step(s);
      const float* xt = x + d.row(b, t) * I;
      auto compute = [&](int k) {
        const float* w = c.in[weights(k)].as<float>();
        const float* r = c.in[recurrent(k)].as<float>();
        const float* b0 = c.in[bias(k)].as<float>();
        float* gk = gate[k].data();
        for (int64_t j = 0; j < C; ++j) {
          float v = norm[k] ? 0.0f : b0[j];
          v += dot(w + j * I, xt, I);
          v += dot(r + j * P, h, P);
          if (peep[k]) v += peep[k][j] * cell[j];
          gk[j] = v;
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
      if (wp) {
        for (int64_t p = 0; p < P; ++p) {
          float v = bp ? bp[p] : 0.0f;
          v += dot(wp + p * C, m.data(), C);
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
