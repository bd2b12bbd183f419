// GGUF reader: every read is bounds-checked against the bytes given (see gguf_file.h).
#include "import/gguf/gguf_file.h"

#include "core/checked.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

namespace tessera::gguf {

const char* value_type_name(ValueType t) {
  switch (t) {
    case ValueType::u8: return "u8";
    case ValueType::i8: return "i8";
    case ValueType::u16: return "u16";
    case ValueType::i16: return "i16";
    case ValueType::u32: return "u32";
    case ValueType::i32: return "i32";
    case ValueType::f32: return "f32";
    case ValueType::boolean: return "bool";
    case ValueType::string: return "string";
    case ValueType::array: return "array";
    case ValueType::u64: return "u64";
    case ValueType::i64: return "i64";
    case ValueType::f64: return "f64";
  }
  return "?";
}

std::string ggml_type_name(uint32_t type) {
  // ggml.h: enum ggml_type (numbers are stable; gaps are removed types).
  static const char* const kNames[] = {
      "f32", "f16", "q4_0", "q4_1", nullptr, nullptr, "q5_0", "q5_1", "q8_0", "q8_1",
      "q2_K", "q3_K", "q4_K", "q5_K", "q6_K", "q8_K", "iq2_xxs", "iq2_xs", "iq3_xxs", "iq1_s",
      "iq4_nl", "iq3_s", "iq2_s", "iq4_xs", "i8", "i16", "i32", "i64", "f64", "iq1_m",
      "bf16", nullptr, nullptr, nullptr, "tq1_0", "tq2_0", nullptr, nullptr, nullptr, "mxfp4"};
  if (type < sizeof(kNames) / sizeof(kNames[0]) && kNames[type]) return kNames[type];
  return "type " + std::to_string(type);
}

namespace {
// ggml type number <-> Tessera dtype, for every tensor type Tessera reads.
struct GgmlDType {
  uint32_t ggml;
  DType dtype;
};
constexpr GgmlDType kGgmlDTypes[] = {
    {kGgmlF32, DType::f32},   {kGgmlF16, DType::f16},   {kGgmlBF16, DType::bf16}, {kGgmlQ8_0, DType::q8_0},
    {kGgmlQ4_0, DType::q4_0}, {kGgmlQ4_1, DType::q4_1}, {kGgmlQ5_0, DType::q5_0}, {kGgmlQ5_1, DType::q5_1},
    {kGgmlQ2_K, DType::q2_k}, {kGgmlQ3_K, DType::q3_k}, {kGgmlQ4_K, DType::q4_k}, {kGgmlQ5_K, DType::q5_k},
    {kGgmlQ6_K, DType::q6_k}, {kGgmlIQ4_NL, DType::iq4_nl}, {kGgmlIQ4_XS, DType::iq4_xs},
};
}  // namespace

Result<DType> dtype_from_ggml(uint32_t type, const std::string& tensor) {
  for (const GgmlDType& g : kGgmlDTypes)
    if (g.ggml == type) return g.dtype;
  std::string supported;
  for (const GgmlDType& g : kGgmlDTypes) supported += std::string(supported.empty() ? "" : ", ") + dtype_name(g.dtype);
  return error(StatusCode::unsupported, "tensor '", tensor, "' has ggml type ", ggml_type_name(type), " (", type,
               "); supported: ", supported);
}

Result<uint32_t> ggml_from_dtype(DType t) {
  for (const GgmlDType& g : kGgmlDTypes)
    if (g.dtype == t) return g.ggml;
  return error(StatusCode::unsupported, "gguf: dtype ", dtype_name(t), " has no ggml type here");
}

std::optional<int64_t> Value::as_int() const {
  switch (type) {
    case ValueType::u8: case ValueType::u16: case ValueType::u32: case ValueType::u64:
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
      return static_cast<int64_t>(u);
    case ValueType::i8: case ValueType::i16: case ValueType::i32: case ValueType::i64:
      return i;
    case ValueType::boolean: return static_cast<int64_t>(u);
    default: return std::nullopt;
  }
}

std::optional<double> Value::as_float() const {
  if (type == ValueType::f32 || type == ValueType::f64) return f;
  if (auto v = as_int()) return static_cast<double>(*v);
  return std::nullopt;
}

std::string Value::to_string(size_t max_items) const {
  std::ostringstream os;
  switch (type) {
    case ValueType::string: {
      constexpr size_t kMaxShown = 60;
      os << '"' << s.substr(0, kMaxShown) << (s.size() > kMaxShown ? "...\"" : "\"");
      break;
    }
    case ValueType::boolean: os << (u ? "true" : "false"); break;
    case ValueType::f32: case ValueType::f64: os << f; break;
    case ValueType::array: {
      os << "[" << value_type_name(elem_type) << " x " << arr.size() << "]";
      for (size_t k = 0; k < arr.size() && k < max_items; ++k) os << (k ? ", " : " ") << arr[k].to_string(2);
      if (arr.size() > max_items) os << ", ...";
      break;
    }
    default:
      if (auto v = as_int()) os << *v;
      else os << u;
  }
  return os.str();
}

namespace {

// Byte offsets of the binary16 scale fields (d, and the min / dmin where the type has one)
// in a block of each GGUF block type (src/convert/gguf_blocks.h, gguf_kquants.h).
std::vector<int> scale_fields(DType t) {
  switch (t) {
    case DType::q8_0: case DType::q4_0: case DType::q5_0: case DType::iq4_nl: case DType::iq4_xs: return {0};
    case DType::q4_1: case DType::q5_1: case DType::q4_k: case DType::q5_k: return {0, 2};
    case DType::q2_k: return {80, 82};
    case DType::q3_k: return {108};
    case DType::q6_k: return {208};
    default: return {};
  }
}

// Every block's scales are finite: an infinite or NaN scale (a corrupted file) would turn
// every product with that block into NaN, so it is refused at open, naming the tensor.
Status check_block_scales(const TensorInfo& t, const std::string& what) {
  const std::vector<int> fields = scale_fields(t.dtype);
  if (fields.empty()) return Status::Ok();
  const int64_t bb = dtype_block_bytes(t.dtype), blocks = t.bytes / bb;
  for (int64_t b = 0; b < blocks; ++b)
    for (int off : fields) {
      uint16_t h;
      std::memcpy(&h, t.data.data + b * bb + off, 2);
      if ((h & 0x7c00) == 0x7c00) {
        std::ostringstream hex;
        hex << std::hex << h;
        return error(StatusCode::invalid_argument, what, ": tensor '", t.name, "' (", dtype_name(t.dtype), ") block ",
                     b, " has a non-finite scale (binary16 0x", hex.str(), " at byte ", off, " of the block)");
      }
    }
  return Status::Ok();
}

// A bounds-checked little-endian reader over the file bytes.
class Cursor {
 public:
  Cursor(const uint8_t* data, int64_t size, const std::string& what) : d_(data), size_(size), what_(what) {}
  int64_t pos() const { return pos_; }
  int64_t left() const { return size_ - pos_; }

