#include "serve/tensor_json.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "convert/dtype.h"
#include "core/checked.h"
#include "serve/api_error.h"

namespace tessera::serve {

using nlohmann::json;

std::string v2_datatype(DType t) {
  switch (t) {
    case DType::f32: return "FP32";
    case DType::f16: return "FP16";
    case DType::bf16: return "BF16";
    case DType::i8: return "INT8";
    case DType::u8: return "UINT8";
    case DType::i16: return "INT16";
    case DType::i32: return "INT32";
    case DType::i64: return "INT64";
    case DType::boolean: return "BOOL";
    default: throw ApiError(422, std::string("tensor dtype ") + dtype_name(t) + " has no v2 datatype");
  }
}

json tensor_metadata(const TensorSpec& t) {
  return {{"name", t.name}, {"datatype", v2_datatype(t.dtype)}, {"shape", t.shape}};
}

namespace {

std::string shape_text(const json& s) { return s.dump(); }

// Appends element `v` to `out` as dtype `t`; throws ApiError 422 naming `where`.
void put_element(const json& v, DType t, std::vector<uint8_t>& out, const std::string& where) {
  auto bad = [&](const std::string& why) { throw ApiError(422, where + ": " + why); };
  auto append = [&](const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    out.insert(out.end(), b, b + n);
  };
  if (t == DType::boolean) {
    if (!v.is_boolean()) bad("BOOL data must be true or false, got " + v.dump());
    uint8_t b = v.get<bool>() ? 1 : 0;
    return append(&b, 1);
  }
  if (!v.is_number()) bad("data must be numbers, got " + std::string(v.type_name()) + " " + v.dump());
  if (t == DType::f32 || t == DType::f16 || t == DType::bf16) {
    const double d = v.get<double>();
    if (std::isfinite(d) && std::fabs(d) > std::numeric_limits<float>::max()) bad("value " + v.dump() + " overflows float");
    const float f = static_cast<float>(d);
    if (t == DType::f32) return append(&f, 4);
    const uint16_t h = t == DType::f16 ? convert::f32_to_f16(f) : convert::f32_to_bf16(f);
    return append(&h, 2);
  }
  // Integers: an integral JSON number within the dtype's range.
  int64_t i = 0;
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) bad("value " + v.dump() + " out of range");
    i = static_cast<int64_t>(u);
  } else if (v.is_number_integer()) {
    i = v.get<int64_t>();
  } else {
    const double d = v.get<double>();
    if (d != std::floor(d) || std::fabs(d) > 9.007199254740992e15) bad("value " + v.dump() + " is not an integer");
    i = static_cast<int64_t>(d);
  }
  auto range = [&](int64_t lo, int64_t hi) {
    if (i < lo || i > hi)
      bad("value " + std::to_string(i) + " outside the " + v2_datatype(t) + " range [" + std::to_string(lo) + ", " +
          std::to_string(hi) + "]");
  };
  switch (t) {
    case DType::u8: { range(0, 255); uint8_t x = static_cast<uint8_t>(i); return append(&x, 1); }
    case DType::i8: { range(-128, 127); int8_t x = static_cast<int8_t>(i); return append(&x, 1); }
    case DType::i16: { range(-32768, 32767); int16_t x = static_cast<int16_t>(i); return append(&x, 2); }
    case DType::i32: {
      range(std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max());
      int32_t x = static_cast<int32_t>(i);
      return append(&x, 4);
    }
    case DType::i64: return append(&i, 8);
    default: bad(std::string("dtype ") + dtype_name(t) + " not supported");
  }
}

// Flattens nested arrays of `data` into `out` (row-major), counting elements up to `limit`.
void flatten(const json& data, DType t, std::vector<uint8_t>& out, int64_t& count, int64_t limit,
             const std::string& where) {
  if (data.is_array()) {
    for (const auto& e : data) flatten(e, t, out, count, limit, where);
    return;
  }
  if (++count > limit) throw ApiError(422, where + ": more data elements than the shape's " + std::to_string(limit));
  put_element(data, t, out, where);
}

const json* find_parameter(const json& tensor, const char* key) {
  auto p = tensor.find("parameters");
  if (p == tensor.end() || !p->is_object()) return nullptr;
  auto v = p->find(key);
  return v == p->end() ? nullptr : &*v;
}

}  // namespace

