// svdf: TFLite's SVDF, one time step per run, with the interpreter's arithmetic (svdf.cc:
// EvalFloatSVDF and EvalIntegerSVDF). Shapes (ops.def): x [B, I], weights_feature [F, I],
// weights_time [F, M], state [B, F*M] (out 1 aliases it), bias [U] (optional), y [B, U],
// F = U * rank.
//
// Each run, per batch row b and filter f, with s = state[b, f*M .. f*M + M) (oldest first):
//  1. the whole state moves one element left (its first value is dropped; a filter's
//     oldest value moves into the previous filter's newest slot, then step 2 overwrites it),
//  2. s[M-1] = x[b] . weights_feature[f],
//  3. t[f] = s . weights_time[f];  y[b, u] = bias[u] + sum over r < rank of t[u*rank + r],
//     then the activation.
// Float: each sum in float, in index order (TFLite's portable tensor_utils).
// Integer (i8 x, i8 weights_feature, i16 weights_time, i32 bias, i16 state, i8 y):
//  2. s[M-1] = clamp_i16(MultiplyByQuantizedMultiplier(sum wf * (x - x_zp), M1)),
//     M1 = x_scale * wf_scale / state_scale;
//  3. int32 sums (wrapping, as the interpreter's int32 arithmetic does in practice), then
//     y = clamp_i8(MultiplyByQuantizedMultiplier(acc, M2) + y_zp), M2 = state_scale *
//     wt_scale / y_scale. The interpreter's integer kernel applies no activation.
// Both multipliers are computed once, in float as svdf.cc's Prepare does, then
// QuantizeMultiplier'd (prepare_svdf).
// Hybrid (f32 x, i8 weights_feature and weights_time, f32 bias, state and y): each batch
// row of x is quantized symmetrically (TFLite's SymmetricQuantizeFloats, hybrid.cpp), or
// with hybrid_inputs = "asymmetric" (SVDF v4's asymmetric_quantize_inputs) asymmetrically
// with a zero point z per row (AsymmetricQuantizeFloats);
//  2. s[M-1] = float(sum wf * code - z * sum wf) * (row_scale * wf_scale), the sums in
//     wrapping int32 (tensor_utils' MatrixBatchVectorMultiplyAccumulate with row sums);
//  3. as f32, with weights_time dequantized once (prepare_svdf_plain): wt * wt_scale in float.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include "backend/cpu/kernels/hybrid.h"
#include "backend/cpu/kernels/kernel_util.h"
#include "backend/cpu/kernels/quant_math.h"

