// SiLU as TFLite graphs hold it, y = MUL(x, LOGISTIC(x)) in u8 and i8: the cpu kernel runs
// such a MUL as one byte table over x (quant_elementwise.cpp), the MUL's own code of x and
// LOGISTIC's code of x. Judged by the interpreter on every input code, at several input and
// output scales, with the operands in either order: bit-identical.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <string>

#include "import/tflite/graph_model.h"
#include "oracle/oracle.h"

namespace tessera::oracle {
namespace {

namespace T = ::tflite;
using testing::GraphModel;
using testing::GraphSubgraph;
using testing::OpTensor;

struct SiluCase {
  std::string name;
  bool i8, x_first;
  float x_scale;
  int64_t x_zp;
  float y_scale;
  int64_t y_zp;
};

OpTensor q8(const std::string& name, bool i8, float scale, int64_t zp) {
  OpTensor t = testing::activation(name, i8 ? T::TensorType_INT8 : T::TensorType_UINT8, {1, 4, 8, 8});
  t.scale = scale;
  t.zero_point = zp;
  return t;
}

std::vector<uint8_t> silu_model(const SiluCase& c) {
  GraphModel m;
  GraphSubgraph g;
  g.name = "main";
  const int32_t x = g.add(q8("x", c.i8, c.x_scale, c.x_zp));
  // TFLite's LOGISTIC output parameters: 1/256 and zero point 0 (u8) or -128 (i8).
  const int32_t s = g.add(q8("sigmoid", c.i8, 1.0f / 256, c.i8 ? -128 : 0));
  const int32_t y = g.add(q8("y", c.i8, c.y_scale, c.y_zp));
  g.op(T::BuiltinOperator_LOGISTIC, {x}, {s}, {}, c.i8 ? 2 : 1);
  g.op(T::BuiltinOperator_MUL, c.x_first ? std::vector<int32_t>{x, s} : std::vector<int32_t>{s, x}, {y}, {},
       c.i8 ? 2 : 1);
  g.inputs = {x};
  g.outputs = {y};
  m.subgraphs.push_back(std::move(g));
  return m.bytes();
}

TEST(TfliteOracle, SiluAsOneTableMatchesTheInterpreter) {
  TESSERA_REQUIRE_ORACLE(script);
  const std::vector<SiluCase> cases = {
      {"silu_i8_yolov8n", true, true, 0.0912f, -121, 0.0867f, -125},
      {"silu_i8_sx", true, false, 0.0912f, -121, 0.0867f, -125},
      {"silu_i8_wide", true, true, 0.25f, 3, 0.2f, -100},
      {"silu_i8_narrow", true, false, 0.01f, 0, 0.005f, -60},
      {"silu_u8", false, true, 0.05f, 128, 0.04f, 10},
      {"silu_u8_sx", false, false, 0.11f, 90, 0.09f, 3},
  };
  TempDir dir("silu");
  std::vector<Job> jobs;
  std::vector<std::vector<uint8_t>> models;
  for (const SiluCase& c : cases) {
    models.push_back(silu_model(c));
    const fs::path file = dir.path / (c.name + ".tflite");
    write_bytes(file, models.back());
    std::vector<uint8_t> x(256);
    for (int v = 0; v < 256; ++v) x[static_cast<size_t>(v)] = static_cast<uint8_t>(v);  // every code
    jobs.push_back(Job{c.name, file.string(), {x}, {}});
  }
  ASSERT_EQ(run_batch(script, dir.path, jobs), "");
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].name);
    auto outs = run_tessera(models[i], jobs[i].inputs, "cpu");
    ASSERT_TRUE(outs.ok()) << outs.status().to_string();
    ASSERT_EQ(outs->size(), 1u);
    const std::vector<uint8_t>& got = (*outs)[0];
    const std::vector<uint8_t>& want = jobs[i].outputs[0];
    ASSERT_EQ(got.size(), want.size());
    int64_t differ = 0;
    for (size_t j = 0; j < got.size(); ++j) differ += got[j] != want[j];
    EXPECT_EQ(differ, 0) << differ << " of 256 codes differ";
    EXPECT_GT(std::set<uint8_t>(want.begin(), want.end()).size(), 20u);  // not degenerate
    std::printf("[oracle] %-20s all 256 codes bit-identical\n", cases[i].name.c_str());
  }
}

}  // namespace
}  // namespace tessera::oracle
