// The llama step graphs against a llama forward pass computed in double in this test, on
// synthetic models with grouped KV heads, tied embeddings and partial RoPE; prompt
// batching, decode steps and the context limit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>

#include "fixtures.h"
#include "import/gguf/llama_model.h"
#include "import/gguf/synth.h"
#include "synth_model.h"
#include "tessera/backend/convert.h"
#include "runtime/llm/generator.h"
#include "tessera/backend/plan.h"

namespace tessera::gguf {
namespace {

using Vec = std::vector<double>;

// A plain llama forward pass over the f32 weights of `f`, one token at a time, in double.
class Reference {
 public:
  Reference(const File& f, const LlamaParams& p) : f_(f), p_(p) {
    k_.resize(p.layers);
    v_.resize(p.layers);
  }

  Vec step(int32_t token) {
    const int64_t dim = p_.dim, hd = p_.head_dim, H = p_.heads, G = p_.heads / p_.kv_heads;
    const int64_t pos = static_cast<int64_t>(k_[0].size());
    Vec x(w("token_embd.weight") + token * dim, w("token_embd.weight") + (token + 1) * dim);
    for (int64_t l = 0; l < p_.layers; ++l) {
      const std::string b = "blk." + std::to_string(l) + ".";
      Vec h = rms_norm(x, w(b + "attn_norm.weight"));
      Vec q = matvec(b + "attn_q.weight", h), k = matvec(b + "attn_k.weight", h), v = matvec(b + "attn_v.weight", h);
      rope(q, pos);
      rope(k, pos);
      k_[l].push_back(k);
      v_[l].push_back(v);
      Vec o(static_cast<size_t>(H * hd), 0.0);
      for (int64_t head = 0; head < H; ++head) {
        const int64_t kvh = head / G;
        Vec s(static_cast<size_t>(pos + 1));
        double mx = -1e300;
        for (int64_t j = 0; j <= pos; ++j) {
          double d = 0;
          for (int64_t i = 0; i < hd; ++i) d += q[head * hd + i] * k_[l][j][kvh * hd + i];
          s[j] = d / std::sqrt(static_cast<double>(hd));
          mx = std::max(mx, s[j]);
        }
        double sum = 0;
        for (double& e : s) sum += (e = std::exp(e - mx));
        for (int64_t j = 0; j <= pos; ++j)
          for (int64_t i = 0; i < hd; ++i) o[head * hd + i] += s[j] / sum * v_[l][j][kvh * hd + i];
      }
      Vec ao = matvec(b + "attn_output.weight", o);
      for (int64_t i = 0; i < dim; ++i) x[i] += ao[i];
      h = rms_norm(x, w(b + "ffn_norm.weight"));
      Vec g = matvec(b + "ffn_gate.weight", h), u = matvec(b + "ffn_up.weight", h);
      for (size_t i = 0; i < g.size(); ++i) g[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
      Vec d = matvec(b + "ffn_down.weight", g);
      for (int64_t i = 0; i < dim; ++i) x[i] += d[i];
    }
    x = rms_norm(x, w("output_norm.weight"));
    return matvec(p_.tied_output ? "token_embd.weight" : "output.weight", x);
  }

 private:
  // The weight's values as f32: stored f32 as is, other types decoded with the library's
  // conversions (exact for f16, bf16 and the GGUF blocks).
  const float* w(const std::string& name) {
    const TensorInfo* t = f_.find_tensor(name);
    EXPECT_TRUE(t) << name;
    if (t->dtype == DType::f32) return reinterpret_cast<const float*>(t->data.data);
    auto it = decoded_.find(name);
    if (it == decoded_.end()) {
      std::vector<float> v(static_cast<size_t>(num_elements(t->shape)));
      Status s = convert::convert(Format::row_major(t->dtype, t->shape), t->data.data,
                                  Format::row_major(DType::f32, t->shape), v.data());
      EXPECT_TRUE(s.ok()) << s.to_string();
      it = decoded_.emplace(name, std::move(v)).first;
    }
    return it->second.data();
  }
  Vec matvec(const std::string& name, const Vec& x) {
    const TensorInfo* t = f_.find_tensor(name);
    const int64_t rows = t->shape[0], cols = t->shape[1];
    const float* m = w(name);
    Vec y(static_cast<size_t>(rows), 0.0);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) y[r] += static_cast<double>(m[r * cols + c]) * x[c];
    return y;
  }
  Vec rms_norm(const Vec& x, const float* g) const {
    double ss = 0;
    for (double v : x) ss += v * v;
    const double s = 1.0 / std::sqrt(ss / static_cast<double>(x.size()) + p_.rms_eps);
    Vec y(x.size());
    for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * s * g[i];
    return y;
  }
  // llama "normal" RoPE: pairs (2i, 2i+1) of each head, angle pos * base^(-2i/n_dims);
  // dims past n_dims are left as they are.
  void rope(Vec& x, int64_t pos) const {
    const int64_t hd = p_.head_dim, n = static_cast<int64_t>(x.size()) / hd;
    for (int64_t h = 0; h < n; ++h)
      for (int64_t i = 0; i < p_.rope_dims / 2; ++i) {
        double th = static_cast<double>(pos) * std::pow(p_.rope_base, -2.0 * i / static_cast<double>(p_.rope_dims));
        double& a = x[h * hd + 2 * i];
        double& b = x[h * hd + 2 * i + 1];
        double a0 = a, b0 = b;
        a = a0 * std::cos(th) - b0 * std::sin(th);
        b = a0 * std::sin(th) + b0 * std::cos(th);
      }
  }

