#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "cli.h"
#include "import/tflite/tflite_importer.h"
#include "tessera/cpu_model.h"
#include "tessera/model.h"
#include "tessera/backend/plan.h"

namespace tessera::cli {

namespace {
std::atomic<bool> g_progress_line_open{false};  // a live progress line without its newline
}  // namespace

void end_progress_line() {
  if (g_progress_line_open.exchange(false)) std::fputc('\n', stderr);
}

void FrameTime::add(const RunProfile& p) {
  device_seconds += p.modelled_seconds;
  if (!p.board_cpu.empty()) board_cpu = p.board_cpu;
  board_io_seconds += p.board_io_seconds;
  for (const auto& n : p.nodes) {
    const double board = std::max(n.board_seconds, 0.0);
    if (n.label.rfind("transfer", 0) == 0) {
      transfer_seconds += n.host_seconds;
      board_transfer_seconds += board;
      ++transfers;
    } else if (n.device == "cpu") {
      cpu_seconds += n.host_seconds;
      board_cpu_seconds += board;
    }
  }
  ++runs;
}

FrameTime FrameTime::per_run() const {
  const double r = std::max(runs, 1);
  FrameTime m = *this;
  m.device_seconds /= r, m.cpu_seconds /= r, m.transfer_seconds /= r;
  m.board_cpu_seconds /= r, m.board_transfer_seconds /= r, m.board_io_seconds /= r;
  m.runs = 1;
  return m;
}

namespace {

// "N ms (modelled) + cpu ops C ms + K transfers X ms [+ input/output conversions Y ms] (...)"
// and the per-run total it sums to: the cpu's share modelled on the board's cpu where the
// device names one, else as measured on this host.
std::pair<double, std::string> cpu_share(const FrameTime& m, const std::string& device, int transfers, int threads) {
  const std::string measured = fmt::format("{} thread{}", threads, threads == 1 ? "" : "s");
  const CpuCoreModel* board = m.board_cpu.empty() ? nullptr : find_cpu_core_model(m.board_cpu);
  if (!board) {
    const double total = m.device_seconds + m.cpu_seconds + m.transfer_seconds;
    return {total, fmt::format("{} {:.3f} ms (modelled) + cpu ops {:.3f} ms + {} transfers {:.3f} ms (measured on this "
                               "host, {}; the board's cpu is not modelled)",
                               device, m.device_seconds * 1e3, m.cpu_seconds * 1e3, transfers, m.transfer_seconds * 1e3,
                               measured)};
  }
  const double total = m.device_seconds + m.board_cpu_seconds + m.board_transfer_seconds + m.board_io_seconds;
  return {total, fmt::format("{} {:.3f} ms (modelled) + cpu ops {:.3f} ms + {} transfers {:.3f} ms + input/output "
                             "conversions {:.3f} ms (the cpu's share modelled on {}; measured on this host, {}: cpu ops "
                             "{:.3f} ms, transfers {:.3f} ms)",
                             device, m.device_seconds * 1e3, m.board_cpu_seconds * 1e3, transfers,
                             m.board_transfer_seconds * 1e3, m.board_io_seconds * 1e3, board->description, measured,
                             m.cpu_seconds * 1e3, m.transfer_seconds * 1e3)};
}

}  // namespace

std::string FrameTime::line(const std::string& device, int threads, int cores) const {
  const FrameTime m = per_run();
  const auto [frame, parts] = cpu_share(m, device, static_cast<int>(transfers / std::max(runs, 1)), threads);
  // Streams: each on an NPU core of its own with its cpu share on a cpu core of its own
  // (the RK3588 has four Cortex-A76 cores), so they do not wait for each other.
  return fmt::format("frame time {:.3f} ms = {} -> {:.1f} frames/s on 1 core, {:.1f} frames/s as {} streams on {} cores",
                     frame * 1e3, parts, frame > 0 ? 1.0 / frame : 0.0, frame > 0 ? cores / frame : 0.0, cores, cores);
}

std::string FrameTime::token_line(const std::string& device, int threads) const {
  const FrameTime m = per_run();
  const auto [step, parts] = cpu_share(m, device, static_cast<int>(transfers / std::max(runs, 1)), threads);
  return fmt::format("{:.2f} tokens/s = {:.3f} ms per token: {}", step > 0 ? 1.0 / step : 0.0, step * 1e3, parts);
}

ProgressFn load_progress(const std::string& what, bool log) {
  const char* env = std::getenv("TESSERA_PROGRESS");
  const std::string mode = env ? env : "";
  if (mode == "0") return nullptr;
  const bool live = isatty(STDERR_FILENO) && mode != "1";
  if (!live && !log && mode != "1") return nullptr;
  struct State {
    std::string what;
    bool live;
    int shown = -1;  // percent last printed
    std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now(), last;
  };
  auto st = std::make_shared<State>();
  st->what = std::filesystem::path(what).filename().string();
  st->live = live;
  return [st](double f) {
    const int pct = static_cast<int>(std::floor(std::clamp(f, 0.0, 1.0) * 100.0));
    const auto now = std::chrono::steady_clock::now();
    if (pct == 100) {
      if (st->shown == 100) return true;
      st->shown = 100;
      const double s = std::chrono::duration<double>(now - st->t0).count();
      std::fprintf(stderr, "%sloading %s: 100%% (%.2f s)\n", st->live ? "\r" : "", st->what.c_str(), s);
      g_progress_line_open = false;
      std::fflush(stderr);
      return true;
    }
    if (st->live) {
      if (pct == st->shown || now - st->last < std::chrono::milliseconds(100)) return true;
      std::fprintf(stderr, "\rloading %s: %d%%", st->what.c_str(), pct);
      g_progress_line_open = true;
    } else {
      if (pct / 20 == st->shown / 20 && st->shown >= 0) return true;
      std::fprintf(stderr, "loading %s: %d%%\n", st->what.c_str(), pct / 20 * 20);
    }
    std::fflush(stderr);
    st->shown = pct;
    st->last = now;
    return true;
  };
}

void DeviceArgs::add_to(CLI::App* cmd) {
  cmd->add_option("--device,-d", device, "Device to run on: cpu, or NAME[:PRESET] (see `tessera devices`)");
  cmd->add_option("--threads,-t", threads, "CPU threads")->check(CLI::Range(1, 256));
  cmd->add_option("--device-opt", device_opts, "Device option KEY=VALUE (repeatable)");
}

Result<SessionOptions> DeviceArgs::session_options() const {
  SessionOptions o;
  o.device = device;
  o.device_options["threads"] = std::to_string(threads);
  for (const auto& kv : device_opts) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      return error(StatusCode::invalid_argument, "--device-opt expects KEY=VALUE, got '", kv, "'");
    o.device_options[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return o;
}

std::string shared_dir() {
  std::filesystem::path p(TESSERA_SHARED_DIR);
  std::error_code ec;
  return std::filesystem::is_directory(p, ec) ? std::filesystem::canonical(p, ec).string() : std::string();
}

Result<Graph> load_model(const std::string& path, const std::vector<std::string>& input_shapes,
                         std::vector<std::vector<int64_t>>* dynamic_dims, std::vector<std::string>* labels) {
  TS_ASSIGN_OR_RETURN(ModelFormat format, model_format(path));
  tflite::ImportOptions opts;
  for (const std::string& spec : input_shapes) {
    auto o = tflite::parse_input_shape(spec);
    if (!o.ok()) return o.status().with_context("--input-shape");
    opts.input_shapes.push_back(std::move(*o));
  }
  if (format == ModelFormat::tflite) {
    tflite::ImportReport report;
    auto g = tflite::load_tflite_file(path, opts, &report);
    if (!g.ok() && !input_shapes.empty()) return g.status().with_context("--input-shape");
    if (dynamic_dims) *dynamic_dims = std::move(report.dynamic_dims);
    if (labels) *labels = std::move(report.labels);
    return g;
  }
  if (!input_shapes.empty())
    return error(StatusCode::invalid_argument, "--input-shape applies to TFLite models; '", path, "' is not one");
  // The 1-token decode step graph of a llama model (docs/llm.md).
  TS_ASSIGN_OR_RETURN(std::shared_ptr<const Model> model, Model::load(path));
  return model->graph();
}

}  // namespace tessera::cli
