// The llama graph and the generator on the real aidreams260K model (F32, Q8_0, Q4_0).
#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "fixtures.h"
#include "import/gguf/llama_model.h"
#include "runtime/llm/generator.h"

namespace tessera::gguf {
namespace {

// The reference implementation's greedy output for this prompt (../shared/README.md).
constexpr const char* kPrompt = "Once upon a time";
constexpr const char* kExpected =
    "Once upon a time, pixels unfolding like petals. Classifications unfold, a kaleidoscope of probability "
    "revealing hidden patterns.";

struct Run {
  std::vector<int32_t> prompt;
  std::vector<int32_t> tokens;  // generated
  std::string text;             // prompt + generated, decoded
  llm::GenerateStats stats;
};

Result<Run> greedy(const std::string& path, int64_t max_tokens, int64_t batch = 32, const std::string& prompt = kPrompt) {
  TS_ASSIGN_OR_RETURN(auto model, LlamaModel::open(path));
  llm::GeneratorOptions go;
  go.batch = batch;
  TS_ASSIGN_OR_RETURN(auto gen, llm::Generator::create(*model, go));
  llm::Sampler sampler(llm::SamplerOptions{});
  Run r;
  r.prompt = model->tokenizer().encode(prompt, true);
  TS_ASSIGN_OR_RETURN(r.stats, gen->generate(r.prompt, max_tokens, sampler, model->tokenizer().eos(), [&](int32_t t) {
    r.tokens.push_back(t);
    return true;
  }));
  std::vector<int32_t> all = r.prompt;
  all.insert(all.end(), r.tokens.begin(), r.tokens.end());
  r.text = model->tokenizer().decode(all);
  return r;
}

TEST(LlamaGenerate, F32GreedyMatchesTheReference) {
  TESSERA_REQUIRE_FIXTURE(path, "models/gguf/aidreams260K.gguf");
  auto r = greedy(path, 100);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  // The reference stopped after a fixed number of tokens: find how many give its text
  // exactly, then check that generating exactly that many gives exactly that text.
  auto model = LlamaModel::open(path);
  ASSERT_TRUE(model.ok());
  int64_t n = -1;
  for (size_t k = 1; k <= r->tokens.size() && n < 0; ++k) {
    std::vector<int32_t> all = r->prompt;
    all.insert(all.end(), r->tokens.begin(), r->tokens.begin() + static_cast<std::ptrdiff_t>(k));
    if ((*model)->tokenizer().decode(all) == kExpected) n = static_cast<int64_t>(k);
  }
  ASSERT_GT(n, 0) << "no prefix of the greedy output is the reference text; got: " << r->text;
  std::cerr << "reference text = prompt + " << n << " tokens\n";
  auto exact = greedy(path, n);
  ASSERT_TRUE(exact.ok());
  EXPECT_EQ(exact->text, kExpected);
}

}  // namespace
}  // namespace tessera::gguf
