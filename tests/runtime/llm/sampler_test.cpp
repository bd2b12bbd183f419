// Sampler: greedy, top-k, top-p, temperature, repetition penalty and seeds, on hand-made
// logits whose probabilities are known in closed form.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "runtime/llm/sampler.h"

namespace tessera::llm {
namespace {

std::map<int32_t, int> draw(Sampler& s, const std::vector<float>& logits, int n) {
  std::map<int32_t, int> counts;
  for (int i = 0; i < n; ++i) counts[s.sample(logits, {})]++;
  return counts;
}

TEST(Sampler, GreedyIsArgMaxWithLowestIdOnTies) {
  Sampler s(SamplerOptions{});
  EXPECT_EQ(s.sample(std::vector<float>{0.1f, 3.0f, -2.0f, 2.9f}, {}), 1);
  EXPECT_EQ(s.sample(std::vector<float>{1.0f, 5.0f, 5.0f}, {}), 1);
}

TEST(Sampler, RepetitionPenaltyDividesPositiveAndMultipliesNegativeLogits) {
  SamplerOptions o;
  o.repeat_penalty = 1.2f;
  Sampler s(o);
  std::vector<int32_t> hist = {0};
  EXPECT_EQ(s.sample(std::vector<float>{2.0f, 1.9f}, hist), 1);    // 2.0 / 1.2 = 1.67 < 1.9
  EXPECT_EQ(s.sample(std::vector<float>{-1.0f, -1.1f}, hist), 1);  // -1.0 * 1.2 = -1.2 < -1.1
  EXPECT_EQ(s.sample(std::vector<float>{2.0f, 1.9f}, std::vector<int32_t>{1}), 0);
  o.repeat_last_n = 1;  // only the last token counts
  Sampler s1(o);
  EXPECT_EQ(s1.sample(std::vector<float>{2.0f, 1.9f}, std::vector<int32_t>{0, 1}), 0);
}

TEST(Sampler, TopKOneIsGreedyAndTopKLimitsTheSet) {
  SamplerOptions o;
  o.temperature = 1.0f;
  o.top_p = 1.0f;
  o.top_k = 1;
  Sampler one(o);
  const std::vector<float> logits = {0.5f, 0.2f, 0.9f, 0.8f, 0.1f};
  EXPECT_EQ(draw(one, logits, 200), (std::map<int32_t, int>{{2, 200}}));
  o.top_k = 3;
  Sampler three(o);
  auto c = draw(three, logits, 3000);
  EXPECT_EQ(c.size(), 3u);  // ids 2, 3, 0: each drawn, nothing else
  EXPECT_GT(c[2], 0);
  EXPECT_GT(c[3], 0);
  EXPECT_GT(c[0], 0);
}

TEST(Sampler, TopPKeepsTheSmallestSetReachingP) {
  SamplerOptions o;
  o.temperature = 1.0f;
  o.top_k = 0;
  o.top_p = 0.75f;
  Sampler s(o);
  // Probabilities 0.5, 0.3, 0.15, 0.05: 0.5 < 0.75 <= 0.8, so ids 0 and 1 remain.
  const std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.15f), std::log(0.05f)};
  auto c = draw(s, logits, 4000);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_NEAR(c[0] / 4000.0, 0.5 / 0.8, 0.03);
}

TEST(Sampler, TemperatureSharpensOrFlattens) {
  // Two tokens with a logit gap of ln 3: p(0) = 3/4 at T = 1, sqrt(3)/(1+sqrt(3)) at T = 2.
  const std::vector<float> logits = {std::log(3.0f), 0.0f};
  for (float t : {1.0f, 2.0f, 0.5f}) {
    SamplerOptions o;
    o.temperature = t;
    o.top_k = 0;
    o.top_p = 1.0f;
    o.seed = 11;
    Sampler s(o);
    const double r = std::pow(3.0, 1.0 / t), want = r / (1 + r);
    auto c = draw(s, logits, 20000);
    EXPECT_NEAR(c[0] / 20000.0, want, 0.015) << "T = " << t;
  }
}

TEST(Sampler, SeedsAreReproducible) {
  SamplerOptions o;
  o.temperature = 1.0f;
  o.top_k = 0;
  o.top_p = 1.0f;
  const std::vector<float> flat(50, 0.0f);
  auto seq = [&](uint64_t seed) {
    o.seed = seed;
    Sampler s(o);
    std::vector<int32_t> v;
    for (int i = 0; i < 40; ++i) v.push_back(s.sample(flat, {}));
    return v;
  };
  EXPECT_EQ(seq(5), seq(5));
  EXPECT_NE(seq(5), seq(6));
}

TEST(Sampler, ValidateNamesTheBadOption) {
  SamplerOptions o;
  o.temperature = -1;
  EXPECT_NE(Sampler::validate(o).message().find("temperature"), std::string::npos);
  o = {};
  o.top_p = 0;
  EXPECT_NE(Sampler::validate(o).message().find("top-p"), std::string::npos);
  o = {};
  o.repeat_penalty = 0;
  EXPECT_NE(Sampler::validate(o).message().find("repeat penalty"), std::string::npos);
  EXPECT_TRUE(Sampler::validate(SamplerOptions{}).ok());
}

}  // namespace
}  // namespace tessera::llm
