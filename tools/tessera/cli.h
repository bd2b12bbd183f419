// Shared pieces of the command-line tool: command registration, model loading, output.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "tessera/generate.h"
#include "tessera/backend/plan.h"
#include "tessera/graph.h"
#include "tessera/session.h"

namespace tessera::cli {

// Each command file adds one subcommand; main.cpp calls them in order.
void add_devices_command(CLI::App& app);
void add_inspect_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_demo_command(CLI::App& app);
void add_classify_command(CLI::App& app);
void add_segment_command(CLI::App& app);
void add_pose_command(CLI::App& app);
void add_detect_command(CLI::App& app);
void add_generate_command(CLI::App& app);
void add_score_command(CLI::App& app);
void add_chat_command(CLI::App& app);
void add_chat_template_command(CLI::App& app);
void add_tokenize_command(CLI::App& app);
void add_perplexity_command(CLI::App& app);
void add_gguf_synth_command(CLI::App& app);
void add_convert_command(CLI::App& app);
void add_quantize_command(CLI::App& app);
void add_serve_command(CLI::App& app);

// Thrown by command callbacks for a library error; main prints it and exits non-zero.
struct CommandFailed {
  Status status;
};
// Returns the value or throws CommandFailed (only the CLI turns errors into exit codes).
template <typename T>
T take(Result<T> r) {
  if (!r.ok()) throw CommandFailed{r.status()};
  return std::move(r).value();
}
inline void take(Status s) {
  if (!s.ok()) throw CommandFailed{s};
}

// Loads a model file (its format from tessera::model_format) into a Graph: a .gguf file's
// is its 1-token decode step. `input_shapes` ("NAME=D0,D1,..." or "INDEX=..."): TFLite
// inputs with dynamic dims loaded at those shapes (--input-shape).
// `dynamic_dims` (if given) receives, per input, the dims the file leaves dynamic.
// `labels`, when given, gets the class names a TFLite file carries (Model::labels).
Result<Graph> load_model(const std::string& path, const std::vector<std::string>& input_shapes = {},
                         std::vector<std::vector<int64_t>>* dynamic_dims = nullptr,
                         std::vector<std::string>* labels = nullptr);
// The help of --input-shape (run, inspect, bench).
inline constexpr const char* kInputShapeHelp =
    "NAME=D0,D1,... or INDEX=D0,D1,...: load a TFLite input whose dims the file leaves dynamic (shape_signature -1) "
    "at this shape (repeatable)";

// How a command shows the progress of loading `what` (a model file) on stderr, as a
// ProgressFn: on a terminal, one line with the percentage rewritten in place; elsewhere
// (a pipe, a log file) nothing, or a line at each 20% where `log` is set (serve) or the
// environment has TESSERA_PROGRESS=1; TESSERA_PROGRESS=0 turns it off everywhere.
// The last report (100%) ends the line with the seconds taken.
ProgressFn load_progress(const std::string& what, bool log = false);
// Ends a terminal's progress line left open by a load that failed (before its error).
void end_progress_line();

// A frame on a device model (rknpu) counted whole: the device's modelled time, plus the
// cpu's share -- the ops that fell back to the cpu, the transfers (layout conversions
// between the device's formats and the host's) and the inputs' and outputs' conversions --
// modelled on one core of the board's cpu when the device names it (RunProfile::board_cpu:
// the RK3588's Cortex-A76, tessera/cpu_model.h), and also measured on this host, which is
// not the board (both said in the line). Sums over the runs given.
struct FrameTime {
  double device_seconds = 0;    // modelled
  double cpu_seconds = 0;       // measured: nodes on the cpu device
  double transfer_seconds = 0;  // measured: transfer nodes
  double board_cpu_seconds = 0;       // modelled on the board's cpu: nodes on the cpu device
  double board_transfer_seconds = 0;  // modelled on the board's cpu: transfer nodes
  double board_io_seconds = 0;        // modelled on the board's cpu: inputs' and outputs' conversions
  std::string board_cpu;             // the board cpu model's name; empty: not modelled
  int64_t transfers = 0;
  int runs = 0;
  void add(const RunProfile& p);
  bool modelled() const { return device_seconds > 0; }
  // "frame time T ms = rknpu N ms (modelled) + cpu ops C ms + K transfers X ms + input/output
  // conversions Y ms (the cpu's share modelled on ...; measured on this host, ...: cpu ops c
  // ms, transfers x ms) -> F frames/s on 1 core, ... as 3 streams on 3 cores" (per run).
  std::string line(const std::string& device, int threads, int cores = 3) const;
  // The same per decode step: "X tokens/s = Y ms per token: NPU ... (modelled) + cpu ops ...".
  std::string token_line(const std::string& device, int threads) const;
  // The means per run (transfers stay the sum over the runs).
  FrameTime per_run() const;
};

// Options shared by commands that run a model on a device.
struct DeviceArgs {
  std::string device = "cpu";
  int threads = 1;
  std::vector<std::string> device_opts;  // KEY=VALUE
  void add_to(CLI::App* cmd);
  Result<SessionOptions> session_options() const;
};

// The ../shared folder the binary was built beside, if present (for demos).
std::string shared_dir();

// GGUF (gguf_cli.cpp): inspect's GGUF section and bench's prompt/generation speeds.
// A file tessera::model_format takes for GGUF.
bool is_gguf_path(const std::string& path);
// The start-up summary of generate and chat on stderr, as llama.cpp users expect: arch,
// parameters, tensor types with counts, vocabulary, context used / trained, KV cache size.
void print_model_summary(const LanguageModel& lm, const std::string& kv_type);
void print_gguf_summary(const std::string& path);
// "offloaded N/M layers to DEVICE ..." (generate's summary, inspect), and inspect's
// per-layer table of where the decode step's ops run and why some stay on the cpu.
std::string offload_line(const LanguageModelPlacement& placement);
void print_gguf_placement(const LanguageModel& lm);
// The help of --mmap (generate, chat, bench on a GGUF file).
inline constexpr const char* kMmapHelp =
    "Memory-map the GGUF file (pages come in on first use, page cache shared with other processes) instead of "
    "reading it into transparent huge pages, which decode reads faster";
struct GgufBenchArgs {
  int prompt_tokens = 512;   // -p: test ppN
  int gen_tokens = 128;      // -n: test tgN
  int64_t depth = 0;         // tokens in the cache before each test
  int64_t batch = 512;       // prompt tokens per step
  int64_t ctx = 0;           // 0: pp + tg + depth
  bool threads_given = false;  // -t given: that count only; else 1 and 2
  std::string kv_type = "f16";  // KV cache of cpu layers: f16, f32 or q8_0
  std::string offload;  // --offload N|all
  bool mmap = false;     // --mmap: map the file instead of reading it into huge pages
  void add_to(CLI::App* cmd);
};
void bench_gguf(const std::string& path, const DeviceArgs& dev, const GgufBenchArgs& args, int runs);
// LanguageModel options from the device flags, `--offload N|all` ("" = the partitioner
// decides), --batch, --kv-type ("f16", "f32" or "q8_0": the cache of the layers on the
// cpu) and --mmap.
Result<LanguageModelOptions> lm_options(const DeviceArgs& dev, const std::string& offload, int64_t batch,
                                        const std::string& kv_type = "f16", bool mmap = false);
// The sampling flags of generate and chat (--temp, --top-k, --top-p, --repeat-penalty,
// --repeat-last-n, --seed), written into `go` (defaults: GenerateOptions's).
void add_sampler_options(CLI::App* cmd, GenerateOptions& go);

}  // namespace tessera::cli
