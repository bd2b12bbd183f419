// OpenAI-compatible completions: request parsing and validation, response and stream
// chunk JSON, server-sent event framing, and the text stream that applies stop strings.
//
// Field names and meanings follow the OpenAI API as llama.cpp's server and vLLM serve it:
// POST /v1/completions {model, prompt, max_tokens, temperature, top_p, top_k, seed, stop,
// stream, stream_options.include_usage}, and /v1/chat/completions with `messages`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/llm/stop_scanner.h"
#include "tessera/generate.h"

namespace tessera::serve {

struct Message {
  std::string role;     // "system", "user", "assistant"
  std::string content;
};

struct CompletionRequest {
  std::string model;
  bool chat = false;
  std::string prompt;             // completions
  std::vector<Message> messages;  // chat completions
  // Tokens to generate at most; absent: 16 for completions (the OpenAI default), until the
  // end of sequence or a full context for chat.
  std::optional<int64_t> max_tokens;
  // The sampling fields (temperature 1, top_p 1, top_k 0 (all) unless given); the server
  // sets max_tokens and the stop fields from the rest of the request.
  GenerateOptions sampling;
  bool seeded = false;            // "seed" given; otherwise the server draws one
  std::vector<std::string> stop;  // up to 4 non-empty strings
  bool stream = false;
  bool include_usage = false;     // stream_options.include_usage
};

// Parses and validates a request body (already parsed JSON). Throws ApiError 400 naming
// the field for a missing or ill-typed field or a value out of range.
CompletionRequest parse_completion_request(const nlohmann::json& j, bool chat);

// The generated text of a stream of token pieces, cut at the first stop string: the
// runtime's llm::StopScanner (text that might still begin a stop string is held back until
// the next piece decides), and an incomplete UTF-8 sequence at the end held back too, so
// that every returned chunk is whole characters (JSON strings must be valid UTF-8).
class TextStream {
 public:
  explicit TextStream(std::vector<std::string> stop) : scanner_(std::move(stop)) {}
  // Adds one token's text; returns the text now final (possibly empty). Once a stop string
  // has matched, stopped() is true, the text before it has been returned and the
  // rest is dropped.
  std::string push(const std::string& piece);
  // The end of generation: whatever was held back (nothing after a stop).
  std::string finish();
  bool stopped() const { return scanner_.stopped(); }
  // Everything returned so far.
  const std::string& text() const { return text_; }

 private:
  llm::StopScanner scanner_;
  std::string partial_;  // the start of a UTF-8 character whose other bytes are still to come
  std::string text_;
};

// Bytes at the end of `s` that begin a UTF-8 sequence not yet complete (0 to 3).
size_t incomplete_utf8_tail(const std::string& s);

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
};
nlohmann::json usage_json(const Usage& u);

// A whole (non-streamed) response: object "text_completion" or "chat.completion".
nlohmann::json completion_response(const CompletionRequest& req, const std::string& id, int64_t created,
                                   const std::string& text, const std::string& finish_reason, const Usage& usage);
// One streamed chunk: `text` (may be empty), `finish_reason` ("" while going on). For chat
// the first chunk carries the assistant role in its delta.
nlohmann::json completion_chunk(const CompletionRequest& req, const std::string& id, int64_t created,
                                const std::string& text, const std::string& finish_reason, bool first);
// The last chunk of a stream with stream_options.include_usage: no choices, usage counts.
nlohmann::json usage_chunk(const CompletionRequest& req, const std::string& id, int64_t created, const Usage& u);

// Open Inference Protocol requests to a GGUF model: one BYTES input "text_input" of shape
// [1] holding the prompt; sampling fields (max_tokens, temperature, top_p, top_k, seed,
// stop) in the request's "parameters". The answer is one BYTES output "text_output" [1].
constexpr const char* kV2TextInput = "text_input";
constexpr const char* kV2TextOutput = "text_output";
CompletionRequest parse_v2_text_request(const nlohmann::json& j, const std::string& model, std::string& id);
nlohmann::json v2_text_response(const std::string& model, const std::string& id, const std::string& text);

// Server-sent events: "data: <json>\n\n", and the terminator "data: [DONE]\n\n".
std::string sse_event(const nlohmann::json& j);
std::string sse_done();

// JSON text of `j` with invalid UTF-8 replaced by U+FFFD (a token piece may split a
// character; the text stream holds such tails back but a model can still emit bad bytes).
std::string dump_json(const nlohmann::json& j);

}  // namespace tessera::serve
