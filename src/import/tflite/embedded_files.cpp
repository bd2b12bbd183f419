// The zip archive appended to a .tflite model (embedded_files.h). Field offsets are those
// of the zip format's end-of-central-directory record, central directory headers and
// local file headers (little-endian). Every offset and length read from the file is
// checked against the bytes before use.
#include "import/tflite/embedded_files.h"

#include <algorithm>
#include <cctype>
#include <map>

namespace tessera::tflite {

namespace {

constexpr uint32_t kEndOfDirectory = 0x06054b50, kDirectoryEntry = 0x02014b50, kLocalHeader = 0x04034b50;
constexpr size_t kEndSize = 22, kEntrySize = 46, kLocalSize = 30;
constexpr size_t kMaxComment = 0xFFFF;

uint32_t u16(const uint8_t* p) { return uint32_t{p[0]} | uint32_t{p[1]} << 8; }
uint32_t u32(const uint8_t* p) { return u16(p) | u16(p + 2) << 16; }

// [off, off + len) lies inside [0, size), without overflow.
bool inside(size_t off, size_t len, size_t size) { return off <= size && len <= size - off; }

}  // namespace

Result<std::vector<uint8_t>> embedded_archive_moved(const uint8_t* data, size_t size, size_t position) {
  std::vector<uint8_t> out;
  if (!data || size < kEndSize) return out;
  const size_t lowest = size - kEndSize >= kMaxComment ? size - kEndSize - kMaxComment : 0;
  for (size_t p = size - kEndSize + 1; p-- > lowest;) {
    if (u32(data + p) != kEndOfDirectory || p + kEndSize + u16(data + p + 20) != size) continue;
    const size_t entries = u16(data + p + 10), dir_size = u32(data + p + 12), dir_offset = u32(data + p + 16);
    if (dir_size > p || dir_offset > p - dir_size)
      return error(StatusCode::invalid_argument, "embedded archive: its directory (", dir_size, " bytes at offset ", dir_offset,
                   ") does not fit before its end record");
    const size_t dir = p - dir_size, base = dir - dir_offset;
    // The archive's first byte: its lowest local header (or the directory, if it lists none).
    size_t first = dir;
    for (size_t q = dir, i = 0; i < entries; ++i) {
      if (!inside(q, kEntrySize, p) || u32(data + q) != kDirectoryEntry)
        return error(StatusCode::invalid_argument, "embedded archive: directory entry ", i, " at byte ", q, " is not an entry");
      const size_t local = u32(data + q + 42);
      if (local > dir - base) return error(StatusCode::invalid_argument, "embedded archive: entry ", i, " starts past the directory");
      first = std::min(first, base + local);
      q += kEntrySize + u16(data + q + 28) + u16(data + q + 30) + u16(data + q + 32);
    }
    // Offsets recorded from the new file's start: old absolute position - first + position.
    if (position > size_t{0xFFFFFFFF} - (size - first))
      return error(StatusCode::invalid_argument, "embedded archive: moved to byte ", position, ", past 4 GiB");
    out.assign(data + first, data + size);
    const auto put32 = [&](size_t at, size_t v) {
      for (int k = 0; k < 4; ++k) out[at + k] = static_cast<uint8_t>(v >> (8 * k));
    };
    for (size_t q = dir, i = 0; i < entries; ++i) {
      put32(q - first + 42, base + u32(data + q + 42) - first + position);
      q += kEntrySize + u16(data + q + 28) + u16(data + q + 30) + u16(data + q + 32);
    }
    put32(p - first + 16, dir - first + position);
    return out;
  }
  return out;
}

Result<std::vector<EmbeddedFile>> embedded_files(const uint8_t* data, size_t size) {
  std::vector<EmbeddedFile> files;
  if (!data || size < kEndSize) return files;
  // The end record: its signature within the last 22 + 65535 bytes (the comment's limit),
  // with a comment length that reaches the end of the bytes exactly.
  size_t end = size;
  bool found = false;
  const size_t lowest = size - kEndSize >= kMaxComment ? size - kEndSize - kMaxComment : 0;
  for (size_t p = size - kEndSize + 1; p-- > lowest;) {
    if (u32(data + p) == kEndOfDirectory && p + kEndSize + u16(data + p + 20) == size) {
      end = p;
      found = true;
      break;
    }
  }
  if (!found) return files;
  const uint8_t* e = data + end;
  const size_t entries = u16(e + 10), dir_size = u32(e + 12), dir_offset = u32(e + 16);
  if (dir_size > end) return error(StatusCode::invalid_argument, "embedded archive: its directory (", dir_size, " bytes) starts before the file");
  const size_t dir = end - dir_size;
  // A zip appended to other bytes records offsets from its own start: the directory's real
  // position less the recorded one is where the archive starts.
  if (dir_offset > dir)
    return error(StatusCode::invalid_argument, "embedded archive: directory offset ", dir_offset, " is past its position ", dir);
  const size_t base = dir - dir_offset;
  size_t p = dir;
  for (size_t i = 0; i < entries; ++i) {
    if (!inside(p, kEntrySize, end) || u32(data + p) != kDirectoryEntry)
      return error(StatusCode::invalid_argument, "embedded archive: directory entry ", i, " at byte ", p, " is not an entry");
    const uint8_t* h = data + p;
    const uint32_t method = u16(h + 10);
    const size_t packed = u32(h + 20), unpacked = u32(h + 24);
    const size_t name_len = u16(h + 28), extra_len = u16(h + 30), comment_len = u16(h + 32);
    const size_t local = u32(h + 42);
    if (!inside(p + kEntrySize, name_len + extra_len + comment_len, end))
      return error(StatusCode::invalid_argument, "embedded archive: directory entry ", i, " runs past the directory");
    std::string name(reinterpret_cast<const char*>(h + kEntrySize), name_len);
    p += kEntrySize + name_len + extra_len + comment_len;
    if (method != 0 || packed != unpacked || unpacked > kMaxEmbeddedFileBytes || files.size() >= kMaxEmbeddedFiles)
      continue;  // compressed, or more than is kept
    if (local > dir - base || !inside(base + local, kLocalSize, dir) || u32(data + base + local) != kLocalHeader)
      return error(StatusCode::invalid_argument, "embedded archive: '", name, "' has no local header at byte ", base + local);
    const uint8_t* l = data + base + local;
    const size_t start = base + local + kLocalSize + u16(l + 26) + u16(l + 28);
    if (!inside(start, unpacked, dir))
      return error(StatusCode::invalid_argument, "embedded archive: '", name, "' (", unpacked, " bytes) runs past the archive");
    files.push_back(EmbeddedFile{std::move(name), std::string_view(reinterpret_cast<const char*>(data + start), unpacked)});
  }
  return files;
}

namespace {

// A quoted Python string at text[i] ('...' or "...", backslash escapes the next
// character); i moves past it. False when not a string or not closed.
bool python_string(std::string_view t, size_t& i, std::string& out) {
  if (i >= t.size() || (t[i] != '\'' && t[i] != '"')) return false;
  const char q = t[i++];
  out.clear();
  while (i < t.size() && t[i] != q) {
    if (t[i] == '\\' && i + 1 < t.size()) ++i;
    out += t[i++];
  }
  if (i >= t.size()) return false;
  ++i;
  return true;
}

void skip_space(std::string_view t, size_t& i) {
  while (i < t.size() && std::isspace(static_cast<unsigned char>(t[i]))) ++i;
}

}  // namespace

std::vector<std::string> ultralytics_names(std::string_view t) {
  const size_t key = t.find("'names':");
  if (key == std::string::npos) return {};
  size_t i = key + 8;
  skip_space(t, i);
  if (i >= t.size() || t[i] != '{') return {};
  ++i;
  std::map<int64_t, std::string> names;
  constexpr int64_t kMaxClasses = 100000;
  for (;;) {
    skip_space(t, i);
    if (i < t.size() && t[i] == '}') break;
    int64_t id = 0;
    size_t digits = 0;
    while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i])) && id <= kMaxClasses) id = id * 10 + (t[i++] - '0'), ++digits;
    if (digits == 0 || id >= kMaxClasses) return {};
    skip_space(t, i);
    if (i >= t.size() || t[i] != ':') return {};
    ++i;
    skip_space(t, i);
    std::string name;
    if (!python_string(t, i, name) || !names.emplace(id, std::move(name)).second) return {};
    skip_space(t, i);
    if (i < t.size() && t[i] == ',') ++i;
  }
  std::vector<std::string> out;
  for (auto& [id, name] : names) {
    if (id != static_cast<int64_t>(out.size())) return {};  // a gap
    out.push_back(std::move(name));
  }
  return out;
}

std::vector<std::string> embedded_class_names(const std::vector<EmbeddedFile>& files, std::string* source) {
  for (const EmbeddedFile& f : files) {
    std::vector<std::string> names = ultralytics_names(f.bytes);
    if (!names.empty()) {
      if (source) *source = f.name;
      return names;
    }
  }
  for (const EmbeddedFile& f : files) {
    const std::string& n = f.name;
    if (n.size() < 4 || n.compare(n.size() - 4, 4, ".txt") != 0) continue;
    if (f.bytes.find('\0') != std::string_view::npos) continue;  // not text
    if (!f.bytes.empty() && f.bytes[0] == '{') continue;  // a metadata dict, not a list of names
    std::vector<std::string> lines;
    std::string line;
    for (char c : f.bytes) {
      if (c == '\n') {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        lines.push_back(std::move(line));
        line.clear();
      } else {
        line += c;
      }
    }
    if (!line.empty()) lines.push_back(std::move(line));
    while (!lines.empty() && lines.back().empty()) lines.pop_back();
    if (lines.empty()) continue;
    if (source) *source = f.name;
    return lines;
  }
  return {};
}

}  // namespace tessera::tflite
