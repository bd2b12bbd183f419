// The tile device model: how long this host takes to simulate a small graph (the
// benchmark's measured time), next to the device time the cost model gives it (counter
// modelled_us, per run: modelled, not measured). Args: weight encoding, math fidelity.
// A [32, 512] x [512, 512] projection is DRAM- and overhead-bound in the model, so its
// modelled time follows the weight bytes (bf16 > bfp8_b > bfp4_b), not the fidelity.
#include <benchmark/benchmark.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tessera/session.h"

namespace tessera {
namespace {

std::vector<float> random_floats(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = d(rng);
  return v;
}

// y = silu(x [rows, ic] . w [oc, ic]^T): a transformer feed-forward projection.
Graph fc_graph(int64_t rows, int64_t ic, int64_t oc) {
  Graph g;
  Tensor x;
  x.name = "x";
  x.shape = {rows, ic};
  x.role = Role::input;
  TensorId xi = g.add_tensor(x);
  Tensor w;
  w.name = "w";
  w.shape = {oc, ic};
  w.role = Role::weight;
  auto wv = random_floats(oc * ic, 2);
  std::vector<uint8_t> bytes(wv.size() * 4);
  std::memcpy(bytes.data(), wv.data(), bytes.size());
  w.data = ConstData::from_vector(std::move(bytes));
  TensorId wi = g.add_tensor(w);
  TensorId y = *g.add_op(OpKind::fully_connected, {xi, wi});
  TensorId z = *g.add_op(OpKind::silu, {y});
  g.tensor(z).role = Role::output;
  g.inputs = {xi};
  g.outputs = {z};
  return g;
}

const char* kWeights[] = {"bf16", "bfp8_b", "bfp4_b"};
const char* kFidelity[] = {"LoFi", "HiFi2", "HiFi4"};

void BM_TileFullyConnected(benchmark::State& state) {
  const int64_t rows = 32, ic = 512, oc = 512;
  SessionOptions so;
  so.device = "tile";
  so.device_options = {{"weights", kWeights[state.range(0)]}, {"fidelity", kFidelity[state.range(1)]}};
  auto s = Session::create(fc_graph(rows, ic, oc), so);
  if (!s.ok()) {
    state.SkipWithError(s.status().to_string().c_str());
    return;
  }
  auto x = random_floats(rows * ic, 1);
  if (!(*s)->set_input(0, x.data(), static_cast<int64_t>(x.size() * 4)).ok()) {
    state.SkipWithError("set_input failed");
    return;
  }
  double modelled = 0;
  for (auto _ : state) {
    Status st = (*s)->run();
    if (!st.ok()) {
      state.SkipWithError(st.to_string().c_str());
      return;
    }
    modelled += (*s)->profile().modelled_seconds;
  }
  state.SetLabel(std::string(kWeights[state.range(0)]) + " " + kFidelity[state.range(1)]);
  state.counters["modelled_us"] = benchmark::Counter(modelled * 1e6, benchmark::Counter::kAvgIterations);
}
BENCHMARK(BM_TileFullyConnected)->ArgsProduct({{0, 1, 2}, {0, 1, 2}})->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tessera

BENCHMARK_MAIN();
