// `tessera inspect MODEL`: ops, tensors, device placement and the memory plan.
#include <fmt/format.h>

#include "cli.h"

namespace tessera::cli {

void add_inspect_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("inspect", "Show a model's ops, tensors, device placement and memory plan");
  auto model = std::make_shared<std::string>();
  auto dev = std::make_shared<DeviceArgs>();
  auto brief = std::make_shared<bool>(false);
  cmd->add_option("model", *model, "Model file (.tflite or .gguf)")->required();
  cmd->add_flag("--brief", *brief, "Omit the per-tensor table");
  dev->add_to(cmd);
  cmd->callback([=] {
    if (is_gguf_path(*model)) print_gguf_summary(*model);
    Graph g = take(load_model(*model));
    fmt::print("model {}: {} tensors, {} nodes, {} inputs, {} outputs\n", *model, g.tensors().size(),
               g.nodes().size(), g.inputs.size(), g.outputs.size());
    for (TensorId id : g.inputs) {
      const Tensor& t = g.tensor(id);
      fmt::print("  input  '{}' {}{} {}\n", t.name, dtype_name(t.dtype), shape_str(t.shape), quant_str(t.quant));
    }
    for (TensorId id : g.outputs) {
      const Tensor& t = g.tensor(id);
      fmt::print("  output '{}' {}{} {}\n", t.name, dtype_name(t.dtype), shape_str(t.shape), quant_str(t.quant));
    }
    SessionOptions so = take(dev->session_options());
    auto session = take(Session::create(std::move(g), so));
    fmt::print("{}", session->plan().report(!*brief));
    const auto programs = session->program_summaries();
    if (!programs.empty()) {
      fmt::print("compiled programs:\n");
      for (const auto& line : programs) fmt::print("  {}\n", line);
    }
  });
}

}  // namespace tessera::cli
