// Chat templates: a conversation as the model was trained to see it.
//
// GGUF files carry their template as Jinja source (tokenizer.chat_template). Tessera runs
// no Jinja engine: it recognizes the family of a template from the markers in its source
// and writes that family's format natively. The families:
//
//   llama3  <|start_header_id|>ROLE<|end_header_id|>\n\nCONTENT<|eot_id|>   (content trimmed)
//           assistant opening: <|start_header_id|>assistant<|end_header_id|>\n\n
//           marker: "<|start_header_id|>"; stop: "<|eot_id|>"
//   chatml  <|im_start|>ROLE\nCONTENT<|im_end|>\n   (alias "qwen")
//           assistant opening: <|im_start|>assistant\n
//           marker: "<|im_start|>"; stop: "<|im_end|>"
//           a template that writes a system turn when the conversation has none (Qwen2's
//           "You are a helpful assistant") keeps that default system text
//   llama2  [INST] <<SYS>>\nSYSTEM\n<</SYS>>\n\nUSER [/INST] ASSISTANT </s><s>[INST] USER [/INST]
//           (content trimmed; the user turn's "[/INST]" opens the assistant's turn)
//           markers: "[INST]" and "<<SYS>>"; stop: "</s>"
//   phi3    <|ROLE|>\nCONTENT<|end|>\n
//           assistant opening: <|assistant|>\n
//           markers: "<|assistant|>" and "<|end|>"; stop: "<|end|>"
//   gemma   <start_of_turn>ROLE\nCONTENT<end_of_turn>\n, "assistant" written as "model"; no
//           system role: the system text goes before the first user message, then "\n\n"
//           (content trimmed); assistant opening: <start_of_turn>model\n
//           marker: "<start_of_turn>"; stop: "<end_of_turn>"
//
// BOS: apply() never writes the sequence's first BOS; the tokenizer adds it when the
// vocabulary asks for it (tokenizer.ggml.add_bos_token), as llama.cpp does, so the
// formatted text is encoded with add_bos = the tokenizer's choice and parse_special = true,
// and no sequence gets two. Only llama2 writes "<s>" itself, before each later [INST].
//
// Incremental use: for a prefix of a conversation that ends with a complete user or
// assistant message, apply(all, x) starts with apply(prefix, false), and with
// apply(prefix, true) when the message after the prefix is the assistant's.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/status.h"

namespace tessera::llm {

// The GGUF metadata key that holds a model's template source (read by
// gguf::chat_template_for, src/import/gguf/gguf_chat_template.h; named in detect()'s errors).
inline constexpr std::string_view kChatTemplateKey = "tokenizer.chat_template";

struct ChatMessage {
  std::string role;  // "system" | "user" | "assistant"
  std::string content;
};

class ChatTemplate {
 public:
  enum class Family { llama3, chatml, llama2, phi3, gemma };

  // A family by name: llama3, chatml (alias qwen), llama2, phi3, gemma. Unknown names are an
  // error listing the names.
  static Result<ChatTemplate> by_name(std::string_view name);
  // The family of a template's Jinja source (tokenizer.chat_template), from its markers;
  // an error naming the key when none is recognized.
  static Result<ChatTemplate> detect(std::string_view jinja_source);
  // The names by_name accepts (without aliases).
  static std::vector<std::string> names();
  // The names for a message: "llama3, chatml, llama2, phi3, gemma (qwen = chatml)".
  static std::string name_list();

  const std::string& name() const { return name_; }
  Family family() const { return family_; }
  // The system text written when a conversation has no system message ("" for none).
  const std::string& default_system() const { return default_system_; }

  // The conversation as the model was trained to see it; with add_assistant, ends with the
  // opening of the assistant's turn. Roles other than system, user and assistant are
  // written as given where the family has a role field (llama3, chatml, phi3).
  std::string apply(std::span<const ChatMessage> messages, bool add_assistant) const;
  // Texts that end the assistant's turn (each a single special token of the family's vocabulary).
  std::vector<std::string> stop_strings() const;

 private:
  ChatTemplate(Family f, std::string name) : family_(f), name_(std::move(name)) {}
  Family family_;
  std::string name_;
  std::string default_system_;
};

}  // namespace tessera::llm