  Status need(int64_t n, const char* item) const {
    if (n < 0 || n > left())
      return error(StatusCode::invalid_argument, what_, ": truncated or corrupt at byte ", pos_, ": ", item,
                   " needs ", n, " bytes but only ", left(), " remain");
    return Status::Ok();
  }
  template <typename T>
  Result<T> read(const char* item) {
    TS_RETURN_IF_ERROR(need(sizeof(T), item));
    T v;
    std::memcpy(&v, d_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  Result<std::string> string(const char* item) {
    TS_ASSIGN_OR_RETURN(uint64_t len, read<uint64_t>(item));
    if (len > static_cast<uint64_t>(left()))
      return error(StatusCode::invalid_argument, what_, ": ", item, " at byte ", pos_ - 8, " claims ", len,
                   " bytes but only ", left(), " remain");
    std::string s(reinterpret_cast<const char*>(d_ + pos_), static_cast<size_t>(len));
    pos_ += static_cast<int64_t>(len);
    return s;
  }
  const std::string& what() const { return what_; }

 private:
  const uint8_t* d_;
  int64_t size_;
  int64_t pos_ = 0;
  const std::string& what_;
};

// The smallest number of bytes one value of type `t` occupies (for validating counts).
int64_t min_value_bytes(ValueType t) {
  switch (t) {
    case ValueType::u8: case ValueType::i8: case ValueType::boolean: return 1;
    case ValueType::u16: case ValueType::i16: return 2;
    case ValueType::u32: case ValueType::i32: case ValueType::f32: return 4;
    case ValueType::u64: case ValueType::i64: case ValueType::f64: case ValueType::string: return 8;
    case ValueType::array: return 12;
  }
  return 1;
}

bool valid_value_type(uint32_t t) { return t <= static_cast<uint32_t>(ValueType::f64); }

Result<Value> read_value(Cursor& c, ValueType type, const std::string& key, int depth) {
  Value v;
  v.type = type;
  switch (type) {
    case ValueType::u8: { TS_ASSIGN_OR_RETURN(uint8_t x, c.read<uint8_t>("u8 value")); v.u = x; break; }
    case ValueType::i8: { TS_ASSIGN_OR_RETURN(int8_t x, c.read<int8_t>("i8 value")); v.i = x; break; }
    case ValueType::u16: { TS_ASSIGN_OR_RETURN(uint16_t x, c.read<uint16_t>("u16 value")); v.u = x; break; }
    case ValueType::i16: { TS_ASSIGN_OR_RETURN(int16_t x, c.read<int16_t>("i16 value")); v.i = x; break; }
    case ValueType::u32: { TS_ASSIGN_OR_RETURN(uint32_t x, c.read<uint32_t>("u32 value")); v.u = x; break; }
    case ValueType::i32: { TS_ASSIGN_OR_RETURN(int32_t x, c.read<int32_t>("i32 value")); v.i = x; break; }
    case ValueType::u64: { TS_ASSIGN_OR_RETURN(uint64_t x, c.read<uint64_t>("u64 value")); v.u = x; break; }
    case ValueType::i64: { TS_ASSIGN_OR_RETURN(int64_t x, c.read<int64_t>("i64 value")); v.i = x; break; }
    case ValueType::f32: { TS_ASSIGN_OR_RETURN(float x, c.read<float>("f32 value")); v.f = x; break; }
    case ValueType::f64: { TS_ASSIGN_OR_RETURN(double x, c.read<double>("f64 value")); v.f = x; break; }
    case ValueType::boolean: {
      TS_ASSIGN_OR_RETURN(uint8_t x, c.read<uint8_t>("bool value"));
      if (x > 1)
        return error(StatusCode::invalid_argument, c.what(), ": key '", key, "': bool value ", int(x), " at byte ",
                     c.pos() - 1, " is neither 0 nor 1");
      v.u = x;
      break;
    }
    case ValueType::string: { TS_ASSIGN_OR_RETURN(v.s, c.string("string value")); break; }
    case ValueType::array: {
      if (depth >= kMaxArrayNesting)
        return error(StatusCode::invalid_argument, c.what(), ": key '", key, "': arrays nested deeper than ",
                     kMaxArrayNesting);
      TS_ASSIGN_OR_RETURN(uint32_t et, c.read<uint32_t>("array element type"));
      if (!valid_value_type(et))
        return error(StatusCode::invalid_argument, c.what(), ": key '", key, "': unknown array element type ", et,
                     " at byte ", c.pos() - 4);
      v.elem_type = static_cast<ValueType>(et);
      TS_ASSIGN_OR_RETURN(uint64_t n, c.read<uint64_t>("array count"));
      int64_t min_bytes = min_value_bytes(v.elem_type);
      if (n > static_cast<uint64_t>(c.left() / min_bytes))
        return error(StatusCode::invalid_argument, c.what(), ": key '", key, "': array of ", n, " ",
                     value_type_name(v.elem_type), " at byte ", c.pos() - 8, " cannot fit in the ", c.left(),
                     " bytes that remain");
      v.arr.reserve(static_cast<size_t>(n));
      for (uint64_t k = 0; k < n; ++k) {
        TS_ASSIGN_OR_RETURN(Value e, read_value(c, v.elem_type, key, depth + 1));
        v.arr.push_back(std::move(e));
      }
      break;
    }
  }
  return v;
}

}  // namespace

Result<File> File::parse(ConstData bytes, const std::string& what, const ProgressPart& progress) {
  File f;
  f.bytes_ = bytes;
  f.what_ = what;
  if (!bytes.data && bytes.size != 0) return error(StatusCode::invalid_argument, what, ": no data");
  Cursor c(bytes.data, bytes.size, f.what_);
  TS_ASSIGN_OR_RETURN(uint32_t magic, c.read<uint32_t>("magic"));
  if (magic != kMagic) {
    char m[5] = {};
    std::memcpy(m, &magic, 4);
    for (char& ch : m)
      if (ch && (ch < 32 || ch > 126)) ch = '?';
    return error(StatusCode::invalid_argument, what, ": not a GGUF file (magic '", m, "', expected 'GGUF')");
  }
  TS_ASSIGN_OR_RETURN(f.version_, c.read<uint32_t>("version"));
  if (f.version_ != 2 && f.version_ != 3)
    return error(StatusCode::unsupported, what, ": GGUF version ", f.version_, " is not supported (2 and 3 are)");
  TS_ASSIGN_OR_RETURN(uint64_t n_tensors, c.read<uint64_t>("tensor count"));
  TS_ASSIGN_OR_RETURN(uint64_t n_kv, c.read<uint64_t>("metadata count"));
  // A key-value pair takes at least 8 (key length) + 4 (type) + 1 bytes; a tensor info at
  // least 8 (name length) + 4 (n_dims) + 4 (type) + 8 (offset).
  constexpr int64_t kMinKvBytes = 13, kMinTensorInfoBytes = 24;
  if (n_kv > static_cast<uint64_t>(c.left() / kMinKvBytes))
    return error(StatusCode::invalid_argument, what, ": metadata count ", n_kv, " cannot fit in a file of ",
                 bytes.size, " bytes");
  if (n_tensors > static_cast<uint64_t>(c.left() / kMinTensorInfoBytes))
    return error(StatusCode::invalid_argument, what, ": tensor count ", n_tensors, " cannot fit in a file of ",
                 bytes.size, " bytes");

  std::set<std::string> keys;
  for (uint64_t k = 0; k < n_kv; ++k) {
    int64_t at = c.pos();
    TS_ASSIGN_OR_RETURN(std::string key, c.string("metadata key"));
    if (!keys.insert(key).second)
      return error(StatusCode::invalid_argument, what, ": metadata key '", key, "' at byte ", at, " is duplicated");
    TS_ASSIGN_OR_RETURN(uint32_t type, c.read<uint32_t>("metadata value type"));
    if (!valid_value_type(type))
      return error(StatusCode::invalid_argument, what, ": metadata key '", key, "' has unknown value type ", type,
                   " (at byte ", c.pos() - 4, ")");
    TS_ASSIGN_OR_RETURN(Value v, read_value(c, static_cast<ValueType>(type), key, 0));
    f.kv_.emplace_back(std::move(key), std::move(v));
  }

  if (const Value* a = f.find("general.alignment")) {
    auto al = a->as_int();
    if (!al || *al <= 0 || (*al & (*al - 1)) != 0 || *al > (int64_t{1} << 30))
      return error(StatusCode::invalid_argument, what, ": general.alignment ", a->to_string(),
                   " is not a power of two up to 2^30");
    f.alignment_ = *al;
  }

  std::set<std::string> names;
  for (uint64_t k = 0; k < n_tensors; ++k) {
    TensorInfo t;
    TS_ASSIGN_OR_RETURN(t.name, c.string("tensor name"));
    if (!names.insert(t.name).second)
      return error(StatusCode::invalid_argument, what, ": tensor name '", t.name, "' is duplicated");
    TS_ASSIGN_OR_RETURN(uint32_t n_dims, c.read<uint32_t>("tensor n_dims"));
    if (n_dims < 1 || n_dims > static_cast<uint32_t>(kMaxDims))
      return error(StatusCode::invalid_argument, what, ": tensor '", t.name, "' has ", n_dims,
                   " dims (1 to ", kMaxDims, " allowed)");
    std::vector<int64_t> ne(n_dims);
    // No tensor can have more elements than the file has bits: bounds the products below.
    const int64_t max_elems = bytes.size * 8;
    int64_t elems = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      TS_ASSIGN_OR_RETURN(uint64_t v, c.read<uint64_t>("tensor dim"));
      if (v == 0 || v > static_cast<uint64_t>(max_elems) || static_cast<int64_t>(v) > max_elems / elems)
        return error(StatusCode::invalid_argument, what, ": tensor '", t.name, "' dim ", d, " = ", v,
                     " is zero or too large for a file of ", bytes.size, " bytes");
      ne[d] = static_cast<int64_t>(v);
      elems *= ne[d];
    }
    t.shape.assign(ne.rbegin(), ne.rend());
    TS_ASSIGN_OR_RETURN(t.ggml_type, c.read<uint32_t>("tensor type"));
    TS_ASSIGN_OR_RETURN(t.offset, c.read<uint64_t>("tensor offset"));
    f.tensors_.push_back(std::move(t));
  }

