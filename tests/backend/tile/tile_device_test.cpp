// The tile device through the public API: presets, options, properties, memory accounting
// at planning time, uploads through src/convert, offsets, fallback reasons.
#include <gtest/gtest.h>

#include <cstring>

#include "backend/tile/numerics.h"
#include "fixtures.h"
#include "tessera/backend/convert.h"
#include "tessera/backend/plan.h"
#include "tessera/session.h"

namespace tessera {
namespace {

std::unique_ptr<Device> make(const std::string& spec, const DeviceOptions& o = {}) {
  auto d = create_device(spec, o);
  EXPECT_TRUE(d.ok()) << d.status().to_string();
  return d.ok() ? std::move(d).value() : nullptr;
}

TEST(TileDevice, PresetsCarryTheCardsNumbers) {
  auto n150 = make("tile");
  ASSERT_TRUE(n150);
  const DeviceProperties& p = n150->properties();
  EXPECT_EQ(p.name, "tile:wormhole_n150");
  EXPECT_TRUE(p.is_model);
  EXPECT_FALSE(p.sub_allocation);
  EXPECT_EQ(p.capacity_bytes, int64_t{12} << 30);
  EXPECT_EQ(p.alignment_bytes, 32);
  EXPECT_EQ(p.cores, 72);
  EXPECT_EQ(p.regions, kRegionWhole | kRegionRows);
  auto bh = make("tile:blackhole_p150a");
  ASSERT_TRUE(bh);
  EXPECT_EQ(bh->properties().capacity_bytes, int64_t{32} << 30);
  EXPECT_EQ(bh->properties().alignment_bytes, 64);
  EXPECT_EQ(bh->properties().cores, 140);
}

TEST(TileDevice, InvalidPresetAndOptionsAreClearErrors) {
  auto bad = create_device("tile:grayskull");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("wormhole_n150"), std::string::npos) << bad.status().message();
  auto fid = create_device("tile", {{"fidelity", "HiFi9"}});
  ASSERT_FALSE(fid.ok());
  EXPECT_NE(fid.status().message().find("LoFi"), std::string::npos);
  auto w = create_device("tile", {{"weights", "int8"}});
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("bfp8_b"), std::string::npos);
  auto k = create_device("tile", {{"fidelty", "LoFi"}});
  ASSERT_FALSE(k.ok());
  EXPECT_NE(k.status().message().find("fidelty"), std::string::npos);
}

TEST(TileDevice, AllocationBytesIncludeBankRounding) {
  auto d = make("tile");
  // 13 bf16 tiles: 2 pages per bank x 12 banks x 2048 B.
  Format f = Format::tiled(Encoding::bf16, {13 * 32, 32});
  EXPECT_EQ(*f.byte_size(), 13 * 2048);
  EXPECT_EQ(*d->allocation_bytes(f), 24 * 2048);
  Format b8 = Format::tiled(Encoding::bfp8_b, {64, 64});  // 4 tiles of 1088 B
  EXPECT_EQ(*d->allocation_bytes(b8), 12 * 1088);
}

TEST(TileDevice, WriteReadRoundTripThroughBanks) {
  auto d = make("tile");
  Format f = Format::tiled(Encoding::bf16, {3, 40, 70});
  auto bytes = d->allocation_bytes(f);
  ASSERT_TRUE(bytes.ok());
  auto a = d->allocate(*bytes, "x");
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  auto x = testing::random_floats(3 * 40 * 70, 5);
  Placement p{*a, 0, f};
  Format host = Format::row_major(DType::f32, f.shape);
  ASSERT_TRUE(d->write(p, Region::whole(), ConstHostView{x.data(), host}).ok());
  std::vector<float> back(x.size());
  ASSERT_TRUE(d->read(p, Region::whole(), HostView{back.data(), host}).ok());
  // bf16 storage: every value is rounded to nearest even, bit for bit.
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(back[i], tile::round_bf16(x[i])) << i;
  EXPECT_GT(d->counters().modelled_transfer_seconds, 0);
  EXPECT_GT(d->counters().bytes_converted, 0);
}

