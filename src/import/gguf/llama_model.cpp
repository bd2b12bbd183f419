// The llama architecture: hyperparameters from GGUF metadata and the step graph builder.
#include "import/gguf/llama_model.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace tessera::gguf {

namespace {

constexpr double kDefaultRopeBase = 10000.0;  // llama.cpp: rope_freq_base default
constexpr double kDefaultRmsEps = 1e-5;       // llama.cpp: f_norm_rms_eps default for llama
constexpr int64_t kMaxDim = int64_t{1} << 20; // sanity bound on any one hyperparameter

Result<int64_t> positive(const File& f, const std::string& key, int64_t max = kMaxDim) {
  TS_ASSIGN_OR_RETURN(int64_t v, f.get_int(key));
  if (v < 1 || v > max)
    return error(StatusCode::invalid_argument, f.what(), ": ", key, " = ", v, " is outside 1..", max);
  return v;
}

// The names of a layer's weights.
std::string blk(int64_t i, const char* what) { return "blk." + std::to_string(i) + "." + what + ".weight"; }
std::string bias(int64_t i, const char* what) { return "blk." + std::to_string(i) + "." + what + ".bias"; }

// Graph building with error context: every op is named and added through add_op.
class Builder {
 public:
  Builder(const File& f, Graph& g) : f_(f), g_(g) {}

  Result<TensorId> weight(const std::string& name) {
    if (auto it = weights_.find(name); it != weights_.end()) return it->second;
    const TensorInfo* t = f_.find_tensor(name);
    if (!t) return error(StatusCode::not_found, f_.what(), ": weight '", name, "' is missing");
    Tensor w;
    w.name = name;
    w.shape = t->shape;
    w.dtype = t->dtype;
    w.role = Role::weight;
    w.data = t->data;
    TensorId id = g_.add_tensor(std::move(w));
    weights_[name] = id;
    return id;
  }
  TensorId constant_f32(const std::string& name, float v) {
    Tensor t;
    t.name = name;
    t.shape = {1};
    t.role = Role::weight;
    std::vector<uint8_t> b(4);
    std::memcpy(b.data(), &v, 4);
    t.data = ConstData::from_vector(std::move(b));
    return g_.add_tensor(std::move(t));
  }
  TensorId input(const std::string& name, DType dt, Shape s) {
    Tensor t;
    t.name = name;
    t.dtype = dt;
    t.shape = std::move(s);
    t.role = Role::input;
    TensorId id = g_.add_tensor(std::move(t));
    g_.inputs.push_back(id);
    return id;
  }
  TensorId state(const std::string& name, Shape s, DType dt) {
    Tensor t;
    t.name = name;
    t.dtype = dt;
    t.shape = std::move(s);
    t.role = Role::state;
    return g_.add_tensor(std::move(t));
  }
  Result<TensorId> op(OpKind k, std::vector<TensorId> in, std::string name, AttrMap attrs = {},
                      std::optional<DType> out_dtype = std::nullopt) {
    auto r = g_.add_op(k, std::move(in), std::move(attrs), name, out_dtype);
    if (!r.ok()) return r.status().with_context(f_.what() + ": building '" + name + "'");
    g_.tensor(*r).name = name;
    return *r;
  }
  Result<TensorId> reshape(TensorId x, Shape s, std::string name) {
    return op(OpKind::reshape, {x}, std::move(name), {{"shape", std::vector<int64_t>(s.begin(), s.end())}});
  }
  Result<TensorId> transpose(TensorId x, std::vector<int64_t> perm, std::string name) {
    return op(OpKind::transpose, {x}, std::move(name), {{"perm", perm}});
  }

 private:
  const File& f_;
  Graph& g_;
  std::map<std::string, TensorId> weights_;
};

}  // namespace

