// Tile kernels against the cpu reference kernels (the oracle), with tolerances that follow
// from the tile formats: activations are float32 tiles (exact), weights bfloat16 unless
// stated (relative rounding <= 2^-8), and matmul operands pass the fidelity's truncation.
#include <cmath>

#include "backend/tile/numerics.h"
#include "tile_test_util.h"
#include "tessera/backend/plan.h"

namespace tessera {
namespace {

using namespace tile_testing;

void expect_close(const std::vector<float>& got, const std::vector<float>& want, double abs_tol, double rel_tol,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < got.size() && bad < 5; ++i)
    if (!(std::fabs(got[i] - want[i]) <= abs_tol + rel_tol * std::fabs(want[i]))) {
      ADD_FAILURE() << what << " [" << i << "]: tile " << got[i] << " cpu " << want[i];
      ++bad;
    }
}

// Runs on cpu and tile; both must succeed; the tile run must stay on the tile device.
void compare(const Graph& g, const std::vector<std::vector<uint8_t>>& in, double abs_tol, double rel_tol,
             const std::string& what, const DeviceOptions& opts = {}) {
  RunResult cpu = run_on(g, "cpu", in);
  RunResult tile = run_on(g, "tile", in, opts);
  ASSERT_EQ(cpu.outputs.size(), g.outputs.size()) << what;
  ASSERT_EQ(tile.outputs.size(), g.outputs.size()) << what;
  EXPECT_TRUE(all_nodes_on(*tile.session, "tile")) << what << "\n" << tile.session->plan().report(false);
  for (size_t o = 0; o < g.outputs.size(); ++o) expect_close(tile.outputs[o], cpu.outputs[o], abs_tol, rel_tol, what);
  // Every node has a modelled time.
  EXPECT_GT(tile.session->profile().modelled_seconds, 0) << what;
}

TEST(TileKernels, BinaryOpsBroadcastExactlyInFloat32) {
  for (OpKind op : {OpKind::add, OpKind::sub, OpKind::mul, OpKind::div, OpKind::floor_div, OpKind::maximum,
                    OpKind::minimum}) {
    Graph g;
    TensorId a = add_input(g, "a", {2, 3, 40});
    TensorId b = add_input(g, "b", {3, 1});
    TensorId y = *g.add_op(op, {a, b});
    mark_output(g, y);
    auto av = testing::random_floats(240, 1), bv = testing::random_floats(3, 2, 0.5f, 2.0f);
    compare(g, {bytes_of(av), bytes_of(bv)}, 0, 0, op_name(op));
  }
}

TEST(TileKernels, UnaryOps) {
  for (OpKind op : {OpKind::relu, OpKind::relu6, OpKind::silu, OpKind::gelu, OpKind::exp, OpKind::logistic,
                    OpKind::tanh, OpKind::rsqrt, OpKind::sqrt, OpKind::leaky_relu, OpKind::hard_swish}) {
    Graph g;
    TensorId a = add_input(g, "a", {5, 33});
    TensorId y = *g.add_op(op, {a});
    mark_output(g, y);
    float lo = op == OpKind::rsqrt || op == OpKind::sqrt ? 0.1f : -8.0f;
    auto av = testing::random_floats(165, 3, lo, 8.0f);
    compare(g, {bytes_of(av)}, 1e-6, 1e-6, op_name(op));
  }
}

TEST(TileKernels, SoftmaxWithMaskAndNorms) {
  Graph g;
  TensorId x = add_input(g, "x", {2, 7, 50});
  TensorId m = add_input(g, "mask", {7, 50});
  TensorId s = *g.add_op(OpKind::softmax, {x, m}, {{"beta", 0.5}});
  auto w = testing::random_floats(50, 4);
  TensorId wi = add_weight(g, "w", {50}, w);
  TensorId r = *g.add_op(OpKind::rms_norm, {x, wi}, {{"eps", 1e-5}});
  TensorId l = *g.add_op(OpKind::layer_norm, {x, wi, wi});
  mark_output(g, s);
  mark_output(g, r);
  mark_output(g, l);
  auto xv = testing::random_floats(700, 5, -4, 4);
  std::vector<float> mv(350);
  for (int i = 0; i < 7; ++i)
    for (int j = 0; j < 50; ++j) mv[i * 50 + j] = j > 40 + i ? -INFINITY : 0.0f;  // causal-style mask
  // Norm weights stay float32 tiles (not matmul weights): float32 arithmetic error only.
  compare(g, {bytes_of(xv), bytes_of(mv)}, 1e-6, 1e-5, "softmax/rms_norm/layer_norm");
}

TEST(TileKernels, RopeBothModes) {
  for (const char* mode : {"normal", "neox"}) {
    Graph g;
    TensorId x = add_input(g, "x", {3, 4, 16});
    TensorId pos = add_input(g, "pos", {3}, DType::i32);
    TensorId y = *g.add_op(OpKind::rope, {x, pos}, {{"mode", std::string(mode)}, {"freq_base", 10000.0}});
    mark_output(g, y);
    auto xv = testing::random_floats(192, 6);
    std::vector<int32_t> p = {5, 6, 117};
    compare(g, {bytes_of(xv), bytes_of(p)}, 2e-6, 1e-5, mode);
  }
}

TEST(TileKernels, DataMovementAndReductions) {
  Graph g;
  TensorId x = add_input(g, "x", {3, 20, 37});
  TensorId z = add_input(g, "z", {3, 5, 37});
  TensorId t = *g.add_op(OpKind::transpose, {x}, {{"perm", std::vector<int64_t>{2, 0, 1}}});
  TensorId c = *g.add_op(OpKind::concat, {x, z}, {{"axis", int64_t{1}}});
  TensorId m = *g.add_op(OpKind::mean, {x}, {{"axes", std::vector<int64_t>{1}}, {"keep_dims", int64_t{1}}});
  TensorId s = *g.add_op(OpKind::sum, {x}, {{"axes", std::vector<int64_t>{0, 2}}, {"keep_dims", int64_t{0}}});
  TensorId mx = *g.add_op(OpKind::reduce_max, {x}, {{"axes", std::vector<int64_t>{-1}}, {"keep_dims", int64_t{0}}});
  TensorId r = *g.add_op(OpKind::reshape, {x}, {{"shape", std::vector<int64_t>{60, 37}}});
  for (TensorId o : {t, c, m, s, mx, r}) mark_output(g, o);
  auto xv = testing::random_floats(3 * 20 * 37, 7), zv = testing::random_floats(3 * 5 * 37, 8);
  compare(g, {bytes_of(xv), bytes_of(zv)}, 1e-5, 1e-5, "movement/reductions");
}

TEST(TileKernels, GetRowsFromARowMajorFloatTable) {
  Graph g;
  auto table = testing::random_floats(50 * 24, 9);
  TensorId tb = add_weight(g, "table", {50, 24}, table);
  TensorId ids = add_input(g, "ids", {4}, DType::i32);
  TensorId y = *g.add_op(OpKind::get_rows, {tb, ids});
  mark_output(g, y);
  std::vector<int32_t> id = {3, 49, 0, 3};
  compare(g, {bytes_of(id)}, 0, 0, "get_rows f32 table");
  // The table is row-major on the device: one page per row.
  RunResult r = run_on(g, "tile", {bytes_of(id)});
  ASSERT_TRUE(r.session);
  EXPECT_NE(r.session->plan().report(true).find("f32/row_major [50,24]"), std::string::npos)
      << r.session->plan().report(true);
}

TEST(TileKernels, GetRowsOutOfRangeIsAnError) {
  Graph g;
  TensorId tb = add_weight(g, "table", {10, 8}, testing::random_floats(80, 1));
  TensorId ids = add_input(g, "ids", {1}, DType::i32);
  mark_output(g, *g.add_op(OpKind::get_rows, {tb, ids}));
  SessionOptions so;
  so.device = "tile";
  auto s = Session::create(g, so);
  ASSERT_TRUE(s.ok());
  int32_t bad = 10;
  ASSERT_TRUE((*s)->set_input(0, &bad, 4).ok());
  Status st = (*s)->run();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::out_of_range);
  EXPECT_NE(st.message().find("index 10"), std::string::npos) << st.message();
}

