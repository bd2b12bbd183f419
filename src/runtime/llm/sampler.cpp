// Sampler: repetition penalty, greedy, top-k, top-p, temperature, seeded draw.
#include "runtime/llm/sampler.h"

#include <algorithm>
#include <cmath>
#include <unordered_set>

namespace tessera::llm {

Sampler::Sampler(SamplerOptions o) : o_(o), rng_(o.seed) {}

Status Sampler::validate(const SamplerOptions& o) {
  if (!(o.temperature >= 0) || !std::isfinite(o.temperature))
    return error(StatusCode::invalid_argument, "sampler: temperature must be >= 0, got ", o.temperature);
  if (!(o.top_p > 0 && o.top_p <= 1))
    return error(StatusCode::invalid_argument, "sampler: top-p must be in (0, 1], got ", o.top_p);
  if (!(o.repeat_penalty > 0) || !std::isfinite(o.repeat_penalty))
    return error(StatusCode::invalid_argument, "sampler: repeat penalty must be > 0, got ", o.repeat_penalty);
  if (o.repeat_last_n < 0)
    return error(StatusCode::invalid_argument, "sampler: repeat-last-n must be >= 0, got ", o.repeat_last_n);
  return Status::Ok();
}

int32_t Sampler::sample(std::span<const float> logits, std::span<const int32_t> history) {
  const int32_t n = static_cast<int32_t>(logits.size());
  if (n == 0) return 0;
  work_.assign(logits.begin(), logits.end());
  if (o_.repeat_penalty != 1.0f && o_.repeat_last_n > 0) {
    // llama.cpp's rule: a positive logit is divided by the penalty, a negative one multiplied.
    size_t from = history.size() > static_cast<size_t>(o_.repeat_last_n) ? history.size() - o_.repeat_last_n : 0;
    std::unordered_set<int32_t> seen(history.begin() + static_cast<std::ptrdiff_t>(from), history.end());
    for (int32_t id : seen)
      if (id >= 0 && id < n) work_[id] = work_[id] > 0 ? work_[id] / o_.repeat_penalty : work_[id] * o_.repeat_penalty;
  }
  if (o_.temperature <= 0) {
    int32_t best = 0;
    for (int32_t i = 1; i < n; ++i)
      if (work_[i] > work_[best]) best = i;
    return best;
  }
  cand_.clear();
  for (int32_t i = 0; i < n; ++i) cand_.push_back({work_[i], i});
  auto by_logit = [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); };
  size_t k = o_.top_k > 0 ? std::min<size_t>(static_cast<size_t>(o_.top_k), cand_.size()) : cand_.size();
  std::partial_sort(cand_.begin(), cand_.begin() + static_cast<std::ptrdiff_t>(k), cand_.end(), by_logit);
  cand_.resize(k);
  // Top-p on the probabilities at temperature 1.
  if (o_.top_p < 1.0f) {
    double mx = cand_[0].first, sum = 0;
    for (auto& c : cand_) sum += std::exp(static_cast<double>(c.first) - mx);
    double acc = 0;
    size_t keep = cand_.size();
    for (size_t i = 0; i < cand_.size(); ++i) {
      acc += std::exp(static_cast<double>(cand_[i].first) - mx) / sum;
      if (acc >= o_.top_p) {
        keep = i + 1;
        break;
      }
    }
    cand_.resize(keep);
  }
  // Temperature, then a draw.
  double mx = cand_[0].first;
  std::vector<double> w(cand_.size());
  for (size_t i = 0; i < cand_.size(); ++i) w[i] = std::exp((static_cast<double>(cand_[i].first) - mx) / o_.temperature);
  std::discrete_distribution<size_t> pick(w.begin(), w.end());
  return cand_[pick(rng_)].second;
}

}  // namespace tessera::llm
