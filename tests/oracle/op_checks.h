// A grid of one-operator models judged by the TFLite interpreter (oracle.h): each check is
// a model and its inputs; run_checks runs them all in one oracle batch and compares
// Tessera's cpu output with the interpreter's: integer (and bool) outputs byte for byte,
// float outputs within 1e-5 relative (of the larger value and the output's largest
// magnitude). An interpreter output that is constant (and has more than one value) fails
// the check: it could not catch a wrong kernel.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "import/tflite/single_op_model.h"
#include "oracle/oracle.h"

namespace tessera::oracle {

struct OpCheck {
  std::string name;
  testing::SingleOpModel model;
  std::vector<std::vector<uint8_t>> inputs;
  bool is_float = false;
  // When set, the interpreter runs this model instead and `post` turns its output into the
  // expected one (a form the oracle's TFLite build predates, derived from one it has).
  std::optional<testing::SingleOpModel> oracle_model;
  std::function<void(std::vector<uint8_t>&)> post;
};

template <typename V>
std::vector<uint8_t> bytes_of(const std::vector<V>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(V));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

inline int64_t element_count(const std::vector<int32_t>& s) {
  int64_t n = 1;
  for (int32_t d : s) n *= d;
  return n;
}

// Returns the number of checks that matched.
inline int run_op_checks(const std::vector<OpCheck>& checks, const char* what) {
  const std::string script = oracle_script();
  TempDir dir(what);
  std::vector<Job> jobs;
  std::vector<std::vector<uint8_t>> models;
  for (const OpCheck& c : checks) {
    models.push_back(c.model.bytes());
    const fs::path file = dir.path / (c.name + ".tflite");
    write_bytes(file, c.oracle_model ? c.oracle_model->bytes() : models.back());
    jobs.push_back(Job{c.name, file.string(), c.inputs, {}});
  }
  const std::string err = run_batch(script, dir.path, jobs);
  EXPECT_EQ(err, "");
  if (!err.empty()) return 0;
  for (size_t i = 0; i < checks.size(); ++i)
    if (checks[i].post) checks[i].post(jobs[i].outputs[0]);
  int matched = 0;
  for (size_t i = 0; i < checks.size(); ++i) {
    SCOPED_TRACE(checks[i].name);
    auto outs = run_tessera(models[i], jobs[i].inputs, "cpu");
    EXPECT_TRUE(outs.ok()) << outs.status().to_string();
    if (!outs.ok() || outs->size() != 1) continue;
    const std::vector<uint8_t>& got = (*outs)[0];
    const std::vector<uint8_t>& want = jobs[i].outputs[0];
    EXPECT_EQ(got.size(), want.size());
    if (got.size() != want.size()) continue;
    int64_t differ = 0;
    std::string first;  // the first differing values, for the failure message
    if (checks[i].is_float) {
      std::vector<float> a(got.size() / 4), b(want.size() / 4);
      std::memcpy(a.data(), got.data(), got.size());
      std::memcpy(b.data(), want.data(), want.size());
      double m = 0;
      for (float v : b) m = std::max(m, std::fabs(static_cast<double>(v)));
      for (size_t k = 0; k < a.size(); ++k) {
        const bool both_nan = std::isnan(a[k]) && std::isnan(b[k]);
        const bool same_inf = std::isinf(a[k]) && a[k] == b[k];
        const double tol = 1e-5 * std::max({std::fabs(static_cast<double>(a[k])), std::fabs(static_cast<double>(b[k])), m});
        if (!both_nan && !same_inf && !(std::fabs(static_cast<double>(a[k]) - b[k]) <= tol) && ++differ <= 6)
          first += " @" + std::to_string(k) + ":" + std::to_string(a[k]) + "/" + std::to_string(b[k]);
      }
    } else {
      for (size_t k = 0; k < got.size(); ++k)
        if (got[k] != want[k] && ++differ <= 6)
          first += " @" + std::to_string(k) + ":" + std::to_string(got[k]) + "/" + std::to_string(want[k]);
    }
    EXPECT_EQ(differ, 0) << checks[i].name << ": " << differ << " differ (Tessera/interpreter):" << first;
    // (Outputs of one value, such as a reduction over every axis, cannot vary: exempt.)
    const bool constant = want.size() > (checks[i].is_float ? 4u : 2u) &&
                          std::count(want.begin(), want.end(), want[0]) == static_cast<std::ptrdiff_t>(want.size());
    EXPECT_FALSE(constant) << "constant output";
    if (differ == 0 && !constant) ++matched;
    std::printf("[oracle] %s %-44s %zu bytes %s\n", what, checks[i].name.c_str(), got.size(), differ ? "DIFFER" : "match");
  }
  return matched;
}

// For jobs the oracle has run (run_batch): Tessera's cpu output of models[i] must equal the
// interpreter's byte for byte (operators that move values), and the interpreter's output
// must not be constant (`check_constant`).
inline void expect_jobs_byte_exact(const std::vector<Job>& jobs, const std::vector<std::vector<uint8_t>>& models,
                                   const char* what, bool check_constant = true) {
  for (size_t i = 0; i < jobs.size(); ++i) {
    SCOPED_TRACE(jobs[i].name);
    auto outs = run_tessera(models[i], jobs[i].inputs, "cpu");
    ASSERT_TRUE(outs.ok()) << outs.status().to_string();
    ASSERT_EQ(outs->size(), 1u);
    const std::vector<uint8_t>& want = jobs[i].outputs[0];
    EXPECT_EQ((*outs)[0], want) << jobs[i].name << " differs";
    if (check_constant)
      EXPECT_NE(std::count(want.begin(), want.end(), want[0]), static_cast<std::ptrdiff_t>(want.size())) << "constant output";
    std::printf("[oracle] %s %-44s %zu bytes %s\n", what, jobs[i].name.c_str(), want.size(), (*outs)[0] == want ? "match" : "DIFFER");
  }
}

// Expects Tessera to refuse `m` with a message containing every phrase.
inline void expect_refused(const testing::SingleOpModel& m, const std::vector<std::string>& phrases) {
  auto r = run_tessera(m.bytes(), {}, "cpu");
  ASSERT_FALSE(r.ok());
  const std::string msg = r.status().to_string();
  for (const std::string& p : phrases) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
}

}  // namespace tessera::oracle
