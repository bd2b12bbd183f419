// Post-training quantization (tessera/quantize.h, src/api/quantize.cpp) judged three ways:
//  - the TensorFlow Lite interpreter runs the written file and gives the cpu's bytes (the
//    file is a valid int8 TFLite model, meaning what Tessera's int8 kernels compute);
//  - against the float model it came from: the same objects found, boxes and scores close;
//  - on the rknpu device model: with the ADDs' parameters shared (the default) the NPU's
//    output is the cpu's, byte for byte; with each ADD keeping its own ranges, as TFLite's
//    converter quantizes, it is not (the NPU's 16-bit ADD encodings miss a few pairs).
// And the refusals: no calibration, an already quantized model.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <iterator>
#include <random>

#include "fixtures.h"
#include "import/tflite/graph_model.h"
#include "oracle/oracle.h"
#include "tessera/backend/plan.h"
#include "tessera/detect.h"
#include "tessera/model.h"
#include "tessera/quantize.h"

namespace tessera::oracle {
namespace {

struct Quantized {
  std::vector<uint8_t> bytes;
  QuantizeReport report;
};

Result<Quantized> quantize_yolov5n(const std::string& model_path, bool shared_adds) {
  TS_ASSIGN_OR_RETURN(auto model, Model::load(model_path));
  std::vector<CalibrationRun> runs;
  for (const char* img : {"table.jpg", "grace_hopper.bmp", "cat.bmp", "squat.bmp"}) {
    const std::string p = testing::shared_path(std::string("images/") + img);
    if (p.empty()) return error(StatusCode::not_found, "images/", img);
    TS_ASSIGN_OR_RETURN(std::vector<uint8_t> in, model->image_input(p));
    runs.push_back({std::move(in)});
  }
  QuantizeOptions o;
  o.int8_io = true;
  o.shared_add_params = shared_adds;
  Quantized q;
  int calls = 0;
  TS_ASSIGN_OR_RETURN(q.bytes, quantize_tflite(testing::read_file(model_path), runs, o, &q.report, [&](int done, int total) {
                        ++calls;
                        EXPECT_EQ(total, 4);
                        EXPECT_EQ(done, calls);
                      }));
  EXPECT_EQ(calls, 4);
  return q;
}

int64_t codes_differing(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b, int* max_diff) {
  int64_t n = 0;
  *max_diff = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    const int d = std::abs(int(int8_t(a[i])) - int(int8_t(b[i])));
    n += d != 0;
    *max_diff = std::max(*max_diff, d);
  }
  return n;
}

float iou(const Detection& a, const Detection& b) {
  const float w = std::max(0.0f, std::min(a.right, b.right) - std::max(a.left, b.left));
  const float h = std::max(0.0f, std::min(a.bottom, b.bottom) - std::max(a.top, b.top));
  const float inter = w * h;
  const float area = (a.right - a.left) * (a.bottom - a.top) + (b.right - b.left) * (b.bottom - b.top) - inter;
  return area > 0 ? inter / area : 0;
}

Result<std::vector<Detection>> detect(std::shared_ptr<const Model> m, const std::string& image, const std::string& device) {
  SessionOptions so;
  so.device = device;
  TS_ASSIGN_OR_RETURN(auto s, ModelSession::create(std::move(m), so));
  return s->detect(image);
}

TEST(QuantizeOracle, Yolov5nFromFp16IsTheInterpretersTheNpusAndTheFloatModels) {
  TESSERA_REQUIRE_ORACLE(script);
  TESSERA_REQUIRE_FIXTURE(float_path, "models/tflite/corpus/yolov5n_fp16.tflite");
  TESSERA_REQUIRE_FIXTURE(table, "images/table.jpg");
  auto q = quantize_yolov5n(float_path, true);
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  EXPECT_EQ(q->report.calibration_runs, 4);
  EXPECT_GT(q->report.tensors_quantized, 300);
  EXPECT_LT(q->bytes.size(), testing::read_file(float_path).size()) << "int8 weights replace the fp16 ones";
  TempDir dir("quantize_yolov5n");
  const fs::path qpath = dir.path / "yolov5n_int8.tflite";
  write_bytes(qpath, q->bytes);

  // Every activation of the written model is int8; its input is the image as detect feeds it.
  auto qmodel = Model::load(qpath.string());
  ASSERT_TRUE(qmodel.ok()) << qmodel.status().to_string();
  int f32 = 0, nodes = 0;
  for (const Tensor& t : (*qmodel)->graph().tensors()) f32 += !t.data && t.dtype == DType::f32;
  EXPECT_EQ(f32, 0);
  auto in = (*qmodel)->image_input(table);
  ASSERT_TRUE(in.ok()) << in.status().to_string();

  // The interpreter and the cpu: the same bytes.
  std::vector<Job> jobs{{"yolov5n_int8", qpath.string(), {*in}, {}}};
  ASSERT_EQ(run_batch(script, dir.path, jobs), "");
  auto cpu = run_tessera(q->bytes, {*in}, "cpu");
  ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
  ASSERT_EQ(jobs[0].outputs.size(), 1u);
  ASSERT_EQ((*cpu)[0].size(), jobs[0].outputs[0].size());
  int max_diff = 0;
  EXPECT_EQ(codes_differing((*cpu)[0], jobs[0].outputs[0], &max_diff), 0) << "max " << max_diff;

  // The NPU: the cpu's bytes, most of the graph on the NPU.
  auto npu = run_tessera(q->bytes, {*in}, "rknpu");
  ASSERT_TRUE(npu.ok()) << npu.status().to_string();
  const int64_t npu_differ = codes_differing((*cpu)[0], (*npu)[0], &max_diff);
  EXPECT_EQ(npu_differ, 0) << "max " << max_diff;
  {
    SessionOptions so;
    so.device = "rknpu";
    auto s = Session::create((*qmodel)->graph(), so);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    int on_npu = 0;
    const Plan& p = (*s)->plan();
    for (size_t i = 0; i < p.graph.nodes().size(); ++i) {
      if (p.graph.nodes()[i].op == OpKind::transfer) continue;
      ++nodes;
      on_npu += p.devices[p.nodes[i].device]->name() == "rknpu";
    }
    std::printf("[quantize] yolov5n int8: %d of %d nodes on the NPU; interpreter = cpu = NPU over %zu codes\n", on_npu, nodes,
                (*cpu)[0].size());
    // Measured 210 of 245: the backbone and neck; the export's box decoding (reshapes to
    // [N, 3, 85], 2-channel slices, broadcast products) stays on the cpu.
    EXPECT_GE(on_npu, 210);
  }

  // Against the float model: the same classes, boxes overlapping, scores close.
  auto fmodel = Model::load(float_path);
  ASSERT_TRUE(fmodel.ok()) << fmodel.status().to_string();
  for (const char* img : {"table.jpg", "grace_hopper.bmp", "cat.bmp", "squat.bmp"}) {
    SCOPED_TRACE(img);
    const std::string path = testing::shared_path(std::string("images/") + img);
    auto want = detect(*fmodel, path, "cpu");
    auto got = detect(*qmodel, path, "cpu");
    ASSERT_TRUE(want.ok()) << want.status().to_string();
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    int matched = 0;
    for (const Detection& w : *want) {
      if (w.score < 0.5f) continue;  // the float model's confident objects
      bool found = false;
      for (const Detection& g : *got)
        found = found || (g.class_id == w.class_id && iou(g, w) > 0.85f && std::fabs(g.score - w.score) < 0.1f);
      EXPECT_TRUE(found) << "class " << w.class_id << " score " << w.score;
      matched += found;
    }
    EXPECT_GE(matched, 1);
  }
}

TEST(QuantizeOracle, OwnAddRangesAreTheInterpretersButNotTheNpus) {
  TESSERA_REQUIRE_ORACLE(script);
  TESSERA_REQUIRE_FIXTURE(float_path, "models/tflite/corpus/yolov5n_fp16.tflite");
  TESSERA_REQUIRE_FIXTURE(table, "images/table.jpg");
  auto q = quantize_yolov5n(float_path, false);
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  TempDir dir("quantize_yolov5n_own");
  const fs::path qpath = dir.path / "yolov5n_int8_own.tflite";
  write_bytes(qpath, q->bytes);
  auto qmodel = Model::load(qpath.string());
  ASSERT_TRUE(qmodel.ok()) << qmodel.status().to_string();
  auto in = (*qmodel)->image_input(table);
  ASSERT_TRUE(in.ok()) << in.status().to_string();
  std::vector<Job> jobs{{"yolov5n_int8_own", qpath.string(), {*in}, {}}};
  ASSERT_EQ(run_batch(script, dir.path, jobs), "");
  auto cpu = run_tessera(q->bytes, {*in}, "cpu");
  auto npu = run_tessera(q->bytes, {*in}, "rknpu");
  ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
  ASSERT_TRUE(npu.ok()) << npu.status().to_string();
  int max_diff = 0;
  EXPECT_EQ(codes_differing((*cpu)[0], jobs[0].outputs[0], &max_diff), 0) << "max " << max_diff;
  const int64_t differ = codes_differing((*cpu)[0], (*npu)[0], &max_diff);
  std::printf("[quantize] yolov5n int8, own ADD ranges: the NPU differs from the cpu in %lld of %zu codes, max %d\n",
              static_cast<long long>(differ), (*cpu)[0].size(), max_diff);
  EXPECT_GT(differ, 0) << "three different ADD scales: the NPU's ADD misses TFLite's on a few pairs";
}

// A dynamic-range ("hybrid") export: int8 filters with float activations, requantized per
// channel from their values; Ultralytics' packed metadata (the class names) carried over.
TEST(QuantizeOracle, HybridYolov8nKeepsItsClassNamesAndItsPerson) {
  TESSERA_REQUIRE_FIXTURE(hybrid, "models/tflite/corpus/yolov8n_int8.tflite");
  TESSERA_REQUIRE_FIXTURE(grace, "images/grace_hopper.bmp");
  auto fmodel = Model::load(hybrid);
  ASSERT_TRUE(fmodel.ok()) << fmodel.status().to_string();
  std::vector<CalibrationRun> runs;
  for (const char* img : {"table.jpg", "grace_hopper.bmp", "cat.bmp", "squat.bmp"}) {
    auto in = (*fmodel)->image_input(testing::shared_path(std::string("images/") + img));
    ASSERT_TRUE(in.ok()) << in.status().to_string();
    runs.push_back({*in});
  }
  QuantizeReport rep;
  auto q = quantize_tflite(testing::read_file(hybrid), runs, {}, &rep);
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  bool carried = false;
  for (const std::string& n : rep.notes) carried = carried || n.find("packed files") != std::string::npos;
  EXPECT_TRUE(carried);
  auto qmodel = Model::from_tflite_buffer(ConstData::from_vector(*q));
  ASSERT_TRUE(qmodel.ok()) << qmodel.status().to_string();
  ASSERT_EQ((*qmodel)->labels().size(), 80u);
  EXPECT_EQ((*qmodel)->labels()[0], "person");
  int f32 = 0;
  for (const Tensor& t : (*qmodel)->graph().tensors()) f32 += !t.data && t.dtype == DType::f32;
  EXPECT_EQ(f32, 2) << "only the float input and output";
  auto want = detect(*fmodel, grace, "cpu");
  auto got = detect(*qmodel, grace, "cpu");
  ASSERT_TRUE(want.ok() && got.ok());
  ASSERT_FALSE(want->empty());
  ASSERT_FALSE(got->empty());
  EXPECT_EQ((*got)[0].class_id, (*want)[0].class_id);
  EXPECT_GT(iou((*got)[0], (*want)[0]), 0.9f);
  EXPECT_LT(std::fabs((*got)[0].score - (*want)[0].score), 0.05f);
}

// A float fully connected model (TFLite Micro's hello_world: x -> sin x), float inputs and
// outputs kept: QUANTIZE and DEQUANTIZE at the edges, per-tensor FC weights.
TEST(QuantizeOracle, HelloWorldFloatKeepsFloatEdgesAndIsTheInterpreters) {
  TESSERA_REQUIRE_ORACLE(script);
  TESSERA_REQUIRE_FIXTURE(float_path, "models/tflite/corpus/micro_hello_world_float.tflite");
  std::vector<CalibrationRun> runs;
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> x(0.0f, 6.2831853f);
  for (int r = 0; r < 64; ++r) {
    const float v = x(rng);
    std::vector<uint8_t> b(4);
    std::memcpy(b.data(), &v, 4);
    runs.push_back({b});
  }
  QuantizeReport rep;
  auto q = quantize_tflite(testing::read_file(float_path), runs, {}, &rep);
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  EXPECT_EQ(find_operator(*q, ::tflite::BuiltinOperator_QUANTIZE), 0);
  EXPECT_GE(find_operator(*q, ::tflite::BuiltinOperator_DEQUANTIZE), 1);
  TempDir dir("quantize_hello");
  const fs::path qpath = dir.path / "hello_int8.tflite";
  write_bytes(qpath, *q);
  std::vector<Job> jobs;
  std::vector<float> xs;
  for (int i = 0; i < 16; ++i) {
    const float v = 0.4f * float(i) + 0.05f;
    xs.push_back(v);
    std::vector<uint8_t> b(4);
    std::memcpy(b.data(), &v, 4);
    jobs.push_back({"hello" + std::to_string(i), qpath.string(), {b}, {}});
  }
  ASSERT_EQ(run_batch(script, dir.path, jobs), "");
  double worst = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    auto cpu = run_tessera(*q, jobs[i].inputs, "cpu");
    ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
    EXPECT_EQ((*cpu)[0], jobs[i].outputs[0]) << "x = " << xs[i];
    float y;
    std::memcpy(&y, (*cpu)[0].data(), 4);
    worst = std::max(worst, std::fabs(double(y) - std::sin(double(xs[i]))));
  }
  // The float model approximates sin within about 0.1; int8 adds a few of its 1/127 steps.
  EXPECT_LT(worst, 0.2);
  std::printf("[quantize] hello_world int8: worst |y - sin x| %.3f over 16 points\n", worst);
}

