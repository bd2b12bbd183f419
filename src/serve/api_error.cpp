#include "serve/api_error.h"

namespace tessera::serve {

const char* error_type(int status) {
  switch (status) {
    case 400: return "invalid_request_error";
    case 404: return "not_found_error";
    case 413: return "request_too_large";
    case 422: return "unprocessable_entity";
    case 503: return "server_busy";
    default: return status >= 500 ? "server_error" : "invalid_request_error";
  }
}

nlohmann::json error_json(int status, const std::string& message) {
  return {{"error", {{"message", message}, {"type", error_type(status)}, {"code", status}}}};
}

nlohmann::json parse_json_body(const std::string& body, const std::string& what) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(body);
  } catch (const nlohmann::json::parse_error& e) {
    // e.what() reads "[json.exception.parse_error.101] parse error at line 1, column 28: ...":
    // keep the position and the reason.
    std::string why = e.what();
    if (auto at = why.find("parse error"); at != std::string::npos) why = why.substr(at);
    throw ApiError(400, what + ": malformed JSON (" + std::to_string(body.size()) + " bytes): " + why);
  }
  if (!j.is_object()) throw ApiError(400, what + ": the body must be a JSON object, got " + std::string(j.type_name()));
  return j;
}

}  // namespace tessera::serve