TEST(TileDevice, RowRegionWriteUpdatesOnlyThoseRows) {
  auto d = make("tile");
  Format f = Format::tiled(Encoding::f32, {2, 64, 48});
  auto a = d->allocate(*d->allocation_bytes(f), "kv");
  ASSERT_TRUE(a.ok());
  Placement p{*a, 0, f};
  auto x = testing::random_floats(2 * 64 * 48, 9);
  Format host = Format::row_major(DType::f32, f.shape);
  ASSERT_TRUE(d->write(p, Region::whole(), ConstHostView{x.data(), host}).ok());
  auto rows = testing::random_floats(2 * 3 * 48, 10);
  Region r = Region::rows(f.shape, 1, 30, 33);  // straddles tile rows 0 and 1
  Status s = d->write(p, r, ConstHostView{rows.data(), Format::row_major(DType::f32, {2, 3, 48})});
  ASSERT_TRUE(s.ok()) << s.to_string();
  std::vector<float> back(x.size());
  ASSERT_TRUE(d->read(p, Region::whole(), HostView{back.data(), host}).ok());
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t i = 0; i < 64; ++i)
      for (int64_t j = 0; j < 48; ++j) {
        int64_t at = (h * 64 + i) * 48 + j;
        float want = (i >= 30 && i < 33) ? rows[(h * 3 + (i - 30)) * 48 + j] : x[at];
        ASSERT_EQ(back[at], want) << h << "," << i << "," << j;
      }
}

TEST(TileDevice, ByteOffsetsAreRefused) {
  auto d = make("tile");
  Format f = Format::tiled(Encoding::f32, {32, 32});
  auto a = d->allocate(2 * *d->allocation_bytes(f), "two tiles");
  ASSERT_TRUE(a.ok());
  std::vector<float> x(1024, 1.0f);
  Status s = d->write(Placement{*a, 4096, f}, Region::whole(),
                      ConstHostView{x.data(), Format::row_major(DType::f32, {32, 32})});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("offset"), std::string::npos) << s.message();
}

// y = x @ w^T with a weight too large for the device.
Graph big_fc_graph(int64_t oc, int64_t ic) {
  Graph g;
  Tensor x;
  x.name = "x";
  x.shape = {1, ic};
  x.role = Role::input;
  TensorId xi = g.add_tensor(x);
  Tensor w;
  w.name = "w";
  w.shape = {oc, ic};
  w.role = Role::weight;
  w.dtype = DType::f32;
  w.data = ConstData{nullptr, oc * ic * 4, nullptr};
  TensorId wi = g.add_tensor(w);
  TensorId y = *g.add_op(OpKind::fully_connected, {xi, wi});
  g.tensor(y).role = Role::output;
  g.inputs = {xi};
  g.outputs = {y};
  return g;
}

TEST(TileDevice, ExceedingCapacityFailsAtPlanningTime) {
  auto tile = make("tile");
  auto cpu = make("cpu");
  // 2^17 x 2^16 bf16 weights = 16 GiB > 12 GiB.
  auto plan = plan_graph(big_fc_graph(int64_t{1} << 17, int64_t{1} << 16), {tile.get(), cpu.get()});
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::out_of_memory);
  EXPECT_NE(plan.status().message().find("tile:wormhole_n150"), std::string::npos) << plan.status().message();
  // The same on the 32 GiB Blackhole card plans.
  auto bh = make("tile:blackhole_p150a");
  EXPECT_TRUE(plan_graph(big_fc_graph(int64_t{1} << 17, int64_t{1} << 16), {bh.get(), cpu.get()}).ok());
}

Graph dequantize_relu_graph() {
  Graph g;
  Tensor x;
  x.name = "q";
  x.shape = {1, 8};
  x.dtype = DType::u8;
  x.quant = {{0.5f}, {128}, -1};
  x.role = Role::input;
  TensorId xi = g.add_tensor(x);
  TensorId y = *g.add_op(OpKind::dequantize, {xi}, {}, "deq", DType::f32);
  TensorId t = *g.add_op(OpKind::transpose, {xi}, {{"perm", std::vector<int64_t>{1, 0}}}, "t", DType::u8, x.quant);
  TensorId r = *g.add_op(OpKind::relu, {y});
  g.tensor(r).role = Role::output;
  g.tensor(t).role = Role::output;
  g.inputs = {xi};
  g.outputs = {r, t};
  return g;
}