// A one-FULLY_CONNECTED float model ([1, 4] -> [1, 3]) whose operator names its options
// type but holds no table (the importer reads the defaults): found by quantize_fuzz, where
// the object API kept the type without a value and packing dereferenced it.
std::vector<uint8_t> float_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}
testing::OpTensor f32(const char* name, std::vector<int32_t> shape) {
  return testing::activation(name, ::tflite::TensorType_FLOAT32, std::move(shape));
}
testing::OpTensor f32_constant(const char* name, std::vector<int32_t> shape, const std::vector<float>& v) {
  return testing::constant(name, ::tflite::TensorType_FLOAT32, std::move(shape), float_bytes(v));
}

// `model` quantized with int8 edges, each of `inputs` (one set per run) run through the
// interpreter and the cpu, which must give the same bytes: the quantized model and the
// interpreter's output 0 per run.
struct Judged {
  std::vector<uint8_t> model;
  std::vector<std::vector<uint8_t>> outputs;
};
Judged quantize_and_judge(const std::string& script, const std::string& name, const std::vector<uint8_t>& model,
                          const std::vector<CalibrationRun>& runs, const std::vector<std::vector<std::vector<uint8_t>>>& inputs) {
  Judged r;
  QuantizeOptions o;
  o.int8_io = true;
  auto q = quantize_tflite(model, runs, o);
  EXPECT_TRUE(q.ok()) << q.status().to_string();
  if (!q.ok()) return r;
  r.model = *q;
  TempDir dir("quantize_" + name);
  write_bytes(dir.path / (name + ".tflite"), r.model);
  std::vector<Job> jobs;
  for (size_t j = 0; j < inputs.size(); ++j)
    jobs.push_back({name + std::to_string(j), (dir.path / (name + ".tflite")).string(), inputs[j], {}});
  const std::string err = run_batch(script, dir.path, jobs);
  EXPECT_EQ(err, "");
  if (!err.empty()) return r;
  for (const Job& j : jobs) {
    auto cpu = run_tessera(r.model, j.inputs, "cpu");
    EXPECT_TRUE(cpu.ok()) << cpu.status().to_string();
    if (cpu.ok()) EXPECT_EQ((*cpu)[0], j.outputs[0]) << j.name;
    r.outputs.push_back(j.outputs.empty() ? std::vector<uint8_t>{} : j.outputs[0]);
  }
  return r;
}

