// Chat templates: a conversation as the model was trained to see it.
//
// GGUF files carry their template as Jinja source (tokenizer.chat_template), and render()
// renders that source (runtime/llm/jinja.h). Tessera also recognizes the family of a
// template from the markers in its source: the family gives the stop markers, and its
// native format (apply()) stands in where the source raises; a template of no family is the
// `jinja` family. A family chosen by name (by_name) has no source and writes its native
// format. The native families:
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

#include <memory>
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
  // The five families Tessera writes natively, and `jinja`: any other template, rendered
  // from its source by the Jinja engine (runtime/llm/jinja.h) as transformers renders it.
  enum class Family { llama3, chatml, llama2, phi3, gemma, jinja };

  // A family by name: llama3, chatml (alias qwen), llama2, phi3, gemma. Unknown names are an
  // error listing the names.
  static Result<ChatTemplate> by_name(std::string_view name);
  // The family of a template's Jinja source (tokenizer.chat_template), from its markers;
  // a source with no family's markers, or with several families', is the `jinja` family
  // (rendered from the source); an error naming the key when it does not parse.
  static Result<ChatTemplate> detect(std::string_view jinja_source);
  // The `jinja` family for `source` (an error with line and column when it does not parse).
  static Result<ChatTemplate> from_jinja(std::string_view source);
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
  // written as given where the family has a role field (llama3, chatml, phi3). The five
  // native families only (the `jinja` family renders with render()).
  std::string apply(std::span<const ChatMessage> messages, bool add_assistant) const;
  // A template with a source (detect, from_jinja) renders it with the variables messages,
  // add_generation_prompt (= add_assistant), bos_token and eos_token (set_special_tokens),
  // and then drops a leading bos_token text when the tokenizer adds the first BOS itself (no
  // sequence gets two). Where the source raises (a role it does not take, say), a recognized
  // family writes its native format and the `jinja` family is an error with the message.
  // Without a source (by_name): apply().
  Result<std::string> render(std::span<const ChatMessage> messages, bool add_assistant) const;
  // The vocabulary's BOS and EOS texts, for the `jinja` family; strip_leading_bos: the
  // tokenizer adds the first BOS (tokenizer.ggml.add_bos_token).
  void set_special_tokens(std::string bos, std::string eos, bool strip_leading_bos);
  // Texts that end the assistant's turn (each a single special token of the family's
  // vocabulary); the `jinja` family: the EOS text.
  std::vector<std::string> stop_strings() const;

 private:
  ChatTemplate(Family f, std::string name) : family_(f), name_(std::move(name)) {}
  Family family_;
  std::string name_;
  std::string default_system_;
  std::shared_ptr<const std::string> source_;  // the jinja family's template
  std::string bos_, eos_;
  bool strip_leading_bos_ = false;
};

}  // namespace tessera::llm
