// `tessera quantize FLOAT.tflite OUT.tflite --calibration IMG...`: post-training int8
// quantization (tessera/quantize.h), calibrated on images prepared as `classify` / `detect`
// feed the model (Model::image_input).
#include <fmt/format.h>

#include <fstream>
#include <iterator>

#include "cli.h"
#include "tessera/model.h"
#include "tessera/quantize.h"

namespace tessera::cli {

void add_quantize_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "quantize", "Quantize a float TFLite model to int8 (post-training, calibrated on images) for the cpu's int8 kernels and the NPU");
  struct Args {
    std::string model, out;
    std::vector<std::string> images;
    bool int8_io = false;
    bool own_add_ranges = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("model", a->model, "Float .tflite model (f32, fp16 weights or hybrid int8 weights)")->required();
  cmd->add_option("out", a->out, "Output .tflite file")->required();
  cmd->add_option("-c,--calibration", a->images,
                  "Images (BMP/JPEG/PNG) the float model runs on to find each tensor's range; a few dozen typical ones "
                  "serve best")
      ->required();
  cmd->add_flag("--int8-io", a->int8_io, "int8 inputs and outputs (full-integer) instead of float ones");
  cmd->add_flag("--own-add-ranges", a->own_add_ranges,
                "each ADD input keeps its own range, as TensorFlow Lite's converter quantizes (the default shares one "
                "range per ADD, so that the NPU adds exactly as TFLite does)");
  cmd->callback([a] {
    auto model = take(Model::load(a->model));
    std::vector<CalibrationRun> runs;
    for (const std::string& img : a->images) runs.push_back({take(model->image_input(img))});
    std::ifstream f(a->model, std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (!f.good() && !f.eof()) take(error(StatusCode::io_error, "cannot read '", a->model, "'"));
    QuantizeOptions o;
    o.int8_io = a->int8_io;
    o.shared_add_params = !a->own_add_ranges;
    QuantizeReport rep;
    auto out = take(quantize_tflite(bytes, runs, o, &rep, [](int done, int total) {
      fmt::print(stderr, "\rcalibrating: {}/{} images", done, total);
      if (done == total) fmt::print(stderr, "\n");
    }));
    std::ofstream w(a->out, std::ios::binary);
    w.write(reinterpret_cast<const char*>(out.data()), static_cast<std::streamsize>(out.size()));
    w.close();
    if (!w) take(error(StatusCode::io_error, "cannot write '", a->out, "'"));
    fmt::print("wrote {}: {} operators, {} tensors quantized to int8 (int32 biases), {:.1f} KiB (the float file: {:.1f} KiB), "
               "calibrated on {} image{}, {} inputs and outputs\n",
               a->out, rep.ops, rep.tensors_quantized, double(rep.bytes) / 1024.0, double(bytes.size()) / 1024.0,
               rep.calibration_runs, rep.calibration_runs == 1 ? "" : "s", a->int8_io ? "int8" : "float");
    for (const std::string& n : rep.notes) fmt::print("  note: {}\n", n);
  });
}

}  // namespace tessera::cli
