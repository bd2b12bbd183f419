// Chat templates: each family's text for one system + user + assistant + user conversation,
// written out by hand from the family's published format; detection from Jinja markers;
// and BOS placement when the text is tokenized (never twice). The templates read from GGUF
// files: tests/import/gguf/gguf_chat_template_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>

#include "fixtures.h"
#include "import/gguf/gguf_file.h"
#include "import/gguf/tokenizer.h"
#include "runtime/llm/chat_template.h"

namespace tessera::llm {
namespace {

// Leading/trailing spaces in two messages check which families trim content.
const std::vector<ChatMessage> kConversation = {
    {"system", "You are a terse assistant."},
    {"user", "Hi there!"},
    {"assistant", " Hello. "},
    {"user", "What is 2+2?"},
};

ChatTemplate named(std::string_view n) {
  auto t = ChatTemplate::by_name(n);
  EXPECT_TRUE(t.ok()) << t.status().to_string();
  return std::move(t).value();
}

TEST(ChatTemplate, Llama3) {
  const std::string want =
      "<|start_header_id|>system<|end_header_id|>\n\nYou are a terse assistant.<|eot_id|>"
      "<|start_header_id|>user<|end_header_id|>\n\nHi there!<|eot_id|>"
      "<|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>"
      "<|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?<|eot_id|>";
  ChatTemplate t = named("llama3");
  EXPECT_EQ(t.apply(kConversation, false), want);
  EXPECT_EQ(t.apply(kConversation, true), want + "<|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_EQ(t.stop_strings(), std::vector<std::string>{"<|eot_id|>"});
}

TEST(ChatTemplate, ChatMLAndQwenAlias) {
  const std::string want =
      "<|im_start|>system\nYou are a terse assistant.<|im_end|>\n"
      "<|im_start|>user\nHi there!<|im_end|>\n"
      "<|im_start|>assistant\n Hello. <|im_end|>\n"
      "<|im_start|>user\nWhat is 2+2?<|im_end|>\n";
  for (const char* name : {"chatml", "qwen"}) {
    ChatTemplate t = named(name);
    EXPECT_EQ(t.name(), "chatml");
    EXPECT_EQ(t.apply(kConversation, false), want);
    EXPECT_EQ(t.apply(kConversation, true), want + "<|im_start|>assistant\n");
    EXPECT_EQ(t.stop_strings(), std::vector<std::string>{"<|im_end|>"});
  }
}

TEST(ChatTemplate, Llama2) {
  // The first BOS comes from the tokenizer; later turns start with "<s>" in the text.
  const std::string want =
      "[INST] <<SYS>>\nYou are a terse assistant.\n<</SYS>>\n\nHi there! [/INST] Hello. </s>"
      "<s>[INST] What is 2+2? [/INST]";
  ChatTemplate t = named("llama2");
  EXPECT_EQ(t.apply(kConversation, true), want);
  EXPECT_EQ(t.apply(kConversation, false), want);
  EXPECT_EQ(t.stop_strings(), std::vector<std::string>{"</s>"});
  // Without a system message.
  std::vector<ChatMessage> plain(kConversation.begin() + 1, kConversation.end());
  EXPECT_EQ(t.apply(plain, true), "[INST] Hi there! [/INST] Hello. </s><s>[INST] What is 2+2? [/INST]");
}

TEST(ChatTemplate, Phi3) {
  const std::string want =
      "<|system|>\nYou are a terse assistant.<|end|>\n"
      "<|user|>\nHi there!<|end|>\n"
      "<|assistant|>\n Hello. <|end|>\n"
      "<|user|>\nWhat is 2+2?<|end|>\n";
  ChatTemplate t = named("phi3");
  EXPECT_EQ(t.apply(kConversation, false), want);
  EXPECT_EQ(t.apply(kConversation, true), want + "<|assistant|>\n");
  EXPECT_EQ(t.stop_strings(), std::vector<std::string>{"<|end|>"});
}

TEST(ChatTemplate, Gemma) {
  // No system role: its text opens the first user turn; the assistant is "model".
  const std::string want =
      "<start_of_turn>user\nYou are a terse assistant.\n\nHi there!<end_of_turn>\n"
      "<start_of_turn>model\nHello.<end_of_turn>\n"
      "<start_of_turn>user\nWhat is 2+2?<end_of_turn>\n";
  ChatTemplate t = named("gemma");
  EXPECT_EQ(t.apply(kConversation, false), want);
  EXPECT_EQ(t.apply(kConversation, true), want + "<start_of_turn>model\n");
  EXPECT_EQ(t.stop_strings(), std::vector<std::string>{"<end_of_turn>"});
}

TEST(ChatTemplate, IncrementalPrefixProperty) {
  for (const auto& name : ChatTemplate::names()) {
    ChatTemplate t = named(name);
    const std::string all = t.apply(kConversation, true);
    for (size_t n = 2; n < kConversation.size(); ++n) {
      std::span<const ChatMessage> prefix(kConversation.data(), n);
      const std::string p = t.apply(prefix, kConversation[n].role == "assistant");
      EXPECT_EQ(all.compare(0, p.size(), p), 0) << name << ": prefix of " << n << " messages:\n" << p;
    }
  }
}

TEST(ChatTemplate, NamesAndUnknownName) {
  EXPECT_EQ(ChatTemplate::names(), (std::vector<std::string>{"llama3", "chatml", "llama2", "phi3", "gemma"}));
  auto t = ChatTemplate::by_name("vicuna");
  ASSERT_FALSE(t.ok());
  const std::string msg = t.status().to_string();
  EXPECT_NE(msg.find("'vicuna'"), std::string::npos) << msg;
  for (const char* n : {"llama3", "chatml", "qwen", "llama2", "phi3", "gemma"})
    EXPECT_NE(msg.find(n), std::string::npos) << msg;
}

TEST(ChatTemplate, DetectsFamiliesFromMarkers) {
  // Short Jinja sources holding each family's markers the way its templates write them.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{{ bos_token }}{% for m in messages %}{{ '<|start_header_id|>' + m['role'] + '<|end_header_id|>\\n\\n' + "
       "m['content'] | trim + '<|eot_id|>' }}{% endfor %}",
       "llama3"},
      {"{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n' }}{% endfor %}",
       "chatml"},
      {"{% for m in messages %}{% if m['role'] == 'system' %}{{ '<<SYS>>\\n' + m['content'] + '\\n<</SYS>>\\n\\n' "
       "}}{% else %}{{ bos_token + '[INST] ' + m['content'] + ' [/INST]' }}{% endif %}{% endfor %}",
       "llama2"},
      {"{% for m in messages %}{{ '<|' + m['role'] + '|>\\n' + m['content'] + '<|end|>\\n' }}{% endfor %}"
       "{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}",
       "phi3"},
      {"{% for m in messages %}{{ '<start_of_turn>' + role + '\\n' + m['content'] | trim + '<end_of_turn>\\n' }}"
       "{% endfor %}",
       "gemma"},
  };
  for (const auto& [src, want] : cases) {
    auto t = ChatTemplate::detect(src);
    ASSERT_TRUE(t.ok()) << want << ": " << t.status().to_string();
    EXPECT_EQ(t->name(), want);
    EXPECT_EQ(t->default_system(), "");
  }
}

// A template of no native family (or with several families' markers) renders from its
// source with the Jinja engine; one that does not parse is refused naming the key.
TEST(ChatTemplate, OtherTemplatesRenderFromTheirJinjaSource) {
  const std::vector<ChatMessage> conv = {{"user", "Hi"}, {"assistant", "Hello"}, {"user", "Bye"}};
  struct Case {
    std::string src;
    std::string want;  // rendered with bos "<s>", eos "</s>", add_generation_prompt
  };
  const std::vector<Case> cases = {
      {"{% for m in messages %}{{ m['role'] | upper }}: {{ m['content'] }}\n{% endfor %}"
       "{% if add_generation_prompt %}ASSISTANT:{% endif %}",
       "USER: Hi\nASSISTANT: Hello\nUSER: Bye\nASSISTANT:"},
      // Mistral-style: BOS written by the template, EOS after each reply.
      {"{{ bos_token }}{% for m in messages %}{% if m['role'] == 'user' %}[INST] {{ m['content'] }} [/INST]"
       "{% else %}{{ m['content'] }}{{ eos_token }}{% endif %}{% endfor %}",
       "<s>[INST] Hi [/INST]Hello</s>[INST] Bye [/INST]"},
      {"<|im_start|>{% for m in messages %}<start_of_turn>{{ m.content }}{% endfor %}",
       "<|im_start|><start_of_turn>Hi<start_of_turn>Hello<start_of_turn>Bye"},
  };
  for (const Case& c : cases) {
    auto t = ChatTemplate::detect(c.src);
    ASSERT_TRUE(t.ok()) << c.src << ": " << t.status().to_string();
    EXPECT_EQ(t->name(), "jinja");
    t->set_special_tokens("<s>", "</s>", false);
    auto r = t->render(conv, true);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_EQ(*r, c.want);
    EXPECT_EQ(t->stop_strings(), std::vector<std::string>{"</s>"});
    // When the tokenizer adds the first BOS, a leading BOS text is dropped (one BOS only).
    t->set_special_tokens("<s>", "</s>", true);
    const std::string want = c.want.starts_with("<s>") ? c.want.substr(3) : c.want;
    EXPECT_EQ(*t->render(conv, true), want);
  }
  // A template that raises gives its message; one that does not parse is refused.
  auto raises = ChatTemplate::detect("{% if messages[0]['role'] == 'system' %}{{ raise_exception('no system') }}{% endif %}");
  ASSERT_TRUE(raises.ok());
  auto err = raises->render(std::vector<ChatMessage>{{"system", "x"}}, true);
  ASSERT_FALSE(err.ok());
  EXPECT_NE(err.status().message().find("no system"), std::string::npos) << err.status().message();
  auto bad = ChatTemplate::detect("{% for m in messages %}USER{% endfor");
  ASSERT_FALSE(bad.ok());
  const std::string msg = bad.status().to_string();
  EXPECT_NE(msg.find("tokenizer.chat_template"), std::string::npos) << msg;
  EXPECT_NE(msg.find("does not parse as Jinja"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--chat-template"), std::string::npos) << msg;
}

// A template of a recognized family renders from its own source too (the family gives the
// stop markers); where the source raises for a conversation (Gemma 2's refuses a system
// turn), the family's native format stands in.
TEST(ChatTemplate, RecognizedFamiliesRenderTheirSourceAndFallBackWhereItRaises) {
  TESSERA_REQUIRE_FIXTURE(path, "templates/chat/google-gemma-2-2b-it.jinja");
  const auto bytes = testing::read_file(path);
  const std::string src(bytes.begin(), bytes.end());
  auto t = ChatTemplate::detect(src);
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(t->name(), "gemma");
  EXPECT_EQ(t->stop_strings(), std::vector<std::string>{"<end_of_turn>"});
  t->set_special_tokens("<bos>", "<eos>", true);
  const std::vector<ChatMessage> conv = {{"user", "Hi"}, {"assistant", "Hello"}, {"user", "Bye"}};
  // The source (as jinja2 renders it: roles, "model", trailing newlines), the leading
  // <bos> dropped since the tokenizer adds it.
  EXPECT_EQ(*t->render(conv, true),
            "<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\nHello<end_of_turn>\n"
            "<start_of_turn>user\nBye<end_of_turn>\n<start_of_turn>model\n");
  t->set_special_tokens("<bos>", "<eos>", false);
  EXPECT_TRUE(t->render(conv, true)->starts_with("<bos><start_of_turn>user"));
  // With a system turn the source raises "System role not supported": the native format.
  auto with_system = *t->render(kConversation, true);
  EXPECT_EQ(with_system, named("gemma").apply(kConversation, true));
}

TEST(ChatTemplate, ChatMLDefaultSystemFromTemplate) {
  // A template that writes a system turn of its own when the conversation has none.
  const std::string src =
      "{% for m in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
      "{{ '<|im_start|>system\\nBe kind.<|im_end|>\\n' }}{% endif %}"
      "{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n' }}{% endfor %}";
  auto t = ChatTemplate::detect(src);
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(t->default_system(), "Be kind.");
  std::vector<ChatMessage> user_only = {{"user", "Hi"}};
  EXPECT_EQ(t->apply(user_only, true),
            "<|im_start|>system\nBe kind.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  // A conversation with its own system message keeps only that one.
  EXPECT_EQ(t->apply(std::span(kConversation.data(), 2), false),
            "<|im_start|>system\nYou are a terse assistant.<|im_end|>\n<|im_start|>user\nHi there!<|im_end|>\n");
}

// How many times `id` occurs in `ids`.
size_t count_of(const std::vector<int32_t>& ids, int32_t id) { return std::count(ids.begin(), ids.end(), id); }

TEST(ChatTemplate, Phi3VocabularyGetsOneBos) {
  TESSERA_REQUIRE_FIXTURE(path, "models/gguf/vocab/ggml-vocab-phi-3.gguf");
  auto f = gguf::File::open(path);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  auto tok = gguf::Tokenizer::from_gguf(*f);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  ChatTemplate t = named("phi3");
  const std::vector<int32_t> ids = tok->encode(t.apply(kConversation, true), tok->add_bos(), true);
  ASSERT_TRUE(tok->add_bos());
  EXPECT_EQ(ids.front(), tok->bos());
  EXPECT_EQ(count_of(ids, tok->bos()), 1u);
  const int32_t end = tok->find("<|end|>"), assistant = tok->find("<|assistant|>");
  ASSERT_GE(end, 0);
  ASSERT_GE(assistant, 0);
  EXPECT_EQ(ids[1], tok->find("<|system|>"));
  EXPECT_EQ(count_of(ids, end), 4u);
  EXPECT_EQ(count_of(ids, assistant), 2u);
}

}  // namespace
}  // namespace tessera::llm
