// The embedding API for LLMs (include/tessera/generate.h): a GGUF llama model, its
// tokenizer and a Generator behind one object.
#include "tessera/generate.h"

#include "import/gguf/llama_model.h"
#include "runtime/llm/generator.h"
#include "runtime/llm/sampler.h"

namespace tessera {

struct LanguageModel::Impl {
  std::unique_ptr<gguf::LlamaModel> model;
  std::unique_ptr<llm::Generator> gen;
};

LanguageModel::LanguageModel() : impl_(std::make_unique<Impl>()) {}
LanguageModel::~LanguageModel() = default;

Result<std::unique_ptr<LanguageModel>> LanguageModel::load(const std::string& path, const LanguageModelOptions& opts) {
  if (opts.kv_type != DType::f16 && opts.kv_type != DType::f32)
    return error(StatusCode::invalid_argument, "LanguageModelOptions::kv_type must be f16 or f32, got ",
                 dtype_name(opts.kv_type));
  if (opts.batch < 1) return error(StatusCode::invalid_argument, "LanguageModelOptions::batch must be >= 1, got ", opts.batch);
  if (opts.context < 0)
    return error(StatusCode::invalid_argument, "LanguageModelOptions::context must be >= 0, got ", opts.context);
  std::unique_ptr<LanguageModel> lm(new LanguageModel());
  TS_ASSIGN_OR_RETURN(lm->impl_->model, gguf::LlamaModel::open(path));
  if (opts.context > 0) TS_RETURN_IF_ERROR(lm->impl_->model->set_context(opts.context));
  llm::GeneratorOptions go;
  go.session = opts.session;
  go.batch = opts.batch;
  go.offload_layers = opts.offload_layers < 0 ? -1 : std::min<int64_t>(opts.offload_layers, lm->impl_->model->layers());
  go.kv_type = opts.kv_type;
  TS_ASSIGN_OR_RETURN(lm->impl_->gen, llm::Generator::create(*lm->impl_->model, go));
  return lm;
}

Result<GenerateResult> LanguageModel::generate(const std::string& prompt, const GenerateOptions& opts,
                                               const TokenCallback& on_piece) {
  if (opts.max_tokens < 0)
    return error(StatusCode::invalid_argument, "GenerateOptions::max_tokens must be >= 0, got ", opts.max_tokens);
  llm::SamplerOptions so;
  so.temperature = opts.temperature;
  so.top_k = opts.top_k;
  so.top_p = opts.top_p;
  so.repeat_penalty = opts.repeat_penalty;
  so.repeat_last_n = opts.repeat_last_n;
  so.seed = opts.seed;
  TS_RETURN_IF_ERROR(llm::Sampler::validate(so));
  const gguf::Tokenizer& tok = impl_->model->tokenizer();
  std::vector<int32_t> ids = tok.encode(prompt, tok.add_bos());
  if (ids.empty()) ids.push_back(tok.bos());
  if (static_cast<int64_t>(ids.size()) > impl_->gen->context_length())
    return error(StatusCode::out_of_range, "the prompt has ", ids.size(), " tokens but the context holds ",
                 impl_->gen->context_length());
  impl_->gen->reset();
  GenerateResult r;
  // As the CLI prints it: the prompt's text, then each piece; the first piece loses the
  // space the tokenizer prepends when nothing has been shown yet.
  bool shown = !tok.decode(ids).empty();
  llm::Sampler sampler(so);
  TS_ASSIGN_OR_RETURN(llm::GenerateStats st,
                      impl_->gen->generate(ids, opts.max_tokens, sampler, tok.eos(), [&](int32_t id) {
                        std::string piece = tok.piece(id);
                        if (!shown && !piece.empty() && piece[0] == ' ' && tok.add_space_prefix()) piece.erase(0, 1);
                        shown = shown || !piece.empty();
                        r.text += piece;
                        r.tokens.push_back(id);
                        return on_piece ? on_piece(piece) : true;
                      }));
  r.prompt_tokens = st.prompt_tokens;
  r.prompt_seconds = st.prompt_seconds;
  r.generate_seconds = st.generate_seconds;
  r.stopped_at_eos = st.stopped_at_eos;
  r.context_full = st.context_full;
  return r;
}

std::vector<int32_t> LanguageModel::tokenize(const std::string& text, bool add_bos) const {
  return impl_->model->tokenizer().encode(text, add_bos);
}
std::string LanguageModel::detokenize(const std::vector<int32_t>& ids) const {
  return impl_->model->tokenizer().decode(ids);
}
Result<std::vector<float>> LanguageModel::feed(const std::vector<int32_t>& ids) {
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= vocab_size())
      return error(StatusCode::out_of_range, "token ", i, " is ", ids[i], ", outside the vocabulary [0, ", vocab_size(),
                   ")");
  return impl_->gen->feed(ids);
}
void LanguageModel::reset() { impl_->gen->reset(); }
int64_t LanguageModel::context_length() const { return impl_->gen->context_length(); }
int64_t LanguageModel::vocab_size() const { return impl_->model->vocab_size(); }
int64_t LanguageModel::layers() const { return impl_->model->layers(); }
std::string LanguageModel::architecture() const { return impl_->model->params().arch; }
int32_t LanguageModel::eos_token() const { return impl_->model->tokenizer().eos(); }
int32_t LanguageModel::bos_token() const { return impl_->model->tokenizer().bos(); }

}  // namespace tessera
