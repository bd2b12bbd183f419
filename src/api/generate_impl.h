// What a LanguageModel holds (include/tessera/generate.h): the loaded model, shared by
// its forks, and one KV cache with the tokens in it.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "import/gguf/llama_model.h"
#include "runtime/llm/chat_template.h"
#include "runtime/llm/generator.h"
#include "runtime/llm/sampler.h"
#include "tessera/generate.h"

namespace tessera {

// Immutable once load() returns; read by every fork, from any thread.
struct LanguageModelShared {
  std::unique_ptr<gguf::LlamaModel> model;
  LanguageModelOptions opts;          // as loaded (fork checks the shared fields against it)
  LanguageModelInfo info;
  std::optional<llm::ChatTemplate> chat;
  Status chat_error;                  // why there is no template, when chat is empty
  ChatTemplateInfo chat_info;
};

struct LanguageModel::Impl {
  std::shared_ptr<const LanguageModelShared> shared;
  std::unique_ptr<llm::Generator> gen;
  DType kv_type = DType::f16;
  std::vector<int32_t> cached;        // the tokens in the KV cache, in order (gen->position() of them)
  std::optional<llm::Sampler> sampler;  // of the last generate call
  llm::SamplerOptions sampler_opts;
};

// load()'s steps (generate_info.cpp): the chat template of LanguageModelOptions::chat_template
// (an error only for a bad name or file), and info.
Status resolve_chat_template(LanguageModelShared& s);
void describe(LanguageModelShared& s);

}  // namespace tessera
