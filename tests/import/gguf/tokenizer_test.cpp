// The tokenizers against llama.cpp's test vectors: the LLaMA spm vocabulary, and every
// vocab/ file (byte-level BPE: Llama 3, Qwen2, GPT-2, DeepSeek LLM and Coder, Falcon, MPT,
// StarCoder, Refact; Phi-3 spm; Gemma 4 BPE over SentencePiece-style text).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <random>
#include <set>
#include <sstream>

#include "fixtures.h"
#include "import/gguf/gguf_file.h"
#include "import/gguf/pretokenize.h"
#include "import/gguf/tokenizer.h"

namespace tessera::gguf {
namespace {

// The .inp file holds texts each followed by "\n__ggml_vocab_test__\n" (the last one, in
// some files, by the end of the file instead); the .out file one line of space-separated
// ids per text.
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
  if (at < all.size()) out.push_back(all.substr(at));
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

// Every vector of one vocab/ file, exactly; decoding gives the text back.
void check_vocab_vectors(const std::string& name, Tokenizer::Model model) {
  const std::string rel = "models/gguf/vocab/ggml-vocab-" + name + ".gguf";
  TESSERA_REQUIRE_FIXTURE(path, rel);
  TESSERA_REQUIRE_FIXTURE(inp, rel + ".inp");
  TESSERA_REQUIRE_FIXTURE(outp, rel + ".out");
  auto f = File::open(path);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  auto tok = Tokenizer::from_gguf(*f);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  EXPECT_EQ(tok->model(), model);
  auto texts = split_inputs(as_string(testing::read_file(inp)));
  auto expected = read_ids(as_string(testing::read_file(outp)));
  ASSERT_EQ(texts.size(), 46u);
  ASSERT_EQ(texts.size(), expected.size());
  int exact = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    std::vector<int32_t> ids = tok->encode(texts[i], /*add_bos=*/false);
    EXPECT_EQ(ids, expected[i]) << name << " input " << i << ": '" << texts[i] << "'";
    exact += ids == expected[i];
    EXPECT_EQ(tok->decode(ids), texts[i]) << name << " input " << i;
  }
  EXPECT_EQ(exact, 46) << name;
}

// Every vocabulary of ../shared/models/gguf/vocab, and its tokenizer model.
struct VocabCase {
  const char* name;
  Tokenizer::Model model;
};
const VocabCase kVocabs[] = {
    {"llama-bpe", Tokenizer::Model::bpe},      {"qwen2", Tokenizer::Model::bpe},
    {"gpt-2", Tokenizer::Model::bpe},          {"phi-3", Tokenizer::Model::spm},
    {"deepseek-llm", Tokenizer::Model::bpe},   {"deepseek-coder", Tokenizer::Model::bpe},
    {"falcon", Tokenizer::Model::bpe},         {"mpt", Tokenizer::Model::bpe},
    {"starcoder", Tokenizer::Model::bpe},      {"refact", Tokenizer::Model::bpe},
    {"gemma-4", Tokenizer::Model::bpe},
};

class GgufVocabVectors : public ::testing::TestWithParam<VocabCase> {};

TEST_P(GgufVocabVectors, ReproducesLlamaCpp) { check_vocab_vectors(GetParam().name, GetParam().model); }

INSTANTIATE_TEST_SUITE_P(AllVocabularies, GgufVocabVectors, ::testing::ValuesIn(kVocabs),
                         [](const ::testing::TestParamInfo<VocabCase>& info) {
                           std::string n = info.param.name;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

// No vocabulary of the folder is left out of the list above.
TEST(GgufTokenizer, EveryVocabularyOfTheFolderIsChecked) {
  TESSERA_REQUIRE_FIXTURE(dir, "models/gguf/vocab");
  std::set<std::string> listed;
  for (const VocabCase& v : kVocabs) listed.insert(std::string("ggml-vocab-") + v.name + ".gguf");
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string f = e.path().filename().string();
    if (e.path().extension() != ".gguf") continue;
    ++files;
    EXPECT_TRUE(listed.count(f)) << f << " has no vector test";
  }
  EXPECT_EQ(files, static_cast<int>(std::size(kVocabs)));
}

// Gemma 4: BPE over text whose spaces are "▁", bytes not mapped, BOS always added.
TEST(GgufTokenizer, Gemma4IsBpeOverSentencePieceText) {
  TESSERA_REQUIRE_FIXTURE(path, "models/gguf/vocab/ggml-vocab-gemma-4.gguf");
  auto f = File::open(path);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  auto tok = Tokenizer::from_gguf(*f);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  EXPECT_FALSE(tok->byte_level());
  EXPECT_TRUE(tok->add_bos());
  EXPECT_EQ(tok->bos(), 2);
  std::vector<int32_t> ids = tok->encode("Hello world\n\n", true);
  ASSERT_GE(ids.size(), 3u);
  EXPECT_EQ(ids[0], 2);
  EXPECT_EQ(tok->token_text(ids[1]), "Hello");
  EXPECT_EQ(tok->token_text(ids[2]), "\xe2\x96\x81world");  // "▁world"
  EXPECT_EQ(tok->piece(ids[2]), " world");
  EXPECT_EQ(tok->decode(ids), "Hello world\n\n");
}

// The pre-tokenizers' word boundaries on hand-made text, as their regular expressions
// define them (pretokenize.h).
TEST(GgufTokenizer, PreTokenizerWords) {
  using V = std::vector<std::string>;
  // GPT-2: case-sensitive contractions, " ?" before letter, number and symbol runs, a
  // whitespace run gives its last character to the word after it.
  EXPECT_EQ(pre_tokenize(PreTokenizer::gpt2, "I'm  fine'S 12345!!\n\n  x  "),
            (V{"I", "'m", " ", " fine", "'", "S", " 12345", "!!", "\n\n ", " x", "  "}));
  // Llama 3: case-insensitive contractions, a non-letter glued before letters, numbers in
  // threes, newlines end a whitespace word and follow punctuation.
  EXPECT_EQ(pre_tokenize(PreTokenizer::llama3, "I'M  fine_x 12345.\n\n  x\t"),
            (V{"I", "'M", " ", " fine", "_x", " ", "123", "45", ".\n\n", " ", " x", "\t"}));
  // Qwen2: one digit per word.
  EXPECT_EQ(pre_tokenize(PreTokenizer::qwen2, "a 123"), (V{"a", " ", "1", "2", "3"}));
  // Letters of other scripts are letters, marks are not: Cyrillic, Han, a Khmer vowel sign.
  EXPECT_EQ(pre_tokenize(PreTokenizer::gpt2, "\xd0\xbd\xd0\xb0 \xe6\x88\x91\xe6\x83\xb3 \xe1\x9e\x80\xe1\x9e\xb6"),
            (V{"\xd0\xbd\xd0\xb0", " \xe6\x88\x91\xe6\x83\xb3", " \xe1\x9e\x80", "\xe1\x9e\xb6"}));
  // Invalid UTF-8 bytes are kept, each a character of its own.
  EXPECT_EQ(pre_tokenize(PreTokenizer::llama3, "a\xff\xfe" "b"), (V{"a", "\xff\xfe", "b"}));
  EXPECT_EQ(pre_tokenizer_from_name("llama-bpe"), PreTokenizer::llama3);
  EXPECT_EQ(pre_tokenizer_from_name("deepseek-coder"), PreTokenizer::deepseek_coder);
  EXPECT_EQ(pre_tokenizer_from_name("refact"), PreTokenizer::starcoder);
  EXPECT_EQ(pre_tokenizer_from_name("mpt"), PreTokenizer::gpt2);
  EXPECT_EQ(pre_tokenizer_from_name("chatglm-bpe"), std::nullopt);
}

// Pre-tokenizers made of several expressions: each splits the words the one before made,
// a word being the expression's matches and the text between them.
TEST(GgufTokenizer, PreTokenizerExpressionLists) {
  using V = std::vector<std::string>;
  // StarCoder: every digit a word first, so " 3" loses its space to a word of its own.
  EXPECT_EQ(pre_tokenize(PreTokenizer::starcoder, "ab12 3"), (V{"ab", "1", "2", " ", "3"}));
  // Falcon: runs of punctuation and symbols first, then GPT-2, then ASCII digits in threes.
  EXPECT_EQ(pre_tokenize(PreTokenizer::falcon, "x+=12345;"), (V{"x", "+=", "123", "45", ";"}));
  EXPECT_EQ(pre_tokenize(PreTokenizer::falcon, " 1234"), (V{" ", "123", "4"}));
  // DeepSeek Coder: newlines alone, \s?\p{L}+, \s?\p{P}+, CJK runs, single digits.
  EXPECT_EQ(pre_tokenize(PreTokenizer::deepseek_coder, "a\n\nb, 12"),
            (V{"a", "\n", "\n", "b", ",", " ", "1", "2"}));
  EXPECT_EQ(pre_tokenize(PreTokenizer::deepseek_coder, "\xe6\x88\x91\xe6\x83\xb3" "a"),  // 我想a
            (V{"\xe6\x88\x91\xe6\x83\xb3", "a"}));
  // DeepSeek LLM: cased letters with one white space before, then ASCII and CJK symbols
  // (digits excluded), trailing white space, CJK runs, digit runs.
  EXPECT_EQ(pre_tokenize(PreTokenizer::deepseek_llm, "Hi  there!\t"), (V{"Hi", " ", " there", "!", "\t"}));
  EXPECT_EQ(pre_tokenize(PreTokenizer::deepseek_llm, "v1.23"), (V{"v", "1", ".", "23"}));
  // U+3000 (ideographic space) is white space only, though its symbol list spans it.
  EXPECT_EQ(pre_tokenize(PreTokenizer::deepseek_llm, "a\xe3\x80\x80" "b"), (V{"a", "\xe3\x80\x80" "b"}));
  EXPECT_EQ(pre_tokenize(PreTokenizer::deepseek_llm, "\xef\xbc\x81\xe3\x80\x80\xef\xbc\x81"),  // ！U+3000！
            (V{"\xef\xbc\x81", "\xe3\x80\x80\xef\xbc\x81"}));
  // Gemma 4: lines and runs of newlines.
  EXPECT_EQ(pre_tokenize(PreTokenizer::gemma4, "a\xe2\x96\x81" "b\n\nc"), (V{"a\xe2\x96\x81" "b", "\n\n", "c"}));
  // Long white-space runs stay linear: a megabyte of spaces before a letter.
  const std::string spaces(1 << 20, ' ');
  EXPECT_EQ(pre_tokenize(PreTokenizer::deepseek_llm, spaces + "x").size(), 2u);
}

// Any text, invalid UTF-8 included, splits into non-empty words that concatenate back to it.
TEST(GgufTokenizer, PreTokenizersCoverEveryByte) {
  const PreTokenizer all[] = {PreTokenizer::gpt2,      PreTokenizer::llama3,         PreTokenizer::qwen2,
                              PreTokenizer::starcoder, PreTokenizer::falcon,         PreTokenizer::deepseek_coder,
                              PreTokenizer::deepseek_llm, PreTokenizer::gemma4};
  const char* parts[] = {" ", "\n", "\r\n", "\t", "a", "Z", "1", "'s", "\xe3\x80\x80", "\xef\xbc\x81", "\xe6\x88\x91",
                         "\xf0\x9f\xa6\x99", ".", "$", "\xc2\xa0", "\xe2\x96\x81", "\xd9\xa3", "\xff", "\xc3"};
  std::mt19937 rng(33);
  for (int it = 0; it < 2000; ++it) {
    std::string text;
    for (int k = static_cast<int>(rng() % 40); k > 0; --k)
      text += rng() % 4 == 0 ? std::string(1, static_cast<char>(rng() % 256)) : parts[rng() % std::size(parts)];
    for (PreTokenizer p : all) {
      std::string joined;
      for (const std::string& w : pre_tokenize(p, text)) {
        ASSERT_FALSE(w.empty()) << static_cast<int>(p);
        joined += w;
      }
      ASSERT_EQ(joined, text) << static_cast<int>(p);
    }
  }
}

TEST(GgufTokenizer, SpecialTokensOnlyWhenAsked) {
  TESSERA_REQUIRE_FIXTURE(path, "models/gguf/vocab/ggml-vocab-qwen2.gguf");
  auto f = File::open(path);
  ASSERT_TRUE(f.ok());
  auto tok = Tokenizer::from_gguf(*f);
  ASSERT_TRUE(tok.ok());
  const int32_t im_start = tok->find("<|im_start|>");
  ASSERT_GE(im_start, 0);
  EXPECT_EQ(tok->token_type(im_start), TokenType::control);
  auto special = tok->encode("<|im_start|>user\nhi", false, /*parse_special=*/true);
  ASSERT_GE(special.size(), 2u);
  EXPECT_EQ(special[0], im_start);
  EXPECT_EQ(std::vector<int32_t>(special.begin() + 1, special.end()), tok->encode("user\nhi", false));
  auto plain = tok->encode("<|im_start|>user\nhi", false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), im_start), 0);
  EXPECT_EQ(tok->decode(plain), "<|im_start|>user\nhi");
  EXPECT_EQ(tok->piece(im_start), "");  // control tokens decode to nothing
  EXPECT_FALSE(tok->add_bos());         // tokenizer.ggml.add_bos_token = false in this file
}

TEST(GgufTokenizer, UnknownModelsAndPreTokenizersNameTheKey) {
  TESSERA_REQUIRE_FIXTURE(path, "models/gguf/vocab/ggml-vocab-gpt-2.gguf");
  auto bytes = testing::read_file(path);
  // Rewrite the pre-tokenizer's name in place ("gpt-2" -> "gpt-9", same length).
  const std::string key = "tokenizer.ggml.pre";
  auto it = std::search(bytes.begin(), bytes.end(), key.begin(), key.end());
  ASSERT_NE(it, bytes.end());
  const std::string value = "gpt-2";
  auto val = std::search(it, bytes.end(), value.begin(), value.end());
  ASSERT_NE(val, bytes.end());
  val[4] = '9';
  auto f = File::parse(ConstData::from_vector(std::move(bytes)));
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  auto tok = Tokenizer::from_gguf(*f);
  ASSERT_FALSE(tok.ok());
  EXPECT_NE(tok.status().message().find("tokenizer.ggml.pre = 'gpt-9'"), std::string::npos) << tok.status().to_string();
}

}  // namespace
}  // namespace tessera::gguf
