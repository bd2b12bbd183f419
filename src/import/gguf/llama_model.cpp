// The llama family (llama, qwen2, qwen3, gemma2, gemma3, phi3): hyperparameters from GGUF
// metadata and the step graph builder.
#include "import/gguf/llama_model.h"

#include <cmath>
#include <algorithm>
#include <cstring>
#include <limits>
#include <sstream>

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
  // Rows [first, first + rows) of a 2-D weight [R, C] as a weight of its own: a view of the
  // stored rows (whole blocks: a GGUF row is a whole number of blocks), no copy.
  Result<TensorId> weight_rows(const std::string& name, int64_t first, int64_t rows, const std::string& part) {
    const std::string view = name + "[" + part + "]";
    if (auto it = weights_.find(view); it != weights_.end()) return it->second;
    const TensorInfo* t = f_.find_tensor(name);
    if (!t) return error(StatusCode::not_found, f_.what(), ": weight '", name, "' is missing");
    if (t->shape.size() != 2 || first < 0 || rows < 1 || first + rows > t->shape[0])
      return error(StatusCode::invalid_argument, f_.what(), ": weight '", name, "' ", shape_str(t->shape),
                   " has no rows ", first, "..", first + rows - 1);
    TS_ASSIGN_OR_RETURN(int64_t row_bytes, dtype_row_bytes(t->dtype, t->shape[1]));
    Tensor w;
    w.name = view;
    w.shape = {rows, t->shape[1]};
    w.dtype = t->dtype;
    w.role = Role::weight;
    ConstData d = t->data;
    d.data += first * row_bytes;
    d.size = rows * row_bytes;
    w.data = d;
    TensorId id = g_.add_tensor(std::move(w));
    weights_[view] = id;
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

namespace {

// What each architecture adds to llama (llama_model.h).
struct ArchTraits {
  const char* name;
  bool neox, qkv_bias, qk_norm, post_norms, fused, gemma;
  int64_t swa_pattern;  // default attention.sliding_window_pattern (0: no sliding window)
};
constexpr ArchTraits kArchs[] = {
    {"llama", false, false, false, false, false, false, 0},
    {"qwen2", true, true, false, false, false, false, 0},
    {"qwen3", true, false, true, false, false, false, 0},
    {"gemma2", true, false, false, true, false, true, 2},
    {"gemma3", true, false, true, true, false, true, 6},
    {"phi3", true, false, false, false, true, false, 0},
};

}  // namespace

Result<LlamaParams> llama_params(const File& f) {
  TS_ASSIGN_OR_RETURN(std::string arch, f.get_string("general.architecture"));
  const ArchTraits* tr = nullptr;
  for (const ArchTraits& a : kArchs)
    if (arch == a.name) tr = &a;
  if (!tr)
    return error(StatusCode::unsupported, f.what(), ": general.architecture = '", arch,
                 "' is not supported (supported: ", kLlamaArchitectures, ")");
  LlamaParams p;
  p.arch = arch;
  // Hyperparameter keys are prefixed with the architecture ("llama.", "qwen3.", ...).
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
  p.rope_neox = tr->neox;
  p.qkv_bias = tr->qkv_bias;
  p.qk_norm = tr->qk_norm;
  p.post_norms = tr->post_norms;
  p.fused_qkv = p.fused_gate_up = tr->fused;
  p.gelu = tr->gemma;
  // RoPE scaling (linear, yarn, llama3 frequency factors) changes the rotation: refused
  // rather than silently ignored.
  if (const Value* v = f.find(key("rope.scaling.type")); v && v->s != "none")
    return error(StatusCode::unsupported, f.what(), ": ", key("rope.scaling.type"), " = '", v->s,
                 "' is not supported (only 'none')");
  for (const char* t : {"rope_freqs.weight", "rope_factors_long.weight", "rope_factors_short.weight"})
    if (f.find_tensor(t))
      return error(StatusCode::unsupported, f.what(), ": tensor '", t, "' (RoPE frequency factors) is not supported");
  if (p.heads % p.kv_heads != 0)
    return error(StatusCode::invalid_argument, f.what(), ": ", p.heads, " heads are not a multiple of ", p.kv_heads,
                 " KV heads");
  // The head size: attention.key_length where the file says it (Qwen3 and Gemma heads x
  // head size may differ from the width), else the width over the heads.
  if (f.find(key("attention.key_length"))) {
    TS_ASSIGN_OR_RETURN(p.head_dim, positive(f, key("attention.key_length"), 65536));
  } else {
    if (p.dim % p.heads != 0)
      return error(StatusCode::invalid_argument, f.what(), ": embedding_length ", p.dim, " is not a multiple of ",
                   p.heads, " heads (and ", key("attention.key_length"), " is absent)");
    p.head_dim = p.dim / p.heads;
  }
  if (p.head_dim % 2)
    return error(StatusCode::invalid_argument, f.what(), ": head size ", p.head_dim, " is odd");
  if (f.find(key("attention.value_length"))) {
    TS_ASSIGN_OR_RETURN(int64_t vl, positive(f, key("attention.value_length"), 65536));
    if (vl != p.head_dim)
      return error(StatusCode::unsupported, f.what(), ": ", key("attention.value_length"), " = ", vl,
                   " differs from the key length ", p.head_dim, " (not supported)");
  }
  p.rope_dims = f.get_int_or(key("rope.dimension_count"), p.head_dim);
  if (p.rope_dims < 2 || p.rope_dims > p.head_dim || p.rope_dims % 2)
    return error(StatusCode::invalid_argument, f.what(), ": ", key("rope.dimension_count"), " ", p.rope_dims,
                 " must be even and at most the head size ", p.head_dim);
  p.rope_base = f.get_float_or(key("rope.freq_base"), kDefaultRopeBase);
  p.rms_eps = f.get_float_or(key("attention.layer_norm_rms_epsilon"), kDefaultRmsEps);
  if (!(p.rope_base > 0) || !(p.rms_eps > 0) || !std::isfinite(p.rope_base) || !std::isfinite(p.rms_eps))
    return error(StatusCode::invalid_argument, f.what(), ": rope.freq_base and layer_norm_rms_epsilon must be > 0");
  // q is scaled by 1/sqrt(head size) before q.k. Gemma's 27B models scale by the width per
  // head instead (their published configuration; llama.cpp recognises them by layer count).
  p.attn_scale = 1.0 / std::sqrt(static_cast<double>(p.head_dim));
  if ((arch == "gemma2" && p.layers == 46) || (arch == "gemma3" && p.layers == 62))
    p.attn_scale = 1.0 / std::sqrt(static_cast<double>(p.dim / p.heads));
  if (tr->gemma) p.embed_scale = std::sqrt(static_cast<double>(p.dim));
  auto cap = [&](const char* k, double fallback) -> Result<double> {
    const double c = f.get_float_or(key(k), fallback);
    if (!(c >= 0) || !std::isfinite(c))
      return error(StatusCode::invalid_argument, f.what(), ": ", key(k), " = ", c, " must be >= 0");
    return c;
  };
  if (arch == "gemma2") {
    TS_ASSIGN_OR_RETURN(p.attn_softcap, cap("attn_logit_softcapping", 50.0));
    TS_ASSIGN_OR_RETURN(p.final_softcap, cap("final_logit_softcapping", 30.0));
  }
  // Sliding-window layers: layer i when i % P < P - 1 (P the pattern; 1 or 0: none / all
  // are windowed as llama.cpp reads it), or a per-layer list of bools.
  p.swa_layers.assign(static_cast<size_t>(p.layers), false);
  if (tr->swa_pattern > 0 && f.find(key("attention.sliding_window"))) {
    TS_ASSIGN_OR_RETURN(p.swa_window, positive(f, key("attention.sliding_window"), kMaxDim));
    const Value* pv = f.find(key("attention.sliding_window_pattern"));
    if (pv && pv->type == ValueType::array) {
      if (static_cast<int64_t>(pv->arr.size()) != p.layers)
        return error(StatusCode::invalid_argument, f.what(), ": ", key("attention.sliding_window_pattern"), " has ",
                     pv->arr.size(), " entries for ", p.layers, " layers");
      for (int64_t i = 0; i < p.layers; ++i) p.swa_layers[i] = pv->arr[i].as_int().value_or(0) != 0;
    } else {
      int64_t pattern = tr->swa_pattern;
      if (pv) {
        auto v = pv->as_int();
        if (!v || *v < 0 || *v > 4096)
          return error(StatusCode::invalid_argument, f.what(), ": ", key("attention.sliding_window_pattern"), " = ",
                       pv->to_string(), " is not a layer period in 0..4096");
        pattern = *v;
      }
      for (int64_t i = 0; i < p.layers; ++i) p.swa_layers[i] = pattern == 0 || i % pattern < pattern - 1;
    }
    if (std::none_of(p.swa_layers.begin(), p.swa_layers.end(), [](bool b) { return b; })) p.swa_window = 0;
  }
  p.rope_base_swa = p.rope_base;
  if (arch == "gemma3") {
    p.rope_base_swa = f.get_float_or(key("rope.freq_base_swa"), kDefaultRopeBase);
    if (!(p.rope_base_swa > 0) || !std::isfinite(p.rope_base_swa))
      return error(StatusCode::invalid_argument, f.what(), ": ", key("rope.freq_base_swa"), " must be > 0");
  }
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
    if (p.fused_qkv) {
      TS_RETURN_IF_ERROR(expect(blk(i, "attn_qkv"), {qd + 2 * kvd, p.dim}));
    } else {
      TS_RETURN_IF_ERROR(expect(blk(i, "attn_q"), {qd, p.dim}));
      TS_RETURN_IF_ERROR(expect(blk(i, "attn_k"), {kvd, p.dim}));
      TS_RETURN_IF_ERROR(expect(blk(i, "attn_v"), {kvd, p.dim}));
    }
    TS_RETURN_IF_ERROR(expect(blk(i, "attn_output"), {p.dim, qd}));
    TS_RETURN_IF_ERROR(expect(blk(i, "ffn_norm"), {p.dim}));
    if (p.fused_gate_up) {
      TS_RETURN_IF_ERROR(expect(blk(i, "ffn_up"), {2 * p.ffn, p.dim}));
    } else {
      TS_RETURN_IF_ERROR(expect(blk(i, "ffn_gate"), {p.ffn, p.dim}));
      TS_RETURN_IF_ERROR(expect(blk(i, "ffn_up"), {p.ffn, p.dim}));
    }
    TS_RETURN_IF_ERROR(expect(blk(i, "ffn_down"), {p.dim, p.ffn}));
    if (p.qkv_bias) {
      TS_RETURN_IF_ERROR(expect(bias(i, "attn_q"), {qd}));
      TS_RETURN_IF_ERROR(expect(bias(i, "attn_k"), {kvd}));
      TS_RETURN_IF_ERROR(expect(bias(i, "attn_v"), {kvd}));
    }
    if (p.qk_norm) {
      TS_RETURN_IF_ERROR(expect(blk(i, "attn_q_norm"), {p.head_dim}));
      TS_RETURN_IF_ERROR(expect(blk(i, "attn_k_norm"), {p.head_dim}));
    }
    if (p.post_norms) {
      TS_RETURN_IF_ERROR(expect(blk(i, "post_attention_norm"), {p.dim}));
      TS_RETURN_IF_ERROR(expect(blk(i, "post_ffw_norm"), {p.dim}));
    }
  }
  TS_RETURN_IF_ERROR(expect("output_norm.weight", {p.dim}));
  if (!p.tied_output) TS_RETURN_IF_ERROR(expect("output.weight", {p.vocab, p.dim}));
  return p;
}

