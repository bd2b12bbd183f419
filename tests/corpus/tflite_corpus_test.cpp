// The TFLite corpus (../shared/models/tflite/corpus/*.tflite, real models the TensorFlow
// Lite interpreter runs) through the interpreter (tests/oracle/oracle.h) and Tessera's cpu
// device on seeded random inputs: integer outputs byte-identical, float outputs within
// 1e-5 relative (see float_close). kExpectedFailures lists the models Tessera does not run
// yet, each with the operator its error must name and the reason; the list is enforced both
// ways: a listed model that now matches fails the test (remove it from the list), and an
// unlisted model that is refused or differs fails it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <vector>

#include "oracle/oracle.h"

namespace tessera::oracle {
namespace {

struct ExpectedFailure {
  const char* model;   // file name without .tflite
  const char* op;      // the TFLite operator the error (or the first difference) must name
  const char* reason;  // a phrase the error must contain; "" for a model that runs and differs
  bool refused = true;  // false: Tessera runs it, and `op` is the first operator that differs
};

// Every corpus model matches the interpreter now; a model added to the corpus that does not
// goes here. (A vector: an empty array is not valid C++.)
const std::vector<ExpectedFailure> kExpectedFailures = {};

const ExpectedFailure* expected_failure(const std::string& model) {
  for (const ExpectedFailure& e : kExpectedFailures)
    if (model == e.model) return &e;
  return nullptr;
}

// A model's inputs and outputs as the file declares them (read without Tessera, so that
// refused models get inputs too).
struct TensorInfo {
  ::tflite::TensorType type;
  int64_t elements = 1;
};

int64_t type_size(::tflite::TensorType t) {
  switch (t) {
    case ::tflite::TensorType_FLOAT32:
    case ::tflite::TensorType_INT32: return 4;
    case ::tflite::TensorType_FLOAT16:
    case ::tflite::TensorType_INT16: return 2;
    case ::tflite::TensorType_INT64: return 8;
    default: return 1;
  }
}

Result<std::vector<TensorInfo>> io_tensors(const std::vector<uint8_t>& model, bool inputs) {
  flatbuffers::Verifier v(model.data(), model.size());
  if (!::tflite::VerifyModelBuffer(v)) return tessera::error(StatusCode::invalid_argument, "not a valid .tflite file");
  const ::tflite::SubGraph* sg = ::tflite::GetModel(model.data())->subgraphs()->Get(0);
  std::vector<TensorInfo> out;
  for (int32_t i : inputs ? *sg->inputs() : *sg->outputs()) {
    const ::tflite::Tensor* t = sg->tensors()->Get(i);
    TensorInfo info{t->type()};
    if (t->shape())
      for (int32_t d : *t->shape()) info.elements *= d;
    if (info.elements <= 0 || info.elements > (int64_t{1} << 28))
      return tessera::error(StatusCode::invalid_argument, "tensor ", i, " has ", info.elements, " elements");
    out.push_back(info);
  }
  return out;
}

// Seeded random input bytes: floats uniform in [-1, 1), integers uniform over their codes.
std::vector<uint8_t> random_input(const TensorInfo& t, uint32_t seed) {
  if (t.type == ::tflite::TensorType_FLOAT32) {
    const std::vector<float> v = testing::random_floats(static_cast<size_t>(t.elements), seed);
    std::vector<uint8_t> b(v.size() * 4);
    std::memcpy(b.data(), v.data(), b.size());
    return b;
  }
  return random_bytes(static_cast<size_t>(t.elements * type_size(t.type)), seed);
}

// Float outputs agree when |a - b| <= 1e-5 * max(|a|, |b|, m), m the largest magnitude in
// the interpreter's output: relative, except for values so small against the rest of the
// tensor that the summation order of the products before them decides their last digits.
// Integer (and other) outputs must be byte-identical.
std::string compare_output(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want, ::tflite::TensorType t) {
  if (got.size() != want.size())
    return std::to_string(got.size()) + " bytes, the interpreter's " + std::to_string(want.size());
  if (t != ::tflite::TensorType_FLOAT32) {
    int64_t differ = 0;
    for (size_t i = 0; i < got.size(); ++i) differ += got[i] != want[i];
    return differ ? std::to_string(differ) + " of " + std::to_string(got.size()) + " bytes differ" : "";
  }
  const size_t n = got.size() / 4;
  std::vector<float> a(n), b(n);
  std::memcpy(a.data(), got.data(), n * 4);
  std::memcpy(b.data(), want.data(), n * 4);
  double m = 0;
  for (float x : b) m = std::max(m, std::fabs(static_cast<double>(x)));
  int64_t differ = 0;
  double worst = 0;
  for (size_t i = 0; i < n; ++i) {
    const double x = a[i], y = b[i];
    if (std::isnan(x) && std::isnan(y)) continue;
    const double bound = 1e-5 * std::max({std::fabs(x), std::fabs(y), m});
    const double d = std::fabs(x - y);
    if (!(d <= bound)) {
      ++differ;
      worst = std::max(worst, std::isnan(d) ? INFINITY : d);
    }
  }
  if (!differ) return "";
  char buf[160];
  std::snprintf(buf, sizeof buf, "%lld of %zu floats beyond 1e-5 relative (largest difference %g, largest value %g)",
                static_cast<long long>(differ), n, worst, m);
  return buf;
}

// Where a model that runs differs: the first operator whose outputs differ from the
// interpreter's, by bisection over models cut after each operator (a diagnosis for the
// failure message; it assumes that a difference, once there, reaches the outputs).
std::string first_differing_operator(const std::string& script, const std::vector<uint8_t>& model,
                                     const std::vector<std::vector<uint8_t>>& inputs) {
  const ::tflite::SubGraph* sg = ::tflite::GetModel(model.data())->subgraphs()->Get(0);
  const int num_ops = static_cast<int>(sg->operators()->size());
  TempDir dir("corpus_bisect");
  auto differs = [&](int op) -> Result<bool> {
    TS_ASSIGN_OR_RETURN(std::vector<uint8_t> cut, cut_after(model, op));
    const fs::path file = dir.path / ("cut" + std::to_string(op) + ".tflite");
    write_bytes(file, cut);
    std::vector<Job> jobs{Job{"cut" + std::to_string(op), file.string(), inputs, {}}};
    const std::string err = run_batch(script, dir.path, jobs);
    if (!err.empty()) return tessera::error(StatusCode::internal, err);
    TS_ASSIGN_OR_RETURN(auto outs, run_tessera(cut, inputs, "cpu"));
    TS_ASSIGN_OR_RETURN(std::vector<TensorInfo> info, io_tensors(cut, false));
    if (outs.size() != jobs[0].outputs.size()) return true;
    for (size_t k = 0; k < outs.size(); ++k)
      if (!compare_output(outs[k], jobs[0].outputs[k], info[k].type).empty()) return true;
    return false;
  };
  int lo = 0, hi = num_ops - 1;  // the first differing operator lies in [lo, hi]
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    auto d = differs(mid);
    if (!d.ok()) return "(bisection stopped at op " + std::to_string(mid) + ": " + d.status().to_string() + ")";
    if (*d) hi = mid;
    else lo = mid + 1;
  }
  return "op " + std::to_string(lo) + " (" + operator_name(model, lo) + ")";
}

std::vector<fs::path> corpus_models(const fs::path& dir) {
  std::vector<fs::path> models;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".tflite") models.push_back(e.path());
  std::sort(models.begin(), models.end());
  return models;
}

