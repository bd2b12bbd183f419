// Status and Result<T>: how every library function reports failure.
//
// Messages name what failed and where, MLX style: "[conv2d] input 0 'conv1/in': dtype u8
// not supported by device 'rknpu'". Only the CLI turns a Status into an exit code; the
// library never calls exit() and never throws across its API.
#pragma once

#include "tessera/export.h"

#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <variant>

namespace tessera {

enum class StatusCode {
  ok = 0,
  invalid_argument,   // caller passed something malformed (shape, file, option)
  not_found,          // a named thing (device, tensor, file, format) does not exist
  unsupported,        // valid but not implemented for this op / dtype / device
  out_of_memory,      // capacity or maximum single allocation exceeded
  out_of_range,       // index, region or offset outside its bounds
  io_error,           // file system or kernel interface failure
  internal,           // a broken invariant inside Tessera (a bug)
  cancelled,          // the caller's callback asked to stop (a load's progress callback)
};

TESSERA_API const char* status_code_name(StatusCode code);

class [[nodiscard]] TESSERA_API Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }
  bool ok() const { return code_ == StatusCode::ok; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Returns a copy with `context` prepended ("context: message"), for adding the op,
  // tensor or device name as an error travels up.
  Status with_context(const std::string& context) const;
  std::string to_string() const;

 private:
  StatusCode code_ = StatusCode::ok;
  std::string message_;
};

// Builds a message from any streamable pieces: error(StatusCode::invalid_argument, "[conv2d] ", x).
template <typename... Args>
Status error(StatusCode code, const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return Status(code, os.str());
}

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}            // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}      // NOLINT: implicit by design

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

// Internal invariant failure: aborts with file and line. Never used for bad input.
[[noreturn]] TESSERA_API void check_failed(const char* expr, const char* file, int line, const std::string& msg);

}  // namespace tessera

#define TESSERA_CONCAT_INNER(a, b) a##b
#define TESSERA_CONCAT(a, b) TESSERA_CONCAT_INNER(a, b)

// Return the status if it is an error.
#define TS_RETURN_IF_ERROR(expr)                   \
  do {                                             \
    ::tessera::Status ts_status_ = (expr);         \
    if (!ts_status_.ok()) return ts_status_;       \
  } while (0)

// `TS_ASSIGN_OR_RETURN(auto x, f());` unwraps a Result or returns its Status.
#define TS_ASSIGN_OR_RETURN(lhs, expr) \
  TS_ASSIGN_OR_RETURN_IMPL(TESSERA_CONCAT(ts_result_, __LINE__), lhs, expr)
#define TS_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return tmp.status();            \
  lhs = std::move(tmp).value()

// Internal invariants (bugs, not bad input).
#define TS_CHECK(cond, ...)                                                      \
  do {                                                                           \
    if (!(cond)) ::tessera::check_failed(#cond, __FILE__, __LINE__, std::string(__VA_ARGS__)); \
  } while (0)
