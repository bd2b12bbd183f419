// The shared quantized vision models on the cpu device: the packed kernels against the
// reference kernels (`kernels=reference`), at 1 and 2 threads, one inference per iteration
// on a seeded random input. The peer comparison is bench/vision_vs_ort.sh.
// Run: ./build/bench/vision_bench   (needs ../shared beside the repo)
#include <benchmark/benchmark.h>

#include <filesystem>
#include <random>

#include "backend/cpu/ukernels/qconv.h"
#include "convert/simd.h"
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

// The 8-bit GEMM micro-kernel alone (one 16-channel panel, k = 512, 96 rows: A and the
// panel L1/L2-resident, as in MobileNet's 14 x 14 x 512 pointwise layers), per kernel set
// this CPU runs; counter: multiply-adds per second.
void BM_GemmU8(benchmark::State& state, int set) {
  std::vector<const cpu::uk::QConvKernels*> sets;
#if defined(__x86_64__)
  if (convert::cpu_has_avx2()) sets.push_back(&cpu::uk::avx2_qconv_kernels());
  if (convert::cpu_vnni() != convert::Vnni::none) sets.push_back(cpu::uk::avx2_vnni_qconv_kernels(convert::cpu_vnni()));
  if (cpu::uk::avx512_vnni_qconv_kernels()) sets.push_back(cpu::uk::avx512_vnni_qconv_kernels());
#endif
  if (set >= static_cast<int>(sets.size())) {
    state.SkipWithError("no such kernel set on this CPU");
    return;
  }
  const cpu::uk::QConvKernels& k = *sets[static_cast<size_t>(set)];
  state.SetLabel(k.isa);
  const int64_t m = 96, kq = 128;
  std::mt19937 rng(5);
  std::vector<uint8_t> a(static_cast<size_t>(m * kq * 4)), y(static_cast<size_t>(m * 16));
  std::vector<int8_t> panel(static_cast<size_t>(kq * 64));
  for (auto& v : a) v = static_cast<uint8_t>(rng());
  for (auto& v : panel) v = static_cast<int8_t>(static_cast<int>(rng() % 255) - 127);
  std::vector<int32_t> bias(16, 1000), mult(16, 1 << 30), ls(16, 0), rs(16, 12);
  cpu::uk::Requant rq;
  rq.bias = bias.data(), rq.mult = mult.data(), rq.lshift = ls.data(), rq.rshift = rs.data();
  for (auto _ : state) {
    k.gemm_u8(m, kq, a.data(), kq * 4, panel.data(), nullptr, 0, rq, 0, 16, y.data(), 16);
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["MAC/s"] = benchmark::Counter(static_cast<double>(m * kq * 4 * 16), benchmark::Counter::kIsIterationInvariantRate);
}
// The two-panel form where the CPU's kernels have one (AVX-512: the 12-row x 32-channel
// tile), the same shapes.
void BM_GemmU8Pair(benchmark::State& state) {
  const cpu::uk::QConvKernels& k = cpu::uk::qconv_kernels();
  if (!k.gemm_u8_pair) {
    state.SkipWithError("no two-panel GEMM on this CPU");
    return;
  }
  state.SetLabel(k.isa);
  const int64_t m = 96, kq = 128;
  std::mt19937 rng(5);
  std::vector<uint8_t> a(static_cast<size_t>(m * kq * 4)), y(static_cast<size_t>(m * 32));
  std::vector<int8_t> panel(static_cast<size_t>(2 * kq * 64));
  for (auto& v : a) v = static_cast<uint8_t>(rng());
  for (auto& v : panel) v = static_cast<int8_t>(static_cast<int>(rng() % 255) - 127);
  std::vector<int32_t> bias(32, 1000), mult(32, 1 << 30), ls(32, 0), rs(32, 12);
  cpu::uk::Requant rq;
  rq.bias = bias.data(), rq.mult = mult.data(), rq.lshift = ls.data(), rq.rshift = rs.data();
  for (auto _ : state) {
    k.gemm_u8_pair(m, kq, a.data(), kq * 4, panel.data(), nullptr, 0, nullptr, 0, rq, 0, 16, y.data(), 32);
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["MAC/s"] =
      benchmark::Counter(static_cast<double>(m * kq * 4 * 32), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_GemmU8Pair);

BENCHMARK_CAPTURE(BM_GemmU8, set0, 0);
BENCHMARK_CAPTURE(BM_GemmU8, set1, 1);
BENCHMARK_CAPTURE(BM_GemmU8, set2, 2);

// One depthwise row of MobileNetV1's 14 x 14 x 512 layers (3x3, stride 1) with the kernels
// the cpu uses (its padded int16 input lines L1/L2-resident); counter: outputs per second.
void BM_DwRow(benchmark::State& state) {
  const cpu::uk::QConvKernels& k = cpu::uk::qconv_kernels();
  state.SetLabel(k.isa);
  const int64_t ow = 14, c = 512, wp = 16;
  std::mt19937 rng(6);
  std::vector<int16_t> x(static_cast<size_t>(3 * wp * c)), w(static_cast<size_t>(c / 16 * 5 * 32));
  for (auto& v : x) v = static_cast<int16_t>(static_cast<int>(rng() % 256) - 128);
  for (auto& v : w) v = static_cast<int16_t>(static_cast<int>(rng() % 200) - 100);
  std::vector<int64_t> off;
  for (int ky = 0; ky < 3; ++ky)
    for (int kx = 0; kx < 3; ++kx) off.push_back((ky * wp + kx) * c);
  std::vector<int32_t> bias(c, 1000), mult(c, 1 << 30), ls(c, 0), rs(c, 10);
  cpu::uk::Requant rq;
  rq.bias = bias.data(), rq.mult = mult.data(), rq.lshift = ls.data(), rq.rshift = rs.data();
  std::vector<uint8_t> y(static_cast<size_t>(ow * c));
  cpu::uk::DwRow r;
  r.x = x.data(), r.xstep = c, r.tap_off = off.data(), r.taps = 9, r.ow = ow, r.cpad = c, r.channels = c;
  r.w = w.data(), r.rq = &rq, r.y = y.data();
  for (auto _ : state) {
    k.dw_row(r);
    r.same_op = true;
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["outputs/s"] = benchmark::Counter(static_cast<double>(ow * c), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_DwRow);

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
