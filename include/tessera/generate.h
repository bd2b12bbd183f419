// Tessera's embedding API for LLMs: load a GGUF llama/qwen2 model and generate text.
//
//   tessera::LanguageModelOptions lo;  lo.session.device = "cpu";
//   auto lm = tessera::LanguageModel::load("model.gguf", lo);
//   tessera::GenerateOptions go;  go.max_tokens = 32;
//   auto r = (*lm)->generate("Once upon a time", go, [](std::string_view piece) {
//     std::fwrite(piece.data(), 1, piece.size(), stdout);
//     return true;                                     // false stops generation
//   });
//
// Below generate(): feed() / decode() put tokens into the KV cache and give the logits
// after the last one (scoring, perplexity, benchmarks); render_chat() writes a
// conversation with the model's chat template; info() describes the file. `tessera
// generate`, `chat`, `score`, `perplexity`, `bench` and `serve`, the Python module and the
// C API all run models through this class.
//
// Thread safety: a LanguageModel holds one KV cache and is used by one thread at a time
// (generate, feed, decode and reset calls on one object must not overlap). The other
// const methods (tokenize, detokenize, render_chat, chat_template, info and the other
// accessors) read only what load() fixed and may be called from any thread, also while
// another thread generates; position() and logits() read the cache's state and follow
// the one-thread rule. To generate concurrently, fork() one
// LanguageModel per thread: forks share the loaded weights and each holds its own cache.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/export.h"
#include "tessera/session.h"
#include "tessera/status.h"
#include "tessera/types.h"

namespace tessera {

// LanguageModelOptions::offload_layers value that puts every layer on the device.
inline constexpr int64_t kOffloadAllLayers = std::numeric_limits<int64_t>::max();

struct TESSERA_API LanguageModelOptions {
  SessionOptions session;       // device, device options (threads), plan options
  int64_t context = 0;          // KV cache rows; 0: the file's context length, at most 4096
  int64_t batch = 32;           // prompt tokens per step (capped at the context)
  // >= 0: the first N layers on session.device (capped at the model's layers, so
  // kOffloadAllLayers puts all there), the rest on the cpu; -1: the partitioner places
  // every node on session.device where supported.
  int64_t offload_layers = -1;
  // KV cache of the cpu layers: f16, f32 or q8_0 (blocks of 32 values, half the bytes of
  // f16; the head size must be a multiple of 32). Layers on another device keep f32.
  DType kv_type = DType::f16;
  // false (default): read the file into memory (transparent huge pages, which decode reads
  // faster); true: memory-map it (pages come in on first use, shared with other processes).
  bool mmap = false;
  // true (default): every matrix product rounds its f32 input to 8 bits first, as
  // llama.cpp's CPU path does; false: exact f32 inputs (the reference arithmetic that
  // scoring a file's weights wants).
  bool round_matmul_inputs = true;
  // The chat template of render_chat(): "" (default) recognizes the family of the file's
  // tokenizer.chat_template; else a family name (llama3, chatml, qwen, llama2, phi3,
  // gemma) or the path of a Jinja template file whose family is recognized the same way.
  // A bad name or file fails load(); a file without a template fails only render_chat().
  std::string chat_template;
};

struct TESSERA_API GenerateOptions {
  int64_t max_tokens = 64;      // stops earlier at end of sequence, a stop or a full context
  float temperature = 0.0f;     // 0: greedy
  int top_k = 40;               // with temperature > 0; <= 0 keeps all
  float top_p = 0.95f;          // with temperature > 0; in (0, 1]
  float repeat_penalty = 1.0f;  // > 0; > 1 discourages tokens among the last repeat_last_n
  int repeat_last_n = 64;
  uint64_t seed = 0;
  // Stop strings: generation ends once the generated text holds one; the text (and the
  // pieces passed to the callback) end before it. Text that might still begin a stop
  // string is held back until the next token decides. Empty: no stop strings.
  std::vector<std::string> stop;
  // Token ids that end generation as the end-of-sequence token does: not emitted and not
  // counted in GenerateResult::tokens (a chat template's end-of-turn token).
  std::vector<int32_t> stop_tokens;
  // When not null: checked before each token is sampled; once true, generation ends with
  // StopReason::cancelled. May be set from another thread or a signal handler.
  const std::atomic<bool>* cancel = nullptr;
  // false (default): generation starts from an empty KV cache. true: the cached tokens the
  // prompt starts with are kept and only the rest is fed (the turns of a chat); at least
  // the prompt's last token is fed again, for its logits.
  bool reuse_cache = false;
  // true (default): the sampler's random generator starts from `seed` at every call.
  // false: when the sampling fields equal the previous call's on this model, its random
  // sequence continues (a chat's turns draw from one sequence, as one sampler would).
  bool reseed = true;

