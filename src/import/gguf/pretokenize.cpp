// BPE pre-tokenizers (see pretokenize.h): each expression is a small matcher returning
// where its match at a position would end, its alternatives tried in the expression's
// order; a pre-tokenizer is the list of its expressions, applied one after another.
#include "import/gguf/pretokenize.h"

#include <algorithm>
#include <iterator>

#include "import/gguf/unicode.h"

namespace tessera::gguf {

namespace {

constexpr uint32_t kNone = 0xFFFFFFFFu;  // the code point read outside a word

// The characters of one text and their classes.
class Text {
 public:
  explicit Text(const std::string& s) : chars_(utf8_chars(s)) {
    cls_.reserve(chars_.size());
    for (const Utf8Char& c : chars_) cls_.push_back(char_class(c.cp));
  }
  size_t size() const { return chars_.size(); }
  uint32_t cp(size_t i) const { return chars_[i].cp; }
  CharClass cls(size_t i) const { return cls_[i]; }
  size_t byte_offset(size_t i) const { return i < chars_.size() ? chars_[i].offset : end_bytes(); }

 private:
  size_t end_bytes() const { return chars_.empty() ? 0 : chars_.back().offset + chars_.back().len; }
  std::vector<Utf8Char> chars_;
  std::vector<CharClass> cls_;
};

// The word [begin, end) of a text that one expression splits; positions outside it read
// as no character (kNone, in no class).
class Word {
 public:
  Word(const Text& t, size_t begin, size_t end) : t_(t), begin_(begin), end_(end) {}
  size_t begin() const { return begin_; }
  bool in(size_t i) const { return i >= begin_ && i < end_; }
  uint32_t cp(size_t i) const { return in(i) ? t_.cp(i) : kNone; }
  bool is(size_t i, CharClass c) const { return in(i) && t_.cls(i) == c; }
  bool letter(size_t i) const { return is(i, CharClass::letter); }
  bool number(size_t i) const { return is(i, CharClass::number); }
  bool punct(size_t i) const { return is(i, CharClass::punctuation); }
  bool space(size_t i) const { return is(i, CharClass::whitespace); }
  // [^\s\p{L}\p{N}]
  bool other(size_t i) const { return in(i) && !letter(i) && !number(i) && !space(i); }
  bool newline(size_t i) const { return cp(i) == '\r' || cp(i) == '\n'; }
  // A character of a bracket list of code point ranges: never a white-space character.
  template <typename InList>
  bool listed(size_t i, InList in_list) const { return in(i) && !space(i) && in_list(t_.cp(i)); }

