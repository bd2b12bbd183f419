// `tessera perplexity` against llama-perplexity's own figures on a text written here, and
// against the perplexity recomputed in double from `tessera score`'s logits (chunks of n_ctx
// tokens, BOS first, the second half of each chunk scored).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>

#include "cli_fixture.h"
#include "fixtures.h"
#include "import/gguf/gguf_file.h"
#include "import/gguf/tokenizer.h"

namespace tessera::testing {
namespace {

// A short story in the style of the fixtures' training text (1,967 bytes; 1,173 tokens of
// the 512-token vocabulary: 9 chunks of 128).
const char* kStory = R"(Once upon a time, there was a little girl named Lily. She lived in a small house near a big green park. Every day, Lily went to the park with her mom to play on the swings and look at the birds.
One day, Lily saw a small dog sitting under a tree. The dog looked sad and hungry. Lily said, "Mom, can we help the dog?" Her mom smiled and said, "Yes, Lily. Let us give him some bread."
Lily gave the dog a piece of bread. The dog ate it fast and wagged his tail. He was very happy. Lily laughed and gave him a hug. She named the dog Max.
Max followed Lily and her mom all the way home. Lily asked, "Can Max stay with us?" Her mom thought for a moment and then said, "Yes, he can stay. But you must take care of him."
From that day on, Lily and Max were best friends. They played in the park, ran in the sun and slept under the big tree. Lily was very happy to have a friend like Max.
One morning, Tom the boy from the next house came to play. Tom had a red ball. He threw the ball very high, and it fell into the pond. Tom was sad. He did not know what to do.
Max ran to the pond and jumped into the water. He swam to the ball and brought it back to Tom. Tom was so happy. He said, "Thank you, Max! You are a good dog."
Lily smiled and said, "Max is the best dog in the world." Tom, Lily and Max played with the ball until the sun went down. Then they all went home to eat dinner.
The next day, it was very cold and it began to rain. Lily could not go to the park. She felt bored and sad. Her mom said, "Why don't you draw a picture?" Lily took her crayons and drew a big sun, a green tree and a little dog.
When the rain stopped, Lily showed the picture to Max. Max barked and wagged his tail. Lily knew that Max liked the picture. She put it on the wall next to her bed.
At night, Lily looked at the stars from her window. She saw a bright star and made a wish. She wished that she and Max would always be friends. Then she went to sleep with a big smile on her face.
)";

class PerplexityCli : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    if (IsSkipped()) return;
    std::ofstream(path("story.txt"), std::ios::binary) << kStory;
  }
  struct Ppl {
    double ppl = -1, err = -1;
    std::vector<double> chunks;  // the running estimate after each chunk
  };
  // `tessera score`'s logits [n_ctx - 1][vocab] of chunk c of `tokens` with BOS first (the
  // exact arithmetic: f32 activations, f32 cache); empty, with a failure added, if that fails.
  std::vector<float> chunk_logits(const std::string& model, const std::vector<int32_t>& tokens, int64_t c,
                                  int64_t n_ctx, int32_t bos, int64_t vocab) {
    std::vector<int32_t> chunk(tokens.begin() + c * n_ctx, tokens.begin() + (c + 1) * n_ctx);
    chunk[0] = bos;
    std::ofstream ids(path("ids.txt"));
    for (int64_t i = 0; i + 1 < n_ctx; ++i) ids << chunk[static_cast<size_t>(i)] << ' ';
    ids.close();
    if (run("score " + model + " --ids " + path("ids.txt") + " --logits-out " + path("l.f32")) != 0) {
      ADD_FAILURE() << err_;
      return {};
    }
    const std::vector<uint8_t> bytes = read_bytes("l.f32");
    if (bytes.size() != static_cast<size_t>((n_ctx - 1) * vocab * 4)) {
      ADD_FAILURE() << "score wrote " << bytes.size() << " bytes of logits";
      return {};
    }
    std::vector<float> logits(bytes.size() / 4);
    std::memcpy(logits.data(), bytes.data(), bytes.size());
    return logits;
  }
  Ppl parse() const {
    Ppl p;
    std::smatch m;
    if (std::regex_search(out_, m, std::regex(R"(PPL = ([0-9.]+) \+/- ([0-9.]+))"))) {
      p.ppl = std::stod(m[1]);
      p.err = std::stod(m[2]);
    }
    const std::regex chunk(R"(\[(\d+)\]([0-9.]+),)");
    for (auto it = std::sregex_iterator(out_.begin(), out_.end(), chunk); it != std::sregex_iterator(); ++it)
      p.chunks.push_back(std::stod((*it)[2]));
    return p;
  }
};