TEST(TfliteCorpus, EveryModelMatchesTheInterpreterOrIsAnExpectedFailure) {
  TESSERA_REQUIRE_ORACLE(script);
  TESSERA_REQUIRE_FIXTURE(dir, "models/tflite/corpus");
  const std::vector<fs::path> models = corpus_models(dir);
  ASSERT_FALSE(models.empty()) << "no .tflite files in " << dir;
  for (const ExpectedFailure& e : kExpectedFailures)
    EXPECT_TRUE(fs::exists(fs::path(dir) / (std::string(e.model) + ".tflite")))
        << "kExpectedFailures lists " << e.model << ", which is not in the corpus";

  struct Case {
    std::string name;
    std::vector<uint8_t> bytes;
    std::vector<TensorInfo> outputs;
  };
  std::vector<Case> cases;
  std::vector<Job> jobs;
  for (const fs::path& p : models) {
    Case c{p.stem().string(), testing::read_file(p.string()), {}};
    auto ins = io_tensors(c.bytes, true);
    auto outs = io_tensors(c.bytes, false);
    ASSERT_TRUE(ins.ok() && outs.ok()) << c.name << ": " << (ins.ok() ? outs.status() : ins.status()).to_string();
    c.outputs = *outs;
    Job j{c.name, p.string(), {}, {}};
    for (size_t k = 0; k < ins->size(); ++k) j.inputs.push_back(random_input((*ins)[k], 4000 + 31 * static_cast<uint32_t>(k)));
    jobs.push_back(std::move(j));
    cases.push_back(std::move(c));
  }
  TempDir tmp("corpus");
  ASSERT_EQ(run_batch(script, tmp.path, jobs), "");

  int matched = 0, expected = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    SCOPED_TRACE(c.name);
    const ExpectedFailure* xf = expected_failure(c.name);
    std::string failure;  // why Tessera does not match, "" when it does
    bool refused = false;
    auto outs = run_tessera(c.bytes, jobs[i].inputs, "cpu");
    if (!outs.ok()) {
      failure = outs.status().to_string();
      refused = true;
    } else if (outs->size() != jobs[i].outputs.size() || outs->size() != c.outputs.size()) {
      failure = std::to_string(outs->size()) + " outputs, the interpreter's " + std::to_string(jobs[i].outputs.size());
    } else {
      for (size_t k = 0; k < outs->size() && failure.empty(); ++k) {
        const std::string d = compare_output((*outs)[k], jobs[i].outputs[k], c.outputs[k].type);
        if (!d.empty()) failure = "output " + std::to_string(k) + ": " + d;
      }
      if (!failure.empty()) failure += "; first differing operator: " + first_differing_operator(script, c.bytes, jobs[i].inputs);
    }
    std::printf("[corpus] %-32s %s\n", c.name.c_str(),
                failure.empty() ? "matches the interpreter" : ((refused ? "refused: " : "differs: ") + failure).c_str());
    if (!xf) {
      EXPECT_EQ(failure, "") << c.name << " does not match the interpreter (and is not in kExpectedFailures)";
      matched += failure.empty();
      continue;
    }
    ++expected;
    EXPECT_NE(failure, "") << c.name << " now matches the interpreter: remove it from kExpectedFailures";
    EXPECT_EQ(refused, xf->refused) << c.name << (xf->refused ? " is expected to be refused" : " is expected to run and differ")
                                    << " (" << xf->op << "): " << failure;
    const std::string names = refused ? xf->op : "(" + std::string(xf->op) + ")";
    EXPECT_NE(failure.find(names), std::string::npos) << "the failure does not name " << xf->op << ": " << failure;
    EXPECT_NE(failure.find(xf->reason), std::string::npos) << "the failure does not say '" << xf->reason << "': " << failure;
  }
  std::printf("[corpus] %d of %zu models match the interpreter; %d expected failures\n", matched, cases.size(), expected);
}

