// Byte-level BPE: byte mapping and merges (see bpe.h).
#include "import/gguf/bpe.h"

#include <algorithm>
#include <array>
#include <queue>

#include "import/gguf/unicode.h"

namespace tessera::gguf {

namespace {

// Bytes that stand for themselves in the mapping: printable Latin-1 without space and
// the soft hyphen.
bool maps_to_itself(int b) { return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); }

struct ByteMap {
  std::array<std::string, 256> to_char;       // byte -> mapped character (UTF-8)
  std::unordered_map<uint32_t, uint8_t> back;  // mapped code point -> byte
  ByteMap() {
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const uint32_t cp = maps_to_itself(b) ? static_cast<uint32_t>(b) : next++;
      to_char[b] = utf8_encode(cp);
      back[cp] = static_cast<uint8_t>(b);
    }
  }
};
const ByteMap& byte_map() {
  static const ByteMap m;
  return m;
}

struct Bigram {
  int left, right;
  int rank;
  std::string text;  // the merged text, to detect pairs changed since they were queued
};
// Earliest merge first; on ties the leftmost pair.
struct BigramOrder {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

}  // namespace

std::string bpe_map_bytes(const std::string& bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) out += byte_map().to_char[c];
  return out;
}

std::string bpe_unmap(const std::string& mapped) {
  std::string out;
  for (const Utf8Char& c : utf8_chars(mapped)) {
    auto it = byte_map().back.find(c.cp);
    if (it != byte_map().back.end() && c.cp != 0xFFFD) out += static_cast<char>(it->second);
    else out += mapped.substr(c.offset, c.len);
  }
  return out;
}

Status BpeMerges::load(const File& f) {
  const Value* m = f.find("tokenizer.ggml.merges");
  if (!m || m->type != ValueType::array || m->elem_type != ValueType::string)
    return error(StatusCode::invalid_argument, f.what(),
                 ": a byte-level BPE vocabulary needs tokenizer.ggml.merges (an array of strings)");
  ranks_.clear();
  ranks_.reserve(m->arr.size());
  for (size_t i = 0; i < m->arr.size(); ++i) {
    const std::string& s = m->arr[i].s;
    const size_t sp = s.find(' ', 1);
    if (sp == std::string::npos || sp + 1 >= s.size())
      return error(StatusCode::invalid_argument, f.what(), ": tokenizer.ggml.merges[", i, "] = '", s,
                   "' is not two pieces separated by a space");
    ranks_.emplace(s, static_cast<int>(std::min<size_t>(i, INT32_MAX)));  // the first of duplicates wins
  }
  return Status::Ok();
}

int BpeMerges::rank(const std::string& left, const std::string& right) const {
  auto it = ranks_.find(left + ' ' + right);
  return it == ranks_.end() ? -1 : it->second;
}

std::vector<std::string> BpeMerges::merge(const std::string& word) const {
  // Symbols: the word's characters, linked left to right; text empties once merged away.
  struct Symbol {
    std::string text;
    int prev, next;
  };
  std::vector<Symbol> sym;
  for (const Utf8Char& c : utf8_chars(word))
    sym.push_back({word.substr(c.offset, c.len), static_cast<int>(sym.size()) - 1, static_cast<int>(sym.size()) + 1});
  if (sym.empty()) return {};
  sym.back().next = -1;

  std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue;
  auto try_pair = [&](int l, int r) {
    if (l < 0 || r < 0) return;
    const int k = rank(sym[l].text, sym[r].text);
    if (k >= 0) queue.push({l, r, k, sym[l].text + sym[r].text});
  };
  for (int i = 0; i + 1 < static_cast<int>(sym.size()); ++i) try_pair(i, i + 1);
  while (!queue.empty()) {
    Bigram b = queue.top();
    queue.pop();
    Symbol &l = sym[b.left], &r = sym[b.right];
    // Stale when either side has merged with something else since it was queued.
    if (l.text.empty() || r.text.empty() || l.next != b.right || l.text + r.text != b.text) continue;
    l.text = std::move(b.text);
    r.text.clear();
    l.next = r.next;
    if (r.next >= 0) sym[r.next].prev = b.left;
    try_pair(l.prev, b.left);
    try_pair(b.left, l.next);
  }
  std::vector<std::string> pieces;
  for (int i = 0; i != -1; i = sym[i].next) pieces.push_back(std::move(sym[i].text));
  return pieces;
}

}  // namespace tessera::gguf
