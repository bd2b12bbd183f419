// The LLM matrix kernels of backend/cpu/kernels/linear_q8.h on one and two threads, at the shapes of a
// stories110M-shaped llama model (dim 768, FFN 2048, vocab 32000): y [M, OC] = x [M, K] w [OC, K]^T
// for decode (M = 1) and a 512-token prompt (M = 512), weights in q4_0, q8_0 and f16.
// The activation rounding (quantize_row, block_sums) is timed with the product, as the cpu
// kernel runs it.
// Run: chrt -f 1 ./build/bench/llm_matmul_bench --benchmark_repetitions=5
//          --benchmark_report_aggregates_only=true [--benchmark_filter=q4_0]   (read the _min rows)
#include <benchmark/benchmark.h>

#include <algorithm>
#include <random>
#include <vector>

#include "backend/cpu/kernels/linear_q8.h"
#include "backend/cpu/thread_pool.h"

namespace tessera {
namespace {

using cpu::q8::kBlock;

// Random GGUF weight bytes: q8_0 / q4_0 blocks with f16 scales near 2^-6, f16 values near 1.
std::vector<uint8_t> weight_bytes(DType t, int64_t oc, int64_t k) {
  std::mt19937 rng(7);
  const int64_t block = t == DType::q8_0 ? kQ8_0BlockBytes : t == DType::q4_0 ? kQ4_0BlockBytes : 2 * kBlock;
  std::vector<uint8_t> b(static_cast<size_t>(oc * k / kBlock * block));
  for (auto& x : b) x = static_cast<uint8_t>(rng());
  if (t == DType::f16) {
    for (size_t i = 1; i < b.size(); i += 2) b[i] = 0x3c ^ (b[i] & 0x80);  // +-[1, 1.25)
  } else {
    for (size_t i = 0; i < b.size(); i += block) b[i] = 0x00, b[i + 1] = 0x24;
  }
  return b;
}

// Decode streams every weight of the model from memory once per token (72 MB and more do
// not fit the caches), so the benchmark cycles through copies of the weights that together
// exceed the last-level cache.
constexpr size_t kStreamBytes = size_t{96} << 20;

// Args: OC, K, M, threads (the output rows split over the cpu device's pool, as the
// fully_connected kernel splits them).
void BM_Matmul(benchmark::State& state, DType t) {
  const int64_t oc = state.range(0), k = state.range(1), m = state.range(2);
  cpu::ThreadPool pool(static_cast<int>(state.range(3)));
  const std::vector<uint8_t> w1 = weight_bytes(t, oc, k);
  const size_t copies = std::max<size_t>(1, kStreamBytes / w1.size());
  std::vector<uint8_t> w(w1.size() * copies);
  for (size_t c = 0; c < copies; ++c) std::copy(w1.begin(), w1.end(), w.begin() + static_cast<ptrdiff_t>(c * w1.size()));
  size_t next = 0;
  std::mt19937 rng(1);
  std::normal_distribution<float> nd(0, 1);
  std::vector<float> x(static_cast<size_t>(m * k)), y(static_cast<size_t>(m * oc));
  for (auto& v : x) v = nd(rng);
  std::vector<int8_t> q(x.size());
  std::vector<float> d(x.size() / kBlock);
  std::vector<int32_t> sums(d.size());
  const int64_t rb = t == DType::q8_0 ? k / kBlock * kQ8_0BlockBytes : k / kBlock * kQ4_0BlockBytes;
  for (auto _ : state) {
    const uint8_t* wp = w.data() + (next++ % copies) * w1.size();
    if (t == DType::f16) {
      // Activations rounded to binary16 as the llama graphs ask (input_rounding).
      const cpu::q8::F16Gemm g{reinterpret_cast<const uint16_t*>(wp), x.data(), m, k, y.data(), oc, true};
      pool.parallel_for(oc, [&](int64_t o0, int64_t o1) { cpu::q8::gemm_f16(g, o0, o1); }, 8);
    } else {
      for (int64_t i = 0; i < m; ++i) {
        cpu::q8::quantize_row(x.data() + i * k, k, q.data() + i * k, d.data() + i * (k / kBlock));
        cpu::q8::block_sums(q.data() + i * k, k, sums.data() + i * (k / kBlock));
      }
      const cpu::q8::QuantGemm g{t, wp, rb, {q.data(), d.data(), sums.data(), nullptr, m, k}, y.data(), oc};
      pool.parallel_for(oc, [&](int64_t o0, int64_t o1) { cpu::q8::gemm_quant(g, o0, o1); }, 8);
    }
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.counters["MAC/s"] = benchmark::Counter(static_cast<double>(m * k * oc), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["W B/s"] = benchmark::Counter(static_cast<double>(w1.size()), benchmark::Counter::kIsIterationInvariantRate);
}

void shapes(benchmark::internal::Benchmark* b) {
  for (int64_t threads : {1, 2})
    for (int64_t m : {1, 512})
      for (auto [oc, k] : {std::pair<int64_t, int64_t>{768, 768}, {2048, 768}, {768, 2048}, {32000, 768}}) {
        if (m == 512 && oc == 32000) continue;  // the prompt step computes logits of the last token only
        b->Args({oc, k, m, threads});
      }
  // The machine is shared: with --benchmark_repetitions=N the fastest repetition is the
  // least disturbed one.
  b->ArgNames({"oc", "k", "m", "threads"})->Unit(benchmark::kMicrosecond)->ComputeStatistics("min", [](const std::vector<double>& v) {
    return *std::min_element(v.begin(), v.end());
  });
}

BENCHMARK_CAPTURE(BM_Matmul, q4_0, DType::q4_0)->Apply(shapes);
BENCHMARK_CAPTURE(BM_Matmul, q8_0, DType::q8_0)->Apply(shapes);
BENCHMARK_CAPTURE(BM_Matmul, f16, DType::f16)->Apply(shapes);

}  // namespace
}  // namespace tessera

BENCHMARK_MAIN();
