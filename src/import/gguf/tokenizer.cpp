// SentencePiece (spm) tokenizer: bigram merging by score with byte fallback; byte-level
// BPE through pretokenize.h and bpe.h; special tokens cut out of the text first.
#include "import/gguf/tokenizer.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <queue>

#include "import/gguf/unicode.h"

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
  if (model == "gpt2" || model == "gemma4") {
    t.model_ = Model::bpe;
    std::string pre = "gemma4";  // a gemma4 vocabulary's pre-tokenizer, whatever the key says
    if (model == "gpt2") {
      auto pre_value = f.get_string("tokenizer.ggml.pre");
      pre = pre_value.ok() ? *pre_value : "(absent)";
    }
    auto p = pre_tokenizer_from_name(pre);
    if (!p)
      return error(StatusCode::unsupported, f.what(), ": tokenizer.ggml.pre = '", pre,
                   "' is not a supported pre-tokenizer (supported: ", pre_tokenizer_names(), ")");
    t.pre_ = *p;
    t.ignore_merges_ = *p == PreTokenizer::llama3;
    t.byte_encode_ = *p != PreTokenizer::gemma4;
    t.escape_spaces_ = *p == PreTokenizer::gemma4;
    TS_RETURN_IF_ERROR(t.merges_.load(f));
  } else if (model != "llama") {
    return error(StatusCode::unsupported, f.what(), ": tokenizer.ggml.model = '", model,
                 "' is not supported (supported: 'llama' (SentencePiece), 'gpt2' (byte-level BPE), "
                 "'gemma4' (BPE over SentencePiece-style text))");
  }
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
  t.ids_.reserve(n);
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
  // Defaults as llama.cpp's: spm adds BOS and a space prefix; bpe adds BOS for llama-bpe only.
  const bool bpe = t.model_ == Model::bpe;
  t.add_bos_ = f.get_int_or("tokenizer.ggml.add_bos_token", !bpe || t.ignore_merges_) != 0;
  if (t.pre_ == PreTokenizer::gemma4 && bpe) t.add_bos_ = true;  // Gemma 4 always starts with BOS
  t.add_space_prefix_ = f.get_int_or("tokenizer.ggml.add_space_prefix", !bpe) != 0;
  for (size_t i = 0; i < n; ++i)
    if ((t.types_[i] == TokenType::control || t.types_[i] == TokenType::user_defined) && !t.tokens_[i].empty())
      t.specials_.push_back(static_cast<int32_t>(i));
  std::stable_sort(t.specials_.begin(), t.specials_.end(),
                   [&](int32_t a, int32_t b) { return t.tokens_[a].size() > t.tokens_[b].size(); });
  return t;
}

int32_t Tokenizer::find(const std::string& text) const {
  auto it = ids_.find(text);
  return it == ids_.end() ? -1 : it->second;
}

int32_t Tokenizer::byte_token(uint8_t b) const {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "<0x%02X>", b);
  if (auto it = ids_.find(buf); it != ids_.end()) return it->second;
  if (auto it = ids_.find(std::string(1, static_cast<char>(b))); it != ids_.end()) return it->second;
  return unk_;
}

namespace {
// A run of the text: plain text [begin, end), or a special token.
struct Fragment {
  size_t begin = 0, end = 0;
  int32_t token = -1;  // >= 0: a special token
};
}  // namespace

std::vector<int32_t> Tokenizer::encode(const std::string& raw, bool add_bos, bool parse_special) const {
  std::vector<int32_t> out;
  if (add_bos) out.push_back(bos_);
  // Cut the special tokens out of the text, longest first, each in the remaining plain runs.
  std::vector<Fragment> frags{{0, raw.size(), -1}};
  for (int32_t id : specials_) {
    if (types_[id] == TokenType::control && !parse_special) continue;
    const std::string& tok = tokens_[id];
    std::vector<Fragment> next;
    for (const Fragment& f : frags) {
      if (f.token >= 0) {
        next.push_back(f);
        continue;
      }
      size_t at = f.begin;
      for (size_t k; (k = raw.find(tok, at)) != std::string::npos && k + tok.size() <= f.end; at = k + tok.size()) {
        if (k > at) next.push_back({at, k, -1});
        next.push_back({k, k + tok.size(), id});
      }
      if (at < f.end) next.push_back({at, f.end, -1});
    }
    frags = std::move(next);
  }
  bool after_special = true;  // spm: a space is prefixed to text at the start and after a special token
  for (const Fragment& f : frags) {
    if (f.token >= 0) {
      out.push_back(f.token);
      after_special = true;
      continue;
    }
    const std::string text = raw.substr(f.begin, f.end - f.begin);
    if (model_ == Model::bpe) encode_bpe(text, out);
    else encode_spm(text, after_special && add_space_prefix_, out);
    after_special = false;
  }
  return out;
}

void Tokenizer::encode_bpe(const std::string& raw, std::vector<int32_t>& out) const {
  const std::string text = escape_spaces_ ? replace_all(raw, " ", kSpace) : raw;
  for (const std::string& word : pre_tokenize(pre_, text)) {
    const std::string mapped = byte_encode_ ? bpe_map_bytes(word) : word;
    // llama-bpe: a word that is a token; gemma4: a run of newlines that is a token.
    if (ignore_merges_ || (pre_ == PreTokenizer::gemma4 && word.find_first_not_of('\n') == std::string::npos)) {
      if (auto it = ids_.find(mapped); it != ids_.end()) {
        out.push_back(it->second);
        continue;
      }
    }
    for (const std::string& piece : merges_.merge(mapped)) {
      if (auto it = ids_.find(piece); it != ids_.end()) {
        out.push_back(it->second);
        continue;
      }
      // Not a token (a vocabulary whose merges make texts it lacks).
      if (!byte_encode_) {  // its bytes' <0xXX> tokens, a byte without one dropped
        for (char c : piece) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "<0x%02X>", static_cast<uint8_t>(c));
          if (auto b = ids_.find(buf); b != ids_.end()) out.push_back(b->second);
        }
        continue;
      }
      for (const Utf8Char& c : utf8_chars(piece)) {  // its characters
        auto ch = ids_.find(piece.substr(c.offset, c.len));
        out.push_back(ch != ids_.end() ? ch->second : unk_);
      }
    }
  }
}

void Tokenizer::encode_spm(const std::string& raw, bool prefix_space, std::vector<int32_t>& out) const {
  if (raw.empty()) return;
  const std::string text = replace_all((prefix_space ? " " : "") + raw, " ", kSpace);

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
}

std::string Tokenizer::piece(int32_t id) const {
  if (id < 0 || id >= vocab_size()) return {};
  const std::string& s = tokens_[id];
  switch (types_[id]) {
    case TokenType::control:
    case TokenType::unused:
      return {};
    case TokenType::user_defined: return s;
    case TokenType::byte: {
      unsigned v = 0;
      if (s.size() == 6 && std::sscanf(s.c_str(), "<0x%02X>", &v) == 1) return std::string(1, static_cast<char>(v));
      return s;
    }
    default:
      return byte_level() ? bpe_unmap(s) : replace_all(s, kSpace, " ");
  }
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string out;
  for (int32_t id : ids) out += piece(id);
  if (add_space_prefix_ && !out.empty() && out[0] == ' ') out.erase(0, 1);
  return out;
}

}  // namespace tessera::gguf
