// Generator: runs a DecoderModel with a KV cache, prompt batches and token-by-token decoding.
//
// Two sessions are prepared once: a prompt session whose step graph takes `batch` tokens,
// and a decode session (1 token) created with Session::create(..., share = prompt), so
// both use the same devices, weights and KV cache state tensors. Nothing is planned or
// compiled per token: a step only writes the five small inputs and runs.
//
// Prompt processing: the prompt is cut into chunks of `batch` tokens; a short final chunk
// of at least half a batch is padded (the padding writes cache rows beyond the prompt,
// which no real token attends to and later tokens overwrite). A shorter final chunk, or
// one whose padding would run past the end of the context, goes through the decode
// session one token at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "runtime/llm/decoder.h"
#include "runtime/llm/sampler.h"
#include "tessera/session.h"

namespace tessera::llm {

struct GeneratorOptions {
  SessionOptions session;  // device, threads, plan options (pin for offload)
  int64_t batch = 32;      // prompt tokens per run (capped at the context length)
  // Layer offload: when >= 0, nodes of layers < offload_layers run on the session's device
  // and the rest on the cpu; other nodes run on the device only when every layer does.
  // -1 leaves placement to the partitioner (everything on the device where supported).
  int64_t offload_layers = -1;
  // KV cache of the layers on the cpu: f16 (default), f32 or q8_0 (head size a multiple of 32).
  DType kv_type = DType::f16;
};

struct GenerateStats {
  int64_t prompt_tokens = 0;
  double prompt_seconds = 0;
  int64_t generated_tokens = 0;
  double generate_seconds = 0;
  bool stopped_at_eos = false;
  bool context_full = false;
  double prompt_tokens_per_second() const { return prompt_seconds > 0 ? prompt_tokens / prompt_seconds : 0; }
  double generate_tokens_per_second() const {
    return generate_seconds > 0 ? generated_tokens / generate_seconds : 0;
  }
};

class Generator {
 public:
  static Result<std::unique_ptr<Generator>> create(const DecoderModel& model, const GeneratorOptions& opts);

  // Forgets the cached tokens (position 0). The cache rows need no clearing: the mask
  // hides rows that were not written in this sequence.
  void reset() { pos_ = 0; }
  // Keeps the first `n` cached tokens (0 <= n <= position()) and forgets the rest; the next
  // token is written to row n. As for reset, the mask hides the forgotten rows. Chat uses it
  // to keep the longest common prefix of the cached tokens and the next turn's tokens.
  Status rewind(int64_t n) {
    if (n < 0 || n > pos_)
      return error(StatusCode::out_of_range, "generator: cannot rewind to ", n, " of ", pos_, " cached tokens");
    pos_ = n;
    return {};
  }
  int64_t position() const { return pos_; }
  int64_t context_length() const { return ctx_; }
  // Bytes of the KV cache (every state tensor of the step graphs), allocated once.
  int64_t kv_cache_bytes() const { return kv_bytes_; }

  // Feeds `ids` (at the current position) and returns the logits [vocab] after the last one.
  // Error out_of_range when they do not fit in the context.
  Result<std::vector<float>> feed(const std::vector<int32_t>& ids);
  // Feeds one token through the decode session.
  Result<std::vector<float>> step(int32_t id);
  // The same step without copying the logits out: they stay in logits() until the next
  // step. After the first call a decode step allocates nothing and builds no strings
  // (the token loop of generate() and `tessera bench` run through it).
  Status decode(int32_t id);
  // Logits [vocab] of the last step (feed, step or decode).
  const std::vector<float>& logits() const { return logits_; }

  // Prompt, then up to `max_tokens` sampled tokens; stops at `eos` (not emitted) or when the
  // context is full. `on_token` sees each new token as it is produced; returning false stops.
  Result<GenerateStats> generate(const std::vector<int32_t>& prompt, int64_t max_tokens, Sampler& sampler,
                                 int32_t eos, const std::function<bool(int32_t)>& on_token);

  const Session& prompt_session() const { return *prompt_; }
  const Session& decode_session() const { return *decode_; }
  // The prompt session, or null when batch() is 1 (every token takes the decode session).
  const Session* prompt_session_if_any() const { return prompt_.get(); }
  // Tokens per prompt step (GeneratorOptions::batch capped at the context; 1 without one).
  int64_t batch() const { return batch_; }

 private:
  Generator() = default;
  // Runs one step of session `s` (T tokens) for tokens at positions [start, start+T).
  // Leaves the logits in logits_.
  Status run_step(Session& s, int64_t T, const int32_t* ids, int64_t start, int64_t real, int64_t last);

  std::unique_ptr<Session> prompt_;  // T = batch_ (null when batch_ == 1)
  std::unique_ptr<Session> decode_;  // T = 1
  int64_t batch_ = 1;
  int64_t ctx_ = 0;
  int64_t vocab_ = 0;
  int64_t pos_ = 0;
  bool masked_ = false;   // some layer attends through the [T, ctx] mask
  int64_t window_ = 0;   // the model's sliding window (0: none; then no mask_swa input)
  int64_t kv_bytes_ = 0;
  // Host copies of the step inputs, reused between steps.
  std::vector<int32_t> tokens_, positions_;
  std::vector<float> mask_, mask_swa_;
  std::vector<float> logits_;  // [vocab], of the last step
};

// How closely `test` follows `ref` along `ref`'s own greedy sequence (docs/rknpu.md
// "Accuracy of weights=int8"): `ref` is fed `prompt` and generates `positions` greedy tokens;
// `test` is fed the same tokens (teacher forcing, so one early difference does not change
// every later context). At each of the positions (the logits after the prompt, then after
// each generated token but the last) the argmaxes are compared and the KL divergence
// KL(p_ref || p_test) of the two softmaxed logit rows is computed in double. Both
// generators start from position 0. Stops early when the context is full.
struct Agreement {
  int64_t positions = 0;
  int64_t top1_agree = 0;
  double mean_kl = 0, max_kl = 0;
  std::vector<int32_t> tokens;  // ref's greedy tokens
  double top1_rate() const { return positions ? double(top1_agree) / double(positions) : 0; }
};
Result<Agreement> compare_greedy(Generator& ref, Generator& test, const std::vector<int32_t>& prompt, int64_t positions);
// KL(p || q) of softmax(a) and softmax(b), in double.
double kl_divergence(const std::vector<float>& a, const std::vector<float>& b);

}  // namespace tessera::llm
