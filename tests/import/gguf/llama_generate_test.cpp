// The llama graph and the generator on the real aidreams260K model (F32, Q8_0, Q4_0).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
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

// Generated tokens in the reference text (found by F32GreedyMatchesTheReference).
constexpr int64_t kReferenceTokens = 53;

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
  EXPECT_EQ(n, kReferenceTokens);
  auto exact = greedy(path, n);
  ASSERT_TRUE(exact.ok());
  EXPECT_EQ(exact->text, kExpected);
}

TEST(LlamaGenerate, Q8_0GivesTheSameText) {
  TESSERA_REQUIRE_FIXTURE(path, "models/gguf/aidreams260K-Q8_0.gguf");
  auto r = greedy(path, kReferenceTokens);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->text, kExpected);
}

// Q4_0 keeps 4 bits per weight, so greedy text drifts from the F32 text after a few
// tokens (it reads "Once upon a time, probability unfolding like a flower. ..."). What
// must hold: it starts the same way, it only produces ordinary vocabulary pieces (no
// byte fallback, unknown or control tokens: fluent text from the same vocabulary), and
// teacher-forced on the F32 text it predicts most of the F32 model's next tokens.
TEST(LlamaGenerate, Q4_0IsFluentAndTracksF32) {
  TESSERA_REQUIRE_FIXTURE(f32_path, "models/gguf/aidreams260K.gguf");
  TESSERA_REQUIRE_FIXTURE(q4_path, "models/gguf/aidreams260K-Q4_0.gguf");
  auto ref = greedy(f32_path, 60);
  auto q4 = greedy(q4_path, 60);
  ASSERT_TRUE(ref.ok() && q4.ok()) << ref.status().to_string() << q4.status().to_string();
  ASSERT_GE(q4->tokens.size(), 40u) << q4->text;
  EXPECT_EQ(std::vector<int32_t>(q4->tokens.begin(), q4->tokens.begin() + 2),
            std::vector<int32_t>(ref->tokens.begin(), ref->tokens.begin() + 2));
  EXPECT_EQ(q4->text.rfind("Once upon a time, ", 0), 0u) << q4->text;
  auto model = LlamaModel::open(q4_path);
  ASSERT_TRUE(model.ok());
  for (int32_t t : q4->tokens) EXPECT_EQ((*model)->tokenizer().token_type(t), TokenType::normal) << t;
  // Teacher forcing: feed the F32 continuation token by token into the Q4_0 model.
  llm::GeneratorOptions go;
  auto gen = llm::Generator::create(**model, go);
  ASSERT_TRUE(gen.ok()) << gen.status().to_string();
  auto logits = (*gen)->feed(ref->prompt);
  ASSERT_TRUE(logits.ok());
  int agree = 0;
  for (int32_t want : ref->tokens) {
    int32_t best = static_cast<int32_t>(std::max_element(logits->begin(), logits->end()) - logits->begin());
    agree += best == want;
    logits = (*gen)->step(want);
    ASSERT_TRUE(logits.ok());
  }
  // Measured: 56 of 60 (93%); 4-bit weights must keep well over half of the F32 choices.
  EXPECT_GE(agree, 42) << agree << " of " << ref->tokens.size();
}

}  // namespace
}  // namespace tessera::gguf

namespace tessera::gguf {
namespace {

// Generator::rewind (chat's cache reuse): feeding A + B, rewinding to |A| and feeding C gives
// the logits of a fresh run over A + C, for both the batched and the one-token paths; the
// forgotten rows of B are hidden, not attended to.
TEST(LlamaGenerate, RewindKeepsAPrefixOfTheCache) {
  TESSERA_REQUIRE_FIXTURE(path, "models/gguf/aidreams260K.gguf");
  auto model = LlamaModel::open(path);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  llm::GeneratorOptions go;
  go.batch = 8;
  auto gen = llm::Generator::create(**model, go);
  ASSERT_TRUE(gen.ok()) << gen.status().to_string();
  const Tokenizer& tok = (*model)->tokenizer();
  const std::vector<int32_t> a = tok.encode("Once upon a time, there was a little girl", true);
  const std::vector<int32_t> b = tok.encode(" who lived in a big house near the sea and", false);
  const std::vector<int32_t> c = tok.encode(" named Lily. She liked to play", false);
  ASSERT_GT(b.size(), c.size());  // B's rows past A + C stay written but must be hidden
  std::vector<int32_t> ac = a;
  ac.insert(ac.end(), c.begin(), c.end());
  auto fresh = (*gen)->feed(ac);
  ASSERT_TRUE(fresh.ok()) << fresh.status().to_string();
  const std::vector<float> want = *fresh;

  (*gen)->reset();
  std::vector<int32_t> ab = a;
  ab.insert(ab.end(), b.begin(), b.end());
  ASSERT_TRUE((*gen)->feed(ab).ok());
  EXPECT_FALSE((*gen)->rewind(static_cast<int64_t>(ab.size()) + 1).ok());
  EXPECT_FALSE((*gen)->rewind(-1).ok());
  ASSERT_TRUE((*gen)->rewind(static_cast<int64_t>(a.size())).ok());
  EXPECT_EQ((*gen)->position(), static_cast<int64_t>(a.size()));
  auto got = (*gen)->feed(c);
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  ASSERT_EQ(got->size(), want.size());
  double max_diff = 0, spread = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    max_diff = std::max<double>(max_diff, std::abs((*got)[i] - want[i]));
    spread = std::max<double>(spread, std::abs(want[i]));
  }
  // Same tokens at the same positions; only how they were batched differs.
  EXPECT_LT(max_diff, 1e-4 * spread) << "max |diff| " << max_diff << ", max |logit| " << spread;

  // Token by token after a rewind, against the same fresh run.
  ASSERT_TRUE((*gen)->rewind(static_cast<int64_t>(a.size())).ok());
  std::vector<float> last;
  for (int32_t id : c) {
    auto l = (*gen)->step(id);
    ASSERT_TRUE(l.ok()) << l.status().to_string();
    last = *l;
  }
  max_diff = 0;
  for (size_t i = 0; i < want.size(); ++i) max_diff = std::max<double>(max_diff, std::abs(last[i] - want[i]));
  EXPECT_LT(max_diff, 1e-4 * spread) << "max |diff| " << max_diff;
}

}  // namespace
}  // namespace tessera::gguf
