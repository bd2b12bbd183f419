// Generator: prompt batches and decode steps over shared sessions (see generator.h).
#include "runtime/llm/generator.h"

#include <algorithm>
#include <cmath>

#include <chrono>
#include <cstring>
#include <limits>

namespace tessera::llm {

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

Result<std::unique_ptr<Generator>> Generator::create(const DecoderModel& model, const GeneratorOptions& opts) {
  std::unique_ptr<Generator> gen(new Generator());
  gen->ctx_ = model.context_length();
  gen->vocab_ = model.vocab_size();
  gen->logits_.assign(static_cast<size_t>(gen->vocab_), 0.0f);
  gen->batch_ = std::max<int64_t>(1, std::min(opts.batch, gen->ctx_));
  SessionOptions so = opts.session;
  // Progress: the prompt graph's session places the weights (most of the work), the decode
  // graph's shares them.
  const ProgressPart progress(&opts.session.progress, 0.0, 1.0);
  if (opts.offload_layers >= 0) {
    const int64_t n = opts.offload_layers, layers = model.layers();
    const bool on_cpu = so.device == "cpu";
    // Device 0 is the preferred device; the session adds the cpu as device 1 otherwise.
    so.plan.pin = [n, layers, on_cpu](const Graph&, const Node& node, int) -> int {
      if (on_cpu) return 0;
      int layer = layer_of_node(node);
      if (layer < 0) return n >= layers ? 0 : 1;
      return layer < n ? 0 : 1;
    };
  }
  // The cpu attends with the attention op (f16 cache, rows in use only); layers placed on
  // another device keep the masked matmul form every device runs.
  StepOptions step;
  step.attention_cache = opts.kv_type;
  if (so.device != "cpu") step.attention_op_from = opts.offload_layers >= 0 ? opts.offload_layers : model.layers();
  gen->masked_ = step.attention_op_from > 0;
  gen->window_ = model.sliding_window();
  const Session* share = nullptr;
  if (gen->batch_ > 1) {
    TS_ASSIGN_OR_RETURN(Graph g, model.build_step(gen->batch_, step));
    so.progress = progress.sub(0.0, 0.9).as_fn();
    auto s = Session::create(std::move(g), so);
    if (!s.ok()) return s.status().with_context("prompt graph (" + std::to_string(gen->batch_) + " tokens)");
    gen->prompt_ = std::move(*s);
    share = gen->prompt_.get();
  }
  TS_ASSIGN_OR_RETURN(Graph g1, model.build_step(1, step));
  for (const Tensor& t : g1.tensors())
    if (t.role == Role::state) {
      TS_ASSIGN_OR_RETURN(int64_t b, t.host_bytes());
      gen->kv_bytes_ += b;
    }
  so.progress = (share ? progress.sub(0.9, 1.0) : progress).as_fn();
  auto s1 = Session::create(std::move(g1), so, share);
  if (!s1.ok()) return s1.status().with_context("decode graph (1 token)");
  gen->decode_ = std::move(*s1);
  if (!gen->prompt_) gen->batch_ = 1;
  return gen;
}

Status Generator::run_step(Session& s, int64_t T, const int32_t* ids, int64_t start, int64_t real, int64_t last) {
  // Tokens [0, real) are the caller's; the rest pad the step (their rows get overwritten).
  tokens_.assign(static_cast<size_t>(T), ids[real - 1]);
  std::memcpy(tokens_.data(), ids, static_cast<size_t>(real) * sizeof(int32_t));
  positions_.resize(static_cast<size_t>(T));
  const int64_t mask_len = masked_ ? ctx_ : 1;  // [T, 1] and unused without masked layers
  if (masked_) mask_.assign(static_cast<size_t>(T * ctx_), -std::numeric_limits<float>::infinity());
  else mask_.assign(static_cast<size_t>(T), 0.0f);
  for (int64_t t = 0; t < T; ++t) {
    positions_[t] = static_cast<int32_t>(start + t);
    if (masked_)
      for (int64_t j = 0; j <= start + t; ++j) mask_[t * ctx_ + j] = 0.0f;
  }
  int32_t kv_pos = static_cast<int32_t>(start), last_idx = static_cast<int32_t>(last);
  TS_RETURN_IF_ERROR(s.set_input(kInTokens, tokens_.data(), T * 4));
  TS_RETURN_IF_ERROR(s.set_input(kInPos, positions_.data(), T * 4));
  TS_RETURN_IF_ERROR(s.set_input(kInMask, mask_.data(), T * mask_len * 4));
  if (window_ > 0) {
    // The sliding-window layers' mask: the causal one without rows j <= pos[t] - window.
    mask_swa_ = mask_;
    if (masked_)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t j = 0; j <= start + t - window_; ++j)
          mask_swa_[t * ctx_ + j] = -std::numeric_limits<float>::infinity();
    TS_RETURN_IF_ERROR(s.set_input(kInMaskSwa, mask_swa_.data(), T * mask_len * 4));
  }
  TS_RETURN_IF_ERROR(s.set_input(kInKvPos, &kv_pos, 4));
  TS_RETURN_IF_ERROR(s.set_input(kInLast, &last_idx, 4));
  TS_RETURN_IF_ERROR(s.run());
  return s.read_output(0, logits_.data(), vocab_ * 4);
}

