// OpenAI-compatible requests: validation, the text stream's stop strings and UTF-8 hold-back
// (against the whole text cut directly), and the SSE framing.
#include "serve/openai.h"

#include <gtest/gtest.h>

#include <random>

#include "serve/api_error.h"

namespace tessera::serve {
namespace {

using nlohmann::json;

template <typename F>
int status_of(F&& f) {
  try {
    f();
  } catch (const ApiError& e) {
    return e.status();
  }
  return 0;
}

// Pieces of `s` cut at random places (like token pieces, which may split a UTF-8 character).
std::vector<std::string> random_pieces(const std::string& s, std::mt19937& rng) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < s.size()) {
    const size_t n = 1 + rng() % 5;
    out.push_back(s.substr(at, n));
    at += n;
  }
  return out;
}

bool valid_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (len == 0 || i + len > s.size()) return false;
    for (size_t k = 1; k < len; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += len;
  }
  return true;
}

TEST(TextStream, StopsAtTheFirstStopStringHoweverThePiecesFall) {
  std::mt19937 rng(42);
  const std::vector<std::string> words = {"the", " cat", " sat", "\n", "END", "EN", "D", " ü", "ber", " 東京", "é"};
  for (int trial = 0; trial < 300; ++trial) {
    std::string text;
    const int n = 1 + static_cast<int>(rng() % 30);
    for (int i = 0; i < n; ++i) text += words[rng() % words.size()];
    const std::vector<std::string> stops = {"END", "\n\n", "sat the"};
    // Reference: the text up to the earliest occurrence of any stop string.
    size_t cut = std::string::npos;
    for (const auto& s : stops) cut = std::min(cut, text.find(s));
    const std::string want = text.substr(0, cut);
    TextStream ts(stops);
    std::string got;
    for (const auto& p : random_pieces(text, rng)) {
      const std::string out = ts.push(p);
      EXPECT_TRUE(valid_utf8(out)) << "chunk '" << out << "' of '" << text << "'";
      got += out;
      if (ts.stopped()) break;
    }
    got += ts.finish();
    EXPECT_EQ(got, want) << "text '" << text << "'";
    EXPECT_EQ(ts.text(), want);
    EXPECT_EQ(ts.stopped(), cut != std::string::npos);
  }
}

TEST(TextStream, HoldsBackOnlyWhatMightStartAStop) {
  TextStream ts({"<|end|>"});
  EXPECT_EQ(ts.push("Hello <|"), "Hello ");
  EXPECT_EQ(ts.push("en"), "");
  EXPECT_EQ(ts.push("x"), "<|enx");  // not a stop after all: released at once
  EXPECT_EQ(ts.push(" <|end|> more"), " ");
  EXPECT_TRUE(ts.stopped());
  EXPECT_EQ(ts.finish(), "");
  EXPECT_EQ(ts.text(), "Hello <|enx ");
}

TEST(TextStream, IncompleteUtf8IsHeldUntilComplete) {
  const std::string tokyo = "\xE6\x9D\xB1";  // U+6771
  EXPECT_EQ(incomplete_utf8_tail("ab" + tokyo.substr(0, 1)), 1u);
  EXPECT_EQ(incomplete_utf8_tail("ab" + tokyo.substr(0, 2)), 2u);
  EXPECT_EQ(incomplete_utf8_tail("ab" + tokyo), 0u);
  TextStream ts({});
  EXPECT_EQ(ts.push("a" + tokyo.substr(0, 2)), "a");
  EXPECT_EQ(ts.push(tokyo.substr(2)), tokyo);
}

