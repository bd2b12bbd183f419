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
#include <tuple>

#include "backend/rknpu/emit.h"
#include "backend/rknpu/hw.h"
#include "backend/rknpu/lower.h"
#include "backend/rknpu/regcmd.h"
#include "backend/rknpu/tiling.h"
#include "backend/rknpu/transport.h"
#include "convert/rk_weights.h"
#include "backend/rknpu/rknpu_test_util.h"
#include "convert/dtype.h"
#include "fixtures.h"
#include "import/gguf/gguf_file.h"
#include "tessera/backend/convert.h"
#include "tessera/backend/plan.h"

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
  // docs/rknpu.md "A lower bound": a task holds at most 11 banks of weights and pays its
  // overhead before its DRAM time, so no schedule beats stream + tasks x overhead / 3.
  const double min_tasks = std::ceil(weight_bytes / double((kCbufBanks - 1) * kCbufBankBytes));
  EXPECT_GE(three->modelled_seconds, weight_bytes / kMatmulSocDramBytesPerSecond + min_tasks / 3 * kTaskOverheadSeconds);
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

TEST(RknpuMatmulLimits, OneKernelMustFitOneCbufBankOrKIsSplit) {
  // 16416 fp16 values = 32,832 bytes per kernel: above one 32 KiB bank, so K is split into
  // two segments of 8224 (multiples of 32), each within a bank.
  const std::string note = mm_note({1, 16416, 16});
  EXPECT_EQ(note.rfind("rknpu: npu matmul fp16 x fp16 -> fp32 (K split: 2 segments of 8224", 0), 0u) << note;
}

TEST(RknpuMatmulLimits, OneKernelGroupMustFitBesideADataBankOrKIsSplit) {
  // K = 11264: a 16-kernel group is 360,448 bytes = 11 banks, one bank left for A: one task's K.
  EXPECT_EQ(mm_note({1, 11264, 16}), "rknpu: npu matmul fp16 x fp16 -> fp32");
  // K = 11296: the group needs 361,472 bytes, more than 11 banks: two K segments of 5664.
  EXPECT_EQ(mm_note({1, 11296, 16}).rfind("rknpu: npu matmul fp16 x fp16 -> fp32 (K split: 2 segments of 5664", 0), 0u)
      << mm_note({1, 11296, 16});
  NpuOp op;
  op.type = NpuOpType::matmul;
  op.fp16 = true;
  op.in_h = op.out_h = 1;
  op.in_w = op.out_w = 1;
  op.out_c = 16;
  for (bool int8 : {false, true}) {
    op.fp16 = !int8;
    op.mm_int8 = int8;
    op.out_c = int8 ? 32 : 16;
    EXPECT_EQ(matmul_max_task_k(int8), 11264);
    op.in_c = 11264;
    EXPECT_EQ(plan_tiling(op, SchedulePolicy::tessera)->k_segments, 1);
    op.in_c = 11296;
    EXPECT_EQ(plan_tiling(op, SchedulePolicy::tessera)->k_segments, 2);
    // 64 segments at most.
    op.in_c = 64 * 11264;
    EXPECT_TRUE(plan_tiling(op, SchedulePolicy::tessera).ok());
    op.in_c = 64 * 11264 + 32;
    auto t = plan_tiling(op, SchedulePolicy::tessera);
    ASSERT_FALSE(t.ok());
    EXPECT_NE(t.status().message().find("65 K segments"), std::string::npos) << t.status().to_string();
  }
}

