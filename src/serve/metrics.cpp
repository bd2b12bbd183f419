#include "serve/metrics.h"

#include <fmt/format.h>

namespace tessera::serve {

namespace {
// A label value with \, " and newline escaped (the exposition format's rule).
std::string label(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}
}  // namespace

void Metrics::request(const std::string& model, const std::string& endpoint, int code, double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  ++requests_[{model, endpoint, code}];
  Histogram& h = latency_[endpoint];
  ++h.count;
  h.sum += seconds;
  for (size_t i = 0; i < kLatencyBuckets.size(); ++i)
    if (seconds <= kLatencyBuckets[i]) {
      ++h.buckets[i];
      break;
    }
}

void Metrics::tokens(const std::string& model, int64_t prompt, int64_t generated, double generate_seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  Tokens& t = tokens_[model];
  t.prompt += prompt;
  t.generated += generated;
  t.seconds += generate_seconds;
  if (generate_seconds > 0) t.last_rate = generated / generate_seconds;
}

void Metrics::busy(const std::string& model, const std::string& device, double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  busy_[{model, device}] += seconds;
}

std::string Metrics::render(const std::vector<QueueGauge>& queues) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string s;
  s += "# HELP tessera_requests_total HTTP requests answered, by model, endpoint and status code.\n";
  s += "# TYPE tessera_requests_total counter\n";
  for (const auto& [key, n] : requests_)
    s += fmt::format("tessera_requests_total{{model=\"{}\",endpoint=\"{}\",code=\"{}\"}} {}\n",
                     label(std::get<0>(key)), label(std::get<1>(key)), std::get<2>(key), n);
  s += "# HELP tessera_request_duration_seconds Time from a request's arrival to the end of its answer.\n";
  s += "# TYPE tessera_request_duration_seconds histogram\n";
  for (const auto& [endpoint, h] : latency_) {
    int64_t cumulative = 0;
    for (size_t i = 0; i < kLatencyBuckets.size(); ++i) {
      cumulative += h.buckets[i];
      s += fmt::format("tessera_request_duration_seconds_bucket{{endpoint=\"{}\",le=\"{}\"}} {}\n", label(endpoint),
                       kLatencyBuckets[i], cumulative);
    }
    s += fmt::format("tessera_request_duration_seconds_bucket{{endpoint=\"{}\",le=\"+Inf\"}} {}\n", label(endpoint),
                     h.count);
    s += fmt::format("tessera_request_duration_seconds_sum{{endpoint=\"{}\"}} {}\n", label(endpoint), h.sum);
    s += fmt::format("tessera_request_duration_seconds_count{{endpoint=\"{}\"}} {}\n", label(endpoint), h.count);
  }
  auto per_model = [&](const char* name, const char* type, const char* help, auto value) {
    s += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
    for (const auto& [model, t] : tokens_) s += fmt::format("{}{{model=\"{}\"}} {}\n", name, label(model), value(t));
  };
  per_model("tessera_prompt_tokens_total", "counter", "Prompt tokens processed.", [](const Tokens& t) { return t.prompt; });
  per_model("tessera_generated_tokens_total", "counter", "Tokens generated.", [](const Tokens& t) { return t.generated; });
  per_model("tessera_generation_seconds_total", "counter", "Time spent generating tokens (after the prompt).",
            [](const Tokens& t) { return t.seconds; });
  per_model("tessera_generation_tokens_per_second", "gauge", "Generation speed of the last finished request.",
            [](const Tokens& t) { return t.last_rate; });
  s += "# HELP tessera_queue_depth Requests waiting for a session.\n# TYPE tessera_queue_depth gauge\n";
  for (const auto& q : queues) s += fmt::format("tessera_queue_depth{{model=\"{}\"}} {}\n", label(q.model), q.queued);
  s += "# HELP tessera_active_requests Requests running on a session.\n# TYPE tessera_active_requests gauge\n";
  for (const auto& q : queues)
    s += fmt::format("tessera_active_requests{{model=\"{}\"}} {}\n", label(q.model), q.active);
  s += "# HELP tessera_device_busy_seconds_total Time the model's sessions spent running, by device.\n";
  s += "# TYPE tessera_device_busy_seconds_total counter\n";
  for (const auto& [key, sec] : busy_)
    s += fmt::format("tessera_device_busy_seconds_total{{model=\"{}\",device=\"{}\"}} {}\n", label(key.first),
                     label(key.second), sec);
  return s;
}

}  // namespace tessera::serve