// fully_connected with a bf16 weight: the tile result equals the documented numerics,
// emulated here in double: in0 = x truncated per fidelity, in1 = bf16(w) truncated.
TEST(TileKernels, FullyConnectedFollowsTheFidelityModel) {
  const int64_t rows = 5, ic = 70, oc = 40;
  auto xv = testing::random_floats(rows * ic, 12), wv = testing::random_floats(oc * ic, 13),
       bv = testing::random_floats(oc, 14);
  Graph g;
  TensorId x = add_input(g, "x", {rows, ic});
  TensorId w = add_weight(g, "w", {oc, ic}, wv);
  TensorId b = add_weight(g, "b", {oc}, bv);
  TensorId y = *g.add_op(OpKind::fully_connected, {x, w, b});
  mark_output(g, y);
  struct Case {
    const char* fidelity;
    int in0_bits, in1_bits;
  };
  for (Case c : {Case{"LoFi", 7, 5}, Case{"HiFi2", 7, 11}, Case{"HiFi4", 11, 11}}) {
    RunResult r = run_on(g, "tile", {bytes_of(xv)}, {{"fidelity", c.fidelity}, {"weights", "bf16"}});
    ASSERT_EQ(r.outputs.size(), 1u);
    double worst = 0, worst_true = 0;
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < oc; ++j) {
        double want = bv[j], exact = bv[j], mag = std::fabs(bv[j]);
        for (int64_t k = 0; k < ic; ++k) {
          float a = tile::keep_significant_bits(xv[i * ic + k], c.in0_bits);
          float wb = tile::keep_significant_bits(tile::round_bf16(wv[j * ic + k]), c.in1_bits);
          want += static_cast<double>(a) * wb;
          exact += static_cast<double>(xv[i * ic + k]) * wv[j * ic + k];
          mag += std::fabs(static_cast<double>(a) * wb);
        }
        double got = r.outputs[0][i * oc + j];
        // float32 accumulation of 70 exact products: |err| <= 70 * 2^-24 * sum|terms|.
        EXPECT_NEAR(got, want, 71 * mag * std::ldexp(1.0, -24)) << c.fidelity << " " << i << "," << j;
        worst = std::max(worst, std::fabs(got - want));
        worst_true = std::max(worst_true, std::fabs(got - exact));
      }
    // Truncation bound against the exact product: in0 loses < 2^-(bits-1) relative, in1 too.
    double bound = 0;
    for (int64_t k = 0; k < ic; ++k) bound += 1.0;  // |x|, |w| < 1
    bound *= std::ldexp(1.0, -(c.in0_bits - 1)) + std::ldexp(1.0, -(std::min(c.in1_bits, 8) - 1));
    EXPECT_LE(worst_true, bound) << c.fidelity;
  }
}

