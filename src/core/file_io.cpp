#include "core/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

namespace tessera {

namespace {

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// Reads until `want` bytes are in `out` or the file ends; returns false on a read error.
// Grows `out` a chunk at a time, so that a short pipe never costs `want` bytes of memory.
bool read_up_to(int fd, std::vector<uint8_t>& out, size_t want) {
  constexpr size_t kChunk = size_t{1} << 20;
  size_t have = 0;
  while (have < want) {
    out.resize(have + std::min(kChunk, want - have));
    ssize_t n = ::read(fd, out.data() + have, out.size() - have);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) break;
    have += static_cast<size_t>(n);
  }
  out.resize(have);
  return true;
}

}  // namespace

Result<std::vector<uint8_t>> read_file_bounded(const std::string& path, int64_t max_bytes, const std::string& what) {
  Fd f;
  f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (f.fd < 0) return error(StatusCode::not_found, "cannot open ", what, " '", path, "': ", std::strerror(errno));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0)
    return error(StatusCode::io_error, "cannot stat ", what, " '", path, "': ", std::strerror(errno));
  if (S_ISDIR(st.st_mode)) return error(StatusCode::invalid_argument, what, " '", path, "' is a directory");
  std::vector<uint8_t> bytes;
  if (S_ISREG(st.st_mode)) {
    if (st.st_size > max_bytes)
      return error(StatusCode::out_of_memory, what, " '", path, "' has ", st.st_size, " bytes, more than the ",
                   max_bytes, " allowed");
    if (!read_up_to(f.fd, bytes, static_cast<size_t>(st.st_size)))
      return error(StatusCode::io_error, "cannot read ", what, " '", path, "': ", std::strerror(errno));
    if (static_cast<int64_t>(bytes.size()) != st.st_size)
      return error(StatusCode::io_error, what, " '", path, "' shrank while being read (", bytes.size(), " of ",
                   st.st_size, " bytes)");
    return bytes;
  }
  // A pipe or device: its size is unknown, so read one byte past the limit to detect more.
  if (!read_up_to(f.fd, bytes, static_cast<size_t>(max_bytes) + 1))
    return error(StatusCode::io_error, "cannot read ", what, " '", path, "': ", std::strerror(errno));
  if (static_cast<int64_t>(bytes.size()) > max_bytes)
    return error(StatusCode::out_of_memory, what, " '", path, "' holds more than the ", max_bytes, " bytes allowed");
  return bytes;
}

Result<std::vector<uint8_t>> read_file_exact(const std::string& path, int64_t bytes, const std::string& what) {
  auto r = read_file_bounded(path, bytes, what);
  if (!r.ok()) {
    if (r.status().code() != StatusCode::out_of_memory) return r.status();
    return error(StatusCode::invalid_argument, what, " '", path, "' is larger than the ", bytes, " bytes expected");
  }
  if (static_cast<int64_t>(r->size()) != bytes)
    return error(StatusCode::invalid_argument, what, " '", path, "' has ", r->size(), " bytes but needs ", bytes);
  return r;
}

}  // namespace tessera