  int64_t info_end = c.pos();
  f.data_offset_ = (info_end + f.alignment_ - 1) / f.alignment_ * f.alignment_;
  if (!f.tensors_.empty() && f.data_offset_ > bytes.size)
    return error(StatusCode::invalid_argument, what, ": data section starts at byte ", f.data_offset_,
                 " past the end of the file (", bytes.size, " bytes)");
  const int64_t data_bytes = bytes.size - std::min(f.data_offset_, bytes.size);
  int64_t checked = 0;  // bytes of tensor data whose block scales were checked (progress)
  for (TensorInfo& t : f.tensors_) {
    auto dt = dtype_from_ggml(t.ggml_type, t.name);
    if (!dt.ok()) return dt.status().with_context(what);
    t.dtype = *dt;
    if (t.shape.back() % dtype_block_values(t.dtype) != 0)
      return error(StatusCode::invalid_argument, what, ": tensor '", t.name, "' (", dtype_name(t.dtype),
                   ") has rows of ", t.shape.back(), " values, not a multiple of the block size ",
                   dtype_block_values(t.dtype));
    TS_ASSIGN_OR_RETURN(int64_t row, dtype_row_bytes(t.dtype, t.shape.back()));
    TS_ASSIGN_OR_RETURN(int64_t elems, checked_elements(t.shape, what + ": tensor '" + t.name + "'"));
    const int64_t rows = elems / t.shape.back();
    if (row > 0 && rows > data_bytes / row)
      return error(StatusCode::invalid_argument, what, ": tensor '", t.name, "' ", dtype_name(t.dtype),
                   shape_str(t.shape), " needs more bytes than the data section holds (", data_bytes, ")");
    TS_ASSIGN_OR_RETURN(t.bytes, (Size(rows) * row).get(what + ": tensor '" + t.name + "'"));
    if (t.offset % static_cast<uint64_t>(f.alignment_) != 0)
      return error(StatusCode::invalid_argument, what, ": tensor '", t.name, "' offset ", t.offset,
                   " is not a multiple of the alignment ", f.alignment_);
    if (t.offset > static_cast<uint64_t>(data_bytes) || static_cast<int64_t>(t.offset) > data_bytes - t.bytes)
      return error(StatusCode::out_of_range, what, ": tensor '", t.name, "' data [", t.offset, ", +", t.bytes,
                   ") lies past the end of the data section (", data_bytes, " bytes from file byte ",
                   f.data_offset_, ")");
    t.data.data = bytes.data + f.data_offset_ + static_cast<int64_t>(t.offset);
    t.data.size = t.bytes;
    t.data.owner = bytes.owner;
    TS_RETURN_IF_ERROR(check_block_scales(t, what));
    checked += t.bytes;
    if (data_bytes > 0)
      TS_RETURN_IF_ERROR(progress.report(static_cast<double>(checked) / static_cast<double>(data_bytes), what));
  }
  TS_RETURN_IF_ERROR(progress.report(1.0, what));
  return f;
}

bool File::huge_pages_available() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  if (!f || !std::getline(f, line)) return false;
  return line.find("[always]") != std::string::npos || line.find("[madvise]") != std::string::npos;
}

namespace {

// The whole file into anonymous memory on 2 MiB boundaries, advised for huge pages, then
// made read-only. The mapping's owner unmaps it.
Result<ConstData> read_huge(int fd, const std::string& path, size_t size, const ProgressPart& progress) {
  constexpr size_t kHuge = size_t{2} << 20;
  if (size > std::numeric_limits<size_t>::max() - 2 * kHuge)
    return error(StatusCode::io_error, "gguf: '", path, "' is too large to read into memory");
  const size_t len = (size + kHuge - 1) / kHuge * kHuge + kHuge;  // + room to align
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return error(StatusCode::io_error, "gguf: cannot allocate ", size, " bytes for '", path, "': ", std::strerror(errno));
  std::shared_ptr<const void> owner(p, [len](const void* q) { munmap(const_cast<void*>(q), len); });
  auto* a = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(p) + kHuge - 1) & ~uintptr_t{kHuge - 1});
  const size_t span = (size + kHuge - 1) / kHuge * kHuge;
  madvise(a, span, MADV_HUGEPAGE);  // advice only: without it the bytes are the same
  constexpr size_t kChunk = size_t{8} << 20;  // bytes a read between progress reports
  for (size_t done = 0; done < size;) {
    const ssize_t r = ::pread(fd, a + done, std::min(size - done, kChunk), static_cast<off_t>(done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0)
      return error(StatusCode::io_error, "gguf: cannot read '", path, "' at byte ", done, ": ",
                   r < 0 ? std::strerror(errno) : "the file ended early");
    done += static_cast<size_t>(r);
    TS_RETURN_IF_ERROR(
        progress.report(static_cast<double>(done) / static_cast<double>(size), "gguf: reading '" + path + "'"));
  }
  mprotect(a, span, PROT_READ);
  ConstData d;
  d.data = a;
  d.size = static_cast<int64_t>(size);
  d.owner = std::move(owner);
  return d;
}

}  // namespace