TEST(TileKernels, MatmulBatchedWithBroadcastAndTransposeB) {
  Graph g;
  TensorId a = add_input(g, "a", {2, 3, 9, 40});
  TensorId b = add_input(g, "b", {3, 40, 17});
  TensorId bt = add_input(g, "bt", {1, 1, 17, 40});
  mark_output(g, *g.add_op(OpKind::matmul, {a, b}));
  mark_output(g, *g.add_op(OpKind::matmul, {a, bt}, {{"transpose_b", int64_t{1}}}));
  auto av = testing::random_floats(2 * 3 * 9 * 40, 15), bv = testing::random_floats(3 * 40 * 17, 16),
       btv = testing::random_floats(17 * 40, 17);
  // Activation operands (float32 tiles) at HiFi4 keep 11 significant bits each:
  // |err| <= 40 terms x 2 x 2^-10 with |a|, |b| < 1.
  compare(g, {bytes_of(av), bytes_of(bv), bytes_of(btv)}, 40 * 2 * std::ldexp(1.0, -10), 0, "matmul");
}

TEST(TileKernels, ConvolutionsByIm2col) {
  Graph g;
  TensorId x = add_input(g, "x", {1, 9, 11, 6});
  auto wv = testing::random_floats(8 * 3 * 3 * 6, 18), bv = testing::random_floats(8, 19);
  TensorId w = add_weight(g, "w", {8, 3, 3, 6}, wv);
  TensorId b = add_weight(g, "b", {8}, bv);
  AttrMap attrs = {{"stride_h", int64_t{2}}, {"stride_w", int64_t{1}},
                                            {"pad_top", int64_t{1}},  {"pad_bottom", int64_t{1}},
                                            {"pad_left", int64_t{1}}, {"pad_right", int64_t{1}},
                                            {"activation", std::string("relu6")}};
  mark_output(g, *g.add_op(OpKind::conv2d, {x, w, b}, attrs));
  auto dwv = testing::random_floats(3 * 3 * 12, 20);
  TensorId dw = add_weight(g, "dw", {1, 3, 3, 12}, dwv);
  auto dattrs = attrs;
  dattrs["depth_multiplier"] = int64_t{2};
  dattrs["dilation_w"] = int64_t{2};
  dattrs["pad_left"] = int64_t{2};
  dattrs["pad_right"] = int64_t{2};
  mark_output(g, *g.add_op(OpKind::depthwise_conv2d, {x, dw}, dattrs));
  auto xv = testing::random_floats(9 * 11 * 6, 21);
  // Conv weights are bf16 (relative rounding <= 2^-8) and activations keep 11 bits at
  // HiFi4 (truncation < 2^-10): 54 terms with |x|, |w| < 1.
  compare(g, {bytes_of(xv)}, 54 * (std::ldexp(1.0, -8) + std::ldexp(1.0, -10)), 0, "conv2d/depthwise");
}