Result<LlamaParams> llama_params(const File& f) {
  TS_ASSIGN_OR_RETURN(std::string arch, f.get_string("general.architecture"));
  if (arch != "llama" && arch != "qwen2")
    return error(StatusCode::unsupported, f.what(), ": general.architecture = '", arch,
                 "' is not supported (supported: llama, qwen2)");
  LlamaParams p;
  p.arch = arch;
  // Hyperparameter keys are prefixed with the architecture ("llama.", "qwen2.").
  auto key = [&](const char* k) { return arch + "." + k; };
  TS_ASSIGN_OR_RETURN(p.dim, positive(f, key("embedding_length")));
  TS_ASSIGN_OR_RETURN(p.layers, positive(f, key("block_count"), 4096));
  TS_ASSIGN_OR_RETURN(p.heads, positive(f, key("attention.head_count"), 4096));
  TS_ASSIGN_OR_RETURN(p.ffn, positive(f, key("feed_forward_length")));
  TS_ASSIGN_OR_RETURN(p.context, positive(f, key("context_length"), kMaxDim));
  p.kv_heads = p.heads;
  if (f.find(key("attention.head_count_kv"))) {
    TS_ASSIGN_OR_RETURN(p.kv_heads, positive(f, key("attention.head_count_kv"), 4096));
  }
  // Qwen2 rotates NEOX pairs (i, i + n/2) and adds biases to q, k and v (llama.cpp's
  // LLM_ARCH_QWEN2); llama rotates adjacent pairs.
  p.rope_neox = arch == "qwen2";
  p.qkv_bias = arch == "qwen2";
  // RoPE scaling (linear, yarn, llama3 frequency factors) changes the rotation: refused
  // rather than silently ignored.
  if (const Value* v = f.find(key("rope.scaling.type")); v && v->s != "none")
    return error(StatusCode::unsupported, f.what(), ": ", key("rope.scaling.type"), " = '", v->s,
                 "' is not supported (only 'none')");
  if (f.find_tensor("rope_freqs.weight"))
    return error(StatusCode::unsupported, f.what(), ": tensor 'rope_freqs.weight' (RoPE frequency factors) is not supported");
  if (p.dim % p.heads != 0)
    return error(StatusCode::invalid_argument, f.what(), ": embedding_length ", p.dim, " is not a multiple of ",
                 p.heads, " heads");
  if (p.heads % p.kv_heads != 0)
    return error(StatusCode::invalid_argument, f.what(), ": ", p.heads, " heads are not a multiple of ", p.kv_heads,
                 " KV heads");
  p.head_dim = p.dim / p.heads;
  p.rope_dims = f.get_int_or(key("rope.dimension_count"), p.head_dim);
  if (p.rope_dims < 2 || p.rope_dims > p.head_dim || p.rope_dims % 2)
    return error(StatusCode::invalid_argument, f.what(), ": ", key("rope.dimension_count"), " ", p.rope_dims,
                 " must be even and at most the head size ", p.head_dim);
  p.rope_base = f.get_float_or(key("rope.freq_base"), kDefaultRopeBase);
  p.rms_eps = f.get_float_or(key("attention.layer_norm_rms_epsilon"), kDefaultRmsEps);
  if (!(p.rope_base > 0) || !(p.rms_eps > 0) || !std::isfinite(p.rope_base) || !std::isfinite(p.rms_eps))
    return error(StatusCode::invalid_argument, f.what(), ": rope.freq_base and layer_norm_rms_epsilon must be > 0");
  const TensorInfo* emb = f.find_tensor("token_embd.weight");
  if (!emb) return error(StatusCode::not_found, f.what(), ": weight 'token_embd.weight' is missing");
  if (emb->shape.size() != 2 || emb->shape[1] != p.dim)
    return error(StatusCode::invalid_argument, f.what(), ": token_embd.weight ", shape_str(emb->shape),
                 " should be [vocab, ", p.dim, "]");
  p.vocab = emb->shape[0];
  p.tied_output = f.find_tensor("output.weight") == nullptr;

  // Every weight: present, expected shape, a type the kernels take.
  auto expect = [&](const std::string& name, Shape want) -> Status {
    const TensorInfo* t = f.find_tensor(name);
    if (!t) return error(StatusCode::not_found, f.what(), ": weight '", name, "' is missing");
    if (t->shape != want)
      return error(StatusCode::invalid_argument, f.what(), ": weight '", name, "' is ", shape_str(t->shape),
                   ", expected ", shape_str(want));
    return Status::Ok();
  };
  const int64_t qd = p.heads * p.head_dim, kvd = p.kv_heads * p.head_dim;
  for (int64_t i = 0; i < p.layers; ++i) {
    TS_RETURN_IF_ERROR(expect(blk(i, "attn_norm"), {p.dim}));
    TS_RETURN_IF_ERROR(expect(blk(i, "attn_q"), {qd, p.dim}));
    TS_RETURN_IF_ERROR(expect(blk(i, "attn_k"), {kvd, p.dim}));
    TS_RETURN_IF_ERROR(expect(blk(i, "attn_v"), {kvd, p.dim}));
    TS_RETURN_IF_ERROR(expect(blk(i, "attn_output"), {p.dim, qd}));
    TS_RETURN_IF_ERROR(expect(blk(i, "ffn_norm"), {p.dim}));
    TS_RETURN_IF_ERROR(expect(blk(i, "ffn_gate"), {p.ffn, p.dim}));
    TS_RETURN_IF_ERROR(expect(blk(i, "ffn_up"), {p.ffn, p.dim}));
    TS_RETURN_IF_ERROR(expect(blk(i, "ffn_down"), {p.dim, p.ffn}));
    if (p.qkv_bias) {
      TS_RETURN_IF_ERROR(expect(bias(i, "attn_q"), {qd}));
      TS_RETURN_IF_ERROR(expect(bias(i, "attn_k"), {kvd}));
      TS_RETURN_IF_ERROR(expect(bias(i, "attn_v"), {kvd}));
    }
  }
  TS_RETURN_IF_ERROR(expect("output_norm.weight", {p.dim}));
  if (!p.tied_output) TS_RETURN_IF_ERROR(expect("output.weight", {p.vocab, p.dim}));
  return p;
}

