// `tessera run MODEL --input FILE... --output PREFIX`: raw tensors in, raw tensors out.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "cli.h"
#include "core/file_io.h"

namespace tessera::cli {

namespace {

// An input file of another size than its input, along the one dim the file leaves
// dynamic: the shape that size gives (as ONNX Runtime runs at the shape of the given
// input), for a reload with --input-shape. Nothing when the sizes agree, the input has no
// dynamic dim, or the file is not a regular file (reading it reports what is wrong);
// an error when the size fits no such shape, naming the input, the dim and the option.
Result<std::optional<std::string>> shape_from_file(const Tensor& in, const std::vector<int64_t>& dynamic, size_t index,
                                                   const std::string& path, const std::vector<std::string>& given) {
  std::error_code ec;
  if (dynamic.empty() || !std::filesystem::is_regular_file(path, ec)) return std::optional<std::string>{};
  const auto size = std::filesystem::file_size(path, ec);
  TS_ASSIGN_OR_RETURN(const int64_t want, in.host_bytes());
  // (An empty file is left to the read, which says it has 0 bytes.)
  if (ec || size == 0 || static_cast<int64_t>(size) == want) return std::optional<std::string>{};
  std::string dims;
  for (int64_t d : dynamic) dims += (dims.empty() ? "" : ",") + std::to_string(d);
  const std::string where = fmt::format("input file '{}' for input {} '{}' {} {}: {} bytes, the input needs {}", path,
                                        index, in.name, dtype_name(in.dtype), shape_str(in.shape), size, want);
  const std::string named = in.name + "=", by_index = std::to_string(index) + "=";
  for (const std::string& g : given)
    if (g.rfind(named, 0) == 0 || g.rfind(by_index, 0) == 0)
      return error(StatusCode::invalid_argument, where, " (the shape --input-shape gives it)");
  if (dynamic.size() != 1)
    return error(StatusCode::invalid_argument, where, "; its dims ", dims,
                 " are dynamic: give its shape with --input-shape ", in.name, "=D0,D1,...");
  const size_t d = static_cast<size_t>(dynamic[0]);
  const int64_t per = want / std::max<int64_t>(in.shape[d], 1);  // bytes per step of the dynamic dim
  if (per <= 0 || static_cast<int64_t>(size) % per != 0 ||
      static_cast<int64_t>(size) / per > std::numeric_limits<int32_t>::max())
    return error(StatusCode::invalid_argument, where, "; dim ", d, " is dynamic but ", size,
                 " bytes are no whole number of its ", per, "-byte steps (or use --input-shape ", in.name, "=D0,D1,...)");
  Shape s = in.shape;
  s[d] = static_cast<int64_t>(size) / per;
  std::string spec = in.name + "=";
  for (size_t k = 0; k < s.size(); ++k) spec += (k ? "," : "") + std::to_string(s[k]);
  return std::optional<std::string>{spec};
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("run", "Run a model on raw input tensors (the model's own dtypes, row-major)");
  struct Args {
    std::string model;
    std::vector<std::string> inputs;
    std::string output;
    std::vector<std::string> input_shapes;
    DeviceArgs dev;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("model", a->model, "Model file")->required();
  cmd->add_option("--input,-i", a->inputs, "Raw input file, one per model input in order")->required();
  cmd->add_option("--output,-o", a->output, "Output prefix: writes PREFIX.<k>.bin per output")->required();
  cmd->add_option("--input-shape", a->input_shapes,
                  std::string(kInputShapeHelp) + "; without it an input file of another size along the input's one "
                  "dynamic dim sets that dim");
  a->dev.add_to(cmd);
  cmd->callback([a] {
    std::vector<std::vector<int64_t>> dynamic;
    Graph g = take(load_model(a->model, a->input_shapes, &dynamic));
    if (a->inputs.size() != g.inputs.size())
      take(error(StatusCode::invalid_argument, "the model has ", g.inputs.size(), " inputs, got ", a->inputs.size(),
                 " --input files"));
    // Input files of another size along a dynamic dim: load the model again at their shapes.
    std::vector<std::string> shapes = a->input_shapes;
    for (size_t i = 0; i < a->inputs.size(); ++i) {
      if (i >= dynamic.size()) break;
      auto spec = take(shape_from_file(g.tensor(g.inputs[i]), dynamic[i], i, a->inputs[i], a->input_shapes));
      if (!spec) continue;
      fmt::print(stderr, "input {}: loading the model at {} (the size of '{}')\n", i, *spec, a->inputs[i]);
      shapes.push_back(*spec);
    }
    if (shapes.size() != a->input_shapes.size()) g = take(load_model(a->model, shapes));
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
