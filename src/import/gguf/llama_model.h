// Decoder-only transformers of the llama family from a GGUF file: hyperparameters, weights
// and step graphs. Architectures (general.architecture) and what each adds to llama:
//   llama   the base below; adjacent-pair RoPE
//   qwen2   q/k/v biases; NEOX RoPE
//   qwen3   per-head RMS norms of q and k (attn_q_norm, attn_k_norm [hd]) before RoPE, head
//           size from attention.key_length (heads x head size may differ from the width); NEOX
//   gemma2  embedding x sqrt(dim); post-attention and post-FFN RMS norms (post_attention_norm,
//           post_ffw_norm) before each residual add; GELU (tanh form) gated FFN; attention
//           scores soft-capped (attn_logit_softcapping) and logits too (final_logit_softcapping);
//           sliding-window attention on layers i % P < P - 1 (P = attention.sliding_window_pattern,
//           default 2; window attention.sliding_window); NEOX
//   gemma3  gemma2 without soft-capping, with q/k norms; sliding-window layers (P default 6)
//           rotate with rope.freq_base_swa (default 10000)
//   phi3    fused projections split at load: attn_qkv [q | k | v rows], ffn_up [gate | up rows]; NEOX
// Weights stay in the file's memory map in their stored types (f32, f16, bf16, the GGUF
// block types); fully_connected and get_rows read the blocks as stored (a fused weight's
// parts are views of its rows). A step graph for T tokens
// (x: [T, dim] f32 activations; H heads, Hkv KV heads, G = H/Hkv, hd head size):
//   x = get_rows(token_embd [vocab, dim], tokens)          (gemma: x * sqrt(dim))
//   per layer i ("blk.i/..." nodes):
//     h  = rms_norm(x, attn_norm)
//     q  = rope(fc(h, attn_q) as [T, H, hd]) * scale     k = rope(fc(h, attn_k) as [T, Hkv, hd])
//          (qwen2: fc(h, attn_q, attn_q.bias), likewise k and v; qwen3/gemma3: rms_norm of each
//          head with attn_q_norm / attn_k_norm before rope); scale = 1/sqrt(hd)
//     v  = fc(h, attn_v) as [T, Hkv, hd]
//     K  = scatter_rows(cache_k [Hkv, 1, ctx, hd], k as [Hkv, 1, T, hd], kv_pos); V likewise
//     layers >= StepOptions::attention_op_from (cache f16, k and v cast to f16 first):
//       o = attention(q, K, V, pos; window, softcap) [T, H, hd] -> [T, H*hd]
//     other layers (cache f32):
//       s = matmul(q as [Hkv, G, T, hd], K, transpose_b) [Hkv, G, T, ctx]
//           (soft-capped: c * tanh(s / c))
//       o = matmul(softmax(s, mask or mask_swa [T, ctx]), V) [Hkv, G, T, hd] -> [T, H*hd]
//     x += fc(o, attn_output)                                  (gemma: rms_norm(.., post_attention_norm))
//     x += fc(act(fc(rms_norm(x, ffn_norm), ffn_gate)) * fc(.., ffn_up), ffn_down)
//          act = silu (gemma: gelu, tanh form; then rms_norm(.., post_ffw_norm))
//   logits = fc(get_rows(rms_norm(x, output_norm), last), output or token_embd)  [1, vocab]
//            (gemma2: c * tanh(logits / c))
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "import/gguf/gguf_file.h"
#include "import/gguf/tokenizer.h"
#include "runtime/llm/decoder.h"