  // The first field out of range, named (max_tokens >= 0, temperature >= 0, top_p in
  // (0, 1], repeat_penalty > 0), as generate() checks it.
  Status validate() const;
};

enum class StopReason {
  length,        // max_tokens tokens were generated
  eos,           // the model's end-of-sequence token or one of GenerateOptions::stop_tokens
  stop_string,   // the text reached one of GenerateOptions::stop
  callback,      // the piece callback returned false
  cancelled,     // GenerateOptions::cancel became true
  context_full,  // the KV cache is full
};
// "length", "eos", "stop_string", "callback", "cancelled", "context_full".
TESSERA_API const char* stop_reason_name(StopReason r);

struct TESSERA_API GenerateResult {
  std::string text;             // the generated text (without the prompt)
  std::vector<int32_t> tokens;  // the generated token ids
  int64_t prompt_tokens = 0;
  double prompt_seconds = 0;    // feeding the prompt (the part not reused from the cache)
  double generate_seconds = 0;  // sampling and decoding the generated tokens
  bool stopped_at_eos = false;  // stop_reason == eos
  bool context_full = false;    // stop_reason == context_full
  StopReason stop_reason = StopReason::length;
  int64_t reused_tokens = 0;    // prompt tokens kept in the KV cache (reuse_cache)
  int32_t stop_token = -1;      // the token that ended generation (stop_reason eos), else -1

  int64_t fed_tokens() const { return prompt_tokens - reused_tokens; }
  double prompt_tokens_per_second() const { return prompt_seconds > 0 ? fed_tokens() / prompt_seconds : 0; }
  double generate_tokens_per_second() const {
    return generate_seconds > 0 ? static_cast<double>(tokens.size()) / generate_seconds : 0;
  }
};

// Called with the text each generated token makes visible, as it is produced; returning
// false stops. Without stop strings that is the token's piece; with them it may be empty
// while text is held back, and the held-back text comes in one last call when generation
// ends another way (its return value is then ignored).
using TokenCallback = std::function<bool(std::string_view piece)>;

// One message of a conversation.
struct TESSERA_API ChatMessage {
  std::string role;  // "system" | "user" | "assistant"
  std::string content;
};

// The chat template render_chat() writes with.
struct TESSERA_API ChatTemplateInfo {
  std::string name;                       // family: llama3, chatml, llama2, phi3, gemma, or jinja
                                          // (any other template, rendered from its source)
  bool from_file = false;                 // recognized from tokenizer.chat_template
  std::vector<std::string> stop_strings;  // texts that end the assistant's turn
  std::vector<int32_t> stop_tokens;       // those stop strings that are one token of the vocabulary
  // Set when the template is a fallback: a file without tokenizer.chat_template (and no
  // LanguageModelOptions::chat_template) is rendered as ChatML, as llama.cpp does; the
  // text says so, for the caller to show.
  std::string warning;
};

// A tensor of the file.
struct TESSERA_API LanguageModelTensor {
  std::string name;
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  int64_t bytes = 0;
};

// What the file says about the model (its metadata, hyperparameters and tokenizer).
struct TESSERA_API LanguageModelInfo {
  std::string file;                 // how errors name the file
  std::optional<std::string> name;  // general.name
  int64_t file_type = -1;           // general.file_type (llama.cpp's llama_ftype), -1 when absent
  std::string architecture;         // "llama", "qwen2", ...
  int64_t layers = 0, dim = 0, heads = 0, kv_heads = 0, head_dim = 0, ffn = 0, vocab = 0;
  int64_t trained_context = 0;      // llama.context_length
  double rope_base = 0;
  bool tied_output = false;         // the output matrix is the token embedding
  // What the architecture adds to llama, e.g. "q/k norms, sliding window 16 on 1 of 2
  // layers, attention soft-cap 50, GELU FFN" (empty for llama).
  std::string features;
  bool byte_level_bpe = false;      // tokenizer: byte-level BPE (else SentencePiece)
  int32_t bos = -1, eos = -1;
  bool add_bos = false;             // tokenize() adds BOS by default
  std::vector<LanguageModelTensor> tensors;  // in file order
};

// Where the decode step's nodes run (LanguageModel::placement()), for "offloaded N/M
// layers" as llama.cpp prints it and `inspect`'s per-layer plan.
struct TESSERA_API LayerPlacement {
  int64_t layer = -1;             // -1: the nodes outside the layers (embedding, output norm and matrix)
  int64_t nodes = 0;              // compute nodes (transfers not counted)
  int64_t on_device = 0;          // of them, on the session's device
  int64_t matmuls = 0;            // weight matrix products (fully_connected)
  int64_t matmuls_on_device = 0;
  int64_t transfers = 0;          // transfers between devices or formats
  struct CpuOps {
    std::string op;               // the op kind
    int64_t count = 0;            // its nodes on the cpu
    std::string reason;           // why (the first node's), e.g. "no NPU lowering for rms_norm"
  };
  std::vector<CpuOps> on_cpu;     // with another device: the ops that stayed on the cpu, in order of first use
};
struct TESSERA_API LanguageModelPlacement {
  std::string device;             // the session's device
  int64_t layers = 0;             // the model's repeating layers
  int64_t offloaded_layers = 0;   // layers whose every matrix product runs on the device
  bool output_offloaded = false;  // the output matrix (logits) on the device
  std::vector<LayerPlacement> parts;  // layer 0, 1, ..., then the nodes outside the layers (layer -1)
};

struct Agreement;

class TESSERA_API LanguageModel {
 public:
  // Opens the file, sizes the KV cache and prepares (plans, compiles) the prompt and
  // decode steps on the device. Errors name the option or the file.
  static Result<std::unique_ptr<LanguageModel>> load(const std::string& path,
                                                     const LanguageModelOptions& opts = {});
  // Another LanguageModel over the same loaded file and weights, with its own KV cache and
  // steps prepared with `opts`' session, batch, offload_layers and kv_type. Its context,
  // mmap, round_matmul_inputs and chat_template are this model's: an error names the first
  // of them that `opts` sets differently.
  Result<std::unique_ptr<LanguageModel>> fork(const LanguageModelOptions& opts) const;
  ~LanguageModel();

