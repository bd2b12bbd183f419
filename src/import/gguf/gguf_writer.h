// GGUF writer: builds a version 3 file from metadata and tensors (used by `tessera
// gguf-synth` and by tests that need well-formed files of a chosen shape). The output
// follows the layout described in gguf_file.h and reads back through File::parse.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "import/gguf/gguf_file.h"

namespace tessera::gguf {

class Writer {
 public:
  explicit Writer(int64_t alignment = kDefaultAlignment) : alignment_(alignment) {}

  void set_u32(const std::string& key, uint32_t v);
  void set_i32(const std::string& key, int32_t v);
  void set_f32(const std::string& key, float v);
  void set_bool(const std::string& key, bool v);
  void set_string(const std::string& key, const std::string& v);
  void set_strings(const std::string& key, const std::vector<std::string>& v);
  void set_f32s(const std::string& key, const std::vector<float>& v);
  void set_i32s(const std::string& key, const std::vector<int32_t>& v);

  // `shape` is logical (outermost first; written to the file reversed, as GGUF ne[]).
  // `data` holds the stored bytes of `dtype` (blocks as GGUF stores them).
  Status add_tensor(const std::string& name, const Shape& shape, DType dtype, std::vector<uint8_t> data);

  // The whole file in memory, or written to `path` (streamed, tensor by tensor).
  Result<std::vector<uint8_t>> bytes() const;
  Status write(const std::string& path) const;

 private:
  struct PendingTensor {
    std::string name;
    Shape shape;
    uint32_t type = 0;
    std::vector<uint8_t> data;
  };
  void put(const std::string& key, Value v);
  std::vector<uint8_t> header() const;  // magic .. tensor infos, padded to the alignment

  int64_t alignment_;
  std::vector<std::pair<std::string, Value>> kv_;
  std::vector<PendingTensor> tensors_;
};

}  // namespace tessera::gguf