// How far a device's output is from the interpreter's: the largest code difference for
// integer outputs, the largest difference relative to the output's largest magnitude for
// float ones.
double device_distance(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want, ::tflite::TensorType t) {
  if (got.size() != want.size()) return INFINITY;
  double worst = 0;
  if (t == ::tflite::TensorType_FLOAT32) {
    const size_t n = got.size() / 4;
    std::vector<float> a(n), b(n);
    std::memcpy(a.data(), got.data(), n * 4);
    std::memcpy(b.data(), want.data(), n * 4);
    double m = 0;
    for (float v : b) m = std::max(m, std::fabs(static_cast<double>(v)));
    for (size_t i = 0; i < n; ++i) worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - b[i]) / std::max(m, 1e-30));
    return worst;
  }
  const int64_t w = type_size(t);
  for (size_t i = 0; i + w <= got.size(); i += w) {
    int64_t x = 0, y = 0;
    if (w == 1 && t == ::tflite::TensorType_UINT8) x = got[i], y = want[i];
    else if (w == 1) x = static_cast<int8_t>(got[i]), y = static_cast<int8_t>(want[i]);
    else if (w == 2) x = static_cast<int16_t>(got[i] | got[i + 1] << 8), y = static_cast<int16_t>(want[i] | want[i + 1] << 8);
    else std::memcpy(&x, &got[i], static_cast<size_t>(std::min<int64_t>(w, 8))), std::memcpy(&y, &want[i], static_cast<size_t>(std::min<int64_t>(w, 8)));
    worst = std::max(worst, std::fabs(static_cast<double>(x - y)));
  }
  return worst;
}

