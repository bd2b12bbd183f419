// The cost model: modelled times follow the documented formula (tile-device.md numbers).
#include "backend/tile/cost_model.h"

#include <gtest/gtest.h>

#include "tile_test_util.h"

namespace tessera::tile {
namespace {

TEST(CostModel, MatrixTimeScalesWithFidelityPassesAndCores) {
  const TilePreset& n150 = tile_presets()[0];
  // 4096 x 4096 x 4096 matmul: 2 * 4096^3 flop over 72 cores x 4096 flop/cycle at 1 GHz.
  KernelWork w{2.0 * 4096.0 * 4096.0 * 4096.0, 0};
  NodeCost lofi = node_cost(n150, Fidelity::lofi, w, 0);
  NodeCost hifi4 = node_cost(n150, Fidelity::hifi4, w, 0);
  EXPECT_NEAR(lofi.matrix_seconds, 2.0 * 4096.0 * 4096.0 * 4096.0 / (4096.0 * 72 * 1e9), 1e-12);
  EXPECT_NEAR(hifi4.matrix_seconds, 4 * lofi.matrix_seconds, 1e-12);
  // 295 TFLOPS at LoFi on the n150 model (the card is quoted at 262).
  EXPECT_NEAR(w.matrix_flops / lofi.matrix_seconds / 1e12, 294.9, 0.1);
  NodeCost bh = node_cost(tile_presets()[1], Fidelity::lofi, w, 0);
  EXPECT_LT(bh.matrix_seconds, lofi.matrix_seconds / 2);  // 140 cores at 1.35 GHz
}

TEST(CostModel, DramBoundNodesCostBytesOverBandwidthPlusOverhead) {
  const TilePreset& n150 = tile_presets()[0];
  NodeCost c = node_cost(n150, Fidelity::hifi4, KernelWork{0, 1}, 288e6);  // 288 MB at 288 GB/s
  EXPECT_NEAR(c.dram_seconds, 1e-3, 1e-12);
  EXPECT_GT(c.total_seconds, c.dram_seconds);
  EXPECT_LT(c.total_seconds, c.dram_seconds + 1e-4);
  EXPECT_NEAR(transfer_seconds(n150, 31.5e9), 1.0, 1e-12);
}

// Through a session: per-node modelled times are filled and add up to the run's.
TEST(CostModel, SessionProfileCarriesModelledTimes) {
  using namespace tile_testing;
  Graph g;
  TensorId x = add_input(g, "x", {64, 256});
  TensorId w = add_weight(g, "w", {512, 256}, tessera::testing::random_floats(512 * 256, 3));
  TensorId y = *g.add_op(OpKind::fully_connected, {x, w});
  TensorId z = *g.add_op(OpKind::silu, {y});
  mark_output(g, z);
  RunResult lofi = run_on(g, "tile", {bytes_of(tessera::testing::random_floats(64 * 256, 4))}, {{"fidelity", "LoFi"}});
  ASSERT_TRUE(lofi.session);
  const RunProfile& p = lofi.session->profile();
  double sum = 0;
  int modelled = 0;
  for (const auto& n : p.nodes)
    if (n.modelled_seconds > 0) {
      sum += n.modelled_seconds;
      ++modelled;
    }
  EXPECT_EQ(modelled, 2);
  EXPECT_NEAR(sum, p.modelled_seconds, 1e-15);
  const Device* tile = lofi.session->devices()[0];
  EXPECT_GT(tile->counters().modelled_transfer_seconds, 0);
}

}  // namespace
}  // namespace tessera::tile