std::string describe_features(const LlamaParams& p) {
  std::vector<std::string> f;
  auto num = [](double v) {
    std::ostringstream o;
    o << v;
    return o.str();
  };
  if (p.qkv_bias) f.push_back("q/k/v biases");
  if (p.qk_norm) f.push_back("q/k norms");
  if (p.fused_qkv) f.push_back("fused q/k/v");
  if (p.fused_gate_up) f.push_back("fused gate/up");
  if (p.post_norms) f.push_back("post-attention and post-FFN norms");
  if (p.embed_scale != 1.0) f.push_back("embeddings x " + num(p.embed_scale));
  if (p.swa_window > 0) {
    const auto n = std::count(p.swa_layers.begin(), p.swa_layers.end(), true);
    std::string s = "sliding window " + std::to_string(p.swa_window) + " on " + std::to_string(n) + " of " +
                    std::to_string(p.layers) + " layers";
    if (p.rope_base_swa != p.rope_base) s += " (rope base " + num(p.rope_base_swa) + ")";
    f.push_back(s);
  }
  if (p.attn_softcap > 0) f.push_back("attention soft-cap " + num(p.attn_softcap));
  if (p.final_softcap > 0) f.push_back("logit soft-cap " + num(p.final_softcap));
  if (p.gelu) f.push_back("GELU FFN");
  if (p.rope_neox) f.push_back("NEOX rope");
  std::string out;
  for (const auto& s : f) out += (out.empty() ? "" : ", ") + s;
  return out;
}

