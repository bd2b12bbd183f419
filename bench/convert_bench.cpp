// Conversion throughput, single thread, against a plain memcpy of the same bytes in the
// same run. Every benchmark reports GB/s of its input (SetBytesProcessed); its label names
// the memcpy it is compared with, and the table printed at the end gives the ratios
// (docs/formats.md keeps the measured table). `--simd=scalar` measures the references.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "convert/dtype.h"
#include "convert/simd.h"
#include "tessera/backend/convert.h"

namespace tessera {
namespace {

// Sizes: a 2048 x 2048 weight (16 MiB of f32, past the 2 MiB L2), a 224 x 224 x 64 u8
// feature map.
constexpr int64_t kRows = 2048, kCols = 2048;
const Shape kMatrix{kRows, kCols};
const Shape kFeatureMap{1, 224, 224, 64};

std::vector<uint8_t> random_bytes(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

std::vector<float> random_floats(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// GGUF blocks with sane f16 scales.
std::vector<uint8_t> random_blocks(int64_t n_blocks, int64_t block_bytes, uint32_t seed) {
  auto b = random_bytes(n_blocks * block_bytes, seed);
  for (int64_t i = 0; i < n_blocks; ++i) {
    uint16_t h = convert::f32_to_f16(0.01f + 0.001f * static_cast<float>(i % 97));
    std::memcpy(&b[i * block_bytes], &h, 2);
  }
  return b;
}

void BM_memcpy(benchmark::State& state) {
  const int64_t n = state.range(0);
  auto src = random_bytes(n, 1);
  std::vector<uint8_t> dst(n);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), n);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * n);
}

// Converts `from` -> `to`; input bytes are the source's.
void run_conversion(benchmark::State& state, const Format& from, const std::vector<uint8_t>& src, const Format& to,
                    const char* compare, bool compare_output = false) {
  std::vector<uint8_t> dst(*to.byte_size());
  for (auto _ : state) {
    Status st = convert::convert(from, src.data(), to, dst.data());
    if (!st.ok()) {
      state.SkipWithError(st.to_string().c_str());
      break;
    }
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * *from.byte_size());
  // The ratio uses output bytes/s when compare_output (in_rate * out_bytes / in_bytes).
  state.counters["out_per_in"] = compare_output ? static_cast<double>(dst.size()) / *from.byte_size() : 1.0;
  state.SetLabel(compare);
}

std::vector<uint8_t> as_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// Converted device bytes of `f32` data in `to` (for the benchmarks that read them back).
std::vector<uint8_t> device_bytes(const Format& to, const std::vector<uint8_t>& f32) {
  std::vector<uint8_t> out(*to.byte_size());
  Status st = convert::convert(Format::row_major(DType::f32, to.shape), f32.data(), to, out.data());
  (void)st;
  return out;
}

const std::vector<uint8_t>& matrix_f32() {
  static const auto v = as_bytes(random_floats(kRows * kCols, 2));
  return v;
}

void BM_tilize_f32(benchmark::State& s) {
  run_conversion(s, Format::row_major(DType::f32, kMatrix), matrix_f32(), Format::tiled(Encoding::f32, kMatrix),
                 "memcpy/16777216");
}
void BM_untilize_f32(benchmark::State& s) {
  Format t = Format::tiled(Encoding::f32, kMatrix);
  run_conversion(s, t, device_bytes(t, matrix_f32()), Format::row_major(DType::f32, kMatrix), "memcpy/16777216");
}
void BM_tilize_bf16(benchmark::State& s) {
  Format bf = Format::row_major(DType::bf16, kMatrix);
  run_conversion(s, bf, device_bytes(bf, matrix_f32()), Format::tiled(Encoding::bf16, kMatrix), "memcpy/8388608");
}
void BM_f32_to_bf16(benchmark::State& s) {
  run_conversion(s, Format::row_major(DType::f32, kMatrix), matrix_f32(), Format::row_major(DType::bf16, kMatrix),
                 "memcpy/16777216");
}
void BM_f32_to_f16(benchmark::State& s) {
  run_conversion(s, Format::row_major(DType::f32, kMatrix), matrix_f32(), Format::row_major(DType::f16, kMatrix),
                 "memcpy/16777216");
}
void BM_f32_to_bf16_tiles(benchmark::State& s) {
  run_conversion(s, Format::row_major(DType::f32, kMatrix), matrix_f32(), Format::tiled(Encoding::bf16, kMatrix),
                 "memcpy/16777216");
}
void BM_f32_to_bfp8_tiles(benchmark::State& s) {
  run_conversion(s, Format::row_major(DType::f32, kMatrix), matrix_f32(), Format::tiled(Encoding::bfp8_b, kMatrix),
                 "memcpy/16777216");
}
void BM_f32_to_bfp4_tiles(benchmark::State& s) {
  run_conversion(s, Format::row_major(DType::f32, kMatrix), matrix_f32(), Format::tiled(Encoding::bfp4_b, kMatrix),
                 "memcpy/16777216");
}
void BM_bfp8_tiles_to_f32(benchmark::State& s) {
  Format t = Format::tiled(Encoding::bfp8_b, kMatrix);
  run_conversion(s, t, device_bytes(t, matrix_f32()), Format::row_major(DType::f32, kMatrix), "memcpy/4456448");
}
void BM_bfp4_tiles_to_f32(benchmark::State& s) {
  Format t = Format::tiled(Encoding::bfp4_b, kMatrix);
  run_conversion(s, t, device_bytes(t, matrix_f32()), Format::row_major(DType::f32, kMatrix), "memcpy/2359296");
}
void BM_q8_0_to_bfp8_tiles(benchmark::State& s) {
  Format q{Encoding::q8_0, Layout::row_major, kMatrix};
  run_conversion(s, q, random_blocks(kRows * kCols / 32, 34, 3), Format::tiled(Encoding::bfp8_b, kMatrix),
                 "memcpy/4456448", true);  // compared on output bytes (4096 tiles x 1088)
}
void BM_q4_0_to_bfp4_tiles(benchmark::State& s) {
  Format q{Encoding::q4_0, Layout::row_major, kMatrix};
  run_conversion(s, q, random_blocks(kRows * kCols / 32, 18, 4), Format::tiled(Encoding::bfp4_b, kMatrix),
                 "memcpy/2359296", true);  // compared on output bytes (4096 tiles x 576)
}
void BM_q8_0_to_f32(benchmark::State& s) {
  Format q{Encoding::q8_0, Layout::row_major, kMatrix};
  run_conversion(s, q, random_blocks(kRows * kCols / 32, 34, 5), Format::row_major(DType::f32, kMatrix),
                 "memcpy/4456448");
}
void BM_q4_0_to_f32(benchmark::State& s) {
  Format q{Encoding::q4_0, Layout::row_major, kMatrix};
  run_conversion(s, q, random_blocks(kRows * kCols / 32, 18, 6), Format::row_major(DType::f32, kMatrix),
                 "memcpy/2359296");
}
void BM_u8_nhwc_to_i8_nc1hwc2(benchmark::State& s) {
  run_conversion(s, Format::row_major(DType::u8, kFeatureMap), random_bytes(num_elements(kFeatureMap), 7),
                 Format{Encoding::i8, Layout::nc1hwc2, kFeatureMap}, "memcpy/3211264");
}
void BM_i8_nc1hwc2_to_u8_nhwc(benchmark::State& s) {
  run_conversion(s, Format{Encoding::i8, Layout::nc1hwc2, kFeatureMap}, random_bytes(num_elements(kFeatureMap), 8),
                 Format::row_major(DType::u8, kFeatureMap), "memcpy/3211264");
}
void BM_i8_nhwc_to_nc1hwc2_rgb(benchmark::State& s) {
  const Shape rgb{1, 224, 224, 3};  // 3 channels: 13 of 16 padded
  run_conversion(s, Format::row_major(DType::i8, rgb), random_bytes(num_elements(rgb), 9),
                 Format{Encoding::i8, Layout::nc1hwc2, rgb}, "memcpy/150528");
}
void BM_u8_to_i8(benchmark::State& s) {
  run_conversion(s, Format::row_major(DType::u8, kFeatureMap), random_bytes(num_elements(kFeatureMap), 10),
                 Format::row_major(DType::i8, kFeatureMap), "memcpy/3211264");
}
void BM_u8_nhwc_to_nchw(benchmark::State& s) {
  run_conversion(s, Format::row_major(DType::u8, kFeatureMap), random_bytes(num_elements(kFeatureMap), 11),
                 Format{Encoding::u8, Layout::nchw, kFeatureMap}, "memcpy/3211264");
}

// The memcpy sizes the conversions compare with.
BENCHMARK(BM_memcpy)->Arg(16777216)->Arg(8388608)->Arg(4456448)->Arg(3211264)->Arg(2359296)->Arg(150528);
BENCHMARK(BM_tilize_f32);
BENCHMARK(BM_untilize_f32);
BENCHMARK(BM_tilize_bf16);
BENCHMARK(BM_f32_to_bf16);
BENCHMARK(BM_f32_to_f16);
BENCHMARK(BM_f32_to_bf16_tiles);
BENCHMARK(BM_f32_to_bfp8_tiles);
BENCHMARK(BM_f32_to_bfp4_tiles);
BENCHMARK(BM_bfp8_tiles_to_f32);
BENCHMARK(BM_bfp4_tiles_to_f32);
BENCHMARK(BM_q8_0_to_bfp8_tiles);
BENCHMARK(BM_q4_0_to_bfp4_tiles);
BENCHMARK(BM_q8_0_to_f32);
BENCHMARK(BM_q4_0_to_f32);
BENCHMARK(BM_u8_nhwc_to_i8_nc1hwc2);
BENCHMARK(BM_i8_nc1hwc2_to_u8_nhwc);
BENCHMARK(BM_i8_nhwc_to_nc1hwc2_rgb);
BENCHMARK(BM_u8_to_i8);
BENCHMARK(BM_u8_nhwc_to_nchw);

// Console output plus, at the end, each conversion's speed as a ratio to the memcpy named
// by its label. The GGUF block -> bfp conversions compare output bytes/s (the target is
// stated on output bytes); the others input bytes/s.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      // With --benchmark_repetitions the table uses the medians.
      if (r.run_type == Run::RT_Aggregate ? r.aggregate_name != "median" : r.repetitions > 1) continue;
      auto bps = r.counters.find("bytes_per_second");
      if (r.error_occurred || bps == r.counters.end()) continue;
      const std::string name = r.run_name.str();
      rates_[name] = bps->second.value;
      if (r.report_label.empty()) continue;
      auto opi = r.counters.find("out_per_in");
      double scale = opi == r.counters.end() ? 1.0 : opi->second.value;
      rows_.push_back({name, r.report_label, bps->second.value * scale, scale != 1.0});
    }
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    std::printf("\n%-28s %10s %10s %7s  (simd: %s)\n", "conversion", "GB/s", "memcpy", "ratio",
                convert::simd_level_name(convert::simd_level()));
    for (const Row& row : rows_) {
      auto m = rates_.find("BM_" + row.compare);
      double mem = m == rates_.end() ? 0.0 : m->second;
      std::printf("%-28s %10.2f %10.2f %7.2f%s\n", row.name.c_str() + 3, row.rate / 1e9, mem / 1e9,
                  mem > 0 ? row.rate / mem : 0.0, row.on_output ? "  (output bytes)" : "");
    }
  }

 private:
  struct Row {
    std::string name, compare;
    double rate;
    bool on_output;
  };
  std::map<std::string, double> rates_;
  std::vector<Row> rows_;
};

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--simd=scalar") == 0) tessera::convert::set_simd_level(tessera::convert::SimdLevel::scalar);
  benchmark::Initialize(&argc, argv);
  tessera::RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
