// fp16 x fp16 -> fp32 matrix multiplication on the rknpu device model (lower_matmul.cpp,
// tiling.cpp plan_matmul_tiling, emit.cpp emit_matmul, model.cpp matmul_fp16): a fully
// connected node on f32 rows with F16 / Q8_0 / Q4_0 weights, from GEMV (M = 1) to prompt
// batches, K and N up to 8192, against
//  - a double-precision reference over the fp16-rounded inputs (what the NPU multiplies):
//    the error is that of a K-term fp32 sum, |err| <= K * 2^-24 * sum|a b| (+ the bias's
//    rounding), whatever the order of the sum;
//  - the cpu's fully connected kernel (f32 activations): the difference is also bounded by
//    the rounding of the activations to fp16, sum |a - fp16(a)| |b|.
// Every tiling limit: K and N granularity, one kernel per CBUF bank, one 16-kernel group
// beside a data bank, FEATURE_GRAINS bounding rows per task, with the tiles' invariants.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "backend/rknpu/emit.h"
#include "backend/rknpu/hw.h"
#include "backend/rknpu/lower.h"
#include "backend/rknpu/regcmd.h"
#include "backend/rknpu/tiling.h"
#include "backend/rknpu/rknpu_test_util.h"
#include "convert/dtype.h"
#include "fixtures.h"
#include "import/gguf/gguf_file.h"
#include "tessera/convert.h"

