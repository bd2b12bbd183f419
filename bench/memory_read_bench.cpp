// The memory's read bandwidth on this machine, the ceiling of a memory-bound decode step:
// each thread streams its own 256 MiB buffer (larger than any cache) with 32-byte loads,
// on the cpu device's thread pool (1 and 2 threads), reported as bytes per second.
// Run: chrt -f 1 ./build/bench/memory_read_bench --benchmark_repetitions=5
//          --benchmark_report_aggregates_only=true      (read the _max rows: a shared host)
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "backend/cpu/thread_pool.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace tessera {
namespace {

constexpr size_t kBytesPerThread = size_t{256} << 20;

#if defined(__x86_64__)
__attribute__((target("avx2"))) uint64_t read_all(const uint8_t* p, size_t n) {
  __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
  for (size_t i = 0; i + 128 <= n; i += 128) {
    a = _mm256_xor_si256(a, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i)));
    b = _mm256_xor_si256(b, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 32)));
    c = _mm256_xor_si256(c, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 64)));
    d = _mm256_xor_si256(d, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 96)));
  }
  const __m256i x = _mm256_xor_si256(_mm256_xor_si256(a, b), _mm256_xor_si256(c, d));
  return static_cast<uint64_t>(_mm256_extract_epi64(x, 0));
}
#else
uint64_t read_all(const uint8_t* p, size_t n) {
  uint64_t acc[4] = {};
  for (size_t i = 0; i + 32 <= n; i += 32)
    for (int k = 0; k < 4; ++k) {
      uint64_t v;
      std::memcpy(&v, p + i + 8 * k, 8);
      acc[k] ^= v;
    }
  return acc[0] ^ acc[1] ^ acc[2] ^ acc[3];
}
#endif

void BM_Read(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  std::vector<uint8_t> buf(kBytesPerThread * static_cast<size_t>(threads), 1);
  cpu::ThreadPool pool(threads);
  uint64_t sink = 0;
  for (auto _ : state) {
    pool.parallel_for(threads, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) sink ^= read_all(buf.data() + static_cast<size_t>(t) * kBytesPerThread, kBytesPerThread);
    }, 1);
    benchmark::DoNotOptimize(sink);
  }
  state.counters["B/s"] = benchmark::Counter(static_cast<double>(buf.size()), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Read)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond)->ComputeStatistics(
    "max", [](const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); });

}  // namespace
}  // namespace tessera

BENCHMARK_MAIN();