Result<std::unique_ptr<LlamaModel>> LlamaModel::load(File file) {
  TS_ASSIGN_OR_RETURN(LlamaParams p, llama_params(file));
  TS_ASSIGN_OR_RETURN(Tokenizer tok, Tokenizer::from_gguf(file));
  if (tok.vocab_size() != p.vocab)
    return error(StatusCode::invalid_argument, file.what(), ": the tokenizer has ", tok.vocab_size(),
                 " tokens but token_embd.weight has ", p.vocab, " rows");
  return std::unique_ptr<LlamaModel>(new LlamaModel(std::move(file), std::move(tok), p));
}

Result<std::unique_ptr<LlamaModel>> LlamaModel::open(const std::string& path, File::Load how,
                                                     const ProgressPart& progress) {
  TS_ASSIGN_OR_RETURN(File f, File::open(path, how, progress));
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
  const int64_t qd = H * hd, kvd = Hkv * hd;
  TensorId tokens = b.input("tokens", DType::i32, {T});
  TensorId pos = b.input("pos", DType::i32, {T});
  const bool any_masked = opts.attention_op_from > 0;
  TensorId mask = b.input("mask", DType::f32, {T, any_masked ? ctx : 1});
  TensorId kv_pos = b.input("kv_pos", DType::i32, {1});
  TensorId last = b.input("last", DType::i32, {1});
  TensorId mask_swa = kNoTensor;
  if (p.swa_window > 0) mask_swa = b.input("mask_swa", DType::f32, {T, any_masked ? ctx : 1});
  TensorId scale = b.constant_f32("attn_scale", static_cast<float>(p.attn_scale));
  auto rope_attrs = [&](bool swa) {
    return AttrMap{{"freq_base", swa ? p.rope_base_swa : p.rope_base},
                   {"mode", std::string(p.rope_neox ? "neox" : "normal")},
                   {"n_dims", p.rope_dims}};
  };
  const AttrMap norm_attrs = {{"eps", p.rms_eps}};
  AttrMap fc_attrs;
  if (round_inputs_) fc_attrs["input_rounding"] = std::string("q8_0");
  // c * tanh(x / c): Gemma 2's soft-capping of attention scores and logits.
  auto softcap = [&](TensorId x, double c, const std::string& name) -> Result<TensorId> {
    TensorId inv = b.constant_f32(name + "_inv", static_cast<float>(1.0 / c));
    TensorId cap = b.constant_f32(name + "_cap", static_cast<float>(c));
    TS_ASSIGN_OR_RETURN(x, b.op(OpKind::mul, {x, inv}, name + "_scaled"));
    TS_ASSIGN_OR_RETURN(x, b.op(OpKind::tanh, {x}, name + "_tanh"));
    return b.op(OpKind::mul, {x, cap}, name);
  };

  TS_ASSIGN_OR_RETURN(TensorId emb, b.weight("token_embd.weight"));
  TS_ASSIGN_OR_RETURN(TensorId x, b.op(OpKind::get_rows, {emb, tokens}, "token_embd"));
  if (p.embed_scale != 1.0) {
    TensorId es = b.constant_f32("embed_scale", static_cast<float>(p.embed_scale));
    TS_ASSIGN_OR_RETURN(x, b.op(OpKind::mul, {x, es}, "token_embd_scaled"));
  }
  for (int64_t i = 0; i < p.layers; ++i) {
    const std::string L = "blk." + std::to_string(i) + "/";
    const bool swa = p.swa_window > 0 && p.swa_layers[i];
    auto w = [&](const char* what) { return b.weight(blk(i, what)); };
    TS_ASSIGN_OR_RETURN(TensorId attn_norm, w("attn_norm"));
    TensorId wq, wk, wv, wg, wu;
    if (p.fused_qkv) {  // rows q | k | v of attn_qkv
      TS_ASSIGN_OR_RETURN(wq, b.weight_rows(blk(i, "attn_qkv"), 0, qd, "q"));
      TS_ASSIGN_OR_RETURN(wk, b.weight_rows(blk(i, "attn_qkv"), qd, kvd, "k"));
      TS_ASSIGN_OR_RETURN(wv, b.weight_rows(blk(i, "attn_qkv"), qd + kvd, kvd, "v"));
    } else {
      TS_ASSIGN_OR_RETURN(wq, w("attn_q"));
      TS_ASSIGN_OR_RETURN(wk, w("attn_k"));
      TS_ASSIGN_OR_RETURN(wv, w("attn_v"));
    }
    TS_ASSIGN_OR_RETURN(TensorId wo, w("attn_output"));
    TS_ASSIGN_OR_RETURN(TensorId ffn_norm, w("ffn_norm"));
    if (p.fused_gate_up) {  // rows gate | up of ffn_up
      TS_ASSIGN_OR_RETURN(wg, b.weight_rows(blk(i, "ffn_up"), 0, p.ffn, "gate"));
      TS_ASSIGN_OR_RETURN(wu, b.weight_rows(blk(i, "ffn_up"), p.ffn, p.ffn, "up"));
    } else {
      TS_ASSIGN_OR_RETURN(wg, w("ffn_gate"));
      TS_ASSIGN_OR_RETURN(wu, w("ffn_up"));
    }
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
    if (p.qk_norm) {  // each head normalised over its hd values
      TS_ASSIGN_OR_RETURN(TensorId qn, w("attn_q_norm"));
      TS_ASSIGN_OR_RETURN(TensorId kn, w("attn_k_norm"));
      TS_ASSIGN_OR_RETURN(q, b.op(OpKind::rms_norm, {q, qn}, L + "q_norm", norm_attrs));
      TS_ASSIGN_OR_RETURN(k, b.op(OpKind::rms_norm, {k, kn}, L + "k_norm", norm_attrs));
    }
    TS_ASSIGN_OR_RETURN(q, b.op(OpKind::rope, {q, pos}, L + "q_rope", rope_attrs(swa)));
    TS_ASSIGN_OR_RETURN(k, b.op(OpKind::rope, {k, pos}, L + "k_rope", rope_attrs(swa)));
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
      AttrMap attn_attrs;
      if (swa) attn_attrs["window"] = p.swa_window;
      if (p.attn_softcap > 0) attn_attrs["softcap"] = p.attn_softcap;
      TS_ASSIGN_OR_RETURN(o, b.op(OpKind::attention, {q, K, V, pos}, L + "attention", attn_attrs));
    } else {
      // Query head h = kv_head * G + g: [T, H, hd] -> [Hkv, G, T, hd], broadcast against [Hkv, 1, ctx, hd].
      TS_ASSIGN_OR_RETURN(q, b.reshape(q, {T, Hkv, G, hd}, L + "q_groups"));
      TS_ASSIGN_OR_RETURN(q, b.transpose(q, {1, 2, 0, 3}, L + "q_layout"));
      TS_ASSIGN_OR_RETURN(TensorId s, b.op(OpKind::matmul, {q, K}, L + "attn_scores", {{"transpose_b", int64_t{1}}}));
      if (p.attn_softcap > 0) {
        TS_ASSIGN_OR_RETURN(s, softcap(s, p.attn_softcap, L + "attn_softcap"));
      }
      TS_ASSIGN_OR_RETURN(s, b.op(OpKind::softmax, {s, swa ? mask_swa : mask}, L + "attn_softmax"));
      TS_ASSIGN_OR_RETURN(o, b.op(OpKind::matmul, {s, V}, L + "attn_values"));
      TS_ASSIGN_OR_RETURN(o, b.transpose(o, {2, 0, 1, 3}, L + "attn_heads"));
    }
    TS_ASSIGN_OR_RETURN(o, b.reshape(o, {T, qd}, L + "attn_concat"));
    TS_ASSIGN_OR_RETURN(o, b.op(OpKind::fully_connected, {o, wo}, L + "attn_output", fc_attrs));
    if (p.post_norms) {
      TS_ASSIGN_OR_RETURN(TensorId pn, w("post_attention_norm"));
      TS_ASSIGN_OR_RETURN(o, b.op(OpKind::rms_norm, {o, pn}, L + "post_attention_norm", norm_attrs));
    }
    TS_ASSIGN_OR_RETURN(x, b.op(OpKind::add, {x, o}, L + "attn_residual"));

    TS_ASSIGN_OR_RETURN(h, b.op(OpKind::rms_norm, {x, ffn_norm}, L + "ffn_norm", norm_attrs));
    TS_ASSIGN_OR_RETURN(TensorId gate, b.op(OpKind::fully_connected, {h, wg}, L + "ffn_gate", fc_attrs));
    TS_ASSIGN_OR_RETURN(TensorId up, b.op(OpKind::fully_connected, {h, wu}, L + "ffn_up", fc_attrs));
    if (p.gelu) {
      TS_ASSIGN_OR_RETURN(gate, b.op(OpKind::gelu, {gate}, L + "ffn_gelu", {{"approximate", int64_t{1}}}));
    } else {
      TS_ASSIGN_OR_RETURN(gate, b.op(OpKind::silu, {gate}, L + "ffn_silu"));
    }
    TS_ASSIGN_OR_RETURN(gate, b.op(OpKind::mul, {gate, up}, L + "ffn_gated"));
    TS_ASSIGN_OR_RETURN(TensorId down, b.op(OpKind::fully_connected, {gate, wd}, L + "ffn_down", fc_attrs));
    if (p.post_norms) {
      TS_ASSIGN_OR_RETURN(TensorId pn, w("post_ffw_norm"));
      TS_ASSIGN_OR_RETURN(down, b.op(OpKind::rms_norm, {down, pn}, L + "post_ffw_norm", norm_attrs));
    }
    TS_ASSIGN_OR_RETURN(x, b.op(OpKind::add, {x, down}, L + "ffn_residual"));
  }
  TS_ASSIGN_OR_RETURN(TensorId out_norm, b.weight("output_norm.weight"));
  TS_ASSIGN_OR_RETURN(x, b.op(OpKind::rms_norm, {x, out_norm}, "output_norm", norm_attrs));
  if (T > 1) {
    TS_ASSIGN_OR_RETURN(x, b.op(OpKind::get_rows, {x, last}, "last_token"));
  }
  TS_ASSIGN_OR_RETURN(TensorId out_w, b.weight(p.tied_output ? "token_embd.weight" : "output.weight"));
  TS_ASSIGN_OR_RETURN(TensorId logits, b.op(OpKind::fully_connected, {x, out_w}, "output", fc_attrs));
  if (p.final_softcap > 0) {
    TS_ASSIGN_OR_RETURN(logits, softcap(logits, p.final_softcap, "output_softcap"));
  }
  g.tensor(logits).name = "logits";
  g.tensor(logits).role = Role::output;
  g.outputs = {logits};
  TS_RETURN_IF_ERROR(g.validate().with_context(file_.what()));
  return g;
}

}  // namespace tessera::gguf
