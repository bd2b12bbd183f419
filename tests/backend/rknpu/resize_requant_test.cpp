// QUANTIZE between 8-bit tensors (a lookup-table task, lower_eltwise.cpp) and
// RESIZE_NEAREST_NEIGHBOR x2 (PPU tasks over a re-shaped view, lower_resize.cpp) on the
// rknpu device model, against the cpu's TFLite-exact kernels: the requantize table is
// TFLite's result on every input code, the resize moves bytes, so both must equal the cpu
// byte for byte. What they cannot take stays on the cpu with the reason; the model rejects
// PPU padding it does not model, naming the field.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "backend/rknpu/emit.h"
#include "backend/rknpu/hw.h"
#include "backend/rknpu/lower.h"
#include "backend/rknpu/regcmd.h"
#include "backend/rknpu/rknpu_test_util.h"
#include "backend/rknpu/tiling.h"
#include "backend/rknpu/transport.h"
#include "ops/quant_math.h"

namespace tessera::rknpu_test {
namespace {

using namespace tessera::rknpu;

void set_output(Graph& g, TensorId y) {
  g.tensor(y).role = Role::output;
  g.outputs = {y};
}

struct Requant {
  DType ti;
  float si;
  int zi;
  DType to;
  float so;
  int zo;
};

// yolov8n's requantize (before its second upsampling) first, then scales up and down,
// saturating ones, and the dtype changes TFLite allows between 8-bit tensors.
const Requant kRequants[] = {
    {DType::i8, 0.0912f, -121, DType::i8, 0.0867f, -120},
    {DType::i8, 0.05f, 3, DType::i8, 0.11f, -7},
    {DType::i8, 0.2f, -30, DType::i8, 0.03f, 10},  // most codes saturate
    {DType::u8, 0.04f, 128, DType::u8, 0.035f, 120},
    {DType::u8, 0.04f, 100, DType::i8, 0.04f, -28},
    {DType::i8, 0.07f, 0, DType::u8, 0.09f, 140},
};

TEST(RknpuRequantize, EqualsTfliteOnEveryInputCode) {
  for (const Requant& c : kRequants) {
    SCOPED_TRACE(std::string(dtype_name(c.ti)) + "->" + dtype_name(c.to) + " " + std::to_string(c.si) + "/" +
                 std::to_string(c.zi) + " -> " + std::to_string(c.so) + "/" + std::to_string(c.zo));
    Graph g;
    TensorId xi = add_input(g, {1, 16, 16, 24}, c.ti, {{c.si}, {c.zi}});
    auto y = g.add_op(OpKind::requantize, {xi}, {}, "y", c.to, QuantParams{{c.so}, {c.zo}});
    ASSERT_TRUE(y.ok());
    set_output(g, *y);
    auto op = lower_node(g, g.nodes()[0]);
    ASSERT_TRUE(op.ok()) << op.status().to_string();
    EXPECT_EQ(op->type, NpuOpType::lut);
    EXPECT_EQ(op->lut_exact_codes, 256);
    // Every code many times, in a different order per channel block.
    std::vector<uint8_t> in(16 * 16 * 24);
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>((i * 37 + i / 256) & 0xff);
    Compare r = run_and_compare(g, in);
    ASSERT_EQ(r.error, "");
    EXPECT_TRUE(r.all_on_npu) << r.fallback;
    EXPECT_EQ(r.exact, r.n) << "max difference " << r.max_diff;
    // The table against TFLite's arithmetic directly (q::Requantize is the cpu kernel's too).
    const q::Requantize rq = q::requantize_params(c.si, c.zi, c.so, c.zo, c.to);
    int saturated = 0;
    for (int v = 0; v < 256; ++v) {
      const int32_t code = c.ti == DType::u8 ? v : v - 128;
      const int32_t want = rq.code(code);
      saturated += want == q::qmin(c.to) || want == q::qmax(c.to);
      const int32_t stored = code - (c.ti == DType::u8 ? 128 : 0);
      ASSERT_EQ(op->lut_lo[stored + 128] + (c.to == DType::u8 ? 128 : 0), want) << v;
    }
    EXPECT_LT(saturated, 256);
  }
}

struct ResizeCase {
  DType t;
  Shape in;
  int half_pixel;
};

Graph resize_graph(const ResizeCase& c, int64_t oh, int64_t ow, int align = 0, QuantParams qy = {}) {
  Graph g;
  const QuantParams q{{0.05f}, {c.t == DType::u8 ? 120 : -3}};
  TensorId xi = add_input(g, c.in, c.t, q);
  auto y = g.add_op(OpKind::resize_nearest, {xi},
                    {{"out_h", oh}, {"out_w", ow}, {"align_corners", int64_t{align}}, {"half_pixel_centers", int64_t{c.half_pixel}}},
                    "y", c.t, qy.empty() ? q : qy);
  EXPECT_TRUE(y.ok()) << y.status().to_string();
  set_output(g, *y);
  return g;
}

TEST(RknpuResize, NearestX2EqualsTheCpuByteForByte) {
  const ResizeCase cases[] = {
      {DType::i8, {1, 20, 20, 256}, 0},  // yolov8n's first upsampling
      {DType::i8, {1, 5, 7, 40}, 1},     // channels not a multiple of 16, half-pixel centres
      {DType::u8, {1, 6, 3, 16}, 0},
      {DType::u8, {1, 1, 1, 5}, 1},
      {DType::i8, {1, 40, 6, 256}, 0},   // 640 surfaces: two tasks per output row parity
  };
  std::mt19937 rng(11);
  for (const ResizeCase& c : cases) {
    SCOPED_TRACE(std::string(dtype_name(c.t)) + shape_str(c.in) + " half_pixel " + std::to_string(c.half_pixel));
    Graph g = resize_graph(c, 2 * c.in[1], 2 * c.in[2]);
    auto op = lower_node(g, g.nodes()[0]);
    ASSERT_TRUE(op.ok()) << op.status().to_string();
    EXPECT_EQ(op->type, NpuOpType::resize);
    auto tl = check_tiling(*op);
    ASSERT_TRUE(tl.ok());
    const int64_t surfaces = (c.in[3] + 15) / 16 * c.in[1];
    EXPECT_EQ(tl->tiles.size(), size_t(2 * ((surfaces + 511) / 512)));
    std::vector<uint8_t> in = random_codes(static_cast<size_t>(c.in[1] * c.in[2] * c.in[3]), rng, 0, 255);
    Compare r = run_and_compare(g, in);
    ASSERT_EQ(r.error, "");
    EXPECT_EQ(r.n, 4 * c.in[1] * c.in[2] * c.in[3]);
    EXPECT_TRUE(r.all_on_npu) << r.fallback;
    EXPECT_EQ(r.exact, r.n) << "max difference " << r.max_diff;
  }
}

TEST(RknpuResize, OtherResizesStayOnTheCpuWithTheReason) {
  const ResizeCase c{DType::i8, {1, 4, 4, 16}, 0};
  struct Bad {
    int64_t oh, ow;
    int align;
    QuantParams qy;
    const char* why;
  };
  const Bad bad[] = {{12, 12, 0, {}, "is not x2"},
                     {8, 4, 0, {}, "is not x2"},
                     {8, 8, 1, {}, "align_corners"},
                     {8, 8, 0, {{0.07f}, {1}}, "changes the quantization"}};
  for (const Bad& b : bad) {
    Graph g = resize_graph(c, b.oh, b.ow, b.align, b.qy);
    auto op = lower_node(g, g.nodes()[0]);
    ASSERT_FALSE(op.ok()) << b.why;
    EXPECT_NE(op.status().message().find(b.why), std::string::npos) << op.status().message();
    // The cpu still runs it, and the session agrees with itself.
    std::mt19937 rng(3);
    Compare r = run_and_compare(g, random_codes(4 * 4 * 16, rng, 0, 255));
    ASSERT_EQ(r.error, "");
    EXPECT_FALSE(r.all_on_npu);
    EXPECT_EQ(r.exact, r.n);
  }
}

TEST(RknpuResize, TheModelChecksThePaddingItIsGiven) {
  const ResizeCase c{DType::i8, {1, 3, 4, 16}, 0};
  Graph g = resize_graph(c, 6, 8);
  auto op = lower_node(g, g.nodes()[0]);
  ASSERT_TRUE(op.ok()) << op.status().to_string();
  auto t = plan_tiling(*op, SchedulePolicy::tessera);
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->tiles.size(), 2u);
  auto tr = make_model_transport(kAddressSpace);
  auto in = tr->create_bo(3 * 4 * 16);
  auto out = tr->create_bo(6 * 8 * 16);
  auto cmd = tr->create_bo(8192);
  ASSERT_TRUE(in.ok() && out.ok() && cmd.ok());
  for (int i = 0; i < 3 * 4 * 16; ++i) in->cpu[i] = static_cast<uint8_t>(i * 7 + 1);
  OpAddresses a{in->dma_address, out->dma_address, 0, 0, 0};
  auto run = [&](const std::vector<uint64_t>& entries) { return submit_stream(*tr, *cmd, entries); };
  std::vector<uint64_t> first;
  for (size_t k = 0; k < 2; ++k) {
    auto e = emit_task(*op, *t, t->tiles[k], a, false);
    ASSERT_TRUE(e.ok()) << e.status().to_string();
    ASSERT_TRUE(append_chain(*e, 0, 0).ok());
    ASSERT_TRUE(run(*e).ok()) << run(*e).to_string();
    if (k == 0) first = *e;
  }
  // Each output pixel is its input pixel: out[2y+dy][2x+dx] = in[y][x] (one block of 16).
  for (int oy = 0; oy < 6; ++oy)
    for (int ox = 0; ox < 8; ++ox)
      for (int ch = 0; ch < 16; ++ch)
        ASSERT_EQ(out->cpu[(oy * 8 + ox) * 16 + ch], in->cpu[((oy / 2) * 4 + ox / 2) * 16 + ch]) << oy << " " << ox << " " << ch;
  // Right padding that does not give the programmed output width is not modelled.
  Status st = run(with_field(first, regs::PPU::POOLING_PADDING_CFG__PAD_RIGHT, 3));
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.to_string().find("PAD_RIGHT"), std::string::npos) << st.to_string();
}

}  // namespace
}  // namespace tessera::rknpu_test
