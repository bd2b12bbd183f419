// Prometheus text: counters, the cumulative histogram and the gauges.
#include "serve/metrics.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <random>

namespace tessera::serve {
namespace {

// The value of the sample line starting with `prefix` (-1 when absent).
double sample(const std::string& text, const std::string& prefix) {
  size_t at = 0;
  while ((at = text.find(prefix, at)) != std::string::npos) {
    if (at == 0 || text[at - 1] == '\n') return std::stod(text.substr(at + prefix.size()));
    at += prefix.size();
  }
  return -1;
}

TEST(Metrics, CountsAndCumulativeHistogram) {
  Metrics m;
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> latency(0.001, 3.0);
  std::vector<double> seen;
  for (int i = 0; i < 200; ++i) {
    const double s = latency(rng);
    seen.push_back(s);
    m.request("llm", "completions", i % 10 == 0 ? 503 : 200, s);
  }
  m.tokens("llm", 10, 40, 2.0);
  m.busy("llm", "cpu", 1.5);
  m.busy("llm", "cpu", 0.25);
  const std::string t = m.render({{"llm", 3, 2}});
  EXPECT_EQ(sample(t, "tessera_requests_total{model=\"llm\",endpoint=\"completions\",code=\"200\"} "), 180);
  EXPECT_EQ(sample(t, "tessera_requests_total{model=\"llm\",endpoint=\"completions\",code=\"503\"} "), 20);
  for (double le : kLatencyBuckets) {
    int64_t want = 0;
    for (double s : seen) want += s <= le;
    const std::string key = "tessera_request_duration_seconds_bucket{endpoint=\"completions\",le=\"" +
                            fmt::format("{}", le) + "\"} ";
    EXPECT_EQ(sample(t, key), want) << key;
  }
  EXPECT_EQ(sample(t, "tessera_request_duration_seconds_count{endpoint=\"completions\"} "), 200);
  EXPECT_EQ(sample(t, "tessera_generated_tokens_total{model=\"llm\"} "), 40);
  EXPECT_EQ(sample(t, "tessera_generation_tokens_per_second{model=\"llm\"} "), 20);
  EXPECT_EQ(sample(t, "tessera_queue_depth{model=\"llm\"} "), 3);
  EXPECT_EQ(sample(t, "tessera_active_requests{model=\"llm\"} "), 2);
  EXPECT_EQ(sample(t, "tessera_device_busy_seconds_total{model=\"llm\",device=\"cpu\"} "), 1.75);
}

}  // namespace
}  // namespace tessera::serve
