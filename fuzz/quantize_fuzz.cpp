// libFuzzer target: post-training quantization (src/api/quantize.cpp) of arbitrary bytes as
// a float TFLite model, calibrated on inputs filled from the same bytes (two runs). Every
// input must be quantized into a model the importer loads, or refused with a message;
// crashes, sanitizer reports and hangs are bugs. Small graphs only (fuzz_run.h bounds):
// the calibration runs the float model on the cpu.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuzz_run.h"
#include "import/tflite/tflite_importer.h"
#include "tessera/quantize.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> model(data, data + size);
  auto g = tessera::tflite::load_tflite_buffer(tessera::ConstData::from_vector(model));
  if (!g.ok() || !tessera::fuzz::small_enough(*g)) return 0;
  std::vector<tessera::CalibrationRun> runs(2);
  for (size_t r = 0; r < runs.size(); ++r)
    for (tessera::TensorId in : g->inputs) {
      auto bytes = g->tensor(in).host_bytes();
      if (!bytes.ok()) return 0;
      std::vector<uint8_t> v(static_cast<size_t>(*bytes));
      for (size_t k = 0; k < v.size(); ++k)
        v[k] = static_cast<uint8_t>((size ? data[(k * 7919 + r * 31) % size] : 0) + k * 131 + 7 * (r + 1));
      runs[r].push_back(std::move(v));
    }
  tessera::QuantizeReport rep;
  auto q = tessera::quantize_tflite(model, runs, {}, &rep);
  if (q.ok()) {
    // quantize_tflite loads what it wrote before returning it; loading it again must agree.
    if (!tessera::tflite::load_tflite_buffer(tessera::ConstData::from_vector(*q)).ok()) __builtin_trap();
    if (rep.bytes != static_cast<int64_t>(q->size())) __builtin_trap();
  } else if (q.status().message().empty()) {
    __builtin_trap();
  }
  return 0;
}
