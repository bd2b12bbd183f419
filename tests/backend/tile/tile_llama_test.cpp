// End to end: aidreams260K (a real trained llama GGUF) generating on the tile device with
// every layer offloaded, against the cpu's greedy text. States how far each weight
// format keeps the cpu's tokens.
#if __has_include("import/gguf/llama_model.h")
#include <gtest/gtest.h>

#include "fixtures.h"
#include "import/gguf/llama_model.h"
#include "runtime/llm/generator.h"
#include "tessera/backend/plan.h"

namespace tessera {
namespace {

constexpr int64_t kTokens = 32;  // generated tokens compared per run

struct GenRun {
  std::vector<int32_t> tokens;
  std::string text;
  double modelled_seconds = 0;
  bool all_on_tile = false;
};

GenRun generate(const gguf::LlamaModel& model, const std::string& device, const DeviceOptions& opts) {
  GenRun r;
  llm::GeneratorOptions go;
  go.session.device = device;
  go.session.device_options = opts;
  go.offload_layers = model.layers();  // --offload all
  auto gen = llm::Generator::create(model, go);
  EXPECT_TRUE(gen.ok()) << gen.status().to_string();
  if (!gen.ok()) return r;
  llm::Sampler greedy(llm::SamplerOptions{});
  auto prompt = model.tokenizer().encode("Once upon a time", true);
  auto st = (*gen)->generate(prompt, kTokens, greedy, -1, [&](int32_t id) {
    r.tokens.push_back(id);
    return true;
  });
  EXPECT_TRUE(st.ok()) << st.status().to_string();
  r.text = model.tokenizer().decode(r.tokens);
  const Session& s = (*gen)->decode_session();
  r.modelled_seconds = s.profile().modelled_seconds;
  r.all_on_tile = true;
  for (size_t i = 0; i < s.plan().nodes.size(); ++i)
    if (s.plan().graph.nodes()[i].op != OpKind::transfer && s.plan().devices[s.plan().nodes[i].device]->name() == "cpu")
      r.all_on_tile = false;
  return r;
}

int64_t matching_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  int64_t n = 0;
  while (n < static_cast<int64_t>(std::min(a.size(), b.size())) && a[n] == b[n]) ++n;
  return n;
}

class TileLlama : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = testing::shared_path("models/gguf/aidreams260K.gguf");
    if (path_.empty()) {
      if (testing::fixtures_required()) FAIL() << "missing fixture ../shared/models/gguf/aidreams260K.gguf";
      GTEST_SKIP() << "fixture aidreams260K.gguf is absent";
    }
    auto m = gguf::LlamaModel::open(path_);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    model_ = std::move(m).value();
    cpu_ = generate(*model_, "cpu", {});
    ASSERT_EQ(static_cast<int64_t>(cpu_.tokens.size()), kTokens);
  }
  std::string path_;
  std::unique_ptr<gguf::LlamaModel> model_;
  GenRun cpu_;
};

TEST_F(TileLlama, Bf16WeightsAtHiFi4MatchTheCpuGreedyText) {
  GenRun tile = generate(*model_, "tile", {{"weights", "bf16"}, {"fidelity", "HiFi4"}});
  EXPECT_TRUE(tile.all_on_tile) << "every node of the decode step should run on the tile device";
  EXPECT_GE(matching_prefix(tile.tokens, cpu_.tokens), 16) << "cpu:  " << cpu_.text << "\ntile: " << tile.text;
  EXPECT_GT(tile.modelled_seconds, 0);
  std::printf("cpu : %s\ntile (bf16, HiFi4): %s\n", cpu_.text.c_str(), tile.text.c_str());
}

// How far each weight format keeps the cpu's greedy tokens (of kTokens), at the fidelity
// the notes pair with it. The floors are what the device model achieves today; they are
// a regression check and the numbers are printed.
TEST_F(TileLlama, HowFarEachWeightFormatMatches) {
  struct Case {
    const char* weights;
    const char* fidelity;
    int64_t floor;
  };
  for (Case c : {Case{"bf16", "HiFi4", 16}, Case{"bfp8_b", "HiFi2", 16}, Case{"bfp8_b", "LoFi", 4},
                 Case{"bfp4_b", "LoFi", 4}}) {
    GenRun tile = generate(*model_, "tile", {{"weights", c.weights}, {"fidelity", c.fidelity}});
    int64_t n = matching_prefix(tile.tokens, cpu_.tokens);
    std::printf("%-7s %-5s matches the cpu for %2lld of %lld tokens: %s\n", c.weights, c.fidelity,
                static_cast<long long>(n), static_cast<long long>(kTokens), tile.text.c_str());
    EXPECT_GE(n, c.floor) << c.weights;
    EXPECT_FALSE(tile.text.empty());
  }
}

// The quantized files: Q8_0 / Q4_0 weights go to bfp8_b / bfp4_b tiles directly (weights=auto).
// Q8_0 -> bfp8_b keeps the cpu's text; Q4_0 -> bfp4_b re-rounds 4-bit codes with an f16
// scale to 3-bit magnitudes with a power-of-two scale, and the text departs after a token
// or two (it stays fluent; the floor only checks the first token).
TEST(TileLlamaQuantized, GgufBlockWeightsRunAsBlockFloatTiles) {
  struct Case {
    const char* file;
    int64_t floor;
  };
  for (Case c : {Case{"models/gguf/aidreams260K-Q8_0.gguf", 16}, Case{"models/gguf/aidreams260K-Q4_0.gguf", 1}}) {
    const char* file = c.file;
    std::string path = testing::shared_path(file);
    if (path.empty()) {
      if (testing::fixtures_required()) FAIL() << "missing fixture ../shared/" << file;
      GTEST_SKIP() << "fixture " << file << " is absent";
    }
    auto m = gguf::LlamaModel::open(path);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    GenRun cpu = generate(**m, "cpu", {});
    GenRun tile = generate(**m, "tile", {{"weights", "auto"}, {"fidelity", "HiFi2"}});
    int64_t n = matching_prefix(tile.tokens, cpu.tokens);
    std::printf("%s: tile (auto, HiFi2) matches the cpu for %lld of %lld tokens: %s\n", file, static_cast<long long>(n),
                static_cast<long long>(kTokens), tile.text.c_str());
    EXPECT_TRUE(tile.all_on_tile) << file;
    EXPECT_GE(n, c.floor) << file << "\ncpu:  " << cpu.text << "\ntile: " << tile.text;
  }
}

}  // namespace
}  // namespace tessera
#endif