std::vector<uint8_t> fc_model_without_options_table() {
  testing::GraphModel m;
  testing::GraphSubgraph& sg = m.subgraphs.emplace_back();
  const int32_t x = sg.add(f32("x", {1, 4}));
  const int32_t w = sg.add(f32_constant("w", {3, 4}, {0.5f, -1.0f, 0.25f, 2.0f, 1.5f, 0.0f, -0.75f, 1.0f, -2.0f, 0.125f, 1.0f, -0.5f}));
  const int32_t b = sg.add(f32_constant("b", {3}, {0.1f, -0.2f, 0.3f}));
  const int32_t y = sg.add(f32("y", {1, 3}));
  sg.inputs = {x};
  sg.outputs = {y};
  sg.op(::tflite::BuiltinOperator_FULLY_CONNECTED, {x, w, b}, {y}, [](flatbuffers::FlatBufferBuilder&) {
    return std::make_pair(::tflite::BuiltinOptions_FullyConnectedOptions, flatbuffers::Offset<void>());  // no table
  });
  return m.bytes();
}

TEST(QuantizeOracle, AnOperatorWithoutItsOptionsTableIsQuantized) {
  std::vector<CalibrationRun> runs;
  for (float v : {-1.0f, 0.5f, 2.0f}) {
    std::vector<uint8_t> in(16);
    for (int k = 0; k < 4; ++k) {
      const float x = v * float(k + 1) - 0.5f;
      std::memcpy(in.data() + 4 * k, &x, 4);
    }
    runs.push_back({in});
  }
  auto q = quantize_tflite(fc_model_without_options_table(), runs);
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  auto again = run_tessera(*q, {runs[1][0]}, "cpu");
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  ASSERT_EQ((*again)[0].size(), 12u);
  // y = w x + b at x = (0, 0.5, 1, 1.5), within a few int8 steps.
  const float want[3] = {0.5f * 0 - 1.0f * 0.5f + 0.25f * 1 + 2.0f * 1.5f + 0.1f,
                         1.5f * 0 + 0.0f * 0.5f - 0.75f * 1 + 1.0f * 1.5f - 0.2f,
                         -2.0f * 0 + 0.125f * 0.5f + 1.0f * 1 - 0.5f * 1.5f + 0.3f};
  for (int j = 0; j < 3; ++j) {
    float y;
    std::memcpy(&y, (*again)[0].data() + 4 * j, 4);
    EXPECT_NEAR(y, want[j], 0.1f) << "output " << j;
  }
}

