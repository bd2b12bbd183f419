// UTF-8 decoding and code point classes (see unicode.h).
#include "import/gguf/unicode.h"

#include <algorithm>
#include <iterator>

namespace tessera::gguf {

namespace {

struct ClassRange {
  uint32_t first, last;
  CharClass cls;
};
constexpr CharClass kL = CharClass::letter;
constexpr CharClass kN = CharClass::number;
constexpr CharClass kP = CharClass::punctuation;
constexpr ClassRange kRanges[] = {
#include "import/gguf/unicode_classes_table.inc"
};

// The Unicode White_Space property (PropList.txt): what \s matches.
bool is_white_space(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
         cp == 0x3000;
}

}  // namespace

CharClass char_class(uint32_t cp) {
  if (is_white_space(cp)) return CharClass::whitespace;
  // The last range whose first code point is <= cp.
  auto it = std::upper_bound(std::begin(kRanges), std::end(kRanges), cp,
                             [](uint32_t c, const ClassRange& r) { return c < r.first; });
  if (it == std::begin(kRanges)) return CharClass::other;
  --it;
  return cp <= it->last ? it->cls : CharClass::other;
}

std::vector<Utf8Char> utf8_chars(const std::string& s) {
  std::vector<Utf8Char> out;
  out.reserve(s.size());
  const auto* b = reinterpret_cast<const uint8_t*>(s.data());
  const size_t n = s.size();
  for (size_t i = 0; i < n;) {
    const uint8_t lead = b[i];
    uint32_t len = lead < 0x80 ? 1 : (lead >> 5) == 6 ? 2 : (lead >> 4) == 14 ? 3 : (lead >> 3) == 30 ? 4 : 0;
    uint32_t cp = len == 1 ? lead : len == 2 ? (lead & 0x1F) : len == 3 ? (lead & 0x0F) : (lead & 0x07);
    bool ok = len > 0 && i + len <= n;
    for (uint32_t k = 1; ok && k < len; ++k) {
      ok = (b[i + k] & 0xC0) == 0x80;
      cp = (cp << 6) | (b[i + k] & 0x3F);
    }
    // Shortest form only, no surrogates, nothing past U+10FFFF.
    static constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (ok && (cp < kMin[len] || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)) ok = false;
    if (!ok) {
      out.push_back({0xFFFD, i, 1});
      ++i;
      continue;
    }
    out.push_back({cp, i, len});
    i += len;
  }
  return out;
}

std::string utf8_encode(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (cp >> 18));
    s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

}  // namespace tessera::gguf
