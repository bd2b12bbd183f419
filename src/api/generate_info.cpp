// LanguageModel's description of its file, its chat template and compare_greedy
// (include/tessera/generate.h).
#include <filesystem>
#include <fstream>
#include <sstream>

#include "api/generate_impl.h"
#include "import/gguf/gguf_chat_template.h"

namespace tessera {

Status resolve_chat_template(LanguageModelShared& s) {
  const std::string& name = s.opts.chat_template;
  Result<llm::ChatTemplate> t = error(StatusCode::internal, "no chat template");
  std::error_code ec;
  if (!name.empty() && !llm::ChatTemplate::by_name(name).ok() && std::filesystem::is_regular_file(name, ec)) {
    // A Jinja template file: its family, recognized as the file's own template would be.
    std::ifstream f(name, std::ios::binary);
    std::stringstream src;
    src << f.rdbuf();
    if (!f) return error(StatusCode::not_found, "cannot read the chat template file '", name, "'");
    t = llm::ChatTemplate::detect(src.str());
    if (!t.ok()) return t.status().with_context("chat template file '" + name + "'");
  } else {
    // A family name, else the file's tokenizer.chat_template (the one call of chat_template_for).
    t = gguf::chat_template_for(s.model->file(), name);
    if (!t.ok() && name.empty() && t.status().code() == StatusCode::not_found) {
      // No tokenizer.chat_template in the file: ChatML, as llama.cpp falls back to.
      t = llm::ChatTemplate::by_name("chatml");
      s.chat_info.warning = s.model->file().what() + " has no " + std::string(llm::kChatTemplateKey) +
                            ": using ChatML (as llama.cpp does); --chat-template NAME or FILE.jinja chooses another";
    }
    if (!t.ok()) {
      if (!name.empty()) return t.status();  // a bad name fails load
      s.chat_error = t.status();             // the file has none: only render_chat fails
      return Status::Ok();
    }
  }
  s.chat = std::move(t).value();
  {
    // The jinja family renders bos_token / eos_token: the vocabulary's texts.
    const gguf::Tokenizer& tok = s.model->tokenizer();
    auto text = [&](int32_t id) { return id >= 0 && id < tok.vocab_size() ? tok.token_text(id) : std::string(); };
    s.chat->set_special_tokens(text(tok.bos()), text(tok.eos()), tok.add_bos());
  }
  s.chat_info.name = s.chat->name();
  s.chat_info.from_file = name.empty() && s.chat_info.warning.empty();
  s.chat_info.stop_strings = s.chat->stop_strings();
  for (const auto& stop : s.chat_info.stop_strings)
    if (int32_t id = s.model->tokenizer().find(stop); id >= 0) s.chat_info.stop_tokens.push_back(id);
  return Status::Ok();
}

void describe(LanguageModelShared& s) {
  const gguf::File& f = s.model->file();
  const gguf::LlamaParams& p = s.model->params();
  const gguf::Tokenizer& tok = s.model->tokenizer();
  LanguageModelInfo& i = s.info;
  i.file = f.what();
  if (const gguf::Value* v = f.find("general.name"); v && v->type == gguf::ValueType::string) i.name = v->s;
  if (const gguf::Value* v = f.find("general.file_type"); v && v->as_int()) i.file_type = *v->as_int();
  i.architecture = p.arch;
  i.layers = p.layers;
  i.dim = p.dim;
  i.heads = p.heads;
  i.kv_heads = p.kv_heads;
  i.head_dim = p.head_dim;
  i.ffn = p.ffn;
  i.vocab = p.vocab;
  i.trained_context = p.context;
  i.rope_base = p.rope_base;
  i.tied_output = p.tied_output;
  i.features = gguf::describe_features(p);
  i.byte_level_bpe = tok.byte_level();
  i.bos = tok.bos();
  i.eos = tok.eos();
  i.add_bos = tok.add_bos();
  for (const auto& t : f.tensors()) i.tensors.push_back({t.name, t.dtype, t.shape, t.bytes});
}

Result<std::string> LanguageModel::render_chat(std::span<const ChatMessage> messages, bool add_assistant) const {
  const LanguageModelShared& s = *impl_->shared;
  if (!s.chat) return s.chat_error;
  std::vector<llm::ChatMessage> m;
  m.reserve(messages.size());
  for (const auto& msg : messages) m.push_back({msg.role, msg.content});
  return s.chat->render(m, add_assistant);
}

Result<ChatTemplateInfo> LanguageModel::chat_template() const {
  const LanguageModelShared& s = *impl_->shared;
  if (!s.chat) return s.chat_error;
  return s.chat_info;
}

Result<Agreement> compare_greedy(LanguageModel& ref, LanguageModel& test, const std::vector<int32_t>& prompt,
                                 int64_t positions) {
  auto a = llm::compare_greedy(*ref.impl_->gen, *test.impl_->gen, prompt, positions);
  ref.reset();
  test.reset();
  if (!a.ok()) return a.status();
  Agreement out;
  out.positions = a->positions;
  out.top1_agree = a->top1_agree;
  out.mean_kl = a->mean_kl;
  out.max_kl = a->max_kl;
  out.tokens = std::move(a->tokens);
  return out;
}

}  // namespace tessera