 private:
  const Text& t_;
  size_t begin_, end_;
};

// Each matcher returns the end of its match starting at `p`, or `p` when it does not match.
using Matcher = size_t (*)(const Word&, size_t);

// 's|'t|'re|'ve|'m|'ll|'d, optionally ignoring case.
size_t contraction(const Word& t, size_t p, bool ignore_case) {
  if (t.cp(p) != '\'') return p;
  auto at = [&](size_t i) { return ignore_case ? ascii_lower(t.cp(i)) : t.cp(i); };
  const uint32_t a = at(p + 1), b = at(p + 2);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return p + 2;
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return p + 3;
  return p;
}

// "S?X+" for class tests S and X (X false for every S character): an optional S
// character, then one or more characters of X.
template <typename Lead, typename Is>
size_t lead_then_run(const Word& t, size_t p, Lead lead, Is is) {
  size_t q = (lead(p) && is(p + 1)) ? p + 1 : p;
  if (!is(q)) return p;
  while (is(q)) ++q;
  return q;
}

// " ?X+"
template <typename Is>
size_t space_then_run(const Word& t, size_t p, Is is) {
  return lead_then_run(t, p, [&](size_t i) { return t.cp(i) == ' '; }, is);
}

// "\s?X+"
template <typename Is>
size_t white_then_run(const Word& t, size_t p, Is is) {
  return lead_then_run(t, p, [&](size_t i) { return t.space(i); }, is);
}

// "X+"
template <typename Is>
size_t run(const Word& t, size_t p, Is is) {
  (void)t;
  size_t q = p;
  while (is(q)) ++q;
  return q;
}

// [^\r\n\p{L}\p{N}]?\p{L}+
size_t prefixed_letters(const Word& t, size_t p) {
  size_t q = p;
  if (!t.letter(q) && t.in(q) && !t.newline(q) && !t.number(q) && t.letter(q + 1)) ++q;
  if (!t.letter(q)) return p;
  while (t.letter(q)) ++q;
  return q;
}

// \p{N}{1,max}
size_t numbers(const Word& t, size_t p, size_t max) {
  size_t q = p;
  while (q - p < max && t.number(q)) ++q;
  return q;
}

// " ?[^\s\p{L}\p{N}]+[\r\n]*"
size_t punctuation_newlines(const Word& t, size_t p) {
  size_t q = space_then_run(t, p, [&](size_t i) { return t.other(i); });
  if (q == p) return p;
  while (t.newline(q)) ++q;
  return q;
}

// \s*[\r\n]+ : through the last \r or \n of the whitespace run.
size_t spaces_to_newline(const Word& t, size_t p) {
  const size_t e = run(t, p, [&](size_t i) { return t.space(i); });
  for (size_t q = e; q > p; --q)
    if (t.newline(q - 1)) return q;
  return p;
}

// \s+(?!\S) : the run, less its last character when a non-space follows it.
size_t spaces_not_before_text(const Word& t, size_t p) {
  const size_t e = run(t, p, [&](size_t i) { return t.space(i); });
  if (e == p) return p;
  if (!t.in(e)) return e;
  return e - 1 > p ? e - 1 : p;
}

// \s+
size_t spaces(const Word& t, size_t p) { return run(t, p, [&](size_t i) { return t.space(i); }); }

// gpt-2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
size_t gpt2(const Word& t, size_t p) {
  size_t e;
  if ((e = contraction(t, p, false)) != p) return e;
  if ((e = space_then_run(t, p, [&](size_t i) { return t.letter(i); })) != p) return e;
  if ((e = space_then_run(t, p, [&](size_t i) { return t.number(i); })) != p) return e;
  if ((e = space_then_run(t, p, [&](size_t i) { return t.other(i); })) != p) return e;
  if ((e = spaces_not_before_text(t, p)) != p) return e;
  return spaces(t, p);
}

// llama-bpe and qwen2, differing in the longest run of digits one word takes.
template <size_t kMaxDigits>
size_t llama3(const Word& t, size_t p) {
  size_t e;
  if ((e = contraction(t, p, true)) != p) return e;
  if ((e = prefixed_letters(t, p)) != p) return e;
  if ((e = numbers(t, p, kMaxDigits)) != p) return e;
  if ((e = punctuation_newlines(t, p)) != p) return e;
  if ((e = spaces_to_newline(t, p)) != p) return e;
  if ((e = spaces_not_before_text(t, p)) != p) return e;
  return spaces(t, p);
}

// \p{N}
size_t one_number(const Word& t, size_t p) { return t.number(p) ? p + 1 : p; }

// \p{N}+
size_t number_run(const Word& t, size_t p) { return run(t, p, [&](size_t i) { return t.number(i); }); }

// [0-9][0-9][0-9]
size_t three_digits(const Word& t, size_t p) {
  auto digit = [&](size_t i) { return t.cp(i) >= '0' && t.cp(i) <= '9'; };
  return digit(p) && digit(p + 1) && digit(p + 2) ? p + 3 : p;
}

// falcon: [\p{P}$+<=>^~|`]+
size_t falcon_punctuation(const Word& t, size_t p) {
  return run(t, p, [&](size_t i) {
    const uint32_t c = t.cp(i);
    return t.punct(i) || c == '$' || c == '+' || c == '<' || c == '=' || c == '>' || c == '^' || c == '~' ||
           c == '|' || c == '`';
  });
}

// [\r\n]
size_t one_newline(const Word& t, size_t p) { return t.newline(p) ? p + 1 : p; }

// \s?\p{L}+
size_t white_letters(const Word& t, size_t p) {
  return white_then_run(t, p, [&](size_t i) { return t.letter(i); });
}

// \s?\p{P}+
size_t white_punctuation(const Word& t, size_t p) {
  return white_then_run(t, p, [&](size_t i) { return t.punct(i); });
}

// [一-龥ࠀ-一가-퟿]+ : U+4E00..U+9FA5, U+0800..U+4E00, U+AC00..U+D7FF.
size_t cjk_run(const Word& t, size_t p) {
  return run(t, p, [&](size_t i) {
    return t.listed(i, [](uint32_t c) { return (c >= 0x800 && c <= 0x9FA5) || (c >= 0xAC00 && c <= 0xD7FF); });
  });
}

// deepseek-llm's letter list, [A-Za-zµÀ-ÖØ-öø-ƺ...𞤀-𞥃]: cased letters (Lu, Ll, Lt) of the
// Latin, Greek, Coptic, Cyrillic, Armenian, Georgian, Cherokee, Glagolitic, Deseret, Osage,
// Old Hungarian, Warang Citi and Adlam scripts, with gaps the list leaves, as code point
// ranges in order (adjacent single characters joined).
struct Range {
  uint32_t first, last;
};
constexpr Range kCasedLetters[] = {
    {0x41, 0x5A},       {0x61, 0x7A},       {0xB5, 0xB5},       {0xC0, 0xD6},       {0xD8, 0xF6},
    {0xF8, 0x1BA},      {0x1BC, 0x1BF},     {0x1C4, 0x293},     {0x295, 0x2AF},     {0x370, 0x373},
    {0x376, 0x377},     {0x37B, 0x37D},     {0x37F, 0x37F},     {0x386, 0x386},     {0x388, 0x38A},
    {0x38C, 0x38C},     {0x38E, 0x3A1},     {0x3A3, 0x3F5},     {0x3F7, 0x481},     {0x48A, 0x52F},
    {0x531, 0x556},     {0x10A0, 0x10C5},   {0x13A0, 0x13F5},   {0x13F8, 0x13FD},   {0x1C90, 0x1CBA},
    {0x1CBD, 0x1CBF},   {0x1D00, 0x1D2B},   {0x1D6B, 0x1D77},   {0x1D79, 0x1D9A},   {0x1E00, 0x1F15},
    {0x1F18, 0x1F1D},   {0x1F20, 0x1F45},   {0x1F48, 0x1F4D},   {0x1F50, 0x1F57},   {0x1F59, 0x1F59},
    {0x1F5B, 0x1F5B},   {0x1F5D, 0x1F5D},   {0x1F5F, 0x1F7D},   {0x1F80, 0x1FB4},   {0x1FB6, 0x1FBC},
    {0x1FBE, 0x1FBE},   {0x1FC2, 0x1FC4},   {0x1FC6, 0x1FCC},   {0x1FD0, 0x1FD3},   {0x1FD6, 0x1FDB},
    {0x1FE0, 0x1FEC},   {0x1FF2, 0x1FF4},   {0x1FF6, 0x1FFC},   {0x2102, 0x2102},   {0x2107, 0x2107},
    {0x210A, 0x2113},   {0x2115, 0x2115},   {0x2119, 0x211D},   {0x2124, 0x2124},   {0x2126, 0x2126},
    {0x2128, 0x2128},   {0x212A, 0x212D},   {0x212F, 0x2134},   {0x2139, 0x2139},   {0x213C, 0x213F},
    {0x2145, 0x2149},   {0x214E, 0x214E},   {0x2183, 0x2184},   {0x2C00, 0x2C7B},   {0x2C7E, 0x2CE4},
    {0x2CEB, 0x2CEE},   {0x2CF2, 0x2CF3},   {0xA640, 0xA66D},   {0xA680, 0xA69B},   {0xA722, 0xA76F},
    {0xA771, 0xA787},   {0xA78B, 0xA78E},   {0xAB70, 0xABBF},   {0xFB00, 0xFB06},   {0xFB13, 0xFB17},
    {0xFF21, 0xFF3A},   {0xFF41, 0xFF5A},   {0x10400, 0x1044F}, {0x104B0, 0x104D3}, {0x104D8, 0x104FB},
    {0x10C80, 0x10CB2}, {0x10CC0, 0x10CF2}, {0x118A0, 0x118DF}, {0x1E900, 0x1E943},
};

bool cased_letter(uint32_t c) {
  // The last range whose first code point is <= c.
  auto it = std::upper_bound(std::begin(kCasedLetters), std::end(kCasedLetters), c,
                             [](uint32_t x, const Range& r) { return x < r.first; });
  return it != std::begin(kCasedLetters) && c <= std::prev(it)->last;
}

// deepseek-llm: \s?[A-Za-zµ...]+
size_t white_cased_letters(const Word& t, size_t p) {
  return white_then_run(t, p, [&](size_t i) { return t.listed(i, cased_letter); });
}

// deepseek-llm: \s?[!-/:-~！-／：-～‘-‟　-。]+
size_t white_symbols(const Word& t, size_t p) {
  return white_then_run(t, p, [&](size_t i) {
    return t.listed(i, [](uint32_t c) {
      return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x7E) || (c >= 0xFF01 && c <= 0xFF0F) ||
             (c >= 0xFF1A && c <= 0xFF5E) || (c >= 0x2018 && c <= 0x201F) || (c >= 0x3000 && c <= 0x3002);
    });
  });
}

// \s+$ : a whitespace run that reaches the word's end. Only a run's first character can
// start the match (from a later one the run ends in the same place), which keeps long
// runs linear.
size_t trailing_spaces(const Word& t, size_t p) {
  if (!t.space(p) || (p > t.begin() && t.space(p - 1))) return p;
  const size_t e = spaces(t, p);
  return t.in(e) ? p : e;
}

// gemma4: [^\n]+|\n+
size_t line_or_newlines(const Word& t, size_t p) {
  if (t.cp(p) == '\n') return run(t, p, [&](size_t i) { return t.cp(i) == '\n'; });
  return run(t, p, [&](size_t i) { return t.in(i) && t.cp(i) != '\n'; });
}

// The expressions of each pre-tokenizer, in the order they apply.
std::vector<Matcher> expressions(PreTokenizer pre) {
  switch (pre) {
    case PreTokenizer::gpt2: return {gpt2};
    case PreTokenizer::llama3: return {llama3<3>};
    case PreTokenizer::qwen2: return {llama3<1>};
    case PreTokenizer::starcoder: return {one_number, gpt2};
    case PreTokenizer::falcon: return {falcon_punctuation, gpt2, three_digits};
    case PreTokenizer::deepseek_coder: return {one_newline, white_letters, white_punctuation, cjk_run, one_number};
    case PreTokenizer::deepseek_llm:
      return {one_newline, white_cased_letters, white_symbols, trailing_spaces, cjk_run, number_run};
    case PreTokenizer::gemma4: return {line_or_newlines};
  }
  return {};
}

struct Span {
  size_t begin, end;  // characters
};

// One expression over every word: its matches and the text between them, in order.
void split(const Text& t, Matcher m, const std::vector<Span>& in, std::vector<Span>& out) {
  out.clear();
  for (const Span& s : in) {
    const Word w(t, s.begin, s.end);
    size_t gap = s.begin;  // start of the text not matched yet
    for (size_t p = s.begin; p < s.end;) {
      const size_t e = std::min(m(w, p), s.end);
      if (e == p) {
        ++p;
        continue;
      }
      if (gap < p) out.push_back({gap, p});
      out.push_back({p, e});
      p = gap = e;
    }
    if (gap < s.end) out.push_back({gap, s.end});
  }
}

}  // namespace

