// `tessera inspect MODEL`: ops, tensors, device placement and the memory plan.
#include <fmt/format.h>

#include "cli.h"
#include "tessera/backend/plan.h"

namespace tessera::cli {

namespace {

void print_session(const Session& session, bool full) {
  fmt::print("{}", session.plan().report(full));
  const auto programs = session.program_summaries();
  if (!programs.empty()) {
    fmt::print("compiled programs:\n");
    for (const auto& line : programs) fmt::print("  {}\n", line);
  }
}

}  // namespace

void add_inspect_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("inspect", "Show a model's ops, tensors, device placement and memory plan");
  auto model = std::make_shared<std::string>();
  auto dev = std::make_shared<DeviceArgs>();
  auto brief = std::make_shared<bool>(false);
  auto offload = std::make_shared<std::string>();
  auto shapes = std::make_shared<std::vector<std::string>>();
  cmd->add_option("model", *model, "Model file (.tflite or .gguf)")->required();
  cmd->add_flag("--brief", *brief, "Omit the per-tensor table");
  cmd->add_option("--offload", *offload, "GGUF: layers on --device (N or 'all'), the rest on the cpu, as generate");
  cmd->add_option("--input-shape", *shapes, kInputShapeHelp);
  dev->add_to(cmd);
  cmd->callback([=] {
    if (is_gguf_path(*model) && !shapes->empty())
      take(error(StatusCode::invalid_argument, "--input-shape applies to TFLite models; '", *model, "' is not one"));
    if (is_gguf_path(*model)) {
      // The model as generate loads it (the same options): the per-layer placement, then
      // the decode step's plan.
      print_gguf_summary(*model);
      LanguageModelOptions lo = take(lm_options(*dev, *offload, 32));
      auto lm = take(LanguageModel::load(*model, lo));
      print_gguf_placement(*lm);
      const Graph& g = lm->decode_session().graph();
      fmt::print("decode step: {} tensors, {} nodes, {} inputs, {} outputs\n", g.tensors().size(), g.nodes().size(),
                 g.inputs.size(), g.outputs.size());
      print_session(lm->decode_session(), !*brief);
      return;
    }
    if (!offload->empty())
      take(error(StatusCode::invalid_argument, "--offload applies to GGUF models; '", *model, "' is not one"));
    std::vector<std::vector<int64_t>> dynamic_dims;
    Graph g = take(load_model(*model, *shapes, &dynamic_dims));
    fmt::print("model {}: {} tensors, {} nodes, {} inputs, {} outputs\n", *model, g.tensors().size(),
               g.nodes().size(), g.inputs.size(), g.outputs.size());
    for (size_t k = 0; k < g.inputs.size(); ++k) {
      const Tensor& t = g.tensor(g.inputs[k]);
      std::string dynamic;
      for (int64_t d : k < dynamic_dims.size() ? dynamic_dims[k] : std::vector<int64_t>{}) dynamic += (dynamic.empty() ? " dynamic dims " : ",") + std::to_string(d);
      if (!dynamic.empty()) dynamic += " (--input-shape)";
      fmt::print("  input  '{}' {}{} {}{}\n", t.name, dtype_name(t.dtype), shape_str(t.shape), quant_str(t.quant), dynamic);
    }
    for (TensorId id : g.outputs) {
      const Tensor& t = g.tensor(id);
      fmt::print("  output '{}' {}{} {}\n", t.name, dtype_name(t.dtype), shape_str(t.shape), quant_str(t.quant));
    }
    SessionOptions so = take(dev->session_options());
    auto session = take(Session::create(std::move(g), so));
    print_session(*session, !*brief);
  });
}

}  // namespace tessera::cli
