#include "import/gguf/gguf_chat_template.h"

#include <string>

namespace tessera::gguf {

Result<llm::ChatTemplate> chat_template_for(const File& metadata, std::string_view override_name) {
  using llm::ChatTemplate, llm::kChatTemplateKey;
  if (!override_name.empty()) return ChatTemplate::by_name(override_name);
  const Value* v = metadata.find(std::string(kChatTemplateKey));
  if (!v)
    return error(StatusCode::not_found, metadata.what(), " has no ", kChatTemplateKey,
                 "; pass --chat-template with one of ", ChatTemplate::name_list());
  if (v->type != ValueType::string)
    return error(StatusCode::invalid_argument, metadata.what(), ": ", kChatTemplateKey,
                 " is not a string; pass --chat-template with one of ", ChatTemplate::name_list());
  return ChatTemplate::detect(v->s);
}

}  // namespace tessera::gguf
