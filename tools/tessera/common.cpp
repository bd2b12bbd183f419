#include <filesystem>

#include "cli.h"
#include "import/gguf/llama_model.h"
#include "import/tflite/tflite_importer.h"

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
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st))
    return error(StatusCode::not_found, "model file '", path, "' does not exist");
  if (std::filesystem::is_directory(st))
    return error(StatusCode::invalid_argument, "model file '", path, "' is a directory");
  std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".tflite") return tflite::load_tflite_file(path);
  if (ext == ".gguf") {  // the 1-token decode step graph of a llama model (docs/llm.md)
    TS_ASSIGN_OR_RETURN(auto llama, gguf::LlamaModel::open(path));
    return llama->build_step(1);
  }
  return error(StatusCode::unsupported, "model '", path, "': no importer for '", ext, "' files");
}

}  // namespace tessera::cli
