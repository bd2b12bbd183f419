// The rknpu device's QUANTIZE between 8-bit tensors (a DPU lookup-table task) and
// RESIZE_NEAREST_NEIGHBOR x2 (PPU tasks, docs/rknpu.md "Nearest x2 resize") as
// single-operator models against the TFLite interpreter: each model must run on the NPU
// (the plan places its operator there) and its output must equal the interpreter's byte for
// byte, on the cpu and on the rknpu device model.
#include <gtest/gtest.h>

#include "import/tflite/tflite_importer.h"
#include "oracle/op_checks.h"
#include "tessera/session.h"
#include "tessera/backend/plan.h"

namespace tessera::oracle {
namespace {

namespace T = ::tflite;
using testing::OpTensor;
using testing::SingleOpModel;

OpTensor q8(const std::string& name, bool u8, std::vector<int32_t> shape, float scale, int zp) {
  OpTensor t = testing::activation(name, u8 ? T::TensorType_UINT8 : T::TensorType_INT8, std::move(shape));
  t.scale = scale;
  t.zero_point = zp;
  return t;
}

SingleOpModel quantize_model(bool in_u8, float si, int zi, bool out_u8, float so, int zo) {
  SingleOpModel m;
  m.tensors = {q8("x", in_u8, {1, 6, 5, 40}, si, zi), q8("y", out_u8, {1, 6, 5, 40}, so, zo)};
  m.op_inputs = {0};
  m.op_outputs = {1};
  m.code = T::BuiltinOperator_QUANTIZE;
  m.version = 2;
  return m;
}

SingleOpModel resize_model(bool u8, std::vector<int32_t> x, bool half) {
  SingleOpModel m;
  std::vector<int32_t> y = {x[0], 2 * x[1], 2 * x[2], x[3]};
  m.tensors = {q8("x", u8, x, 0.03f, u8 ? 120 : -5),
               testing::constant("size", T::TensorType_INT32, {2}, testing::int32_bytes({y[1], y[2]})),
               q8("y", u8, y, 0.03f, u8 ? 120 : -5)};
  m.op_inputs = {0, 1};
  m.op_outputs = {2};
  m.code = T::BuiltinOperator_RESIZE_NEAREST_NEIGHBOR;
  m.version = half ? 3 : 2;
  m.options = [half](flatbuffers::FlatBufferBuilder& fb) {
    return std::make_pair(T::BuiltinOptions_ResizeNearestNeighborOptions,
                          T::CreateResizeNearestNeighborOptions(fb, false, half).Union());
  };
  return m;
}

// The devices the plan of `model` on rknpu gives its nodes (transfers left out).
std::vector<std::string> placements(const std::vector<uint8_t>& model) {
  auto owner = std::make_shared<std::vector<uint8_t>>(model);
  auto g = tflite::load_tflite_buffer(ConstData{owner->data(), static_cast<int64_t>(owner->size()), owner});
  EXPECT_TRUE(g.ok()) << g.status().to_string();
  if (!g.ok()) return {};
  SessionOptions so;
  so.device = "rknpu";
  auto s = Session::create(std::move(*g), so);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  if (!s.ok()) return {};
  std::vector<std::string> where;
  const Plan& plan = (*s)->plan();
  for (size_t i = 0; i < plan.graph.nodes().size(); ++i)
    if (plan.graph.nodes()[i].op != OpKind::transfer) where.push_back(plan.devices[plan.nodes[i].device]->name());
  return where;
}

TEST(TfliteOracle, RknpuRequantizeAndResizeMatchTheInterpreter) {
  TESSERA_REQUIRE_ORACLE(script);
  TempDir dir("rknpu_ops");
  std::vector<Job> jobs;
  std::vector<std::vector<uint8_t>> models;
  uint32_t seed = 23000;
  auto add = [&](const std::string& name, const SingleOpModel& m, int64_t n) {
    models.push_back(m.bytes());
    const fs::path file = dir.path / (name + ".tflite");
    write_bytes(file, models.back());
    jobs.push_back(Job{name, file.string(), {random_bytes(static_cast<size_t>(n), seed += 7)}, {}});
  };
  const int64_t nq = 6 * 5 * 40;
  add("quantize_i8_i8_yolov8n", quantize_model(false, 0.0912f, -121, false, 0.0867f, -120), nq);
  add("quantize_i8_i8_shrink", quantize_model(false, 0.05f, 3, false, 0.11f, -7), nq);
  add("quantize_i8_i8_saturating", quantize_model(false, 0.2f, -30, false, 0.03f, 10), nq);
  add("quantize_u8_u8", quantize_model(true, 0.04f, 128, true, 0.035f, 120), nq);
  add("quantize_u8_i8", quantize_model(true, 0.04f, 100, false, 0.05f, -28), nq);
  add("quantize_i8_u8", quantize_model(false, 0.07f, 0, true, 0.09f, 140), nq);
  add("resize_nearest_x2_i8_yolov8n", resize_model(false, {1, 20, 20, 256}, false), 20 * 20 * 256);
  add("resize_nearest_x2_i8_half_pixel", resize_model(false, {1, 5, 7, 40}, true), 5 * 7 * 40);
  add("resize_nearest_x2_u8", resize_model(true, {1, 6, 3, 16}, false), 6 * 3 * 16);
  add("resize_nearest_x2_i8_split", resize_model(false, {1, 40, 6, 256}, false), 40 * 6 * 256);
  ASSERT_EQ(run_batch(script, dir.path, jobs), "");
  expect_jobs_byte_exact(jobs, models, "rknpu_ops");
  for (size_t i = 0; i < jobs.size(); ++i) {
    SCOPED_TRACE(jobs[i].name);
    EXPECT_EQ(placements(models[i]), std::vector<std::string>{"rknpu"});
    auto outs = run_tessera(models[i], jobs[i].inputs, "rknpu");
    ASSERT_TRUE(outs.ok()) << outs.status().to_string();
    ASSERT_EQ(outs->size(), 1u);
    EXPECT_EQ((*outs)[0], jobs[i].outputs[0]) << "rknpu differs from the interpreter";
    std::printf("[oracle] rknpu %-40s %s\n", jobs[i].name.c_str(), (*outs)[0] == jobs[i].outputs[0] ? "match" : "DIFFER");
  }
}

}  // namespace
}  // namespace tessera::oracle
