// Byte-level BPE pre-tokenizers (see pretokenize.h): each alternative of the expressions
// is a small matcher returning where its match would end, tried in the expression's order.
#include "import/gguf/pretokenize.h"

#include "import/gguf/unicode.h"

namespace tessera::gguf {

namespace {

// The characters of one text and their classes; positions past the end read as "none".
class Text {
 public:
  explicit Text(const std::string& s) : chars_(utf8_chars(s)) {
    cls_.reserve(chars_.size());
    for (const Utf8Char& c : chars_) cls_.push_back(char_class(c.cp));
  }
  size_t size() const { return chars_.size(); }
  uint32_t cp(size_t i) const { return i < chars_.size() ? chars_[i].cp : 0xFFFFFFFFu; }
  bool in(size_t i) const { return i < chars_.size(); }
  bool letter(size_t i) const { return in(i) && cls_[i] == CharClass::letter; }
  bool number(size_t i) const { return in(i) && cls_[i] == CharClass::number; }
  bool space(size_t i) const { return in(i) && cls_[i] == CharClass::whitespace; }
  bool other(size_t i) const { return in(i) && cls_[i] == CharClass::other; }  // [^\s\p{L}\p{N}]
  bool newline(size_t i) const { return cp(i) == '\r' || cp(i) == '\n'; }
  size_t byte_offset(size_t i) const { return i < chars_.size() ? chars_[i].offset : end_bytes(); }

 private:
  size_t end_bytes() const { return chars_.empty() ? 0 : chars_.back().offset + chars_.back().len; }
  std::vector<Utf8Char> chars_;
  std::vector<CharClass> cls_;
};


// Each matcher returns the end of its match starting at `p`, or `p` when it does not match.

// 's|'t|'re|'ve|'m|'ll|'d, optionally ignoring case.
size_t contraction(const Text& t, size_t p, bool ignore_case) {
  if (t.cp(p) != '\'') return p;
  auto at = [&](size_t i) { return ignore_case ? ascii_lower(t.cp(i)) : t.cp(i); };
  const uint32_t a = at(p + 1), b = at(p + 2);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return p + 2;
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return p + 3;
  return p;
}

// " ?X+" for a class test X: an optional space, then one or more characters of the class.
template <typename Is>
size_t space_then_run(const Text& t, size_t p, Is is) {
  size_t q = (t.cp(p) == ' ' && is(p + 1)) ? p + 1 : p;
  if (!is(q)) return p;
  while (is(q)) ++q;
  return q;
}

// [^\r\n\p{L}\p{N}]?\p{L}+
size_t prefixed_letters(const Text& t, size_t p) {
  size_t q = p;
  if (!t.letter(q) && t.in(q) && !t.newline(q) && !t.number(q) && t.letter(q + 1)) ++q;
  if (!t.letter(q)) return p;
  while (t.letter(q)) ++q;
  return q;
}

// \p{N}{1,max}
size_t numbers(const Text& t, size_t p, size_t max) {
  size_t q = p;
  while (q - p < max && t.number(q)) ++q;
  return q;
}

// " ?[^\s\p{L}\p{N}]+[\r\n]*"
size_t punctuation_newlines(const Text& t, size_t p) {
  size_t q = space_then_run(t, p, [&](size_t i) { return t.other(i); });
  if (q == p) return p;
  while (t.newline(q)) ++q;
  return q;
}

// End of the whitespace run that starts at p.
size_t space_run_end(const Text& t, size_t p) {
  size_t q = p;
  while (t.space(q)) ++q;
  return q;
}

// \s*[\r\n]+ : through the last \r or \n of the whitespace run.
size_t spaces_to_newline(const Text& t, size_t p) {
  const size_t e = space_run_end(t, p);
  for (size_t q = e; q > p; --q)
    if (t.newline(q - 1)) return q;
  return p;
}

// \s+(?!\S) : the run, less its last character when a non-space follows it.
size_t spaces_not_before_text(const Text& t, size_t p) {
  const size_t e = space_run_end(t, p);
  if (e == p) return p;
  if (!t.in(e)) return e;
  return e - 1 > p ? e - 1 : p;
}

// \s+
size_t spaces(const Text& t, size_t p) { return space_run_end(t, p); }

size_t match(PreTokenizer pre, const Text& t, size_t p) {
  size_t e;
  if (pre == PreTokenizer::gpt2) {
    if ((e = contraction(t, p, false)) != p) return e;
    if ((e = space_then_run(t, p, [&](size_t i) { return t.letter(i); })) != p) return e;
    if ((e = space_then_run(t, p, [&](size_t i) { return t.number(i); })) != p) return e;
    if ((e = space_then_run(t, p, [&](size_t i) { return t.other(i); })) != p) return e;
  } else {
    if ((e = contraction(t, p, true)) != p) return e;
    if ((e = prefixed_letters(t, p)) != p) return e;
    if ((e = numbers(t, p, pre == PreTokenizer::llama3 ? 3 : 1)) != p) return e;
    if ((e = punctuation_newlines(t, p)) != p) return e;
    if ((e = spaces_to_newline(t, p)) != p) return e;
  }
  if ((e = spaces_not_before_text(t, p)) != p) return e;
  if ((e = spaces(t, p)) != p) return e;
  return p + 1;  // no alternative matches: the character alone
}

}  // namespace

std::optional<PreTokenizer> pre_tokenizer_from_name(const std::string& name) {
  if (name == "gpt-2" || name == "gpt2") return PreTokenizer::gpt2;
  if (name == "llama-bpe" || name == "llama3" || name == "llama-v3") return PreTokenizer::llama3;
  if (name == "qwen2") return PreTokenizer::qwen2;
  return std::nullopt;
}

const char* pre_tokenizer_names() { return "gpt-2, llama-bpe (llama3, llama-v3), qwen2"; }

std::vector<std::string> pre_tokenize(PreTokenizer pre, const std::string& text) {
  const Text t(text);
  std::vector<std::string> words;
  for (size_t p = 0; p < t.size();) {
    const size_t e = match(pre, t, p);
    words.push_back(text.substr(t.byte_offset(p), t.byte_offset(e) - t.byte_offset(p)));
    p = e;
  }
  return words;
}

}  // namespace tessera::gguf