// The tiling's invariants over a grid of shapes: banks add up, a task's rows of A fit the
// data banks and its kernels' blocks the weight banks, rows per task within FEATURE_GRAINS,
// the tiles cover M x N exactly once, N-chunk-major.
// int8: K bytes per kernel (half of fp16's), 32-kernel groups, more rows per task; with K
// beyond 11264 the tiles carry K segments (kn <= k_chunk, covering M x N x K exactly once).
TEST(RknpuMatmulLimits, TilesRespectTheCbufAndFieldLimits) {
  for (bool int8 : {false, true})
    for (int64_t m : {1, 4, 44, 45, 384, 1021, 1022, 1023, 2047, 2048, 5000})
      for (int64_t k : {32, 2048, 4096, 5632, 8192, 11264, 11296, 16416, 32768})
        for (int64_t n : {32, 256, 2048, 5632, 8192, 32000}) {
          if (m > 1100 && k > 11264) continue;  // (time)
          NpuOp op;
          op.type = NpuOpType::matmul;
          op.fp16 = !int8;
          op.mm_int8 = int8;
          op.in_h = op.out_h = m;
          op.in_w = op.out_w = 1;
          op.in_c = k;
          op.out_c = n;
          const int64_t eb = int8 ? 1 : 2, kernels = int8 ? 32 : 16;
          auto t = plan_tiling(op, SchedulePolicy::tessera);
          ASSERT_TRUE(t.ok()) << m << "x" << k << "x" << n << ": " << t.status().to_string();
          EXPECT_EQ(t->data_banks + t->weight_banks, kCbufBanks);
          EXPECT_EQ(t->k_segments > 1, k > 11264);
          EXPECT_LE(t->k_chunk, 11264);
          EXPECT_EQ(t->k_chunk % 32, 0);
          int64_t covered = 0;
          for (const TaskTile& tile : t->tiles) {
            EXPECT_LE(tile.kn, t->k_chunk);
            EXPECT_EQ(tile.k0, tile.kseg * t->k_chunk);
            EXPECT_LE(tile.in_rows * tile.kn * eb, t->data_banks * kCbufBankBytes);
            EXPECT_LE(tile.kn * eb, kCbufBankBytes);
            EXPECT_LE((tile.ocn + kernels - 1) / kernels * kernels * tile.kn * eb, t->weight_banks * kCbufBankBytes);
            EXPECT_LE(tile.in_rows + 1, static_cast<int64_t>(regs::CNA::CONV_CON2__FEATURE_GRAINS.max()));
            EXPECT_LE(tile.ocn, static_cast<int64_t>(regs::DPU::DATA_CUBE_CHANNEL__CHANNEL.max()) + 1);
            EXPECT_EQ(tile.oc0 % kernels, 0);
            covered += tile.out_rows * tile.ocn * tile.kn;
          }
          EXPECT_EQ(covered, m * n * k);
          for (size_t i = 1; i < t->tiles.size(); ++i)
            EXPECT_GE(t->tiles[i].oc0, t->tiles[i - 1].oc0);  // rows inner: weights reused per chunk
        }
}

// int8 halves the bytes of a row of A and of a kernel: a task holds twice the rows (or the
// same bytes of 32-kernel groups), so a prompt batch needs fewer tasks than fp16.
TEST(RknpuMatmulLimits, Int8HoldsMoreRowsPerTask) {
  NpuOp op;
  op.type = NpuOpType::matmul;
  op.in_h = op.out_h = 64;
  op.in_w = op.out_w = 1;
  op.in_c = 4096;
  op.out_c = 4096;
  op.fp16 = true;
  auto f = plan_tiling(op, SchedulePolicy::tessera);
  op.fp16 = false;
  op.mm_int8 = true;
  auto i = plan_tiling(op, SchedulePolicy::tessera);
  ASSERT_TRUE(f.ok() && i.ok());
  EXPECT_LT(i->tiles.size(), f->tiles.size()) << i->tiles.size() << " int8 tasks, " << f->tiles.size() << " fp16";
  int64_t rows_f = 0, rows_i = 0;
  for (const auto& t : f->tiles) rows_f = std::max(rows_f, t.out_rows);
  for (const auto& t : i->tiles) rows_i = std::max(rows_i, t.out_rows);
  EXPECT_GE(rows_i, rows_f);
}

