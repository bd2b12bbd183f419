#include "runtime/llm/chat_template.h"

#include <algorithm>
#include <array>

#include "runtime/llm/jinja.h"

namespace tessera::llm {

namespace {

struct FamilyName {
  std::string_view name;
  ChatTemplate::Family family;
};
// The names by_name accepts; the first of each family is its canonical name.
constexpr std::array<FamilyName, 6> kNames = {{
    {"llama3", ChatTemplate::Family::llama3},
    {"chatml", ChatTemplate::Family::chatml},
    {"qwen", ChatTemplate::Family::chatml},
    {"llama2", ChatTemplate::Family::llama2},
    {"phi3", ChatTemplate::Family::phi3},
    {"gemma", ChatTemplate::Family::gemma},
}};

std::string_view canonical_name(ChatTemplate::Family f) {
  for (const auto& n : kNames)
    if (n.family == f) return n.name;
  return "?";
}

bool has(std::string_view text, std::string_view what) { return text.find(what) != std::string_view::npos; }

// Content with leading and trailing whitespace removed (the families whose published
// templates apply Jinja's trim / Python's strip()).
std::string trim(std::string_view s) {
  constexpr std::string_view kSpace = " \t\n\r\f\v";
  const size_t b = s.find_first_not_of(kSpace);
  if (b == std::string_view::npos) return {};
  const size_t e = s.find_last_not_of(kSpace);
  return std::string(s.substr(b, e - b + 1));
}

// The default system text of a ChatML template such as Qwen2's:
//   {% if loop.first and messages[0]['role'] != 'system' %}
//     {{ '<|im_start|>system\nYou are a helpful assistant<|im_end|>\n' }}{% endif %}
// Only a literal text (no quotes or Jinja expressions between the markers) is taken; the
// newline after "system" may be written as a newline or as the escape "\n".
std::string chatml_default_system(std::string_view src) {
  if (!has(src, "!= 'system'") && !has(src, "!= \"system\"")) return {};
  constexpr std::string_view kOpen = "<|im_start|>system";
  size_t at = src.find(kOpen);
  if (at == std::string_view::npos) return {};
  at += kOpen.size();
  if (src.substr(at, 1) == "\n")
    at += 1;
  else if (src.substr(at, 2) == "\\n")
    at += 2;
  else
    return {};
  const size_t end = src.find("<|im_end|>", at);
  if (end == std::string_view::npos) return {};
  const std::string_view text = src.substr(at, end - at);
  if (text.find_first_of("'\"{}%") != std::string_view::npos) return {};
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size() && text[i + 1] == 'n') {
      out += '\n';
      ++i;
    } else {
      out += text[i];
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> ChatTemplate::names() {
  std::vector<std::string> v;
  for (const auto& n : kNames)
    if (canonical_name(n.family) == n.name) v.emplace_back(n.name);
  return v;
}

std::string ChatTemplate::name_list() {
  std::string s;
  for (const auto& n : names()) s += (s.empty() ? "" : ", ") + n;
  return s + " (qwen = chatml)";
}

Result<ChatTemplate> ChatTemplate::by_name(std::string_view name) {
  for (const auto& n : kNames)
    if (n.name == name) return ChatTemplate(n.family, std::string(canonical_name(n.family)));
  return error(StatusCode::invalid_argument, "unknown chat template '", name, "'; known: ", name_list());
}

Result<ChatTemplate> ChatTemplate::detect(std::string_view src) {
  // Most specific markers first: Llama 3 and Gemma templates never hold "<|im_start|>", but
  // a template may mention several families' markers only if it is a multi-format one, which
  // is refused below rather than guessed.
  std::vector<Family> found;
  if (has(src, "<|start_header_id|>") && has(src, "<|eot_id|>")) found.push_back(Family::llama3);
  if (has(src, "<|im_start|>")) found.push_back(Family::chatml);
  if (has(src, "<start_of_turn>")) found.push_back(Family::gemma);
  if (has(src, "<|assistant|>") && has(src, "<|end|>")) found.push_back(Family::phi3);
  if (has(src, "[INST]") && has(src, "<<SYS>>")) found.push_back(Family::llama2);
  if (found.size() == 1) {
    ChatTemplate t(found[0], std::string(canonical_name(found[0])));
    if (t.family_ == Family::chatml) t.default_system_ = chatml_default_system(src);
    // The file's own source formats the conversation (as transformers renders it); the
    // family gives the stop markers, and its native format stands in where the source does
    // not parse or raises for a conversation (render()).
    if (jinja::check_syntax(src).ok()) t.source_ = std::make_shared<const std::string>(src);
    return t;
  }
  // No family's markers, or several families': rendered from the source.
  auto t = from_jinja(src);
  if (!t.ok())
    return error(StatusCode::invalid_argument, kChatTemplateKey, ": ",
                 found.empty() ? "no chat template family recognized" : "the markers of several families", ", and the "
                 "source does not parse as Jinja (", t.status().message(), "); pass --chat-template with one of ",
                 name_list(), " or a Jinja file");
  return t;
}

Result<ChatTemplate> ChatTemplate::from_jinja(std::string_view source) {
  TS_RETURN_IF_ERROR(jinja::check_syntax(source));
  ChatTemplate t(Family::jinja, "jinja");
  t.source_ = std::make_shared<const std::string>(source);
  return t;
}

void ChatTemplate::set_special_tokens(std::string bos, std::string eos, bool strip_leading_bos) {
  bos_ = std::move(bos);
  eos_ = std::move(eos);
  strip_leading_bos_ = strip_leading_bos;
}

Result<std::string> ChatTemplate::render(std::span<const ChatMessage> messages, bool add_assistant) const {
  if (!source_) return apply(messages, add_assistant);
  jinja::List list;
  list.reserve(messages.size());
  for (const auto& m : messages) list.push_back(jinja::Value(jinja::Dict{{"role", m.role}, {"content", m.content}}));
  jinja::Value vars{jinja::Dict{}};
  vars.set("messages", jinja::Value(std::move(list)));
  vars.set("add_generation_prompt", jinja::Value(add_assistant));
  vars.set("bos_token", jinja::Value(bos_));
  vars.set("eos_token", jinja::Value(eos_));
  auto rendered = jinja::render(*source_, vars);
  if (!rendered.ok() && family_ != Family::jinja) return apply(messages, add_assistant);
  TS_ASSIGN_OR_RETURN(std::string out, std::move(rendered));
  if (strip_leading_bos_ && !bos_.empty() && out.starts_with(bos_)) out.erase(0, bos_.size());
  return out;
}

std::string ChatTemplate::apply(std::span<const ChatMessage> messages, bool add_assistant) const {
  std::string out;
  switch (family_) {
    case Family::llama3:
      for (const auto& m : messages)
        out += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n" + trim(m.content) + "<|eot_id|>";
      if (add_assistant) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
      break;
    case Family::chatml:
      if (!default_system_.empty() && (messages.empty() || messages[0].role != "system"))
        out += "<|im_start|>system\n" + default_system_ + "<|im_end|>\n";
      for (const auto& m : messages) out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
      if (add_assistant) out += "<|im_start|>assistant\n";
      break;
    case Family::llama2: {
      // The system text goes inside the first [INST]; a later system message starts the
      // next user turn the same way. Turns after the first start with BOS.
      std::string system;
      bool first = true;
      for (const auto& m : messages) {
        if (m.role == "system") {
          system = trim(m.content);
        } else if (m.role == "assistant") {
          out += " " + trim(m.content) + " </s>";
        } else {
          out += first ? "[INST] " : "<s>[INST] ";
          if (!system.empty()) out += "<<SYS>>\n" + system + "\n<</SYS>>\n\n";
          system.clear();
          out += trim(m.content) + " [/INST]";
          first = false;
        }
      }
      break;  // the user turn's [/INST] already opens the assistant's turn
    }
    case Family::phi3:
      for (const auto& m : messages) out += "<|" + m.role + "|>\n" + m.content + "<|end|>\n";
      if (add_assistant) out += "<|assistant|>\n";
      break;
    case Family::gemma: {
      std::string system;
      for (const auto& m : messages) {
        if (m.role == "system") {
          system += trim(m.content);
          continue;
        }
        const bool model = m.role == "assistant";
        out += "<start_of_turn>" + std::string(model ? "model" : m.role) + "\n";
        if (!model && !system.empty()) {
          out += system + "\n\n";
          system.clear();
        }
        out += trim(m.content) + "<end_of_turn>\n";
      }
      if (add_assistant) out += "<start_of_turn>model\n";
      break;
    }
    case Family::jinja:
      TS_CHECK(false, "ChatTemplate::apply of the jinja family (render() renders it)");
      break;
  }
  return out;
}

std::vector<std::string> ChatTemplate::stop_strings() const {
  switch (family_) {
    case Family::llama3: return {"<|eot_id|>"};
    case Family::chatml: return {"<|im_end|>"};
    case Family::llama2: return {"</s>"};
    case Family::phi3: return {"<|end|>"};
    case Family::gemma: return {"<end_of_turn>"};
    case Family::jinja: return eos_.empty() ? std::vector<std::string>{} : std::vector<std::string>{eos_};
  }
  return {};
}

}  // namespace tessera::llm