Result<std::unique_ptr<LlamaModel>> LlamaModel::load(File file) {
  TS_ASSIGN_OR_RETURN(LlamaParams p, llama_params(file));
  TS_ASSIGN_OR_RETURN(Tokenizer tok, Tokenizer::from_gguf(file));
  if (tok.vocab_size() != p.vocab)
    return error(StatusCode::invalid_argument, file.what(), ": the tokenizer has ", tok.vocab_size(),
                 " tokens but token_embd.weight has ", p.vocab, " rows");
  return std::unique_ptr<LlamaModel>(new LlamaModel(std::move(file), std::move(tok), p));
}

Result<std::unique_ptr<LlamaModel>> LlamaModel::open(const std::string& path, File::Load how) {
  TS_ASSIGN_OR_RETURN(File f, File::open(path, how));
  return load(std::move(f));
}

Status LlamaModel::set_context(int64_t n) {
  if (n < 1 || n > kMaxDim)
    return error(StatusCode::invalid_argument, file_.what(), ": context size ", n, " is outside 1..", kMaxDim);
  ctx_ = n;
  return Status::Ok();
}

Result<Graph> LlamaModel::build_step(int64_t T, const llm::StepOptions& opts) const {
  const LlamaParams& p = p_;
  if (opts.attention_cache != DType::f16 && opts.attention_cache != DType::f32 && opts.attention_cache != DType::q8_0)
    return error(StatusCode::invalid_argument, "llama: KV cache type ", dtype_name(opts.attention_cache),
                 " is not supported (f16, f32, q8_0)");
  // q8_0 rows are whole 32-value blocks; only the attention op's layers use the type.
  if (opts.attention_cache == DType::q8_0 && p.head_dim % kQBlock != 0 && opts.attention_op_from < p.layers)
    return error(StatusCode::invalid_argument, "llama: a q8_0 KV cache needs a head size that is a multiple of 32; ",
                 "this model's is ", p.head_dim, " (use --kv-type f16)");
  const int64_t ctx = ctx_;
  if (T < 1 || T > ctx)
    return error(StatusCode::invalid_argument, "llama: step of ", T, " tokens outside 1..", ctx, " (context)");
  Graph g;
  Builder b(file_, g);
  const int64_t H = p.heads, Hkv = p.kv_heads, G = H / Hkv, hd = p.head_dim;
  TensorId tokens = b.input("tokens", DType::i32, {T});
  TensorId pos = b.input("pos", DType::i32, {T});
  const bool any_masked = opts.attention_op_from > 0;
  TensorId mask = b.input("mask", DType::f32, {T, any_masked ? ctx : 1});
  TensorId kv_pos = b.input("kv_pos", DType::i32, {1});
  TensorId last = b.input("last", DType::i32, {1});
  TensorId scale = b.constant_f32("attn_scale", static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd))));
  const AttrMap rope_attrs = {
      {"freq_base", p.rope_base}, {"mode", std::string(p.rope_neox ? "neox" : "normal")}, {"n_dims", p.rope_dims}};
  const AttrMap norm_attrs = {{"eps", p.rms_eps}};
  AttrMap fc_attrs;
  if (round_inputs_) fc_attrs["input_rounding"] = std::string("q8_0");

  TS_ASSIGN_OR_RETURN(TensorId emb, b.weight("token_embd.weight"));
  TS_ASSIGN_OR_RETURN(TensorId x, b.op(OpKind::get_rows, {emb, tokens}, "token_embd"));
  for (int64_t i = 0; i < p.layers; ++i) {
    const std::string L = "blk." + std::to_string(i) + "/";
    auto w = [&](const char* what) { return b.weight(blk(i, what)); };
    TS_ASSIGN_OR_RETURN(TensorId attn_norm, w("attn_norm"));
    TS_ASSIGN_OR_RETURN(TensorId wq, w("attn_q"));
    TS_ASSIGN_OR_RETURN(TensorId wk, w("attn_k"));
    TS_ASSIGN_OR_RETURN(TensorId wv, w("attn_v"));
    TS_ASSIGN_OR_RETURN(TensorId wo, w("attn_output"));
    TS_ASSIGN_OR_RETURN(TensorId ffn_norm, w("ffn_norm"));
    TS_ASSIGN_OR_RETURN(TensorId wg, w("ffn_gate"));
    TS_ASSIGN_OR_RETURN(TensorId wu, w("ffn_up"));
    TS_ASSIGN_OR_RETURN(TensorId wd, w("ffn_down"));
    // The KV cache of this layer: [Hkv, 1, ctx, hd], rows = positions.
    const bool fused = i >= opts.attention_op_from;
    const DType cache_t = fused ? opts.attention_cache : DType::f32;
    TensorId cache_k = b.state("cache_k." + std::to_string(i), {Hkv, 1, ctx, hd}, cache_t);
    TensorId cache_v = b.state("cache_v." + std::to_string(i), {Hkv, 1, ctx, hd}, cache_t);

    TS_ASSIGN_OR_RETURN(TensorId h, b.op(OpKind::rms_norm, {x, attn_norm}, L + "attn_norm", norm_attrs));
    // q / k / v projections, with the file's biases when the architecture has them.
    auto proj = [&](TensorId wt, const char* what) -> Result<TensorId> {
      std::vector<TensorId> in{h, wt};
      if (p.qkv_bias) {
        TS_ASSIGN_OR_RETURN(TensorId bt, b.weight(bias(i, what)));
        in.push_back(bt);
      }
      return b.op(OpKind::fully_connected, std::move(in), L + what, fc_attrs);
    };
    TS_ASSIGN_OR_RETURN(TensorId q, proj(wq, "attn_q"));
    TS_ASSIGN_OR_RETURN(TensorId k, proj(wk, "attn_k"));
    TS_ASSIGN_OR_RETURN(TensorId v, proj(wv, "attn_v"));
    TS_ASSIGN_OR_RETURN(q, b.reshape(q, {T, H, hd}, L + "q_heads"));
    TS_ASSIGN_OR_RETURN(k, b.reshape(k, {T, Hkv, hd}, L + "k_heads"));
    TS_ASSIGN_OR_RETURN(q, b.op(OpKind::rope, {q, pos}, L + "q_rope", rope_attrs));
    TS_ASSIGN_OR_RETURN(k, b.op(OpKind::rope, {k, pos}, L + "k_rope", rope_attrs));
    TS_ASSIGN_OR_RETURN(q, b.op(OpKind::mul, {q, scale}, L + "q_scaled"));
    // [T, Hkv, hd] -> [Hkv, 1, T, hd]: the cache's row layout.
    TS_ASSIGN_OR_RETURN(k, b.reshape(k, {T, Hkv, 1, hd}, L + "k_rows"));
    TS_ASSIGN_OR_RETURN(k, b.transpose(k, {1, 2, 0, 3}, L + "k_cache_layout"));
    TS_ASSIGN_OR_RETURN(v, b.reshape(v, {T, Hkv, 1, hd}, L + "v_rows"));
    TS_ASSIGN_OR_RETURN(v, b.transpose(v, {1, 2, 0, 3}, L + "v_cache_layout"));
    if (cache_t != DType::f32) {
      TS_ASSIGN_OR_RETURN(k, b.op(OpKind::cast, {k}, L + "k_cache_type", {}, cache_t));
      TS_ASSIGN_OR_RETURN(v, b.op(OpKind::cast, {v}, L + "v_cache_type", {}, cache_t));
    }
    TS_ASSIGN_OR_RETURN(TensorId K, b.op(OpKind::scatter_rows, {cache_k, k, kv_pos}, L + "cache_k_write"));
    TS_ASSIGN_OR_RETURN(TensorId V, b.op(OpKind::scatter_rows, {cache_v, v, kv_pos}, L + "cache_v_write"));
    TensorId o;
    if (fused) {
      TS_ASSIGN_OR_RETURN(o, b.op(OpKind::attention, {q, K, V, pos}, L + "attention"));
    } else {
      // Query head h = kv_head * G + g: [T, H, hd] -> [Hkv, G, T, hd], broadcast against [Hkv, 1, ctx, hd].
      TS_ASSIGN_OR_RETURN(q, b.reshape(q, {T, Hkv, G, hd}, L + "q_groups"));
      TS_ASSIGN_OR_RETURN(q, b.transpose(q, {1, 2, 0, 3}, L + "q_layout"));
      TS_ASSIGN_OR_RETURN(TensorId s, b.op(OpKind::matmul, {q, K}, L + "attn_scores", {{"transpose_b", int64_t{1}}}));
      TS_ASSIGN_OR_RETURN(s, b.op(OpKind::softmax, {s, mask}, L + "attn_softmax"));
      TS_ASSIGN_OR_RETURN(o, b.op(OpKind::matmul, {s, V}, L + "attn_values"));
      TS_ASSIGN_OR_RETURN(o, b.transpose(o, {2, 0, 1, 3}, L + "attn_heads"));
    }
    TS_ASSIGN_OR_RETURN(o, b.reshape(o, {T, H * hd}, L + "attn_concat"));
    TS_ASSIGN_OR_RETURN(o, b.op(OpKind::fully_connected, {o, wo}, L + "attn_output", fc_attrs));
    TS_ASSIGN_OR_RETURN(x, b.op(OpKind::add, {x, o}, L + "attn_residual"));

    TS_ASSIGN_OR_RETURN(h, b.op(OpKind::rms_norm, {x, ffn_norm}, L + "ffn_norm", norm_attrs));
    TS_ASSIGN_OR_RETURN(TensorId gate, b.op(OpKind::fully_connected, {h, wg}, L + "ffn_gate", fc_attrs));
    TS_ASSIGN_OR_RETURN(TensorId up, b.op(OpKind::fully_connected, {h, wu}, L + "ffn_up", fc_attrs));
    TS_ASSIGN_OR_RETURN(gate, b.op(OpKind::silu, {gate}, L + "ffn_silu"));
    TS_ASSIGN_OR_RETURN(gate, b.op(OpKind::mul, {gate, up}, L + "ffn_gated"));
    TS_ASSIGN_OR_RETURN(TensorId down, b.op(OpKind::fully_connected, {gate, wd}, L + "ffn_down", fc_attrs));
    TS_ASSIGN_OR_RETURN(x, b.op(OpKind::add, {x, down}, L + "ffn_residual"));
  }
  TS_ASSIGN_OR_RETURN(TensorId out_norm, b.weight("output_norm.weight"));
  TS_ASSIGN_OR_RETURN(x, b.op(OpKind::rms_norm, {x, out_norm}, "output_norm", norm_attrs));
  if (T > 1) {
    TS_ASSIGN_OR_RETURN(x, b.op(OpKind::get_rows, {x, last}, "last_token"));
  }
  TS_ASSIGN_OR_RETURN(TensorId out_w, b.weight(p.tied_output ? "token_embd.weight" : "output.weight"));
  TS_ASSIGN_OR_RETURN(TensorId logits, b.op(OpKind::fully_connected, {x, out_w}, "output", fc_attrs));
  g.tensor(logits).name = "logits";
  g.tensor(logits).role = Role::output;
  g.outputs = {logits};
  TS_RETURN_IF_ERROR(g.validate().with_context(file_.what()));
  return g;
}

}  // namespace tessera::gguf
