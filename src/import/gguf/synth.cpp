// Synthetic llama GGUF files and the GGUF block quantizers.
#include "import/gguf/synth.h"

#include <cmath>
#include <cstring>
#include <random>

#include "convert/dtype.h"
#include "core/checked.h"

namespace tessera::gguf {

namespace {

constexpr float kWeightStd = 0.02f;  // GPT-2 / llama initialisation scale for matrices
constexpr int kByteTokens = 256;     // <0x00> .. <0xFF> byte-fallback tokens
constexpr int kSpecialTokens = 3;    // <unk>, <s>, </s>

void put_f16(uint8_t* p, float v) {
  uint16_t h = convert::f32_to_f16(v);
  std::memcpy(p, &h, 2);
}

// Vocabulary: specials, the 256 byte tokens, then "▁" + short letter strings, so that any
// text encodes (byte fallback) and decodes to readable words.
void synth_vocab(int64_t vocab, std::vector<std::string>& tokens, std::vector<float>& scores,
                 std::vector<int32_t>& types) {
  tokens = {"<unk>", "<s>", "</s>"};
  types = {2, 3, 3};  // unknown, control, control (llama_token_type)
  for (int b = 0; b < kByteTokens && static_cast<int64_t>(tokens.size()) < vocab; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof(buf), "<0x%02X>", b);
    tokens.push_back(buf);
    types.push_back(6);  // byte
  }
  static const char kLetters[] = "etaoinshrdlucmfwypvbgkjqxz";
  for (int64_t i = 0; static_cast<int64_t>(tokens.size()) < vocab; ++i) {
    std::string w = "\xe2\x96\x81";  // "▁"
    int64_t v = i;
    do {
      w += kLetters[v % 26];
      v /= 26;
    } while (v > 0);
    tokens.push_back(w);
    types.push_back(1);  // normal
  }
  scores.resize(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) scores[i] = i < kSpecialTokens + kByteTokens ? 0.0f : -static_cast<float>(i);
}

}  // namespace

std::vector<uint8_t> quantize_q8_0(const float* x, int64_t n) {
  std::vector<uint8_t> out(static_cast<size_t>(n / kQBlock * kQ8_0BlockBytes));
  for (int64_t b = 0; b < n / kQBlock; ++b) {
    const float* v = x + b * kQBlock;
    uint8_t* o = out.data() + b * kQ8_0BlockBytes;
    float amax = 0;
    for (int i = 0; i < kQBlock; ++i) amax = std::max(amax, std::fabs(v[i]));
    const float d = amax / 127.0f, id = d != 0 ? 1.0f / d : 0.0f;
    put_f16(o, d);
    for (int i = 0; i < kQBlock; ++i) o[2 + i] = static_cast<uint8_t>(static_cast<int8_t>(std::lround(v[i] * id)));
  }
  return out;
}