std::optional<PreTokenizer> pre_tokenizer_from_name(const std::string& name) {
  if (name == "gpt-2" || name == "gpt2" || name == "mpt") return PreTokenizer::gpt2;
  if (name == "llama-bpe" || name == "llama3" || name == "llama-v3") return PreTokenizer::llama3;
  if (name == "qwen2") return PreTokenizer::qwen2;
  if (name == "starcoder" || name == "refact") return PreTokenizer::starcoder;
  if (name == "falcon") return PreTokenizer::falcon;
  if (name == "deepseek-coder") return PreTokenizer::deepseek_coder;
  if (name == "deepseek-llm") return PreTokenizer::deepseek_llm;
  if (name == "gemma4") return PreTokenizer::gemma4;
  return std::nullopt;
}

const char* pre_tokenizer_names() {
  return "gpt-2, mpt, llama-bpe (llama3, llama-v3), qwen2, starcoder, refact, falcon, deepseek-coder, "
         "deepseek-llm, gemma4";
}

std::vector<std::string> pre_tokenize(PreTokenizer pre, const std::string& text) {
  const Text t(text);
  std::vector<Span> spans, next;
  if (t.size() > 0) spans.push_back({0, t.size()});
  for (Matcher m : expressions(pre)) {
    split(t, m, spans, next);
    spans.swap(next);
  }
  std::vector<std::string> words;
  words.reserve(spans.size());
  for (const Span& s : spans)
    words.push_back(text.substr(t.byte_offset(s.begin), t.byte_offset(s.end) - t.byte_offset(s.begin)));
  return words;
}

}  // namespace tessera::gguf