TEST(RknpuMatmulLimits, Int8GranularityIs32Kernels) {
  const std::string note = [] {
    MmGraph mg = build_mm({1, 64, 48});
    SessionOptions so;
    so.device = "rknpu";
    so.device_options = {{"weights", "int8"}};
    auto sess = Session::create(mg.g, so);
    if (!sess.ok()) return "session error: " + sess.status().to_string();
    const Plan& p = (*sess)->plan();
    return p.devices[p.nodes[0].device]->name() + ": " + p.nodes[0].note;
  }();
  expect_fallback(note, "N = 48 is not a multiple of 32 (int8 matmul, [S3])");
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

// ---- int8 x int8 -> int32 (weights=int8) and K splits ----

// The int8 operands the NPU multiplies, computed here from the same inputs: one scale per
// output channel for the weights (from their exact values), one per row for x.
struct Int8Operands {
  convert::RowQuantI8 w;
  std::vector<int8_t> qx;
  std::vector<float> sx;
};

Int8Operands int8_operands(const MmSpec& s, const MmGraph& mg) {
  Int8Operands o;
  const Tensor& w = mg.g.tensor(mg.g.nodes()[0].inputs[1]);
  auto q = convert::quantize_matrix_i8(w.host_format(), w.data->data);
  EXPECT_TRUE(q.ok()) << q.status().to_string();
  if (q.ok()) o.w = std::move(*q);
  o.qx.resize(static_cast<size_t>(s.m * s.k));
  o.sx.resize(static_cast<size_t>(s.m));
  convert::quantize_rows_i8(mg.x.data(), s.m, s.k, s.k, o.qx.data(), o.sx.data());
  return o;
}

// Runs a spec with weights=int8 and checks, per output:
//  - exactly the value of the integer reference: acc = sum qx qw in 64-bit integers, then
//    acc x sx x sw (+ bias) in double, rounded once to f32 (what the host step does with the
//    NPU's int32 sums; any error in the NPU's integer arithmetic changes acc);
//  - against the cpu (exact f32 activations and weights), the quantization error bound
//    sum |x - sx qx| |w| + |sx qx| |w - sw qw|, plus the cpu's K-term f32 sum K u sum|x w|
//    and the final roundings.
// Returns the mean |npu - cpu| / bound (for the report).
double check_int8_spec(const MmSpec& s, const std::string& want_note = "npu matmul int8 x int8 -> int32") {
  SCOPED_TRACE(s.label() + " int8");
  MmGraph mg = build_mm(s);
  auto npu = run_on(mg, "rknpu", {{"weights", "int8"}});
  auto cpu = run_on(mg, "cpu");
  EXPECT_TRUE(npu.ok()) << npu.status().to_string();
  EXPECT_TRUE(cpu.ok()) << cpu.status().to_string();
  if (!npu.ok() || !cpu.ok()) return 0;
  EXPECT_TRUE(npu->on_npu) << npu->note;
  EXPECT_EQ(npu->note.rfind(want_note, 0), 0u) << npu->note;
  const Int8Operands o = int8_operands(s, mg);
  const double u = std::ldexp(1.0, -24);
  int64_t bad = 0, bad_cpu = 0;
  double ratio_sum = 0;
  for (int64_t i = 0; i < s.m; ++i)
    for (int64_t j = 0; j < s.n; ++j) {
      int64_t acc = 0;
      double qerr = 0, cmag = 0;
      for (int64_t c = 0; c < s.k; ++c) {
        const int64_t qa = o.qx[i * s.k + c], qw = o.w.q[j * s.k + c];
        acc += qa * qw;
        const double x = mg.x[i * s.k + c], w = mg.wexact[j * s.k + c];
        const double xq = double(o.sx[i]) * double(qa), wq = double(o.w.scale[j]) * double(qw);
        qerr += std::fabs(x - xq) * std::fabs(w) + std::fabs(xq) * std::fabs(w - wq);
        cmag += std::fabs(x * w);
      }
      double v = double(acc) * double(o.sx[i]) * double(o.w.scale[j]);
      const double bias = s.bias ? mg.bias[j] : 0.0;
      if (s.bias) v += bias;
      const float want = static_cast<float>(v);
      const float got = npu->y[i * s.n + j];
      if (std::memcmp(&want, &got, 4) != 0 && ++bad <= 3)
        ADD_FAILURE() << "y[" << i << "," << j << "] = " << got << ", integer reference " << want << " (acc " << acc << ")";
      const double bound = qerr + double(s.k) * u * cmag + u * (std::fabs(v) + 2 * std::fabs(bias)) + 1e-30;
      const double diff = std::fabs(double(got) - double(cpu->y[i * s.n + j]));
      ratio_sum += diff / bound;
      if (diff > bound && ++bad_cpu <= 3)
        ADD_FAILURE() << "y[" << i << "," << j << "] = " << got << ", cpu " << cpu->y[i * s.n + j] << ", bound " << bound;
    }
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(bad_cpu, 0);
  return ratio_sum / double(s.m * s.n);
}

TEST(RknpuMatmulInt8, GemvToPromptBatchesMatchTheIntegerReferenceExactly) {
  const MmSpec specs[] = {
      {1, 64, 64, DType::f16, false, 101},     {1, 2048, 2048, DType::f16, false, 102},  // TinyLlama q/o
      {1, 2048, 5632, DType::q8_0, false, 103}, {1, 5632, 2048, DType::q4_0, false, 104},  // TinyLlama FFN
      {1, 8192, 8192, DType::f16, false, 105}, {3, 896, 128, DType::f16, true, 106},     // Qwen2 k/v with bias
      {7, 256, 64, DType::q8_0, true, 107},    {16, 2048, 256, DType::f16, false, 108},  // a prompt batch
      {64, 1024, 1024, DType::q4_0, true, 109}, {33, 4864, 896, DType::f16, false, 110},  // Qwen2 ffn_down
      {1100, 64, 32, DType::f16, false, 111},  // more rows than FEATURE_GRAINS allows in one task
      {2, 8192, 64, DType::q8_0, false, 112},  {4, 64, 8192, DType::f16, true, 113},
  };
  double mean = 0;
  for (const MmSpec& s : specs) mean = std::max(mean, check_int8_spec(s));
  // The bound is not vacuous: the quantization error takes a visible share of it.
  EXPECT_GT(mean, 0.01);
  RecordProperty("largest_mean_error_over_bound", std::to_string(mean));
}

// K beyond one task (11264): int32 partial sums per K segment, added exactly on the host.
TEST(RknpuMatmulInt8, KSplitSumsTheInt32PartialsExactly) {
  check_int8_spec({2, 16384, 64, DType::f16, true, 121}, "npu matmul int8 x int8 -> int32 (K split: 2 segments of 8192");
  check_int8_spec({3, 11296, 96, DType::q8_0, false, 122}, "npu matmul int8 x int8 -> int32 (K split: 2 segments of 5664");
  check_int8_spec({1, 40960, 32, DType::q4_0, false, 123}, "npu matmul int8 x int8 -> int32 (K split: 4 segments of 10240");
}

// fp16 with a K split: fp32 partials per segment, the bias in the first, added in segment
// order in fp32 on the host. The fp16 bound (a K-term fp32 sum in any order) still holds:
// the host's additions are S - 1 more of the K - 1 roundings it allows.
TEST(RknpuMatmul, KSplitSumsTheFp32PartialsInSegmentOrder) {
  check_spec({2, 11296, 32, DType::f16, true, 131});
  check_spec({1, 16416, 16, DType::f16, false, 132});
  check_spec({5, 24576, 48, DType::q8_0, false, 133});
  // Every segment's result reaches C: the NPU's output equals the cpu's within the bound
  // above, which a dropped segment (half the terms) would break.
}

// The weights are converted once at upload; the int8 blocks are the int8 conv layout for a
// 1x1 kernel (rknpu-matmul.md: "the same 32x32 grouping as your int8 conv weights"), which
// is why the model runs int8 matmul tasks through its int8 convolution.
TEST(RknpuMatmulInt8, WeightBlocksAreTheConvLayoutOfA1x1Kernel) {
  for (auto [n, k] : {std::pair<int64_t, int64_t>{32, 32}, {64, 96}, {96, 2048}}) {
    const convert::RkMatmulGeometry mg = convert::rk_matmul_geometry(n, k, 1);
    auto cg = convert::rk_conv_geometry({n, 1, 1, k});
    ASSERT_TRUE(cg.ok());
    EXPECT_EQ(mg.elements(), cg->elements());
    for (int64_t o = 0; o < n; ++o)
      for (int64_t i = 0; i < k; ++i) ASSERT_EQ(convert::rk_matmul_weight_index(mg, o, i), convert::rk_conv_weight_index(*cg, o, 0, 0, i));
  }
}

// Requantizing Q8_0 / Q4_0 rows (several block scales) to one scale per row: each value
// moves by at most half a step of its row's scale (max |w| / 254).
TEST(RknpuMatmulInt8, RequantizationErrorIsHalfAStepPerRow) {
  for (DType t : {DType::f16, DType::q8_0, DType::q4_0}) {
    MmGraph mg = build_mm({1, 256, 64, t, false, 141});
    const Tensor& w = mg.g.tensor(mg.g.nodes()[0].inputs[1]);
    auto q = convert::quantize_matrix_i8(w.host_format(), w.data->data);
    ASSERT_TRUE(q.ok());
    for (int64_t r = 0; r < 64; ++r) {
      double amax = 0;
      for (int64_t c = 0; c < 256; ++c) amax = std::max(amax, std::fabs(double(mg.wexact[r * 256 + c])));
      EXPECT_FLOAT_EQ(q->scale[r], float(amax / 127.0));
      int hit127 = 0;
      for (int64_t c = 0; c < 256; ++c) {
        const int v = q->q[r * 256 + c];
        hit127 += std::abs(v) == 127;
        EXPECT_LE(std::fabs(double(mg.wexact[r * 256 + c]) - double(q->scale[r]) * v), 0.5 * q->scale[r] * (1 + 1e-6));
      }
      EXPECT_GE(hit127, 1);
    }
  }
}

TEST(RknpuMatmulInt8, StreamsCarryTheInt8FieldsAndTheModelNamesAWrongOne) {
  MmGraph mg = build_mm({3, 128, 64, DType::f16, false, 151});
  LowerOptions lo;
  lo.weights = WeightPolicy::int8;
  auto op = lower_node(mg.g, mg.g.nodes()[0], lo);
  ASSERT_TRUE(op.ok()) << op.status().to_string();
  EXPECT_TRUE(op->mm_int8);
  EXPECT_EQ(op->weight_bytes, 64 * 128);
  auto t = plan_tiling(*op, SchedulePolicy::tessera);
  ASSERT_TRUE(t.ok());
  auto tr = make_model_transport(kAddressSpace);
  auto in = tr->create_bo(8 * 128 * 16);
  auto out = tr->create_bo(16 * 3 * 16);
  auto w = tr->create_bo(op->weight_bytes);
  auto cmd = tr->create_bo(4096);
  ASSERT_TRUE(in.ok() && out.ok() && w.ok() && cmd.ok());
  std::memcpy(w->cpu, op->weights.data(), op->weights.size());
  for (int64_t i = 0; i < 128 * 3; ++i) in->cpu[(i % 128) / 16 * 3 * 16 + (i / 128) * 16 + i % 16] = static_cast<uint8_t>(i * 7 % 255 - 127);
  OpAddresses a{in->dma_address, out->dma_address, 0, w->dma_address, 0};
  auto e = emit_task(*op, *t, t->tiles[0], a, false);
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  ASSERT_TRUE(append_chain(*e, 0, 0).ok());
  auto rf = decode_regcmd(e->data(), e->size());
  ASSERT_TRUE(rf.ok());
  EXPECT_EQ(rf->get(regs::CNA::CONV_CON1__IN_PRECISION), kPrecisionInt8);
  EXPECT_EQ(rf->get(regs::CNA::CONV_CON1__PROC_PRECISION), kPrecisionInt8);
  EXPECT_EQ(rf->get(regs::CORE::MISC_CFG__PROC_PRECISION), kPrecisionInt8);
  EXPECT_EQ(rf->get(regs::CORE::MISC_CFG__QD_EN), kMatmulQdEnInt8);
  EXPECT_EQ(rf->get(regs::DPU::DATA_FORMAT__IN_PRECISION), kPrecisionInt8);
  EXPECT_EQ(rf->get(regs::DPU::DATA_FORMAT__OUT_PRECISION), kPrecisionInt32);
  EXPECT_EQ(rf->get(regs::DPU::BS_OW_CFG__SIZE_E_0), kMatmulSizeEInt32);
  EXPECT_EQ(rf->get(regs::DPU::SURFACE_ADD__SURF_ADD), 3u * kMatmulSurfAddInt32);
  EXPECT_EQ(rf->get(regs::CNA::CBUF_CON1__DATA_ENTRIES), 2u);  // ceil(128 / 64)
  EXPECT_EQ(rf->get(regs::CNA::WEIGHT_SIZE1__WEIGHT_BYTES_PER_KERNEL), 128u);
  // Run it, then again with one precision field changed: the model names the field.
  auto run = [&](const std::vector<uint64_t>& entries) { return submit_stream(*tr, *cmd, entries); };
  ASSERT_TRUE(run(*e).ok()) << run(*e).to_string();
  // The int32 sums of the first output, against the integer product of the operands.
  const int8_t* wq = reinterpret_cast<const int8_t*>(w->cpu);
  const convert::RkMatmulGeometry g = convert::rk_matmul_geometry(64, 128, 1);
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t n = 0; n < 64; ++n) {
      int64_t acc = 0;
      for (int64_t c = 0; c < 128; ++c)
        acc += int64_t(static_cast<int8_t>(in->cpu[c / 16 * 3 * 16 + r * 16 + c % 16])) * wq[convert::rk_matmul_weight_index(g, n, c)];
      int32_t got;
      std::memcpy(&got, out->cpu + ((n / 4) * 3 + r) * 16 + (n % 4) * 4, 4);
      ASSERT_EQ(got, acc) << r << "," << n;
    }
  for (auto [field, value, name] : {std::tuple{regs::CORE::MISC_CFG__PROC_PRECISION, kPrecisionFp16, "CORE MISC_CFG.PROC_PRECISION"},
                                    std::tuple{regs::DPU::DATA_FORMAT__IN_PRECISION, kPrecisionFp16, "DPU DATA_FORMAT.IN_PRECISION"},
                                    std::tuple{regs::DPU::BS_OW_CFG__SIZE_E_1, 3u, "SIZE_E"}}) {
    std::vector<uint64_t> bad = *e;
    ASSERT_TRUE(set_field(bad, field, value)) << name;
    Status st = run(bad);
    EXPECT_FALSE(st.ok()) << name;
    EXPECT_NE(st.to_string().find(name), std::string::npos) << st.to_string();
  }
}

}  // namespace
}  // namespace tessera::rknpu_test
