// Conformance cases: lstm (f32; forward, and reverse: the steps from the last to the
// first; with peephole weights, projection with bias and clipping, layer norm), over two
// runs that share the state tensors, against an LSTM computed in double. The integer form is judged byte for byte by the TFLite
// interpreter instead (tests/oracle/lstm_oracle_test.cpp).
// svdf (TFLite's SVDF), f32 and integer, over three runs of one session: the state (a
// Role::state tensor, updated in place through the node's second output, which add_op
// creates) carries each filter's last M activations from one run to the next. The
// reference keeps the activations in double; the integer case rounds them to the state's
// int16 codes as the op does (the state is part of its definition) and allows one code.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "conformance/conformance.h"
#include "ops/lstm_inputs.h"

namespace tessera::conformance {
namespace {

double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

TESSERA_CONFORMANCE_CASES(lstm) {
  std::vector<Case> cases;
  for (int variant = 0; variant < 8; ++variant) {
    // 0 clipping, 1 time-major, 2 CIFG, 3 reverse, 4 peephole, 5 projection (bias, clip),
    // 6 layer norm, 7 all three with CIFG.
    const bool time_major = variant == 1 || variant == 5, cifg = variant == 2 || variant == 7, reverse = variant == 3;
    const bool peephole = variant == 4 || variant == 7, projection = variant == 5 || variant == 7;
    const bool norm = variant == 6 || variant == 7;
    const int64_t B = pick(rng, 1, 3), T = pick(rng, 1, 4), I = pick(rng, 1, 6), C = pick(rng, norm ? 2 : 1, 6);
    const int64_t P = projection ? pick(rng, 1, 7) : C;
    const double clip = variant == 0 || variant == 7 ? 0.8 : 0.0;
    const double proj_clip = variant == 5 ? 0.6 : 0.0;
    CaseGraph cg;
    const Shape xs = time_major ? Shape{T, B, I} : Shape{B, T, I};
    const std::vector<float> x1 = uniform(rng, B * T * I), x2 = uniform(rng, B * T * I);
    std::vector<TensorId> in(lstm::kNumInputs, kNoTensor);
    in[0] = cg.input_f32("x", xs, x1);
    std::vector<float> w[4], r[4], b[4], pw[4], ln[4], wp, bp;
    const char* gate = "ifco";
    for (int k = cifg ? 1 : 0; k < 4; ++k) {
      w[k] = uniform(rng, C * I, -0.7f, 0.7f);
      r[k] = uniform(rng, C * P, -0.7f, 0.7f);
      b[k] = uniform(rng, C, -0.5f, 0.5f);
      in[lstm::weights(k)] = cg.weight(std::string("w_") + gate[k], {C, I}, DType::f32, bytes_of(w[k]));
      in[lstm::recurrent(k)] = cg.weight(std::string("r_") + gate[k], {C, P}, DType::f32, bytes_of(r[k]));
      in[lstm::bias(k)] = cg.weight(std::string("b_") + gate[k], {C}, DType::f32, bytes_of(b[k]));
      if (peephole && k != 2) {
        pw[k] = uniform(rng, C, -0.5f, 0.5f);
        in[lstm::peephole(k)] = cg.weight(std::string("p_") + gate[k], {C}, DType::f32, bytes_of(pw[k]));
      }
      if (norm) {
        ln[k] = uniform(rng, C, 0.5f, 1.5f);
        in[lstm::layer_norm(k)] = cg.weight(std::string("ln_") + gate[k], {C}, DType::f32, bytes_of(ln[k]));
      }
    }
    if (projection) {
      wp = uniform(rng, P * C, -0.6f, 0.6f);
      bp = uniform(rng, P, -0.3f, 0.3f);
      in[lstm::kProjectionWeights] = cg.weight("w_proj", {P, C}, DType::f32, bytes_of(wp));
      in[lstm::kProjectionBias] = cg.weight("b_proj", {P}, DType::f32, bytes_of(bp));
    }
    in[lstm::kHidden] = cg.state("h", {B, P}, DType::f32);
    in[lstm::kCell] = cg.state("c", {B, C}, DType::f32);
    // The optional tensors at the end may be left off.
    while (in.size() > 12 && in.back() == kNoTensor) in.pop_back();
    Case c = cg.finish("lstm f32 B" + std::to_string(B) + " T" + std::to_string(T) + " I" + std::to_string(I) + " C" +
                           std::to_string(C) + (projection ? " P" + std::to_string(P) : "") +
                           (time_major ? " time-major" : "") + (cifg ? " cifg" : "") + (clip > 0 ? " clip" : "") +
                           (reverse ? " reverse" : "") + (peephole ? " peephole" : "") + (norm ? " layer-norm" : "") +
                           (proj_clip > 0 ? " proj-clip" : "") + ", two runs",
                       OpKind::lstm, in,
                       {{"cell_clip", clip}, {"proj_clip", proj_clip}, {"time_major", int64_t{time_major ? 1 : 0}},
                        {"reverse", int64_t{reverse}}});
    c.runs.push_back({bytes_of(x2)});
    // The reference: both runs in sequence from a zero state; output 0 of the second.
    std::vector<double> h(B * P, 0.0), cell(B * C, 0.0);
    c.expected.assign(B * T * P, 0.0);
    for (const std::vector<float>* x : {&x1, &x2}) {
      for (int64_t step = 0; step < T; ++step)
        for (int64_t bb = 0; bb < B; ++bb) {
          const int64_t t = reverse ? T - 1 - step : step;  // reverse: the last step first
          const int64_t row = time_major ? t * B + bb : bb * T + t;
          std::vector<double> g[4];
          auto compute = [&](int k) {  // the output gate's peephole reads the new cell state
            g[k].resize(C);
            for (int64_t j = 0; j < C; ++j) {
              double v = norm ? 0.0 : b[k][j];
              for (int64_t q = 0; q < I; ++q) v += double{w[k][j * I + q]} * (*x)[row * I + q];
              for (int64_t q = 0; q < P; ++q) v += double{r[k][j * P + q]} * h[bb * P + q];
              if (peephole && k != 2) v += double{pw[k][j]} * cell[bb * C + j];
              g[k][j] = v;
            }
            if (norm) {
              double mean = 0, var = 0;
              for (double v : g[k]) mean += v / static_cast<double>(C);
              for (double v : g[k]) var += (v - mean) * (v - mean) / static_cast<double>(C);
              for (int64_t j = 0; j < C; ++j) g[k][j] = (g[k][j] - mean) / std::sqrt(var + 1e-8) * ln[k][j] + b[k][j];
            }
            for (double& v : g[k]) v = k == 2 ? std::tanh(v) : sigmoid(v);
          };
          for (int k = cifg ? 1 : 0; k < 3; ++k) compute(k);
          for (int64_t j = 0; j < C; ++j) {
            const double i = cifg ? 1.0 - g[1][j] : g[0][j];
            double v = g[1][j] * cell[bb * C + j] + g[2][j] * i;
            if (clip > 0) v = std::min(std::max(v, -clip), clip);
            cell[bb * C + j] = v;
          }
          compute(3);
          std::vector<double> m(C);
          for (int64_t j = 0; j < C; ++j) m[j] = g[3][j] * std::tanh(cell[bb * C + j]);
          for (int64_t o = 0; o < P; ++o) {
            double v = m[o % C];
            if (projection) {
              v = bp[o];
              for (int64_t j = 0; j < C; ++j) v += double{wp[o * C + j]} * m[j];
              if (proj_clip > 0) v = std::min(std::max(v, -proj_clip), proj_clip);
            }
            h[bb * P + o] = v;
            c.expected[row * P + o] = v;
          }
        }
    }
    // Gates and tanh keep m in [-1, 1]; a projection sums C of them.
    c.magnitude.assign(c.expected.size(), projection ? 1.0 + 0.6 * static_cast<double>(C) : 1.0);
    c.accum = 2 * T * (I + P + C + 8);  // sums per gate (and layer norm), carried through the steps
    cases.push_back(std::move(c));
  }
  return cases;
}

constexpr int kSvdfRuns = 3;

TESSERA_CONFORMANCE_CASES(svdf) {
  std::vector<Case> cases;
  for (bool integer : {false, true}) {
    const int64_t B = pick(rng, 1, 3), I = pick(rng, 1, 12), U = pick(rng, 1, 5), R = pick(rng, 1, 3),
                  M = pick(rng, 1, 4), F = U * R;
    std::vector<std::vector<float>> xs;
    for (int r = 0; r < kSvdfRuns; ++r) xs.push_back(uniform(rng, B * I));
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
      for (int r = 1; r < kSvdfRuns; ++r) c.runs.push_back({bytes_of(xs[r])});
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
      for (int r = 1; r < kSvdfRuns; ++r) c.runs.push_back({bytes_of(i8(xs[r]))});
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
    for (int r = 0; r < kSvdfRuns; ++r) {
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
