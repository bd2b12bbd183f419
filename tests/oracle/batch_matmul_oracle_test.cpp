// BATCH_MATMUL as single-operator models against the TFLite interpreter: f32, i8 (non-zero
// zero points), i16 and hybrid (f32 lhs, constant int8 rhs), with adj_x / adj_y, broadcast
// batch dims, ranks 2 to 4 and a constant rhs. Integer outputs byte-identical, float outputs within 1e-5 relative
// (op_checks.h). Also the importer's refusals, by operator and tensor name.
#include <gtest/gtest.h>

#include <algorithm>

#include "oracle/hybrid_rows.h"
#include "oracle/op_checks.h"

namespace tessera::oracle {
namespace {

namespace T = ::tflite;
using testing::OpTensor;

struct Q {
  float scale = 0;
  int64_t zero_point = 0;
};

OpTensor tensor(const std::string& name, T::TensorType type, const std::vector<int32_t>& shape, Q q) {
  OpTensor t = testing::activation(name, type, shape);
  t.scale = q.scale;
  t.zero_point = q.zero_point;
  return t;
}

struct MatCase {
  std::vector<int32_t> a, b;
  bool adj_x, adj_y, b_constant;
};

std::vector<int32_t> out_shape(const MatCase& k) {
  const size_t ra = k.a.size(), rb = k.b.size(), r = std::max(ra, rb);
  std::vector<int32_t> y(r - 2, 1);
  for (size_t d = 0; d + 2 < r; ++d) {
    const int32_t da = d >= r - ra ? k.a[d - (r - ra)] : 1;
    const int32_t db = d >= r - rb ? k.b[d - (r - rb)] : 1;
    y[d] = std::max(da, db);
  }
  y.push_back(k.adj_x ? k.a[ra - 1] : k.a[ra - 2]);
  y.push_back(k.adj_y ? k.b[rb - 2] : k.b[rb - 1]);
  return y;
}

OpCheck matmul_check(const std::string& name, const MatCase& k, T::TensorType type, Q qa, Q qb, Q qy, uint32_t seed) {
  OpCheck c;
  c.name = name;
  c.is_float = type == T::TensorType_FLOAT32;
  OpTensor b = tensor("b", type, k.b, qb);
  const size_t w = type == T::TensorType_FLOAT32 ? 4 : type == T::TensorType_INT16 ? 2 : 1;
  auto values = [&](const std::vector<int32_t>& s, uint32_t sd) {
    if (type == T::TensorType_FLOAT32)
      return bytes_of(testing::random_floats(static_cast<size_t>(element_count(s)), sd, -2, 2));
    return random_bytes(static_cast<size_t>(element_count(s)) * w, sd);
  };
  if (k.b_constant) b.data = values(k.b, seed + 1);
  c.model.tensors = {tensor("a", type, k.a, qa), b, tensor("y", type, out_shape(k), qy)};
  c.model.op_inputs = {0, 1};
  c.model.op_outputs = {2};
  c.model.code = T::BuiltinOperator_BATCH_MATMUL;
  c.model.version = type == T::TensorType_INT16 ? 3 : type == T::TensorType_INT8 ? 2 : 1;
  const bool ax = k.adj_x, ay = k.adj_y;
  c.model.options = [ax, ay](flatbuffers::FlatBufferBuilder& fb) {
    return std::make_pair(T::BuiltinOptions_BatchMatMulOptions, T::CreateBatchMatMulOptions(fb, ax, ay, false).Union());
  };
  c.inputs.push_back(values(k.a, seed));
  if (!k.b_constant) c.inputs.push_back(values(k.b, seed + 1));
  return c;
}

const std::vector<MatCase> kCases = {
    {{3, 4}, {4, 5}, false, false, false},
    {{2, 3, 4}, {2, 4, 5}, false, false, false},
    {{2, 1, 3, 4}, {3, 4, 6}, false, false, false},  // batch dims broadcast both ways
    {{2, 4, 3}, {2, 4, 5}, true, false, false},
    {{2, 3, 4}, {2, 5, 4}, false, true, false},
    {{1, 7, 3}, {2, 5, 7}, true, true, false},
    {{1, 3, 16}, {16, 6}, false, false, true},  // a constant rhs
    {{4, 9, 33}, {4, 33, 10}, false, false, false},
};

TEST(TfliteOracle, BatchMatMulMatchesTheInterpreter) {
  TESSERA_REQUIRE_ORACLE(script);
  std::vector<OpCheck> checks;
  uint32_t seed = 36000;
  for (size_t i = 0; i < kCases.size(); ++i) {
    const std::string sfx = "_" + std::to_string(i);
    checks.push_back(matmul_check("batch_matmul_f32" + sfx, kCases[i], T::TensorType_FLOAT32, {}, {}, {}, seed += 2));
    checks.push_back(matmul_check("batch_matmul_i8" + sfx, kCases[i], T::TensorType_INT8, {0.05f, -3}, {0.02f, 5}, {0.08f, 10},
                                  seed += 2));
    checks.push_back(matmul_check("batch_matmul_i8_zp0" + sfx, kCases[i], T::TensorType_INT8, {0.03f, 0}, {0.04f, 0},
                                  {0.3f, -7}, seed += 2));
    checks.push_back(matmul_check("batch_matmul_i16" + sfx, kCases[i], T::TensorType_INT16, {0.001f, 0}, {0.0005f, 0},
                                  {0.05f, 0}, seed += 2));
  }
  EXPECT_EQ(run_op_checks(checks, "batch_matmul"), static_cast<int>(checks.size()));
}

// Hybrid: f32 lhs, constant int8 rhs (one scale, zero point 0), f32 output; each lhs row
// quantized symmetrically. One row is all zeros (scale 1, codes 0) in the first case.
TEST(TfliteOracle, HybridBatchMatMulMatchesTheInterpreter) {
  TESSERA_REQUIRE_ORACLE(script);
  const std::vector<MatCase> cases = {
      {{1, 3, 16}, {16, 6}, false, false, true}, {{2, 4, 9}, {2, 9, 5}, false, false, true},
      {{2, 1, 5, 8}, {3, 8, 4}, false, false, true}, {{2, 8, 3}, {2, 6, 8}, true, true, true},
      {{4, 40}, {7, 40}, false, true, true}};
  std::vector<OpCheck> checks;
  uint32_t seed = 37000;
  for (size_t i = 0; i < cases.size(); ++i) {
    OpCheck c = matmul_check("batch_matmul_hybrid_" + std::to_string(i), cases[i], T::TensorType_FLOAT32, {}, {}, {}, seed += 2);
    OpTensor& b = c.model.tensors[1];
    b.type = T::TensorType_INT8;
    b.scale = 0.013f;
    b.zero_point = 0;
    b.data = random_bytes(static_cast<size_t>(element_count(b.shape)), seed + 1);
    if (i == 0) std::fill(c.inputs[0].begin(), c.inputs[0].begin() + 16 * 4, 0);
    checks.push_back(std::move(c));
  }
  EXPECT_EQ(run_op_checks(checks, "batch_matmul_hybrid"), static_cast<int>(checks.size()));
}

// Hybrid with asymmetric_quantize_inputs (version 4): each lhs row gets its own scale and
// zero point; the interpreter corrects the int32 sums by the rhs column sums times the zero
// point. Bit-exact, including deep cases with all-positive rhs codes whose corrections pass
// 2^24 (there a correction computed in float would round: the interpreter's is exact).
TEST(TfliteOracle, HybridAsymmetricBatchMatMulIsBitExact) {
  TESSERA_REQUIRE_ORACLE(script);
  struct AsymCase {
    MatCase k;
    bool positive_rhs = false;  // rhs codes in [1, 127]: large column sums
  };
  const std::vector<AsymCase> cases = {
      {{{1, 4, 16}, {16, 6}, false, false, true}},      {{{2, 8, 9}, {2, 9, 5}, false, false, true}},
      {{{2, 1, 5, 8}, {3, 8, 4}, false, false, true}},  {{{2, 8, 3}, {2, 6, 8}, true, true, true}},
      {{{8, 40}, {7, 40}, false, true, true}},          {{{3, 12, 20}, {20, 10}, false, false, true}},
      {{{4, 3000}, {3000, 5}, false, false, true}, true}, {{{5, 2500}, {6, 2500}, false, true, true}, true},
  };
  std::vector<OpCheck> checks;
  uint32_t seed = 38000;
  for (size_t i = 0; i < cases.size(); ++i) {
    const MatCase& k = cases[i].k;
    OpCheck c = matmul_check("batch_matmul_hybrid_asym_" + std::to_string(i), k, T::TensorType_FLOAT32, {}, {}, {}, seed += 2);
    OpTensor& b = c.model.tensors[1];
    b.type = T::TensorType_INT8;
    b.scale = 0.011f;
    b.zero_point = 0;
    b.data = random_bytes(static_cast<size_t>(element_count(b.shape)), seed + 1);
    for (uint8_t& v : b.data) {
      if (v == 0x80) v = 0x81;  // symmetric int8 weights: [-127, 127]
      if (cases[i].positive_rhs) v = static_cast<uint8_t>(1 + v % 127);
    }
    c.model.version = 4;
    const bool ax = k.adj_x, ay = k.adj_y;
    c.model.options = [ax, ay](flatbuffers::FlatBufferBuilder& fb) {
      return std::make_pair(T::BuiltinOptions_BatchMatMulOptions, T::CreateBatchMatMulOptions(fb, ax, ay, true).Union());
    };
    // lhs rows (K values each after adj_x) of every kind, one all-zero row in the first case.
    const int64_t depth = ax ? k.a[k.a.size() - 2] : k.a.back();
    const int64_t rows = element_count(k.a) / depth;
    std::vector<float> x = patterned_rows(rows, depth, seed + 3, i == 0 ? 2 : -1);
    if (ax) {  // the patterns belong to the rows of the transposed lhs [..., M, K]
      const int64_t m = k.a.back(), inner = depth, batches = element_count(k.a) / (m * inner);
      std::vector<float> t(x.size());
      for (int64_t bb = 0; bb < batches; ++bb)
        for (int64_t r = 0; r < m; ++r)
          for (int64_t kk = 0; kk < inner; ++kk) t[static_cast<size_t>((bb * inner + kk) * m + r)] = x[static_cast<size_t>((bb * m + r) * inner + kk)];
      x = t;
    }
    c.inputs[0] = bytes_of(x);
    c.is_float = true;
    checks.push_back(std::move(c));
  }
  // Byte for byte: run_op_checks compares floats within 1e-5; these must match exactly.
  TempDir dir("batch_matmul_hybrid_asym");
  std::vector<Job> jobs;
  std::vector<std::vector<uint8_t>> models;
  for (const OpCheck& c : checks) {
    models.push_back(c.model.bytes());
    const fs::path file = dir.path / (c.name + ".tflite");
    write_bytes(file, models.back());
    jobs.push_back(Job{c.name, file.string(), c.inputs, {}});
  }
  ASSERT_EQ(run_batch(script, dir.path, jobs), "");
  for (size_t i = 0; i < checks.size(); ++i) {
    SCOPED_TRACE(checks[i].name);
    auto outs = run_tessera(models[i], jobs[i].inputs, "cpu");
    ASSERT_TRUE(outs.ok()) << outs.status().to_string();
    const std::vector<uint8_t>& got = (*outs)[0];
    const std::vector<uint8_t>& want = jobs[i].outputs[0];
    ASSERT_EQ(got.size(), want.size());
    int64_t differ = 0;
    for (size_t k = 0; k < got.size(); k += 4) differ += std::memcmp(&got[k], &want[k], 4) != 0;
    EXPECT_EQ(differ, 0) << differ << " of " << got.size() / 4 << " floats differ from the interpreter's bits";
    std::vector<float> w(want.size() / 4);
    std::memcpy(w.data(), want.data(), want.size());
    EXPECT_NE(*std::min_element(w.begin(), w.end()), *std::max_element(w.begin(), w.end()));
    std::printf("[oracle] %-32s %zu floats bit-exact\n", checks[i].name.c_str(), w.size());
  }
}

TEST(TfliteOracle, BatchMatMulRefusals) {
  const auto f32 = T::TensorType_FLOAT32, i8 = T::TensorType_INT8, i16 = T::TensorType_INT16;
  {  // hybrid with a non-zero rhs zero point, and with a run-time rhs
    OpCheck c = matmul_check("hybrid", kCases[6], f32, {}, {}, {}, 1);
    c.model.tensors[1].type = i8;
    c.model.tensors[1].scale = 0.1f;
    c.model.tensors[1].zero_point = 4;
    c.model.tensors[1].data.resize(c.model.tensors[1].data.size() / 4);
    expect_refused(c.model, {"BATCH_MATMUL", "rhs 'b'", "hybrid", "zero point 0"});
    c.model.tensors[1].zero_point = 0;
    c.model.tensors[1].data.clear();
    expect_refused(c.model, {"BATCH_MATMUL", "hybrid rhs 'b' must be constant"});
  }
  {  // asymmetric hybrid deeper than the int32 sums hold
    MatCase k = {{1, 66312}, {66312, 1}, false, false, true};
    OpCheck c = matmul_check("hybrid_asym_deep", k, f32, {}, {}, {}, 5);
    c.model.tensors[1].type = i8;
    c.model.tensors[1].scale = 0.1f;
    c.model.tensors[1].data.resize(c.model.tensors[1].data.size() / 4);
    c.model.version = 4;
    c.model.options = [](flatbuffers::FlatBufferBuilder& fb) {
      return std::make_pair(T::BuiltinOptions_BatchMatMulOptions, T::CreateBatchMatMulOptions(fb, false, false, true).Union());
    };
    expect_refused(c.model, {"BATCH_MATMUL", "lhs 'a'", "depth 66312", "asymmetric_quantize_inputs", "66311 products"});
  }
  {  // int16 with a non-zero zero point
    OpCheck c = matmul_check("i16_zp", kCases[0], i16, {0.001f, 3}, {0.001f, 0}, {0.01f, 0}, 2);
    expect_refused(c.model, {"BATCH_MATMUL", "int16 tensor 'a'", "zero point 3"});
  }
  {  // inner dims that differ
    MatCase k = {{2, 3, 4}, {2, 5, 6}, false, false, false};
    OpCheck c = matmul_check("inner", k, f32, {}, {}, {}, 3);
    expect_refused(c.model, {"BATCH_MATMUL", "inner dims differ"});
  }
  {  // rank 6
    MatCase k = {{1, 1, 1, 1, 3, 4}, {4, 5}, false, false, false};
    OpCheck c = matmul_check("rank6", k, f32, {}, {}, {}, 4);
    expect_refused(c.model, {"BATCH_MATMUL", "operand 'a'", "rank 6"});
  }
}

}  // namespace
}  // namespace tessera::oracle
