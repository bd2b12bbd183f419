#include "runtime/llm/stop_scanner.h"

#include <algorithm>

namespace tessera::llm {

StopScanner::StopScanner(std::vector<std::string> stops) {
  for (auto& s : stops)
    if (!s.empty()) stops_.push_back(std::move(s));
}

std::string StopScanner::add(const std::string& piece) {
  if (stopped_) return {};
  pending_ += piece;
  // The earliest complete stop string ends the reply.
  size_t first = std::string::npos;
  for (const auto& s : stops_) first = std::min(first, pending_.find(s));
  if (first != std::string::npos) {
    stopped_ = true;
    std::string out = pending_.substr(0, first);
    pending_.clear();
    text_ += out;
    return out;
  }
  // Hold back the longest tail of pending_ that is a proper prefix of a stop string.
  size_t keep = 0;
  for (const auto& s : stops_)
    for (size_t k = std::min(s.size() - 1, pending_.size()); k > keep; --k)
      if (pending_.compare(pending_.size() - k, k, s, 0, k) == 0) {
        keep = k;
        break;
      }
  std::string out = pending_.substr(0, pending_.size() - keep);
  pending_.erase(0, pending_.size() - keep);
  text_ += out;
  return out;
}

std::string StopScanner::flush() {
  std::string out = std::move(pending_);
  pending_.clear();
  text_ += out;
  return out;
}

}  // namespace tessera::llm
