// Benchmarks of the cpu reference kernels that dominate models: fully_connected with each
// weight dtype (decode one block at a time), matmul and conv2d, at 1 and 2 threads.
// Run: ./build/bench/cpu_kernels_bench
#include <benchmark/benchmark.h>

#include <cstring>
#include <random>

#include "runtime/demo_models.h"
#include "tessera/session.h"

namespace tessera {
namespace {

std::vector<float> seeded(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

std::vector<uint8_t> as_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// GGUF-style weight bytes of `rows` x `cols` values (block dtypes: random codes and scales,
// which is all a kernel's speed depends on).
std::vector<uint8_t> weight_bytes(DType t, int64_t rows, int64_t cols) {
  std::mt19937 rng(7);
  std::vector<uint8_t> b(*dtype_row_bytes(t, cols) * rows);
  for (auto& x : b) x = static_cast<uint8_t>(rng());
  if (dtype_is_block(t)) {  // keep the f16 block scales finite and small (0x2c00 = 2^-4)
    const int64_t block = t == DType::q8_0 ? kQ8_0BlockBytes : kQ4_0BlockBytes;
    for (size_t i = 0; i < b.size(); i += block) b[i] = 0x00, b[i + 1] = 0x2c;
  }
  if (t == DType::f32) return as_bytes(seeded(rows * cols, 7));
  if (t == DType::f16 || t == DType::bf16)
    for (size_t i = 1; i < b.size(); i += 2) b[i] = 0x3c;  // exponent near 1.0
  return b;
}

struct Prepared {
  std::unique_ptr<Session> session;
  std::vector<uint8_t> input;
};

Prepared prepare(Graph g, std::vector<uint8_t> input, int threads) {
  SessionOptions o;
  o.device_options["threads"] = std::to_string(threads);
  auto s = Session::create(std::move(g), o);
  if (!s.ok()) return {};
  Prepared p{std::move(*s), std::move(input)};
  (void)p.session->set_input(0, p.input.data(), static_cast<int64_t>(p.input.size()));
  return p;
}

TensorId input(Graph& g, Shape s) {
  Tensor x;
  x.name = "x";
  x.shape = std::move(s);
  x.role = Role::input;
  TensorId id = g.add_tensor(x);
  g.inputs = {id};
  return id;
}

void output(Graph& g, TensorId y) {
  g.tensor(y).role = Role::output;
  g.outputs = {y};
}

// y [M, N] = x [M, K] w [N, K]^T with w in dtype `t`.
void BM_FullyConnected(benchmark::State& state, DType t) {
  const int64_t M = state.range(0), K = 1024, N = 1024;
  const int threads = static_cast<int>(state.range(1));
  Graph g;
  TensorId x = input(g, {M, K});
  Tensor w;
  w.name = "w";
  w.shape = {N, K};
  w.dtype = t;
  w.role = Role::weight;
  w.data = ConstData::from_vector(weight_bytes(t, N, K));
  output(g, *g.add_op(OpKind::fully_connected, {x, g.add_tensor(w)}));
  Prepared p = prepare(std::move(g), as_bytes(seeded(M * K, 1)), threads);
  if (!p.session) {
    state.SkipWithError("session failed");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(p.session->run());
  state.counters["MAC/s"] = benchmark::Counter(static_cast<double>(M * K * N), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK_CAPTURE(BM_FullyConnected, f32, DType::f32)->ArgsProduct({{1, 16}, {1, 2}})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_FullyConnected, f16, DType::f16)->ArgsProduct({{1, 16}, {1, 2}})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_FullyConnected, q8_0, DType::q8_0)->ArgsProduct({{1, 16}, {1, 2}})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_FullyConnected, q4_0, DType::q4_0)->ArgsProduct({{1, 16}, {1, 2}})->Unit(benchmark::kMillisecond);

// conv2d 3x3, 32 -> 32 channels on a 56x56 feature map.
void BM_Conv2d(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  Graph g;
  TensorId x = input(g, {1, 56, 56, 32});
  Tensor w;
  w.name = "w";
  w.shape = {32, 3, 3, 32};
  w.role = Role::weight;
  w.data = ConstData::from_vector(as_bytes(seeded(32 * 9 * 32, 2)));
  output(g, *g.add_op(OpKind::conv2d, {x, g.add_tensor(w)},
                      {{"pad_top", int64_t{1}}, {"pad_bottom", int64_t{1}}, {"pad_left", int64_t{1}}, {"pad_right", int64_t{1}}}));
  Prepared p = prepare(std::move(g), as_bytes(seeded(56 * 56 * 32, 3)), threads);
  for (auto _ : state) benchmark::DoNotOptimize(p.session->run());
  state.counters["MAC/s"] =
      benchmark::Counter(56.0 * 56 * 32 * 9 * 32, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Conv2d)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);

// The demo transformer block (two runs of 6 tokens) end to end on the cpu.
void BM_TransformerBlock(benchmark::State& state) {
  demo::DemoModel m = demo::transformer_block(1);
  SessionOptions o;
  o.device_options["threads"] = std::to_string(state.range(0));
  auto s = Session::create(m.graph, o);
  if (!s.ok()) {
    state.SkipWithError("session failed");
    return;
  }
  for (auto _ : state)
    for (const auto& run : m.runs) {
      for (size_t i = 0; i < run.size(); ++i) (void)(*s)->set_input(i, run[i].data(), static_cast<int64_t>(run[i].size()));
      benchmark::DoNotOptimize((*s)->run());
    }
}
BENCHMARK(BM_TransformerBlock)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace tessera

BENCHMARK_MAIN();
