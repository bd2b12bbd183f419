// The embedding API for LLMs (include/tessera/generate.h): a GGUF llama model, its
// tokenizer and a Generator behind one object; the one place Tessera builds an LLM.
// Model description, chat templates and compare_greedy are in generate_info.cpp.
#include "tessera/generate.h"
#include "tessera/backend/plan.h"

#include <algorithm>
#include <chrono>

#include "api/generate_impl.h"
#include "runtime/llm/decoder.h"
#include "runtime/llm/stop_scanner.h"

namespace tessera {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

llm::SamplerOptions sampler_options(const GenerateOptions& o) {
  llm::SamplerOptions so;
  so.temperature = o.temperature;
  so.top_k = o.top_k;
  so.top_p = o.top_p;
  so.repeat_penalty = o.repeat_penalty;
  so.repeat_last_n = o.repeat_last_n;
  so.seed = o.seed;
  return so;
}

bool same_sampling(const llm::SamplerOptions& a, const llm::SamplerOptions& b) {
  return a.temperature == b.temperature && a.top_k == b.top_k && a.top_p == b.top_p &&
         a.repeat_penalty == b.repeat_penalty && a.repeat_last_n == b.repeat_last_n && a.seed == b.seed;
}

Status check_options(const LanguageModelOptions& o) {
  if (o.kv_type != DType::f16 && o.kv_type != DType::f32 && o.kv_type != DType::q8_0)
    return error(StatusCode::invalid_argument, "LanguageModelOptions::kv_type must be f16, f32 or q8_0, got ",
                 dtype_name(o.kv_type));
  if (o.batch < 1) return error(StatusCode::invalid_argument, "LanguageModelOptions::batch must be >= 1, got ", o.batch);
  if (o.context < 0)
    return error(StatusCode::invalid_argument, "LanguageModelOptions::context must be >= 0, got ", o.context);
  return Status::Ok();
}

size_t common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

}  // namespace

Status GenerateOptions::validate() const {
  if (max_tokens < 0)
    return error(StatusCode::invalid_argument, "GenerateOptions::max_tokens must be >= 0, got ", max_tokens);
  return llm::Sampler::validate(sampler_options(*this));
}

const char* stop_reason_name(StopReason r) {
  switch (r) {
    case StopReason::length: return "length";
    case StopReason::eos: return "eos";
    case StopReason::stop_string: return "stop_string";
    case StopReason::callback: return "callback";
    case StopReason::cancelled: return "cancelled";
    case StopReason::context_full: return "context_full";
  }
  return "?";
}

LanguageModel::LanguageModel() : impl_(std::make_unique<Impl>()) {}
LanguageModel::~LanguageModel() = default;

// Prepares the steps of one KV cache over the shared model.
static Result<std::unique_ptr<llm::Generator>> make_generator(const gguf::LlamaModel& model,
                                                              const LanguageModelOptions& opts) {
  llm::GeneratorOptions go;
  go.session = opts.session;
  go.batch = opts.batch;
  go.offload_layers = opts.offload_layers < 0 ? -1 : std::min<int64_t>(opts.offload_layers, model.layers());
  go.kv_type = opts.kv_type;
  return llm::Generator::create(model, go);
}

Result<std::unique_ptr<LanguageModel>> LanguageModel::load(const std::string& path, const LanguageModelOptions& opts) {
  TS_RETURN_IF_ERROR(check_options(opts));
  auto shared = std::make_shared<LanguageModelShared>();
  shared->opts = opts;
  // Progress (opts.session.progress): reading and checking the file, then the sessions.
  const ProgressPart progress(&opts.session.progress, 0.0, 1.0);
  TS_ASSIGN_OR_RETURN(shared->model, gguf::LlamaModel::open(path, opts.mmap ? gguf::File::Load::map : gguf::File::Load::read,
                                                            progress.sub(0.0, 0.7)));
  if (opts.context > 0) TS_RETURN_IF_ERROR(shared->model->set_context(opts.context));
  shared->model->set_input_rounding(opts.round_matmul_inputs);
  TS_RETURN_IF_ERROR(resolve_chat_template(*shared));
  describe(*shared);
  std::unique_ptr<LanguageModel> lm(new LanguageModel());
  LanguageModelOptions gen_opts = opts;
  gen_opts.session.progress = progress.sub(0.7, 1.0).as_fn();
  TS_ASSIGN_OR_RETURN(lm->impl_->gen, make_generator(*shared->model, gen_opts));
  lm->impl_->kv_type = opts.kv_type;
  shared->opts.session.progress = nullptr;  // the caller's callback may not outlive load()
  lm->impl_->shared = std::move(shared);
  return lm;
}

