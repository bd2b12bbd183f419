// GGUF pieces of the CLI: `inspect`'s listing of the file's metadata and tensors, the
// LLM commands' shared flags and model summary, and `bench`'s LLM speed (prompt processing
// and generation tokens per second). The LLM itself is a tessera::LanguageModel.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <random>

#include "cli.h"
#include "import/gguf/llama_model.h"  // inspect's listing of a GGUF file (print_gguf_summary)
#include "tessera/model.h"
#include "tessera/backend/plan.h"

namespace tessera::cli {

namespace {
// `--offload N|all`: the number of layers (LanguageModel caps it at the model's), or -1
// when not given.
Result<int64_t> parse_offload(const std::string& text) {
  if (text.empty()) return int64_t{-1};
  if (text == "all") return kOffloadAllLayers;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (!end || *end || v < 0)
    return error(StatusCode::invalid_argument, "--offload takes a number of layers or 'all', got '", text, "'");
  return static_cast<int64_t>(v);
}

}  // namespace

void add_sampler_options(CLI::App* cmd, GenerateOptions& go) {
  cmd->add_option("--temp", go.temperature, "Temperature; 0 = greedy (default)");
  cmd->add_option("--top-k", go.top_k, "Keep the K most likely tokens (temperature > 0; <= 0 keeps all)");
  cmd->add_option("--top-p", go.top_p, "Keep the smallest set with probability >= P (temperature > 0)");
  cmd->add_option("--repeat-penalty", go.repeat_penalty, "Penalty > 1 for tokens among the last --repeat-last-n");
  cmd->add_option("--repeat-last-n", go.repeat_last_n, "Tokens the repeat penalty looks back over");
  cmd->add_option("--seed,-s", go.seed, "Random seed for sampling");
}

Result<LanguageModelOptions> lm_options(const DeviceArgs& dev, const std::string& offload, int64_t batch,
                                        const std::string& kv_type, bool mmap) {
  LanguageModelOptions lo;
  if (kv_type != "f16" && kv_type != "f32" && kv_type != "q8_0")
    return error(StatusCode::invalid_argument, "--kv-type takes f16, f32 or q8_0, got '", kv_type, "'");
  lo.kv_type = kv_type == "f16" ? DType::f16 : kv_type == "f32" ? DType::f32 : DType::q8_0;
  TS_ASSIGN_OR_RETURN(lo.session, dev.session_options());
  TS_ASSIGN_OR_RETURN(lo.offload_layers, parse_offload(offload));
  lo.batch = batch;
  lo.mmap = mmap;
  return lo;
}

bool is_gguf_path(const std::string& path) {
  auto f = model_format(path);
  return f.ok() && *f == ModelFormat::gguf;
}

void print_gguf_summary(const std::string& path) {
  gguf::File f = take(gguf::File::open(path));
  fmt::print("GGUF version {}, {} metadata keys, {} tensors, alignment {}, data at byte {} of {}\n", f.version(),
             f.metadata().size(), f.tensors().size(), f.alignment(), f.data_offset(), f.file_size());
  fmt::print("metadata:\n");
  for (const auto& [key, v] : f.metadata()) fmt::print("  {:<42} {}\n", key, v.to_string());
  fmt::print("tensors (name, type, shape, bytes, offset in data):\n");
  std::map<std::string, std::pair<int, int64_t>> per_type;
  for (const auto& t : f.tensors()) {
    fmt::print("  {:<32} {:<5} {:<14} {:>11} {:>11}\n", t.name, dtype_name(t.dtype), shape_str(t.shape), t.bytes,
               t.offset);
    auto& e = per_type[dtype_name(t.dtype)];
    e.first++;
    e.second += t.bytes;
  }
  fmt::print("by type:");
  for (const auto& [type, e] : per_type) fmt::print(" {} x{} ({:.2f} MB)", type, e.first, e.second / 1e6);
  fmt::print("\n");
  auto p = gguf::llama_params(f);
  if (p.ok())
    fmt::print("{}: dim {}, {} layers, {} heads ({} KV, head size {}), ffn {}, vocab {}, context {}, rope base {}, "
               "rms eps {}{}\n",
               p->arch, p->dim, p->layers, p->heads, p->kv_heads, p->head_dim, p->ffn, p->vocab, p->context, p->rope_base,
               p->rms_eps, p->tied_output ? ", tied output" : "");
  if (p.ok() && !gguf::describe_features(*p).empty()) fmt::print("  {}\n", gguf::describe_features(*p));
  else
    fmt::print("not loadable as a llama model: {}\n", p.status().to_string());
  fmt::print("the plan below is the 1-token decode step as generate loads it; the KV cache is its state\n");
}

namespace {

// general.file_type: llama.cpp's llama_ftype numbers, the name users know a file by.
std::string file_type_name(int64_t ft) {
  static const std::map<int64_t, const char*> kNames = {
      {0, "F32"},     {1, "F16"},     {2, "Q4_0"},    {3, "Q4_1"},    {7, "Q8_0"},    {8, "Q5_0"},
      {9, "Q5_1"},    {10, "Q2_K"},   {11, "Q3_K_S"}, {12, "Q3_K_M"}, {13, "Q3_K_L"}, {14, "Q4_K_S"},
      {15, "Q4_K_M"}, {16, "Q5_K_S"}, {17, "Q5_K_M"}, {18, "Q6_K"},   {32, "BF16"},
  };
  auto it = kNames.find(ft);
  return it == kNames.end() ? fmt::format("type {}", ft) : it->second;
}

}  // namespace

void print_model_summary(const LanguageModel& lm, const std::string& kv_type) {
  const LanguageModelInfo& p = lm.info();
  std::map<std::string, int> count_by_type;
  int64_t params = 0, bytes = 0;
  for (const auto& t : p.tensors) {
    count_by_type[dtype_name(t.dtype)]++;
    params += num_elements(t.shape);
    bytes += t.bytes;
  }
  std::string types;
  for (const auto& [type, n] : count_by_type) types += fmt::format("{}{} x{}", types.empty() ? "" : ", ", type, n);
  fmt::print(stderr, "model: {}{}\n", p.file, p.name ? fmt::format(" ('{}')", *p.name) : "");
  fmt::print(stderr, "  arch {}, {} layers, dim {}, {} heads ({} KV, head size {}), ffn {}, rope base {}{}\n",
             p.architecture, p.layers, p.dim, p.heads, p.kv_heads, p.head_dim, p.ffn, p.rope_base,
             p.tied_output ? ", tied output" : "");
  if (!p.features.empty()) fmt::print(stderr, "  {}\n", p.features);
  const double mparams = params / 1e6;
  fmt::print(stderr, "  {} parameters, {:.2f} MiB{}; tensors: {}\n",
             mparams >= 1000 ? fmt::format("{:.2f} B", mparams / 1e3) : fmt::format("{:.2f} M", mparams),
             bytes / 1048576.0, p.file_type >= 0 ? fmt::format(", file type {}", file_type_name(p.file_type)) : "",
             types);
  fmt::print(stderr, "  vocab {} ({}), BOS {}{}, EOS {}\n", p.vocab,
             p.byte_level_bpe ? "byte-level BPE" : "SentencePiece", p.bos, p.add_bos ? " (added)" : " (not added)",
             p.eos);
  fmt::print(stderr, "  context {} used / {} trained, KV cache {:.2f} MiB ({} bytes, {})\n", lm.context_length(),
             p.trained_context, lm.kv_cache_bytes() / 1048576.0, lm.kv_cache_bytes(), kv_type);
  const LanguageModelPlacement pl = lm.placement();
  if (pl.device != "cpu")
    fmt::print(stderr, "  {} (`tessera inspect MODEL --device {}` shows which and why)\n", offload_line(pl), pl.device);
}

std::string offload_line(const LanguageModelPlacement& pl) {
  int64_t nodes = 0, on_device = 0;
  for (const auto& part : pl.parts) {
    nodes += part.nodes;
    on_device += part.on_device;
  }
  return fmt::format("offloaded {}/{} layers to {} (output matrix on {}); {} of {} decode ops on {}, the rest on the cpu",
                     pl.offloaded_layers, pl.layers, pl.device, pl.output_offloaded ? pl.device : "the cpu", on_device,
                     nodes, pl.device);
}

void print_gguf_placement(const LanguageModel& lm) {
  const LanguageModelPlacement pl = lm.placement();
  fmt::print("placement of the 1-token decode step on {} (the prompt step's is alike):\n", pl.device);
  if (pl.device == "cpu") {
    fmt::print("  every op on the cpu\n");
    return;
  }
  fmt::print("  {}\n", offload_line(pl));
  fmt::print("  {:<8} {:>10} {:>15} {:>10}  {}\n", "layer", "ops", "matmuls", "transfers", "on the cpu (op x nodes: why)");
  for (const auto& part : pl.parts) {
    std::string cpu;
    for (const auto& c : part.on_cpu)
      cpu += fmt::format("{}{} x{}: {}", cpu.empty() ? "" : "; ", c.op, c.count, c.reason);
    fmt::print("  {:<8} {:>10} {:>15} {:>10}  {}\n", part.layer >= 0 ? fmt::format("{}", part.layer) : "other",
               fmt::format("{}/{}", part.on_device, part.nodes), fmt::format("{}/{}", part.matmuls_on_device, part.matmuls),
               part.transfers, cpu.empty() ? "-" : cpu);
  }
}

void GgufBenchArgs::add_to(CLI::App* cmd) {
  cmd->add_option("--pp,-p", prompt_tokens, "GGUF: prompt tokens of the ppN test (0 skips it)")
      ->check(CLI::Range(0, 1 << 20));
  cmd->add_option("--tg,-n", gen_tokens, "GGUF: generated tokens of the tgN test (0 skips it)")
      ->check(CLI::Range(0, 1 << 20));
  cmd->add_option("--depth", depth, "GGUF: tokens already in the KV cache when each test starts (llama-bench -d)")
      ->check(CLI::Range(0, 1 << 20));
  cmd->add_option("--batch,-b", batch, "GGUF: prompt tokens per step")->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--ctx-size,-c", ctx, "GGUF: context size (default: pp + tg + depth, as llama-bench sizes it)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--offload", offload, "GGUF: layers on --device (N or 'all'), the rest on the cpu");
  cmd->add_option("--kv-type", kv_type, "GGUF: KV cache type of the cpu layers, f16 (default), f32 or q8_0");
  cmd->add_flag("--mmap", mmap, std::string("GGUF: ") + kMmapHelp);
}

namespace {

struct Rate {
  double mean = 0, sd = 0;
};
Rate rate_of(const std::vector<double>& v) {
  Rate r;
  for (double x : v) r.mean += x / v.size();
  for (double x : v) r.sd += (x - r.mean) * (x - r.mean) / std::max<size_t>(v.size() - 1, 1);
  r.sd = std::sqrt(r.sd);
  return r;
}

// " 9.60 ms: fully_connected @cpu 91.8%, ...": the last run of a session by op kind.
std::string where_time_goes(const Session& s) {
  std::map<std::string, double> by_op;
  double total = 0;
  for (const auto& n : s.profile().nodes) {
    by_op[n.label.substr(0, n.label.find(' ')) + " @" + n.device] += n.host_seconds;
    total += n.host_seconds;
  }
  std::vector<std::pair<double, std::string>> top;
  for (const auto& [op, t] : by_op) top.push_back({t, op});
  std::sort(top.rbegin(), top.rend());
  std::string line = fmt::format(" {:.2f} ms:", total * 1e3);
  for (size_t i = 0; i < top.size() && i < 4; ++i)
    line += fmt::format("{} {} {:.1f}%", i ? "," : "", top[i].second, 100 * top[i].first / std::max(total, 1e-12));
  return line;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

// Like llama-bench: test ppN feeds N prompt tokens into an empty cache (after `depth`
// untimed tokens), test tgN then generates N tokens one at a time from the same depth;
// each test is repeated `runs` times after one warm-up and reported as mean +- sd tokens/s.
void bench_gguf(const std::string& path, const DeviceArgs& dev, const GgufBenchArgs& args, int runs) {
  const int64_t pp = args.prompt_tokens, tg = args.gen_tokens, depth = args.depth;
  std::vector<int> thread_counts = args.threads_given ? std::vector<int>{dev.threads} : std::vector<int>{1, 2};
  auto options_for = [&](int threads) {
    DeviceArgs d = dev;
    d.threads = threads;
    LanguageModelOptions lo = take(lm_options(d, args.offload, args.batch, args.kv_type, args.mmap));
    lo.context = args.ctx > 0 ? args.ctx : std::max<int64_t>(pp + tg + depth, 1);
    return lo;
  };
  // The first thread count's model; the others fork it (the weights are loaded once).
  std::unique_ptr<LanguageModel> lm = take(LanguageModel::load(path, options_for(thread_counts[0])));
  const LanguageModelInfo& p = lm->info();
  const int64_t ctx = lm->context_length();
  if (depth + std::max<int64_t>(pp, tg) > ctx)
    take(error(StatusCode::out_of_range, "bench: depth ", depth, " + ", std::max<int64_t>(pp, tg),
               " tokens exceed the context of ", ctx));
  std::map<std::string, int64_t> bytes_by_type;
  int64_t total = 0, params = 0;
  for (const auto& t : p.tensors) {
    bytes_by_type[dtype_name(t.dtype)] += t.bytes;
    total += t.bytes;
    params += num_elements(t.shape);
  }
  std::string types;
  for (const auto& [t, b] : bytes_by_type) types += fmt::format("{}{} {:.1f} MiB", types.empty() ? "" : ", ", t, b / 1048576.0);
  fmt::print("{}: llama, dim {}, {} layers, {} heads, ffn {}, vocab {}; {:.1f} M parameters, {:.1f} MiB ({})\n", path,
             p.dim, p.layers, p.heads, p.ffn, p.vocab, params / 1e6, total / 1048576.0, types);
  std::mt19937 rng(1234);
  std::uniform_int_distribution<int32_t> pick(3, static_cast<int32_t>(p.vocab) - 1);
  auto random_ids = [&](int64_t n) {
    std::vector<int32_t> v(static_cast<size_t>(n));
    for (auto& t : v) t = pick(rng);
    return v;
  };
  const std::vector<int32_t> prompt = random_ids(pp), prefix = random_ids(depth);
  fmt::print("device {}, context {}, depth {}, {} runs after a warm-up\n", dev.device, ctx, depth, runs);
  fmt::print("| {:>7} | {:>7} | {:>10} | {:>11} | {:>20} |\n", "threads", "n_batch", "KV MiB", "test", "t/s");
  fmt::print("| {:->7} | {:->7} | {:->10} | {:->11} | {:->20} |\n", "", "", "", "", "");
  std::vector<std::string> summary;
  for (size_t k = 0; k < thread_counts.size(); ++k) {
    const int threads = thread_counts[k];
    if (k > 0) lm = take(lm->fork(options_for(threads)));
    auto to_depth = [&] {
      lm->reset();
      if (depth > 0) take(lm->feed(prefix));
    };
    auto row = [&](const std::string& test, const std::vector<double>& v) {
      const Rate r = rate_of(v);
      fmt::print("| {:>7} | {:>7} | {:>10.1f} | {:>11} | {:>20} |\n", threads, std::min(args.batch, ctx),
                 lm->kv_cache_bytes() / 1048576.0, test, fmt::format("{:.2f} ± {:.2f}", r.mean, r.sd));
      return r.mean;
    };
    std::string line = fmt::format("threads {}:", threads);
    // Device models: the modelled device time of the whole test (every device of the
    // sessions, which the prompt and decode sessions share).
    auto modelled_now = [&]() {
      double m = 0;
      bool any = false;
      for (const Device* dv : lm->decode_session().devices())
        if (dv->properties().is_model) m += dv->counters().modelled_seconds, any = true;
      return any ? m : -1.0;
    };
    std::vector<std::string> modelled_lines;
    auto modelled_row = [&](const std::string& test, int64_t tokens, const std::vector<double>& secs) {
      if (secs.empty() || secs[0] < 0) return;
      double sum = 0;
      for (double x : secs) sum += x;
      const double per = sum / static_cast<double>(secs.size());
      modelled_lines.push_back(fmt::format("{} (modelled, not measured): {:.2f} tokens/s, {:.2f} ms of device time per token",
                                           test, per > 0 ? tokens / per : 0.0, per / tokens * 1e3));
    };
    if (pp > 0) {
      std::vector<double> v, mv;
      for (int r = 0; r < runs + 1; ++r) {
        to_depth();
        const double m0 = modelled_now();
        auto t0 = std::chrono::steady_clock::now();
        take(lm->feed(prompt));
        if (r > 0) v.push_back(pp / seconds_since(t0));
        if (r > 0) mv.push_back(m0 < 0 ? -1.0 : modelled_now() - m0);
      }
      modelled_row(fmt::format("pp{}", pp), pp, mv);
      line += fmt::format(" prompt tokens/s {:.2f}", row(fmt::format("pp{}", pp) + (depth ? fmt::format(" @ d{}", depth) : ""), v));
      if (pp >= args.batch && lm->prompt_session()) line += "; prompt step" + where_time_goes(*lm->prompt_session());
    }
    if (tg > 0) {
      std::vector<double> v, mv;
      FrameTime per_token;  // device models: each decode step's NPU time and cpu share
      for (int r = 0; r < runs + 1; ++r) {
        to_depth();
        int32_t next = pick(rng);
        const double m0 = modelled_now();
        auto t0 = std::chrono::steady_clock::now();
        for (int64_t i = 0; i < tg; ++i) {
          take(lm->decode(next));
          if (r > 0 && m0 >= 0) per_token.add(lm->decode_session().profile());
        }
        if (r > 0) v.push_back(tg / seconds_since(t0));
        if (r > 0) mv.push_back(m0 < 0 ? -1.0 : modelled_now() - m0);
      }
      modelled_row(fmt::format("tg{}", tg), tg, mv);
      if (per_token.modelled())
        modelled_lines.push_back(fmt::format("tg{} with the cpu's share: {}", tg, per_token.token_line(lm->decode_session().devices()[0]->name(), threads)));
      line += fmt::format(", generation tokens/s {:.2f}", row(fmt::format("tg{}", tg) + (depth ? fmt::format(" @ d{}", depth) : ""), v));
      line += "; decode step" + where_time_goes(lm->decode_session());
    }
    summary.push_back(line);
    for (auto& l : modelled_lines) summary.push_back("  " + l);
    if (!modelled_lines.empty())
      summary.push_back("  (modelled: the device model's time for the NPU's register streams only; the line with the "
                        "cpu's share adds the ops between them (norms, RoPE, attention, SiLU) and the conversions, "
                        "modelled on the board's cpu where the device names one, with the times measured on this host "
                        "beside them)");
  }
  for (const auto& l : summary) fmt::print("{}\n", l);
}

}  // namespace tessera::cli
