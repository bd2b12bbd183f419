// The demo models on the cpu against independent double-precision computations.
#include "runtime/demo_models.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "tessera/session.h"
#include "tessera/backend/plan.h"

namespace tessera {
namespace {

// ---- decoding stored weights (independently of the kernels) ----

double f16_value(const uint8_t* p) {
  const uint16_t h = static_cast<uint16_t>(p[0] | (p[1] << 8));
  const double s = (h & 0x8000) ? -1 : 1;
  const int ex = (h >> 10) & 0x1f, m = h & 0x3ff;
  return ex == 0 ? s * std::ldexp(m, -24) : s * std::ldexp(1024 + m, ex - 25);
}

// Row-major doubles of a weight tensor stored as f32, f16, q8_0 or q4_0.
std::vector<double> weight_values(const Graph& g, const std::string& name) {
  const Tensor& t = g.tensor(*g.find_tensor(name));
  const uint8_t* d = t.data->data;
  const int64_t n = t.elements();
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) {
    switch (t.dtype) {
      case DType::f32: { float f; std::memcpy(&f, d + 4 * i, 4); v[i] = f; break; }
      case DType::f16: v[i] = f16_value(d + 2 * i); break;
      case DType::q8_0: {
        const uint8_t* blk = d + (i / 32) * 34;
        v[i] = f16_value(blk) * static_cast<int8_t>(blk[2 + i % 32]);
        break;
      }
      case DType::q4_0: {
        const uint8_t* blk = d + (i / 32) * 18;
        const int j = static_cast<int>(i % 32);
        v[i] = f16_value(blk) * ((j < 16 ? (blk[2 + j] & 0x0f) : (blk[2 + j - 16] >> 4)) - 8);
        break;
      }
      default: ADD_FAILURE() << "unexpected weight dtype"; break;
    }
  }
  return v;
}

std::vector<double> floats(const std::vector<uint8_t>& b) {
  std::vector<double> v(b.size() / 4);
  for (size_t i = 0; i < v.size(); ++i) {
    float f;
    std::memcpy(&f, &b[4 * i], 4);
    v[i] = f;
  }
  return v;
}

// Runs every run of a demo model on a device; returns output 0 after the last run.
std::vector<uint8_t> run_model(const demo::DemoModel& m, const std::string& device, int threads = 1) {
  SessionOptions o;
  o.device = device;
  o.device_options["threads"] = std::to_string(threads);
  auto s = Session::create(m.graph, o);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  if (!s.ok()) return {};
  for (const auto& run : m.runs) {
    for (size_t i = 0; i < run.size(); ++i) EXPECT_TRUE((*s)->set_input(i, run[i].data(), run[i].size()).ok());
    Status r = (*s)->run();
    EXPECT_TRUE(r.ok()) << r.to_string();
  }
  auto out = (*s)->output(0);
  EXPECT_TRUE(out.ok()) << out.status().to_string();
  return out.ok() ? *out : std::vector<uint8_t>{};
}

// ---- the transformer block in double ----

using Mat = std::vector<double>;  // row-major

Mat linear(const Mat& x, int64_t rows, int64_t in, const Mat& w, int64_t out) {  // x [rows,in] w [out,in]
  Mat y(rows * out, 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o)
      for (int64_t k = 0; k < in; ++k) y[r * out + o] += x[r * in + k] * w[o * in + k];
  return y;
}

Mat rms_norm(const Mat& x, int64_t rows, int64_t d, const Mat& w, double eps) {
  Mat y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < d; ++i) ss += x[r * d + i] * x[r * d + i];
    const double inv = 1 / std::sqrt(ss / d + eps);
    for (int64_t i = 0; i < d; ++i) y[r * d + i] = x[r * d + i] * inv * w[i];
  }
  return y;
}

// llama rope on x [T, H, HD] at positions p0 + t.
void rope(Mat& x, int64_t T, int64_t H, int64_t HD, int64_t p0, double base) {
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < HD / 2; ++i) {
        const double th = (p0 + t) * std::pow(base, -2.0 * i / HD);
        double& a = x[(t * H + h) * HD + 2 * i];
        double& b = x[(t * H + h) * HD + 2 * i + 1];
        const double a0 = a, b0 = b;
        a = a0 * std::cos(th) - b0 * std::sin(th);
        b = a0 * std::sin(th) + b0 * std::cos(th);
      }
}