double rel(double a, double b) { return std::abs(a - b) / std::abs(b); }

// Reference figures measured with llama.cpp's llama-perplexity (CPU build, 1 thread, default
// f16 KV cache) on kStory written to story.txt:
//   llama-perplexity -m MODEL -f story.txt -c 128 -t 1
struct LlamaCppFigure {
  const char* model;
  double ppl, err;
  std::vector<double> chunks;
  double bound;  // relative agreement required
};

TEST_F(PerplexityCli, AgreesWithLlamaPerplexity) {
  const std::vector<LlamaCppFigure> refs = {
      // F32 weights: llama.cpp computes in f32 as Tessera does; measured agreement 1e-6.
      {"models/gguf/aidreams260K.gguf", 214.7572, 23.94249,
       {189.4700, 274.5132, 295.1140, 237.6533, 240.5854, 252.8763, 244.6124, 221.8237, 214.7572}, 1e-4},
      // Q8_0: both round each matrix product's input to 8-bit blocks; measured 0.03% (its F16 ffn_down rounds its input to binary16, as llama.cpp does).
      {"models/gguf/aidreams260K-Q8_0.gguf", 214.8755, 23.93127,
       {188.8250, 274.6076, 295.2355, 237.8807, 240.6149, 253.1600, 245.0418, 221.8439, 214.8755}, 5e-3},
      // Q4_K_M (random weights, so the perplexity is huge; its log is about 21 nats):
      // measured 0.18% with Q8_K activations against the K-quant weights as llama.cpp
      // rounds them (0.21% with exact f32 activations; 7 of the 9 chunks moved closer).
      // llama.cpp's own figure moves by 0.1% with -b 128 (1269534011.2285)
      // and its per-chunk figures by up to 1.5% with the batch size; a later llama.cpp reads
      // 1276400039.8 (flash attention on), 1281868542.1 with -fa off, 1271108566.8 with -nr.
      // How far the two programs' distributions are apart: KlDivergenceAgreesWithLlamaPerplexity.
      {"models/gguf/kquant/kq-llama-256d-4L-Q4_K_M.gguf", 1270818618.8829, 362375433.87138,
       {1980626394.3665, 957816930.0613, 1258709905.0508, 1415218576.2062, 1501008735.9675, 1262526569.3716,
        1200696169.2912, 1390834997.6767, 1270818618.8829},
       1e-2},
  };
  for (const auto& r : refs) {
    TESSERA_REQUIRE_FIXTURE(model, r.model);
    ASSERT_EQ(run("perplexity " + model + " -f " + path("story.txt") + " -c 128"), 0) << err_;
    const Ppl p = parse();
    EXPECT_LT(rel(p.ppl, r.ppl), r.bound) << r.model << ": " << p.ppl << " vs llama.cpp " << r.ppl;
    EXPECT_LT(rel(p.err, r.err), 2 * r.bound) << r.model << ": +/- " << p.err << " vs llama.cpp " << r.err;
    ASSERT_EQ(p.chunks.size(), r.chunks.size()) << out_;
    for (size_t i = 0; i < r.chunks.size(); ++i)
      EXPECT_LT(rel(p.chunks[i], r.chunks[i]), 2 * r.bound) << r.model << " chunk " << i + 1;
    EXPECT_NE(err_.find("perplexity: 1173 tokens, 9 chunks of 128, batch 128, scoring the last 63 of each"),
              std::string::npos)
        << err_;
  }
}

