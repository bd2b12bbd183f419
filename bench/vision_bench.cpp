// The shared quantized vision models on the cpu device: the packed kernels against the
// reference kernels (`kernels=reference`), at 1 and 2 threads, one inference per iteration
// on a seeded random input. The peer comparison is bench/vision_vs_ort.sh.
// Run: ./build/bench/vision_bench   (needs ../shared beside the repo)
#include <benchmark/benchmark.h>

#include <filesystem>
#include <random>

#include "import/tflite/tflite_importer.h"
#include "tessera/session.h"

#ifndef TESSERA_SHARED_DIR
#define TESSERA_SHARED_DIR "../shared"
#endif

namespace tessera {
namespace {

void BM_Model(benchmark::State& state, const char* file, const char* kernels) {
  const std::string path = std::string(TESSERA_SHARED_DIR) + "/models/tflite/" + file;
  if (!std::filesystem::exists(path)) {
    state.SkipWithError(("fixture absent: " + path).c_str());
    return;
  }
  auto g = tflite::load_tflite_file(path);
  if (!g.ok()) {
    state.SkipWithError(g.status().to_string().c_str());
    return;
  }
  SessionOptions o;
  o.device_options = {{"threads", std::to_string(state.range(0))}, {"kernels", kernels}};
  auto hb = g->tensor(g->inputs[0]).host_bytes();
  auto s = Session::create(std::move(*g), o);
  if (!s.ok() || !hb.ok()) {
    state.SkipWithError(s.ok() ? "input size" : s.status().to_string().c_str());
    return;
  }
  std::vector<uint8_t> input(static_cast<size_t>(*hb));
  std::mt19937 rng(3);
  for (auto& b : input) b = static_cast<uint8_t>(rng());
  if (!(*s)->set_input(0, input.data(), *hb).ok()) {
    state.SkipWithError("set_input failed");
    return;
  }
  for (auto _ : state) {
    Status st = (*s)->run();
    if (!st.ok()) {
      state.SkipWithError(st.to_string().c_str());
      return;
    }
  }
}

constexpr const char* kMnv1 = "mobilenet_v1_1.0_224_quant_embedding_extractor.tflite";
constexpr const char* kMnv2 = "mobilenet_v2_1.0_224_quant.tflite";
constexpr const char* kTf2 = "tf2_mobilenet_v2_1.0_224_ptq.tflite";

BENCHMARK_CAPTURE(BM_Model, mnv1_packed, kMnv1, "packed")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Model, mnv1_reference, kMnv1, "reference")->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Model, mnv2_packed, kMnv2, "packed")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Model, mnv2_reference, kMnv2, "reference")->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Model, tf2_mnv2_packed, kTf2, "packed")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace tessera

BENCHMARK_MAIN();
