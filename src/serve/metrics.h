// Server metrics in the Prometheus text exposition format (GET /metrics).
//
//   tessera_requests_total{model,endpoint,code}            counter
//   tessera_request_duration_seconds{endpoint}             histogram (buckets kLatencyBuckets)
//   tessera_prompt_tokens_total{model}                     counter
//   tessera_generated_tokens_total{model}                  counter
//   tessera_generation_seconds_total{model}                counter (tokens/s = rate of the two)
//   tessera_generation_tokens_per_second{model}            gauge, the last finished generation
//   tessera_queue_depth{model} / tessera_active_requests{model}   gauges
//   tessera_device_busy_seconds_total{model,device}        counter, time a session ran
// Thread-safe: every method takes the one mutex (updates are a few additions per request).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

namespace tessera::serve {

// Upper bounds of the latency histogram in seconds (Prometheus client defaults, widened
// to a minute for long generations).
constexpr std::array<double, 14> kLatencyBuckets = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                                    1,     2.5,  5,     10,   20,  30,  60};

struct QueueGauge {
  std::string model;
  int64_t queued = 0;
  int64_t active = 0;
};

class Metrics {
 public:
  void request(const std::string& model, const std::string& endpoint, int code, double seconds);
  void tokens(const std::string& model, int64_t prompt, int64_t generated, double generate_seconds);
  void busy(const std::string& model, const std::string& device, double seconds);
  // The exposition text, with the queue gauges read at this moment.
  std::string render(const std::vector<QueueGauge>& queues) const;

 private:
  struct Histogram {
    std::array<int64_t, kLatencyBuckets.size()> buckets{};  // non-cumulative counts
    int64_t count = 0;
    double sum = 0;
  };
  struct Tokens {
    int64_t prompt = 0, generated = 0;
    double seconds = 0, last_rate = 0;
  };
  mutable std::mutex mu_;
  std::map<std::tuple<std::string, std::string, int>, int64_t> requests_;  // (model, endpoint, code)
  std::map<std::string, Histogram> latency_;                               // by endpoint
  std::map<std::string, Tokens> tokens_;                                   // by model
  std::map<std::pair<std::string, std::string>, double> busy_;             // (model, device)
};

}  // namespace tessera::serve
