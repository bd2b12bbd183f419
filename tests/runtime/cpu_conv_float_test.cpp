// The float conv2d's fast path (kernels/conv_fast.h) and the hybrid conv2d's (f32 input, int8
// filter; kernels/hybrid_fast.h) must give their reference kernel's bits (memcmp) on a grid of
// shapes, at every vector level and thread count; the hybrid path's quantization and panel
// kernels are also checked alone against their scalar definitions and 64-bit sums.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>

#include "backend/cpu/kernels/conv_fast.h"
#include "backend/cpu/kernels/hybrid.h"
#include "backend/cpu/kernels/hybrid_fast.h"
#include "convert/simd.h"
#include "runtime/packed_test_util.h"

namespace tessera {
namespace {

using namespace packed_test;

struct FloatConvSpec {
  int64_t n, h, w, c, oc, k, stride, dil;
  bool same;  // SAME padding (TFLite's split: the smaller half first), else VALID
  bool bias;
  std::string act;
  int64_t pad = -1;  // >= 0: this padding on every side instead
};

std::string label(const FloatConvSpec& s) {
  return "n" + std::to_string(s.n) + " " + std::to_string(s.h) + "x" + std::to_string(s.w) + "x" +
         std::to_string(s.c) + " -> " + std::to_string(s.oc) + " k" + std::to_string(s.k) + " s" +
         std::to_string(s.stride) + " d" + std::to_string(s.dil) + (s.same ? " same" : " valid") +
         (s.pad >= 0 ? " pad" + std::to_string(s.pad) : "") + (s.bias ? " bias " : " ") + s.act;
}

// Seeded values in [-1, 1), about one in eight exactly zero (as after a relu), never all zero.
std::vector<float> float_values(std::mt19937& rng, int64_t n) {
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::uniform_int_distribution<int> zero(0, 7);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = zero(rng) == 0 ? 0.0f : d(rng);
  v[0] = 0.5f;
  return v;
}

Bytes float_bytes(const std::vector<float>& v) {
  Bytes b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// The filter of a conv graph: f32, or int8 codes with scales (a hybrid node: one scale,
// one per output channel all different, or one per output channel all equal).
enum class Filter { f32, i8_per_tensor, i8_per_channel, i8_equal_channels };

Graph float_conv_graph(const FloatConvSpec& s, std::mt19937& rng, Filter filter = Filter::f32) {
  Graph g;
  Tensor x;
  x.name = "x";
  x.dtype = DType::f32;
  x.role = Role::input;
  x.shape = {s.n, s.h, s.w, s.c};
  TensorId xi = g.add_tensor(x);
  g.inputs.push_back(xi);
  Tensor w;
  w.name = "w";
  w.role = Role::weight;
  w.shape = {s.oc, s.k, s.k, s.c};
  if (filter == Filter::f32) {
    w.dtype = DType::f32;
    w.data = ConstData::from_vector(float_bytes(float_values(rng, num_elements(w.shape))));
  } else {
    w.dtype = DType::i8;
    Bytes codes = random_codes(rng, num_elements(w.shape));
    codes[0] = 0x81;  // -127: the filter's extreme code
    w.data = ConstData::from_vector(codes);
    std::uniform_real_distribution<float> sd(0.001f, 0.05f);
    const size_t scales = filter == Filter::i8_per_tensor ? 1 : static_cast<size_t>(s.oc);
    w.quant.scale.assign(scales, sd(rng));
    if (filter == Filter::i8_per_channel)
      for (float& v : w.quant.scale) v = sd(rng);
    w.quant.zero_point.assign(scales, 0);
    w.quant.axis = scales == 1 ? -1 : 0;
  }
  std::vector<TensorId> ins = {xi, g.add_tensor(w)};
  if (s.bias) {
    Tensor b;
    b.name = "b";
    b.dtype = DType::f32;
    b.role = Role::weight;
    b.shape = {s.oc};
    b.data = ConstData::from_vector(float_bytes(float_values(rng, s.oc)));
    ins.push_back(g.add_tensor(b));
  }
  // SAME: outputs ceil(size / stride), the padding's smaller half before.
  auto pads = [&](int64_t size) -> std::pair<int64_t, int64_t> {
    if (s.pad >= 0) return {s.pad, s.pad};
    if (!s.same) return {0, 0};
    const int64_t out = (size + s.stride - 1) / s.stride;
    const int64_t total = std::max<int64_t>((out - 1) * s.stride + (s.k - 1) * s.dil + 1 - size, 0);
    return {total / 2, total - total / 2};
  };
  const auto [top, bottom] = pads(s.h);
  const auto [left, right] = pads(s.w);
  AttrMap attrs{{"activation", s.act},  {"stride_h", s.stride}, {"stride_w", s.stride}, {"dilation_h", s.dil},
                {"dilation_w", s.dil},  {"pad_top", top},       {"pad_bottom", bottom}, {"pad_left", left},
                {"pad_right", right}};
  auto y = g.add_op(OpKind::conv2d, ins, attrs, "conv");
  EXPECT_TRUE(y.ok()) << y.status().to_string();
  g.tensor(*y).role = Role::output;
  g.outputs.push_back(*y);
  return g;
}

// The packed kernels' output of `g` on `input` against the reference kernel's, memcmp equal,
// with this CPU's widest vectors and the portable ones, on 1, 2 and 3 threads.
void expect_packed_equals_reference(const Graph& g, const Bytes& input, const std::string& what) {
  SimdGuard guard;
  const Bytes ref = run_one(g, input, cpu_options("reference", 1));
  ASSERT_FALSE(ref.empty()) << what;
  for (convert::SimdLevel level : {convert::SimdLevel::avx2, convert::SimdLevel::neon, convert::SimdLevel::scalar}) {
    if (convert::set_simd_level(level) != level) continue;
    for (int threads : {1, 2, 3}) {
      const Bytes got = run_one(g, input, cpu_options("packed", threads));
      ASSERT_EQ(got.size(), ref.size()) << what;
      EXPECT_EQ(std::memcmp(got.data(), ref.data(), ref.size()), 0)
          << what << ", " << convert::simd_level_name(convert::simd_level()) << ", " << threads << " threads";
    }
  }
}

// The fast path against the reference kernel, memcmp equal: windows 1x1, 3x3 and YOLOv5's
// 6x6 stride 2, SAME and VALID padding, dilation, depths below, at and above the GEMM's
// single block (816: 1152 = 9 * 128, 2304 = 9 * 256, 1000), output channels not a multiple
// of any vector width, pixel counts with a remainder of one-by-one columns (pixels % 4 != 0,
// in the last batch), pixels whose every tap is padding, each activation, with and without
// a bias; on 1, 2 and 3 threads, with this CPU's widest vectors and the portable ones.
TEST(CpuPacked, FloatConvIsByteIdenticalToTheReferenceKernel) {
  const std::vector<FloatConvSpec> specs = {
      {1, 7, 9, 33, 40, 1, 1, 1, false, true, "relu"},      // 63 pixels
      {2, 5, 5, 64, 24, 1, 1, 1, false, false, "none"},     // 50 pixels over two batches
      {1, 6, 7, 3, 5, 1, 1, 1, false, true, "relu6"},       // depth 3: no peeled terms
      {1, 5, 6, 7, 9, 1, 2, 1, false, true, "none", 2},     // 1x1 stride 2, pixels in the padding
      {1, 20, 22, 3, 16, 6, 2, 1, true, true, "none"},      // YOLOv5's first conv (pad 2)
      {1, 17, 15, 3, 32, 3, 2, 1, true, true, "relu6"},
      {1, 9, 11, 16, 24, 3, 1, 1, true, false, "relu6"},
      {1, 9, 11, 20, 17, 3, 1, 2, true, true, "none"},      // dilation 2
      {1, 8, 9, 12, 33, 3, 2, 2, false, true, "relu"},      // dilation and stride, VALID
      {1, 4, 5, 8, 7, 3, 1, 1, false, true, "none", 3},     // every tap of some pixels padding
      {2, 5, 7, 128, 35, 3, 1, 1, true, true, "relu"},      // depth 1152, 70 pixels
      {1, 4, 5, 256, 64, 3, 1, 1, true, true, "none"},      // depth 2304, 20 pixels
      {1, 3, 5, 256, 19, 3, 2, 1, true, false, "relu6"},    // depth 2304, 6 pixels
      {1, 3, 3, 1000, 18, 1, 1, 1, false, true, "relu"},    // depth 1000, 9 pixels
      {1, 3, 3, 816, 20, 1, 1, 1, false, true, "none"},     // one block exactly
      {1, 3, 3, 820, 20, 1, 1, 1, false, true, "none"},     // two blocks
      {1, 5, 5, 100, 1, 3, 1, 1, true, true, "relu"},       // one output channel, depth 900
      {1, 10, 10, 32, 48, 3, 2, 1, true, true, "relu"},     // 25 pixels, channels 3 x 16
      {1, 6, 9, 24, 40, 3, 1, 1, true, true, "relu_n1_to_1"},
      {1, 7, 5, 40, 17, 3, 1, 1, false, false, "relu_n1_to_1"},
  };
  std::mt19937 rng(4321);
  for (const FloatConvSpec& s : specs) {
    Graph g = float_conv_graph(s, rng);
    // The fast path takes this node (else the comparison below would hold trivially).
    auto packed = cpu::prepare_float_conv2d(g, g.nodes()[0]);
    ASSERT_TRUE(packed.ok() && *packed != nullptr) << label(s);
    const Bytes input = float_bytes(float_values(rng, g.tensor(g.inputs[0]).elements()));
    expect_packed_equals_reference(g, input, label(s));
  }
}

// Where the fast path does not apply the reference kernel runs: a grouped conv, a filter
// with an infinity (whose products with a padding zero would be NaN).
TEST(CpuPacked, FloatConvFastPathRefusesGroupsAndNonFiniteFilters) {
  std::mt19937 rng(99);
  Graph g = float_conv_graph({1, 5, 5, 8, 8, 3, 1, 1, true, true, "none"}, rng);
  auto ok = cpu::prepare_float_conv2d(g, g.nodes()[0]);
  ASSERT_TRUE(ok.ok() && *ok != nullptr);
  // an infinity in the filter
  Tensor& w = g.tensor(g.nodes()[0].inputs[1]);
  std::vector<uint8_t> bytes(w.data->data, w.data->data + w.data->size);
  const float inf = INFINITY;
  std::memcpy(bytes.data() + 4 * 17, &inf, 4);
  w.data = ConstData::from_vector(bytes);
  auto refused = cpu::prepare_float_conv2d(g, g.nodes()[0]);
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ(*refused, nullptr);
  const Bytes input = float_bytes(float_values(rng, g.tensor(g.inputs[0]).elements()));
  EXPECT_EQ(run_one(g, input, cpu_options("packed", 2)), run_one(g, input, cpu_options("reference", 1)));
  // grouped: 8 input channels, a filter of 4 (two groups)
  Graph gg;
  Tensor x;
  x.name = "x";
  x.dtype = DType::f32;
  x.role = Role::input;
  x.shape = {1, 4, 4, 8};
  TensorId xi = gg.add_tensor(x);
  gg.inputs.push_back(xi);
  Tensor gw;
  gw.name = "w";
  gw.dtype = DType::f32;
  gw.role = Role::weight;
  gw.shape = {6, 1, 1, 4};
  gw.data = ConstData::from_vector(float_bytes(float_values(rng, 24)));
  auto y = gg.add_op(OpKind::conv2d, {xi, gg.add_tensor(gw)}, {}, "conv");
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  auto grouped = cpu::prepare_float_conv2d(gg, gg.nodes()[0]);
  ASSERT_TRUE(grouped.ok());
  EXPECT_EQ(*grouped, nullptr);
}

// The hybrid conv2d (f32 input quantized on the fly, int8 filter) against its reference
// kernel, memcmp equal: the float conv grid's windows, strides, dilations, paddings and
// activations with per-tensor filters (symmetric input quantization), per-channel ones
// (asymmetric) and per-channel ones with one scale (symmetric again); odd depths (the last
// pair half padding), a pointwise layer with an odd channel count (gathered, not read in
// place), channel counts off the 16-channel panels, batches of two (each image its own
// quantization), inputs of one sign (the asymmetric zero point at its ends), values rounding
// exactly to a half step, an all-zero image, large magnitudes; on this CPU's vector levels
// (AVX-512 with and without VNNI run under "avx2" when the CPU has them) and the portable
// ones, on 1, 2 and 3 threads.
TEST(CpuPacked, HybridConvIsByteIdenticalToTheReferenceKernel) {
  struct Case {
    FloatConvSpec s;
    Filter f;
    int input;  // 0 mixed signs, 1 all positive, 2 all negative, 3 halves, 4 all zero, 5 large
  };
  const std::vector<Case> cases = {
      {{1, 7, 9, 33, 40, 1, 1, 1, false, true, "relu"}, Filter::i8_per_tensor, 0},      // odd pointwise depth
      {{2, 5, 5, 64, 24, 1, 1, 1, false, false, "none"}, Filter::i8_per_channel, 0},    // pointwise in place, 2 images
      {{1, 6, 7, 3, 5, 3, 2, 1, true, true, "relu6"}, Filter::i8_per_channel, 1},       // a first layer, K = 27
      {{1, 5, 6, 8, 9, 1, 2, 1, false, true, "none", 2}, Filter::i8_per_tensor, 2},     // 1x1 stride 2 with padding
      {{1, 20, 22, 3, 16, 6, 2, 1, true, true, "none"}, Filter::i8_per_channel, 0},     // 6x6 stride 2 (pad 2)
      {{1, 17, 15, 16, 32, 3, 2, 1, true, true, "relu6"}, Filter::i8_equal_channels, 0},
      {{1, 9, 11, 20, 17, 3, 1, 2, true, true, "none"}, Filter::i8_per_tensor, 3},      // dilation 2, exact halves
      {{1, 8, 9, 12, 33, 3, 2, 2, false, true, "relu"}, Filter::i8_per_tensor, 0},      // dilation and stride, VALID
      {{1, 4, 5, 8, 7, 3, 1, 1, false, true, "none", 3}, Filter::i8_per_channel, 0},    // pixels all in the padding
      {{2, 5, 7, 128, 35, 3, 1, 1, true, true, "relu"}, Filter::i8_per_channel, 5},     // depth 1152
      {{1, 4, 5, 256, 64, 3, 1, 1, true, true, "none"}, Filter::i8_per_channel, 0},     // depth 2304
      {{1, 10, 10, 32, 48, 3, 2, 1, true, true, "relu"}, Filter::i8_per_tensor, 4},     // an all-zero image
      {{1, 6, 9, 24, 40, 3, 1, 1, true, true, "relu_n1_to_1"}, Filter::i8_per_channel, 2},
      {{1, 13, 11, 16, 31, 1, 1, 1, false, true, "none"}, Filter::i8_per_channel, 1},   // 143 pixels: all tile sizes
  };
  std::mt19937 rng(2468);
  for (const Case& k : cases) {
    const FloatConvSpec& s = k.s;
    Graph g = float_conv_graph(s, rng, k.f);
    auto packed = cpu::prepare_hybrid_conv2d(g, g.nodes()[0]);
    ASSERT_TRUE(packed.ok() && *packed != nullptr) << label(s);
    std::vector<float> x = float_values(rng, g.tensor(g.inputs[0]).elements());
    for (size_t i = 0; i < x.size(); ++i) {
      float& v = x[i];
      if (k.input == 1) v = std::fabs(v) + 0.25f;
      if (k.input == 2) v = -std::fabs(v) - 0.25f;
      if (k.input == 3) v = (static_cast<float>(static_cast<int>(i % 253) - 126) + 0.5f) / 128.0f;
      if (k.input == 4) v = 0.0f;
      if (k.input == 5) v *= 3.0e6f;
    }
    // The range 127 / 128 makes the symmetric form's 127 / range exactly 128: every x * 128
    // above is an exact half, where rounding half away from zero and to even differ.
    if (k.input == 3) x[0] = 127.0f / 128.0f;
    const Bytes input = float_bytes(x);
    expect_packed_equals_reference(g, input, label(s));
  }
}

// The hybrid fast path's vector quantization equals the scalar definition (hybrid_code) on
// values around every rounding boundary of both forms, and its min / max refuse a NaN.
TEST(CpuPacked, HybridQuantizationCodesEqualTheScalarDefinition) {
  std::mt19937 rng(1357);
  std::uniform_real_distribution<float> d(-3.0f, 3.0f);
  std::vector<float> x(4099);
  for (size_t i = 0; i < x.size(); ++i) {
    // a third random, a third on exact halves of the symmetric step, a third one ulp off them
    const float half = (static_cast<float>(static_cast<int>(i % 509) - 254) + 0.5f) / 127.0f * 2.5f;
    x[i] = i % 3 == 0 ? d(rng) : i % 3 == 1 ? half : std::nextafter(half, i % 2 ? 10.0f : -10.0f);
  }
  x[7] = 2.5f;
  x[8] = -2.5f;
  x[4000] = -6.0f;  // the smallest
  x[4098] = 6.5f;   // the largest, in the vector loop's tail
  for (bool asymmetric : {false, true}) {
    const cpu::HybridQuant h = cpu::hybrid_quant(-2.5f, 2.5f * (asymmetric ? 0.3f : 1.0f), asymmetric);
    ASSERT_FALSE(h.zero);
    std::vector<cpu::hconv::Fns> fns = {cpu::hconv::generic_fns()};
#if defined(__x86_64__)
    if (convert::cpu_has_avx2()) fns.push_back(cpu::hconv::avx2_fns());
#endif
    for (const cpu::hconv::Fns& f : fns) {
      std::vector<int16_t> got(x.size());
      f.codes(x.data(), static_cast<int64_t>(x.size()), h.inv, h.add, h.lo, h.hi, h.offset, got.data());
      int differ = 0;
      for (size_t i = 0; i < x.size(); ++i) differ += got[i] != cpu::hybrid_code(x[i], h) - h.offset;
      EXPECT_EQ(differ, 0) << f.isa << (asymmetric ? " asymmetric" : " symmetric");
      float mn = 0, mx = 0;
      ASSERT_TRUE(f.min_max(x.data(), static_cast<int64_t>(x.size()), &mn, &mx)) << f.isa;
      EXPECT_EQ(mn, *std::min_element(x.begin(), x.end())) << f.isa;
      EXPECT_EQ(mx, *std::max_element(x.begin(), x.end())) << f.isa;
      std::vector<float> with_nan = x;
      with_nan[2049] = NAN;
      EXPECT_FALSE(f.min_max(with_nan.data(), static_cast<int64_t>(with_nan.size()), &mn, &mx)) << f.isa;
    }
  }
}

// Every panel kernel of the hybrid path this CPU can run (portable, AVX2, AVX-512 pairs, and
// the 8-bit form's vpdpbusd or sdot), called directly, against the
// sums computed here in 64 bits and the reference's conversion: row counts through every
// tile size, depths with a half-used last step, 1-16 valid channels, with and without a
// bias, every activation.
TEST(CpuPacked, HybridPanelKernelsGiveTheExactSums) {
  std::mt19937 rng(8642);
  std::uniform_int_distribution<int> code(-255, 255), wt(-128, 127), byte(0, 255), corr(-200000, 200000);
  std::uniform_real_distribution<float> sc(1e-4f, 1e-2f), bs(-2.0f, 2.0f);
  std::vector<std::pair<std::string, cpu::hconv::Fns>> sets = {{"generic", cpu::hconv::generic_fns()}};
#if defined(__x86_64__)
  if (convert::cpu_has_avx2()) sets.push_back({"avx2", cpu::hconv::avx2_fns()});
  if (convert::cpu_avx512()) sets.push_back({"avx512", cpu::hconv::avx512_fns()});
  if (convert::cpu_avx512_vnni()) sets.push_back({"avx512-vnni", cpu::hconv::avx512_vnni_fns()});
#endif
#if defined(__aarch64__)
  if (cpu::hconv::neon_dot_available()) sets.push_back({"neon+dotprod", cpu::hconv::neon_dot_fns()});
#endif
  using cpu::Activation;
  const Activation acts[] = {Activation::none, Activation::relu, Activation::relu6, Activation::relu_n1_to_1};
  int checked_u8 = 0;
  for (int trial = 0; trial < 40; ++trial) {
    const int64_t rows = 1 + trial % 29, ksteps = 1 + (trial * 7) % 41;
    const int nvalid = 1 + trial % 16;
    const bool with_bias = trial % 3 != 0;
    const Activation act = acts[trial % 4];
    std::vector<float> scale(16), bias(16);
    for (int j = 0; j < 16; ++j) scale[j] = sc(rng), bias[j] = bs(rng);
    auto expect = [&](const std::vector<int64_t>& acc, const std::vector<float>& got, const std::string& what) {
      int differ = 0;
      for (int64_t r = 0; r < rows; ++r)
        for (int j = 0; j < 16; ++j) {
          const float g = got[r * 16 + j];
          if (j >= nvalid) {
            differ += !std::isnan(g);  // past nvalid: untouched (NaN sentinels)
            continue;
          }
          float v = static_cast<float>(acc[r * 16 + j]) * scale[j];
          if (with_bias) v += bias[j];
          const float want = cpu::activate(v, act);
          differ += std::memcmp(&g, &want, 4) != 0;
        }
      EXPECT_EQ(differ, 0) << what << " rows " << rows << " steps " << ksteps << " nvalid " << nvalid;
    };
    cpu::hconv::Out o;
    o.scale = scale.data();
    o.bias = with_bias ? bias.data() : nullptr;
    o.act = act;
    o.nvalid = nvalid;
    o.ldy = 16;
    // int16 pairs
    std::vector<int16_t> a(static_cast<size_t>(rows * ksteps * 2)), panel(static_cast<size_t>(ksteps * 32));
    for (auto& v : a) v = static_cast<int16_t>(code(rng));
    for (auto& v : panel) v = static_cast<int16_t>(wt(rng));
    std::vector<int64_t> acc(static_cast<size_t>(rows * 16), 0);
    for (int64_t r = 0; r < rows; ++r)
      for (int j = 0; j < 16; ++j)
        for (int64_t k = 0; k < 2 * ksteps; ++k) acc[r * 16 + j] += int64_t{a[r * 2 * ksteps + k]} * panel[(k / 2 * 16 + j) * 2 + k % 2];
    for (const auto& [name, f] : sets) {
      std::vector<float> y(static_cast<size_t>(rows * 16), NAN);
      o.y = y.data();
      f.panel(rows, ksteps, a.data(), 2 * ksteps, panel.data(), o);
      expect(acc, y, name + " int16");
    }
    // u8 x s8 quads with the correction
    std::vector<uint8_t> a8(static_cast<size_t>(rows * ksteps * 4));
    std::vector<int8_t> panel8(static_cast<size_t>(ksteps * 64));
    std::vector<int32_t> k32(16);
    for (auto& v : a8) v = static_cast<uint8_t>(byte(rng));
    for (auto& v : panel8) v = static_cast<int8_t>(wt(rng));
    for (auto& v : k32) v = corr(rng);
    for (const auto& [name, f] : sets) {
      if (!f.panel_u8) continue;
      // the bytes unsigned (x86's u8 x s8) or signed (sdot's s8 x s8), as the set reads them
      std::vector<int64_t> acc8(static_cast<size_t>(rows * 16), 0);
      for (int64_t r = 0; r < rows; ++r)
        for (int j = 0; j < 16; ++j) {
          for (int64_t k = 0; k < 4 * ksteps; ++k) {
            const uint8_t u = a8[r * 4 * ksteps + k];
            const int64_t av = f.byte_bias == 0 ? int64_t{static_cast<int8_t>(u)} : int64_t{u};
            acc8[r * 16 + j] += av * panel8[(k / 4 * 16 + j) * 4 + k % 4];
          }
          acc8[r * 16 + j] -= k32[j];
        }
      std::vector<float> y(static_cast<size_t>(rows * 16), NAN);
      o.y = y.data();
      f.panel_u8(rows, ksteps, a8.data(), 4 * ksteps, panel8.data(), k32.data(), o);
      expect(acc8, y, name + " u8");
      ++checked_u8;
      // and the 8-bit form's codes: code + byte_bias as the scalar definition gives it
      std::vector<float> xs(37);
      for (auto& v : xs) v = bs(rng);
      const cpu::HybridQuant h = cpu::hybrid_quant(-2.0f, 1.5f, true);
      std::vector<uint8_t> got(xs.size());
      f.codes_u8(xs.data(), static_cast<int64_t>(xs.size()), h.inv, h.add, h.lo, h.hi, got.data());
      for (size_t i = 0; i < xs.size(); ++i)
        EXPECT_EQ(got[i], static_cast<uint8_t>(cpu::hybrid_code(xs[i], h) + f.byte_bias)) << name << " " << i;
    }
  }
  std::printf("[hybrid] panel kernels checked: %zu sets, 8-bit form on %d trials\n", sets.size(), checked_u8);
}

// A NaN in the input: the fast path hands the image to the reference kernel (whose min /
// max order decides the quantization), so the outputs are still the reference's.
TEST(CpuPacked, HybridConvWithANaNInputGivesTheReferenceBytes) {
  std::mt19937 rng(97);
  Graph g = float_conv_graph({1, 6, 6, 8, 16, 3, 1, 1, true, true, "none"}, rng, Filter::i8_per_channel);
  std::vector<float> x = float_values(rng, g.tensor(g.inputs[0]).elements());
  x[40] = NAN;
  const Bytes input = float_bytes(x);
  const Bytes ref = run_one(g, input, cpu_options("reference", 1));
  const Bytes got = run_one(g, input, cpu_options("packed", 2));
  ASSERT_EQ(got.size(), ref.size());
  EXPECT_EQ(std::memcmp(got.data(), ref.data(), ref.size()), 0);
}

}  // namespace
}  // namespace tessera
