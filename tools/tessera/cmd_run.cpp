// `tessera run MODEL --input FILE... --output PREFIX`: raw tensors in, raw tensors out.
#include <fmt/format.h>

#include <fstream>

#include "cli.h"
#include "core/file_io.h"

namespace tessera::cli {

void add_run_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("run", "Run a model on raw input tensors (the model's own dtypes, row-major)");
  struct Args {
    std::string model;
    std::vector<std::string> inputs;
    std::string output;
    DeviceArgs dev;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("model", a->model, "Model file")->required();
  cmd->add_option("--input,-i", a->inputs, "Raw input file, one per model input in order")->required();
  cmd->add_option("--output,-o", a->output, "Output prefix: writes PREFIX.<k>.bin per output")->required();
  a->dev.add_to(cmd);
  cmd->callback([a] {
    Graph g = take(load_model(a->model));
    if (a->inputs.size() != g.inputs.size())
      take(error(StatusCode::invalid_argument, "the model has ", g.inputs.size(), " inputs, got ", a->inputs.size(),
                 " --input files"));
    SessionOptions so = take(a->dev.session_options());
    so.progress = load_progress(a->model);
    auto session = take(Session::create(std::move(g), so));
    for (size_t i = 0; i < a->inputs.size(); ++i) {
      // Exactly the input tensor's bytes: a larger file (or an endless device) is refused
      // without reading more than one byte past the size.
      const Tensor& in = session->graph().tensor(session->graph().inputs[i]);
      const int64_t want = take(in.host_bytes());
      auto bytes = take(read_file_exact(a->inputs[i], want, "input file for '" + in.name + "'"));
      take(session->set_input(i, bytes.data(), static_cast<int64_t>(bytes.size()))
               .with_context("input file '" + a->inputs[i] + "'"));
    }
    take(session->run());
    for (size_t k = 0; k < session->graph().outputs.size(); ++k) {
      auto bytes = take(session->output(k));
      std::string path = a->output + "." + std::to_string(k) + ".bin";
      std::ofstream f(path, std::ios::binary);
      f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
      if (!f) take(error(StatusCode::io_error, "cannot write '", path, "'"));
      const Tensor& t = session->graph().tensor(session->graph().outputs[k]);
      fmt::print("wrote {} ({} {}, {} bytes)\n", path, dtype_name(t.dtype), shape_str(t.shape), bytes.size());
    }
  });
}

}  // namespace tessera::cli