TEST(TileDevice, QuantizedNodesRunOnTheFloatPathOrFallBackWithAReason) {
  auto cpu = make("cpu");
  // quantized=cpu: nodes reading u8 codes stay on the cpu, and the plan says why.
  auto exact = make("tile", {{"quantized", "cpu"}});
  auto plan = plan_graph(dequantize_relu_graph(), {exact.get(), cpu.get()});
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  std::string report = plan->report(true);
  EXPECT_NE(report.find("not on tile:wormhole_n150: input 0 'q' (u8) is an integer-quantized tensor"), std::string::npos)
      << report;
  EXPECT_NE(report.find("f32/tile32"), std::string::npos) << report;  // relu still runs on the tile device
  // Default (quantized=float): dequantize runs on the tile device; transpose has no float
  // path for quantized tensors and falls back with that reason.
  auto tile = make("tile");
  auto fplan = plan_graph(dequantize_relu_graph(), {tile.get(), cpu.get()});
  ASSERT_TRUE(fplan.ok()) << fplan.status().to_string();
  report = fplan->report(true);
  EXPECT_NE(report.find("u8/tile32 [1,8]"), std::string::npos) << report;
  EXPECT_NE(report.find("transpose has no float path for quantized tensors"), std::string::npos) << report;
  SessionOptions so;
  so.device = "tile";
  auto s = Session::create(dequantize_relu_graph(), so);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  std::vector<uint8_t> codes = {0, 100, 127, 128, 129, 200, 255, 7};
  ASSERT_TRUE((*s)->set_input(0, codes.data(), 8).ok());
  ASSERT_TRUE((*s)->run().ok());
  auto out = (*s)->output(0);
  ASSERT_TRUE(out.ok());
  const float* y = reinterpret_cast<const float*>(out->data());
  for (int i = 0; i < 8; ++i) EXPECT_EQ(y[i], std::max(0.0f, 0.5f * (codes[i] - 128.0f))) << i;
  auto t = (*s)->output(1);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(*t, codes);
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

Graph fc_graph(const std::vector<float>& w, int64_t oc, int64_t ic) {
  Graph g;
  Tensor x;
  x.name = "x";
  x.shape = {2, ic};
  x.role = Role::input;
  TensorId xi = g.add_tensor(x);
  Tensor wt;
  wt.name = "w";
  wt.shape = {oc, ic};
  wt.role = Role::weight;
  std::vector<uint8_t> bytes(w.size() * 4);
  std::memcpy(bytes.data(), w.data(), bytes.size());
  wt.data = ConstData::from_vector(std::move(bytes));
  TensorId wi = g.add_tensor(wt);
  TensorId y = *g.add_op(OpKind::fully_connected, {xi, wi});
  g.tensor(y).role = Role::output;
  g.inputs = {xi};
  g.outputs = {y};
  return g;
}

TEST(TileDevice, PlanCountsBlockFloatTilesAndBankRounding) {
  auto tile = create_device("tile", {{"weights", "bfp8_b"}});
  auto cpu = create_device("cpu");
  ASSERT_TRUE(tile.ok() && cpu.ok());
  auto plan = plan_graph(fc_graph(testing::random_floats(64 * 64, 31), 64, 64), {tile->get(), cpu->get()});
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  TensorId w = *plan->graph.find_tensor("w");
  const TensorPlacement& tp = plan->tensors[w];
  EXPECT_EQ(tp.format.encoding, Encoding::bfp8_b);
  EXPECT_EQ(tp.format.layout, Layout::tile32);
  // 4 tiles of 64 + 1024 bytes, each bank reserving one 1088-byte page.
  EXPECT_EQ(*tp.format.byte_size(), 4 * 1088);
  EXPECT_EQ(tp.bytes, 12 * 1088);
  EXPECT_EQ(plan->memory[0].weight_bytes, 12 * 1088);
  // x [2, 64] f32: 2 tiles of 4096 B -> 12 x 4096 reserved; y the same.
  EXPECT_EQ(plan->memory[0].peak_bytes(), 12 * 1088 + 2 * 12 * 4096);
  std::string report = plan->report(true);
  EXPECT_NE(report.find("bfp8_b/tile32 [64,64]"), std::string::npos) << report;
}

TEST(TileDevice, NonFiniteWeightsIntoBlockFloatAreRejectedAtUpload) {
  auto w = testing::random_floats(32 * 32, 32);
  w[17] = std::nanf("");
  SessionOptions so;
  so.device = "tile";
  so.device_options = {{"weights", "bfp8_b"}};
  auto s = Session::create(fc_graph(w, 32, 32), so);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("'w'"), std::string::npos) << s.status().message();
  // With bf16 weights the NaN is carried as a NaN (no shared exponent to corrupt).
  so.device_options = {{"weights", "bf16"}};
  EXPECT_TRUE(Session::create(fc_graph(w, 32, 32), so).ok());
}

}  // namespace
}  // namespace tessera
