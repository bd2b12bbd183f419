// The built-in demo models (see demo_models.h).
#include "runtime/demo_models.h"

#include <cmath>
#include <cstring>
#include <random>

#include "convert/dtype.h"
#include "tessera/backend/plan.h"

namespace tessera::demo {

namespace {

using Rng = std::mt19937;

std::vector<float> uniform(Rng& rng, int64_t n, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

template <typename T>
std::vector<uint8_t> bytes_of(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// ---- weight encodings ----

std::vector<uint8_t> to_f16(const std::vector<float>& v) {
  std::vector<uint16_t> h(v.size());
  for (size_t i = 0; i < v.size(); ++i) h[i] = convert::f32_to_f16(v[i]);
  return bytes_of(h);
}

void put_f16(std::vector<uint8_t>& out, float d) {
  const uint16_t h = convert::f32_to_f16(d);
  out.push_back(static_cast<uint8_t>(h & 0xff));
  out.push_back(static_cast<uint8_t>(h >> 8));
}

// GGUF q8_0, block by block along rows of 32: d = max|x| / 127, q = round(x / d).
std::vector<uint8_t> to_q8_0(const std::vector<float>& v) {
  std::vector<uint8_t> out;
  for (size_t b = 0; b < v.size(); b += kQBlock) {
    float amax = 0;
    for (int i = 0; i < kQBlock; ++i) amax = std::max(amax, std::fabs(v[b + i]));
    const float d = amax / 127.0f;
    put_f16(out, d);
    for (int i = 0; i < kQBlock; ++i)
      out.push_back(static_cast<uint8_t>(static_cast<int8_t>(d == 0 ? 0 : std::lround(v[b + i] / d))));
  }
  return out;
}

// GGUF q4_0: d = (the value of largest magnitude) / -8, nibble = clamp(round(x / d) + 8, 0, 15);
// byte j holds value j (low nibble) and value j + 16 (high nibble).
std::vector<uint8_t> to_q4_0(const std::vector<float>& v) {
  std::vector<uint8_t> out;
  for (size_t b = 0; b < v.size(); b += kQBlock) {
    float mx = 0;
    for (int i = 0; i < kQBlock; ++i)
      if (std::fabs(v[b + i]) > std::fabs(mx)) mx = v[b + i];
    const float d = mx / -8.0f;
    put_f16(out, d);
    auto code = [&](int i) { return d == 0 ? 8 : static_cast<int>(std::clamp(std::lround(v[b + i] / d) + 8, 0L, 15L)); };
    for (int j = 0; j < kQBlock / 2; ++j) out.push_back(static_cast<uint8_t>(code(j) | (code(j + kQBlock / 2) << 4)));
  }
  return out;
}

// ---- graph building ----

class Builder {
 public:
  explicit Builder(Graph& g) : g_(g) {}
  TensorId input(const std::string& name, Shape s, DType t, QuantParams q = {}) {
    Tensor x;
    x.name = name;
    x.shape = std::move(s);
    x.dtype = t;
    x.quant = std::move(q);
    x.role = Role::input;
    TensorId id = g_.add_tensor(x);
    g_.inputs.push_back(id);
    return id;
  }
  TensorId weight(const std::string& name, Shape s, DType t, std::vector<uint8_t> bytes, QuantParams q = {}) {
    Tensor w;
    w.name = name;
    w.shape = std::move(s);
    w.dtype = t;
    w.quant = std::move(q);
    w.role = Role::weight;
    w.data = ConstData::from_vector(std::move(bytes));
    return g_.add_tensor(w);
  }
  TensorId state(const std::string& name, Shape s) {
    Tensor x;
    x.name = name;
    x.shape = std::move(s);
    x.role = Role::state;
    return g_.add_tensor(x);
  }
  // add_op on a graph built from known-good pieces: a failure is a bug in this file.
  TensorId op(OpKind k, std::vector<TensorId> in, AttrMap attrs, const std::string& name,
              std::optional<DType> dt = std::nullopt, QuantParams q = {}) {
    auto r = g_.add_op(k, std::move(in), std::move(attrs), name, dt, std::move(q));
    TS_CHECK(r.ok(), "demo model: " + r.status().to_string());
    return *r;
  }
  void output(TensorId id) {
    g_.tensor(id).role = Role::output;
    g_.outputs.push_back(id);
  }

 private:
  Graph& g_;
};

QuantParams per_tensor(double scale, int64_t zero_point) {
  QuantParams q;
  q.scale = {static_cast<float>(scale)};
  q.zero_point = {zero_point};
  return q;
}

// Random u8 codes (a quantized weight or image).
std::vector<uint8_t> random_codes(Rng& rng, int64_t n) {
  std::uniform_int_distribution<int> d(0, 255);
  std::vector<uint8_t> v(n);
  for (auto& x : v) x = static_cast<uint8_t>(d(rng));
  return v;
}

// An i32 bias at scale in_scale * w_scale for real values in [-range, range].
std::vector<uint8_t> random_bias(Rng& rng, int64_t n, double scale, float range) {
  std::vector<int32_t> b(n);
  auto real = uniform(rng, n, -range, range);
  for (int64_t i = 0; i < n; ++i) b[i] = static_cast<int32_t>(std::lround(real[i] / scale));
  return bytes_of(b);
}

}  // namespace

DemoModel quantized_cnn(uint32_t seed) {
  Rng rng(seed);
  DemoModel m;
  m.name = "quantized CNN";
  m.description = "u8 conv2d 3x3/2 -> depthwise_conv2d 3x3 -> avg_pool2d -> fully_connected -> softmax";
  Builder b(m.graph);
  // Scales: an image in [0, 1]; weights in [-0.5, 0.5] (conv) and [-1, 1]; relu6 outputs in
  // [0, 6]; logits in [-4, 4]; softmax fixed at 1/256 (TFLite).
  const QuantParams q_img = per_tensor(1.0 / 255, 0), q_w1 = per_tensor(1.0 / 255, 128), q_w2 = per_tensor(2.0 / 255, 128);
  const QuantParams q_relu6 = per_tensor(6.0 / 255, 0), q_logits = per_tensor(8.0 / 255, 128), q_prob = per_tensor(1.0 / 256, 0);
  auto bias_q = [](const QuantParams& in, const QuantParams& w) { return per_tensor(double(in.scale[0]) * w.scale[0], 0); };

  TensorId x = b.input("image", {1, 16, 16, 3}, DType::u8, q_img);
  TensorId w1 = b.weight("conv/w", {8, 3, 3, 3}, DType::u8, random_codes(rng, 8 * 27), q_w1);
  TensorId b1 = b.weight("conv/b", {8}, DType::i32, random_bias(rng, 8, bias_q(q_img, q_w1).scale[0], 0.2f), bias_q(q_img, q_w1));
  // TFLite SAME padding for 16 -> 8 at stride 2 with a 3x3 filter: 0 before, 1 after.
  TensorId c1 = b.op(OpKind::conv2d, {x, w1, b1},
                     {{"stride_h", int64_t{2}}, {"stride_w", int64_t{2}}, {"pad_bottom", int64_t{1}}, {"pad_right", int64_t{1}},
                      {"activation", std::string("relu6")}},
                     "conv", DType::u8, q_relu6);
  TensorId w2 = b.weight("dw/w", {1, 3, 3, 8}, DType::u8, random_codes(rng, 72), q_w2);
  TensorId b2 = b.weight("dw/b", {8}, DType::i32, random_bias(rng, 8, bias_q(q_relu6, q_w2).scale[0], 0.2f), bias_q(q_relu6, q_w2));
  TensorId c2 = b.op(OpKind::depthwise_conv2d, {c1, w2, b2},
                     {{"pad_top", int64_t{1}}, {"pad_bottom", int64_t{1}}, {"pad_left", int64_t{1}}, {"pad_right", int64_t{1}},
                      {"activation", std::string("relu6")}},
                     "depthwise", DType::u8, q_relu6);
  TensorId p = b.op(OpKind::avg_pool2d, {c2},
                    {{"filter_h", int64_t{8}}, {"filter_w", int64_t{8}}, {"stride_h", int64_t{8}}, {"stride_w", int64_t{8}}},
                    "pool", DType::u8, q_relu6);
  TensorId r = b.op(OpKind::reshape, {p}, {{"shape", std::vector<int64_t>{1, 8}}}, "flatten", DType::u8, q_relu6);
  TensorId w3 = b.weight("fc/w", {10, 8}, DType::u8, random_codes(rng, 80), q_w2);
  TensorId b3 = b.weight("fc/b", {10}, DType::i32, random_bias(rng, 10, bias_q(q_relu6, q_w2).scale[0], 0.5f), bias_q(q_relu6, q_w2));
  TensorId fc = b.op(OpKind::fully_connected, {r, w3, b3}, {}, "fc", DType::u8, q_logits);
  TensorId y = b.op(OpKind::softmax, {fc}, {}, "softmax", DType::u8, q_prob);
  b.output(y);
  m.runs = {{random_codes(rng, 16 * 16 * 3)}};
  return m;
}

DemoModel transformer_block(uint32_t seed, const TransformerConfig& cfg) {
  Rng rng(seed);
  const int64_t T = cfg.tokens, D = cfg.dim, H = cfg.heads, HD = D / H, F = cfg.ffn, L = cfg.context;
  TS_CHECK(D % H == 0 && D % kQBlock == 0 && F % kQBlock == 0 && L >= 2 * T, "bad transformer config");
  DemoModel m;
  m.name = "transformer block";
  m.description = "rms_norm, q/k/v fully_connected, rope, scatter_rows KV cache, masked softmax attention, SwiGLU FFN";
  Builder b(m.graph);
  // Weights scaled so that activations stay of order one (uniform(-a, a) has variance a^2/3).
  const float wa = std::sqrt(3.0f / static_cast<float>(D)), fa = std::sqrt(3.0f / static_cast<float>(F));
  TensorId x = b.input(names::kX, {T, D}, DType::f32);
  TensorId pos = b.input(names::kPos, {1}, DType::i32);
  TensorId positions = b.input(names::kPositions, {T}, DType::i32);
  TensorId mask = b.input(names::kMask, {T, L}, DType::f32);
  TensorId kc = b.state(names::kKCache, {H, L, HD});
  TensorId vc = b.state(names::kVCache, {H, L, HD});
  TensorId attn_norm = b.weight("attn_norm", {D}, DType::f32, bytes_of(uniform(rng, D, 0.8f, 1.2f)));
  TensorId wq = b.weight("wq", {D, D}, DType::f16, to_f16(uniform(rng, D * D, -wa, wa)));
  TensorId wk = b.weight("wk", {D, D}, DType::f16, to_f16(uniform(rng, D * D, -wa, wa)));
  TensorId wv = b.weight("wv", {D, D}, DType::f16, to_f16(uniform(rng, D * D, -wa, wa)));
  TensorId wo = b.weight("wo", {D, D}, DType::f16, to_f16(uniform(rng, D * D, -wa, wa)));
  TensorId ffn_norm = b.weight("ffn_norm", {D}, DType::f32, bytes_of(uniform(rng, D, 0.8f, 1.2f)));
  TensorId w_gate = b.weight("w_gate", {F, D}, DType::q8_0, to_q8_0(uniform(rng, F * D, -wa, wa)));
  TensorId w_up = b.weight("w_up", {F, D}, DType::q8_0, to_q8_0(uniform(rng, F * D, -wa, wa)));
  TensorId w_down = b.weight("w_down", {D, F}, DType::q4_0, to_q4_0(uniform(rng, D * F, -fa, fa)));

  const std::vector<int64_t> heads_first = {1, 0, 2};  // [T, H, HD] <-> [H, T, HD]
  const AttrMap rope_attrs = {{"freq_base", cfg.rope_base}, {"mode", std::string("normal")}};
  TensorId xn = b.op(OpKind::rms_norm, {x, attn_norm}, {{"eps", cfg.eps}}, "attn_norm_out");
  TensorId q = b.op(OpKind::fully_connected, {xn, wq}, {}, "q");
  TensorId k = b.op(OpKind::fully_connected, {xn, wk}, {}, "k");
  TensorId v = b.op(OpKind::fully_connected, {xn, wv}, {}, "v");
  const std::vector<int64_t> thd = {T, H, HD};
  TensorId qr = b.op(OpKind::rope, {b.op(OpKind::reshape, {q}, {{"shape", thd}}, "q3"), positions}, rope_attrs, "q_rope");
  TensorId kr = b.op(OpKind::rope, {b.op(OpKind::reshape, {k}, {{"shape", thd}}, "k3"), positions}, rope_attrs, "k_rope");
  TensorId v3 = b.op(OpKind::reshape, {v}, {{"shape", thd}}, "v3");
  TensorId qh = b.op(OpKind::transpose, {qr}, {{"perm", heads_first}}, "q_heads");
  TensorId kh = b.op(OpKind::transpose, {kr}, {{"perm", heads_first}}, "k_heads");
  TensorId vh = b.op(OpKind::transpose, {v3}, {{"perm", heads_first}}, "v_heads");
  TensorId keys = b.op(OpKind::scatter_rows, {kc, kh, pos}, {{"axis", int64_t{-2}}}, "keys");      // [H, L, HD]
  TensorId values = b.op(OpKind::scatter_rows, {vc, vh, pos}, {{"axis", int64_t{-2}}}, "values");  // [H, L, HD]
  TensorId scores = b.op(OpKind::matmul, {qh, keys}, {{"transpose_b", int64_t{1}}}, "scores");     // [H, T, L]
  TensorId probs = b.op(OpKind::softmax, {scores, mask}, {{"beta", 1.0 / std::sqrt(static_cast<double>(HD))}}, "probs");
  TensorId ctx = b.op(OpKind::matmul, {probs, values}, {}, "context");  // [H, T, HD]
  TensorId ct = b.op(OpKind::transpose, {ctx}, {{"perm", heads_first}}, "context_tokens");
  TensorId c2 = b.op(OpKind::reshape, {ct}, {{"shape", std::vector<int64_t>{T, D}}}, "context_flat");
  TensorId h = b.op(OpKind::add, {x, b.op(OpKind::fully_connected, {c2, wo}, {}, "attn_out")}, {}, "h");
  TensorId hn = b.op(OpKind::rms_norm, {h, ffn_norm}, {{"eps", cfg.eps}}, "ffn_norm_out");
  TensorId gate = b.op(OpKind::silu, {b.op(OpKind::fully_connected, {hn, w_gate}, {}, "gate")}, {}, "gate_silu");
  TensorId up = b.op(OpKind::fully_connected, {hn, w_up}, {}, "up");
  TensorId ff = b.op(OpKind::fully_connected, {b.op(OpKind::mul, {gate, up}, {}, "swiglu"), w_down}, {}, "ffn_out");
  TensorId out = b.op(OpKind::add, {h, ff}, {}, "out");
  b.output(out);

  // Two runs: tokens [0, T) then [T, 2T). Row i of the mask admits cache rows <= pos + i.
  for (int run = 0; run < 2; ++run) {
    const int32_t p0 = static_cast<int32_t>(run * T);
    std::vector<int32_t> ps(T);
    std::vector<float> mk(T * L);
    for (int64_t i = 0; i < T; ++i) {
      ps[i] = p0 + static_cast<int32_t>(i);
      for (int64_t j = 0; j < L; ++j) mk[i * L + j] = j <= p0 + i ? 0.0f : -INFINITY;
    }
    m.runs.push_back({bytes_of(uniform(rng, T * D, -1.0f, 1.0f)), bytes_of(std::vector<int32_t>{p0}), bytes_of(ps),
                      bytes_of(mk)});
  }
  return m;
}

// ---- agreement tolerance ----

namespace {
// Unit error of one rounding into an encoding (bfp: of its block's max); exact ones are 0.
double unit_error(Encoding e) {
  switch (e) {
    case Encoding::f32: return 0x1p-24;    // binary32 unit roundoff
    case Encoding::f16: return 0x1p-11;    // binary16
    case Encoding::bf16: return 0x1p-8;    // bfloat16
    case Encoding::bfp8_b: return 0x1p-6;  // 7-bit mantissas under a shared exponent
    case Encoding::bfp4_b: return 0x1p-2;  // 3-bit mantissas under a shared exponent
    default: return 0.0;
  }
}
// Headroom over the first-order sum: errors of several tensors per node, libm ulps.
constexpr double kMargin = 4.0;
bool moves_only(OpKind k) {
  return k == OpKind::reshape || k == OpKind::transpose || k == OpKind::slice || k == OpKind::strided_slice ||
         k == OpKind::pad || k == OpKind::gather || k == OpKind::scatter_rows || k == OpKind::transfer ||
         k == OpKind::resize_nearest || k == OpKind::max_pool2d;
}
}  // namespace

double agreement_tolerance(const Plan& plan, double output_scale, bool quantized_output) {
  double rel = 0;
  int rounding_nodes = 0;
  const Graph& g = plan.graph;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.nodes()[i];
    // Only a format coarser than the tensor's own dtype rounds its values (f16 weights
    // kept as f16 are exact; f32 activations held as bf16 are not).
    double worst = 0;
    auto consider = [&](TensorId id) {
      const Encoding e = plan.tensors[id].format.encoding;
      if (e != encoding_of(g.tensor(id).dtype)) worst = std::max(worst, unit_error(e));
    };
    for (TensorId id : n.inputs)
      if (id != kNoTensor) consider(id);
    for (TensorId id : n.outputs) consider(id);
    // A dot product of K terms may round K times (summation order differs by device).
    int64_t k = 1;
    if (n.op == OpKind::fully_connected) k = g.tensor(n.inputs[1]).shape.back();
    if (n.op == OpKind::matmul) k = g.tensor(n.inputs[0]).shape.back();
    // The device's own product error on matrix ops (a tile device's math fidelity).
    if (n.op == OpKind::fully_connected || n.op == OpKind::matmul || n.op == OpKind::conv2d ||
        n.op == OpKind::depthwise_conv2d)
      worst += plan.devices[plan.nodes[i].device]->properties().matrix_product_error;
    rel += worst + static_cast<double>(k) * 0x1p-24;
    const Tensor& out = g.tensor(n.outputs[0]);
    if (!moves_only(n.op) && dtype_is_quantized_int(out.dtype) && !out.quant.empty()) ++rounding_nodes;
  }
  if (quantized_output) return static_cast<double>(rounding_nodes);
  return kMargin * rel * output_scale;
}

}  // namespace tessera::demo