// A one-operator float model [1, 4] -> [1, 4] of a unary builtin without options.
std::vector<uint8_t> unary_float_model(::tflite::BuiltinOperator code) {
  testing::GraphModel m;
  testing::GraphSubgraph& sg = m.subgraphs.emplace_back();
  const int32_t x = sg.add(f32("x", {1, 4})), y = sg.add(f32("y", {1, 4}));
  sg.inputs = {x};
  sg.outputs = {y};
  sg.op(code, {x}, {y});
  return m.bytes();
}

TEST(QuantizeOracle, AnOperatorWithoutAnInt8FormIsNamedBeforeTheCalibration) {
  const std::vector<uint8_t> model = unary_float_model(::tflite::BuiltinOperator_EXP);
  std::vector<uint8_t> in(16);
  const float v[4] = {0.5f, -1.0f, 2.0f, 0.0f};
  std::memcpy(in.data(), v, 16);
  auto y = run_tessera(model, {in}, "cpu");
  ASSERT_TRUE(y.ok()) << "the float model runs: " << y.status().to_string();
  int runs = 0;
  auto q = quantize_tflite(model, {{in}}, {}, nullptr, [&](int, int) { ++runs; });
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.status().code(), StatusCode::unsupported);
  EXPECT_NE(q.status().message().find("operator 0 (EXP) has no int8 form"), std::string::npos) << q.status().to_string();
  EXPECT_EQ(runs, 0) << "refused before any calibration run";
  // LOGISTIC has one: [1, 4] at 1/256, zero point -128 on the way out.
  auto ok = quantize_tflite(unary_float_model(::tflite::BuiltinOperator_LOGISTIC), {{in}});
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
}