namespace tessera::gguf {

// Keys are read with the architecture's prefix ("llama." below stands for "qwen3." etc.).
struct LlamaParams {
  std::string arch = "llama";  // general.architecture: llama, qwen2, qwen3, gemma2, gemma3, phi3
  bool rope_neox = false;      // all but llama: RoPE pairs (i, i + n/2) instead of (2i, 2i + 1)
  bool qkv_bias = false;       // qwen2: blk.i.attn_{q,k,v}.bias [out] f32 added to the projections
  bool qk_norm = false;        // qwen3, gemma3: blk.i.attn_{q,k}_norm [hd], RMS norm per head
  bool post_norms = false;     // gemma: blk.i.post_attention_norm, blk.i.post_ffw_norm [dim]
  bool fused_qkv = false;      // phi3: blk.i.attn_qkv [(H + 2 Hkv) hd, dim]
  bool fused_gate_up = false;  // phi3: blk.i.ffn_up [2 ffn, dim], gate rows first
  bool gelu = false;           // gemma: the FFN gate goes through GELU (tanh form), not SiLU
  double embed_scale = 1.0;    // gemma: sqrt(dim) multiplies the embeddings
  double attn_scale = 0;       // multiplies q (1/sqrt(hd), see llama_params)
  double attn_softcap = 0;     // gemma2: attn_logit_softcapping (0: none)
  double final_softcap = 0;    // gemma2: final_logit_softcapping (0: none)
  int64_t swa_window = 0;      // gemma: attention.sliding_window (0: no sliding-window layers)
  std::vector<bool> swa_layers;  // per layer: attends over the window only
  double rope_base_swa = 0;    // the RoPE base of the sliding-window layers
  int64_t vocab = 0;      // rows of token_embd
  int64_t dim = 0;        // llama.embedding_length
  int64_t layers = 0;     // llama.block_count
  int64_t heads = 0;      // llama.attention.head_count
  int64_t kv_heads = 0;   // llama.attention.head_count_kv (default: heads)
  int64_t head_dim = 0;   // llama.attention.key_length (default dim / heads)
  int64_t ffn = 0;        // llama.feed_forward_length
  int64_t context = 0;    // llama.context_length
  int64_t rope_dims = 0;  // llama.rope.dimension_count (default: head_dim)
  double rope_base = 10000.0;  // llama.rope.freq_base; the default is llama.cpp's
  double rms_eps = 1e-5;       // llama.attention.layer_norm_rms_epsilon; llama.cpp's default
  bool tied_output = false;    // no output.weight: logits use token_embd
};

// Default cap on the context taken from a file (Llama 3 files say 131072).
constexpr int64_t kDefaultMaxContext = 4096;

// The architectures this file reads, for messages and docs.
constexpr const char* kLlamaArchitectures = "llama, qwen2, qwen3, gemma2, gemma3, phi3";

class LlamaModel : public llm::DecoderModel {
 public:
  // Reads and checks the hyperparameters and every weight's shape and type.
  static Result<std::unique_ptr<LlamaModel>> load(File file);
  // Opens a GGUF file: read into huge pages by default (File::Load::read; a plain memory
  // map where the kernel offers none), or memory-mapped with File::Load::map.
  static Result<std::unique_ptr<LlamaModel>> open(const std::string& path, File::Load load = File::Load::read,
                                                  const ProgressPart& progress = {});

  const LlamaParams& params() const { return p_; }
  const File& file() const { return file_; }
  const Tokenizer& tokenizer() const { return tok_; }

  // The context the step graphs are built for (KV cache rows): by default the smaller of
  // the file's llama.context_length and kDefaultMaxContext; set_context picks any 1..2^20.
  int64_t context_length() const override { return ctx_; }
  Status set_context(int64_t n);
  // Whether fully_connected nodes may round their inputs to 8-bit blocks against q8_0 /
  // q4_0 weights (attribute input_rounding = "q8_0"), as llama.cpp's CPU path does
  // (default true); false keeps exact f32 activations (the reference arithmetic).
  void set_input_rounding(bool on) { round_inputs_ = on; }
  int64_t vocab_size() const override { return p_.vocab; }
  int64_t sliding_window() const override { return p_.swa_window; }
  int64_t layers() const override { return p_.layers; }
  Result<Graph> build_step(int64_t tokens, const llm::StepOptions& opts = {}) const override;

 private:
  LlamaModel(File f, Tokenizer t, LlamaParams p)
      : file_(std::move(f)), tok_(std::move(t)), p_(p), ctx_(std::min(p.context, kDefaultMaxContext)) {}

  File file_;
  Tokenizer tok_;
  LlamaParams p_;
  int64_t ctx_;
  bool round_inputs_ = true;
};

// Reads the hyperparameters of a llama-family GGUF file (general.architecture one of
// kLlamaArchitectures); anything unsupported is an error naming its key.
Result<LlamaParams> llama_params(const File& f);

// What the architecture adds to llama, in words ("q/k norms, sliding window 16 on 1 of 2
// layers, ..."); empty for llama.
std::string describe_features(const LlamaParams& p);

}  // namespace tessera::gguf