namespace tessera::cpu {

namespace {

struct SvdfScales : PreparedKernel {
  q::Multiplier feature;  // x_scale * wf_scale / state_scale: the feature sums -> state codes
  q::Multiplier output;   // state_scale * wt_scale / y_scale: the time sums -> output codes
};

Result<SvdfScales> svdf_scales(const Graph& g, const Node& n) {
  auto scale = [&](TensorId id) { return g.tensor(id).quant.scale[0]; };
  // svdf.cc multiplies and divides the float scales in float, then widens to double.
  const float s1 = scale(n.inputs[0]) * scale(n.inputs[1]) / scale(n.inputs[3]);
  const float s2 = scale(n.inputs[3]) * scale(n.inputs[2]) / scale(n.outputs[0]);
  if (!std::isfinite(s1) || !std::isfinite(s2))
    return kernel_error(n, "the scales give the multipliers " + std::to_string(s1) + " and " + std::to_string(s2) +
                               ", which are not finite");
  SvdfScales s;
  s.feature = q::quantize_multiplier(static_cast<double>(s1));
  s.output = q::quantize_multiplier(static_cast<double>(s2));
  return s;
}

Result<std::unique_ptr<PreparedKernel>> prepare_svdf(const Graph& g, const Node& n) {
  TS_ASSIGN_OR_RETURN(SvdfScales s, svdf_scales(g, n));
  return std::unique_ptr<PreparedKernel>(std::make_unique<SvdfScales>(s));
}

// Hybrid: weights_time dequantized (TFLite does it once, into a float temporary).
struct SvdfFloatTime : PreparedKernel {
  std::vector<float> weights_time;  // [F, M]: wt code * wt scale, in float
};

SvdfFloatTime dequantize_time(const int8_t* codes, int64_t n, float scale) {
  SvdfFloatTime p;
  p.weights_time.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) p.weights_time[static_cast<size_t>(i)] = static_cast<float>(codes[i]) * scale;
  return p;
}

bool is_hybrid(const Graph& g, const Node& n) { return g.tensor(n.inputs[1]).dtype == DType::i8; }

// f32 nodes: nothing to prepare; hybrid ones with constant weights_time: its float values.
Result<std::unique_ptr<PreparedKernel>> prepare_svdf_plain(const Graph& g, const Node& n) {
  const Tensor& wt = g.tensor(n.inputs[2]);
  if (!is_hybrid(g, n) || !wt.data || wt.dtype != DType::i8 || wt.quant.scale.size() != 1)
    return std::unique_ptr<PreparedKernel>();
  return std::unique_ptr<PreparedKernel>(std::make_unique<SvdfFloatTime>(
      dequantize_time(reinterpret_cast<const int8_t*>(wt.data->data), wt.elements(), wt.quant.scale[0])));
}

struct Dims {
  int64_t batch, input, filters, memory, rank, units;
};
Dims dims_of(const KernelContext& c) {
  Dims d;
  d.batch = c.in[0].shape()[0];
  d.input = c.in[0].shape()[1];
  d.filters = c.in[1].shape()[0];
  d.memory = c.in[2].shape()[1];
  d.rank = c.n.get(attr::rank);
  d.units = d.filters / d.rank;
  return d;
}

// Wrapping int32 addition: the interpreter's int32 sums overflow silently (two's complement
// on every target it runs on); here without undefined behaviour.
inline int32_t wrap_add(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
}

// Step 1: the state [B, F*M] moves one element left, in place in the output (out 1).
template <typename S>
S* shift_state(const KernelContext& c, const Dims& d) {
  const int64_t n = d.batch * d.filters * d.memory;
  S* st = c.out[1].as<S>();
  if (c.out[1].data != c.in[3].data) std::memcpy(st, c.in[3].data, static_cast<size_t>(n) * sizeof(S));
  if (n > 1) std::memmove(st, st + 1, static_cast<size_t>(n - 1) * sizeof(S));
  return st;
}

// The node must carry its updated state as output 1 (ops.def); a graph built without it
// would drop the state update.
Status check_outputs(const KernelContext& c) {
  if (c.out.size() != 2 || c.in.size() < 4 || !c.in[3])
    return kernel_error(c.n, "needs the state as input 3 and the updated state as output 1, got " +
                                 std::to_string(c.in.size()) + " inputs and " + std::to_string(c.out.size()) + " outputs");
  return Status::Ok();
}

Status svdf_f32(KernelContext& c) {
  TS_RETURN_IF_ERROR(check_outputs(c));
  const Dims d = dims_of(c);
  TS_ASSIGN_OR_RETURN(Activation act, activation_of(c.n));
  const bool hybrid = c.in[1].dtype() == DType::i8;
  const bool asymmetric = hybrid && asymmetric_inputs(c.n);
  const float* x = c.in[0].as<float>();
  SvdfFloatTime made;
  if (hybrid && !c.prepared) {
    if (c.in[2].dtype() != DType::i8 || c.in[2].t->quant.scale.size() != 1 || c.in[1].t->quant.scale.size() != 1)
      return kernel_error(c.n, "hybrid weights must be i8 with one scale each");
    made = dequantize_time(c.in[2].as<int8_t>(), c.in[2].elements(), c.in[2].t->quant.scale[0]);
  }
  const float* wt = !hybrid       ? c.in[2].as<float>()
                    : c.prepared ? static_cast<const SvdfFloatTime&>(*c.prepared).weights_time.data()
                                 : made.weights_time.data();
  const float* bias = c.in.size() > 4 && c.in[4] ? c.in[4].as<float>() : nullptr;
  float* st = shift_state<float>(c, d);
  float* y = c.out[0].as<float>();
  // The input row's int8 codes (hybrid): scratch that grows once, so that runs allocate nothing.
  thread_local std::vector<int8_t> codes;
  if (hybrid && codes.size() < static_cast<size_t>(d.input)) codes.resize(static_cast<size_t>(d.input));
  for (int64_t b = 0; b < d.batch; ++b) {
    float* sb = st + b * d.filters * d.memory;
    if (hybrid) {
      const int8_t* wf = c.in[1].as<int8_t>();
      int32_t offset = 0;
      const float* row = x + b * d.input;
      const float row_scale = asymmetric ? quantize_asymmetric_row(row, d.input, codes.data(), &offset)
                                         : quantize_symmetric_row(row, d.input, codes.data());
      const float scale = row_scale * c.in[1].t->quant.scale[0];
      for (int64_t f = 0; f < d.filters; ++f) {
        int32_t dot = 0, row_sum = 0;
        for (int64_t i = 0; i < d.input; ++i) {
          dot = wrap_add(dot, int32_t{wf[f * d.input + i]} * int32_t{codes[static_cast<size_t>(i)]});
          row_sum = wrap_add(row_sum, int32_t{wf[f * d.input + i]});
        }
        if (offset != 0) dot = wrap_add(dot, static_cast<int32_t>(0u - static_cast<uint32_t>(row_sum) * static_cast<uint32_t>(offset)));
        sb[f * d.memory + d.memory - 1] = static_cast<float>(dot) * scale;
      }
    } else {
      const float* wf = c.in[1].as<float>();
      for (int64_t f = 0; f < d.filters; ++f) {
        float dot = 0.0f;
        for (int64_t i = 0; i < d.input; ++i) dot += wf[f * d.input + i] * x[b * d.input + i];
        sb[f * d.memory + d.memory - 1] = dot;
      }
    }
    for (int64_t u = 0; u < d.units; ++u) {
      float sum = 0.0f;
      for (int64_t r = 0; r < d.rank; ++r) {
        const int64_t f = u * d.rank + r;
        float t = 0.0f;
        for (int64_t m = 0; m < d.memory; ++m) t += wt[f * d.memory + m] * sb[f * d.memory + m];
        sum += t;
      }
      if (bias) sum += bias[u];
      y[b * d.units + u] = activate(sum, act);
    }
  }
  return Status::Ok();
}

Status svdf_i8(KernelContext& c) {
  TS_RETURN_IF_ERROR(check_outputs(c));
  const Dims d = dims_of(c);
  SvdfScales made;
  if (!c.prepared) {
    TS_ASSIGN_OR_RETURN(made, svdf_scales(c.g, c.n));
  }
  const SvdfScales& sc = c.prepared ? static_cast<const SvdfScales&>(*c.prepared) : made;
  const int32_t x_zp = static_cast<int32_t>(c.in[0].t->quant.zero_point_at(0));
  const int32_t y_zp = static_cast<int32_t>(c.out[0].t->quant.zero_point_at(0));
  const int8_t* x = c.in[0].as<int8_t>();
  const int8_t* wf = c.in[1].as<int8_t>();
  const int16_t* wt = c.in[2].as<int16_t>();
  const int32_t* bias = c.in.size() > 4 && c.in[4] ? c.in[4].as<int32_t>() : nullptr;
  int16_t* st = shift_state<int16_t>(c, d);
  int8_t* y = c.out[0].as<int8_t>();
  for (int64_t b = 0; b < d.batch; ++b) {
    int16_t* sb = st + b * d.filters * d.memory;
    for (int64_t f = 0; f < d.filters; ++f) {
      int32_t dot = 0;
      for (int64_t i = 0; i < d.input; ++i)
        dot = wrap_add(dot, int32_t{wf[f * d.input + i]} * (int32_t{x[b * d.input + i]} - x_zp));
      sb[f * d.memory + d.memory - 1] = static_cast<int16_t>(q::clamp(q::multiply(dot, sc.feature), -32768, 32767));
    }
    for (int64_t u = 0; u < d.units; ++u) {
      int32_t acc = bias ? bias[u] : 0;
      for (int64_t r = 0; r < d.rank; ++r) {
        const int64_t f = u * d.rank + r;
        int32_t t = 0;
        for (int64_t m = 0; m < d.memory; ++m)
          t = wrap_add(t, int32_t{wt[f * d.memory + m]} * int32_t{sb[f * d.memory + m]});
        acc = wrap_add(acc, t);
      }
      const int64_t code = int64_t{q::multiply(acc, sc.output)} + y_zp;
      y[b * d.units + u] = static_cast<int8_t>(std::clamp<int64_t>(code, -128, 127));
    }
  }
  return Status::Ok();
}

}  // namespace

void register_svdf_kernels(KernelTable& t) {
  t.add(OpKind::svdf, KernelKind::plain, svdf_f32, prepare_svdf_plain);
  t.add(OpKind::svdf, KernelKind::quant, svdf_i8, prepare_svdf);
}

}  // namespace tessera::cpu
