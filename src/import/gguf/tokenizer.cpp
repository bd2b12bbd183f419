// SentencePiece (spm) tokenizer: bigram merging by score with byte fallback.
#include "import/gguf/tokenizer.h"

#include <cstdio>
#include <map>
#include <queue>

namespace tessera::gguf {

namespace {

constexpr const char* kSpace = "\xe2\x96\x81";  // U+2581 LOWER ONE EIGHTH BLOCK, SentencePiece's space

// Bytes in the UTF-8 sequence that starts with `lead` (1 for continuation or invalid bytes).
size_t utf8_len(uint8_t lead) {
  static constexpr size_t kLen[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLen[lead >> 4];
}

std::string replace_all(const std::string& s, const std::string& from, const std::string& to) {
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    if (s.compare(i, from.size(), from) == 0) {
      out += to;
      i += from.size();
    } else {
      out += s[i++];
    }
  }
  return out;
}

// One piece of the text during merging: [offset, offset+len) in the escaped text, linked
// to its neighbours; len == 0 once merged into its left neighbour.
struct Symbol {
  size_t offset = 0;
  size_t len = 0;
  int prev = -1;
  int next = -1;
};

struct Bigram {
  int left = 0;
  int right = 0;
  float score = 0;
  size_t len = 0;
};
// Highest score first; on ties the leftmost pair.
struct BigramOrder {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

}  // namespace

Result<Tokenizer> Tokenizer::from_gguf(const File& f) {
  Tokenizer t;
  TS_ASSIGN_OR_RETURN(std::string model, f.get_string("tokenizer.ggml.model"));
  if (model != "llama")
    return error(StatusCode::unsupported, f.what(), ": tokenizer model '", model,
                 "' is not supported (only the SentencePiece 'llama' tokenizer is)");
  const Value* toks = f.find("tokenizer.ggml.tokens");
  if (!toks || toks->type != ValueType::array || toks->elem_type != ValueType::string || toks->arr.empty())
    return error(StatusCode::invalid_argument, f.what(), ": tokenizer.ggml.tokens must be a non-empty string array");
  const size_t n = toks->arr.size();
  if (n > static_cast<size_t>(INT32_MAX))
    return error(StatusCode::invalid_argument, f.what(), ": vocabulary of ", n, " tokens is too large");
  t.tokens_.reserve(n);
  for (const Value& v : toks->arr) t.tokens_.push_back(v.s);
  t.scores_.assign(n, 0.0f);
  if (const Value* s = f.find("tokenizer.ggml.scores")) {
    if (s->type != ValueType::array || s->arr.size() != n)
      return error(StatusCode::invalid_argument, f.what(), ": tokenizer.ggml.scores must have one entry per token (",
                   n, ")");
    for (size_t i = 0; i < n; ++i) {
      auto x = s->arr[i].as_float();
      if (!x) return error(StatusCode::invalid_argument, f.what(), ": tokenizer.ggml.scores holds non-numbers");
      t.scores_[i] = static_cast<float>(*x);
    }
  }
  t.types_.assign(n, TokenType::normal);
  if (const Value* ty = f.find("tokenizer.ggml.token_type")) {
    if (ty->type != ValueType::array || ty->arr.size() != n)
      return error(StatusCode::invalid_argument, f.what(),
                   ": tokenizer.ggml.token_type must have one entry per token (", n, ")");
    for (size_t i = 0; i < n; ++i) {
      auto x = ty->arr[i].as_int();
      if (!x || *x < 0 || *x > static_cast<int64_t>(TokenType::byte))
        return error(StatusCode::invalid_argument, f.what(), ": token ", i, " has an invalid token_type");
      t.types_[i] = static_cast<TokenType>(*x);
    }
  }
  for (size_t i = 0; i < n; ++i) t.ids_[t.tokens_[i]] = static_cast<int32_t>(i);
  auto id_of = [&](const char* key, int32_t fallback) -> Result<int32_t> {
    int64_t v = f.get_int_or(key, fallback);
    if (v < 0 || v >= static_cast<int64_t>(n))
      return error(StatusCode::invalid_argument, f.what(), ": ", key, " = ", v, " is outside the vocabulary of ", n);
    return static_cast<int32_t>(v);
  };
  // Defaults from llama.cpp's llama vocabulary: <unk> 0, <s> 1, </s> 2.
  TS_ASSIGN_OR_RETURN(t.bos_, id_of("tokenizer.ggml.bos_token_id", 1));
  TS_ASSIGN_OR_RETURN(t.eos_, id_of("tokenizer.ggml.eos_token_id", 2));
  TS_ASSIGN_OR_RETURN(t.unk_, id_of("tokenizer.ggml.unknown_token_id", 0));
  t.add_bos_ = f.get_int_or("tokenizer.ggml.add_bos_token", 1) != 0;
  t.add_space_prefix_ = f.get_int_or("tokenizer.ggml.add_space_prefix", 1) != 0;
  return t;
}

int32_t Tokenizer::byte_token(uint8_t b) const {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "<0x%02X>", b);
  if (auto it = ids_.find(buf); it != ids_.end()) return it->second;
  if (auto it = ids_.find(std::string(1, static_cast<char>(b))); it != ids_.end()) return it->second;
  return unk_;
}

std::vector<int32_t> Tokenizer::encode(const std::string& raw, bool add_bos) const {
  std::vector<int32_t> out;
  if (add_bos) out.push_back(bos_);
  if (raw.empty()) return out;
  const std::string text = replace_all((add_space_prefix_ ? " " : "") + raw, " ", kSpace);

  std::vector<Symbol> symbols;
  for (size_t off = 0; off < text.size();) {
    Symbol s;
    s.offset = off;
    s.len = std::min(utf8_len(static_cast<uint8_t>(text[off])), text.size() - off);
    off += s.len;
    s.prev = static_cast<int>(symbols.size()) - 1;
    s.next = off == text.size() ? -1 : static_cast<int>(symbols.size()) + 1;
    symbols.push_back(s);
  }

  std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue;
  std::map<std::string, std::pair<int, int>> merged_from;  // merged text -> the pair it came from
  auto try_pair = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    std::string s = text.substr(symbols[left].offset, symbols[left].len + symbols[right].len);
    auto it = ids_.find(s);
    if (it == ids_.end()) return;
    queue.push({left, right, scores_[it->second], s.size()});
    merged_from[s] = {left, right};
  };
  for (size_t i = 1; i < symbols.size(); ++i) try_pair(static_cast<int>(i) - 1, static_cast<int>(i));
  while (!queue.empty()) {
    Bigram b = queue.top();
    queue.pop();
    Symbol& l = symbols[b.left];
    Symbol& r = symbols[b.right];
    if (l.len == 0 || r.len == 0 || l.len + r.len != b.len) continue;  // stale: a side merged since
    l.len += r.len;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) symbols[r.next].prev = b.left;
    try_pair(l.prev, b.left);
    try_pair(b.left, l.next);
  }

  // A piece that is a token is emitted; one built by merges that is not (possible only
  // with duplicate texts) is split back; anything else falls back to byte tokens.
  auto emit = [&](auto&& self, const Symbol& s) -> void {
    std::string piece = text.substr(s.offset, s.len);
    if (auto it = ids_.find(piece); it != ids_.end()) {
      out.push_back(it->second);
      return;
    }
    if (auto m = merged_from.find(piece); m != merged_from.end()) {
      self(self, symbols[m->second.first]);
      self(self, symbols[m->second.second]);
      return;
    }
    for (char c : piece) out.push_back(byte_token(static_cast<uint8_t>(c)));
  };
  for (int i = 0; i != -1; i = symbols[i].next) emit(emit, symbols[i]);
  return out;
}

std::string Tokenizer::piece(int32_t id) const {
  if (id < 0 || id >= vocab_size()) return {};
  const std::string& s = tokens_[id];
  switch (types_[id]) {
    case TokenType::control:
    case TokenType::unused:
      return {};
    case TokenType::byte: {
      unsigned v = 0;
      if (s.size() == 6 && std::sscanf(s.c_str(), "<0x%02X>", &v) == 1) return std::string(1, static_cast<char>(v));
      return s;
    }
    default:
      return replace_all(s, kSpace, " ");
  }
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string out;
  for (int32_t id : ids) out += piece(id);
  if (add_space_prefix_ && !out.empty() && out[0] == ' ') out.erase(0, 1);
  return out;
}

}  // namespace tessera::gguf
