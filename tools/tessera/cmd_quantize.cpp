// `tessera quantize FLOAT.tflite OUT.tflite --calibration IMG...`: post-training int8
// quantization (tessera/quantize.h), calibrated on images prepared as `classify` / `detect`
// feed the model (Model::image_input).
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <cmath>
#include <fstream>

#include "cli.h"
#include "core/file_io.h"
#include "tessera/model.h"
#include "tessera/quantize.h"
#include "tessera/session.h"

namespace tessera::cli {

namespace {

// Runs the float and the quantized model on one image and prints, per output, how far the
// int8 model's values are from the float model's.
Status compare_on_image(std::shared_ptr<const Model> float_model, const std::vector<uint8_t>& quantized,
                        const std::string& image) {
  TS_ASSIGN_OR_RETURN(auto qmodel, Model::from_tflite_buffer(ConstData::from_vector(quantized)));
  TS_ASSIGN_OR_RETURN(auto fs, ModelSession::create(float_model));
  TS_ASSIGN_OR_RETURN(auto qs, ModelSession::create(qmodel));
  TS_ASSIGN_OR_RETURN(std::vector<uint8_t> fin, float_model->image_input(image));
  TS_ASSIGN_OR_RETURN(std::vector<uint8_t> qin, qmodel->image_input(image));
  TS_RETURN_IF_ERROR(fs->set_input(0, fin.data(), static_cast<int64_t>(fin.size())));
  TS_RETURN_IF_ERROR(qs->set_input(0, qin.data(), static_cast<int64_t>(qin.size())));
  TS_RETURN_IF_ERROR(fs->run());
  TS_RETURN_IF_ERROR(qs->run());
  for (size_t k = 0; k < fs->num_outputs() && k < qs->num_outputs(); ++k) {
    TS_ASSIGN_OR_RETURN(std::vector<float> f, fs->session().output_values(k));
    TS_ASSIGN_OR_RETURN(std::vector<float> q, qs->session().output_values(k));
    if (f.size() != q.size() || f.empty()) return error(StatusCode::internal, "output ", k, " differs in size");
    double lo = f[0], hi = f[0], sum = 0;
    std::vector<double> d(f.size());
    for (size_t i = 0; i < f.size(); ++i) {
      lo = std::min(lo, double(f[i])), hi = std::max(hi, double(f[i]));
      d[i] = std::fabs(double(q[i]) - double(f[i]));
      sum += d[i];
    }
    std::sort(d.begin(), d.end());
    const double range = hi - lo, p99 = d[std::min(d.size() - 1, d.size() * 99 / 100)];
    const auto pct = [&](double v) { return range > 0 ? 100.0 * v / range : 0.0; };
    fmt::print("  on {}: output '{}' (float range {:.4g}): |int8 - float| mean {:.3g}, 99% within {:.3g} ({:.2f}% of the range), "
               "max {:.3g} ({:.2f}%)\n",
               image, fs->output_info(k).name, range, sum / double(f.size()), p99, pct(p99), d.back(), pct(d.back()));
  }
  return Status::Ok();
}

}  // namespace

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
                  "Images (BMP/JPEG/PNG), or folders of them, the float model runs on to find each tensor's range; a "
                  "few dozen typical ones serve best")
      ->required();
  cmd->add_flag("--int8-io", a->int8_io, "int8 inputs and outputs (full-integer) instead of float ones");
  cmd->add_flag("--own-add-ranges", a->own_add_ranges,
                "each ADD input keeps its own range, as TensorFlow Lite's converter quantizes (the default shares one "
                "range per ADD, so that the NPU adds exactly as TFLite does)");
  cmd->callback([a] {
    auto model = take(Model::load(a->model));
    // A folder stands for the images in it (.bmp, .jpg, .jpeg, .png), in name order.
    std::vector<std::string> images;
    for (const std::string& arg : a->images) {
      std::error_code ec;
      if (!std::filesystem::is_directory(arg, ec)) {
        images.push_back(arg);
        continue;
      }
      std::vector<std::string> found;
      for (const auto& e : std::filesystem::directory_iterator(arg, ec)) {
        std::string ext = e.path().extension().string();
        std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        if (e.is_regular_file() && (ext == ".bmp" || ext == ".jpg" || ext == ".jpeg" || ext == ".png"))
          found.push_back(e.path().string());
      }
      if (ec) take(error(StatusCode::io_error, "cannot list '", arg, "': ", ec.message()));
      if (found.empty()) take(error(StatusCode::not_found, "'", arg, "' holds no .bmp, .jpg, .jpeg or .png image"));
      std::sort(found.begin(), found.end());
      images.insert(images.end(), found.begin(), found.end());
    }
    std::vector<CalibrationRun> runs;
    for (const std::string& img : images) runs.push_back({take(model->image_input(img))});
    std::vector<uint8_t> bytes = take(read_file_bounded(a->model, int64_t{4} << 30, "model file"));
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
    // A first look at the error: the float and the int8 model on the first image.
    Status checked = compare_on_image(model, out, images[0]);
    if (!checked.ok()) fmt::print("  (no comparison on {}: {})\n", images[0], checked.message());
  });
}

}  // namespace tessera::cli
