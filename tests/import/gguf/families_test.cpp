// The architectures beyond llama and qwen2 (qwen3, gemma3, gemma2, phi3) against llama.cpp,
// on the random-weight models of ../shared/models/gguf/families (refs/: llama.cpp's greedy
// ids with each step's top-1/top-2 margin, and its first-step logits; 1 thread, f32 KV cache):
//   - scored along llama.cpp's tokens, Tessera's top-1 is llama.cpp's wherever llama.cpp's
//     margin is at least 0.05 (F32 files) or 0.25 (quantized files, where llama.cpp rounds
//     matmul inputs to 8 bits and so does Tessera's cpu, by its own kernels);
//   - greedy generation on F32 files gives llama.cpp's ids up to its first fragile step;
//   - first-step logits agree, relative to their spread;
//   - with every layer offloaded to the tile or rknpu device, the logits stay within those
//     devices' formats' tolerance of the cpu's.
// The prompts' third line is longer than the gemma files' 16-row sliding window, so the
// window and its rows at every step are exercised.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "fixtures.h"
#include "import/gguf/gguf_writer.h"
#include "import/gguf/llama_model.h"
#include "import/gguf/synth.h"
#include "runtime/llm/generator.h"
#include "synth_model.h"
#include "tessera/backend/plan.h"

namespace tessera::gguf {
namespace {

const char* const kFamilies[] = {
    "qwen3-256d-2L-F32",  "qwen3-256d-2L-Q8_0",  "qwen3-256d-2L-Q4_K_M", "gemma3-256d-2L-F32",
    "gemma3-256d-2L-Q8_0", "gemma3-256d-2L-Q4_K_M", "gemma2-256d-2L-F32", "gemma2-256d-2L-Q8_0",
    "gemma2-256d-2L-Q4_K_M", "phi3-256d-2L-Q4_K_M",
};

bool is_f32(const std::string& name) { return name.find("-F32") != std::string::npos; }

struct Step {
  int32_t id = 0;
  double margin = 0;  // llama.cpp's top-1 minus top-2 logit
};
struct RefRun {
  std::string prompt;
  std::vector<int32_t> prompt_ids;
  std::vector<Step> steps;
};

// llama.cpp's runs of one model, from refs/llamacpp-greedy_detail.jsonl.
std::vector<RefRun> runs_of(const std::string& jsonl, const std::string& model) {
  std::vector<RefRun> runs;
  std::ifstream in(jsonl);
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line);
    if (j.at("model").get<std::string>() != model + ".gguf") continue;
    RefRun r;
    r.prompt = j.at("prompt").get<std::string>();
    r.prompt_ids = j.at("prompt_ids").get<std::vector<int32_t>>();
    for (const auto& s : j.at("steps")) r.steps.push_back({s.at("id").get<int32_t>(), s.at("margin").get<double>()});
    runs.push_back(std::move(r));
  }
  return runs;
}