// Each activation alone, quantized with int8 edges from calibration values in [-4, 4]: the
// interpreter runs the written operator as the cpu does, and the int8 results stay within
// two output steps of the float operator's.
TEST(QuantizeOracle, EachActivationQuantizesToWhatTheInterpreterRuns) {
  TESSERA_REQUIRE_ORACLE(script);
  struct Case {
    ::tflite::BuiltinOperator code;
    const char* name;
    double (*f)(double);
  };
  const Case cases[] = {
      {::tflite::BuiltinOperator_RELU, "relu", [](double x) { return std::max(x, 0.0); }},
      {::tflite::BuiltinOperator_RELU6, "relu6", [](double x) { return std::clamp(x, 0.0, 6.0); }},
      {::tflite::BuiltinOperator_HARD_SWISH, "hard_swish", [](double x) { return x * std::clamp(x + 3, 0.0, 6.0) / 6; }},
      {::tflite::BuiltinOperator_LOGISTIC, "logistic", [](double x) { return 1 / (1 + std::exp(-x)); }},
      {::tflite::BuiltinOperator_TANH, "tanh", [](double x) { return std::tanh(x); }},
  };
  TempDir dir("quantize_unary");
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> u(-4.0f, 4.0f);
  std::vector<CalibrationRun> runs;
  for (int r = 0; r < 16; ++r) {
    std::vector<uint8_t> in(16);
    for (int k = 0; k < 4; ++k) {
      const float x = u(rng);
      std::memcpy(in.data() + 4 * k, &x, 4);
    }
    runs.push_back({in});
  }
  std::vector<Job> jobs;
  std::vector<std::vector<uint8_t>> models;
  std::vector<std::vector<uint8_t>> inputs;
  for (int j = 0; j < 8; ++j) {
    std::vector<uint8_t> in(4);
    for (auto& v : in) v = static_cast<uint8_t>(rng() & 0xff);
    inputs.push_back(in);
  }
  for (const Case& c : cases) {
    QuantizeOptions o;
    o.int8_io = true;
    auto q = quantize_tflite(unary_float_model(c.code), runs, o);
    ASSERT_TRUE(q.ok()) << c.name << ": " << q.status().to_string();
    const fs::path path = dir.path / (std::string(c.name) + ".tflite");
    write_bytes(path, *q);
    models.push_back(*q);
    for (size_t j = 0; j < inputs.size(); ++j) jobs.push_back({std::string(c.name) + std::to_string(j), path.string(), {inputs[j]}, {}});
  }
  ASSERT_EQ(run_batch(script, dir.path, jobs), "");
  for (size_t ci = 0; ci < std::size(cases); ++ci) {
    SCOPED_TRACE(cases[ci].name);
    auto g = tflite::load_tflite_buffer(ConstData::from_vector(models[ci]));
    ASSERT_TRUE(g.ok()) << g.status().to_string();
    const QuantParams qi = g->tensor(g->inputs[0]).quant, qo = g->tensor(g->outputs[0]).quant;
    for (size_t j = 0; j < inputs.size(); ++j) {
      auto cpu = run_tessera(models[ci], {inputs[j]}, "cpu");
      ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
      EXPECT_EQ((*cpu)[0], jobs[ci * inputs.size() + j].outputs[0]) << "input " << j;
      for (int k = 0; k < 4; ++k) {
        const double x = qi.scale[0] * (int(int8_t(inputs[j][k])) - qi.zero_point[0]);
        const double y = qo.scale[0] * (int(int8_t((*cpu)[0][k])) - qo.zero_point[0]);
        EXPECT_NEAR(y, cases[ci].f(x), 2.0 * qo.scale[0]) << "x = " << x;
      }
    }
  }
}