InferRequest parse_infer_request(const std::string& body, std::optional<size_t> header_length,
                                 const std::string& model, const std::vector<TensorSpec>& inputs,
                                 const std::vector<TensorSpec>& outputs) {
  const std::string what = "model '" + model + "' infer request";
  size_t json_bytes = body.size();
  if (header_length) {
    if (*header_length > body.size())
      throw ApiError(400, what + ": Inference-Header-Content-Length " + std::to_string(*header_length) +
                              " exceeds the body's " + std::to_string(body.size()) + " bytes");
    json_bytes = *header_length;
  }
  const json j = parse_json_body(body.substr(0, json_bytes), what);
  size_t binary_at = json_bytes;  // next unread byte of binary tensor data

  InferRequest r;
  if (auto id = j.find("id"); id != j.end()) {
    if (!id->is_string()) throw ApiError(400, what + ": \"id\" must be a string");
    r.id = id->get<std::string>();
  }
  auto ins = j.find("inputs");
  if (ins == j.end() || !ins->is_array()) throw ApiError(400, what + ": \"inputs\" must be an array of tensors");
  r.inputs.resize(inputs.size());
  std::vector<bool> seen(inputs.size(), false);
  for (const auto& in : *ins) {
    if (!in.is_object()) throw ApiError(400, what + ": each input must be an object");
    auto name = in.find("name");
    if (name == in.end() || !name->is_string()) throw ApiError(400, what + ": an input has no string \"name\"");
    const std::string n = name->get<std::string>();
    const std::string where = what + ", input '" + n + "'";
    size_t k = 0;
    while (k < inputs.size() && inputs[k].name != n) ++k;
    if (k == inputs.size()) {
      std::string names;
      for (const auto& s : inputs) names += (names.empty() ? "'" : ", '") + s.name + "'";
      throw ApiError(422, where + ": the model has no such input (inputs: " + names + ")");
    }
    if (seen[k]) throw ApiError(422, where + ": given twice");
    seen[k] = true;
    const TensorSpec& spec = inputs[k];
    auto dt = in.find("datatype");
    auto shape = in.find("shape");
    if (dt == in.end() || !dt->is_string()) throw ApiError(400, where + ": no string \"datatype\"");
    if (shape == in.end() || !shape->is_array()) throw ApiError(400, where + ": no \"shape\" array");
    for (const auto& d : *shape)
      if (!d.is_number_integer()) throw ApiError(400, where + ": \"shape\" must hold integers, got " + shape->dump());
    const std::string want_dt = v2_datatype(spec.dtype);
    if (dt->get<std::string>() != want_dt)
      throw ApiError(422, where + ": datatype " + dt->get<std::string>() + " but the model takes " + want_dt);
    if (*shape != json(spec.shape))
      throw ApiError(422, where + ": shape " + shape_text(*shape) + " but the model takes " + shape_text(json(spec.shape)));
    auto bytes = checked_host_bytes(spec.shape, spec.dtype, where);
    if (!bytes.ok()) throw ApiError(422, bytes.status().message());
    const int64_t elements = spec.shape.empty() ? 1 : num_elements(spec.shape);
    std::vector<uint8_t>& out = r.inputs[k];
    if (const json* bin = find_parameter(in, "binary_data_size")) {
      if (!header_length) throw ApiError(400, where + ": binary_data_size without an Inference-Header-Content-Length header");
      if (!bin->is_number_unsigned()) throw ApiError(400, where + ": binary_data_size must be a non-negative integer");
      const uint64_t n = bin->get<uint64_t>();
      if (n != static_cast<uint64_t>(*bytes))
        throw ApiError(422, where + ": binary_data_size " + std::to_string(n) + " but the tensor takes " +
                                std::to_string(*bytes) + " bytes");
      if (n > body.size() - binary_at)
        throw ApiError(400, where + ": binary data runs past the end of the body (" + std::to_string(n) + " bytes at " +
                                std::to_string(binary_at) + " of " + std::to_string(body.size()) + ")");
      out.assign(body.begin() + static_cast<ptrdiff_t>(binary_at), body.begin() + static_cast<ptrdiff_t>(binary_at + n));
      binary_at += n;
      continue;
    }
    auto data = in.find("data");
    if (data == in.end()) throw ApiError(400, where + ": no \"data\" (nor binary_data_size)");
    out.reserve(static_cast<size_t>(*bytes));
    int64_t count = 0;
    flatten(*data, spec.dtype, out, count, elements, where);
    if (count != elements)
      throw ApiError(422, where + ": " + std::to_string(count) + " data elements but shape " +
                              shape_text(json(spec.shape)) + " holds " + std::to_string(elements));
  }
  for (size_t k = 0; k < inputs.size(); ++k)
    if (!seen[k]) throw ApiError(422, what + ": input '" + inputs[k].name + "' is missing");
  if (binary_at != body.size())
    throw ApiError(400, what + ": " + std::to_string(body.size() - binary_at) + " bytes of binary data left over");

  const json* all_binary = nullptr;
  if (auto p = j.find("parameters"); p != j.end() && p->is_object())
    if (auto b = p->find("binary_data_output"); b != p->end()) all_binary = &*b;
  const bool default_binary = all_binary && all_binary->is_boolean() && all_binary->get<bool>();
  r.wanted.assign(outputs.size(), true);
  r.binary.assign(outputs.size(), default_binary);
  if (auto outs = j.find("outputs"); outs != j.end()) {
    if (!outs->is_array()) throw ApiError(400, what + ": \"outputs\" must be an array");
    r.wanted.assign(outputs.size(), false);
    for (const auto& o : *outs) {
      if (!o.is_object() || !o.contains("name") || !o["name"].is_string())
        throw ApiError(400, what + ": each requested output needs a string \"name\"");
      const std::string n = o["name"].get<std::string>();
      size_t k = 0;
      while (k < outputs.size() && outputs[k].name != n) ++k;
      if (k == outputs.size()) throw ApiError(422, what + ": the model has no output '" + n + "'");
      r.wanted[k] = true;
      if (const json* b = find_parameter(o, "binary_data")) {
        if (!b->is_boolean()) throw ApiError(400, what + ", output '" + n + "': binary_data must be true or false");
        r.binary[k] = b->get<bool>();
      }
    }
  }
  return r;
}