Result<std::vector<float>> Generator::feed(const std::vector<int32_t>& ids) {
  if (ids.empty()) return error(StatusCode::invalid_argument, "generator: nothing to feed");
  const int64_t n = static_cast<int64_t>(ids.size());
  if (pos_ + n > ctx_)
    return error(StatusCode::out_of_range, "generator: ", pos_, " cached + ", n, " new tokens exceed the context of ",
                 ctx_, " tokens");
  int64_t done = 0;
  while (done < n) {
    const int64_t left = n - done;
    // One token, a chunk whose padding would pass the end of the context, or a last chunk
    // under half a batch (padding would cost more than the steps): decode steps.
    if (left == 1 || !prompt_ || pos_ + batch_ > ctx_ || 2 * left < batch_) {
      TS_RETURN_IF_ERROR(run_step(*decode_, 1, &ids[done], pos_, 1, 0));
      ++pos_;
      ++done;
      continue;
    }
    const int64_t take = std::min(left, batch_);
    TS_RETURN_IF_ERROR(run_step(*prompt_, batch_, &ids[done], pos_, take, take - 1));
    pos_ += take;
    done += take;
  }
  return logits_;
}

Result<std::vector<float>> Generator::step(int32_t id) {
  TS_RETURN_IF_ERROR(decode(id));
  return logits_;
}

Status Generator::decode(int32_t id) {
  if (pos_ + 1 > ctx_)
    return error(StatusCode::out_of_range, "generator: the context of ", ctx_, " tokens is full");
  TS_RETURN_IF_ERROR(run_step(*decode_, 1, &id, pos_, 1, 0));
  ++pos_;
  return Status::Ok();
}

Result<GenerateStats> Generator::generate(const std::vector<int32_t>& prompt, int64_t max_tokens, Sampler& sampler,
                                          int32_t eos, const std::function<bool(int32_t)>& on_token) {
  GenerateStats st;
  std::vector<int32_t> history = prompt;
  auto t0 = std::chrono::steady_clock::now();
  TS_RETURN_IF_ERROR(feed(prompt).status());
  st.prompt_seconds = seconds_since(t0);
  st.prompt_tokens = static_cast<int64_t>(prompt.size());
  auto t1 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < max_tokens; ++i) {
    int32_t next = sampler.sample(logits_, history);
    if (next == eos) {
      st.stopped_at_eos = true;
      break;
    }
    history.push_back(next);
    ++st.generated_tokens;
    if (on_token && !on_token(next)) break;
    if (i + 1 == max_tokens) break;
    if (pos_ >= ctx_) {
      st.context_full = true;
      break;
    }
    TS_RETURN_IF_ERROR(decode(next));
  }
  st.generate_seconds = seconds_since(t1);
  return st;
}

double kl_divergence(const std::vector<float>& a, const std::vector<float>& b) {
  const size_t n = std::min(a.size(), b.size());
  if (n == 0) return 0;
  double ma = -INFINITY, mb = -INFINITY;
  for (size_t i = 0; i < n; ++i) ma = std::max(ma, double(a[i])), mb = std::max(mb, double(b[i]));
  double za = 0, zb = 0;
  for (size_t i = 0; i < n; ++i) za += std::exp(double(a[i]) - ma), zb += std::exp(double(b[i]) - mb);
  const double la = std::log(za), lb = std::log(zb);
  double kl = 0;
  for (size_t i = 0; i < n; ++i) {
    const double lpa = double(a[i]) - ma - la, lpb = double(b[i]) - mb - lb;
    kl += std::exp(lpa) * (lpa - lpb);
  }
  return std::max(kl, 0.0);
}

Result<Agreement> compare_greedy(Generator& ref, Generator& test, const std::vector<int32_t>& prompt, int64_t positions) {
  if (prompt.empty()) return error(StatusCode::invalid_argument, "compare_greedy: empty prompt");
  ref.reset();
  test.reset();
  TS_ASSIGN_OR_RETURN(std::vector<float> lr, ref.feed(prompt));
  TS_ASSIGN_OR_RETURN(std::vector<float> lt, test.feed(prompt));
  Agreement a;
  auto argmax = [](const std::vector<float>& v) {
    return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
  };
  double kl_sum = 0;
  const int64_t room = std::min(ref.context_length(), test.context_length()) - static_cast<int64_t>(prompt.size());
  positions = std::min<int64_t>(positions, room + 1);
  for (int64_t p = 0; p < positions; ++p) {
    if (lr.size() != lt.size()) return error(StatusCode::internal, "compare_greedy: the generators' vocabularies differ");
    const int32_t want = argmax(lr);
    a.top1_agree += argmax(lt) == want;
    const double kl = kl_divergence(lr, lt);
    kl_sum += kl;
    a.max_kl = std::max(a.max_kl, kl);
    ++a.positions;
    a.tokens.push_back(want);
    if (p + 1 == positions) break;
    TS_ASSIGN_OR_RETURN(lr, ref.step(want));
    TS_ASSIGN_OR_RETURN(lt, test.step(want));
  }
  a.mean_kl = a.positions ? kl_sum / double(a.positions) : 0;
  return a;
}

}  // namespace tessera::llm