Result<File> File::open(const std::string& path, Load load, const ProgressPart& progress) {
  TS_RETURN_IF_ERROR(progress.report(0.0, "gguf: '" + path + "'"));
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return error(StatusCode::io_error, "gguf: cannot open '", path, "': ", std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return error(StatusCode::io_error, "gguf: '", path, "' is not a regular file");
  }
  ConstData d;
  d.size = st.st_size;
  // Reading needs the file's size in memory that cannot be paged back to the file: only
  // for files up to half the machine's memory (a larger model stays mapped, where pages
  // can come and go).
  const double phys = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE));
  if (st.st_size > 0 && load == Load::read && huge_pages_available() && static_cast<double>(st.st_size) <= phys / 2) {
    // Reading is most of the time; the check of the block scales then runs over memory.
    auto r = read_huge(fd, path, static_cast<size_t>(st.st_size), progress.sub(0.0, 0.9));
    ::close(fd);
    if (!r.ok()) return r.status();
    return parse(std::move(r).value(), "'" + path + "'", progress.sub(0.9, 1.0));
  }
  if (st.st_size > 0) {
    void* p = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (p == MAP_FAILED) return error(StatusCode::io_error, "gguf: cannot map '", path, "': ", std::strerror(errno));
    size_t len = static_cast<size_t>(st.st_size);
    d.data = static_cast<const uint8_t*>(p);
    d.owner = std::shared_ptr<const void>(p, [len](const void* q) { munmap(const_cast<void*>(q), len); });
  } else {
    ::close(fd);
  }
  return parse(std::move(d), "'" + path + "'", progress);  // the check pages the blocks in
}

