// TensorFlow Lite Micro's SEANet integration cases (../shared/models/tflite/corpus/seanet/):
// 127 single-operator int16x8 models (int16 activations, int8 weights, int64 biases) with
// their inputs and golden outputs as comma-separated values. Every case runs on the cpu
// device and must give the golden output exactly. The goldens are independent of the oracle
// (they come with the models), so this test needs only the fixtures.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "oracle/oracle.h"

namespace tessera::oracle {
namespace {

// "<case>_input<k>_<dtype>.csv" / "<case>_golden_<dtype>.csv" -> the values as bytes of dtype.
Result<std::vector<uint8_t>> read_csv(const fs::path& file) {
  const std::string stem = file.stem().string();
  const std::string dtype = stem.substr(stem.rfind('_') + 1);
  const int width = dtype == "int16" ? 2 : dtype == "int32" ? 4 : dtype == "int8" ? 1 : 0;
  if (!width) return tessera::error(StatusCode::invalid_argument, file.string(), ": unknown dtype '", dtype, "'");
  std::ifstream in(file);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  std::replace(text.begin(), text.end(), ',', ' ');
  std::istringstream ss(text);
  std::vector<uint8_t> bytes;
  long long v;
  while (ss >> v) {
    const int32_t x = static_cast<int32_t>(v);
    const size_t at = bytes.size();
    bytes.resize(at + width);
    if (width == 1) bytes[at] = static_cast<uint8_t>(x);
    if (width == 2) {
      const int16_t h = static_cast<int16_t>(x);
      std::memcpy(&bytes[at], &h, 2);
    }
    if (width == 4) std::memcpy(&bytes[at], &x, 4);
  }
  if (!ss.eof()) return tessera::error(StatusCode::invalid_argument, file.string(), ": not a list of integers");
  return bytes;
}

struct SeanetCase {
  std::string name;
  fs::path model;
  std::vector<fs::path> inputs;  // by index k
  fs::path golden;
};

std::vector<SeanetCase> seanet_cases(const fs::path& dir) {
  std::map<std::string, SeanetCase> cases;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string f = e.path().filename().string();
    if (e.path().extension() == ".tflite") {
      SeanetCase& c = cases[e.path().stem().string()];
      c.name = e.path().stem().string();
      c.model = e.path();
    }
  }
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string f = e.path().filename().string();
    if (e.path().extension() != ".csv") continue;
    for (auto& [name, c] : cases) {
      const std::string in = name + "_input", gold = name + "_golden_";
      if (f.rfind(in, 0) == 0 && f.size() > in.size() && std::isdigit(static_cast<unsigned char>(f[in.size()]))) {
        const size_t k = std::stoul(f.substr(in.size()));
        if (c.inputs.size() <= k) c.inputs.resize(k + 1);
        c.inputs[k] = e.path();
      } else if (f.rfind(gold, 0) == 0) {
        c.golden = e.path();
      }
    }
  }
  std::vector<SeanetCase> out;
  for (auto& [name, c] : cases) out.push_back(c);
  return out;
}

// Runs every case on `device` and checks its golden output; returns the per-family summary.
void run_seanet(const std::string& device) {
  TESSERA_REQUIRE_FIXTURE(dir, "models/tflite/corpus/seanet");
  const std::vector<SeanetCase> cases = seanet_cases(dir);
  ASSERT_EQ(cases.size(), 127u) << "the SEANet folder holds 127 cases";
  std::map<std::string, std::pair<int, int>> by_op;  // op family -> (passed, total)
  for (const SeanetCase& c : cases) {
    SCOPED_TRACE(c.name);
    std::string family = c.name;
    while (!family.empty() && std::isdigit(static_cast<unsigned char>(family.back()))) family.pop_back();
    ASSERT_FALSE(c.golden.empty()) << c.name << " has no golden output";
    ASSERT_FALSE(c.inputs.empty()) << c.name << " has no inputs";
    std::vector<std::vector<uint8_t>> inputs;
    for (const fs::path& p : c.inputs) {
      ASSERT_FALSE(p.empty()) << c.name << ": an input index is missing";
      auto b = read_csv(p);
      ASSERT_TRUE(b.ok()) << b.status().to_string();
      inputs.push_back(std::move(*b));
    }
    auto golden = read_csv(c.golden);
    ASSERT_TRUE(golden.ok()) << golden.status().to_string();
    auto outs = run_tessera(testing::read_file(c.model.string()), inputs, device);
    ++by_op[family].second;
    if (!outs.ok()) {
      ADD_FAILURE() << c.name << ": " << outs.status().to_string();
      continue;
    }
    ASSERT_EQ(outs->size(), 1u);
    const std::vector<uint8_t>& got = (*outs)[0];
    ASSERT_EQ(got.size(), golden->size()) << c.name << ": output bytes";
    int64_t differ = 0;
    for (size_t i = 0; i < got.size(); ++i) differ += got[i] != (*golden)[i];
    EXPECT_EQ(differ, 0) << c.name << ": " << differ << " of " << got.size() << " bytes differ from the golden output";
    by_op[family].first += differ == 0;
  }
  for (const auto& [family, n] : by_op)
    std::printf("[seanet] %-6s %-16s %d of %d cases match\n", device.c_str(), family.c_str(), n.first, n.second);
}

TEST(SeanetInt16, EveryCaseGivesItsGoldenOutput) { run_seanet("cpu"); }

// The NPU devices run what they can of these int16x8 operators and hand the rest to the cpu
// (planner fallback); either way the golden outputs must come out unchanged.
TEST(SeanetInt16, TheNpuDevicesGiveTheGoldenOutputsToo) {
  for (const std::string device : {"tile", "rknpu"}) {
    SCOPED_TRACE(device);
    run_seanet(device);
  }
}

}  // namespace
}  // namespace tessera::oracle