TEST(DemoModels, TransformerBlockMatchesADoubleComputation) {
  const demo::TransformerConfig cfg;
  demo::DemoModel m = demo::transformer_block(11, cfg);
  const int64_t T = cfg.tokens, D = cfg.dim, H = cfg.heads, HD = D / H, F = cfg.ffn, L = cfg.context;
  std::vector<double> got = floats(run_model(m, "cpu"));
  ASSERT_EQ(static_cast<int64_t>(got.size()), T * D);

  const Graph& g = m.graph;
  const Mat an = weight_values(g, "attn_norm"), fn = weight_values(g, "ffn_norm");
  const Mat wq = weight_values(g, "wq"), wk = weight_values(g, "wk"), wv = weight_values(g, "wv"), wo = weight_values(g, "wo");
  const Mat wg = weight_values(g, "w_gate"), wu = weight_values(g, "w_up"), wd = weight_values(g, "w_down");
  Mat kcache(H * L * HD, 0.0), vcache(H * L * HD, 0.0), out;
  for (size_t run = 0; run < m.runs.size(); ++run) {
    const int64_t p0 = static_cast<int64_t>(run) * T;
    const Mat x = floats(m.runs[run][0]);
    const Mat xn = rms_norm(x, T, D, an, cfg.eps);
    Mat q = linear(xn, T, D, wq, D), k = linear(xn, T, D, wk, D), v = linear(xn, T, D, wv, D);
    rope(q, T, H, HD, p0, cfg.rope_base);
    rope(k, T, H, HD, p0, cfg.rope_base);
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < HD; ++i) {
          kcache[(h * L + p0 + t) * HD + i] = k[(t * H + h) * HD + i];
          vcache[(h * L + p0 + t) * HD + i] = v[(t * H + h) * HD + i];
        }
    Mat ctx(T * D, 0.0);
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < T; ++t) {
        const int64_t visible = p0 + t + 1;  // causal: cache rows 0 .. p0 + t
        std::vector<double> s(visible);
        double mx = -1e300, sum = 0;
        for (int64_t j = 0; j < visible; ++j) {
          s[j] = 0;
          for (int64_t i = 0; i < HD; ++i) s[j] += q[(t * H + h) * HD + i] * kcache[(h * L + j) * HD + i];
          s[j] /= std::sqrt(static_cast<double>(HD));
          mx = std::max(mx, s[j]);
        }
        for (double& e : s) sum += (e = std::exp(e - mx));
        for (int64_t j = 0; j < visible; ++j)
          for (int64_t i = 0; i < HD; ++i) ctx[t * D + h * HD + i] += s[j] / sum * vcache[(h * L + j) * HD + i];
      }
    Mat attn = linear(ctx, T, D, wo, D), hres(T * D);
    for (int64_t i = 0; i < T * D; ++i) hres[i] = x[i] + attn[i];
    const Mat hn = rms_norm(hres, T, D, fn, cfg.eps);
    Mat gt = linear(hn, T, D, wg, F), up = linear(hn, T, D, wu, F);
    for (int64_t i = 0; i < T * F; ++i) gt[i] = gt[i] / (1 + std::exp(-gt[i])) * up[i];
    Mat ff = linear(gt, T, F, wd, D);
    out.resize(T * D);
    for (int64_t i = 0; i < T * D; ++i) out[i] = hres[i] + ff[i];
  }
  double scale = 0, max_diff = 0;
  for (int64_t i = 0; i < T * D; ++i) {
    scale = std::max(scale, std::fabs(out[i]));
    max_diff = std::max(max_diff, std::fabs(out[i] - got[i]));
  }
  // f32 kernels against double: a few f32 roundings per op over ~20 ops with sums of up to
  // 128 terms stay far below 1e-5 of the output scale.
  EXPECT_LT(max_diff, 1e-5 * scale) << "scale " << scale;
  EXPECT_GT(scale, 0.1) << "the block should produce values of order one";
}

TEST(DemoModels, TransformerBlockIsBitIdenticalForAnyThreadCount) {
  demo::DemoModel m = demo::transformer_block(5);
  EXPECT_EQ(run_model(m, "cpu", 1), run_model(m, "cpu", 2));
  EXPECT_EQ(run_model(m, "cpu", 1), run_model(m, "cpu", 3));
}

// ---- the quantized CNN in double, layer by layer with the same quantization ----

struct QT {
  std::vector<double> v;  // real values
  Shape s;
};

double quant_round(double real, const QuantParams& q, double lo, double hi) {
  const double c = std::round(real / q.scale[0]) + static_cast<double>(q.zero_point[0]);
  return std::clamp(c, lo, hi);
}
// Quantizes to the tensor's u8 parameters and back (what storing it as u8 does).
QT requant(QT t, const QuantParams& q) {
  for (auto& x : t.v) x = q.scale[0] * (quant_round(x, q, 0, 255) - q.zero_point[0]);
  return t;
}
std::vector<double> real_of(const Graph& g, const std::string& name, const std::vector<uint8_t>* bytes = nullptr) {
  const Tensor& t = g.tensor(*g.find_tensor(name));
  const uint8_t* d = bytes ? bytes->data() : t.data->data;
  std::vector<double> v(t.elements());
  for (int64_t i = 0; i < t.elements(); ++i) {
    double c;
    if (t.dtype == DType::i32) {
      int32_t x;
      std::memcpy(&x, d + 4 * i, 4);
      c = x;
    } else {
      c = d[i];
    }
    v[i] = t.quant.scale[0] * (c - t.quant.zero_point_at(0));
  }
  return v;
}