json tensor_data_json(const TensorSpec& t, const std::vector<uint8_t>& bytes) {
  json a = json::array();
  const uint8_t* p = bytes.data();
  const size_t n = bytes.size();
  auto each = [&](size_t size, auto&& f) {
    for (size_t i = 0; i + size <= n; i += size) a.push_back(f(p + i));
  };
  auto load = [](const uint8_t* q, auto x) {
    std::memcpy(&x, q, sizeof x);
    return x;
  };
  switch (t.dtype) {
    case DType::f32: each(4, [&](const uint8_t* q) { return load(q, float{}); }); break;
    case DType::f16: each(2, [&](const uint8_t* q) { return convert::f16_to_f32(load(q, uint16_t{})); }); break;
    case DType::bf16: each(2, [&](const uint8_t* q) { return convert::bf16_to_f32(load(q, uint16_t{})); }); break;
    case DType::u8: each(1, [&](const uint8_t* q) { return static_cast<int>(*q); }); break;
    case DType::i8: each(1, [&](const uint8_t* q) { return static_cast<int>(static_cast<int8_t>(*q)); }); break;
    case DType::i16: each(2, [&](const uint8_t* q) { return load(q, int16_t{}); }); break;
    case DType::i32: each(4, [&](const uint8_t* q) { return load(q, int32_t{}); }); break;
    case DType::i64: each(8, [&](const uint8_t* q) { return load(q, int64_t{}); }); break;
    case DType::boolean: each(1, [&](const uint8_t* q) { return *q != 0; }); break;
    default: throw ApiError(422, "output '" + t.name + "': dtype " + dtype_name(t.dtype) + " has no v2 datatype");
  }
  return a;
}

InferResponse make_infer_response(const std::string& model, const InferRequest& req,
                                  const std::vector<TensorSpec>& outputs,
                                  const std::vector<std::vector<uint8_t>>& data) {
  json j = {{"model_name", model}, {"model_version", "1"}, {"outputs", json::array()}};
  if (!req.id.empty()) j["id"] = req.id;
  std::string binary;
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (!req.wanted[k]) continue;
    json o = tensor_metadata(outputs[k]);
    if (req.binary[k]) {
      o["parameters"] = {{"binary_data_size", data[k].size()}};
      binary.append(reinterpret_cast<const char*>(data[k].data()), data[k].size());
    } else {
      o["data"] = tensor_data_json(outputs[k], data[k]);
    }
    j["outputs"].push_back(std::move(o));
  }
  InferResponse r;
  r.body = j.dump();
  bool any_binary = false;
  for (size_t k = 0; k < outputs.size(); ++k) any_binary = any_binary || (req.wanted[k] && req.binary[k]);
  if (any_binary) {
    r.header_length = r.body.size();
    r.body += binary;
  }
  return r;
}

}  // namespace tessera::serve