int32_t argmax(const std::vector<float>& v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

std::unique_ptr<LlamaModel> open_or_die(const std::string& path) {
  auto m = LlamaModel::open(path);
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return m.ok() ? std::move(*m) : nullptr;
}

std::unique_ptr<llm::Generator> generator(const LlamaModel& m, llm::GeneratorOptions go = {}) {
  go.kv_type = DType::f32;  // as llama.cpp ran
  auto g = llm::Generator::create(m, go);
  EXPECT_TRUE(g.ok()) << g.status().to_string();
  return g.ok() ? std::move(*g) : nullptr;
}

// RMS of (a - ref) over the standard deviation of ref.
double relative_rms(const std::vector<float>& a, const std::vector<float>& ref) {
  double mean = 0, var = 0, d2 = 0;
  for (float v : ref) mean += v / ref.size();
  for (size_t i = 0; i < ref.size(); ++i) {
    var += (ref[i] - mean) * (ref[i] - mean) / ref.size();
    d2 += (a[i] - ref[i]) * (a[i] - ref[i]) / ref.size();
  }
  return std::sqrt(d2 / var);
}

TEST(Families, ParametersAreReadFromEachArchitecturesKeys) {
  struct Want {
    const char* model;
    const char* arch;
    int64_t head_dim, window, swa_layers;
    bool qk_norm, post_norms, fused, gelu;
    double softcap, final_softcap;
  };
  for (const Want& w : {Want{"qwen3-256d-2L-F32", "qwen3", 64, 0, 0, true, false, false, false, 0, 0},
                        Want{"gemma3-256d-2L-F32", "gemma3", 64, 16, 1, true, true, false, true, 0, 0},
                        Want{"gemma2-256d-2L-F32", "gemma2", 64, 16, 1, false, true, false, true, 50, 30},
                        Want{"phi3-256d-2L-Q4_K_M", "phi3", 64, 0, 0, false, false, true, false, 0, 0}}) {
    TESSERA_REQUIRE_FIXTURE(path, std::string("models/gguf/families/") + w.model + ".gguf");
    auto m = open_or_die(path);
    ASSERT_TRUE(m);
    const LlamaParams& p = m->params();
    SCOPED_TRACE(w.model);
    EXPECT_EQ(p.arch, w.arch);
    EXPECT_EQ(p.head_dim, w.head_dim);
    EXPECT_TRUE(p.rope_neox);
    EXPECT_EQ(p.swa_window, w.window);
    EXPECT_EQ(std::count(p.swa_layers.begin(), p.swa_layers.end(), true), w.swa_layers);
    if (w.window) EXPECT_TRUE(p.swa_layers[0]) << "layer 0 of a pattern of 2 is a sliding-window layer";
    EXPECT_EQ(p.qk_norm, w.qk_norm);
    EXPECT_EQ(p.post_norms, w.post_norms);
    EXPECT_EQ(p.fused_qkv, w.fused);
    EXPECT_EQ(p.gelu, w.gelu);
    EXPECT_EQ(p.attn_softcap, w.softcap);
    EXPECT_EQ(p.final_softcap, w.final_softcap);
    EXPECT_DOUBLE_EQ(p.attn_scale, 1.0 / 8);
    if (std::string(w.arch) == "gemma3") EXPECT_EQ(p.rope_base_swa, 10000.0);
    EXPECT_EQ(m->sliding_window(), w.window);
  }
}

// A llama file relabelled as each architecture: its hyperparameter keys, then the weights
// the architecture adds, are each named when missing; bad new keys are errors too.
TEST(Families, MissingWeightsAndBadKeysAreNamed) {
  SynthOptions o;
  o.dim = 64, o.layers = 2, o.heads = 4, o.kv_heads = 2, o.ffn = 96, o.vocab = 300, o.context = 16;
  o.type = DType::f32;
  o.seed = 7;
  auto load = [](Writer& w) {
    auto f = File::parse(ConstData::from_vector(*w.bytes()), "synthetic");
    EXPECT_TRUE(f.ok());
    return LlamaModel::load(std::move(*f));
  };
  auto expect_error = [&](Writer& w, const std::string& text) {
    auto m = load(w);
    ASSERT_FALSE(m.ok()) << "expected: " << text;
    EXPECT_NE(m.status().message().find(text), std::string::npos) << m.status().message();
  };
  auto relabel = [&](Writer& w, const std::string& arch) {
    w.set_string("general.architecture", arch);
    for (auto [key, v] : {std::pair<const char*, int64_t>{"embedding_length", o.dim}, {"block_count", o.layers},
                          {"feed_forward_length", o.ffn}, {"attention.head_count", o.heads},
                          {"attention.head_count_kv", o.kv_heads}, {"context_length", o.context}})
      w.set_u32(arch + "." + key, static_cast<uint32_t>(v));
  };
  for (const auto& [arch, missing] : std::vector<std::pair<std::string, std::string>>{
           {"qwen3", "weight 'blk.0.attn_q_norm.weight' is missing"},
           {"gemma3", "weight 'blk.0.attn_q_norm.weight' is missing"},
           {"gemma2", "weight 'blk.0.post_attention_norm.weight' is missing"},
           {"phi3", "weight 'blk.0.attn_qkv.weight' is missing"}}) {
    SCOPED_TRACE(arch);
    auto w = synth_llama(o);
    ASSERT_TRUE(w.ok());
    w->set_string("general.architecture", arch);
    expect_error(*w, arch + ".embedding_length");
    relabel(*w, arch);
    expect_error(*w, missing);
  }
  auto w = synth_llama(o);
  ASSERT_TRUE(w.ok());
  relabel(*w, "gemma2");
  w->set_u32("gemma2.attention.sliding_window", 8);
  w->set_i32s("gemma2.attention.sliding_window_pattern", {1, 0, 1});
  expect_error(*w, "gemma2.attention.sliding_window_pattern has 3 entries for 2 layers");
  w->set_f32("gemma2.attn_logit_softcapping", -1.0f);
  w->set_u32("gemma2.attention.sliding_window_pattern", 2);
  expect_error(*w, "gemma2.attn_logit_softcapping = -1 must be >= 0");
  relabel(*w, "qwen3");
  w->set_string("general.architecture", "qwen3");
  w->set_u32("qwen3.attention.key_length", 16);
  w->set_u32("qwen3.attention.value_length", 32);
  expect_error(*w, "qwen3.attention.value_length = 32 differs from the key length 16");
  w->set_string("general.architecture", "falcon");
  expect_error(*w, "general.architecture = 'falcon' is not supported (supported: llama, qwen2, qwen3, gemma2, gemma3, phi3)");
}

TEST(Families, TopOneAlongLlamaCppTokensWhereItsMarginIsWide) {
  TESSERA_REQUIRE_FIXTURE(jsonl, "models/gguf/families/refs/llamacpp-greedy_detail.jsonl");
  int checked = 0, runs = 0;
  for (const std::string name : kFamilies) {
    TESSERA_REQUIRE_FIXTURE(path, "models/gguf/families/" + name + ".gguf");
    auto model = open_or_die(path);
    ASSERT_TRUE(model);
    auto gen = generator(*model);
    ASSERT_TRUE(gen);
    const double wide = is_f32(name) ? 0.05 : 0.25;
    const auto rs = runs_of(jsonl, name);
    ASSERT_EQ(rs.size(), 3u) << name;
    for (const RefRun& r : rs) {
      SCOPED_TRACE(name + ", prompt '" + r.prompt.substr(0, 20) + "'");
      EXPECT_EQ(model->tokenizer().encode(r.prompt, true), r.prompt_ids);
      gen->reset();
      auto logits = gen->feed(r.prompt_ids);
      ASSERT_TRUE(logits.ok()) << logits.status().to_string();
      std::vector<float> l = *logits;
      for (size_t k = 0; k < r.steps.size(); ++k) {
        if (r.steps[k].margin >= wide) {
          EXPECT_EQ(argmax(l), r.steps[k].id) << "step " << k << ", llama.cpp's margin " << r.steps[k].margin;
          ++checked;
        }
        auto next = gen->step(r.steps[k].id);  // llama.cpp's token, whatever Tessera chose
        ASSERT_TRUE(next.ok()) << next.status().to_string();
        l = *next;
      }
      ++runs;
    }
  }
  EXPECT_EQ(runs, 30);
  EXPECT_GT(checked, 600);  // of 720 steps: most margins are wide
}

TEST(Families, GreedyIdsEqualLlamaCppsOnF32Files) {
  TESSERA_REQUIRE_FIXTURE(jsonl, "models/gguf/families/refs/llamacpp-greedy_detail.jsonl");
  int compared = 0;
  for (const std::string name : {"qwen3-256d-2L-F32", "gemma3-256d-2L-F32", "gemma2-256d-2L-F32"}) {
    TESSERA_REQUIRE_FIXTURE(path, "models/gguf/families/" + name + ".gguf");
    auto model = open_or_die(path);
    ASSERT_TRUE(model);
    auto gen = generator(*model);
    ASSERT_TRUE(gen);
    for (const RefRun& r : runs_of(jsonl, name)) {
      SCOPED_TRACE(name + ", prompt '" + r.prompt.substr(0, 20) + "'");
      // Up to llama.cpp's first step whose top two are within 0.05 (a tie to float rounding).
      size_t n = 0;
      while (n < r.steps.size() && r.steps[n].margin >= 0.05) ++n;
      std::vector<int32_t> want, got;
      for (size_t k = 0; k < n; ++k) want.push_back(r.steps[k].id);
      gen->reset();
      llm::Sampler greedy(llm::SamplerOptions{});
      auto st = gen->generate(r.prompt_ids, static_cast<int64_t>(n), greedy, -1, [&](int32_t id) {
        got.push_back(id);
        return true;
      });
      ASSERT_TRUE(st.ok()) << st.status().to_string();
      EXPECT_EQ(got, want);
      EXPECT_GE(n, 10u);  // the files' first fragile steps come at 11 (gemma3), 17 (gemma2), 21 (qwen3) or never
      compared += static_cast<int>(n);
    }
  }
  EXPECT_GT(compared, 150);  // of 216 ids
}

// The first step's logits (after the whole of prompt 0) against llama.cpp's.
TEST(Families, FirstStepLogitsAgreeWithLlamaCpp) {
  TESSERA_REQUIRE_FIXTURE(jsonl, "models/gguf/families/refs/llamacpp-greedy_detail.jsonl");
  for (const std::string name : kFamilies) {
    TESSERA_REQUIRE_FIXTURE(path, "models/gguf/families/" + name + ".gguf");
    TESSERA_REQUIRE_FIXTURE(ref_path, "models/gguf/families/refs/logits/" + name + ".prompt0.f32");
    auto model = open_or_die(path);
    ASSERT_TRUE(model);
    auto gen = generator(*model);
    ASSERT_TRUE(gen);
    auto rs = runs_of(jsonl, name);
    ASSERT_FALSE(rs.empty());
    auto logits = gen->feed(rs[0].prompt_ids);
    ASSERT_TRUE(logits.ok()) << logits.status().to_string();
    auto bytes = testing::read_file(ref_path);
    ASSERT_EQ(bytes.size(), logits->size() * 4) << ref_path;
    std::vector<float> ref(logits->size());
    std::memcpy(ref.data(), bytes.data(), bytes.size());
    const double rel = relative_rms(*logits, ref);
    std::cout << name << ": first-step logits RMS diff / std " << rel << "\n";
    // F32: float rounding only (llama.cpp's GELU goes through an f16 table); quantized:
    // both round activations to 8 bits, in different orders.
    EXPECT_LT(rel, is_f32(name) ? 1e-3 : 2.5e-2) << name;
  }
}

// Every layer on an NPU device (the masked attention form, sliding-window mask and
// soft-capping as ops): the first-step logits stay near the cpu's.
TEST(Families, OffloadedToTileAndRknpuFollowTheCpu) {
  TESSERA_REQUIRE_FIXTURE(jsonl, "models/gguf/families/refs/llamacpp-greedy_detail.jsonl");
  for (const std::string name : {"qwen3-256d-2L-F32", "gemma3-256d-2L-Q8_0", "gemma2-256d-2L-F32", "phi3-256d-2L-Q4_K_M"}) {
    TESSERA_REQUIRE_FIXTURE(path, "models/gguf/families/" + name + ".gguf");
    auto model = open_or_die(path);
    ASSERT_TRUE(model);
    auto rs = runs_of(jsonl, name);
    ASSERT_EQ(rs.size(), 3u);
    const std::vector<int32_t>& ids = rs[2].prompt_ids;  // longer than the sliding window
    auto cpu = generator(*model);
    ASSERT_TRUE(cpu);
    auto want = cpu->feed(ids);
    ASSERT_TRUE(want.ok()) << want.status().to_string();
    for (const char* device : {"tile", "rknpu"}) {
      bool has = false;
      for (const auto& d : device_registry()) has |= d.name == device;
      if (!has) continue;
      SCOPED_TRACE(name + " on " + device);
      llm::GeneratorOptions go;
      go.session.device = device;
      go.offload_layers = model->layers();
      auto gen = generator(*model, go);
      ASSERT_TRUE(gen);
      int on_device = 0;
      const Plan& plan = gen->decode_session().plan();
      for (size_t i = 0; i < plan.graph.nodes().size(); ++i)
        on_device += plan.devices[plan.nodes[i].device]->name() != "cpu" && plan.graph.nodes()[i].op != OpKind::transfer;
      EXPECT_GT(on_device, 10);
      auto got = gen->feed(ids);
      ASSERT_TRUE(got.ok()) << got.status().to_string();
      const double rel = relative_rms(*got, *want);
      std::cout << name << " on " << device << ": logits RMS diff / std vs the cpu " << rel << ", " << on_device
                << " nodes on the device\n";
      EXPECT_LT(rel, 0.1);
    }
  }
}

}  // namespace
}  // namespace tessera::gguf