  // Tokenizes the prompt (with BOS when the vocabulary adds it; BOS alone for an empty
  // prompt), feeds it, then samples up to max_tokens tokens.
  Result<GenerateResult> generate(const std::string& prompt, const GenerateOptions& opts = {},
                                  const TokenCallback& on_piece = {});
  // The same from token ids (not empty, at most context_length()).
  Result<GenerateResult> generate_tokens(const std::vector<int32_t>& prompt, const GenerateOptions& opts = {},
                                         const TokenCallback& on_piece = {});

  // The tokenizer of the file: text to ids (with the file's beginning-of-sequence token
  // when add_bos; special tokens written as text, such as "<|im_end|>", become their ids
  // when parse_special) and ids back to text.
  std::vector<int32_t> tokenize(const std::string& text, bool add_bos = true, bool parse_special = false) const;
  std::string detokenize(const std::vector<int32_t>& ids) const;
  // The text of one token as generation shows it.
  std::string token_piece(int32_t id) const;

  // Feeds `ids` after the tokens already in the cache and returns the logits [vocab] after
  // the last one; reset() empties the cache. Error out_of_range for an id outside the
  // vocabulary or when the tokens do not fit in the context.
  Result<std::vector<float>> feed(const std::vector<int32_t>& ids);
  // Feeds one token without copying the logits out (they stay in logits() until the next
  // feed or decode); allocates nothing after the first call (the loop of benchmarks).
  Status decode(int32_t id);
  // Logits [vocab] after the last fed token.
  std::span<const float> logits() const;
  void reset();
  // Tokens in the KV cache.
  int64_t position() const;

  // The conversation written with the chat template (LanguageModelOptions::chat_template);
  // with add_assistant, ends with the opening of the assistant's turn. It never writes the
  // first BOS: tokenize(text, info().add_bos, true) adds it when the vocabulary asks.
  // Error when the model has no template, saying why and what to pass.
  Result<std::string> render_chat(std::span<const ChatMessage> messages, bool add_assistant = true) const;
  Result<ChatTemplateInfo> chat_template() const;

  const LanguageModelInfo& info() const;
  int64_t context_length() const;
  int64_t vocab_size() const;
  int64_t layers() const;
  std::string architecture() const;  // "llama", "qwen2"
  int32_t eos_token() const;
  int32_t bos_token() const;
  // Bytes of the KV cache, allocated once at load.
  int64_t kv_cache_bytes() const;
  DType kv_type() const;
  // Prompt steps per run (LanguageModelOptions::batch capped at the context).
  int64_t batch() const;
  // The prepared sessions underneath (devices, per-op profile of the last run): the
  // prompt step (null when batch() is 1: every token goes through the decode step) and
  // the 1-token decode step.
  const Session* prompt_session() const;
  const Session& decode_session() const;
  // Where the decode step's nodes run, per layer (the prompt step's are placed alike).
  LanguageModelPlacement placement() const;

 private:
  LanguageModel();
  struct Impl;
  std::unique_ptr<Impl> impl_;
  friend Result<Agreement> compare_greedy(LanguageModel&, LanguageModel&, const std::vector<int32_t>&, int64_t);
};

// How closely `test` follows `ref` along `ref`'s own greedy sequence: `ref` is fed
// `prompt` and generates `positions` greedy tokens, `test` is fed the same tokens. At each
// position the argmaxes are compared and KL(p_ref || p_test) of the softmaxed logits is
// computed in double. Both caches start and end empty. Stops early at a full context.
struct TESSERA_API Agreement {
  int64_t positions = 0;
  int64_t top1_agree = 0;
  double mean_kl = 0, max_kl = 0;
  std::vector<int32_t> tokens;  // ref's greedy tokens
  double top1_rate() const { return positions ? double(top1_agree) / double(positions) : 0; }
};
TESSERA_API Result<Agreement> compare_greedy(LanguageModel& ref, LanguageModel& test, const std::vector<int32_t>& prompt,
                                 int64_t positions);

}  // namespace tessera
