#include <filesystem>

#include "cli.h"
#include "import/tflite/tflite_importer.h"
#include "tessera/model.h"

namespace tessera::cli {

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

Result<Graph> load_model(const std::string& path) {
  TS_ASSIGN_OR_RETURN(ModelFormat format, model_format(path));
  if (format == ModelFormat::tflite) return tflite::load_tflite_file(path);
  // The 1-token decode step graph of a llama model (docs/llm.md).
  TS_ASSIGN_OR_RETURN(std::shared_ptr<const Model> model, Model::load(path));
  return model->graph();
}

}  // namespace tessera::cli
