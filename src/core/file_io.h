// Reading untrusted files with a bound: never more bytes than the caller allows, never a
// directory, never an endless device read into memory. Errors name the file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/status.h"

namespace tessera {

// The whole of `path`, at most `max_bytes` bytes. A regular file larger than that is
// refused from its size before reading; a pipe or character device (/dev/stdin, /dev/zero)
// is read up to max_bytes + 1 bytes and refused if there is more; a directory is refused.
// `what` names the file's role in errors ("model file", "input file").
Result<std::vector<uint8_t>> read_file_bounded(const std::string& path, int64_t max_bytes, const std::string& what);

// The whole of `path`, which must hold exactly `bytes` bytes (a raw tensor, for example).
Result<std::vector<uint8_t>> read_file_exact(const std::string& path, int64_t bytes, const std::string& what);

}  // namespace tessera