// The NPU devices on the corpus models the cpu runs (the YOLO exports are left to the cpu
// test: minutes on the device models): what a device cannot run falls back to the cpu, and
// the rest stays within the device's documented tolerance of the interpreter: 2 codes for
// integer outputs (docs/rknpu.md, docs/tile-device.md), 5e-2 of the output's range for float
// outputs on tile (bfloat16 operands; hello_world_float measured 2.5e-2) and 1e-5 on rknpu
// (float runs on the cpu there).
TEST(TfliteCorpus, TheNpuDevicesStayWithinTheirTolerances) {
  TESSERA_REQUIRE_ORACLE(script);
  TESSERA_REQUIRE_FIXTURE(dir, "models/tflite/corpus");
  std::vector<Job> jobs;
  std::vector<std::vector<uint8_t>> models;
  std::vector<std::vector<TensorInfo>> outputs;
  for (const fs::path& p : corpus_models(dir)) {
    const std::string name = p.stem().string();
    if (name.rfind("yolo", 0) == 0 || expected_failure(name)) continue;
    models.push_back(testing::read_file(p.string()));
    auto ins = io_tensors(models.back(), true);
    auto outs = io_tensors(models.back(), false);
    ASSERT_TRUE(ins.ok() && outs.ok());
    outputs.push_back(*outs);
    Job j{name, p.string(), {}, {}};
    for (size_t k = 0; k < ins->size(); ++k) j.inputs.push_back(random_input((*ins)[k], 4000 + 31 * static_cast<uint32_t>(k)));
    jobs.push_back(std::move(j));
  }
  ASSERT_FALSE(jobs.empty());
  TempDir tmp("corpus_devices");
  ASSERT_EQ(run_batch(script, tmp.path, jobs), "");
  for (const std::string device : {"tile", "rknpu"})
    for (size_t i = 0; i < jobs.size(); ++i) {
      SCOPED_TRACE(device + " " + jobs[i].name);
      auto outs = run_tessera(models[i], jobs[i].inputs, device);
      if (!outs.ok()) {
        ADD_FAILURE() << outs.status().to_string();
        continue;
      }
      ASSERT_EQ(outs->size(), jobs[i].outputs.size());
      for (size_t k = 0; k < outs->size(); ++k) {
        const bool is_float = outputs[i][k].type == ::tflite::TensorType_FLOAT32;
        const double d = device_distance((*outs)[k], jobs[i].outputs[k], outputs[i][k].type);
        const double bound = is_float ? (device == "tile" ? 5e-2 : 1e-5) : 2;
        EXPECT_LE(d, bound) << "output " << k;
        std::printf("[corpus] %-6s %-32s output %zu: %s %g\n", device.c_str(), jobs[i].name.c_str(), k,
                    is_float ? "largest relative difference" : "largest code difference", d);
      }
    }
}

}  // namespace
}  // namespace tessera::oracle
