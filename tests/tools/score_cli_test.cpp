// `tessera score`: logits after every prefix of a token sequence, against an independent
// float64 forward pass (../shared/models/gguf/refs), and its input errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>

#include "fixtures.h"
#include "tools/cli_fixture.h"

namespace tessera {
namespace {

class ScoreCli : public testing::CliTest {};

// "Once upon a time" in the aidreams vocabulary, as llama.cpp tokenized it (refs/*.tsv).
const std::vector<int> kPrompt = {1, 429, 491, 433, 295, 429, 444, 445, 265, 262, 263, 342, 430};
constexpr int kVocab = 512;

TEST_F(ScoreCli, RowsAreTheLogitsAfterEachPrefix) {
  const std::string name = "kq-llama-256d-4L-Q4_K_M";
  TESSERA_REQUIRE_FIXTURE(model, "models/gguf/kquant/" + name + ".gguf");
  TESSERA_REQUIRE_FIXTURE(ref_path, "models/gguf/refs/logits/" + name + ".prompt0.numpy_exact.f32");
  {
    std::ofstream ids(path("ids.txt"));
    for (int id : kPrompt) ids << id << (id == 342 ? "\n" : " ");
  }
  ASSERT_EQ(run("score " + model + " --ids " + path("ids.txt") + " --logits-out " + path("out.f32")), 0) << err_;
  auto bytes = testing::read_file(path("out.f32"));
  ASSERT_EQ(bytes.size(), kPrompt.size() * kVocab * sizeof(float));
  std::vector<float> rows(kPrompt.size() * kVocab);
  std::memcpy(rows.data(), bytes.data(), bytes.size());
  // The last row is the logits after the whole prompt: the float64 pass's first step.
  auto ref_bytes = testing::read_file(ref_path);
  ASSERT_EQ(ref_bytes.size(), kVocab * sizeof(float));
  std::vector<float> ref(kVocab);
  std::memcpy(ref.data(), ref_bytes.data(), ref_bytes.size());
  const float* last = rows.data() + (kPrompt.size() - 1) * kVocab;
  double mean = 0, var = 0, d2 = 0;
  for (float v : ref) mean += v / kVocab;
  for (int i = 0; i < kVocab; ++i) {
    var += (ref[i] - mean) * (ref[i] - mean) / kVocab;
    d2 += (last[i] - ref[i]) * (last[i] - ref[i]) / kVocab;
  }
  EXPECT_LT(std::sqrt(d2 / var), 1e-4);
  // Earlier rows differ from the last one (each is its own prefix).
  EXPECT_NE(std::memcmp(rows.data(), last, kVocab * sizeof(float)), 0);
  EXPECT_NE(err_.find("scored 13 tokens"), std::string::npos) << err_;
}

TEST_F(ScoreCli, BadIdsAreNamed) {
  TESSERA_REQUIRE_FIXTURE(model, "models/gguf/kquant/kq-llama-256d-4L-Q2_K.gguf");
  std::ofstream(path("bad.txt")) << "1 429 512\n";
  EXPECT_NE(run("score " + model + " --ids " + path("bad.txt") + " --logits-out " + path("o.f32")), 0);
  EXPECT_NE(err_.find("token 2 ('512') is not an id in 0..511"), std::string::npos) << err_;
  std::ofstream(path("word.txt")) << "1 x2\n";
  EXPECT_NE(run("score " + model + " --ids " + path("word.txt") + " --logits-out " + path("o.f32")), 0);
  EXPECT_NE(err_.find("token 1 ('x2')"), std::string::npos) << err_;
  std::ofstream(path("empty.txt")) << "\n";
  EXPECT_NE(run("score " + model + " --ids " + path("empty.txt") + " --logits-out " + path("o.f32")), 0);
  EXPECT_NE(err_.find("holds no token ids"), std::string::npos) << err_;
}

}  // namespace
}  // namespace tessera
