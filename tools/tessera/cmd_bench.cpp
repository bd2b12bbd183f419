// `tessera bench MODEL`: latency min/median/max over repeated runs, and a per-op profile.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <random>

#include "cli.h"

namespace tessera::cli {

namespace {

// Random seeded inputs (never all zeros) for every input of `s`.
void fill_random_inputs(Session& s) {
  std::mt19937 rng(1234);
  for (size_t i = 0; i < s.graph().inputs.size(); ++i) {
    const Tensor& t = s.graph().tensor(s.graph().inputs[i]);
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
    take(s.set_input(i, bytes.data(), static_cast<int64_t>(bytes.size())));
  }
}

// A multi-core device model's clock and per-core busy time, read between runs.
struct ModelClock {
  double clock = 0;
  std::vector<double> cores;
  int64_t dram_bytes = 0;
  static ModelClock read(const Device* d) {
    if (!d) return {};
    return {d->counters().modelled_clock_seconds, d->counters().modelled_core_seconds, d->counters().modelled_dram_bytes};
  }
  ModelClock since(const ModelClock& earlier) const {
    ModelClock r{clock - earlier.clock, cores, dram_bytes - earlier.dram_bytes};
    for (size_t c = 0; c < r.cores.size() && c < earlier.cores.size(); ++c) r.cores[c] -= earlier.cores[c];
    return r;
  }
  // Per core: busy ms per run (runs > 0), or the busy share of the clock (runs == 0).
  void print(const std::string& what, int runs) const {
    fmt::print("{}", what);
    for (size_t c = 0; c < cores.size(); ++c) {
      if (runs > 0) fmt::print(" core{} {:.3f} ms", c, cores[c] / runs * 1e3);
      else fmt::print(" core{} {:.0f}%", c, clock > 0 ? 100 * cores[c] / clock : 0.0);
    }
    fmt::print("\n");
  }
};

}  // namespace

void add_bench_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("bench", "Measure a model's latency (random seeded inputs) and per-op profile");
  struct Args {
    std::string model;
    int runs = 10;
    int warmup = 1;
    int top = 15;
    int streams = 1;
    std::vector<std::string> input_shapes;
    DeviceArgs dev;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("model", a->model, "Model file")->required();
  cmd->add_option("--runs,-r", a->runs, "Timed runs")->check(CLI::Range(1, 100000));
  cmd->add_option("--warmup", a->warmup, "Untimed warm-up runs")->check(CLI::Range(0, 1000));
  cmd->add_option("--top", a->top, "Ops to list in the profile")->check(CLI::Range(0, 100000));
  cmd->add_option("--streams", a->streams,
                  "Multi-core device models: then run N sessions at once (one scheduler entity each) and report the "
                  "modelled throughput against one stream")
      ->check(CLI::Range(1, 16));
  cmd->add_option("--input-shape", a->input_shapes, kInputShapeHelp);
  a->dev.add_to(cmd);
  auto llm_args = std::make_shared<GgufBenchArgs>();
  llm_args->add_to(cmd);
  cmd->callback([a, llm_args, cmd] {
    llm_args->threads_given = cmd->count("--threads") > 0;
    if (is_gguf_path(a->model) && !a->input_shapes.empty())
      take(error(StatusCode::invalid_argument, "--input-shape applies to TFLite models; '", a->model, "' is not one"));
    if (is_gguf_path(a->model)) return bench_gguf(a->model, a->dev, *llm_args, cmd->count("--runs") ? a->runs : 3);
    Graph g = take(load_model(a->model, a->input_shapes));
    const Graph copy = a->streams > 1 ? g : Graph{};
    SessionOptions so = take(a->dev.session_options());
    so.progress = load_progress(a->model);
    auto session = take(Session::create(std::move(g), so));
    fill_random_inputs(*session);
    // The device model with a clock shared by sessions the session runs on, if any.
    Device* model = nullptr;
    for (Device* d : session->devices())
      if (d->properties().shared_clock) model = d;
    if (a->streams > 1 && !model)
      take(error(StatusCode::invalid_argument,
                 "bench: --streams needs a device model whose sessions share a modelled clock over several cores "
                 "(rknpu); '", a->dev.device, "' has none"));
    for (int i = 0; i < a->warmup; ++i) take(session->run());
    const ModelClock before = ModelClock::read(model);
    std::vector<double> times, modelled;
    struct OpTime {
      double host = 0, modelled = 0, board = 0;  // measured; the device model's; the board cpu model's
    };
    std::map<std::string, OpTime> per_op;
    FrameTime frame;
    for (int i = 0; i < a->runs; ++i) {
      take(session->run());
      const RunProfile& p = session->profile();
      frame.add(p);
      times.push_back(p.host_seconds);
      modelled.push_back(p.modelled_seconds);
      for (const auto& n : p.nodes) {
        auto& e = per_op[n.label + " @" + n.device];
        e.host += n.host_seconds / a->runs;
        e.modelled += n.modelled_seconds > 0 ? n.modelled_seconds / a->runs : 0;
        e.board += n.board_seconds > 0 ? n.board_seconds / a->runs : 0;
      }
    }
    const ModelClock one = ModelClock::read(model).since(before);
    std::sort(times.begin(), times.end());
    std::sort(modelled.begin(), modelled.end());
    fmt::print("{} on {} ({} thread{}), {} runs\n", a->model, a->dev.device, a->dev.threads,
               a->dev.threads == 1 ? "" : "s", a->runs);
    fmt::print("host latency (measured): min {:.3f} ms, median {:.3f} ms, max {:.3f} ms\n", times.front() * 1e3,
               times[times.size() / 2] * 1e3, times.back() * 1e3);
    if (modelled.back() > 0) {
      fmt::print("device time (modelled, not measured): median {:.3f} ms\n", modelled[modelled.size() / 2] * 1e3);
      fmt::print("{}\n", frame.line(a->dev.device, a->dev.threads));
    }
    if (model) {
      one.print(model->name() + " per core (modelled busy time, mean per run):", a->runs);
      fmt::print("{} DRAM (modelled): {:.2f} MB per run, {:.2f} GB/s\n", model->name(), one.dram_bytes / 1e6 / a->runs,
                 one.clock > 0 ? one.dram_bytes / one.clock / 1e9 : 0.0);
    }
    if (a->streams > 1) {
      // N sessions on the same device, each its own scheduler entity, run round-robin as N
      // host threads would. Entities opened now start at the clock's end, so the window
      // [start, end of the last run] holds all of their work and only theirs (no warm-up:
      // modelled time has none).
      const ModelClock start = ModelClock::read(model);
      std::vector<std::unique_ptr<Session>> streams;
      for (int k = 0; k < a->streams; ++k) {
        streams.push_back(take(Session::create(copy, take(a->dev.session_options()), session.get())));
        fill_random_inputs(*streams.back());
      }
      std::vector<double> latency;
      for (int i = 0; i < a->runs; ++i)
        for (auto& s : streams) {
          take(s->run());
          latency.push_back(s->profile().modelled_seconds);
        }
      const ModelClock many = ModelClock::read(model).since(start);
      std::sort(latency.begin(), latency.end());
      const double rate1 = a->runs / one.clock, rate_n = double(a->runs) * a->streams / many.clock;
      fmt::print("{} streams (modelled, not measured): {:.1f} inferences/s, {:.2f}x one stream's {:.1f}/s in this run; "
                 "latency median {:.3f} ms, max {:.3f} ms\n",
                 a->streams, rate_n, rate_n / rate1, rate1, latency[latency.size() / 2] * 1e3, latency.back() * 1e3);
      many.print(fmt::format("{} streams per core (modelled busy share of the clock):", a->streams), 0);
      fmt::print("{} streams DRAM (modelled): {:.2f} GB/s\n",
                 a->streams, many.clock > 0 ? many.dram_bytes / many.clock / 1e9 : 0.0);
    }
    std::vector<std::pair<std::string, OpTime>> ops(per_op.begin(), per_op.end());
    // Sorted by modelled time (the device's, or the board cpu's for the cpu's nodes) when the
    // run was modelled, else by measured host time.
    const bool by_model = modelled.back() > 0;
    std::sort(ops.begin(), ops.end(), [by_model](auto& x, auto& y) {
      return by_model ? x.second.modelled + x.second.board > y.second.modelled + y.second.board
                      : x.second.host > y.second.host;
    });
    fmt::print("per-op profile (mean per run, top {}):\n", a->top);
    for (int i = 0; i < a->top && i < static_cast<int>(ops.size()); ++i) {
      fmt::print("  {:>9.3f} ms", ops[i].second.host * 1e3);
      if (ops[i].second.modelled > 0) fmt::print("  {:>9.3f} ms modelled", ops[i].second.modelled * 1e3);
      if (ops[i].second.board > 0) fmt::print("  {:>9.3f} ms modelled on the board's cpu", ops[i].second.board * 1e3);
      fmt::print("  {}\n", ops[i].first);
    }
  });
}

}  // namespace tessera::cli
