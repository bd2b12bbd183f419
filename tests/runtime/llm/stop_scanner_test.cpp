// StopScanner: what a streamed reply shows when stop strings arrive split over pieces.
#include <gtest/gtest.h>

#include <random>

#include "runtime/llm/stop_scanner.h"

namespace tessera::llm {
namespace {

// Feeds `pieces` and returns everything shown (add + flush when not stopped).
std::string stream(StopScanner& s, const std::vector<std::string>& pieces) {
  std::string shown;
  for (const auto& p : pieces) shown += s.add(p);
  if (!s.stopped()) shown += s.flush();
  return shown;
}

TEST(StopScanner, HoldsBackAPossibleStartAndDropsTheStop) {
  StopScanner s({"<|im_end|>"});
  EXPECT_EQ(s.add("Hello <|im"), "Hello ");
  EXPECT_FALSE(s.stopped());
  EXPECT_EQ(s.add("_end|> and more"), "");
  EXPECT_TRUE(s.stopped());
  EXPECT_EQ(s.add("after"), "");
  EXPECT_EQ(s.text(), "Hello ");
}

TEST(StopScanner, ReleasesTextThatTurnsOutNotToBeAStop) {
  StopScanner s({"</s>"});
  EXPECT_EQ(s.add("a <"), "a ");
  EXPECT_EQ(s.add("/b"), "</b");
  EXPECT_EQ(s.add(" </"), " ");
  EXPECT_EQ(s.flush(), "</");  // the reply ended another way
  EXPECT_FALSE(s.stopped());
  EXPECT_EQ(s.text(), "a </b </");
}

TEST(StopScanner, EarliestOfSeveralStopsWins) {
  StopScanner s({"<end_of_turn>", "END", ""});
  EXPECT_EQ(s.add("one END two <end_of_turn>"), "one ");
  EXPECT_TRUE(s.stopped());
}

// Any cut of a text into pieces shows the same: the text up to the first stop string.
TEST(StopScanner, SplitAnywhereGivesTheSameText) {
  const std::string text = "The <|eot <|eo|> end <|eot_id|> hidden <|eot_id|>";
  const std::string want = "The <|eot <|eo|> end ";
  std::mt19937 rng(15);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<std::string> pieces;
    for (size_t at = 0; at < text.size();) {
      const size_t n = std::min<size_t>(1 + rng() % 6, text.size() - at);
      pieces.push_back(text.substr(at, n));
      at += n;
    }
    StopScanner s({"<|eot_id|>"});
    EXPECT_EQ(stream(s, pieces), want) << "trial " << trial;
    EXPECT_TRUE(s.stopped());
    EXPECT_EQ(s.text(), want);
  }
  StopScanner none({"<|eot_id|>"});
  EXPECT_EQ(stream(none, {"no stop <|eot"}), "no stop <|eot");
}

}  // namespace
}  // namespace tessera::llm