// The same computation written out here: tokenize, cut into chunks, BOS first, and the
// negative log-likelihood of the second half from the logits `tessera score` gives for every
// prefix, in double. `perplexity --exact` uses the same arithmetic (f32 activations, f32 KV
// cache), so only the summation order differs.
TEST_F(PerplexityCli, EqualsTheDefinitionOverScoredLogits) {
  TESSERA_REQUIRE_FIXTURE(model, "models/gguf/aidreams260K.gguf");
  constexpr int64_t kCtx = 32, kChunks = 3, kFirst = kCtx / 2;
  ASSERT_EQ(run("perplexity " + model + " -f " + path("story.txt") + " -c 32 --chunks 3 --exact -b 8"), 0) << err_;
  const Ppl got = parse();
  ASSERT_EQ(got.chunks.size(), static_cast<size_t>(kChunks)) << out_;

  auto file = gguf::File::open(model);
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  auto tok = gguf::Tokenizer::from_gguf(*file);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  const std::vector<int32_t> tokens = tok->encode(kStory, tok->add_bos());
  ASSERT_TRUE(tok->add_bos());
  ASSERT_GE(tokens.size(), static_cast<size_t>(kCtx * kChunks));
  double nll = 0, nll2 = 0;
  int64_t count = 0;
  const int64_t vocab = tok->vocab_size();
  for (int64_t c = 0; c < kChunks; ++c) {
    std::vector<int32_t> chunk(tokens.begin() + c * kCtx, tokens.begin() + (c + 1) * kCtx);
    chunk[0] = tok->bos();
    const std::vector<float> scored = chunk_logits(model, tokens, c, kCtx, tok->bos(), vocab);
    ASSERT_FALSE(scored.empty());
    const float* logits = scored.data();
    for (int64_t j = kFirst; j <= kCtx - 2; ++j) {
      const float* row = logits + j * vocab;
      double max = row[0], sum = 0;
      for (int64_t v = 0; v < vocab; ++v) max = std::max<double>(max, row[v]);
      for (int64_t v = 0; v < vocab; ++v) sum += std::exp(row[v] - max);
      const double lp = row[chunk[static_cast<size_t>(j + 1)]] - max - std::log(sum);
      nll -= lp;
      nll2 += lp * lp;
      ++count;
    }
    EXPECT_LT(rel(got.chunks[static_cast<size_t>(c)], std::exp(nll / count)), 1e-4) << "chunk " << c + 1;
  }
  const double mean = nll / count, ppl = std::exp(mean);
  const double err = ppl * std::sqrt((nll2 / count - mean * mean) / (count - 1));
  EXPECT_EQ(count, kChunks * (kCtx - 1 - kFirst));
  EXPECT_LT(rel(got.ppl, ppl), 1e-4) << got.ppl << " vs " << ppl;
  EXPECT_LT(rel(got.err, err), 1e-3) << got.err << " vs " << err;
}

// --kl-divergence-base FILE with -f writes llama-perplexity's base file: the header, the
// text's tokens, and per scored position the log-probabilities as 16-bit codes over the 16
// nats below the largest. Read back here and checked against log softmax in double of the
// logits `tessera score` gives (the same exact arithmetic as --exact).
TEST_F(PerplexityCli, KlDivergenceBaseIsLlamaPerplexitysFileOfLogProbabilities) {
  TESSERA_REQUIRE_FIXTURE(model, "models/gguf/aidreams260K.gguf");
  constexpr int64_t kCtx = 128, kChunks = 9, kFirst = kCtx / 2, kScored = kCtx - 1 - kFirst;
  ASSERT_EQ(run("perplexity " + model + " -f " + path("story.txt") + " -c 128 --exact --kl-divergence-base " +
                path("base.kld")),
            0)
      << err_;
  EXPECT_NE(err_.find("wrote the log-probabilities of 567 positions to"), std::string::npos) << err_;
  const std::vector<uint8_t> f = read_bytes("base.kld");
  auto file = gguf::File::open(model);
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  auto tok = gguf::Tokenizer::from_gguf(*file);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  const int64_t vocab = tok->vocab_size(), nv = 2 * ((vocab + 1) / 2) + 4;
  ASSERT_EQ(vocab, 512);
  ASSERT_EQ(f.size(), static_cast<size_t>(20 + kCtx * kChunks * 4 + kChunks * kScored * nv * 2));
  EXPECT_EQ(std::string(f.begin(), f.begin() + 8), "_logits_");
  int32_t head[3];
  std::memcpy(head, f.data() + 8, 12);
  EXPECT_EQ(head[0], kCtx);
  EXPECT_EQ(head[1], vocab);
  EXPECT_EQ(head[2], kChunks);
  const std::vector<int32_t> tokens = tok->encode(kStory, tok->add_bos());
  std::vector<int32_t> stored(static_cast<size_t>(kCtx * kChunks));
  std::memcpy(stored.data(), f.data() + 20, stored.size() * 4);
  EXPECT_TRUE(std::equal(stored.begin(), stored.end(), tokens.begin()));  // as tokenized: BOS not substituted

  for (int64_t c : {int64_t{0}, int64_t{5}}) {
    const std::vector<float> scored = chunk_logits(model, tokens, c, kCtx, tok->bos(), vocab);
    ASSERT_FALSE(scored.empty());
    const float* logits = scored.data();
    int64_t coded = 0;
    for (int64_t j = kFirst; j <= kCtx - 2; ++j) {
      const float* row = logits + j * vocab;
      double max = row[0], sum = 0;
      for (int64_t v = 0; v < vocab; ++v) max = std::max<double>(max, row[v]);
      for (int64_t v = 0; v < vocab; ++v) sum += std::exp(row[v] - max);
      const uint8_t* rec = f.data() + 20 + kCtx * kChunks * 4 + ((c * kScored) + (j - kFirst)) * nv * 2;
      float scale, min_lp;
      std::memcpy(&scale, rec, 4);
      std::memcpy(&min_lp, rec + 4, 4);
      ASSERT_GT(scale, 0.0f);
      EXPECT_LE(scale, 16.0f / 65535.0f * 1.0001f);  // at most 16 nats in 65,535 steps
      for (int64_t v = 0; v < vocab; ++v) {
        uint16_t code;
        std::memcpy(&code, rec + 8 + v * 2, 2);
        const double lp = row[v] - max - std::log(sum);  // exact log softmax
        if (code == 0) {
          EXPECT_LT(lp, min_lp + scale) << "chunk " << c << " position " << j << " token " << v;
          continue;
        }
        ++coded;
        // Half a step of rounding, plus the float arithmetic of scale and offset.
        EXPECT_NEAR(scale * code + min_lp, lp, 0.5 * scale + 2e-5) << "chunk " << c << " position " << j << " token " << v;
      }
    }
    EXPECT_GT(coded, kScored * 50) << "too few log-probabilities above the floor to check";
  }
}

