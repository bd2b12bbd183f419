// `tessera tokenize` against llama.cpp's tokenizer vectors (../shared/models/gguf/vocab):
// --ids prints each input's ids exactly as llama.cpp tokenizes it; the token listing is one
// `ID -> 'PIECE'` line per token with the vocabulary's BOS first; an empty text and a text
// that starts with a dash work.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "cli_fixture.h"
#include "fixtures.h"

namespace tessera::testing {
namespace {

class TokenizeCli : public CliTest {};

// Texts each followed by the separator line (the last one, in some files, by the end of
// the file instead).
std::vector<std::string> split_inputs(const std::string& all) {
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> out;
  size_t at = 0;
  for (size_t k; (k = all.find(sep, at)) != std::string::npos; at = k + sep.size()) out.push_back(all.substr(at, k - at));
  if (at < all.size()) out.push_back(all.substr(at));
  return out;
}

// "1142 220 19" -> "[1142, 220, 19]\n", as --ids prints it.
std::string as_list(const std::string& line) {
  std::istringstream is(line);
  std::string out = "[";
  for (int64_t v; is >> v;) out += (out.size() > 1 ? ", " : "") + std::to_string(v);
  return out + "]\n";
}

TEST_F(TokenizeCli, IdsAreLlamaCppsForEveryVectorOfEveryVocabulary) {
  for (const std::string name : {"llama-bpe", "qwen2", "gpt-2", "phi-3", "deepseek-llm", "deepseek-coder", "falcon",
                                 "mpt", "starcoder", "refact", "gemma-4"}) {
    SCOPED_TRACE(name);
    const std::string rel = "models/gguf/vocab/ggml-vocab-" + name + ".gguf";
    TESSERA_REQUIRE_FIXTURE(vocab, rel);
    TESSERA_REQUIRE_FIXTURE(inp, rel + ".inp");
    TESSERA_REQUIRE_FIXTURE(outp, rel + ".out");
    const std::vector<std::string> texts = split_inputs(read_text(inp));
    std::istringstream outs(read_text(outp));
    ASSERT_EQ(texts.size(), 46u);
    for (size_t i = 0; i < texts.size(); ++i) {
      std::string want;
      ASSERT_TRUE(std::getline(outs, want));
      {
        std::ofstream f(path("text"), std::ios::binary);
        f << texts[i];
      }
      ASSERT_EQ(run("tokenize " + vocab + " --ids --no-parse-special --file " + path("text")), 0) << err_;
      EXPECT_EQ(out_, as_list(want)) << name << " input " << i << ": '" << texts[i] << "'";
    }
  }
}

TEST_F(TokenizeCli, ListsTokensWithTheVocabularysBos) {
  TESSERA_REQUIRE_FIXTURE(vocab, "models/gguf/vocab/ggml-vocab-llama-bpe.gguf");
  ASSERT_EQ(run("tokenize " + vocab + " 'Hello world'"), 0) << err_;
  EXPECT_EQ(out_, "128000 -> '<|begin_of_text|>'\n  9906 -> 'Hello'\n  1917 -> ' world'\n");
  ASSERT_EQ(run("tokenize " + vocab + " --ids -- '-Hello world'"), 0) << err_;
  EXPECT_EQ(out_, "[12, 9906, 1917]\n");
  ASSERT_EQ(run("tokenize " + vocab + " --ids ''"), 0) << err_;
  EXPECT_EQ(out_, "[]\n");
  ASSERT_EQ(run("tokenize " + vocab + " ''"), 0) << err_;
  EXPECT_EQ(out_, "128000 -> '<|begin_of_text|>'\n");
  EXPECT_NE(run("tokenize " + path("missing.gguf") + " x"), 0);
  EXPECT_NE(err_.find("missing.gguf"), std::string::npos) << err_;
}

}  // namespace
}  // namespace tessera::testing
