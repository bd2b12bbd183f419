// GGUF pieces of `inspect` and `bench`: the file's metadata and tensors, and LLM speed
// (prompt processing and generation tokens per second).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <random>

#include "cli.h"
#include "import/gguf/llama_model.h"
#include "runtime/llm/generator.h"

namespace tessera::cli {

namespace {
// `--offload N|all`: the number of layers (capped at `layers`), or -1 when not given.
Result<int64_t> parse_offload(const std::string& text, int64_t layers) {
  if (text.empty()) return int64_t{-1};
  if (text == "all") return layers;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (!end || *end || v < 0)
    return error(StatusCode::invalid_argument, "--offload takes a number of layers or 'all', got '", text, "'");
  return std::min<int64_t>(v, layers);
}

}  // namespace

Result<llm::GeneratorOptions> generator_options(const DeviceArgs& dev, const std::string& offload, int64_t layers,
                                                int64_t batch) {
  llm::GeneratorOptions go;
  TS_ASSIGN_OR_RETURN(go.session, dev.session_options());
  TS_ASSIGN_OR_RETURN(go.offload_layers, parse_offload(offload, layers));
  go.batch = batch;
  return go;
}

bool is_gguf_path(const std::string& path) { return std::filesystem::path(path).extension() == ".gguf"; }

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
    fmt::print("llama: dim {}, {} layers, {} heads ({} KV, head size {}), ffn {}, vocab {}, context {}, rope base {}, "
               "rms eps {}{}\n",
               p->dim, p->layers, p->heads, p->kv_heads, p->head_dim, p->ffn, p->vocab, p->context, p->rope_base,
               p->rms_eps, p->tied_output ? ", tied output" : "");
  else
    fmt::print("not loadable as a llama model: {}\n", p.status().to_string());
  fmt::print("the graph below is the 1-token decode step; the KV cache is its state\n");
}

void GgufBenchArgs::add_to(CLI::App* cmd) {
  cmd->add_option("--pp", prompt_tokens, "GGUF: prompt tokens per measurement")->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--tg", gen_tokens, "GGUF: generated tokens per measurement")->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--offload", offload, "GGUF: layers on --device (N or 'all'), the rest on the cpu");
}

void bench_gguf(const std::string& path, const DeviceArgs& dev, const GgufBenchArgs& args, int runs) {
  auto model = take(gguf::LlamaModel::open(path));
  const gguf::LlamaParams& p = model->params();
  int64_t ctx = model->context_length();
  int64_t pp = std::min<int64_t>(args.prompt_tokens, ctx - 1);
  int64_t tg = std::min<int64_t>(args.gen_tokens, ctx - pp);
  std::map<std::string, int64_t> bytes_by_type;
  int64_t total = 0;
  for (const auto& t : model->file().tensors()) {
    bytes_by_type[dtype_name(t.dtype)] += t.bytes;
    total += t.bytes;
  }
  std::string types;
  for (const auto& [t, b] : bytes_by_type) types += fmt::format("{}{} {:.1f} MB", types.empty() ? "" : ", ", t, b / 1e6);
  fmt::print("{}: llama, dim {}, {} layers, {} heads, ffn {}, vocab {}, context {}; weights {:.1f} MB ({})\n", path,
             p.dim, p.layers, p.heads, p.ffn, p.vocab, ctx, total / 1e6, types);
  fmt::print("device {}, prompt {} tokens (batches of 32), generation {} tokens, median of {} runs\n", dev.device, pp, tg,
             runs);
  fmt::print("{:>8}  {:>22}  {:>22}\n", "threads", "prompt tokens/s", "generation tokens/s");
  std::mt19937 rng(1234);
  std::uniform_int_distribution<int32_t> pick(3, static_cast<int32_t>(p.vocab) - 1);
  std::vector<int32_t> prompt(static_cast<size_t>(pp));
  for (auto& t : prompt) t = pick(rng);
  for (int threads : {1, 2}) {
    DeviceArgs d = dev;
    d.threads = threads;
    auto gen = take(llm::Generator::create(*model, take(generator_options(d, args.offload, p.layers, 32))));
    std::vector<double> pp_rate, tg_rate;
    for (int r = 0; r < runs + 1; ++r) {  // the first run warms up (page faults, caches)
      gen->reset();
      auto t0 = std::chrono::steady_clock::now();
      auto logits = take(gen->feed(prompt));
      double pp_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      int32_t next = pick(rng);
      auto t1 = std::chrono::steady_clock::now();
      for (int64_t i = 0; i < tg; ++i) take(gen->step(next));
      double tg_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
      if (r == 0) continue;
      pp_rate.push_back(pp / pp_s);
      tg_rate.push_back(tg / tg_s);
    }
    std::sort(pp_rate.begin(), pp_rate.end());
    std::sort(tg_rate.begin(), tg_rate.end());
    fmt::print("{:>8}  {:>22.2f}  {:>22.2f}\n", threads, pp_rate[pp_rate.size() / 2], tg_rate[tg_rate.size() / 2]);
    // Where a decode step spends its time, by op kind (the last step of the last run).
    std::map<std::string, double> by_op;
    double step_total = 0;
    for (const auto& n : gen->decode_session().profile().nodes) {
      by_op[n.label.substr(0, n.label.find(' ')) + " @" + n.device] += n.host_seconds;
      step_total += n.host_seconds;
    }
    std::vector<std::pair<double, std::string>> top;
    for (const auto& [op, s] : by_op) top.push_back({s, op});
    std::sort(top.rbegin(), top.rend());
    std::string line;
    for (size_t i = 0; i < top.size() && i < 4; ++i)
      line += fmt::format("{}{} {:.1f}%", i ? ", " : "", top[i].second, 100 * top[i].first / std::max(step_total, 1e-12));
    fmt::print("{:>8}  decode step {:.2f} ms: {}\n", "", step_total * 1e3, line);
  }
}

}  // namespace tessera::cli