Result<std::unique_ptr<LanguageModel>> LanguageModel::fork(const LanguageModelOptions& opts) const {
  TS_RETURN_IF_ERROR(check_options(opts));
  const LanguageModelOptions& mine = impl_->shared->opts;
  auto differs = [](const char* field) {
    return error(StatusCode::invalid_argument, "LanguageModel::fork: LanguageModelOptions::", field,
                 " differs from the loaded model's (a fork shares it with the model)");
  };
  if (opts.context != mine.context) return differs("context");
  if (opts.mmap != mine.mmap) return differs("mmap");
  if (opts.round_matmul_inputs != mine.round_matmul_inputs) return differs("round_matmul_inputs");
  if (opts.chat_template != mine.chat_template) return differs("chat_template");
  std::unique_ptr<LanguageModel> lm(new LanguageModel());
  TS_ASSIGN_OR_RETURN(lm->impl_->gen, make_generator(*impl_->shared->model, opts));
  lm->impl_->kv_type = opts.kv_type;
  lm->impl_->shared = impl_->shared;
  return lm;
}

Result<GenerateResult> LanguageModel::generate(const std::string& prompt, const GenerateOptions& opts,
                                               const TokenCallback& on_piece) {
  const gguf::Tokenizer& tok = impl_->shared->model->tokenizer();
  std::vector<int32_t> ids = tok.encode(prompt, tok.add_bos());
  if (ids.empty()) ids.push_back(tok.bos());
  return generate_tokens(ids, opts, on_piece);
}