  const File& f_;
  LlamaParams p_;
  std::vector<std::vector<Vec>> k_, v_;  // [layer][position] -> [Hkv * hd]
  std::map<std::string, std::vector<float>> decoded_;  // non-f32 weights as f32
};

SynthOptions small_gqa() {
  SynthOptions o;
  o.dim = 64;
  o.layers = 2;
  o.heads = 4;
  o.kv_heads = 2;  // two query heads per KV head
  o.ffn = 96;
  o.vocab = 300;
  o.context = 16;
  o.type = DType::f32;
  o.tied_output = true;
  o.seed = 42;
  o.rope_base = 500.0;  // a short context: a small base makes the angles matter
  return o;
}

double max_rel_diff(const std::vector<float>& got, const Vec& want) {
  double scale = 1e-6, diff = 0;
  for (double v : want) scale = std::max(scale, std::fabs(v));
  for (size_t i = 0; i < want.size(); ++i) diff = std::max(diff, std::fabs(got[i] - want[i]));
  return diff / scale;
}

TEST(LlamaReference, GroupedHeadsTiedOutputMatchDoubleForEveryBatching) {
  auto model = synth_model(small_gqa());
  ASSERT_TRUE(model);
  EXPECT_TRUE(model->params().tied_output);
  const std::vector<int32_t> tokens = {1, 270, 33, 281, 299, 5, 260, 100, 7, 290, 12};
  // Reference logits after each token.
  Reference ref(model->file(), model->params());
  std::vector<Vec> want;
  for (int32_t t : tokens) want.push_back(ref.step(t));
  // Prompt of 7 tokens in batches of 1, 3 (padded last chunk) and 4, then decode steps.
  for (int64_t batch : {1, 3, 4}) {
    llm::GeneratorOptions go;
    go.batch = batch;
    go.kv_type = DType::f32;  // exact cache: float rounding only
    auto gen = llm::Generator::create(*model, go);
    ASSERT_TRUE(gen.ok()) << gen.status().to_string();
    const size_t n_prompt = 7;
    auto logits = (*gen)->feed(std::vector<int32_t>(tokens.begin(), tokens.begin() + n_prompt));
    ASSERT_TRUE(logits.ok()) << logits.status().to_string();
    EXPECT_LT(max_rel_diff(*logits, want[n_prompt - 1]), 1e-4) << "batch " << batch;
    for (size_t i = n_prompt; i < tokens.size(); ++i) {
      logits = (*gen)->step(tokens[i]);
      ASSERT_TRUE(logits.ok()) << logits.status().to_string();
      EXPECT_LT(max_rel_diff(*logits, want[i]), 1e-4) << "batch " << batch << " token " << i;
    }
    EXPECT_EQ((*gen)->position(), static_cast<int64_t>(tokens.size()));
    // The decode session shares the prompt session's cache (by name), and neither holds a
    // copy of the weights: the cpu reads them in place from the file's bytes. What the
    // device allocates is the cache and the sessions' activation arenas.
    int64_t arenas = 0;
    std::vector<const Session*> sessions{&(*gen)->decode_session()};
    if (batch > 1) sessions.push_back(&(*gen)->prompt_session());  // none at batch 1
    for (const Session* s : sessions) {
      EXPECT_EQ(s->plan().memory[0].weight_bytes, 0);
      EXPECT_GT(s->plan().memory[0].in_place_bytes, 0);
      for (int64_t a : s->plan().memory[0].arena_bytes) arenas += a;
    }
    const Plan& plan = (*gen)->decode_session().plan();
    EXPECT_LE(plan.devices[0]->counters().allocated_bytes,
              (*gen)->kv_cache_bytes() + arenas + 64 * plan.devices[0]->counters().allocations)
        << "batch " << batch;
  }
}

TEST(LlamaReference, PartialRopeAndSeparateOutput) {
  SynthOptions o = small_gqa();
  o.kv_heads = 4;
  o.tied_output = false;
  auto w = synth_llama(o);
  ASSERT_TRUE(w.ok());
  w->set_u32("llama.rope.dimension_count", 8);  // rotate 8 of the 16 dims of each head
  auto f = File::parse(ConstData::from_vector(*w->bytes()), "synthetic");
  ASSERT_TRUE(f.ok());
  auto model = LlamaModel::load(std::move(*f));
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  EXPECT_EQ((*model)->params().rope_dims, 8);
  Reference ref((*model)->file(), (*model)->params());
  const std::vector<int32_t> tokens = {1, 40, 41, 42, 200};
  Vec want;
  for (int32_t t : tokens) want = ref.step(t);
  llm::GeneratorOptions go;
  go.kv_type = DType::f32;
  auto gen = llm::Generator::create(**model, go);
  ASSERT_TRUE(gen.ok());
  auto logits = (*gen)->feed(tokens);
  ASSERT_TRUE(logits.ok());
  EXPECT_LT(max_rel_diff(*logits, want), 1e-4);
}

// Weights used as stored: each type's step graph against the double forward pass over the
// same weights decoded exactly (f16, bf16 and the GGUF blocks decode exactly to f32).
TEST(LlamaReference, EveryWeightTypeMatchesDouble) {
  for (DType t : {DType::f16, DType::bf16, DType::q8_0, DType::q4_0}) {
    SynthOptions o = small_gqa();
    o.type = t;
    auto model = synth_model(o);
    ASSERT_TRUE(model);
    EXPECT_EQ(model->file().find_tensor("blk.0.attn_q.weight")->dtype, t);
    Reference ref(model->file(), model->params());
    const std::vector<int32_t> tokens = {1, 270, 33, 281, 299, 5};
    Vec want;
    for (int32_t tok : tokens) want = ref.step(tok);
    // Exact activations and an f32 cache: the kernels take the stored values exactly.
    model->set_input_rounding(false);
    llm::GeneratorOptions go;
    go.batch = 4;
    go.kv_type = DType::f32;
    auto gen = llm::Generator::create(*model, go);
    ASSERT_TRUE(gen.ok()) << gen.status().to_string();
    auto logits = (*gen)->feed(tokens);
    ASSERT_TRUE(logits.ok()) << logits.status().to_string();
    // Measured about 1e-7 for every type.
    EXPECT_LT(max_rel_diff(*logits, want), 1e-5) << dtype_name(t);
    // The default path: 8-bit activation blocks against q8_0 / q4_0 weights (as llama.cpp
    // rounds them) and an f16 cache. Each rounding is relative 2^-8 (activations) or
    // 2^-11 (cache) per value; through 2 layers the logits move by about 1e-3 of their
    // scale, measured below and bounded at 2e-2.
    model->set_input_rounding(true);
    go.kv_type = DType::f16;
    auto fast = llm::Generator::create(*model, go);
    ASSERT_TRUE(fast.ok()) << fast.status().to_string();
    auto fast_logits = (*fast)->feed(tokens);
    ASSERT_TRUE(fast_logits.ok()) << fast_logits.status().to_string();
    const double d = max_rel_diff(*fast_logits, want);
    EXPECT_LT(d, 2e-2) << dtype_name(t);
    if (t == DType::q8_0 || t == DType::q4_0) {
      EXPECT_GT(d, 1e-6) << dtype_name(t) << ": the rounding took no effect";
    }
    std::printf("%s: default path %.2e, exact path %.2e of the logits' scale\n", dtype_name(t), d,
                max_rel_diff(*logits, want));
  }
}

// The attention op (cpu layers) and the masked matmul form (other devices' layers) in one
// model, each with an f32 cache, token by token through decode step graphs on the cpu.
TEST(LlamaReference, AttentionOpAndMaskedFormMatchDouble) {
  auto model = synth_model(small_gqa());
  ASSERT_TRUE(model);
  const std::vector<int32_t> tokens = {1, 270, 33, 281, 299, 5, 260};
  Reference ref(model->file(), model->params());
  Vec want;
  for (int32_t t : tokens) want = ref.step(t);
  const int64_t ctx = model->context_length();
  for (int64_t masked_layers : {int64_t{0}, int64_t{1}, model->layers()}) {
    SCOPED_TRACE("masked layers " + std::to_string(masked_layers));
    auto g = model->build_step(1, {masked_layers, DType::f32});
    ASSERT_TRUE(g.ok()) << g.status().to_string();
    int attention_ops = 0;
    for (const Node& n : g->nodes()) attention_ops += n.op == OpKind::attention;
    EXPECT_EQ(attention_ops, model->layers() - masked_layers);
    auto s = Session::create(std::move(*g), SessionOptions{});
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    const int64_t mask_len = masked_layers > 0 ? ctx : 1;
    std::vector<float> logits;
    for (int32_t i = 0; i < static_cast<int32_t>(tokens.size()); ++i) {
      std::vector<float> mask(static_cast<size_t>(mask_len), masked_layers > 0 ? -INFINITY : 0.0f);
      for (int64_t j = 0; j <= i && masked_layers > 0; ++j) mask[j] = 0;
      const int32_t zero = 0;
      ASSERT_TRUE((*s)->set_input(llm::kInTokens, &tokens[i], 4).ok());
      ASSERT_TRUE((*s)->set_input(llm::kInPos, &i, 4).ok());
      ASSERT_TRUE((*s)->set_input(llm::kInMask, mask.data(), mask_len * 4).ok());
      ASSERT_TRUE((*s)->set_input(llm::kInKvPos, &i, 4).ok());
      ASSERT_TRUE((*s)->set_input(llm::kInLast, &zero, 4).ok());
      Status r = (*s)->run();
      ASSERT_TRUE(r.ok()) << r.to_string();
      auto out = (*s)->output(0);
      ASSERT_TRUE(out.ok());
      logits.resize(out->size() / 4);
      std::memcpy(logits.data(), out->data(), out->size());
    }
    EXPECT_LT(max_rel_diff(logits, want), 1e-4);
  }
}

TEST(LlamaReference, ContextLimitIsAClearError) {
  auto model = synth_model(small_gqa());
  ASSERT_TRUE(model);
  llm::GeneratorOptions go;
  go.batch = 4;
  auto gen = llm::Generator::create(*model, go);
  ASSERT_TRUE(gen.ok());
  auto too_long = (*gen)->feed(std::vector<int32_t>(17, 5));
  ASSERT_FALSE(too_long.ok());
  EXPECT_EQ(too_long.status().code(), StatusCode::out_of_range);
  EXPECT_NE(too_long.status().message().find("exceed the context of 16 tokens"), std::string::npos)
      << too_long.status().message();
  // 14 tokens (batches of 4 and a padded one), then 2 steps fill the context exactly.
  ASSERT_TRUE((*gen)->feed(std::vector<int32_t>(14, 7)).ok());
  ASSERT_TRUE((*gen)->step(8).ok());
  ASSERT_TRUE((*gen)->step(9).ok());
  auto full = (*gen)->step(10);
  ASSERT_FALSE(full.ok());
  EXPECT_NE(full.status().message().find("context of 16 tokens is full"), std::string::npos) << full.status().message();
  // generate() stops at the end of the context instead of failing.
  (*gen)->reset();
  llm::Sampler greedy(llm::SamplerOptions{});
  auto st = (*gen)->generate(std::vector<int32_t>(10, 7), 100, greedy, /*eos=*/-1, nullptr);
  ASSERT_TRUE(st.ok()) << st.status().to_string();
  EXPECT_TRUE(st->context_full);
  EXPECT_EQ(st->generated_tokens, 7);  // 16 - 10 steps fed, plus the one sampled from the last logits
}

TEST(LlamaReference, MissingOrMisshapenWeightsAreNamed) {
  SynthOptions o = small_gqa();
  auto w = synth_llama(o);
  ASSERT_TRUE(w.ok());
  w->set_u32("llama.feed_forward_length", 100);  // the ffn weights say 96
  auto f = File::parse(ConstData::from_vector(*w->bytes()), "synthetic");
  ASSERT_TRUE(f.ok());
  auto m = LlamaModel::load(std::move(*f));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("weight 'blk.0.ffn_gate.weight' is [96,64], expected [100,64]"), std::string::npos)
      << m.status().message();
  w->set_u32("llama.feed_forward_length", 96);
  w->set_string("general.architecture", "gpt2");
  f = File::parse(ConstData::from_vector(*w->bytes()), "synthetic");
  ASSERT_TRUE(f.ok());
  m = LlamaModel::load(std::move(*f));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("general.architecture = 'gpt2' is not supported"), std::string::npos);
}

