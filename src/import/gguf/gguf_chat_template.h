// The chat template of a GGUF model: the file's tokenizer.chat_template (Jinja source) read
// from its metadata and recognized by llm::ChatTemplate (src/runtime/llm/chat_template.h),
// which knows only strings.
#pragma once

#include <string_view>

#include "import/gguf/gguf_file.h"
#include "runtime/llm/chat_template.h"

namespace tessera::gguf {

// The template for a model: `override_name` if not empty (ChatTemplate::by_name), else
// ChatTemplate::detect() on the file's tokenizer.chat_template; when the file has none, or
// the key is not a string, an error naming the file and the key and listing the
// --chat-template names.
Result<llm::ChatTemplate> chat_template_for(const File& metadata, std::string_view override_name);

}  // namespace tessera::gguf