// The statistics of --kl-divergence against llama-perplexity's on the same files: the F32
// model's base written by each program (the two bases agree to a mean KL divergence of
// 1e-6), every quantized file compared with it. llama.cpp's figures (llama-perplexity, 1
// thread, default settings): `-f story.txt -c 128 --kl-divergence-base f32.kld` on the F32
// file, then `-m QUANT --kl-divergence-base f32.kld --kl-divergence`. Measured differences of
// the mean KL divergence 0.3% to 2.4% (the uncertainty llama.cpp prints for each is 4-5%).
TEST_F(PerplexityCli, KlDivergenceAgreesWithLlamaPerplexity) {
  TESSERA_REQUIRE_FIXTURE(f32, "models/gguf/kquant/kq-llama-256d-4L-F32.gguf");
  TESSERA_REQUIRE_FIXTURE(a260k, "models/gguf/aidreams260K.gguf");
  struct Ref {
    std::string base_model, model;
    double mean_kld, same_top;  // llama.cpp's, same top in %
  };
  const std::string kq = "models/gguf/kquant/kq-llama-256d-4L-";
  const std::vector<Ref> refs = {
      {f32, kq + "Q4_K_M.gguf", 0.226638, 74.956},
      {f32, kq + "Q6_K.gguf", 0.020663, 91.534},
      {f32, kq + "Q8_0.gguf", 0.002481, 97.354},
      {a260k, "models/gguf/aidreams260K-Q8_0.gguf", 0.000447, 98.765},
      {a260k, "models/gguf/aidreams260K-Q4_0.gguf", 0.051475, 82.540},
  };
  auto stat = [&](const char* name) {
    std::smatch m;
    const std::string pattern = std::string(name) + R"( *: +([-0-9.]+))";
    return std::regex_search(out_, m, std::regex(pattern)) ? std::stod(m[1]) : -1.0;
  };
  for (const std::string& base_model : {f32, a260k}) {
    const std::string base = path(std::filesystem::path(base_model).stem().string() + ".kld");
    ASSERT_EQ(run("perplexity " + base_model + " -f " + path("story.txt") + " -c 128 --kl-divergence-base " + base), 0)
        << err_;
    const double ppl = parse().ppl;
    // The base model against its own base: only the 16-bit coding of the log-probabilities.
    ASSERT_EQ(run("perplexity " + base_model + " --kl-divergence-base " + base + " --kl-divergence"), 0) << err_;
    EXPECT_LT(stat("Mean    KLD"), 1e-6) << out_;
    EXPECT_GT(stat("Same top p"), 99.0) << out_;
    EXPECT_LT(rel(stat("Mean PPL\\(Q\\)"), ppl), 1e-5) << out_;  // the same positions and tokens
  }
  for (const Ref& r : refs) {
    TESSERA_REQUIRE_FIXTURE(model, r.model);
    const std::string base =
        path(std::filesystem::path(r.base_model == f32 ? f32 : a260k).stem().string() + ".kld");
    ASSERT_EQ(run("perplexity " + model + " --kl-divergence-base " + base + " --kl-divergence"), 0) << err_;
    EXPECT_NE(out_.find("====== KL divergence statistics ======"), std::string::npos) << out_;
    EXPECT_LT(rel(stat("Mean    KLD"), r.mean_kld), 0.05) << r.model << ": " << stat("Mean    KLD") << " vs llama.cpp " << r.mean_kld;
    EXPECT_NEAR(stat("Same top p"), r.same_top, 2.0) << r.model;
    EXPECT_NE(err_.find("kl-divergence: 9 chunks of 128"), std::string::npos) << err_;
  }
}