// Settings Tessera does not implement are refused naming their key, never ignored.
TEST(LlamaReference, UnsupportedSettingsNameTheirKey) {
  auto load = [](Writer& w) {
    auto f = File::parse(ConstData::from_vector(*w.bytes()), "synthetic");
    EXPECT_TRUE(f.ok());
    return LlamaModel::load(std::move(*f));
  };
  auto w = synth_llama(small_gqa());
  ASSERT_TRUE(w.ok());
  w->set_string("llama.rope.scaling.type", "linear");
  auto m = load(*w);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("llama.rope.scaling.type = 'linear' is not supported"), std::string::npos)
      << m.status().message();
  w->set_string("llama.rope.scaling.type", "none");
  EXPECT_TRUE(load(*w).ok());
  // A qwen2 file needs its q/k/v biases; its keys carry the "qwen2." prefix.
  w->set_string("general.architecture", "qwen2");
  m = load(*w);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("qwen2.embedding_length"), std::string::npos) << m.status().message();
  const SynthOptions o = small_gqa();
  for (auto [key, v] : {std::pair<const char*, int64_t>{"embedding_length", o.dim}, {"block_count", o.layers},
                        {"feed_forward_length", o.ffn}, {"attention.head_count", o.heads},
                        {"attention.head_count_kv", o.kv_heads}, {"context_length", o.context}})
    w->set_u32(std::string("qwen2.") + key, static_cast<uint32_t>(v));
  m = load(*w);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("weight 'blk.0.attn_q.bias' is missing"), std::string::npos)
      << m.status().message();
}

}  // namespace
}  // namespace tessera::gguf
