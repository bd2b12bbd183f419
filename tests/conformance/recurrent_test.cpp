// Conformance cases: lstm (f32), over two runs that share the state tensors, against an
// LSTM computed in double. The integer form is judged byte for byte by the TFLite
// interpreter instead (tests/oracle/lstm_oracle_test.cpp).
#include <algorithm>
#include <cmath>

#include "conformance/conformance.h"
#include "ops/lstm_inputs.h"

namespace tessera::conformance {
namespace {

double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

TESSERA_CONFORMANCE_CASES(lstm) {
  std::vector<Case> cases;
  for (int variant = 0; variant < 3; ++variant) {
    const bool time_major = variant == 1, cifg = variant == 2;
    const int64_t B = pick(rng, 1, 3), T = pick(rng, 1, 4), I = pick(rng, 1, 6), C = pick(rng, 1, 6);
    const double clip = variant == 0 ? 0.8 : 0.0;
    CaseGraph cg;
    const Shape xs = time_major ? Shape{T, B, I} : Shape{B, T, I};
    const std::vector<float> x1 = uniform(rng, B * T * I), x2 = uniform(rng, B * T * I);
    std::vector<TensorId> in(15, kNoTensor);
    in[0] = cg.input_f32("x", xs, x1);
    std::vector<float> w[4], r[4], b[4];
    const char* gate = "ifco";
    for (int k = cifg ? 1 : 0; k < 4; ++k) {
      w[k] = uniform(rng, C * I, -0.7f, 0.7f);
      r[k] = uniform(rng, C * C, -0.7f, 0.7f);
      b[k] = uniform(rng, C, -0.5f, 0.5f);
      in[lstm::weights(k)] = cg.weight(std::string("w_") + gate[k], {C, I}, DType::f32, bytes_of(w[k]));
      in[lstm::recurrent(k)] = cg.weight(std::string("r_") + gate[k], {C, C}, DType::f32, bytes_of(r[k]));
      in[lstm::bias(k)] = cg.weight(std::string("b_") + gate[k], {C}, DType::f32, bytes_of(b[k]));
    }
    in[lstm::kHidden] = cg.state("h", {B, C}, DType::f32);
    in[lstm::kCell] = cg.state("c", {B, C}, DType::f32);
    if (cifg) in.resize(12);  // the optional input-gate tensors are the last three
    Case c = cg.finish("lstm f32 B" + std::to_string(B) + " T" + std::to_string(T) + " I" + std::to_string(I) + " C" +
                           std::to_string(C) + (time_major ? " time-major" : "") + (cifg ? " cifg" : "") +
                           (clip > 0 ? " clip" : "") + ", two runs",
                       OpKind::lstm, in,
                       {{"cell_clip", clip}, {"time_major", int64_t{time_major ? 1 : 0}}});
    c.runs.push_back({bytes_of(x2)});
    // The reference: both runs in sequence from a zero state; output 0 of the second.
    std::vector<double> h(B * C, 0.0), cell(B * C, 0.0);
    c.expected.assign(B * T * C, 0.0);
    for (const std::vector<float>* x : {&x1, &x2}) {
      for (int64_t t = 0; t < T; ++t)
        for (int64_t bb = 0; bb < B; ++bb) {
          const int64_t row = time_major ? t * B + bb : bb * T + t;
          std::vector<double> g[4];
          for (int k = cifg ? 1 : 0; k < 4; ++k) {
            g[k].resize(C);
            for (int64_t j = 0; j < C; ++j) {
              double v = b[k][j];
              for (int64_t q = 0; q < I; ++q) v += double{w[k][j * I + q]} * (*x)[row * I + q];
              for (int64_t q = 0; q < C; ++q) v += double{r[k][j * C + q]} * h[bb * C + q];
              g[k][j] = k == 2 ? std::tanh(v) : sigmoid(v);
            }
          }
          for (int64_t j = 0; j < C; ++j) {
            const double i = cifg ? 1.0 - g[1][j] : g[0][j];
            double v = g[1][j] * cell[bb * C + j] + g[2][j] * i;
            if (clip > 0) v = std::min(std::max(v, -clip), clip);
            cell[bb * C + j] = v;
            h[bb * C + j] = g[3][j] * std::tanh(v);
            c.expected[row * C + j] = h[bb * C + j];
          }
        }
    }
    c.magnitude.assign(c.expected.size(), 1.0);  // gates and tanh keep every value in [-1, 1]
    c.accum = 2 * T * (I + C + 4);               // sums per gate, carried through the steps
    cases.push_back(std::move(c));
  }
  return cases;
}

}  // namespace
}  // namespace tessera::conformance
