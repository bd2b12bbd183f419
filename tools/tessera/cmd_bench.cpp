// `tessera bench MODEL`: latency min/median/max over repeated runs, and a per-op profile.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <random>

#include "cli.h"

namespace tessera::cli {

void add_bench_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("bench", "Measure a model's latency (random seeded inputs) and per-op profile");
  struct Args {
    std::string model;
    int runs = 10;
    int warmup = 1;
    int top = 15;
    DeviceArgs dev;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("model", a->model, "Model file")->required();
  cmd->add_option("--runs,-r", a->runs, "Timed runs")->check(CLI::Range(1, 100000));
  cmd->add_option("--warmup", a->warmup, "Untimed warm-up runs")->check(CLI::Range(0, 1000));
  cmd->add_option("--top", a->top, "Ops to list in the profile")->check(CLI::Range(0, 100000));
  a->dev.add_to(cmd);
  auto llm_args = std::make_shared<GgufBenchArgs>();
  llm_args->add_to(cmd);
  cmd->callback([a, llm_args, cmd] {
    if (is_gguf_path(a->model)) return bench_gguf(a->model, a->dev, *llm_args, cmd->count("--runs") ? a->runs : 3);
    Graph g = take(load_model(a->model));
    auto session = take(Session::create(std::move(g), take(a->dev.session_options())));
    std::mt19937 rng(1234);
    for (size_t i = 0; i < session->graph().inputs.size(); ++i) {
      const Tensor& t = session->graph().tensor(session->graph().inputs[i]);
      std::vector<uint8_t> bytes(take(t.host_bytes()));
      if (t.dtype == DType::f32) {
        std::uniform_real_distribution<float> d(-1, 1);
        for (size_t k = 0; k + 4 <= bytes.size(); k += 4) {
          float v = d(rng);
          std::memcpy(&bytes[k], &v, 4);
        }
      } else {
        for (auto& b : bytes) b = static_cast<uint8_t>(rng());
      }
      take(session->set_input(i, bytes.data(), static_cast<int64_t>(bytes.size())));
    }
    for (int i = 0; i < a->warmup; ++i) take(session->run());
    std::vector<double> times, modelled;
    std::map<std::string, std::pair<double, double>> per_op;  // op -> (host, modelled)
    for (int i = 0; i < a->runs; ++i) {
      take(session->run());
      const RunProfile& p = session->profile();
      times.push_back(p.host_seconds);
      modelled.push_back(p.modelled_seconds);
      for (const auto& n : p.nodes) {
        auto& e = per_op[n.label + " @" + n.device];
        e.first += n.host_seconds / a->runs;
        e.second += n.modelled_seconds > 0 ? n.modelled_seconds / a->runs : 0;
      }
    }
    std::sort(times.begin(), times.end());
    std::sort(modelled.begin(), modelled.end());
    fmt::print("{} on {} ({} thread{}), {} runs\n", a->model, a->dev.device, a->dev.threads,
               a->dev.threads == 1 ? "" : "s", a->runs);
    fmt::print("host latency (measured): min {:.3f} ms, median {:.3f} ms, max {:.3f} ms\n", times.front() * 1e3,
               times[times.size() / 2] * 1e3, times.back() * 1e3);
    if (modelled.back() > 0)
      fmt::print("device time (modelled, not measured): median {:.3f} ms\n", modelled[modelled.size() / 2] * 1e3);
    // Device models with several cores: busy time per core in the last run.
    for (Device* d : session->devices()) {
      const auto& cores = d->counters().modelled_core_seconds;
      if (cores.empty()) continue;
      fmt::print("{} per core (modelled busy time, last run):", d->name());
      for (size_t c = 0; c < cores.size(); ++c) fmt::print(" core{} {:.3f} ms", c, cores[c] * 1e3);
      fmt::print("\n");
    }
    std::vector<std::pair<std::string, std::pair<double, double>>> ops(per_op.begin(), per_op.end());
    // Sorted by modelled time when the run was modelled, else by measured host time.
    const bool by_model = modelled.back() > 0;
    std::sort(ops.begin(), ops.end(), [by_model](auto& x, auto& y) {
      return by_model ? x.second.second > y.second.second : x.second.first > y.second.first;
    });
    fmt::print("per-op profile (mean per run, top {}):\n", a->top);
    for (int i = 0; i < a->top && i < static_cast<int>(ops.size()); ++i) {
      fmt::print("  {:>9.3f} ms", ops[i].second.first * 1e3);
      if (ops[i].second.second > 0) fmt::print("  {:>9.3f} ms modelled", ops[i].second.second * 1e3);
      fmt::print("  {}\n", ops[i].first);
    }
  });
}

}  // namespace tessera::cli
