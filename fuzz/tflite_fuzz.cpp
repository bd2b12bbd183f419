// libFuzzer target: the TFLite importer on arbitrary bytes, then, for small models, the
// imported graph on the cpu device. Every input must either import into a graph that
// validates or fail with a message; crashes, sanitizer reports and hangs are bugs.
//
// Each input is also tried as the FlexBuffer options of a custom operator: it becomes the
// custom_options of TFLite_Detection_PostProcess in a small valid model
// (tests/import/tflite/detection_model.h), so that the FlexBuffer verifier and reader
// see mutated option maps, not only whole files.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuzz_run.h"
#include "import/tflite/detection_model.h"
#include "import/tflite/tflite_importer.h"

namespace {

// `seed`: input bytes for running the model on the cpu (nullptr: import only).
// `opts`: load options (input shapes) for the import.
void import_and_check(std::vector<uint8_t> bytes, const uint8_t* seed, size_t seed_size,
                      const tessera::tflite::ImportOptions& opts = {}, tessera::tflite::ImportReport* report = nullptr) {
  auto g = tessera::tflite::load_tflite_buffer(tessera::ConstData::from_vector(std::move(bytes)), opts, report);
  if (g.ok()) {
    // An imported graph must be internally consistent.
    if (!g->validate().ok()) __builtin_trap();
    if (seed) tessera::fuzz::run_on_cpu(std::move(*g), seed, seed_size);
  } else if (g.status().message().empty()) {
    __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tessera::tflite::ImportReport report;
  import_and_check(std::vector<uint8_t>(data, data + size), data, size, {}, &report);
  // A model with dynamic input dims (shape_signature -1) again at another size: each such
  // dim of the first input set from the input's last bytes (1..8; 0 and 9 as bad sizes),
  // so that the shape arithmetic folds at that size and the shape checks see odd values.
  if (!report.dynamic_dims.empty() && !report.dynamic_dims[0].empty() && size > 0) {
    auto g = tessera::tflite::load_tflite_buffer(tessera::ConstData::from_vector(std::vector<uint8_t>(data, data + size)));
    if (g.ok() && !g->inputs.empty()) {
      tessera::Shape shape = g->tensor(g->inputs[0]).shape;
      size_t k = size;
      for (int64_t d : report.dynamic_dims[0]) shape[static_cast<size_t>(d)] = data[--k % size] % 10;
      import_and_check(std::vector<uint8_t>(data, data + size), data, size, {{{"0", shape}}});
    }
  }
  constexpr size_t kMaxOptionBytes = 4096;  // option maps are a few hundred bytes
  if (size <= kMaxOptionBytes) {
    tessera::testing::DetectionModelSpec spec;
    spec.options.assign(data, data + size);
    import_and_check(tessera::testing::detection_model(spec), nullptr, 0);
    // A valid option map with up to 16 bytes overwritten: input byte pairs (position, value),
    // so that most inputs reach the reader past the verifier.
    spec.options = tessera::testing::detection_options_flexbuffer(tessera::testing::DetectionOptions{});
    for (size_t i = 0; i + 1 < size && i < 32; i += 2) spec.options[data[i] % spec.options.size()] = data[i + 1];
    import_and_check(tessera::testing::detection_model(spec), nullptr, 0);
  }
  return 0;
}
