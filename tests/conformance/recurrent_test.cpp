// Conformance cases: svdf (TFLite's SVDF), f32 and integer, over three runs of one session:
// the state (a Role::state tensor, updated in place through the node's second output)
// carries each filter's last M activations from one run to the next. The reference keeps
// the activations in double; the integer case rounds them to the state's int16 codes as
// the op does (the state is part of its definition) and allows one output code.
#include "conformance/conformance.h"

namespace tessera::conformance {
namespace {

constexpr int kRuns = 3;

// The op's second output (the updated state, aliasing input 3); the harness made the first.
void add_state_output(Case& c, TensorId state) {
  Node& node = c.g.nodes().back();
  Tensor t = c.g.tensor(state);
  t.name = "under_test_state";
  t.role = Role::activation;
  node.outputs.push_back(c.g.add_tensor(t));
}

TESSERA_CONFORMANCE_CASES(svdf) {
  std::vector<Case> cases;
  for (bool integer : {false, true}) {
    const int64_t B = pick(rng, 1, 3), I = pick(rng, 1, 12), U = pick(rng, 1, 5), R = pick(rng, 1, 3),
                  M = pick(rng, 1, 4), F = U * R;
    std::vector<std::vector<float>> xs;
    for (int r = 0; r < kRuns; ++r) xs.push_back(uniform(rng, B * I));
    const std::vector<float> wf = uniform(rng, F * I), wt = uniform(rng, F * M), bias = uniform(rng, U);
    CaseGraph cg;
    std::vector<double> hist(static_cast<size_t>(B * F * M), 0.0);  // [B, F, M], oldest first
    std::vector<double> y(static_cast<size_t>(B * U));
    const std::string dims = " B" + std::to_string(B) + " I" + std::to_string(I) + " U" + std::to_string(U) + " rank" +
                             std::to_string(R) + " M" + std::to_string(M);
    Case c;
    if (!integer) {
      const TensorId x = cg.input_f32("x", {B, I}, xs[0]);
      const TensorId w1 = cg.weight("weights_feature", {F, I}, DType::f32, bytes_of(wf));
      const TensorId w2 = cg.weight("weights_time", {F, M}, DType::f32, bytes_of(wt));
      const TensorId st = cg.state("state", {B, F * M}, DType::f32);
      const TensorId b = cg.weight("bias", {U}, DType::f32, bytes_of(bias));
      c = cg.finish("svdf f32" + dims, OpKind::svdf, {x, w1, w2, st, b}, {{"rank", R}, {"activation", std::string("none")}});
      add_state_output(c, st);
      for (int r = 1; r < kRuns; ++r) c.runs.push_back({bytes_of(xs[r])});
    } else {
      // Codes: x i8 (scale 1/128), weights_feature i8 (1/128), weights_time i16 (1/32768),
      // state i16 (scale 1/4096), bias i32 (state scale x weights_time scale), y i8.
      auto i8 = [](const std::vector<float>& v) {
        std::vector<int8_t> q(v.size());
        for (size_t k = 0; k < v.size(); ++k) q[k] = static_cast<int8_t>(std::lround(v[k] * 127));
        return q;
      };
      const double sx = 1.0 / 128, swf = 1.0 / 128, swt = 1.0 / 32768, sst = 1.0 / 4096;
      const double sy = std::sqrt(static_cast<double>(R * M * I)) / 64;
      std::vector<int16_t> wtq(wt.size());
      for (size_t k = 0; k < wt.size(); ++k) wtq[k] = static_cast<int16_t>(std::lround(wt[k] * 32767));
      std::vector<int32_t> bq(bias.size());
      for (size_t k = 0; k < bias.size(); ++k) bq[k] = static_cast<int32_t>(std::lround(bias[k] / (sst * swt)));
      auto q = [](double s, int64_t zp = 0) { return QuantParams{{static_cast<float>(s)}, {zp}}; };
      const TensorId x = cg.input("x", {B, I}, DType::i8, bytes_of(i8(xs[0])), q(sx, 0));
      const TensorId w1 = cg.weight("weights_feature", {F, I}, DType::i8, bytes_of(i8(wf)), q(swf));
      const TensorId w2 = cg.weight("weights_time", {F, M}, DType::i16, bytes_of(wtq), q(swt));
      const TensorId st = cg.state("state", {B, F * M}, DType::i16);
      cg.graph().tensor(st).quant = q(sst);
      const TensorId b = cg.weight("bias", {U}, DType::i32, bytes_of(bq), q(sst * swt));
      c = cg.finish("svdf i8" + dims, OpKind::svdf, {x, w1, w2, st, b}, {{"rank", R}, {"activation", std::string("none")}},
                    DType::i8, q(sy, 3));
      add_state_output(c, st);
      for (int r = 1; r < kRuns; ++r) c.runs.push_back({bytes_of(i8(xs[r]))});
      c.quantized = true;
      c.code_tolerance = 1;
    }
    // The reference: every run shifts each filter's memory and appends x . weights_feature.
    const auto& g = c.g;
    auto value = [&](TensorId id, int64_t k) {  // a weight's real value
      const Tensor& t = g.tensor(id);
      const uint8_t* p = t.data->data;
      switch (t.dtype) {
        case DType::f32: { float v; std::memcpy(&v, p + 4 * k, 4); return double{v}; }
        case DType::i8: return t.quant.scale[0] * double{reinterpret_cast<const int8_t*>(p)[k]};
        case DType::i16: { int16_t v; std::memcpy(&v, p + 2 * k, 2); return t.quant.scale[0] * double{v}; }
        default: { int32_t v; std::memcpy(&v, p + 4 * k, 4); return t.quant.scale[0] * double{v}; }
      }
    };
    const Node& n = g.nodes().back();
    for (int r = 0; r < kRuns; ++r) {
      const std::vector<uint8_t>& xb = c.runs[static_cast<size_t>(r)][0];
      for (int64_t bb = 0; bb < B; ++bb) {
        for (int64_t f = 0; f < F; ++f) {
          double a = 0;
          for (int64_t i = 0; i < I; ++i) {
            const double xv = integer ? (1.0 / 128) * reinterpret_cast<const int8_t*>(xb.data())[bb * I + i]
                                      : double{reinterpret_cast<const float*>(xb.data())[bb * I + i]};
            a += value(n.inputs[1], f * I + i) * xv;
          }
          if (integer) a = std::clamp(std::round(a * 4096), -32768.0, 32767.0) / 4096;  // the i16 state codes
          double* h = &hist[static_cast<size_t>((bb * F + f) * M)];
          for (int64_t m = 0; m + 1 < M; ++m) h[m] = h[m + 1];
          h[M - 1] = a;
        }
        for (int64_t u = 0; u < U; ++u) {
          double s = value(n.inputs[4], u);
          for (int64_t k = 0; k < R; ++k)
            for (int64_t m = 0; m < M; ++m)
              s += value(n.inputs[2], (u * R + k) * M + m) * hist[static_cast<size_t>((bb * F + u * R + k) * M + m)];
          y[static_cast<size_t>(bb * U + u)] = s;
        }
      }
    }
    if (integer) {
      c.expected = expected_codes(y, DType::i8, g.tensor(g.outputs[0]).quant);
    } else {
      c.expected = y;
      c.magnitude.assign(y.size(), 1.0 + static_cast<double>(R * M * I));
      c.accum = R * M + I;
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

}  // namespace
}  // namespace tessera::conformance