Result<GenerateResult> LanguageModel::generate_tokens(const std::vector<int32_t>& prompt, const GenerateOptions& opts,
                                                      const TokenCallback& on_piece) {
  TS_RETURN_IF_ERROR(opts.validate());
  if (prompt.empty()) return error(StatusCode::invalid_argument, "generate: the prompt holds no tokens");
  if (static_cast<int64_t>(prompt.size()) > context_length())
    return error(StatusCode::out_of_range, "the prompt has ", prompt.size(), " tokens but the context holds ",
                 context_length());
  for (size_t i = 0; i < prompt.size(); ++i)
    if (prompt[i] < 0 || prompt[i] >= vocab_size())
      return error(StatusCode::out_of_range, "prompt token ", i, " is ", prompt[i], ", outside the vocabulary [0, ",
                   vocab_size(), ")");
  Impl& im = *impl_;
  const gguf::Tokenizer& tok = im.shared->model->tokenizer();
  llm::Generator& gen = *im.gen;

  // The sampler: a fresh one from the seed, or the previous call's when asked and alike.
  const llm::SamplerOptions so = sampler_options(opts);
  if (opts.reseed || !im.sampler || !same_sampling(im.sampler_opts, so)) {
    im.sampler.emplace(so);
    im.sampler_opts = so;
  }

  GenerateResult r;
  r.prompt_tokens = static_cast<int64_t>(prompt.size());
  // Keep the cached tokens the prompt starts with (at least its last token is fed again,
  // for the logits after it); forget the rest.
  size_t reuse = opts.reuse_cache ? common_prefix(im.cached, prompt) : 0;
  if (reuse == prompt.size()) --reuse;
  TS_RETURN_IF_ERROR(gen.rewind(static_cast<int64_t>(reuse)));
  im.cached.resize(reuse);
  r.reused_tokens = static_cast<int64_t>(reuse);

  const auto t0 = std::chrono::steady_clock::now();
  if (Status s = gen.feed(std::vector<int32_t>(prompt.begin() + static_cast<std::ptrdiff_t>(reuse), prompt.end())).status();
      !s.ok()) {
    reset();
    return s;
  }
  im.cached = prompt;
  r.prompt_seconds = seconds_since(t0);

  // As the CLI prints it: the prompt's text, then each piece; the first piece loses the
  // space the tokenizer prepends when nothing has been shown yet.
  bool shown = !tok.decode(prompt).empty();
  std::optional<llm::StopScanner> scan;
  if (!opts.stop.empty()) scan.emplace(opts.stop);
  std::vector<int32_t> history = prompt;  // for the repetition penalty
  const auto t1 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < opts.max_tokens; ++i) {
    if (opts.cancel && opts.cancel->load()) {
      r.stop_reason = StopReason::cancelled;
      break;
    }
    const int32_t next = im.sampler->sample(gen.logits(), history);
    if (next == tok.eos() || std::find(opts.stop_tokens.begin(), opts.stop_tokens.end(), next) != opts.stop_tokens.end()) {
      r.stop_reason = StopReason::eos;
      r.stop_token = next;
      break;
    }
    history.push_back(next);
    r.tokens.push_back(next);
    std::string piece = tok.piece(next);
    if (!shown && !piece.empty() && piece[0] == ' ' && tok.add_space_prefix()) piece.erase(0, 1);
    shown = shown || !piece.empty();
    if (scan) piece = scan->add(piece);
    r.text += piece;
    const bool go_on = on_piece ? on_piece(piece) : true;
    if (scan && scan->stopped()) {
      r.stop_reason = StopReason::stop_string;
      break;
    }
    if (!go_on) {
      r.stop_reason = StopReason::callback;
      break;
    }
    if (i + 1 == opts.max_tokens) break;
    if (gen.position() >= gen.context_length()) {
      r.stop_reason = StopReason::context_full;
      break;
    }
    if (Status s = gen.decode(next); !s.ok()) {
      reset();
      return s;
    }
    im.cached.push_back(next);
  }
  r.generate_seconds = seconds_since(t1);
  if (scan && !scan->stopped()) {
    const std::string rest = scan->flush();
    if (!rest.empty()) {
      r.text += rest;
      if (on_piece) on_piece(rest);
    }
  }
  r.stopped_at_eos = r.stop_reason == StopReason::eos;
  r.context_full = r.stop_reason == StopReason::context_full;
  return r;
}

std::vector<int32_t> LanguageModel::tokenize(const std::string& text, bool add_bos, bool parse_special) const {
  return impl_->shared->model->tokenizer().encode(text, add_bos, parse_special);
}
std::string LanguageModel::detokenize(const std::vector<int32_t>& ids) const {
  return impl_->shared->model->tokenizer().decode(ids);
}
std::string LanguageModel::token_piece(int32_t id) const {
  if (id < 0 || id >= vocab_size()) return {};
  return impl_->shared->model->tokenizer().piece(id);
}

Result<std::vector<float>> LanguageModel::feed(const std::vector<int32_t>& ids) {
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= vocab_size())
      return error(StatusCode::out_of_range, "token ", i, " is ", ids[i], ", outside the vocabulary [0, ", vocab_size(),
                   ")");
  const int64_t before = impl_->gen->position();
  auto logits = impl_->gen->feed(ids);
  if (!logits.ok()) {
    // A step that failed part-way leaves cache rows of unknown tokens: keep what was cached.
    (void)impl_->gen->rewind(before);
    return logits.status();
  }
  impl_->cached.insert(impl_->cached.end(), ids.begin(), ids.end());
  return logits;
}

Status LanguageModel::decode(int32_t id) {
  if (id < 0 || id >= vocab_size())
    return error(StatusCode::out_of_range, "token ", id, " is outside the vocabulary [0, ", vocab_size(), ")");
  const int64_t before = impl_->gen->position();
  if (Status s = impl_->gen->decode(id); !s.ok()) {
    (void)impl_->gen->rewind(before);
    return s;
  }
  impl_->cached.push_back(id);
  return Status::Ok();
}

