// Open Inference Protocol (KServe v2) tensors: JSON and binary tensor data <-> host bytes.
//
// A v2 tensor is {"name", "datatype", "shape", "data"}; "data" holds the elements in
// row-major order, flat or nested. With the binary tensor data extension the body is a
// JSON header of `Inference-Header-Content-Length` bytes followed by the raw tensors, in
// the order of the inputs whose parameters give "binary_data_size". Host bytes are the
// model's own dtype, row-major (what Session::set_input takes and Session::output returns,
// and what `tessera run` reads and writes).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tessera/types.h"

namespace tessera::serve {

// One input or output of a served model.
struct TensorSpec {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;  // fixed: the models have static shapes
};

// The v2 datatype of `t` ("FP32", "UINT8", ...); throws ApiError 422 when v2 has none.
std::string v2_datatype(DType t);
// {"name", "datatype", "shape"}.
nlohmann::json tensor_metadata(const TensorSpec& t);

struct InferRequest {
  std::string id;                            // echoed back when given
  std::vector<std::vector<uint8_t>> inputs;  // [model input] row-major host bytes
  std::vector<bool> wanted;                  // [model output] asked for ("outputs" absent: all)
  std::vector<bool> binary;                  // [model output] answered as binary data
};

// Parses an infer request for a model with `inputs` and `outputs`. `header_length` is the
// Inference-Header-Content-Length header (binary extension), absent for a JSON-only body.
// Throws ApiError: 400 for malformed JSON or fields of the wrong type, 422 for inputs that
// do not match the model (unknown or missing name, datatype, shape, element count or value
// range), each message naming the model, the input and what was expected.
InferRequest parse_infer_request(const std::string& body, std::optional<size_t> header_length,
                                 const std::string& model, const std::vector<TensorSpec>& inputs,
                                 const std::vector<TensorSpec>& outputs);

struct InferResponse {
  std::string body;
  std::optional<size_t> header_length;  // set when some output is binary (the JSON header's bytes)
};

// The response for outputs `data` ([model output] host bytes of each spec).
InferResponse make_infer_response(const std::string& model, const InferRequest& req,
                                  const std::vector<TensorSpec>& outputs,
                                  const std::vector<std::vector<uint8_t>>& data);

// Host bytes of `t` as a flat JSON array of numbers (booleans for BOOL).
nlohmann::json tensor_data_json(const TensorSpec& t, const std::vector<uint8_t>& bytes);

}  // namespace tessera::serve