// x [1, 4] joined with a constant [1, 4] along axis 1, then LOGISTIC: the constant coded at
// the concatenation's parameters (TFLite's int8 kernel takes no other), the LOGISTIC's
// fixed-range output fed to nothing else. The interpreter must accept and agree.
TEST(QuantizeOracle, AConcatenationWithAConstantInputIsTheInterpreters) {
  TESSERA_REQUIRE_ORACLE(script);
  const std::vector<float> c = {-0.5f, 0.25f, 1.0f, 1.5f};  // a narrower range than the joined x
  testing::GraphModel gm;
  testing::GraphSubgraph& sg = gm.subgraphs.emplace_back();
  const int32_t x = sg.add(f32("x", {1, 4})), ci = sg.add(f32_constant("c", {1, 4}, c));
  const int32_t joined = sg.add(f32("joined", {1, 8})), y = sg.add(f32("y", {1, 8}));
  sg.inputs = {x};
  sg.outputs = {y};
  sg.op(::tflite::BuiltinOperator_CONCATENATION, {x, ci}, {joined}, [](flatbuffers::FlatBufferBuilder& fb) {
    return std::make_pair(::tflite::BuiltinOptions_ConcatenationOptions, ::tflite::CreateConcatenationOptions(fb, 1).Union());
  });
  sg.op(::tflite::BuiltinOperator_LOGISTIC, {joined}, {y});
  const std::vector<uint8_t> model = gm.bytes();
  std::vector<CalibrationRun> runs;
  for (float v : {-2.0f, 1.0f, 3.0f}) runs.push_back({float_bytes({v, v + 0.5f, v + 1.0f, v + 1.5f})});
  std::vector<std::vector<std::vector<uint8_t>>> inputs;
  for (int j = 0; j < 4; ++j) inputs.push_back({{uint8_t(j * 60), 17, 200, 128}});
  const Judged r = quantize_and_judge(script, "join", model, runs, inputs);
  ASSERT_EQ(r.outputs.size(), inputs.size());
  // The constant's four values come out of the LOGISTIC as their float sigmoids, within a step or two.
  auto g = tflite::load_tflite_buffer(ConstData::from_vector(r.model));
  ASSERT_TRUE(g.ok());
  const QuantParams qo = g->tensor(g->outputs[0]).quant;
  for (int k = 0; k < 4; ++k) {
    const double y = qo.scale[0] * (int(int8_t(r.outputs[0][4 + k])) - qo.zero_point[0]);
    EXPECT_NEAR(y, 1.0 / (1.0 + std::exp(-double(c[k]))), 3.0 / 256) << "constant " << c[k];
  }
}

