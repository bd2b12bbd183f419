// libFuzzer target: the TFLite importer on arbitrary bytes, then, for small models, the
// imported graph on the cpu device. Every input must either import into a graph that
// validates or fail with a message; crashes, sanitizer reports and hangs are bugs.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuzz_run.h"
#include "import/tflite/tflite_importer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  auto g = tessera::tflite::load_tflite_buffer(tessera::ConstData::from_vector(std::move(bytes)));
  if (g.ok()) {
    // An imported graph must be internally consistent.
    if (!g->validate().ok()) __builtin_trap();
    tessera::fuzz::run_on_cpu(std::move(*g), data, size);
  } else if (g.status().message().empty()) {
    __builtin_trap();
  }
  return 0;
}