std::span<const float> LanguageModel::logits() const { return impl_->gen->logits(); }
void LanguageModel::reset() {
  impl_->gen->reset();
  impl_->cached.clear();
}
int64_t LanguageModel::position() const { return impl_->gen->position(); }
int64_t LanguageModel::context_length() const { return impl_->gen->context_length(); }
int64_t LanguageModel::vocab_size() const { return impl_->shared->model->vocab_size(); }
int64_t LanguageModel::layers() const { return impl_->shared->model->layers(); }
std::string LanguageModel::architecture() const { return impl_->shared->model->params().arch; }
int32_t LanguageModel::eos_token() const { return impl_->shared->model->tokenizer().eos(); }
int32_t LanguageModel::bos_token() const { return impl_->shared->model->tokenizer().bos(); }
int64_t LanguageModel::kv_cache_bytes() const { return impl_->gen->kv_cache_bytes(); }
DType LanguageModel::kv_type() const { return impl_->kv_type; }
int64_t LanguageModel::batch() const { return impl_->gen->batch(); }
const Session* LanguageModel::prompt_session() const { return impl_->gen->prompt_session_if_any(); }
const Session& LanguageModel::decode_session() const { return impl_->gen->decode_session(); }

LanguageModelPlacement LanguageModel::placement() const {
  const Plan& plan = decode_session().plan();
  const Graph& g = plan.graph;
  LanguageModelPlacement out;
  out.device = plan.devices.empty() ? "cpu" : plan.devices[0]->name();
  out.layers = layers();
  out.parts.resize(static_cast<size_t>(out.layers) + 1);
  for (int64_t l = 0; l < out.layers; ++l) out.parts[static_cast<size_t>(l)].layer = l;
  const bool other = out.device != "cpu";
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.nodes()[i];
    const int layer = llm::layer_of_node(n);
    LayerPlacement& p = out.parts[layer >= 0 && layer < out.layers ? static_cast<size_t>(layer) : out.parts.size() - 1];
    if (n.op == OpKind::transfer) {
      ++p.transfers;
      continue;
    }
    const NodePlacement& np = plan.nodes[i];
    const bool on_device = other && np.device == 0;
    ++p.nodes;
    p.on_device += on_device;
    if (n.op == OpKind::fully_connected) {
      ++p.matmuls;
      p.matmuls_on_device += on_device;
      if (layer < 0 && on_device) out.output_offloaded = true;
    }
    if (!other || on_device) continue;
    const std::string op = op_name(n.op);
    auto it = std::find_if(p.on_cpu.begin(), p.on_cpu.end(), [&](const LayerPlacement::CpuOps& c) { return c.op == op; });
    if (it == p.on_cpu.end()) {
      // The preferred device's refusal ("rknpu: no NPU lowering for rms_norm"), else the
      // planner's note (a node pinned to the cpu by offload_layers).
      std::string reason = np.note;
      const std::string prefix = out.device + ": ";
      for (const std::string& r : np.rejected)
        if (r.rfind(prefix, 0) == 0) {
          reason = r.substr(prefix.size());
          break;
        }
      if (reason.empty())
        reason = layer >= 0 ? "offload_layers keeps this layer on the cpu"
                            : "offload_layers: outside the layers, on the device only when every layer is";
      p.on_cpu.push_back({op, 0, reason});
      it = p.on_cpu.end() - 1;
    }
    ++it->count;
  }
  for (int64_t l = 0; l < out.layers; ++l) {
    const LayerPlacement& p = out.parts[static_cast<size_t>(l)];
    out.offloaded_layers += p.matmuls > 0 && p.matmuls_on_device == p.matmuls;
  }
  return out;
}
const LanguageModelInfo& LanguageModel::info() const { return impl_->shared->info; }

}  // namespace tessera