std::vector<uint8_t> quantize_q4_0(const float* x, int64_t n) {
  std::vector<uint8_t> out(static_cast<size_t>(n / kQBlock * kQ4_0BlockBytes));
  for (int64_t b = 0; b < n / kQBlock; ++b) {
    const float* v = x + b * kQBlock;
    uint8_t* o = out.data() + b * kQ4_0BlockBytes;
    float amax = 0, max = 0;  // the value of largest magnitude, with its sign
    for (int i = 0; i < kQBlock; ++i)
      if (std::fabs(v[i]) > amax) {
        amax = std::fabs(v[i]);
        max = v[i];
      }
    const float d = max / -8.0f, id = d != 0 ? 1.0f / d : 0.0f;
    put_f16(o, d);
    for (int j = 0; j < kQBlock / 2; ++j) {
      int q0 = std::min(15, static_cast<int>(v[j] * id + 8.5f));
      int q1 = std::min(15, static_cast<int>(v[j + kQBlock / 2] * id + 8.5f));
      o[2 + j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
  }
  return out;
}

Result<std::vector<uint8_t>> encode_values(const std::vector<float>& x, DType t) {
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<uint8_t> out;
  switch (t) {
    case DType::f32:
      out.resize(x.size() * 4);
      std::memcpy(out.data(), x.data(), out.size());
      return out;
    case DType::f16:
    case DType::bf16: {
      out.resize(x.size() * 2);
      for (size_t i = 0; i < x.size(); ++i) {
        uint16_t h = t == DType::f16 ? convert::f32_to_f16(x[i]) : convert::f32_to_bf16(x[i]);
        std::memcpy(&out[2 * i], &h, 2);
      }
      return out;
    }
    case DType::q8_0:
    case DType::q4_0:
      if (n % kQBlock) return error(StatusCode::invalid_argument, "quantize: ", n, " values are not whole blocks of 32");
      return t == DType::q8_0 ? quantize_q8_0(x.data(), n) : quantize_q4_0(x.data(), n);
    default:
      return error(StatusCode::unsupported, "gguf-synth: weight type ", dtype_name(t),
                   " is not supported (f32, f16, bf16, q8_0, q4_0)");
  }
}

Result<int64_t> synth_weight_bytes(const SynthOptions& o) {
  const int64_t kv = o.kv_heads ? o.kv_heads : o.heads;
  if (o.dim < 1 || o.layers < 1 || o.heads < 1 || kv < 1 || o.ffn < 1 || o.vocab < 1)
    return error(StatusCode::invalid_argument, "gguf-synth: every size must be >= 1");
  const std::string what = "gguf-synth: the model's size";
  auto matrix = [&](Size rows, int64_t cols) -> Result<int64_t> {
    TS_ASSIGN_OR_RETURN(int64_t row, dtype_row_bytes(o.type, cols));
    return (rows * row).get(what);
  };
  const Size kv_rows = Size(kv) * (o.dim / o.heads);
  TS_ASSIGN_OR_RETURN(int64_t embd, matrix(o.vocab, o.dim));
  TS_ASSIGN_OR_RETURN(int64_t sq, matrix(o.dim, o.dim));
  TS_ASSIGN_OR_RETURN(int64_t kvm, matrix(kv_rows, o.dim));
  TS_ASSIGN_OR_RETURN(int64_t up, matrix(o.ffn, o.dim));
  TS_ASSIGN_OR_RETURN(int64_t down, matrix(o.dim, o.ffn));
  const Size norm = Size(o.dim) * 4;
  // qwen2: f32 biases of q (dim), k and v (kv rows each).
  const Size biases = o.arch == "qwen2" ? (Size(o.dim) + kv_rows * 2) * 4 : Size(0);
  const Size layer = Size(sq) * 2 + Size(kvm) * 2 + Size(up) * 2 + down + norm * 2 + biases;
  return (Size(embd) * (o.tied_output ? 1 : 2) + Size(o.layers) * layer + norm).get(what);
}

Result<Writer> synth_llama(const SynthOptions& o) {
  if (o.arch != "llama" && o.arch != "qwen2")
    return error(StatusCode::unsupported, "gguf-synth: architecture '", o.arch, "' (llama or qwen2)");
  const int64_t kv = o.kv_heads ? o.kv_heads : o.heads;
  if (o.dim < 1 || o.layers < 1 || o.heads < 1 || kv < 1 || o.ffn < 1 || o.context < 1)
    return error(StatusCode::invalid_argument, "gguf-synth: every size must be >= 1");
  if (o.dim % o.heads || o.heads % kv || (o.dim / o.heads) % 2)
    return error(StatusCode::invalid_argument, "gguf-synth: dim ", o.dim, " must split into ", o.heads,
                 " heads of even size, and heads into ", kv, " KV heads");
  if (o.vocab < kSpecialTokens + kByteTokens + 1)
    return error(StatusCode::invalid_argument, "gguf-synth: vocab must be at least ", kSpecialTokens + kByteTokens + 1,
                 " (specials and byte tokens)");
  if (dtype_is_block(o.type) && (o.dim % kQBlock || o.ffn % kQBlock))
    return error(StatusCode::invalid_argument, "gguf-synth: ", dtype_name(o.type), " needs dim and ffn that are multiples of ",
                 kQBlock);
  TS_ASSIGN_OR_RETURN(int64_t bytes, synth_weight_bytes(o));
  if (bytes > o.max_bytes)
    return error(StatusCode::out_of_memory, "gguf-synth: the weights need ", bytes, " bytes, more than the budget of ",
                 o.max_bytes, " (the file is built in memory)");
  const int64_t hd = o.dim / o.heads;
  Writer w;
  // Hyperparameters under the architecture's prefix, as llama.cpp writes them.
  const std::string k = o.arch + ".";
  w.set_string("general.architecture", o.arch);
  w.set_string("general.name", "tessera synthetic " + o.arch);
  w.set_u32(k + "context_length", static_cast<uint32_t>(o.context));
  w.set_u32(k + "embedding_length", static_cast<uint32_t>(o.dim));
  w.set_u32(k + "block_count", static_cast<uint32_t>(o.layers));
  w.set_u32(k + "feed_forward_length", static_cast<uint32_t>(o.ffn));
  w.set_u32(k + "attention.head_count", static_cast<uint32_t>(o.heads));
  w.set_u32(k + "attention.head_count_kv", static_cast<uint32_t>(kv));
  w.set_u32(k + "rope.dimension_count", static_cast<uint32_t>(hd));
  w.set_f32(k + "rope.freq_base", static_cast<float>(o.rope_base));
  w.set_f32(k + "attention.layer_norm_rms_epsilon", 1e-5f);
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;
  synth_vocab(o.vocab, tokens, scores, types);
  w.set_string("tokenizer.ggml.model", "llama");
  w.set_strings("tokenizer.ggml.tokens", tokens);
  w.set_f32s("tokenizer.ggml.scores", scores);
  w.set_i32s("tokenizer.ggml.token_type", types);
  w.set_u32("tokenizer.ggml.bos_token_id", 1);
  w.set_u32("tokenizer.ggml.eos_token_id", 2);
  w.set_u32("tokenizer.ggml.unknown_token_id", 0);

  std::mt19937_64 rng(o.seed);
  std::normal_distribution<float> normal(0.0f, kWeightStd);
  auto matrix = [&](const std::string& name, int64_t rows, int64_t cols, DType t) -> Status {
    std::vector<float> v(static_cast<size_t>(rows * cols));
    for (auto& x : v) x = normal(rng);
    TS_ASSIGN_OR_RETURN(auto bytes, encode_values(v, t));
    return w.add_tensor(name, {rows, cols}, t, std::move(bytes));
  };
  auto norm = [&](const std::string& name) -> Status {
    std::vector<float> v(static_cast<size_t>(o.dim));
    for (auto& x : v) x = 1.0f + normal(rng);
    TS_ASSIGN_OR_RETURN(auto bytes, encode_values(v, DType::f32));
    return w.add_tensor(name, {o.dim}, DType::f32, std::move(bytes));
  };
  auto vector = [&](const std::string& name, int64_t n) -> Status {
    std::vector<float> v(static_cast<size_t>(n));
    for (auto& x : v) x = normal(rng);
    TS_ASSIGN_OR_RETURN(auto bytes, encode_values(v, DType::f32));
    return w.add_tensor(name, {n}, DType::f32, std::move(bytes));
  };
  // Like llama.cpp's quantize: the embedding table follows the matrix type.
  TS_RETURN_IF_ERROR(matrix("token_embd.weight", o.vocab, o.dim, o.type));
  for (int64_t i = 0; i < o.layers; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    TS_RETURN_IF_ERROR(norm(b + "attn_norm.weight"));
    TS_RETURN_IF_ERROR(matrix(b + "attn_q.weight", o.dim, o.dim, o.type));
    TS_RETURN_IF_ERROR(matrix(b + "attn_k.weight", kv * hd, o.dim, o.type));
    TS_RETURN_IF_ERROR(matrix(b + "attn_v.weight", kv * hd, o.dim, o.type));
    if (o.arch == "qwen2") {  // q, k and v biases (f32, as llama.cpp's quantize keeps 1-D tensors)
      TS_RETURN_IF_ERROR(vector(b + "attn_q.bias", o.dim));
      TS_RETURN_IF_ERROR(vector(b + "attn_k.bias", kv * hd));
      TS_RETURN_IF_ERROR(vector(b + "attn_v.bias", kv * hd));
    }
    TS_RETURN_IF_ERROR(matrix(b + "attn_output.weight", o.dim, o.dim, o.type));
    TS_RETURN_IF_ERROR(norm(b + "ffn_norm.weight"));
    TS_RETURN_IF_ERROR(matrix(b + "ffn_gate.weight", o.ffn, o.dim, o.type));
    TS_RETURN_IF_ERROR(matrix(b + "ffn_up.weight", o.ffn, o.dim, o.type));
    TS_RETURN_IF_ERROR(matrix(b + "ffn_down.weight", o.dim, o.ffn, o.type));
  }
  TS_RETURN_IF_ERROR(norm("output_norm.weight"));
  if (!o.tied_output) TS_RETURN_IF_ERROR(matrix("output.weight", o.vocab, o.dim, o.type));
  return w;
}

}  // namespace tessera::gguf
