#include "tessera/status.h"

#include <cstdio>
#include <cstdlib>

namespace tessera {

const char* status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::ok: return "ok";
    case StatusCode::invalid_argument: return "invalid argument";
    case StatusCode::not_found: return "not found";
    case StatusCode::unsupported: return "unsupported";
    case StatusCode::out_of_memory: return "out of memory";
    case StatusCode::out_of_range: return "out of range";
    case StatusCode::io_error: return "I/O error";
    case StatusCode::internal: return "internal error";
    case StatusCode::cancelled: return "cancelled";
  }
  return "unknown";
}

Status Status::with_context(const std::string& context) const {
  if (ok()) return *this;
  return Status(code_, context + ": " + message_);
}

std::string Status::to_string() const {
  if (ok()) return "ok";
  return std::string(status_code_name(code_)) + ": " + message_;
}

void check_failed(const char* expr, const char* file, int line, const std::string& msg) {
  std::fprintf(stderr, "tessera: internal check failed at %s:%d: %s %s\n", file, line, expr, msg.c_str());
  std::abort();
}

}  // namespace tessera