TEST_F(PerplexityCli, KlDivergenceClearErrors) {
  TESSERA_REQUIRE_FIXTURE(model, "models/gguf/aidreams260K.gguf");
  const std::string base = path("base.kld");
  ASSERT_EQ(run("perplexity " + model + " -f " + path("story.txt") + " -c 128 --chunks 2 --kl-divergence-base " + base), 0)
      << err_;
  auto fails_with = [&](const std::string& args, const std::string& want) {
    EXPECT_NE(run("perplexity " + args), 0) << args;
    EXPECT_NE(err_.find(want), std::string::npos) << args << "\n" << err_;
  };
  fails_with(model + " --kl-divergence", "--kl-divergence needs --kl-divergence-base FILE");
  fails_with(model + " --kl-divergence-base " + base + " --kl-divergence -f " + path("story.txt"), "drop -f");
  fails_with(model, "perplexity needs a text");
  fails_with(model + " --kl-divergence-base " + path("missing.kld") + " --kl-divergence", "cannot read the kl-divergence base file");
  fails_with(model + " --kl-divergence-base " + path("story.txt") + " --kl-divergence", "no '_logits_' header");
  fails_with(model + " --kl-divergence-base " + base + " --kl-divergence -c 64", "was written with a context of 128");
  std::vector<uint8_t> f = read_bytes("base.kld");
  auto write = [&](const std::vector<uint8_t>& bytes) {
    std::ofstream(path("bad.kld"), std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                                            static_cast<std::streamsize>(bytes.size()));
    return model + " --kl-divergence-base " + path("bad.kld") + " --kl-divergence";
  };
  // Truncated: the size the header implies is named.
  fails_with(write(std::vector<uint8_t>(f.begin(), f.end() - 100)), "need " + std::to_string(f.size()));
  // A token outside the vocabulary.
  std::vector<uint8_t> g = f;
  const int32_t big = 600;
  std::memcpy(g.data() + 20 + 4 * 7, &big, 4);
  fails_with(write(g), "token 7 is 600, outside the vocabulary of 512");
  // A record whose scale is not a number.
  g = f;
  const float nan = std::nanf("");
  std::memcpy(g.data() + 20 + 128 * 2 * 4, &nan, 4);
  fails_with(write(g), "chunk 1 position 64 has scale nan");
  // A chunk count past what the file holds.
  g = f;
  const int32_t chunks = 1 << 29;
  std::memcpy(g.data() + 16, &chunks, 4);
  fails_with(write(g), "536870912 chunks of 128 tokens");
  // Another vocabulary.
  TESSERA_REQUIRE_FIXTURE(other, "models/gguf/llama-2-tiny-random.gguf");
  fails_with(other + " --kl-divergence-base " + base + " --kl-divergence", "not the same vocabulary");
}

TEST_F(PerplexityCli, ClearErrors) {
  TESSERA_REQUIRE_FIXTURE(model, "models/gguf/aidreams260K.gguf");
  EXPECT_NE(run("perplexity " + model + " -f " + path("missing.txt")), 0);
  EXPECT_NE(err_.find("cannot read the text file"), std::string::npos) << err_;
  // Fewer than two chunks of tokens, as llama-perplexity refuses.
  EXPECT_NE(run("perplexity " + model + " -f " + path("story.txt") + " -c 1024"), 0);
  EXPECT_NE(err_.find("has 1173 tokens; perplexity with a context of 1024 needs at least 2048"), std::string::npos)
      << err_;
}

}  // namespace
}  // namespace tessera::testing
