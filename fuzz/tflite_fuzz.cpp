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
void import_and_check(std::vector<uint8_t> bytes, const uint8_t* seed, size_t seed_size) {
  auto g = tessera::tflite::load_tflite_buffer(tessera::ConstData::from_vector(std::move(bytes)));
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
  import_and_check(std::vector<uint8_t>(data, data + size), data, size);
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