namespace tessera::rknpu_test {
namespace {

using namespace tessera::rknpu;

struct MmSpec {
  int64_t m, k, n;
  DType wtype = DType::f16;
  bool bias = false;
  uint32_t seed = 1;
  std::string label() const {
    return std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n) + " " + dtype_name(wtype) +
           (bias ? " +bias" : "");
  }
};

// A graph y = x w^T (+ b) with f32 x [M, K], weights [N, K] of `wtype`, and, per weight,
// the fp16 value the NPU multiplies (the exact dequantized value rounded once to fp16).
struct MmGraph {
  Graph g;
  std::vector<float> x;            // [M, K]
  std::vector<float> w16;          // [N, K], fp16-representable
  std::vector<float> wexact;       // [N, K], the exact weight values (the cpu's)
  std::vector<float> bias;         // [N] or empty
};

float round16(float v) { return convert::f16_to_f32(convert::f32_to_f16(v)); }

// `raw`: the weight matrix's stored bytes of `s.wtype` (any GGUF block type), instead of
// random ones; its exact values come from the conversion registry.
MmGraph build_mm(const MmSpec& s, const ConstData* raw = nullptr) {
  MmGraph r;
  std::mt19937 rng(s.seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  Tensor x;
  x.name = "x";
  x.shape = {s.m, s.k};
  x.dtype = DType::f32;
  x.role = Role::input;
  TensorId xi = r.g.add_tensor(x);
  r.x.resize(static_cast<size_t>(s.m * s.k));
  for (auto& v : r.x) v = nd(rng);
  const int64_t nk = s.n * s.k;
  r.w16.resize(static_cast<size_t>(nk));
  r.wexact.resize(static_cast<size_t>(nk));
  std::vector<uint8_t> bytes;
  if (raw) {
    bytes.assign(raw->data, raw->data + raw->size);
    EXPECT_TRUE(convert::convert(Format::row_major(s.wtype, {s.n, s.k}), raw->data, Format::row_major(DType::f32, {s.n, s.k}),
                                 r.wexact.data())
                    .ok());
    for (int64_t i = 0; i < nk; ++i) r.w16[i] = round16(r.wexact[i]);
  } else if (s.wtype == DType::f16) {
    bytes.resize(static_cast<size_t>(nk * 2));
    for (int64_t i = 0; i < nk; ++i) {
      const uint16_t h = convert::f32_to_f16(nd(rng) * 0.05f);
      std::memcpy(bytes.data() + 2 * i, &h, 2);
      r.w16[i] = r.wexact[i] = convert::f16_to_f32(h);
    }
  } else {
    // GGUF blocks of 32: an fp16 scale d, then 32 int8 codes (Q8_0, 34 bytes) or 16 bytes of
    // 4-bit codes, low nibbles the first 16 values, value = d * (q - 8) (Q4_0, 18 bytes).
    const bool q8 = s.wtype == DType::q8_0;
    const int64_t block = q8 ? 34 : 18;
    bytes.resize(static_cast<size_t>(nk / 32 * block));
    std::uniform_int_distribution<int> code(q8 ? -127 : 0, q8 ? 127 : 15);
    for (int64_t b = 0; b < nk / 32; ++b) {
      uint8_t* p = bytes.data() + b * block;
      const uint16_t dh = convert::f32_to_f16(0.002f * (1.0f + float(b % 7)));
      std::memcpy(p, &dh, 2);
      const float d = convert::f16_to_f32(dh);
      for (int j = 0; j < 32; ++j) {
        const int q = code(rng);
        float v;
        if (q8) {
          p[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(q));
          v = d * float(q);
        } else {
          uint8_t& byte = p[2 + (j % 16)];
          byte = static_cast<uint8_t>(j < 16 ? (byte & 0xF0) | q : (byte & 0x0F) | (q << 4));
          v = d * float(q - 8);
        }
        r.wexact[b * 32 + j] = v;
        r.w16[b * 32 + j] = round16(v);
      }
    }
  }
  TensorId wi = add_const(r.g, "w", {s.n, s.k}, s.wtype, {}, std::move(bytes));
  std::vector<TensorId> ins{xi, wi};
  if (s.bias) {
    r.bias.resize(static_cast<size_t>(s.n));
    std::vector<uint8_t> bb(static_cast<size_t>(s.n * 4));
    for (int64_t c = 0; c < s.n; ++c) {
      r.bias[c] = nd(rng);
      std::memcpy(bb.data() + 4 * c, &r.bias[c], 4);
    }
    ins.push_back(add_const(r.g, "b", {s.n}, DType::f32, {}, std::move(bb)));
  }
  auto y = r.g.add_op(OpKind::fully_connected, ins, {}, "mm");
  EXPECT_TRUE(y.ok()) << y.status().to_string();
  r.g.tensor(*y).role = Role::output;
  r.g.inputs = {xi};
  r.g.outputs = {*y};
  return r;
}

struct MmRun {
  std::vector<float> y;
  bool on_npu = false;
  std::string note;
  double modelled_seconds = 0;
};

Result<MmRun> run_on(const MmGraph& mg, const std::string& device, const DeviceOptions& opts = {}) {
  SessionOptions so;
  so.device = device;
  so.device_options = opts;
  TS_ASSIGN_OR_RETURN(auto s, Session::create(mg.g, so));
  MmRun r;
  const Plan& p = s->plan();
  for (size_t i = 0; i < p.graph.nodes().size(); ++i)
    if (p.graph.nodes()[i].op == OpKind::fully_connected) {
      r.on_npu = p.devices[p.nodes[i].device]->name() == "rknpu";
      r.note = p.nodes[i].note;
    }
  TS_RETURN_IF_ERROR(s->set_input(0, mg.x.data(), static_cast<int64_t>(mg.x.size() * 4)));
  TS_RETURN_IF_ERROR(s->run());
  TS_ASSIGN_OR_RETURN(std::vector<uint8_t> out, s->output(0));
  r.y.resize(out.size() / 4);
  std::memcpy(r.y.data(), out.data(), out.size());
  r.modelled_seconds = s->profile().modelled_seconds;
  return r;
}

// Runs a spec on rknpu and the cpu and checks both bounds; returns the largest error
// relative to its bound against the fp16 reference (for reporting).
double check_spec(const MmSpec& s, const ConstData* raw = nullptr) {
  SCOPED_TRACE(s.label());
  MmGraph mg = build_mm(s, raw);
  auto npu = run_on(mg, "rknpu");
  auto cpu = run_on(mg, "cpu");
  EXPECT_TRUE(npu.ok()) << npu.status().to_string();
  EXPECT_TRUE(cpu.ok()) << cpu.status().to_string();
  if (!npu.ok() || !cpu.ok()) return 0;
  EXPECT_TRUE(npu->on_npu) << npu->note;
  EXPECT_EQ(npu->note.rfind("npu matmul fp16", 0), 0u) << npu->note;
  EXPECT_EQ(npu->y.size(), static_cast<size_t>(s.m * s.n));
  const double u = std::ldexp(1.0, -24);
  double worst = 0;
  int64_t bad = 0, bad_cpu = 0;
  for (int64_t i = 0; i < s.m; ++i)
    for (int64_t j = 0; j < s.n; ++j) {
      double ref = 0, mag = 0, xround = 0, cmag = 0;
      for (int64_t c = 0; c < s.k; ++c) {
        const double a = round16(mg.x[i * s.k + c]), b = mg.w16[j * s.k + c];
        ref += a * b;
        mag += std::fabs(a * b);
        xround += std::fabs(double(mg.x[i * s.k + c]) - a) * std::fabs(b) +
                  std::fabs(double(mg.x[i * s.k + c])) * std::fabs(double(mg.wexact[j * s.k + c]) - b);
        cmag += std::fabs(double(mg.x[i * s.k + c]) * mg.wexact[j * s.k + c]);
      }
      const double bias = s.bias ? mg.bias[j] : 0.0;
      ref += bias;
      const double got = npu->y[i * s.n + j];
      const double bound = double(s.k) * u * mag + u * (std::fabs(ref) + std::fabs(bias)) + 1e-30;
      const double err = std::fabs(got - ref);
      worst = std::max(worst, err / bound);
      if (err > bound && ++bad <= 3) ADD_FAILURE() << "y[" << i << "," << j << "] = " << got << ", fp16 reference " << ref << ", bound " << bound;
      // Against the cpu: the rounding of x (and of Q8_0/Q4_0 weights) to fp16 on top of both
      // sides' fp32 sums.
      const double cpu_bound = xround + 2 * double(s.k) * u * (cmag + mag) + 2 * u * (std::fabs(ref) + std::fabs(bias)) + 1e-30;
      const double cdiff = std::fabs(got - double(cpu->y[i * s.n + j]));
      if (cdiff > cpu_bound && ++bad_cpu <= 3)
        ADD_FAILURE() << "y[" << i << "," << j << "] = " << got << ", cpu " << cpu->y[i * s.n + j] << ", bound " << cpu_bound;
    }
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(bad_cpu, 0);
  return worst;
}

TEST(RknpuMatmul, GemvToPromptBatchesMatchTheFp16Reference) {
  const MmSpec specs[] = {
      {1, 64, 64, DType::f16, false, 1},       {1, 2048, 2048, DType::f16, false, 2},  // TinyLlama q/o
      {1, 2048, 5632, DType::f16, false, 3},   {1, 5632, 2048, DType::f16, false, 4},  // TinyLlama FFN
      {1, 8192, 8192, DType::f16, false, 5},   {3, 896, 128, DType::f16, true, 6},     // Qwen2 k/v with bias
      {7, 256, 48, DType::f16, false, 7},      {16, 2048, 256, DType::f16, false, 8},  // a prompt batch
      {64, 1024, 1024, DType::f16, true, 9},   {33, 4864, 896, DType::f16, false, 10},  // Qwen2 ffn_down
      {1100, 64, 32, DType::f16, false, 11},   // more rows than FEATURE_GRAINS allows in one task
      {2, 8192, 64, DType::f16, false, 12},    {4, 64, 8192, DType::f16, false, 13},
  };
  double worst = 0;
  for (const MmSpec& s : specs) worst = std::max(worst, check_spec(s));
  // The bound is loose (K u sum|ab|), but the error is not zero: the sums do round.
  EXPECT_GT(worst, 0.0);
  RecordProperty("worst_error_over_bound", std::to_string(worst));
}

TEST(RknpuMatmul, Q8_0AndQ4_0WeightsConvertOnceToFp16) {
  for (const MmSpec& s : {MmSpec{1, 2048, 256, DType::q8_0, false, 21}, MmSpec{5, 512, 512, DType::q4_0, true, 22},
                          MmSpec{1, 1024, 4096, DType::q4_0, false, 23}, MmSpec{9, 4096, 128, DType::q8_0, false, 24}})
    check_spec(s);
}

// GEMV streams every weight once: one core at its share of the weight-stream bandwidth,
// three cores (N split, the default) at the SoC's, plus job and task overheads.
// Every matrix of a shared K-quant model (Q4_K, Q6_K, Q3_K ... as stored), with a bias.
TEST(RknpuMatmul, SharedKQuantMatricesConvertOnceToFp16) {
  TESSERA_REQUIRE_FIXTURE(path, "models/gguf/qwen2-256d-2L-Q4_K_M-embQ3_K.gguf");
  auto f = gguf::File::open(path);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  int checked = 0;
  for (const auto& t : f->tensors()) {
    if (t.shape.size() != 2 || t.shape[0] % 16 || t.shape[1] % 32) continue;
    check_spec({3, t.shape[1], t.shape[0], t.dtype, true, static_cast<uint32_t>(50 + checked)}, &t.data);
    ++checked;
  }
  EXPECT_GE(checked, 8);
}

TEST(RknpuMatmul, ModelledTimeIsBoundedByTheWeightStream) {
  MmGraph mg = build_mm({1, 2048, 2048, DType::f16, false, 31});
  auto three = run_on(mg, "rknpu");
  auto one = run_on(mg, "rknpu", {{"cores", "1"}});
  ASSERT_TRUE(three.ok()) << three.status().to_string();
  ASSERT_TRUE(one.ok()) << one.status().to_string();
  const double weight_bytes = 2048.0 * 2048.0 * 2.0;
  EXPECT_GE(one->modelled_seconds, weight_bytes / kMatmulDramBytesPerSecond);
  EXPECT_LT(one->modelled_seconds, 1.1 * weight_bytes / kMatmulDramBytesPerSecond + kJobOverheadSeconds + 40 * kTaskOverheadSeconds);
  EXPECT_GE(three->modelled_seconds, weight_bytes / kMatmulSocDramBytesPerSecond);
  EXPECT_LT(three->modelled_seconds, 1.1 * weight_bytes / kMatmulSocDramBytesPerSecond + kJobOverheadSeconds + 40 * kTaskOverheadSeconds);
  EXPECT_LT(three->modelled_seconds, 0.5 * one->modelled_seconds);
  // The same numbers either way (the split changes which core computes a chunk, not how).
  EXPECT_EQ(three->y, one->y);
}

std::string mm_note(const MmSpec& s, const std::string& activation = "none") {
  MmGraph mg = build_mm(s);
  if (activation != "none") mg.g.nodes()[0].attrs["activation"] = activation;
  SessionOptions so;
  so.device = "rknpu";
  auto sess = Session::create(mg.g, so);
  if (!sess.ok()) return "session error: " + sess.status().to_string();
  const Plan& p = (*sess)->plan();
  for (size_t i = 0; i < p.graph.nodes().size(); ++i)
    if (p.graph.nodes()[i].op == OpKind::fully_connected) return p.devices[p.nodes[i].device]->name() + ": " + p.nodes[i].note;
  return "no node";
}

void expect_fallback(const std::string& note, const std::string& reason) {
  EXPECT_EQ(note.rfind("cpu: fallback: ", 0), 0u) << note;
  EXPECT_NE(note.find(reason), std::string::npos) << note;
}

TEST(RknpuMatmulLimits, KAndNGranularity) {
  expect_fallback(mm_note({1, 40, 32}), "K = 40 is not a multiple of 32");
  expect_fallback(mm_note({1, 64, 40}), "N = 40 is not a multiple of 16");
  expect_fallback(mm_note({1, 64, 32}, "relu"), "activation 'relu'");
}

TEST(RknpuMatmulLimits, OneKernelMustFitOneCbufBank) {
  // 16416 fp16 values = 32,832 bytes per kernel: above one 32 KiB bank; K is not split.
  expect_fallback(mm_note({1, 16416, 16}), "exceed one 32 KiB CBUF bank");
}

TEST(RknpuMatmulLimits, OneKernelGroupMustFitBesideADataBank) {
  // K = 11264: a 16-kernel group is 360,448 bytes = 11 banks, one bank left for A: fits.
  EXPECT_EQ(mm_note({1, 11264, 16}).rfind("rknpu: npu matmul", 0), 0u) << mm_note({1, 11264, 16});
  // K = 11296: the group needs 361,472 bytes, more than 11 banks.
  expect_fallback(mm_note({1, 11296, 16}), "do not fit the 12 CBUF banks");
}

// The tiling's invariants over a grid of shapes: banks add up, a task's rows of A fit the
// data banks and its kernels' blocks the weight banks, rows per task within FEATURE_GRAINS,
// the tiles cover M x N exactly once, N-chunk-major.
TEST(RknpuMatmulLimits, TilesRespectTheCbufAndFieldLimits) {
  for (int64_t m : {1, 4, 44, 45, 384, 1021, 1022, 1023, 2047, 2048, 5000})
    for (int64_t k : {32, 2048, 4096, 5632, 8192, 11264})
      for (int64_t n : {16, 256, 2048, 5632, 8192, 32000}) {
        NpuOp op;
        op.type = NpuOpType::matmul;
        op.fp16 = true;
        op.in_h = op.out_h = m;
        op.in_w = op.out_w = 1;
        op.in_c = k;
        op.out_c = n;
        auto t = plan_tiling(op, SchedulePolicy::tessera);
        ASSERT_TRUE(t.ok()) << m << "x" << k << "x" << n << ": " << t.status().to_string();
        EXPECT_EQ(t->data_banks + t->weight_banks, kCbufBanks);
        int64_t covered = 0;
        for (const TaskTile& tile : t->tiles) {
          EXPECT_LE(tile.in_rows * k * 2, t->data_banks * kCbufBankBytes);
          EXPECT_LE((tile.ocn + 15) / 16 * 16 * k * 2, t->weight_banks * kCbufBankBytes);
          EXPECT_LE(tile.in_rows + 1, static_cast<int64_t>(regs::CNA::CONV_CON2__FEATURE_GRAINS.max()));
          EXPECT_EQ(tile.oc0 % 16, 0);
          covered += tile.out_rows * tile.ocn;
        }
        EXPECT_EQ(covered, m * n);
        for (size_t i = 1; i < t->tiles.size(); ++i)
          EXPECT_GE(t->tiles[i].oc0, t->tiles[i - 1].oc0);  // rows inner: weights reused per chunk
      }
}

TEST(RknpuMatmul, StreamsCarryThePrecisionFieldsAndTheModelChecksThem) {
  MmGraph mg = build_mm({2, 64, 32, DType::f16, false, 41});
  auto op = lower_node(mg.g, mg.g.nodes()[0]);
  ASSERT_TRUE(op.ok()) << op.status().to_string();
  EXPECT_EQ(op->type, NpuOpType::matmul);
  auto t = plan_tiling(*op, SchedulePolicy::tessera);
  ASSERT_TRUE(t.ok());
  OpAddresses a{0x10000, 0x20000, 0, 0x30000, 0};
  // (emit_task is declared in emit.h; the entries decode into a register file)
  auto e = emit_task(*op, *t, t->tiles[0], a, false);
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  ASSERT_TRUE(append_chain(*e, 0, 0).ok());
  auto rf = decode_regcmd(e->data(), e->size());
  ASSERT_TRUE(rf.ok()) << rf.status().to_string();
  EXPECT_EQ(rf->get(regs::CNA::CONV_CON1__IN_PRECISION), kPrecisionFp16);
  EXPECT_EQ(rf->get(regs::CNA::CONV_CON1__PROC_PRECISION), kPrecisionFp16);
  EXPECT_EQ(rf->get(regs::CORE::MISC_CFG__PROC_PRECISION), kPrecisionFp16);
  EXPECT_EQ(rf->get(regs::DPU::DATA_FORMAT__OUT_PRECISION), kPrecisionFp32);
  EXPECT_EQ(rf->get(regs::DPU::BS_OW_CFG__SIZE_E_0), kMatmulSizeEFp32);
  EXPECT_EQ(rf->get(regs::DPU_RDMA::RDMA_FEATURE_MODE_CFG__MRDMA_DISABLE), 1u);
  EXPECT_EQ(rf->get(regs::CNA::CONV_CON2__FEATURE_GRAINS), 3u);
}

}  // namespace
}  // namespace tessera::rknpu_test