// y = MINIMUM(MAXIMUM(x, c), x2): the int8 kernels compare codes, so every input shares the
// output's parameters (the constant too, whose values reach beyond x's range); a second
// input gets a QUANTIZE in front. The interpreter must accept and agree.
TEST(QuantizeOracle, MaximumAndMinimumShareTheirOutputsParameters) {
  TESSERA_REQUIRE_ORACLE(script);
  const std::vector<float> c = {-1.0f, 0.5f, 3.0f, 6.0f};
  testing::GraphModel gm;
  testing::GraphSubgraph& sg = gm.subgraphs.emplace_back();
  const int32_t x = sg.add(f32("x", {1, 4})), ci = sg.add(f32_constant("c", {1, 4}, c)), mx = sg.add(f32("m", {1, 4}));
  const int32_t x2 = sg.add(f32("x2", {1, 4})), y = sg.add(f32("y", {1, 4}));
  sg.inputs = {x, x2};
  sg.outputs = {y};
  sg.op(::tflite::BuiltinOperator_MAXIMUM, {x, ci}, {mx});
  sg.op(::tflite::BuiltinOperator_MINIMUM, {mx, x2}, {y});
  const std::vector<uint8_t> model = gm.bytes();
  std::vector<CalibrationRun> runs = {{float_bytes({-2, 0, 1, 2}), float_bytes({4, 4, 4, 4})},
                                      {float_bytes({2, -1, 0.5f, -2}), float_bytes({-3, 1, 2, 5})}};
  std::vector<std::vector<std::vector<uint8_t>>> inputs;
  std::mt19937 rng(23);
  for (int j = 0; j < 6; ++j) {
    std::vector<uint8_t> a(4), bb(4);
    for (auto& v : a) v = static_cast<uint8_t>(rng() & 0xff);
    for (auto& v : bb) v = static_cast<uint8_t>(rng() & 0xff);
    inputs.push_back({a, bb});
  }
  const Judged r = quantize_and_judge(script, "clip", model, runs, inputs);
  ASSERT_EQ(r.outputs.size(), inputs.size());
  auto g = tflite::load_tflite_buffer(ConstData::from_vector(r.model));
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  const QuantParams q0 = g->tensor(g->inputs[0]).quant, q1 = g->tensor(g->inputs[1]).quant, qo = g->tensor(g->outputs[0]).quant;
  for (size_t j = 0; j < inputs.size(); ++j) {
    for (int k = 0; k < 4; ++k) {
      const double x = q0.scale[0] * (int(int8_t(inputs[j][0][k])) - q0.zero_point[0]);
      const double x2 = q1.scale[0] * (int(int8_t(inputs[j][1][k])) - q1.zero_point[0]);
      const double y = qo.scale[0] * (int(int8_t(r.outputs[j][k])) - qo.zero_point[0]);
      // Codes compared at one scale: exact up to the constant's and x2's own rounding.
      const double lo = qo.scale[0] * (-128 - qo.zero_point[0]), hi = qo.scale[0] * (127 - qo.zero_point[0]);
      EXPECT_NEAR(y, std::clamp(std::min(std::max(x, double(c[k])), x2), lo, hi), 1.01 * qo.scale[0])
          << "run " << j << " element " << k;
    }
  }
}

