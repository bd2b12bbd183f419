// Classifies an image with a TFLite model through Tessera's C++ API.
//   classify MODEL.tflite IMAGE [LABELS.txt] [DEVICE]
// Prints the five best classes: index, dequantized score, label.
#include <tessera/tessera.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: classify MODEL.tflite IMAGE [LABELS.txt] [DEVICE]\n");
    return 2;
  }
  auto fail = [](const tessera::Status& s) {
    std::fprintf(stderr, "classify: %s\n", s.to_string().c_str());
    return 1;
  };
  auto model = tessera::Model::load(argv[1]);
  if (!model.ok()) return fail(model.status());
  tessera::SessionOptions opts;
  if (argc > 4) opts.device = argv[4];
  auto session = tessera::ModelSession::create(*model, opts);
  if (!session.ok()) return fail(session.status());

  auto input = (*model)->image_input(argv[2]);  // decoded, resized, quantized as the input wants
  if (!input.ok()) return fail(input.status());
  if (auto s = (*session)->set_input(0, input->data(), static_cast<int64_t>(input->size())); !s.ok()) return fail(s);
  if (auto s = (*session)->run(); !s.ok()) return fail(s);
  auto out = (*session)->output(0);
  if (!out.ok()) return fail(out.status());

  // Scores: dequantized u8 (scale * (q - zero_point)) or f32 as they are.
  const tessera::TensorInfo& info = (*model)->outputs()[0];
  const size_t n = static_cast<size_t>(info.shape.back());
  std::vector<float> scores(n);
  for (size_t i = 0; i < n; ++i) {
    if (info.dtype == tessera::DType::u8)
      scores[i] = info.quant.scale[0] * (static_cast<float>((*out)[i]) - static_cast<float>(info.quant.zero_point[0]));
    else if (info.dtype == tessera::DType::f32)
      std::memcpy(&scores[i], out->data() + 4 * i, 4);
    else
      return fail(tessera::Status(tessera::StatusCode::unsupported, "output dtype not handled by this example"));
  }
  std::vector<std::string> labels;
  if (argc > 3) {
    std::ifstream f(argv[3]);
    for (std::string line; std::getline(f, line);) labels.push_back(line);
  }
  const size_t offset = labels.size() == n + 1 ? 1 : 0;  // a leading "background" line
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + 5, order.end(),
                    [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  for (size_t k = 0; k < 5; ++k) {
    size_t i = order[k];
    std::printf("%5zu  %.4f  %s\n", i, scores[i], i + offset < labels.size() ? labels[i + offset].c_str() : "");
  }
  return 0;
}
