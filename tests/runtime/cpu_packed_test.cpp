// The cpu's packed quantized conv path (kernels/quant_conv_fast.cpp, ukernels/, x86/) must
// give the reference kernels' bytes: on a grid of conv2d / depthwise / fully connected
// shapes, on every shared TFLite model, for any thread count and with the AVX2 or the
// portable micro-kernels. The micro-kernels' requantization is also compared lane by lane
// with the scalar definition, including the single-rounding form and left shifts. (The float
// and hybrid conv fast paths: cpu_conv_float_test.cpp.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "backend/cpu/kernels/quant_math.h"
#include "backend/cpu/ukernels/qconv.h"
#include "convert/simd.h"
#include "fixtures.h"
#include "import/tflite/tflite_importer.h"
#include "runtime/packed_test_util.h"
#include "subgraph.h"
#include "tessera/session.h"

namespace tessera {
namespace {

using namespace packed_test;

QuantParams per_tensor(float s, int64_t zp) {
  QuantParams q;
  q.scale = {s};
  q.zero_point = {zp};
  return q;
}

struct ConvSpec {
  OpKind op;
  DType dt;          // activations and weights
  bool per_channel;  // i8 only
  int64_t n, h, w, c, oc, k, stride, dil, pad;
  std::string act;
};

// A one-op graph with seeded random weights, bias and quantization parameters.
Graph conv_graph(const ConvSpec& s, std::mt19937& rng) {
  Graph g;
  std::uniform_real_distribution<float> scale(0.002f, 0.05f);
  std::uniform_int_distribution<int> zp8(s.dt == DType::u8 ? 0 : -128, s.dt == DType::u8 ? 255 : 127);
  Tensor x;
  x.name = "x";
  x.dtype = s.dt;
  x.role = Role::input;
  x.shape = s.op == OpKind::fully_connected ? Shape{s.n, s.c} : Shape{s.n, s.h, s.w, s.c};
  x.quant = per_tensor(scale(rng), zp8(rng));
  TensorId xi = g.add_tensor(x);
  g.inputs.push_back(xi);
  Tensor w;
  w.name = "w";
  w.dtype = s.dt;
  w.role = Role::weight;
  const int64_t oc = s.oc;  // depthwise: c times the depth multiplier
  if (s.op == OpKind::fully_connected) w.shape = {oc, s.c};
  else if (s.op == OpKind::depthwise_conv2d) w.shape = {1, s.k, s.k, oc};
  else w.shape = {oc, s.k, s.k, s.c};
  if (s.per_channel) {
    w.quant.axis = s.op == OpKind::depthwise_conv2d ? 3 : 0;
    for (int64_t o = 0; o < oc; ++o) {
      w.quant.scale.push_back(scale(rng) * 0.1f);
      w.quant.zero_point.push_back(0);
    }
  } else {
    w.quant = per_tensor(scale(rng) * 0.1f, s.dt == DType::i8 ? 0 : zp8(rng));
  }
  Bytes wb = random_codes(rng, num_elements(w.shape));
  if (s.dt == DType::i8)
    for (auto& b : wb)
      if (b == 0x80) b = 0x81;  // symmetric int8 weights: -127..127
  w.data = ConstData::from_vector(wb);
  TensorId wi = g.add_tensor(w);
  Tensor b;
  b.name = "b";
  b.dtype = DType::i32;
  b.role = Role::weight;
  b.shape = {oc};
  std::vector<int32_t> bias(static_cast<size_t>(oc));
  std::uniform_int_distribution<int32_t> bd(-20000, 20000);
  for (auto& v : bias) v = bd(rng);
  Bytes bb(reinterpret_cast<uint8_t*>(bias.data()), reinterpret_cast<uint8_t*>(bias.data()) + oc * 4);
  b.data = ConstData::from_vector(bb);
  TensorId bi = g.add_tensor(b);
  AttrMap attrs{{"activation", s.act}};
  if (s.op != OpKind::fully_connected) {
    attrs["stride_h"] = s.stride;
    attrs["stride_w"] = s.stride;
    attrs["dilation_h"] = s.dil;
    attrs["dilation_w"] = s.dil;
    attrs["pad_top"] = s.pad;
    attrs["pad_left"] = s.pad;
    attrs["pad_bottom"] = s.pad;
    attrs["pad_right"] = s.pad;
  }
  if (s.op == OpKind::depthwise_conv2d) attrs["depth_multiplier"] = s.oc / s.c;
  // An output scale near the accumulators' spread, so that outputs use the whole range;
  // a tiny one now and then makes multipliers above 1 (left shifts).
  float out_scale = x.quant.scale[0] * w.quant.scale[0] * 60.0f * std::sqrt(static_cast<float>(s.c * s.k * s.k));
  if (s.c % 3 == 0) out_scale = x.quant.scale[0] * w.quant.scale[0] * 0.5f;
  auto y = g.add_op(s.op, {xi, wi, bi}, attrs, "op", s.dt, per_tensor(out_scale, zp8(rng)));
  EXPECT_TRUE(y.ok()) << y.status().to_string();
  g.tensor(*y).role = Role::output;
  g.outputs.push_back(*y);
  return g;
}

std::vector<ConvSpec> grid() {
  std::vector<ConvSpec> v;
  for (DType dt : {DType::u8, DType::i8})
    for (bool pc : {false, true}) {
      if (pc && dt == DType::u8) continue;
      const std::string act = pc ? "relu6" : "none";
      // 1x1 (the GEMM), odd K, channels not a multiple of 16, rows not a multiple of 6
      v.push_back({OpKind::conv2d, dt, pc, 1, 7, 9, 33, 40, 1, 1, 1, 0, act});
      v.push_back({OpKind::conv2d, dt, pc, 2, 5, 5, 64, 24, 1, 1, 1, 0, "relu"});
      // windows: first-layer style, strides, padding, dilation
      v.push_back({OpKind::conv2d, dt, pc, 1, 17, 15, 3, 32, 3, 2, 1, 1, act});
      v.push_back({OpKind::conv2d, dt, pc, 1, 9, 11, 20, 17, 3, 1, 2, 2, "none"});
      v.push_back({OpKind::conv2d, dt, pc, 1, 8, 8, 16, 16, 5, 2, 1, 2, "relu"});
      // kernel rows of 12 bytes (3 taps x 2 channels) and 6 bytes (3 x 1; two images, so
      // that the 8-bit form's im2col steps across an image's end)
      v.push_back({OpKind::conv2d, dt, pc, 1, 9, 9, 2, 8, 3, 1, 1, 1, "none"});
      v.push_back({OpKind::conv2d, dt, pc, 2, 7, 6, 1, 5, 3, 2, 1, 1, "relu"});
      // depthwise
      v.push_back({OpKind::depthwise_conv2d, dt, pc, 1, 13, 12, 32, 32, 3, 1, 1, 1, act});
      v.push_back({OpKind::depthwise_conv2d, dt, pc, 2, 14, 14, 24, 24, 3, 2, 1, 1, "relu6"});
      v.push_back({OpKind::depthwise_conv2d, dt, pc, 1, 10, 9, 7, 7, 5, 1, 2, 4, "none"});
      v.push_back({OpKind::depthwise_conv2d, dt, pc, 1, 6, 6, 48, 48, 2, 1, 1, 0, "relu"});
      // depth multipliers (8 from one channel, as person_detect's first layer; 3 from 5)
      v.push_back({OpKind::depthwise_conv2d, dt, pc, 1, 12, 10, 1, 8, 3, 2, 1, 1, act});
      v.push_back({OpKind::depthwise_conv2d, dt, pc, 2, 7, 9, 5, 15, 3, 1, 1, 1, "relu"});
      // fully connected: one row and several
      v.push_back({OpKind::fully_connected, dt, pc, 1, 1, 1, 1024, 1001, 1, 1, 1, 0, "none"});
      v.push_back({OpKind::fully_connected, dt, pc, 7, 1, 1, 57, 30, 1, 1, 1, 0, "relu"});
    }
  return v;
}

std::string label(const ConvSpec& s) {
  return std::string(op_name(s.op)) + " " + dtype_name(s.dt) + (s.per_channel ? " per-channel" : "") + " n" +
         std::to_string(s.n) + " " + std::to_string(s.h) + "x" + std::to_string(s.w) + "x" + std::to_string(s.c) +
         " -> " + std::to_string(s.oc) + " k" + std::to_string(s.k) + " s" + std::to_string(s.stride) + " d" +
         std::to_string(s.dil) + " p" + std::to_string(s.pad);
}

TEST(CpuPacked, GridIsByteIdenticalToTheReferenceKernels) {
  std::mt19937 rng(1234);
  SimdGuard guard;
  int cases = 0;
  for (const ConvSpec& s : grid()) {
    Graph g = conv_graph(s, rng);
    const Bytes input = random_codes(rng, g.tensor(g.inputs[0]).elements());
    const Bytes ref = run_one(g, input, cpu_options("reference", 1));
    ASSERT_FALSE(ref.empty()) << label(s);
    // every level this CPU has: AVX2 on x86-64, NEON on aarch64, and the scalar kernels
    for (convert::SimdLevel level : {convert::SimdLevel::avx2, convert::SimdLevel::neon, convert::SimdLevel::scalar}) {
      if (convert::set_simd_level(level) != level) continue;
      for (int threads : {1, 3}) {
        const Bytes got = run_one(g, input, cpu_options("packed", threads));
        ASSERT_EQ(got, ref) << label(s) << ", " << convert::simd_level_name(convert::simd_level()) << ", " << threads
                            << " threads";
      }
    }
    ++cases;
  }
  EXPECT_EQ(cases, 45);
}

TEST(CpuPacked, SharedModelsAreByteIdenticalToTheReferenceKernels) {
  const char* models[] = {"mobilenet_v1_0.25_128_quant.tflite", "mobilenet_v2_1.0_224_quant.tflite",
                          "tf2_mobilenet_v2_1.0_224_ptq.tflite", "mobilenet_v2_quantized_1x3x224x224.tflite",
                          "person_detect.tflite", "hello_world_int8.tflite",
                          "movenet_single_pose_lightning_ptq.tflite", "deeplabv3_mnv2_dm05_pascal_quant.tflite",
                          "ssd_mobilenet_v1_coco_quant.tflite",
                          "mobilenet_v1_1.0_224_quant_embedding_extractor.tflite"};
  for (const char* m : models) {
    TESSERA_REQUIRE_FIXTURE(path, std::string("models/tflite/") + m);
    auto g = tflite::load_tflite_file(path);
    ASSERT_TRUE(g.ok()) << m << ": " << g.status().to_string();
    std::mt19937 rng(77);
    std::map<TensorId, Bytes> inputs;
    for (TensorId id : g->inputs) {
      auto hb = g->tensor(id).host_bytes();
      ASSERT_TRUE(hb.ok());
      inputs[id] = random_codes(rng, *hb);
    }
    auto ref = testing::run_graph(*g, inputs, cpu_options("reference", 1));
    ASSERT_TRUE(ref.ok()) << m << ": " << ref.status().to_string();
    for (int threads : {1, 2}) {
      auto got = testing::run_graph(*g, inputs, cpu_options("packed", threads));
      ASSERT_TRUE(got.ok()) << m << ": " << got.status().to_string();
      ASSERT_EQ(got->size(), ref->size());
      for (size_t k = 0; k < ref->size(); ++k)
        EXPECT_EQ((*got)[k], (*ref)[k]) << m << " output " << k << ", " << threads << " threads";
    }
  }
}

// Quantized add and sub run from a table of all operand pairs made at compile time.
TEST(CpuPacked, AddSubAndMulTablesAreByteIdenticalToTheReferenceKernels) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> scale(0.01f, 0.2f);
  for (OpKind op : {OpKind::add, OpKind::sub, OpKind::mul})
    for (DType dt : {DType::u8, DType::i8})
      for (bool broadcast : {false, true}) {
        std::uniform_int_distribution<int> zp(dt == DType::u8 ? 0 : -128, dt == DType::u8 ? 255 : 127);
        Graph g;
        auto input = [&](const std::string& name, Shape shape) {
          Tensor t;
          t.name = name;
          t.dtype = dt;
          t.role = Role::input;
          t.shape = std::move(shape);
          t.quant = per_tensor(scale(rng), zp(rng));
          TensorId id = g.add_tensor(t);
          g.inputs.push_back(id);
          return id;
        };
        TensorId a = input("a", {1, 5, 7, 16});
        TensorId b = input("b", broadcast ? Shape{16} : Shape{1, 5, 7, 16});
        auto y = g.add_op(op, {a, b}, {{"activation", std::string(broadcast ? "relu" : "none")}}, "op", dt,
                          per_tensor(scale(rng), zp(rng)));
        ASSERT_TRUE(y.ok()) << y.status().to_string();
        g.outputs.push_back(*y);
        std::map<TensorId, Bytes> in{{a, random_codes(rng, 560)}, {b, random_codes(rng, broadcast ? 16 : 560)}};
        auto ref = testing::run_graph(g, in, cpu_options("reference", 1));
        auto got = testing::run_graph(g, in, cpu_options("packed", 2));
        ASSERT_TRUE(ref.ok() && got.ok());
        EXPECT_EQ((*got)[0], (*ref)[0]) << op_name(op) << " " << dtype_name(dt) << (broadcast ? " broadcast" : "");
      }
}

// The SIMD kernels of this architecture (AVX2 on x86-64 CPUs that have it, NEON on aarch64).
const cpu::uk::QConvKernels* simd_qconv_kernels() {
#if defined(__x86_64__)
  if (convert::cpu_has_avx2()) return &cpu::uk::avx2_qconv_kernels();
#elif defined(__aarch64__)
  return &cpu::uk::neon_qconv_kernels();
#endif
  return nullptr;
}

// The SIMD GEMM panel against the scalar one on random accumulators and requantization
// parameters: left shifts, right shifts up to 31, both rounding forms, u8 and i8 output,
// zero points in and beyond the dtype's range, full and narrowed activation ranges.
// Every SIMD kernel set this CPU runs: AVX2, AVX2 with AVX-VNNI and with AVX512-VNNI (ymm),
// and the 512-bit set, each where the CPU has it.
std::vector<const cpu::uk::QConvKernels*> simd_kernel_sets() {
  std::vector<const cpu::uk::QConvKernels*> sets;
  if (const cpu::uk::QConvKernels* k = simd_qconv_kernels()) sets.push_back(k);
#if defined(__x86_64__)
  for (const convert::Vnni kind : {convert::Vnni::vex, convert::Vnni::evex}) {
    const bool has = kind == convert::Vnni::vex ? convert::cpu_vnni() == convert::Vnni::vex : convert::cpu_avx512_vnni();
    if (const cpu::uk::QConvKernels* k = has ? cpu::uk::avx2_vnni_qconv_kernels(kind) : nullptr) sets.push_back(k);
  }
  if (const cpu::uk::QConvKernels* k = cpu::uk::avx512_vnni_qconv_kernels()) sets.push_back(k);
#endif
  return sets;
}

TEST(CpuPacked, SimdRequantizationMatchesTheScalarDefinition) {
  const auto sets = simd_kernel_sets();
  if (sets.empty()) GTEST_SKIP() << "no SIMD micro-kernels on this CPU";
  for (const cpu::uk::QConvKernels* simd : sets) {
    SCOPED_TRACE(simd->isa);
    std::mt19937 rng(99);
    std::uniform_int_distribution<int> v16(-255, 255);
    std::uniform_int_distribution<int32_t> mult(1 << 30, INT32_MAX);
    std::uniform_int_distribution<int> shift(-31, 4);
    std::uniform_int_distribution<int32_t> bias(-3000000, 3000000);
    for (int trial = 0; trial < 200; ++trial) {
      const int64_t m = 1 + trial % 7, kpairs = 1 + trial % 40;
      std::vector<int16_t> a(static_cast<size_t>(m * kpairs * 2)), panel(static_cast<size_t>(kpairs * 32));
      for (auto& x : a) x = static_cast<int16_t>(v16(rng));
      for (auto& x : panel) x = static_cast<int16_t>(v16(rng));
      std::vector<int32_t> b(16), mu(16), ls(16), rs(16);
      for (int j = 0; j < 16; ++j) {
        b[j] = bias(rng);
        mu[j] = trial % 13 == 0 ? 0 : mult(rng);
        // single rounding (odd trials) only with multipliers below 1, as qconv.h requires
        const int s = trial % 2 == 1 ? std::min(shift(rng), 0) : shift(rng);
        ls[j] = std::max(s, 0);
        rs[j] = std::max(-s, 0);
      }
      cpu::uk::Requant rq;
      rq.bias = b.data(), rq.mult = mu.data(), rq.lshift = ls.data(), rq.rshift = rs.data();
      rq.single_round = trial % 2 == 1;
      rq.out_i8 = trial % 3 == 0;
      const int32_t qlo = rq.out_i8 ? -128 : 0;
      // zero points in the dtype's range, and beyond it (the int32 output stage)
      rq.zp = trial % 4 == 3 ? std::uniform_int_distribution<int32_t>(-400, 400)(rng)
                             : std::uniform_int_distribution<int32_t>(qlo, qlo + 255)(rng);
      rq.lo = qlo;
      rq.hi = qlo + 255;
      if (trial % 5 >= 3) {  // an activation's narrower range
        rq.lo = std::uniform_int_distribution<int32_t>(qlo, qlo + 120)(rng);
        rq.hi = std::uniform_int_distribution<int32_t>(rq.lo, qlo + 255)(rng);
      }
      const int nvalid = 16 - trial % 4;
      std::vector<uint8_t> ys(static_cast<size_t>(m * 16), 0xAB), yv(ys);
      cpu::uk::scalar_qconv_kernels().gemm_panel(m, kpairs, a.data(), kpairs * 2, panel.data(), rq, 0, nvalid, ys.data(), 16);
      simd->gemm_panel(m, kpairs, a.data(), kpairs * 2, panel.data(), rq, 0, nvalid, yv.data(), 16);
      ASSERT_EQ(yv, ys) << simd->isa << ", trial " << trial << (rq.single_round ? " single rounding" : " double rounding");
    }
  }
}

// Accumulators at the requantization's rounding steps, where the SIMD forms (one floor of
// the 64-bit product plus a constant, or the general two-step form) could differ from the
// scalar definition: for each column a random output value o in the dtype's range, the
// accumulator where o turns into o + 1 estimated in double, and six consecutive
// accumulators around it (one per row: the rows' first activation is r - 2 against a
// weight of 1, the rest of every row the same). Right shifts 0..21 and left shifts up
// to 2, both rounding forms, 4 000 steps per kernel set; output ranges wide enough that
// nothing is clamped.
// One channel of the rounding-step tests: a random Q31 multiplier and shift (mostly right
// shifts up to 21, a few left shifts on every tenth trial; single rounding needs one right
// shift at least) and the sum `target` near which the requantized value steps from o to
// o + 1 (o random in [-120, 120], so nothing clamps).
struct StepChannel {
  int32_t mult = 0, lshift = 0, rshift = 0;
  double target = 0;
};
StepChannel step_channel(std::mt19937& rng, int trial, bool single, int max_rshift = 21) {
  StepChannel c;
  c.mult = std::uniform_int_distribution<int32_t>(1 << 30, INT32_MAX)(rng);
  const int shift = trial % 10 == 0 ? std::uniform_int_distribution<int>(0, 2)(rng)
                                    : -std::uniform_int_distribution<int>(single ? 1 : 0, max_rshift)(rng);
  c.lshift = std::max(shift, 0);
  c.rshift = std::max(-shift, 0);
  // real multiplier M * 2^(shift - 31); the step from o to o + 1 near (o + 0.5) / real
  const double real = std::ldexp(static_cast<double>(c.mult), shift - 31);
  const int o = std::uniform_int_distribution<int>(-120, 120)(rng);
  c.target = (o + 0.5) / real;
  return c;
}

// The output stage of the rounding-step tests: u8 (zero point 128) or int8 (0) on alternate
// pairs of trials, the whole range.
void step_output(cpu::uk::Requant& rq, int trial, bool single) {
  rq.single_round = single;
  rq.out_i8 = trial % 4 >= 2;
  rq.zp = rq.out_i8 ? 0 : 128;
  rq.lo = rq.out_i8 ? -128 : 0;
  rq.hi = rq.lo + 255;
}

TEST(CpuPacked, SimdRequantizationIsExactAtRoundingSteps) {
  const auto sets = simd_kernel_sets();
  if (sets.empty()) GTEST_SKIP() << "no SIMD micro-kernels on this CPU";
  for (const cpu::uk::QConvKernels* simd : sets) {
    SCOPED_TRACE(simd->isa);
    std::mt19937 rng(1234);
    std::uniform_int_distribution<int> v16(-255, 255);
    int64_t exact_steps = 0;
    for (int trial = 0; trial < 250; ++trial) {
      const bool single = trial % 2 == 1;
      const int64_t m = trial % 3 == 0 ? 3 : 6, kpairs = 1 + trial % 9;
      std::vector<int16_t> a(static_cast<size_t>(m * kpairs * 2)), panel(static_cast<size_t>(kpairs * 32));
      for (auto& x : panel) x = static_cast<int16_t>(v16(rng));
      for (int64_t i = 0; i < kpairs * 2; ++i) a[i] = static_cast<int16_t>(v16(rng));
      for (int64_t r = 1; r < m; ++r) std::copy(a.begin(), a.begin() + kpairs * 2, a.begin() + r * kpairs * 2);
      for (int64_t r = 0; r < m; ++r) a[r * kpairs * 2] = static_cast<int16_t>(r - 2), a[r * kpairs * 2 + 1] = 0;
      for (int j = 0; j < 16; ++j) panel[j * 2] = 1, panel[j * 2 + 1] = 0;  // pair 0, column j: (1, 0)
      std::vector<int32_t> b(16), mu(16), ls(16), rs(16), want(16);
      cpu::uk::Requant rq;
      step_output(rq, trial, single);
      for (int j = 0; j < 16; ++j) {
        const StepChannel sc = step_channel(rng, trial, single);
        mu[j] = sc.mult, ls[j] = sc.lshift, rs[j] = sc.rshift;
        const double x = sc.target;
        ASSERT_LT(std::fabs(x), 1e9);  // |o + 0.5| * 2^(1 + 21) at most
        int64_t rest = 0;  // the rows' common part of column j's dot product
        for (int64_t p = 1; p < kpairs; ++p)
          rest += a[p * 2] * panel[(p * 16 + j) * 2] + a[p * 2 + 1] * panel[(p * 16 + j) * 2 + 1];
        b[j] = static_cast<int32_t>(std::llround(x) - rest);
      }
      rq.bias = b.data(), rq.mult = mu.data(), rq.lshift = ls.data(), rq.rshift = rs.data();
      std::vector<uint8_t> ys(static_cast<size_t>(m * 16), 0xAB), yv(ys);
      cpu::uk::scalar_qconv_kernels().gemm_panel(m, kpairs, a.data(), kpairs * 2, panel.data(), rq, 0, 16, ys.data(), 16);
      simd->gemm_panel(m, kpairs, a.data(), kpairs * 2, panel.data(), rq, 0, 16, yv.data(), 16);
      ASSERT_EQ(yv, ys) << simd->isa << ", trial " << trial << (single ? " single rounding" : " double rounding");
      // The window really straddles a step and nothing was clamped.
      for (int j = 0; j < 16; ++j) {
        const bool step = ys[j] != ys[(m - 1) * 16 + j];
        exact_steps += step;
        for (int64_t r = 0; r < m; ++r) {
          const int v = rq.out_i8 ? static_cast<int8_t>(ys[r * 16 + j]) : ys[r * 16 + j];
          ASSERT_GT(v, rq.lo) << "trial " << trial;
          ASSERT_LT(v, rq.hi) << "trial " << trial;
        }
      }
    }
    EXPECT_GT(exact_steps, 3000);  // of 250 x 16 windows (three-row ones miss some)
  }
}

// The VNNI GEMM tile (vpdpwssd) against the AVX2 one on long k runs with the largest
// operands (|x|, |w| = 255) as well as random ones. Runs only on CPUs with AVX-VNNI or
// AVX512-VNNI; elsewhere it reports what it skipped.
// The 8-bit form's split (qconv.h): every pair of centred weights gives parts in int8 whose
// magnitudes add up to at most 128 (so 255 * (|s1| + |s2|) fits vpmaddubsw's int16), kept
// whole wherever that allows it.
TEST(CpuPacked, U8SplitKeepsEveryPairWithinTheInt16Sum) {
  for (int32_t v1 = -255; v1 <= 255; ++v1)
    for (int32_t v2 = -255; v2 <= 255; ++v2) {
      int32_t s1 = 0, s2 = 0;
      cpu::uk::split_u8s8(v1, v2, s1, s2);
      ASSERT_TRUE(s1 >= -128 && s1 <= 127 && s2 >= -128 && s2 <= 127) << v1 << ", " << v2;
      ASSERT_LE(std::abs(s1) + std::abs(s2), 128) << v1 << ", " << v2;
      ASSERT_LE(255 * (std::abs(s1) + std::abs(s2)), 32767);
      const bool whole = std::abs(v1) + std::abs(v2) <= 128 && v1 <= 127 && v2 <= 127;
      if (whole) {
        ASSERT_TRUE(s1 == v1 && s2 == v2) << v1 << ", " << v2;
      }
    }
}

// The float form of the requantization (float_requant_form), where found, against the
// scalar definition: at every rounding step of the channel (the least sum giving each
// output, found by bisection here) and the sums around it, at random sums and at the ends
// of the int32 range. Channels of both rounding forms, real multipliers from 2^-24 to 2,
// random zero points and ranges (whole, ReLU-like from the zero point, narrow), u8 and
// int8; most channels with a multiplier of 2^-10 or more have the form.
TEST(CpuPacked, FloatRequantFormGivesTheScalarDefinitionForEverySum) {
  std::mt19937 rng(2024);
  int tried = 0, found = 0, tried_large = 0, found_large = 0;
  for (int trial = 0; trial < 600; ++trial) {
    const bool single = trial % 2 == 1, out_i8 = trial % 4 >= 2;
    const int32_t mult = std::uniform_int_distribution<int32_t>(1 << 30, INT32_MAX)(rng);
    const int shift = std::uniform_int_distribution<int>(-23, 1)(rng);
    const int32_t lshift = std::max(shift, 0), rshift = std::max(-shift, 0);
    const int32_t tmin = out_i8 ? -128 : 0, tmax = tmin + 255;
    const int32_t zp = std::uniform_int_distribution<int32_t>(tmin, tmax)(rng);
    int32_t lo = tmin, hi = tmax;
    if (trial % 3 == 1) lo = zp;  // ReLU-like
    if (trial % 3 == 2) {
      lo = std::uniform_int_distribution<int32_t>(tmin, tmax - 20)(rng);
      hi = std::uniform_int_distribution<int32_t>(lo + 10, tmax)(rng);
    }
    const bool by_sign = !single && lo < zp;
    cpu::uk::Requant rq;
    const int32_t zero = 0;
    rq.bias = &zero, rq.mult = &mult, rq.lshift = &lshift, rq.rshift = &rshift;
    rq.zp = zp, rq.lo = lo, rq.hi = hi, rq.single_round = single, rq.out_i8 = out_i8;
    auto ref = [&](int64_t x) { return cpu::uk::requantize(static_cast<int32_t>(x), 0, rq); };
    cpu::uk::FloatRq f;
    const bool large = shift >= -9;
    ++tried, tried_large += large;
    if (!cpu::uk::float_requant_form(mult, lshift, rshift, single, zp, lo, hi, by_sign, cpu::uk::float_rq_base(out_i8),
                                     f))
      continue;
    ++found, found_large += large;
    auto got = [&](int64_t x) {
      const int32_t xi = static_cast<int32_t>(x);
      return std::clamp(cpu::uk::float_requant_floor(xi, f.scale, xi < 0 ? f.off_neg : f.off_pos,
                                                     cpu::uk::float_rq_base(out_i8)),
                        lo, hi);
    };
    const int64_t kMin = INT32_MIN, kMax = INT32_MAX;
    std::vector<int64_t> xs = {kMin, kMin + 1, -1, 0, 1, kMax - 1, kMax};
    for (int32_t v = ref(kMin) + 1; v <= ref(kMax); ++v) {
      int64_t a = kMin, b = kMax;  // the least x with ref(x) >= v
      while (a < b) {
        const int64_t mid = a + (b - a) / 2;
        if (ref(mid) >= v) b = mid;
        else a = mid + 1;
      }
      for (int64_t d = -3; d <= 3; ++d) xs.push_back(std::clamp(a + d, kMin, kMax));
    }
    std::uniform_int_distribution<int64_t> any(kMin, kMax);
    for (int i = 0; i < 2000; ++i) xs.push_back(any(rng));
    std::uniform_int_distribution<int64_t> near(-(int64_t{1} << 20), int64_t{1} << 20);
    for (int i = 0; i < 2000; ++i) xs.push_back(near(rng));
    for (int64_t x : xs)
      ASSERT_EQ(got(x), ref(x)) << "trial " << trial << ", sum " << x << ", multiplier " << mult << " shift " << shift
                                << (single ? " single" : " double") << " rounding, zp " << zp << " [" << lo << ", "
                                << hi << "]";
  }
  EXPECT_GT(found, tried / 3);
  EXPECT_GT(found_large, tried_large * 3 / 4);
}

// The 8-bit GEMMs' requantization (AVX-512: rescale16) at its rounding steps, as the test
// above does for the int16 tile: 12 rows whose sums differ by one around (o + 0.5) / real
// multiplier for every channel of two panels, both rounding forms, shifts 0 to -21 and a few
// left shifts, against the scalar definition; one panel at a time and the two-panel tile.
TEST(CpuPacked, SimdU8RequantizationIsExactAtRoundingSteps) {
  int64_t runs = 0, exact_steps = 0, float_panels = 0;
  bool float_sets = false;
  for (const cpu::uk::QConvKernels* simd : simd_kernel_sets()) {
    if (!simd->gemm_u8) continue;
    SCOPED_TRACE(simd->isa);
    float_sets = float_sets || simd->float_requant;
    std::mt19937 rng(4242);
    std::uniform_int_distribution<int> w8(-127, 127), u8(0, 255);
    for (int trial = 0; trial < 200; ++trial) {
      const bool single = trial % 2 == 1;
      const int64_t m = 12, kquads = 1 + trial % 7, k = kquads * 4;
      // two panels [kquads][16][4]; k = 0 of every channel weighs 1, k = 1..3 of quad 0 nothing
      std::vector<int8_t> panels(static_cast<size_t>(2 * kquads * 64));
      for (auto& w : panels) w = static_cast<int8_t>(w8(rng));
      if (simd->u8_split == cpu::uk::U8Split::pairs)  // pairs within vpmaddubsw's exact range
        for (auto& w : panels) w = static_cast<int8_t>(w / 2);
      for (int pn = 0; pn < 2; ++pn)
        for (int j = 0; j < 16; ++j)
          for (int t = 0; t < 4; ++t) panels[(pn * kquads * 16 + j) * 4 + t] = static_cast<int8_t>(t == 0 ? 1 : 0);
      std::vector<uint8_t> x(static_cast<size_t>(m * k));
      for (int64_t i = 0; i < k; ++i) x[i] = static_cast<uint8_t>(u8(rng));
      for (int64_t r = 1; r < m; ++r) std::copy(x.begin(), x.begin() + k, x.begin() + r * k);
      for (int64_t r = 0; r < m; ++r) x[r * k] = static_cast<uint8_t>(100 + r);  // row r: + r
      std::vector<int32_t> b(32), mu(32), ls(32), rs(32);
      cpu::uk::Requant rq;
      step_output(rq, trial, single);
      // the float form's trials: multipliers of 2^-9 and up, where channels mostly have it
      const bool float_trial = trial % 4 < 2 && simd->float_requant;
      for (int c = 0; c < 32; ++c) {
        const StepChannel sc = step_channel(rng, trial, single, float_trial ? 8 : 21);
        mu[c] = sc.mult, ls[c] = sc.lshift, rs[c] = sc.rshift;
        const double target = sc.target;
        int64_t rest = 0;  // the rows' common part of channel c's sum (row 0)
        const int8_t* pc = panels.data() + (c / 16) * kquads * 64;
        for (int64_t q = 0; q < kquads; ++q)
          for (int t = 0; t < 4; ++t) rest += x[q * 4 + t] * pc[(q * 16 + c % 16) * 4 + t];
        b[c] = static_cast<int32_t>(std::llround(target) - rest - 6);  // rows 0..11: target - 6 .. + 5
      }
      rq.bias = b.data(), rq.mult = mu.data(), rq.lshift = ls.data(), rq.rshift = rs.data();
      // every other trial with the float form of the channels that have one (kernel sets
      // with float_requant use it for the panels where all 16 do)
      std::vector<float> fs(32, 0.0f), fp(32, 0.0f), fn(32, 0.0f);
      if (float_trial) {
        for (int c = 0; c < 32; ++c) {
          cpu::uk::FloatRq f;
          if (cpu::uk::float_requant_form(mu[c], ls[c], rs[c], single, rq.zp, rq.lo, rq.hi,
                                          !single && rq.lo < rq.zp, cpu::uk::float_rq_base(rq.out_i8), f))
            fs[c] = f.scale, fp[c] = f.off_pos, fn[c] = f.off_neg;
        }
        rq.fscale = fs.data(), rq.foff_pos = fp.data(), rq.foff_neg = fn.data();
        for (int pn = 0; pn < 2; ++pn)
          float_panels += std::all_of(fs.begin() + pn * 16, fs.begin() + pn * 16 + 16, [](float v) { return v > 0; });
      }
      std::vector<uint8_t> want(static_cast<size_t>(m * 32), 0xAB), got(want), got2(want);
      for (int pn = 0; pn < 2; ++pn) {
        cpu::uk::gemm_u8_scalar(m, kquads, x.data(), k, panels.data() + pn * kquads * 64, nullptr, 0, rq, pn * 16, 16,
                                want.data() + pn * 16, 32);
        simd->gemm_u8(m, kquads, x.data(), k, panels.data() + pn * kquads * 64, nullptr, 0, rq, pn * 16, 16,
                      got.data() + pn * 16, 32);
      }
      ASSERT_EQ(got, want) << "trial " << trial << (single ? " single rounding" : " double rounding");
      if (simd->gemm_u8_pair) {
        simd->gemm_u8_pair(m, kquads, x.data(), k, panels.data(), nullptr, 0, nullptr, 0, rq, 0, 16, got2.data(), 32);
        ASSERT_EQ(got2, want) << "two panels, trial " << trial;
      }
      for (int c = 0; c < 32; ++c) exact_steps += want[c] != want[(m - 1) * 32 + c];
      ++runs;
    }
  }
  if (runs == 0) GTEST_SKIP() << "no 8-bit GEMM micro-kernels on this CPU";
  EXPECT_GT(exact_steps, runs * 32 * 9 / 10);  // nearly every window straddles a step
  if (float_sets) {
    EXPECT_GT(float_panels, 20);  // the float form ran on many panels
  }
  // Exact ties: multipliers 2^30 and 3 * 2^29 make x * M + the rounding constant a multiple
  // of 2^(31 + shift) for many small sums x, negative ones included (where double rounding's
  // constant is 2^31 less); every sum from -400 to 400, right shifts 1 to 8.
  for (const cpu::uk::QConvKernels* simd : simd_kernel_sets()) {
    if (!simd->gemm_u8) continue;
    const int64_t m = 12, kquads = 1, k = 4;
    std::vector<int8_t> panel(64, 0);
    for (int j = 0; j < 16; ++j) panel[j * 4] = 1;  // channel j's sum: bias + x[r][0]
    std::vector<uint8_t> x(static_cast<size_t>(m * k), 0);
    for (int64_t r = 0; r < m; ++r) x[r * k] = static_cast<uint8_t>(r);
    std::vector<int32_t> b(16), mu(16), ls(16, 0), rs(16);
    for (int j = 0; j < 16; ++j) mu[j] = j % 2 ? (3 << 29) : (1 << 30), rs[j] = 1 + j / 2;
    // also with a ReLU range (low end the zero point), where the SIMD form may round the
    // negative sums without the sign term: they clamp to the low end either way
    for (const bool relu : {false, true})
    for (const bool single : {false, true})
      for (int base = -400; base <= 400; base += 12) {
        for (int j = 0; j < 16; ++j) b[j] = base;
        cpu::uk::Requant rq;
        rq.bias = b.data(), rq.mult = mu.data(), rq.lshift = ls.data(), rq.rshift = rs.data();
        rq.single_round = single, rq.out_i8 = true, rq.zp = relu ? -10 : 0, rq.lo = relu ? -10 : -128, rq.hi = 127;
        std::vector<uint8_t> want(static_cast<size_t>(m * 16)), got(want.size());
        cpu::uk::gemm_u8_scalar(m, kquads, x.data(), k, panel.data(), nullptr, 0, rq, 0, 16, want.data(), 16);
        simd->gemm_u8(m, kquads, x.data(), k, panel.data(), nullptr, 0, rq, 0, 16, got.data(), 16);
        ASSERT_EQ(got, want) << simd->isa << ", sums from " << base << (single ? ", single" : ", double") << " rounding"
                             << (relu ? ", ReLU" : "");
      }
  }
}

// The 8-bit GEMM (raw input rows, the split weights, their fixes, the bias less x_zp * sum v)
// gives the int16 GEMM's bytes (centred rows and weights): its scalar definitions and every
// SIMD kernel this CPU runs (AVX2's vpmaddubsw form with pair-split weights; VNNI's
// vpdpbusd form with byte-split weights), for u8 input and for int8 input (the flip form:
// bytes read as x + 128). Weights mostly small with some anywhere in [-255, 255] (so that
// weights need fixes in either split), rows of the largest input, rows from 1 to 13 (whole
// tiles and every tail), k from 4 to 160, fewer valid channels than 16.
TEST(CpuPacked, U8GemmGivesTheInt16GemmBytes) {
  struct Form {
    cpu::uk::U8Split split;
    const cpu::uk::QConvKernels* simd;  // nullptr: the scalar definitions only
  };
  std::vector<Form> forms = {{cpu::uk::U8Split::pairs, nullptr}, {cpu::uk::U8Split::bytes, nullptr}};
  for (const cpu::uk::QConvKernels* k : simd_kernel_sets())
    if (k->gemm_u8) forms.push_back({k->u8_split, k});
  int64_t fixes_seen[2] = {0, 0}, simd_runs = 0;
  for (const Form& form : forms) {
    for (const bool flip : {false, true}) {
      std::mt19937 rng(4321);
      std::uniform_int_distribution<int> small(-40, 40), any(-255, 255), u8(0, 255), pct(0, 99);
      std::uniform_int_distribution<int32_t> mult(1 << 30, INT32_MAX);
      std::uniform_int_distribution<int> shift(-20, -6);
      std::uniform_int_distribution<int32_t> bias(-300000, 300000);
      for (int trial = 0; trial < 300; ++trial) {
        const int64_t m = 1 + trial % 13, k = 4 * (1 + trial % 40), kpairs = k / 2;
        const int nvalid = 16 - trial % 5;
        const int32_t zx = u8(rng) - (flip ? 128 : 0);
        std::vector<int16_t> v(static_cast<size_t>(16 * k), 0);
        for (int j = 0; j < nvalid; ++j)
          for (int64_t i = 0; i < k; ++i) {
            const int r = pct(rng);
            v[j * k + i] = static_cast<int16_t>(r < 5 ? any(rng) : r < 8 ? (r % 2 ? 64 : -64) : small(rng));
          }
        // raw bytes; the largest input value on every third row (255, or int8's 127)
        std::vector<uint8_t> x(static_cast<size_t>(m * k));
        for (int64_t r = 0; r < m; ++r)
          for (int64_t i = 0; i < k; ++i) x[r * k + i] = static_cast<uint8_t>(r % 3 == 1 ? (flip ? 127 : 255) : u8(rng));
        // the int16 form: centred rows, panel [kpairs][16][2]
        std::vector<int16_t> a(static_cast<size_t>(m * k)), panel(static_cast<size_t>(kpairs * 32), 0);
        for (size_t i = 0; i < x.size(); ++i)
          a[i] = static_cast<int16_t>((flip ? static_cast<int32_t>(static_cast<int8_t>(x[i])) : x[i]) - zx);
        for (int j = 0; j < 16; ++j)
          for (int64_t i = 0; i < k; ++i) panel[((i / 2) * 16 + j) * 2 + i % 2] = v[j * k + i];
        std::vector<int32_t> b(16), mu(16), ls(16, 0), rs(16);
        for (int j = 0; j < 16; ++j) b[j] = bias(rng), mu[j] = mult(rng), rs[j] = -shift(rng);
        cpu::uk::Requant rq;
        rq.bias = b.data(), rq.mult = mu.data(), rq.lshift = ls.data(), rq.rshift = rs.data();
        rq.single_round = trial % 2 == 1;
        rq.out_i8 = trial % 3 == 0;
        rq.lo = rq.out_i8 ? -128 : 0;
        rq.hi = rq.lo + 255;
        rq.zp = rq.lo + 100;
        std::vector<uint8_t> want(static_cast<size_t>(m * 16), 0xAB);
        cpu::uk::scalar_qconv_kernels().gemm_panel(m, kpairs, a.data(), k, panel.data(), rq, 0, nvalid, want.data(),
                                                   16);
        // the 8-bit form
        cpu::uk::U8Panels u8p;
        ASSERT_TRUE(cpu::uk::pack_u8_panels(v.data(), 16, k, 1 << 30, u8p, form.split));
        fixes_seen[static_cast<int>(form.split)] += static_cast<int64_t>(u8p.fixes.size());
        std::vector<int32_t> b8(16);
        const int64_t zu = zx + (flip ? 128 : 0);
        for (int j = 0; j < 16; ++j)
          b8[j] = static_cast<int32_t>(static_cast<uint32_t>(b[j]) - static_cast<uint32_t>(zu * u8p.vsum[j]));
        cpu::uk::Requant rq8 = rq;
        rq8.bias = b8.data();
        const int64_t nfix = static_cast<int64_t>(u8p.fixes.size());
        std::vector<uint8_t> got(want.size(), 0xAB);
        (flip ? cpu::uk::gemm_u8_flip_scalar : cpu::uk::gemm_u8_scalar)(
            m, u8p.kquads, x.data(), k, u8p.panels.data(), u8p.fixes.data(), nfix, rq8, 0, nvalid, got.data(), 16);
        ASSERT_EQ(got, want) << "scalar, trial " << trial << (flip ? ", int8 input" : ", u8 input");
        if (form.simd) {
          const cpu::uk::GemmU8Fn fast = flip ? form.simd->gemm_u8_flip : form.simd->gemm_u8;
          ASSERT_NE(fast, nullptr) << form.simd->isa;
          std::vector<uint8_t> gotv(want.size(), 0xAB);
          fast(m, u8p.kquads, x.data(), k, u8p.panels.data(), u8p.fixes.data(), nfix, rq8, 0, nvalid, gotv.data(),
               16);
          ASSERT_EQ(gotv, want) << form.simd->isa << ", trial " << trial << (flip ? ", int8 input" : ", u8 input");
          ++simd_runs;
        }
      }
    }
  }
  // the fixes were exercised in both splits (the byte split needs fewer: only |v| > 127)
  EXPECT_GT(fixes_seen[0], 1000);
  EXPECT_GT(fixes_seen[1], 500);
  // every SIMD kernel set of this CPU ran both inputs' forms
  EXPECT_EQ(simd_runs, 2 * 300 * static_cast<int64_t>(forms.size() - 2));
  // the threshold: more fixes than allowed leaves the layer to the int16 form
  std::vector<int16_t> big(16 * 8, 200);
  cpu::uk::U8Panels none;
  EXPECT_FALSE(cpu::uk::pack_u8_panels(big.data(), 16, 8, 10, none));
  EXPECT_FALSE(cpu::uk::pack_u8_panels(big.data(), 16, 8, 10, none, cpu::uk::U8Split::bytes));
}

// The two-panel 8-bit GEMM (where a kernel set has one) gives the bytes of its scalar
// definition panel by panel: 32 channels, the second panel's valid count from 16 down to 12,
// weights needing fixes in both panels, u8 and int8 input, rows 1 to 30 (whole tiles and
// every tail of a 12-row tile), single and double rounding.
TEST(CpuPacked, U8GemmPairGivesTheSinglePanelBytes) {
  int64_t runs = 0;
  for (const cpu::uk::QConvKernels* kern : simd_kernel_sets()) {
    if (!kern->gemm_u8_pair) continue;
    for (const bool flip : {false, true}) {
      std::mt19937 rng(99);
      std::uniform_int_distribution<int> small(-60, 60), any(-255, 255), u8(0, 255), pct(0, 99);
      std::uniform_int_distribution<int32_t> mult(1 << 30, INT32_MAX), bias(-300000, 300000);
      std::uniform_int_distribution<int> shift(-20, -6);
      for (int trial = 0; trial < 120; ++trial) {
        const int64_t m = 1 + trial % 30, k = 4 * (1 + trial % 37);
        const int nvalid1 = 16 - trial % 5;
        std::vector<int16_t> v(static_cast<size_t>(32 * k), 0);
        for (int j = 0; j < 16 + nvalid1; ++j)
          for (int64_t i = 0; i < k; ++i) v[j * k + i] = static_cast<int16_t>(pct(rng) < 4 ? any(rng) : small(rng));
        std::vector<uint8_t> x(static_cast<size_t>(m * k));
        for (auto& b : x) b = static_cast<uint8_t>(u8(rng));
        cpu::uk::U8Panels u8p;
        ASSERT_TRUE(cpu::uk::pack_u8_panels(v.data(), 32, k, 1 << 30, u8p, kern->u8_split));
        std::vector<int32_t> b(32), mu(32), ls(32, 0), rs(32);
        for (int j = 0; j < 32; ++j) b[j] = bias(rng), mu[j] = mult(rng), rs[j] = -shift(rng);
        cpu::uk::Requant rq;
        rq.bias = b.data(), rq.mult = mu.data(), rq.lshift = ls.data(), rq.rshift = rs.data();
        rq.single_round = trial % 2 == 1;
        rq.out_i8 = trial % 3 == 0;
        rq.lo = rq.out_i8 ? -128 : 0;
        rq.hi = rq.lo + 255;
        rq.zp = rq.lo + 90;
        const int8_t* p1 = u8p.panels.data() + u8p.kquads * 64;
        const cpu::uk::U8Fix* f = u8p.fixes.data();
        const int64_t s0 = u8p.fix_start[0], s1 = u8p.fix_start[1], s2 = u8p.fix_start[2];
        std::vector<uint8_t> want(static_cast<size_t>(m * 32), 0xAB), got(want.size(), 0xAB);
        const auto one = flip ? cpu::uk::gemm_u8_flip_scalar : cpu::uk::gemm_u8_scalar;
        one(m, u8p.kquads, x.data(), k, u8p.panels.data(), f + s0, s1 - s0, rq, 0, 16, want.data(), 32);
        one(m, u8p.kquads, x.data(), k, p1, f + s1, s2 - s1, rq, 16, nvalid1, want.data() + 16, 32);
        (flip ? kern->gemm_u8_pair_flip : kern->gemm_u8_pair)(m, u8p.kquads, x.data(), k, u8p.panels.data(), f + s0,
                                                              s1 - s0, f + s1, s2 - s1, rq, 0, nvalid1, got.data(), 32);
        ASSERT_EQ(got, want) << kern->isa << ", trial " << trial << (flip ? ", int8 input" : ", u8 input");
        ++runs;
      }
    }
  }
  if (runs == 0) GTEST_SKIP() << "no kernel set of this CPU has a two-panel GEMM";
}

// The byte split: every weight in [-128, 127], kept whole wherever it fits.
TEST(CpuPacked, U8ByteSplitKeepsEveryWeightThatFits) {
  std::vector<int16_t> v;
  for (int32_t x = -255; x <= 255; ++x) v.push_back(static_cast<int16_t>(x));
  while (v.size() % 4) v.push_back(0);
  const int64_t k = static_cast<int64_t>(v.size());
  cpu::uk::U8Panels out;
  ASSERT_TRUE(cpu::uk::pack_u8_panels(v.data(), 1, k, 1 << 30, out, cpu::uk::U8Split::bytes));
  int64_t fixed = 0;
  for (int64_t i = 0; i < k; ++i) {
    const int32_t part = out.panels[((i / 4) * 16) * 4 + i % 4];
    int32_t rest = 0;
    for (const cpu::uk::U8Fix& f : out.fixes)
      if (f.k == i && f.lane == 0) rest += f.r;
    ASSERT_EQ(part + rest, v[i]) << i;
    if (v[i] >= -128 && v[i] <= 127) {
      ASSERT_EQ(rest, 0) << v[i];
    }
    fixed += rest != 0;
  }
  EXPECT_EQ(fixed, 255 - 127 + 255 - 128);
}

TEST(CpuPacked, VnniGemmMatchesAvx2) {
#if defined(__x86_64__)
  const cpu::uk::QConvKernels* vnni = cpu::uk::avx2_vnni_qconv_kernels(convert::cpu_vnni());
  if (!vnni || !convert::cpu_has_avx2()) GTEST_SKIP() << "this CPU has no AVX-VNNI / AVX512-VNNI";
  const cpu::uk::QConvKernels& avx2 = cpu::uk::avx2_qconv_kernels();
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> v16(-255, 255);
  for (int trial = 0; trial < 40; ++trial) {
    const int64_t m = 6 + trial % 8, kpairs = 1 + trial * 37 % 600;
    std::vector<int16_t> a(static_cast<size_t>(m * kpairs * 2)), panel(static_cast<size_t>(kpairs * 32));
    const bool extreme = trial % 4 == 0;
    for (auto& x : a) x = static_cast<int16_t>(extreme ? 255 : v16(rng));
    for (auto& x : panel) x = static_cast<int16_t>(extreme ? (trial % 8 == 0 ? 255 : -255) : v16(rng));
    std::vector<int32_t> b(16, 0), mu(16, 1 << 30), ls(16, 0), rs(16, 12);
    cpu::uk::Requant rq;
    rq.bias = b.data(), rq.mult = mu.data(), rq.lshift = ls.data(), rq.rshift = rs.data();
    rq.zp = 0, rq.lo = 0, rq.hi = 255;
    std::vector<uint8_t> y1(static_cast<size_t>(m * 16)), y2(y1.size());
    avx2.gemm_panel(m, kpairs, a.data(), kpairs * 2, panel.data(), rq, 0, 16, y1.data(), 16);
    vnni->gemm_panel(m, kpairs, a.data(), kpairs * 2, panel.data(), rq, 0, 16, y2.data(), 16);
    ASSERT_EQ(y2, y1) << vnni->isa << ", trial " << trial;
  }
#else
  GTEST_SKIP() << "x86-64 only";
#endif
}

// Every SIMD ADD / SUB of this CPU against TFLite's arithmetic (q::add_codes, which the cpu's
// table and the reference kernel use) on every pair of operand codes, for random scales spanning
// output multipliers below and above 1, random zero points and activation ranges.
TEST(CpuPacked, SimdAddMatchesTheReferenceArithmeticOnEveryOperandPair) {
  const std::vector<const cpu::uk::QConvKernels*> sets = simd_kernel_sets();
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> log_scale(-9.0f, 1.0f);
  std::uniform_int_distribution<int> u8(0, 255);
  std::vector<uint8_t> a(65536), b(65536);
  for (int i = 0; i < 65536; ++i) a[i] = static_cast<uint8_t>(i >> 8), b[i] = static_cast<uint8_t>(i);
  for (int trial = 0; trial < 24; ++trial) {
    const bool i8 = trial % 2 == 1, subtract = trial % 4 >= 2;
    const int32_t off = i8 ? -128 : 0;
    auto zp = [&] { return u8(rng) + off; };
    const float s1 = std::exp(log_scale(rng)), s2 = std::exp(log_scale(rng)), so = std::exp(log_scale(rng));
    const int32_t z1 = zp(), z2 = zp(), zo = zp();
    const cpu::q::AddRescale r = cpu::q::add_rescale(s1, z1, s2, z2, so, zo);
    cpu::uk::QAdd p;
    p.z1 = z1, p.z2 = z2, p.zo = zo, p.subtract = subtract, p.i8 = i8;
    p.lo = trial % 3 == 0 ? zo : off;  // a relu on some trials
    p.hi = off + 255;
    const cpu::q::Multiplier* m[3] = {&r.m1, &r.m2, &r.mo};
    for (int i = 0; i < 3; ++i) {
      p.mult[i] = m[i]->multiplier;
      p.lshift[i] = std::max(m[i]->shift, 0);
      p.rshift[i] = std::max(-m[i]->shift, 0);
    }
    std::vector<uint8_t> want(65536);
    for (int i = 0; i < 65536; ++i) {
      const int32_t va = i8 ? static_cast<int8_t>(a[i]) : a[i], vb = i8 ? static_cast<int8_t>(b[i]) : b[i];
      const int32_t v = cpu::q::clamp(cpu::q::add_codes(r, va, vb, subtract), p.lo, p.hi);
      want[i] = static_cast<uint8_t>(v);
    }
    for (const cpu::uk::QConvKernels* simd : sets) {
      if (!simd->add) continue;
      // Lengths that end inside a vector as well as on one.
      for (int64_t n : {int64_t{65536}, int64_t{65536 - 7}}) {
        std::vector<uint8_t> got(65536, 0xCD);
        simd->add(a.data(), b.data(), n, p, got.data());
        const bool same = std::equal(got.begin(), got.begin() + n, want.begin());
        ASSERT_TRUE(same) << simd->isa << " trial " << trial << " (output multiplier shift " << r.mo.shift << ")";
        if (n < 65536) {
          EXPECT_EQ(got[n], 0xCD) << "wrote past the end";
        }
      }
    }
  }
}

}  // namespace
}  // namespace tessera
