// The K-quant fixtures (../shared/models/gguf/kquant/): one random-weight llama model (GQA,
// dim 256, 4 layers) stored in F32 and quantized by llama.cpp to Q8_0 ... Q2_K.
//  - every quantized tensor, dequantized, against the same tensor of the F32 file (the
//    quantization error, which must be that of the type, not of a wrong decoder);
//  - the first-step logits of the model, run on the cpu with the weights as stored, against
//    an independent float64 forward pass with the dequantized weights (refs/logits/*.numpy_exact.f32).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "fixtures.h"
#include "import/gguf/gguf_file.h"
#include "import/gguf/llama_model.h"
#include "runtime/llm/generator.h"
#include "tessera/backend/convert.h"
#include "tessera/backend/device.h"

namespace tessera::gguf {
namespace {

const char* const kModels[] = {"Q8_0", "Q4_0", "Q6_K", "Q4_K_M", "Q4_K-pure", "Q3_K_M", "Q3_K-pure", "Q2_K", "Q2_K-pure"};

std::string kquant_rel(const std::string& type) { return "models/gguf/kquant/kq-llama-256d-4L-" + type + ".gguf"; }

Result<std::vector<float>> dequantized(const TensorInfo& t) {
  std::vector<float> out(num_elements(t.shape));
  TS_RETURN_IF_ERROR(
      convert::convert(Format::row_major(t.dtype, t.shape), t.data.data, Format::row_major(DType::f32, t.shape), out.data()));
  return out;
}

// Relative RMS quantization error of each type (RMS of the difference over RMS of the F32
// weights), measured on these files, with headroom. 4-bit with per-32 scales is about 0.1,
// each bit fewer roughly doubles it.
const std::map<DType, double> kRelRmsBound = {
    {DType::q8_0, 0.006}, {DType::q6_k, 0.02}, {DType::q5_k, 0.04}, {DType::q4_0, 0.12},
    {DType::q4_k, 0.10},  {DType::q3_k, 0.22}, {DType::q2_k, 0.45},
};

TEST(KQuantFiles, DequantizedTensorsAreCloseToTheF32File) {
  TESSERA_REQUIRE_FIXTURE(f32_path, kquant_rel("F32"));
  auto f32 = File::open(f32_path);
  ASSERT_TRUE(f32.ok()) << f32.status().to_string();
  std::map<DType, std::pair<double, double>> sums;  // dtype -> (sum diff^2, sum ref^2)
  for (const char* type : kModels) {
    TESSERA_REQUIRE_FIXTURE(path, kquant_rel(type));
    auto q = File::open(path);
    ASSERT_TRUE(q.ok()) << q.status().to_string();
    for (const TensorInfo& t : q->tensors()) {
      if (!dtype_is_block(t.dtype)) continue;
      const TensorInfo* ref = f32->find_tensor(t.name);
      ASSERT_NE(ref, nullptr) << t.name;
      ASSERT_EQ(ref->shape, t.shape) << t.name;
      auto deq = dequantized(t);
      ASSERT_TRUE(deq.ok()) << deq.status().to_string();
      const float* r = reinterpret_cast<const float*>(ref->data.data);
      double d2 = 0, r2 = 0;
      for (size_t i = 0; i < deq->size(); ++i) {
        d2 += (static_cast<double>((*deq)[i]) - r[i]) * ((*deq)[i] - r[i]);
        r2 += static_cast<double>(r[i]) * r[i];
      }
      const double rel = std::sqrt(d2 / r2);
      ASSERT_LT(rel, kRelRmsBound.at(t.dtype)) << type << " " << t.name << " " << dtype_name(t.dtype);
      sums[t.dtype].first += d2;
      sums[t.dtype].second += r2;
    }
  }
  std::ostringstream report;
  for (auto& [t, s] : sums) report << dtype_name(t) << " " << std::sqrt(s.first / s.second) << "  ";
  std::cout << "relative RMS quantization error per type: " << report.str() << "\n";
  // Every type these files hold was checked (q5_K lives in the Q3_K_M file).
  for (DType t : {DType::q8_0, DType::q4_0, DType::q2_k, DType::q3_k, DType::q4_k, DType::q5_k, DType::q6_k})
    EXPECT_TRUE(sums.count(t)) << dtype_name(t);
}

// The prompt ids of "Once upon a time" for this vocabulary, as llama.cpp tokenized it
// (refs/numpy_exact.tsv, column 3).
Result<std::vector<int32_t>> prompt0_ids(const std::string& tsv, const std::string& model) {
  std::ifstream f(tsv);
  std::string line;
  while (std::getline(f, line)) {
    std::vector<std::string> cols;
    std::stringstream ss(line);
    for (std::string c; std::getline(ss, c, '\t');) cols.push_back(c);
    if (cols.size() < 3 || cols[0] != model || cols[1] != "Once upon a time") continue;
    std::vector<int32_t> ids;
    std::stringstream is(cols[2]);
    for (int32_t v; is >> v;) ids.push_back(v);
    return ids;
  }
  return error(StatusCode::not_found, tsv, " has no row for ", model);
}

// The comparisons with the float64 forward pass run the exact configuration: f32
// activations into every matrix product (no 8-bit rounding of the inputs, which the
// default path does as llama.cpp does) and an f32 KV cache.
llm::GeneratorOptions exact_options(LlamaModel& model) {
  model.set_input_rounding(false);
  llm::GeneratorOptions go;
  go.kv_type = DType::f32;
  return go;
}

TEST(KQuantFiles, FirstStepLogitsMatchAFloat64ForwardPass) {
  TESSERA_REQUIRE_FIXTURE(tsv, "models/gguf/refs/numpy_exact.tsv");
  for (const std::string type : {"F32", "Q8_0", "Q6_K", "Q4_K_M", "Q3_K_M", "Q2_K"}) {
    const std::string name = "kq-llama-256d-4L-" + type;
    TESSERA_REQUIRE_FIXTURE(path, kquant_rel(type));
    TESSERA_REQUIRE_FIXTURE(ref_path, "models/gguf/refs/logits/" + name + ".prompt0.numpy_exact.f32");
    auto ids = prompt0_ids(tsv, name + ".gguf");
    ASSERT_TRUE(ids.ok()) << ids.status().to_string();
    auto model = LlamaModel::open(path);
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    auto gen = llm::Generator::create(**model, exact_options(**model));
    ASSERT_TRUE(gen.ok()) << gen.status().to_string();
    auto logits = (*gen)->feed(*ids);
    ASSERT_TRUE(logits.ok()) << logits.status().to_string();
    auto bytes = testing::read_file(ref_path);
    ASSERT_EQ(bytes.size(), logits->size() * 4) << ref_path;
    std::vector<float> ref(logits->size());
    std::memcpy(ref.data(), bytes.data(), bytes.size());
    double mean = 0, var = 0, d2 = 0, dmax = 0;
    for (float v : ref) mean += v;
    mean /= ref.size();
    for (size_t i = 0; i < ref.size(); ++i) {
      var += (ref[i] - mean) * (ref[i] - mean);
      const double d = std::fabs(static_cast<double>((*logits)[i]) - ref[i]);
      d2 += d * d;
      dmax = std::max(dmax, d);
    }
    const double spread = std::sqrt(var / ref.size()), rms = std::sqrt(d2 / ref.size());
    std::cout << name << ": logits std " << spread << ", RMS diff " << rms / spread << ", max diff " << dmax / spread
              << " (relative to the std)\n";
    // f32 arithmetic on exactly the dequantized weights: only rounding separates the two.
    EXPECT_LT(rms / spread, 2e-5) << name;
    EXPECT_LT(dmax / spread, 1e-4) << name;
  }
}

// One line of refs/numpy_exact_detail.jsonl: a model, its prompt ids, and per step along
// llama.cpp's greedy ids ("teacher_forced") the id llama.cpp chose and the float64 pass's
// top-1 id, its logit and its margin there.
struct ReferenceRun {
  std::string model, prompt_text;
  std::vector<int32_t> prompt, gen;  // gen: llama.cpp's greedy ids
  std::vector<int32_t> top;
  std::vector<double> top_logit, margin;
  double first_std = 0;
};

// Minimal readers for the fields of that fixed format (numbers after "key": ).
size_t after_key(const std::string& s, const std::string& key, size_t from) {
  size_t k = s.find("\"" + key + "\": ", from);
  return k == std::string::npos ? k : k + key.size() + 4;
}
std::vector<int32_t> int_array(const std::string& s, const std::string& key) {
  std::vector<int32_t> v;
  size_t k = after_key(s, key, 0);
  if (k == std::string::npos || s[k] != '[') return v;
  for (size_t e = s.find(']', k), i = k + 1; i < e;) {
    size_t used = 0;
    v.push_back(std::stoi(s.substr(i), &used));
    i += used;
    while (i < e && (s[i] == ',' || s[i] == ' ')) ++i;
  }
  return v;
}

std::vector<ReferenceRun> reference_runs(const std::string& path) {
  std::vector<ReferenceRun> runs;
  std::ifstream f(path);
  for (std::string line; std::getline(f, line);) {
    ReferenceRun r;
    size_t m = after_key(line, "model", 0);
    r.model = line.substr(m + 1, line.find('"', m + 1) - m - 1);
    size_t pt = after_key(line, "prompt", 0);
    r.prompt_text = line.substr(pt + 1, line.find('"', pt + 1) - pt - 1);
    r.prompt = int_array(line, "prompt_ids");
    r.first_std = std::stod(line.substr(after_key(line, "first_logits_std", 0)));
    size_t at = after_key(line, "teacher_forced", 0);
    while (at != std::string::npos && (at = after_key(line, "argmax", at)) != std::string::npos) {
      r.top.push_back(std::stoi(line.substr(at)));
      r.top_logit.push_back(std::stod(line.substr(after_key(line, "logit", at))));
      r.margin.push_back(std::stod(line.substr(after_key(line, "margin", at))));
      r.gen.push_back(std::stoi(line.substr(after_key(line, "llamacpp_id", at))));
    }
    runs.push_back(std::move(r));
  }
  return runs;
}

// Scored along llama.cpp's tokens (prompt, then its greedy ids one at a time), the top-1
// equals the float64 pass's wherever that pass's margin is at least 0.05, and the top
// logit agrees with it. Covers every quantized fixture, the Llama-3-style file (BPE
// vocabulary, rope theta 500000, one KV head, tied embeddings, Q3_K embedding) and the
// Qwen2-style file (q/k/v biases, NEOX rope).
TEST(KQuantFiles, TeacherForcedTopOneMatchesAFloat64ForwardPass) {
  TESSERA_REQUIRE_FIXTURE(detail, "models/gguf/refs/numpy_exact_detail.jsonl");
  auto runs = reference_runs(detail);
  ASSERT_EQ(runs.size(), 24u);
  int checked_steps = 0;
  for (const ReferenceRun& r : runs) {
    SCOPED_TRACE(r.model);
    ASSERT_EQ(r.gen.size(), 24u);
    const std::string rel = r.model.rfind("kq-", 0) == 0 ? "models/gguf/kquant/" + r.model : "models/gguf/" + r.model;
    TESSERA_REQUIRE_FIXTURE(path, rel);
    auto model = LlamaModel::open(path);
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    auto gen = llm::Generator::create(**model, exact_options(**model));
    ASSERT_TRUE(gen.ok()) << gen.status().to_string();
    auto logits = (*gen)->feed(r.prompt);
    double worst = 0;
    for (size_t j = 0; j < r.gen.size(); ++j) {
      ASSERT_TRUE(logits.ok()) << logits.status().to_string();
      const std::vector<float>& l = *logits;
      const int32_t ours = static_cast<int32_t>(std::max_element(l.begin(), l.end()) - l.begin());
      if (r.margin[j] >= 0.05) {
        EXPECT_EQ(ours, r.top[j]) << "step " << j << " (reference margin " << r.margin[j] << ")";
        ++checked_steps;
      }
      worst = std::max(worst, std::fabs(l[r.top[j]] - r.top_logit[j]) / r.first_std);
      if (j + 1 < r.gen.size()) logits = (*gen)->step(r.gen[j]);
    }
    std::cout << r.model << " '" << r.prompt_text << "': largest top-1 logit difference / std " << worst << "\n";
    // f32 arithmetic on the exact dequantized weights against float64.
    EXPECT_LT(worst, 2e-5) << "largest difference of the reference top-1 logit, relative to the logits' std";
  }
  std::cout << "top-1 compared at " << checked_steps << " of " << 24 * runs.size() << " steps (margin >= 0.05)\n";
  EXPECT_GT(checked_steps, 400);
}

// The tile device converts K-quant weights to its block floats when it uploads them
// (weights=auto: bfp8_b; weights=bfp4_b on request) and
// runs the whole model; its first-step logits against the float64 pass measure the error
// of those formats (bf16 activations included).
TEST(KQuantFiles, TileDeviceRunsKQuantWeightsAsBlockFloats) {
  bool has_tile = false;
  for (const auto& d : device_registry()) has_tile |= d.name == "tile";
  if (!has_tile) GTEST_SKIP() << "no tile device in this build";
  TESSERA_REQUIRE_FIXTURE(tsv, "models/gguf/refs/numpy_exact.tsv");
  struct Case {
    const char* type;
    const char* weights;
    double bound;  // relative RMS of the logits, measured with headroom
  };
  for (const Case& c : {Case{"Q6_K", "auto", 0.04}, Case{"Q4_K_M", "auto", 0.04}, Case{"Q3_K_M", "auto", 0.04},
                        Case{"Q2_K", "auto", 0.04}, Case{"Q4_K_M", "bfp4_b", 0.35}, Case{"Q2_K", "bfp4_b", 0.35}}) {
    const std::string name = std::string("kq-llama-256d-4L-") + c.type;
    TESSERA_REQUIRE_FIXTURE(path, kquant_rel(c.type));
    TESSERA_REQUIRE_FIXTURE(ref_path, "models/gguf/refs/logits/" + name + ".prompt0.numpy_exact.f32");
    auto ids = prompt0_ids(tsv, name + ".gguf");
    ASSERT_TRUE(ids.ok());
    auto model = LlamaModel::open(path);
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    llm::GeneratorOptions go;
    go.session.device = "tile";
    go.session.device_options["weights"] = c.weights;
    auto gen = llm::Generator::create(**model, go);
    ASSERT_TRUE(gen.ok()) << gen.status().to_string();
    auto logits = (*gen)->feed(*ids);
    ASSERT_TRUE(logits.ok()) << logits.status().to_string();
    auto bytes = testing::read_file(ref_path);
    std::vector<float> ref(logits->size());
    ASSERT_EQ(bytes.size(), ref.size() * 4);
    std::memcpy(ref.data(), bytes.data(), bytes.size());
    double mean = 0, var = 0, d2 = 0;
    for (float v : ref) mean += v / ref.size();
    for (size_t i = 0; i < ref.size(); ++i) {
      var += (ref[i] - mean) * (ref[i] - mean) / ref.size();
      d2 += ((*logits)[i] - ref[i]) * ((*logits)[i] - ref[i]) / ref.size();
    }
    const double rel = std::sqrt(d2 / var);
    std::cout << name << " on tile, weights=" << c.weights << ": logits RMS diff / std " << rel << "\n";
    EXPECT_LT(rel, c.bound) << name << " weights=" << c.weights;
  }
}

}  // namespace
}  // namespace tessera::gguf