TEST(QuantizeOracle, RefusesWithoutCalibrationOrAQuantizedModel) {
  TESSERA_REQUIRE_FIXTURE(float_path, "models/tflite/corpus/micro_hello_world_float.tflite");
  TESSERA_REQUIRE_FIXTURE(int8_path, "models/tflite/mobilenet_v1_0.25_128_quant.tflite");
  auto none = quantize_tflite(testing::read_file(float_path), {});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no calibration input"), std::string::npos) << none.status().to_string();
  auto wrong = quantize_tflite(testing::read_file(float_path), {{{1, 2, 3}}});
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("calibration run 0"), std::string::npos) << wrong.status().to_string();
  auto quant = quantize_tflite(testing::read_file(int8_path), {{std::vector<uint8_t>(128 * 128 * 3)}});
  ASSERT_FALSE(quant.ok());
  EXPECT_NE(quant.status().message().find("already quantized"), std::string::npos) << quant.status().to_string();
  auto junk = quantize_tflite(std::vector<uint8_t>(64, 7), {{std::vector<uint8_t>(4)}});
  ASSERT_FALSE(junk.ok());
  // A NaN among the weights has no int8 code (found by quantize_fuzz as undefined behaviour).
  std::unique_ptr<::tflite::ModelT> m(::tflite::UnPackModel(testing::read_file(float_path).data()));
  ASSERT_TRUE(m);
  const ::tflite::SubGraphT& sg = *m->subgraphs[0];
  bool poisoned = false;
  for (const auto& op : sg.operators) {
    if (poisoned || op->inputs.size() < 2) continue;
    auto& data = m->buffers[sg.tensors[static_cast<size_t>(op->inputs[1])]->buffer]->data;
    if (data.size() < 4) continue;
    const float nan = std::nanf("");
    std::memcpy(data.data(), &nan, 4);
    poisoned = true;
  }
  ASSERT_TRUE(poisoned);
  flatbuffers::FlatBufferBuilder fbb;
  ::tflite::FinishModelBuffer(fbb, ::tflite::Model::Pack(fbb, m.get()));
  const std::vector<uint8_t> bad(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
  std::vector<uint8_t> one(4);
  const float x = 1.0f;
  std::memcpy(one.data(), &x, 4);
  auto nan = quantize_tflite(bad, {{one}});
  ASSERT_FALSE(nan.ok());
  EXPECT_NE(nan.status().message().find("non-finite value"), std::string::npos) << nan.status().to_string();
}

}  // namespace
}  // namespace tessera::oracle
