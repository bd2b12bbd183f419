// GGUF files (versions 2 and 3): header, metadata, tensor infos and tensor data.
//
// The format (ggml's docs/gguf.md), all little-endian:
//   u32 magic "GGUF", u32 version, u64 tensor_count, u64 metadata_kv_count,
//   metadata_kv_count x { string key, u32 value_type, value },
//   tensor_count x { string name, u32 n_dims, u64 ne[n_dims], u32 ggml_type, u64 offset },
//   padding to `general.alignment` (default 32), then the tensor data; each tensor's
//   offset is relative to the start of the data and aligned to the alignment.
//   A string is u64 length + bytes (no terminator); an array is u32 element type,
//   u64 count, elements.
//
// parse() validates every count, string length, dimension and offset against the bytes
// it was given before using it, so a malformed or truncated file gives a Status naming
// what is wrong and where, never a crash. Tensor data is not copied: TensorInfo::data
// points into the file's bytes and keeps them alive (a memory map for open()).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tessera/graph.h"
#include "tessera/progress.h"

namespace tessera::gguf {

constexpr uint32_t kMagic = 0x46554747;        // "GGUF" read as a little-endian u32
constexpr int64_t kDefaultAlignment = 32;      // gguf.md: GGUF_DEFAULT_ALIGNMENT
constexpr int kMaxDims = 4;                    // ggml.h: GGML_MAX_DIMS
constexpr int kMaxArrayNesting = 8;            // arrays of arrays deeper than this are refused

// gguf.md: gguf_metadata_value_type.
enum class ValueType : uint32_t {
  u8 = 0, i8 = 1, u16 = 2, i16 = 3, u32 = 4, i32 = 5, f32 = 6, boolean = 7,
  string = 8, array = 9, u64 = 10, i64 = 11, f64 = 12,
};
const char* value_type_name(ValueType t);

// One metadata value. Integers are held in `i` (signed) or `u` (unsigned), floats in `f`.
struct Value {
  ValueType type = ValueType::u8;
  ValueType elem_type = ValueType::u8;  // arrays only
  int64_t i = 0;
  uint64_t u = 0;
  double f = 0;
  std::string s;
  std::vector<Value> arr;  // arrays only

  // The value as an integer, if it is an integer or bool type that fits in int64_t.
  std::optional<int64_t> as_int() const;
  // The value as a float, if it is a float or integer type.
  std::optional<double> as_float() const;
  // A short rendering: scalars in full, strings quoted (cut at 60 chars), arrays as
  // "[type x N] first items...".
  std::string to_string(size_t max_items = 6) const;
};

// ggml_type numbers (ggml.h) of the tensor types Tessera reads, and a name for any number.
enum GgmlType : uint32_t {
  kGgmlF32 = 0, kGgmlF16 = 1, kGgmlQ4_0 = 2, kGgmlQ4_1 = 3, kGgmlQ5_0 = 6, kGgmlQ5_1 = 7, kGgmlQ8_0 = 8,
  kGgmlQ2_K = 10, kGgmlQ3_K = 11, kGgmlQ4_K = 12, kGgmlQ5_K = 13, kGgmlQ6_K = 14, kGgmlIQ4_NL = 20,
  kGgmlIQ4_XS = 23, kGgmlBF16 = 30,
};
// "q4_K" for 12, "type 99" for an unknown number.
std::string ggml_type_name(uint32_t type);
// The logical dtype Tessera uses for a ggml type, or an error naming the type.
Result<DType> dtype_from_ggml(uint32_t type, const std::string& tensor);
// The inverse (for the writer).
Result<uint32_t> ggml_from_dtype(DType t);

struct TensorInfo {
  std::string name;
  Shape shape;           // logical, outermost first: GGUF ne[] reversed ([rows, row length])
  uint32_t ggml_type = 0;
  DType dtype = DType::f32;
  uint64_t offset = 0;   // from the start of the data section
  int64_t bytes = 0;     // stored bytes (blocks included)
  ConstData data;        // the stored bytes; keeps the file alive
};

class File {
 public:
  // How open() brings the file's bytes in.
  enum class Load {
    map,   // a read-only memory map: pages come in on first use and stay in the page cache
    read,  // read whole into anonymous memory advised for transparent huge pages (2 MiB),
           // where the kernel offers them and the file is at most half the machine's memory
           // (else: map). Decode streams every weight once per
           // token; with 4 KiB pages the F16 model's decode ran 15-20% slower on the
           // development VM (TLB misses, prefetchers stopping at page boundaries).
  };
  // Brings `path` in (memory map by default) and parses it, reporting the bytes read and
  // the blocks checked to `progress`.
  static Result<File> open(const std::string& path, Load load = Load::map, const ProgressPart& progress = {});
  // Whether the kernel offers transparent huge pages to madvise() (Linux: "always" or
  // "madvise" in /sys/kernel/mm/transparent_hugepage/enabled).
  static bool huge_pages_available();
  // Parses bytes in memory; `bytes.owner` keeps them alive for the tensors' data.
  static Result<File> parse(ConstData bytes, const std::string& what = "gguf", const ProgressPart& progress = {});

  uint32_t version() const { return version_; }
  int64_t alignment() const { return alignment_; }
  int64_t data_offset() const { return data_offset_; }  // file position of the data section
  int64_t file_size() const { return bytes_.size; }
  const std::string& what() const { return what_; }

  const std::vector<std::pair<std::string, Value>>& metadata() const { return kv_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const Value* find(const std::string& key) const;
  const TensorInfo* find_tensor(const std::string& name) const;

  // Typed metadata lookups; errors name the key and the file.
  Result<int64_t> get_int(const std::string& key) const;
  Result<double> get_float(const std::string& key) const;
  Result<std::string> get_string(const std::string& key) const;
  int64_t get_int_or(const std::string& key, int64_t fallback) const;
  double get_float_or(const std::string& key, double fallback) const;

 private:
  ConstData bytes_;
  std::string what_;
  uint32_t version_ = 0;
  int64_t alignment_ = kDefaultAlignment;
  int64_t data_offset_ = 0;
  std::vector<std::pair<std::string, Value>> kv_;
  std::vector<TensorInfo> tensors_;
};

}  // namespace tessera::gguf
