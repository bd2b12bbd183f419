// gguf::chat_template_for: the template named by a GGUF file's tokenizer.chat_template, or the
// override; the fixtures' templates, and BOS placement when their text is tokenized.
#include "import/gguf/gguf_chat_template.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "fixtures.h"
#include "import/gguf/gguf_file.h"
#include "import/gguf/gguf_writer.h"
#include "import/gguf/tokenizer.h"

namespace tessera::gguf {
namespace {

using llm::ChatMessage;

// Leading/trailing spaces in two messages check which families trim content.
const std::vector<ChatMessage> kConversation = {
    {"system", "You are a terse assistant."},
    {"user", "Hi there!"},
    {"assistant", " Hello. "},
    {"user", "What is 2+2?"},
};

// On files written here: a template of a known family, one of no known
// family, a key of the wrong type, and an override that wins over the file's template.
TEST(GgufChatTemplate, ChatTemplateForReadsTheFileKey) {
  auto parsed = [](const std::function<void(Writer&)>& fill) {
    Writer w;
    w.set_string("general.architecture", "llama");
    fill(w);
    auto bytes = w.bytes();
    EXPECT_TRUE(bytes.ok()) << bytes.status().to_string();
    auto f = File::parse(ConstData::from_vector(std::move(bytes).value()), "t.gguf");
    EXPECT_TRUE(f.ok()) << f.status().to_string();
    return std::move(f).value();
  };
  const File gemma = parsed([](Writer& w) {
    w.set_string("tokenizer.chat_template", "{{ '<start_of_turn>' + role + '\\n' }}");
  });
  auto t = chat_template_for(gemma, "");
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(t->name(), "gemma");
  t = chat_template_for(gemma, "phi3");
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(t->name(), "phi3");

  const File vicuna = parsed([](Writer& w) {
    w.set_string("tokenizer.chat_template", "{% for m in messages %}USER: {{ m['content'] }}{% endfor %}");
  });
  auto unknown = chat_template_for(vicuna, "");  // no native family: rendered from its source
  ASSERT_TRUE(unknown.ok()) << unknown.status().to_string();
  EXPECT_EQ(unknown->name(), "jinja");
  EXPECT_EQ(*unknown->render(std::vector<llm::ChatMessage>{{"user", "Hi"}}, true), "USER: Hi");
  EXPECT_TRUE(chat_template_for(vicuna, "chatml").ok());

  const File number = parsed([](Writer& w) { w.set_u32("tokenizer.chat_template", 7); });
  auto wrong = chat_template_for(number, "");
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().to_string().find("tokenizer.chat_template is not a string"), std::string::npos)
      << wrong.status().to_string();
}

// How many times `id` occurs in `ids`.
size_t count_of(const std::vector<int32_t>& ids, int32_t id) { return std::count(ids.begin(), ids.end(), id); }

TEST(GgufChatTemplate, Llama3FixtureHasNoTemplateAndTakesTheOverride) {
  TESSERA_REQUIRE_FIXTURE(path, "models/gguf/llama3-256d-2L-Q4_K_M-embQ3_K.gguf");
  auto f = File::open(path);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  auto none = chat_template_for(*f, "");
  ASSERT_FALSE(none.ok());
  const std::string msg = none.status().to_string();
  EXPECT_NE(msg.find("tokenizer.chat_template"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--chat-template"), std::string::npos) << msg;
  EXPECT_NE(msg.find("llama3"), std::string::npos) << msg;
  EXPECT_FALSE(chat_template_for(*f, "nope").ok());

  auto t = chat_template_for(*f, "llama3");
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  auto tok = Tokenizer::from_gguf(*f);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  // BOS from the tokenizer, once; the markers and the stop string are single tokens.
  const std::vector<int32_t> ids = tok->encode(t->apply(kConversation, true), tok->add_bos(), true);
  ASSERT_TRUE(tok->add_bos());
  EXPECT_EQ(ids.front(), tok->bos());
  EXPECT_EQ(count_of(ids, tok->bos()), 1u);
  const int32_t header = tok->find("<|start_header_id|>"), eot = tok->find("<|eot_id|>");
  ASSERT_GE(header, 0);
  ASSERT_GE(eot, 0);
  EXPECT_EQ(ids[1], header);
  EXPECT_EQ(count_of(ids, header), 5u);
  EXPECT_EQ(count_of(ids, eot), 4u);
  EXPECT_GE(tok->find(t->stop_strings().at(0)), 0);
}

TEST(GgufChatTemplate, Qwen2FixtureIsDetectedAsChatMLWithItsDefaultSystem) {
  TESSERA_REQUIRE_FIXTURE(path, "models/gguf/qwen2-256d-2L-Q4_K_M-embQ3_K.gguf");
  auto f = File::open(path);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  auto t = chat_template_for(*f, "");
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(t->name(), "chatml");
  EXPECT_EQ(t->default_system(), "You are a helpful assistant");
  auto tok = Tokenizer::from_gguf(*f);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  // Qwen2 adds no BOS (its BOS id is <|endoftext|>): the text starts with <|im_start|>.
  EXPECT_FALSE(tok->add_bos());
  std::vector<ChatMessage> user_only = {{"user", "Hi"}};
  const std::vector<int32_t> ids = tok->encode(t->apply(user_only, true), tok->add_bos(), true);
  const int32_t start = tok->find("<|im_start|>"), end = tok->find("<|im_end|>");
  ASSERT_GE(start, 0);
  ASSERT_GE(end, 0);
  EXPECT_EQ(ids.front(), start);
  EXPECT_EQ(count_of(ids, tok->bos()), 0u);
  EXPECT_EQ(count_of(ids, start), 3u);  // default system, user, assistant opening
  EXPECT_EQ(count_of(ids, end), 2u);
  EXPECT_EQ(tok->decode(ids).find("You are a helpful assistant"), tok->decode(ids).find("You are"));
}

}  // namespace
}  // namespace tessera::gguf