TEST(TileKernels, ScatterRowsWritesKvCacheRowsInPlace) {
  Graph g;
  Tensor st;
  st.name = "cache";
  st.shape = {2, 64, 16};
  st.role = Role::state;
  TensorId s = g.add_tensor(st);
  TensorId v = add_input(g, "v", {2, 3, 16});
  TensorId pos = add_input(g, "pos", {1}, DType::i32);
  TensorId u = *g.add_op(OpKind::scatter_rows, {s, v, pos}, {{"axis", int64_t{-2}}});
  TensorId red = *g.add_op(OpKind::sum, {u}, {{"axes", std::vector<int64_t>{1}}, {"keep_dims", int64_t{0}}});
  mark_output(g, red);
  auto vv = testing::random_floats(96, 22);
  std::vector<int32_t> p = {30};
  compare(g, {bytes_of(vv), bytes_of(p)}, 1e-5, 1e-5, "scatter_rows");
  RunResult r = run_on(g, "tile", {bytes_of(vv), bytes_of(p)});
  ASSERT_TRUE(r.session);
  std::vector<float> rows(2 * 64 * 16);
  ASSERT_TRUE(r.session->read_state("cache", Region::whole(), rows.data(), rows.size() * 4).ok());
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 64; ++i)
      for (int j = 0; j < 16; ++j) {
        float want = (i >= 30 && i < 33) ? vv[(h * 3 + i - 30) * 16 + j] : 0.0f;
        ASSERT_EQ(rows[(h * 64 + i) * 16 + j], want);
      }
  // A write past the end of the cache is an error, not a silent clip.
  p[0] = 62;
  ASSERT_TRUE(r.session->set_input(1, p.data(), 4).ok());
  Status bad = r.session->run();
  EXPECT_EQ(bad.code(), StatusCode::out_of_range) << bad.to_string();
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

using namespace tile_testing;

// activations=bf16: activation tiles hold bfloat16, so values round (to nearest even) at
// the boundary and after every kernel; relu commutes with that rounding.
TEST(TileKernels, Bf16ActivationTilesRoundAtEveryStore) {
  Graph g;
  TensorId a = add_input(g, "a", {3, 50});
  TensorId y = *g.add_op(OpKind::relu, {a});
  mark_output(g, y);
  auto av = testing::random_floats(150, 40, -3, 3);
  RunResult r = run_on(g, "tile", {bytes_of(av)}, {{"activations", "bf16"}});
  ASSERT_EQ(r.outputs.size(), 1u);
  for (size_t i = 0; i < av.size(); ++i) EXPECT_EQ(r.outputs[0][i], tile::round_bf16(std::max(av[i], 0.0f))) << i;
  EXPECT_NE(r.session->plan().report(true).find("bf16/tile32 [3,50]"), std::string::npos);
}

}  // namespace
}  // namespace tessera
