// GGUF writer (see gguf_writer.h).
#include "import/gguf/gguf_writer.h"

#include <cstring>
#include <fstream>

namespace tessera::gguf {

namespace {
constexpr uint32_t kVersion = 3;  // gguf.md: current version

template <typename T>
void put_raw(std::vector<uint8_t>& out, T v) {
  size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &v, sizeof(T));
}
void put_string(std::vector<uint8_t>& out, const std::string& s) {
  put_raw<uint64_t>(out, s.size());
  out.insert(out.end(), s.begin(), s.end());
}
void put_value(std::vector<uint8_t>& out, const Value& v) {
  switch (v.type) {
    case ValueType::u8: put_raw<uint8_t>(out, static_cast<uint8_t>(v.u)); break;
    case ValueType::i8: put_raw<int8_t>(out, static_cast<int8_t>(v.i)); break;
    case ValueType::u16: put_raw<uint16_t>(out, static_cast<uint16_t>(v.u)); break;
    case ValueType::i16: put_raw<int16_t>(out, static_cast<int16_t>(v.i)); break;
    case ValueType::u32: put_raw<uint32_t>(out, static_cast<uint32_t>(v.u)); break;
    case ValueType::i32: put_raw<int32_t>(out, static_cast<int32_t>(v.i)); break;
    case ValueType::u64: put_raw<uint64_t>(out, v.u); break;
    case ValueType::i64: put_raw<int64_t>(out, v.i); break;
    case ValueType::f32: put_raw<float>(out, static_cast<float>(v.f)); break;
    case ValueType::f64: put_raw<double>(out, v.f); break;
    case ValueType::boolean: put_raw<uint8_t>(out, v.u ? 1 : 0); break;
    case ValueType::string: put_string(out, v.s); break;
    case ValueType::array:
      put_raw<uint32_t>(out, static_cast<uint32_t>(v.elem_type));
      put_raw<uint64_t>(out, v.arr.size());
      for (const Value& e : v.arr) put_value(out, e);
      break;
  }
}
Value scalar(ValueType t) {
  Value v;
  v.type = t;
  return v;
}
}  // namespace

void Writer::put(const std::string& key, Value v) {
  for (auto& [k, old] : kv_)
    if (k == key) {
      old = std::move(v);
      return;
    }
  kv_.emplace_back(key, std::move(v));
}

void Writer::set_u32(const std::string& key, uint32_t x) {
  Value v = scalar(ValueType::u32);
  v.u = x;
  put(key, v);
}
void Writer::set_i32(const std::string& key, int32_t x) {
  Value v = scalar(ValueType::i32);
  v.i = x;
  put(key, v);
}
void Writer::set_f32(const std::string& key, float x) {
  Value v = scalar(ValueType::f32);
  v.f = x;
  put(key, v);
}
void Writer::set_bool(const std::string& key, bool x) {
  Value v = scalar(ValueType::boolean);
  v.u = x ? 1 : 0;
  put(key, v);
}
void Writer::set_string(const std::string& key, const std::string& x) {
  Value v = scalar(ValueType::string);
  v.s = x;
  put(key, v);
}
void Writer::set_strings(const std::string& key, const std::vector<std::string>& xs) {
  Value v = scalar(ValueType::array);
  v.elem_type = ValueType::string;
  for (const auto& x : xs) {
    Value e = scalar(ValueType::string);
    e.s = x;
    v.arr.push_back(std::move(e));
  }
  put(key, std::move(v));
}
void Writer::set_f32s(const std::string& key, const std::vector<float>& xs) {
  Value v = scalar(ValueType::array);
  v.elem_type = ValueType::f32;
  for (float x : xs) {
    Value e = scalar(ValueType::f32);
    e.f = x;
    v.arr.push_back(e);
  }
  put(key, std::move(v));
}
void Writer::set_i32s(const std::string& key, const std::vector<int32_t>& xs) {
  Value v = scalar(ValueType::array);
  v.elem_type = ValueType::i32;
  for (int32_t x : xs) {
    Value e = scalar(ValueType::i32);
    e.i = x;
    v.arr.push_back(e);
  }
  put(key, std::move(v));
}

