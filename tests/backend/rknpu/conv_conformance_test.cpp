// Conformance grid like Mesa's Teflon tests: conv2d, depthwise conv2d and fused add over
// input sizes, kernels, channels, strides and padding, on the rknpu device model against
// the cpu's TFLite-exact quantized kernels, within +-2 quantized steps (rknpu.md: Mesa's
// tolerance, the hardware's rounding being undocumented). Reports the exact-match rate.
#include <gtest/gtest.h>

#include "backend/rknpu/rknpu_test_util.h"

namespace tessera::rknpu_test {
namespace {

// Grid points whose MAC count exceeds this are left out to keep the suite near a minute;
// the largest ones (112x112x256 with 5x5 kernels: 20 GMAC) would take minutes on the model.
constexpr int64_t kMaxMacs = 400'000'000;
constexpr int kTolerance = 2;  // quantized steps (rknpu.md)

struct GridResult {
  int cases = 0, skipped = 0, fallbacks = 0;
  int64_t values = 0, exact = 0;
  int max_diff = 0;
};

void run_grid(bool depthwise, bool residual, GridResult& res, const DeviceOptions& opts = {}) {
  const int64_t sizes[] = {3, 5, 8, 80, 112};
  const int64_t kernels[] = {1, 3, 5};
  const int64_t channels[] = {1, 32, 120, 128, 256};
  uint32_t seed = depthwise ? 1000 : 1;
  int index = 0;
  for (int64_t size : sizes)
    for (int64_t k : kernels)
      for (int64_t c : channels)
        for (int64_t stride : {1, 2})
          for (bool same : {true, false}) {
            ++index;
            ConvSpec s;
            s.h = s.w = size;
            s.ic = s.oc = c;
            s.k = k;
            s.stride = stride;
            s.same = same;
            s.depthwise = depthwise;
            s.residual_add = residual;
            s.seed = seed++;
            if (!same && size < k) continue;  // no output
            if (residual && (stride != 1 || !same)) continue;
            // Vary the arithmetic paths across the grid: u8 with wide weights (int16 MACs),
            // u8 with narrow weights (int8 MACs), i8 with per-channel scales.
            s.narrow_weights = index % 3 == 1;
            if (index % 3 == 2 && !residual) {
              s.dtype = DType::i8;
              s.per_channel = true;
            }
            if (index % 4 == 0) s.activation = index % 8 == 0 ? "relu6" : "relu";
            if (s.macs() > kMaxMacs) {
              ++res.skipped;
              continue;
            }
            std::vector<uint8_t> input;
            Graph g = build_conv(s, input);
            Compare r = run_and_compare(g, input, opts);
            ASSERT_TRUE(r.error.empty()) << s.label() << ": " << r.error;
            // The only grid points allowed off the NPU are those whose int16 weights of one
            // 32-kernel group cannot fit the CBUF (a hardware limit, checked by name).
            if (!r.all_on_npu) {
              EXPECT_NE(r.fallback.find("CBUF weight banks"), std::string::npos) << s.label() << ": " << r.fallback;
              res.fallbacks++;
            }
            EXPECT_LE(r.max_diff, kTolerance) << s.label();
            res.cases++;
            res.values += r.n;
            res.exact += r.exact;
            res.max_diff = std::max(res.max_diff, r.max_diff);
          }
}

void report(const char* what, const GridResult& r) {
  std::printf("[rknpu grid] %s: %d cases (%d large ones left out, %d fell back for CBUF), %lld values, exact %.2f%%, max diff %d\n", what,
              r.cases, r.skipped, r.fallbacks, static_cast<long long>(r.values), r.values ? 100.0 * r.exact / r.values : 0.0, r.max_diff);
}

TEST(RknpuConformance, Conv2dGrid) {
  GridResult r;
  run_grid(false, false, r);
  report("conv2d", r);
  EXPECT_GT(r.cases, 50);
  // Exact: each channel's scale pair is proven on its accumulator range (lower.cpp
  // encode_requant; a few near-ties per million values before it).
  EXPECT_EQ(r.exact, r.values) << "max diff " << r.max_diff;
}

TEST(RknpuConformance, DepthwiseGrid) {
  GridResult r;
  run_grid(true, false, r);
  report("depthwise", r);
  EXPECT_GT(r.cases, 50);
  EXPECT_EQ(r.exact, r.values) << "max diff " << r.max_diff;
}

// Dilated kernels run as the kernel they span with zero weights between the taps: exact
// wherever the undilated grid is. (DeepLab's atrous depthwise layers are 3x3 dilated 2.)
TEST(RknpuConformance, DilatedGrid) {
  GridResult r;
  uint32_t seed = 3000;
  int index = 0;
  for (bool depthwise : {false, true})
    for (int64_t size : {9, 33})
      for (int64_t k : {3, 5})
        for (int64_t dilation : {2, 4})
          for (int64_t stride : {1, 2})
            for (bool same : {true, false}) {
              ConvSpec s;
              s.h = s.w = size;
              s.ic = s.oc = depthwise ? 96 : 24;
              s.k = k, s.dilation = dilation, s.stride = stride, s.same = same, s.depthwise = depthwise;
              s.seed = seed++;
              if (!same && size < s.span()) continue;
              ++index;
              s.narrow_weights = index % 3 == 1;
              if (index % 3 == 2) s.dtype = DType::i8, s.per_channel = true;
              if (index % 4 == 0) s.activation = "relu6";
              std::vector<uint8_t> input;
              Graph g = build_conv(s, input);
              Compare c = run_and_compare(g, input);
              ASSERT_TRUE(c.error.empty()) << s.label() << ": " << c.error;
              // The span's zero weights count against the CBUF like any others: the int16
              // 5x5 dilated 4 (17x17) conv's 32-kernel group exceeds the weight banks.
              if (!c.all_on_npu) {
                EXPECT_NE(c.fallback.find("CBUF weight banks"), std::string::npos) << s.label() << ": " << c.fallback;
                r.fallbacks++;
              }
              EXPECT_LE(c.max_diff, 1) << s.label();
              r.cases++;
              r.values += c.n;
              r.exact += c.exact;
              r.max_diff = std::max(r.max_diff, c.max_diff);
            }
  report("dilated conv and depthwise", r);
  EXPECT_GT(r.cases, 40);
  EXPECT_LE(r.fallbacks, 4);
  EXPECT_EQ(r.exact, r.values) << "max diff " << r.max_diff;
}

// A depth multiplier runs as a regular conv with block-diagonal weights (up to 16 input
// channels): exact against the cpu's depthwise kernel. person_detect's first layer is the
// 1-channel, multiplier-8 case.
TEST(RknpuConformance, DepthMultiplierAsBlockDiagonalConv) {
  int64_t values = 0, exact = 0;
  uint32_t seed = 4000;
  for (auto [c, m] : {std::pair<int64_t, int64_t>{1, 8}, {3, 4}, {16, 2}})
    for (bool per_channel : {false, true}) {
      std::vector<uint8_t> input;
      Graph g = build_depthwise_multiplier(c, m, per_channel ? DType::i8 : DType::u8, per_channel, seed++, &input);
      Compare r = run_and_compare(g, input);
      ASSERT_TRUE(r.error.empty()) << c << "x" << m << ": " << r.error;
      EXPECT_TRUE(r.all_on_npu) << c << "x" << m << ": " << r.fallback;
      EXPECT_LE(r.max_diff, 1) << c << "x" << m;
      values += r.n;
      exact += r.exact;
    }
  std::printf("[rknpu] depth multiplier as conv: %lld values, %lld exact\n", static_cast<long long>(values),
              static_cast<long long>(exact));
  EXPECT_EQ(exact, values);
}

// rounding=fast fuses the add into the conv's EW stage (as Mesa does); the conv then
// rounds with one 16-bit multiplier.
TEST(RknpuConformance, ConvWithFusedAddGrid) {
  GridResult r;
  run_grid(false, true, r, {{"rounding", "fast"}});
  report("conv + fused add (rounding=fast)", r);
  EXPECT_GT(r.cases, 10);
  EXPECT_GT(r.exact, r.values * 7 / 10);
}

// The default rounding=exact keeps the add a separate element-wise task.
TEST(RknpuConformance, ConvThenAddGrid) {
  GridResult r;
  run_grid(false, true, r);
  report("conv, then add (rounding=exact)", r);
  EXPECT_GT(r.cases, 10);
  EXPECT_GE(r.exact * 10'000, r.values * 9'999);  // near-ties only
}

}  // namespace
}  // namespace tessera::rknpu_test