TEST(CompletionRequest, DefaultsAndFields) {
  const json j = {{"model", "m"},   {"prompt", "hi"}, {"max_tokens", 7}, {"temperature", 0},
                  {"top_k", 5},     {"top_p", 0.5},   {"seed", 99},      {"stop", {"a", "b"}},
                  {"stream", true}, {"stream_options", {{"include_usage", true}}}};
  const CompletionRequest r = parse_completion_request(j, false);
  EXPECT_EQ(r.model, "m");
  EXPECT_EQ(r.prompt, "hi");
  EXPECT_EQ(*r.max_tokens, 7);
  EXPECT_EQ(r.sampling.temperature, 0.0f);
  EXPECT_EQ(r.sampling.top_k, 5);
  EXPECT_FLOAT_EQ(r.sampling.top_p, 0.5f);
  EXPECT_EQ(r.sampling.seed, 99u);
  EXPECT_TRUE(r.seeded);
  EXPECT_EQ(r.stop, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  const CompletionRequest d = parse_completion_request({{"model", "m"}, {"prompt", {"x"}}}, false);
  EXPECT_EQ(*d.max_tokens, 16);  // the OpenAI default
  EXPECT_EQ(d.sampling.temperature, 1.0f);
  EXPECT_FALSE(d.seeded);
  const CompletionRequest c = parse_completion_request(
      {{"model", "m"}, {"messages", {{{"role", "user"}, {"content", {{{"type", "text"}, {"text", "hi"}}}}}}}}, true);
  EXPECT_FALSE(c.max_tokens);  // chat: until the end of sequence or the context
  ASSERT_EQ(c.messages.size(), 1u);
  EXPECT_EQ(c.messages[0].content, "hi");
}

TEST(CompletionRequest, BadFieldsAre400) {
  const json base = {{"model", "m"}, {"prompt", "hi"}};
  auto with = [&](const char* key, json v) {
    json j = base;
    j[key] = std::move(v);
    return status_of([&] { parse_completion_request(j, false); });
  };
  EXPECT_EQ(with("max_tokens", 3), 0);
  EXPECT_EQ(with("max_tokens", -1), 400);
  EXPECT_EQ(with("max_tokens", "3"), 400);
  EXPECT_EQ(with("max_tokens", 2.5), 400);
  EXPECT_EQ(with("temperature", -0.1), 400);
  EXPECT_EQ(with("temperature", 2.5), 400);
  EXPECT_EQ(with("top_p", 0), 400);
  EXPECT_EQ(with("top_p", 1.5), 400);
  EXPECT_EQ(with("top_k", -1), 400);
  EXPECT_EQ(with("seed", "x"), 400);
  EXPECT_EQ(with("stop", {"a", "b", "c", "d", "e"}), 400);
  EXPECT_EQ(with("stop", ""), 400);
  EXPECT_EQ(with("stop", 3), 400);
  EXPECT_EQ(with("n", 2), 400);
  EXPECT_EQ(with("stream", "yes"), 400);
  EXPECT_EQ(with("prompt", {"a", "b"}), 400);
  EXPECT_EQ(with("prompt", 5), 400);
  EXPECT_EQ(with("model", 5), 400);
  EXPECT_EQ(status_of([&] { parse_completion_request({{"prompt", "x"}}, false); }), 400);
  EXPECT_EQ(status_of([&] { parse_completion_request({{"model", "m"}}, true); }), 400);
  EXPECT_EQ(status_of([&] {
              parse_completion_request({{"model", "m"}, {"messages", {{{"role", "robot"}, {"content", "x"}}}}}, true);
            }),
            400);
  EXPECT_EQ(status_of([&] { parse_json_body("{\"model\": ", "request"); }), 400);
}

TEST(CompletionRequest, V2TextRequestCarriesParameters) {
  std::string id;
  const json j = {{"id", "q"},
                  {"inputs", {{{"name", "text_input"}, {"datatype", "BYTES"}, {"shape", {1}}, {"data", {"Once"}}}}},
                  {"parameters", {{"max_tokens", 5}, {"temperature", 0}}}};
  const CompletionRequest r = parse_v2_text_request(j, "llm", id);
  EXPECT_EQ(id, "q");
  EXPECT_EQ(r.prompt, "Once");
  EXPECT_EQ(*r.max_tokens, 5);
  EXPECT_EQ(r.sampling.temperature, 0.0f);
  json bad = j;
  bad["inputs"][0]["datatype"] = "UINT8";
  EXPECT_EQ(status_of([&] { parse_v2_text_request(bad, "llm", id); }), 422);
  bad = j;
  bad["inputs"][0]["shape"] = {2};
  EXPECT_EQ(status_of([&] { parse_v2_text_request(bad, "llm", id); }), 422);
  const json out = v2_text_response("llm", "q", "text");
  EXPECT_EQ(out["outputs"][0]["data"][0], "text");
}

TEST(Sse, ChunksAndDoneFraming) {
  CompletionRequest chat;
  chat.chat = true;
  chat.model = "m";
  const std::string e = sse_event(completion_chunk(chat, "id1", 5, "Hi", "", true));
  ASSERT_EQ(e.substr(0, 6), "data: ");
  ASSERT_EQ(e.substr(e.size() - 2), "\n\n");
  const json j = json::parse(e.substr(6));
  EXPECT_EQ(j["object"], "chat.completion.chunk");
  EXPECT_EQ(j["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(j["choices"][0]["delta"]["content"], "Hi");
  EXPECT_TRUE(j["choices"][0]["finish_reason"].is_null());
  EXPECT_EQ(sse_done(), "data: [DONE]\n\n");
  // Invalid UTF-8 from a model becomes U+FFFD instead of an exception.
  CompletionRequest plain;
  plain.model = "m";
  const json r = json::parse(dump_json(completion_response(plain, "c", 1, "a\xff", "length", {3, 1})));
  EXPECT_EQ(r["choices"][0]["text"], "a\xEF\xBF\xBD");
  EXPECT_EQ(r["usage"]["total_tokens"], 4);
}

}  // namespace
}  // namespace tessera::serve
