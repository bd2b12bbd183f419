// The spm tokenizer against llama.cpp's test vectors for the LLaMA vocabulary.
#include <gtest/gtest.h>

#include <sstream>

#include "fixtures.h"
#include "import/gguf/gguf_file.h"
#include "import/gguf/tokenizer.h"

namespace tessera::gguf {
namespace {

// The .inp file holds texts each followed by "\n__ggml_vocab_test__\n"; the .out file one
// line of space-separated ids per text.
std::vector<std::string> split_inputs(const std::string& all) {
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> out;
  size_t at = 0;
  while (true) {
    size_t k = all.find(sep, at);
    if (k == std::string::npos) break;
    out.push_back(all.substr(at, k - at));
    at = k + sep.size();
  }
  return out;
}

std::vector<std::vector<int32_t>> read_ids(const std::string& all) {
  std::vector<std::vector<int32_t>> out;
  std::istringstream lines(all);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream is(line);
    std::vector<int32_t> ids;
    int32_t v;
    while (is >> v) ids.push_back(v);
    out.push_back(ids);
  }
  return out;
}

std::string as_string(const std::vector<uint8_t>& b) { return std::string(b.begin(), b.end()); }

TEST(GgufTokenizer, ReproducesLlamaSpmVectors) {
  TESSERA_REQUIRE_FIXTURE(model, "models/gguf/llama-2-tiny-random.gguf");
  TESSERA_REQUIRE_FIXTURE(inp, "models/gguf/llama-spm-tokenizer.inp");
  TESSERA_REQUIRE_FIXTURE(outp, "models/gguf/llama-spm-tokenizer.out");
  auto f = File::open(model);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  auto tok = Tokenizer::from_gguf(*f);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  EXPECT_EQ(tok->vocab_size(), 32000);
  EXPECT_EQ(tok->bos(), 1);
  EXPECT_EQ(tok->eos(), 2);
  auto texts = split_inputs(as_string(testing::read_file(inp)));
  auto expected = read_ids(as_string(testing::read_file(outp)));
  ASSERT_EQ(texts.size(), 46u);
  ASSERT_EQ(texts.size(), expected.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    std::vector<int32_t> ids = tok->encode(texts[i], /*add_bos=*/false);
    EXPECT_EQ(ids, expected[i]) << "input " << i << ": '" << texts[i] << "'";
    // Decoding gives the text back (the spm vocabulary with byte fallback is lossless).
    EXPECT_EQ(tok->decode(ids), texts[i]) << "input " << i;
  }
}

TEST(GgufTokenizer, BosAndPieces) {
  TESSERA_REQUIRE_FIXTURE(model, "models/gguf/llama-2-tiny-random.gguf");
  auto f = File::open(model);
  ASSERT_TRUE(f.ok());
  auto tok = Tokenizer::from_gguf(*f);
  ASSERT_TRUE(tok.ok());
  std::vector<int32_t> ids = tok->encode("Hello world", true);
  ASSERT_EQ(ids, (std::vector<int32_t>{1, 15043, 3186}));
  EXPECT_EQ(tok->piece(1), "");           // BOS is a control token: no text
  EXPECT_EQ(tok->piece(15043), " Hello");  // "▁Hello"
  EXPECT_EQ(tok->piece(13), "\n");         // byte token <0x0A>
  EXPECT_EQ(tok->decode(ids), "Hello world");
}

}  // namespace
}  // namespace tessera::gguf
