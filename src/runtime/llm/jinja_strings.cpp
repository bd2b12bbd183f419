#include "runtime/llm/jinja_strings.h"

#include <algorithm>
#include <cstdint>

#include "runtime/llm/jinja_value.h"

namespace tessera::llm::jinja::str {

namespace {

uint32_t decode(std::string_view cp) {
  const auto b = [&](size_t k) { return static_cast<uint32_t>(static_cast<unsigned char>(cp[k])); };
  if (cp.empty()) return 0;
  if (cp.size() == 1) return b(0);
  if (cp.size() == 2) return ((b(0) & 0x1F) << 6) | (b(1) & 0x3F);
  if (cp.size() == 3) return ((b(0) & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F);
  return ((b(0) & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
}

std::string encode(uint32_t c) {
  std::string out;
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
  return out;
}

// Case mapping for ASCII, Latin-1, Greek and basic Cyrillic; other letters are unchanged.
uint32_t to_upper(uint32_t c) {
  if (c >= 'a' && c <= 'z') return c - 32;
  if ((c >= 0xE0 && c <= 0xFE && c != 0xF7) || (c >= 0x3B1 && c <= 0x3C9 && c != 0x3C2) || (c >= 0x430 && c <= 0x44F))
    return c - 32;
  if (c >= 0x450 && c <= 0x45F) return c - 80;
  return c;
}
uint32_t to_lower(uint32_t c) {
  if (c >= 'A' && c <= 'Z') return c + 32;
  if ((c >= 0xC0 && c <= 0xDE && c != 0xD7) || (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) || (c >= 0x410 && c <= 0x42F))
    return c + 32;
  if (c >= 0x400 && c <= 0x40F) return c + 80;
  return c;
}

template <typename F>
std::string map_cps(std::string_view s, F f) {
  std::string out;
  for (const auto& cp : code_points(s)) out += cp.size() == 1 && f(decode(cp)) == decode(cp) ? cp : encode(f(decode(cp)));
  return out;
}

}  // namespace

bool is_space(std::string_view cp) {
  const uint32_t c = decode(cp);
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

std::string strip(std::string_view s, const std::string* chars, bool left, bool right) {
  const std::vector<std::string> cps = code_points(s);
  std::vector<std::string> set;
  if (chars) set = code_points(*chars);
  auto strippable = [&](const std::string& cp) {
    return chars ? std::find(set.begin(), set.end(), cp) != set.end() : is_space(cp);
  };
  size_t b = 0, e = cps.size();
  if (left)
    while (b < e && strippable(cps[b])) ++b;
  if (right)
    while (e > b && strippable(cps[e - 1])) --e;
  std::string out;
  for (size_t k = b; k < e; ++k) out += cps[k];
  return out;
}

std::vector<std::string> split(std::string_view s, const std::string* sep, int64_t maxsplit) {
  std::vector<std::string> out;
  if (sep) {
    if (sep->empty()) fail("empty separator");
    size_t start = 0;
    for (;;) {
      const size_t at = (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) ? s.find(*sep, start) : std::string::npos;
      if (at == std::string_view::npos) {
        out.emplace_back(s.substr(start));
        return out;
      }
      out.emplace_back(s.substr(start, at - start));
      start = at + sep->size();
    }
  }
  const std::vector<std::string> cps = code_points(s);
  size_t k = 0;
  while (k < cps.size()) {
    while (k < cps.size() && is_space(cps[k])) ++k;
    if (k == cps.size()) break;
    std::string word;
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
      // The rest, with trailing whitespace kept stripped as Python does.
      for (; k < cps.size(); ++k) word += cps[k];
      out.push_back(strip(word, nullptr, false, true));
      break;
    }
    while (k < cps.size() && !is_space(cps[k])) word += cps[k++];
    out.push_back(std::move(word));
  }
  return out;
}

std::vector<std::string> rsplit(std::string_view s, const std::string* sep, int64_t maxsplit) {
  if (!sep || maxsplit < 0) return split(s, sep, maxsplit);
  if (sep->empty()) fail("empty separator");
  std::vector<std::string> out;
  size_t end = s.size();
  while (static_cast<int64_t>(out.size()) < maxsplit) {
    const size_t at = end >= sep->size() ? s.rfind(*sep, end - sep->size()) : std::string_view::npos;
    if (at == std::string_view::npos) break;
    out.emplace_back(s.substr(at + sep->size(), end - at - sep->size()));
    end = at;
  }
  out.emplace_back(s.substr(0, end));
  std::reverse(out.begin(), out.end());
  return out;
}

std::string replace(std::string_view s, std::string_view from, std::string_view to, int64_t count) {
  std::string out;
  if (from.empty()) {
    // Python inserts `to` between code points (and at both ends).
    int64_t n = 0;
    const auto cps = code_points(s);
    for (const auto& cp : cps) {
      if (count < 0 || n++ < count) out += to;
      out += cp;
    }
    if (count < 0 || n < count) out += to;
    return out;
  }
  size_t start = 0;
  int64_t n = 0;
  for (;;) {
    const size_t at = (count < 0 || n < count) ? s.find(from, start) : std::string_view::npos;
    if (at == std::string_view::npos) break;
    out.append(s.substr(start, at - start));
    out.append(to);
    start = at + from.size();
    ++n;
  }
  out.append(s.substr(start));
  return out;
}

std::string upper(std::string_view s) { return map_cps(s, to_upper); }
std::string lower(std::string_view s) { return map_cps(s, to_lower); }

std::string capitalize(std::string_view s) {
  const auto cps = code_points(s);
  std::string out;
  for (size_t k = 0; k < cps.size(); ++k) out += k == 0 ? upper(cps[k]) : lower(cps[k]);
  return out;
}

std::string title(std::string_view s) {
  // jinja2 splits at runs of whitespace and -({[< and capitalizes each piece.
  const auto cps = code_points(s);
  std::string out;
  bool start = true;
  for (const auto& cp : cps) {
    const bool sep = is_space(cp) || cp == "-" || cp == "(" || cp == "{" || cp == "[" || cp == "<";
    if (sep) {
      out += cp;
      start = true;
    } else {
      out += start ? upper(cp) : lower(cp);
      start = false;
    }
  }
  return out;
}

std::vector<std::string> splitlines(std::string_view s) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t k = 0; k < s.size(); ++k) {
    if (s[k] == '\n' || s[k] == '\r') {
      out.emplace_back(s.substr(start, k - start));
      if (s[k] == '\r' && k + 1 < s.size() && s[k + 1] == '\n') ++k;
      start = k + 1;
    }
  }
  if (start < s.size()) out.emplace_back(s.substr(start));
  return out;
}

}  // namespace tessera::llm::jinja::str