Status Writer::add_tensor(const std::string& name, const Shape& shape, DType dtype, std::vector<uint8_t> data) {
  TS_ASSIGN_OR_RETURN(uint32_t type, ggml_from_dtype(dtype));
  if (shape.empty() || shape.size() > static_cast<size_t>(kMaxDims))
    return error(StatusCode::invalid_argument, "gguf writer: tensor '", name, "' needs 1 to ", kMaxDims, " dims");
  TS_ASSIGN_OR_RETURN(int64_t bytes, Format::row_major(dtype, shape).byte_size());
  if (bytes != static_cast<int64_t>(data.size()))
    return error(StatusCode::invalid_argument, "gguf writer: tensor '", name, "' ", dtype_name(dtype),
                 shape_str(shape), " takes ", bytes, " bytes, got ", data.size());
  tensors_.push_back({name, shape, type, std::move(data)});
  return Status::Ok();
}

std::vector<uint8_t> Writer::header() const {
  std::vector<uint8_t> out;
  put_raw<uint32_t>(out, kMagic);
  put_raw<uint32_t>(out, kVersion);
  put_raw<uint64_t>(out, tensors_.size());
  bool has_alignment = false;
  for (const auto& kv : kv_) has_alignment |= kv.first == "general.alignment";
  bool add_alignment = alignment_ != kDefaultAlignment && !has_alignment;
  put_raw<uint64_t>(out, kv_.size() + (add_alignment ? 1 : 0));
  for (const auto& [k, v] : kv_) {
    put_string(out, k);
    put_raw<uint32_t>(out, static_cast<uint32_t>(v.type));
    put_value(out, v);
  }
  if (add_alignment) {
    put_string(out, "general.alignment");
    put_raw<uint32_t>(out, static_cast<uint32_t>(ValueType::u32));
    put_raw<uint32_t>(out, static_cast<uint32_t>(alignment_));
  }
  uint64_t offset = 0;
  for (const auto& t : tensors_) {
    put_string(out, t.name);
    put_raw<uint32_t>(out, static_cast<uint32_t>(t.shape.size()));
    for (auto it = t.shape.rbegin(); it != t.shape.rend(); ++it) put_raw<uint64_t>(out, static_cast<uint64_t>(*it));
    put_raw<uint32_t>(out, t.type);
    put_raw<uint64_t>(out, offset);
    offset += (t.data.size() + alignment_ - 1) / alignment_ * alignment_;
  }
  out.resize((out.size() + alignment_ - 1) / alignment_ * alignment_, 0);
  return out;
}

Result<std::vector<uint8_t>> Writer::bytes() const {
  std::vector<uint8_t> out = header();
  for (const auto& t : tensors_) {
    out.insert(out.end(), t.data.begin(), t.data.end());
    out.resize((out.size() + alignment_ - 1) / alignment_ * alignment_, 0);
  }
  return out;
}

Status Writer::write(const std::string& path) const {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return error(StatusCode::io_error, "gguf writer: cannot create '", path, "'");
  std::vector<uint8_t> h = header();
  f.write(reinterpret_cast<const char*>(h.data()), static_cast<std::streamsize>(h.size()));
  const std::vector<char> pad(static_cast<size_t>(alignment_), 0);
  for (const auto& t : tensors_) {
    f.write(reinterpret_cast<const char*>(t.data.data()), static_cast<std::streamsize>(t.data.size()));
    size_t rem = t.data.size() % static_cast<size_t>(alignment_);
    if (rem) f.write(pad.data(), static_cast<std::streamsize>(alignment_ - rem));
  }
  if (!f) return error(StatusCode::io_error, "gguf writer: writing '", path, "' failed");
  return Status::Ok();
}

}  // namespace tessera::gguf