TEST(DemoModels, QuantizedCnnMatchesADoubleComputation) {
  demo::DemoModel m = demo::quantized_cnn(3);
  const Graph& g = m.graph;
  std::vector<uint8_t> got = run_model(m, "cpu");
  ASSERT_EQ(got.size(), 10u);
  const auto& q = [&](const char* name) { return g.tensor(*g.find_tensor(name)).quant; };
  QT x{real_of(g, "image", &m.runs[0][0]), {16, 16, 3}};
  // conv 3x3 stride 2, pad (0,1), 8 channels, relu6.
  auto w1 = real_of(g, "conv/w"), b1 = real_of(g, "conv/b");
  QT c1{std::vector<double>(8 * 8 * 8), {8, 8, 8}};
  for (int oy = 0; oy < 8; ++oy)
    for (int ox = 0; ox < 8; ++ox)
      for (int oc = 0; oc < 8; ++oc) {
        double acc = b1[oc];
        for (int ky = 0; ky < 3; ++ky)
          for (int kx = 0; kx < 3; ++kx) {
            const int iy = oy * 2 + ky, ix = ox * 2 + kx;
            if (iy >= 16 || ix >= 16) continue;
            for (int ic = 0; ic < 3; ++ic) acc += x.v[(iy * 16 + ix) * 3 + ic] * w1[((oc * 3 + ky) * 3 + kx) * 3 + ic];
          }
        c1.v[(oy * 8 + ox) * 8 + oc] = std::clamp(acc, 0.0, 6.0);
      }
  c1 = requant(c1, q("conv"));
  // depthwise 3x3, pad 1, relu6.
  auto w2 = real_of(g, "dw/w"), b2 = real_of(g, "dw/b");
  QT c2{std::vector<double>(8 * 8 * 8), {8, 8, 8}};
  for (int oy = 0; oy < 8; ++oy)
    for (int ox = 0; ox < 8; ++ox)
      for (int ch = 0; ch < 8; ++ch) {
        double acc = b2[ch];
        for (int ky = 0; ky < 3; ++ky)
          for (int kx = 0; kx < 3; ++kx) {
            const int iy = oy - 1 + ky, ix = ox - 1 + kx;
            if (iy < 0 || iy >= 8 || ix < 0 || ix >= 8) continue;
            acc += c1.v[(iy * 8 + ix) * 8 + ch] * w2[(ky * 3 + kx) * 8 + ch];
          }
        c2.v[(oy * 8 + ox) * 8 + ch] = std::clamp(acc, 0.0, 6.0);
      }
  c2 = requant(c2, q("depthwise"));
  QT pool{std::vector<double>(8, 0.0), {8}};
  for (int i = 0; i < 64; ++i)
    for (int ch = 0; ch < 8; ++ch) pool.v[ch] += c2.v[i * 8 + ch] / 64;
  pool = requant(pool, q("pool"));
  auto w3 = real_of(g, "fc/w"), b3 = real_of(g, "fc/b");
  QT logits{std::vector<double>(10), {10}};
  for (int o = 0; o < 10; ++o) {
    logits.v[o] = b3[o];
    for (int k = 0; k < 8; ++k) logits.v[o] += pool.v[k] * w3[o * 8 + k];
  }
  logits = requant(logits, q("fc"));
  double mx = -1e300, sum = 0;
  for (double l : logits.v) mx = std::max(mx, l);
  for (double l : logits.v) sum += std::exp(l - mx);
  int max_diff = 0, distinct = 0;
  for (int o = 0; o < 10; ++o) {
    const double expect = quant_round(std::exp(logits.v[o] - mx) / sum, q("softmax"), 0, 255);
    max_diff = std::max(max_diff, std::abs(static_cast<int>(expect) - got[o]));
    distinct += got[o] != got[0];
  }
  // Four quantized layers, each free to round one code differently from exact arithmetic
  // (TFLite fixed point); a code of the logits moves a probability by at most 8/255 * p.
  EXPECT_LE(max_diff, 4) << "softmax codes differ from the double computation";
  EXPECT_GT(distinct, 0) << "the classifier should not output a constant";
}

TEST(DemoModels, AgreementToleranceOnTheCpuIsOnlyF32Rounding) {
  demo::DemoModel m = demo::transformer_block(1);
  SessionOptions o;
  auto s = Session::create(m.graph, o);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  const double tol = demo::agreement_tolerance((*s)->plan(), 1.0, false);
  // The f16 / q8_0 / q4_0 weights stay in their own encodings on the cpu (no rounding):
  // what remains is f32 summation, about 2^-24 per term of ~20 ops' sums of up to 128
  // terms, times the margin: of order 1e-4, where one bf16 tensor alone would add 2^-8.
  EXPECT_GT(tol, 0.0);
  EXPECT_LT(tol, 1e-3);
}

}  // namespace
}  // namespace tessera
