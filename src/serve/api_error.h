// ApiError: a request the server answers with an HTTP error and a JSON message.
//
// The protocol functions of src/serve throw ApiError for a bad request; the HTTP layer
// catches it in one place and answers `status` with the body of error_json(). Status codes
// (docs/serving.md): 400 malformed or ill-typed request, 404 unknown model or route,
// 413 body over the limit, 422 well-formed but not what the model takes (tensor shape or
// datatype, a prompt longer than the context), 503 queue full or shutting down.
#pragma once

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace tessera::serve {

class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string message) : std::runtime_error(message), status_(status) {}
  int status() const { return status_; }

 private:
  int status_;
};

// The OpenAI-style error type for an HTTP status ("invalid_request_error", "not_found_error", ...).
const char* error_type(int status);

// {"error": {"message": ..., "type": ..., "code": status}}: the body of every error answer
// (OpenAI clients read error.message; v2 clients read the top-level "error" too).
nlohmann::json error_json(int status, const std::string& message);

// Parses a request body as a JSON object; throws ApiError 400 naming the byte where
// parsing failed, or saying that the body is not an object.
nlohmann::json parse_json_body(const std::string& body, const std::string& what);

}  // namespace tessera::serve