const Value* File::find(const std::string& key) const {
  for (const auto& [k, v] : kv_)
    if (k == key) return &v;
  return nullptr;
}

const TensorInfo* File::find_tensor(const std::string& name) const {
  for (const auto& t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

Result<int64_t> File::get_int(const std::string& key) const {
  const Value* v = find(key);
  if (!v) return error(StatusCode::not_found, what_, ": metadata key '", key, "' is missing");
  auto i = v->as_int();
  if (!i) return error(StatusCode::invalid_argument, what_, ": metadata key '", key, "' is ", value_type_name(v->type),
                       ", expected an integer");
  return *i;
}

Result<double> File::get_float(const std::string& key) const {
  const Value* v = find(key);
  if (!v) return error(StatusCode::not_found, what_, ": metadata key '", key, "' is missing");
  auto x = v->as_float();
  if (!x) return error(StatusCode::invalid_argument, what_, ": metadata key '", key, "' is ", value_type_name(v->type),
                       ", expected a number");
  return *x;
}

Result<std::string> File::get_string(const std::string& key) const {
  const Value* v = find(key);
  if (!v) return error(StatusCode::not_found, what_, ": metadata key '", key, "' is missing");
  if (v->type != ValueType::string)
    return error(StatusCode::invalid_argument, what_, ": metadata key '", key, "' is ", value_type_name(v->type),
                 ", expected a string");
  return v->s;
}

int64_t File::get_int_or(const std::string& key, int64_t fallback) const {
  auto r = get_int(key);
  return r.ok() ? *r : fallback;
}

double File::get_float_or(const std::string& key, double fallback) const {
  auto r = get_float(key);
  return r.ok() ? *r : fallback;
}

}  // namespace tessera::gguf
