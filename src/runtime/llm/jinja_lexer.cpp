#include "runtime/llm/jinja_lexer.h"

#include <cctype>

#include "runtime/llm/jinja_value.h"

namespace tessera::llm::jinja {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

std::string normalize_newlines(std::string_view src) {
  std::string out;
  out.reserve(src.size());
  for (size_t k = 0; k < src.size(); ++k) {
    if (src[k] == '\r') {
      out += '\n';
      if (k + 1 < src.size() && src[k + 1] == '\n') ++k;
    } else {
      out += src[k];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();  // keep_trailing_newline=False
  return out;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

class Lexer {
 public:
  Lexer(std::string src, const LexOptions& o) : src_(std::move(src)), opt_(o) {}

  std::vector<Token> run() {
    while (pos_ < src_.size()) {
      const size_t tag = find_tag(pos_);
      std::string text = src_.substr(pos_, tag - pos_);
      if (tag == src_.size()) {
        push_text(std::move(text), pos_);
        break;
      }
      const char kind = src_[tag + 1];  // '{', '%' or '#'
      const char mod = tag + 2 < src_.size() ? src_[tag + 2] : '\0';
      if (mod == '-') {
        while (!text.empty() && is_space(text.back())) text.pop_back();
      } else if (mod != '+' && opt_.lstrip_blocks && kind != '{') {
        const size_t nl = text.rfind('\n');
        const size_t line_start = nl == std::string::npos ? 0 : nl + 1;
        const bool at_line_start = nl != std::string::npos || pos_ == 0 || src_[pos_ - 1] == '\n';
        if (at_line_start) {
          bool blank = true;
          for (size_t k = line_start; k < text.size(); ++k) blank = blank && (text[k] == ' ' || text[k] == '\t');
          if (blank) text.resize(line_start);
        }
      }
      push_text(std::move(text), pos_);
      pos_ = tag + 2 + ((mod == '-' || mod == '+') ? 1 : 0);
      if (kind == '#') {
        lex_comment(tag);
      } else {
        emit(kind == '{' ? Token::Type::var_begin : Token::Type::block_begin, kind == '{' ? "{{" : "{%", tag);
        lex_inside(kind == '{' ? '}' : '%');
      }
    }
    emit(Token::Type::eof, "", src_.size());
    return std::move(tokens_);
  }

 private:
  size_t find_tag(size_t from) const {
    for (size_t k = from; k + 1 < src_.size(); ++k)
      if (src_[k] == '{' && (src_[k + 1] == '{' || src_[k + 1] == '%' || src_[k + 1] == '#')) return k;
    return src_.size();
  }

  void position(size_t at, int& line, int& col) const {
    // Positions are computed on demand (errors and tokens): count from the last known point.
    while (scan_ < at && scan_ < src_.size()) {
      if (src_[scan_] == '\n') {
        ++scan_line_;
        scan_col_ = 1;
      } else {
        ++scan_col_;
      }
      ++scan_;
    }
    line = scan_line_;
    col = scan_col_;
  }

  [[noreturn]] void error_at(size_t at, const std::string& msg) const {
    JinjaError e{msg, 0, 0};
    position(at, e.line, e.column);
    throw e;
  }

  void emit(Token::Type t, std::string text, size_t at) {
    Token tok{t, std::move(text), 1, 1};
    position(at, tok.line, tok.column);
    tokens_.push_back(std::move(tok));
  }
  void push_text(std::string text, size_t at) {
    if (!text.empty()) emit(Token::Type::text, std::move(text), at);
  }

  // After a `%}` or `#}` (or `}}`): "-" strips the whitespace that follows, trim_blocks one newline.
  void after_close(bool minus, bool block) {
    if (minus) {
      while (pos_ < src_.size() && is_space(src_[pos_])) ++pos_;
    } else if (block && opt_.trim_blocks && pos_ < src_.size() && src_[pos_] == '\n') {
      ++pos_;
    }
  }

  void lex_comment(size_t start) {
    const size_t end = src_.find("#}", pos_);
    if (end == std::string::npos) error_at(start, "unterminated comment");
    const bool minus = end > pos_ && src_[end - 1] == '-';
    pos_ = end + 2;
    after_close(minus, true);
  }

  // Tokens of an expression or statement up to its closing `}}` or `%}`.
  void lex_inside(char close) {
    int depth = 0;  // open brackets: a `}}` inside a dict literal does not close the tag
    for (;;) {
      while (pos_ < src_.size() && is_space(src_[pos_])) ++pos_;
      if (pos_ >= src_.size()) error_at(pos_, close == '}' ? "unexpected end of template, expected '}}'" : "unexpected end of template, expected '%}'");
      const char c = src_[pos_];
      const bool minus_close = c == '-' && src_.compare(pos_ + 1, 2, std::string(1, close) + "}") == 0;
      const bool plain_close = c == close && pos_ + 1 < src_.size() && src_[pos_ + 1] == '}';
      if (depth == 0 && (minus_close || plain_close)) {
        emit(close == '}' ? Token::Type::var_end : Token::Type::block_end, close == '}' ? "}}" : "%}", pos_);
        pos_ += minus_close ? 3 : 2;
        after_close(minus_close, close == '%');
        return;
      }
      const size_t start = pos_;
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        while (pos_ < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[pos_])) || src_[pos_] == '_')) ++pos_;
        emit(Token::Type::name, src_.substr(start, pos_ - start), start);
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        lex_number(start);
      } else if (c == '\'' || c == '"') {
        lex_string(start);
      } else {
        static const char* kOps[] = {"**", "//", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<", ">",
                                     "=",  "(",  ")",  "[",  "]",  "{",  "}", ",", ".", ":", "|"};
        std::string op;
        for (const char* o : kOps)
          if (src_.compare(pos_, std::char_traits<char>::length(o), o) == 0) {
            op = o;
            break;
          }
        if (op.empty()) error_at(pos_, std::string("unexpected character '") + c + "'");
        if (op == "(" || op == "[" || op == "{") ++depth;
        if ((op == ")" || op == "]" || op == "}") && depth > 0) --depth;
        pos_ += op.size();
        emit(Token::Type::op, op, start);
      }
    }
  }

  void lex_number(size_t start) {
    bool is_float = false;
    std::string digits;
    auto take_digits = [&] {
      while (pos_ < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[pos_])) || src_[pos_] == '_')) {
        if (src_[pos_] != '_') digits += src_[pos_];
        ++pos_;
      }
    };
    take_digits();
    if (pos_ + 1 < src_.size() && src_[pos_] == '.' && std::isdigit(static_cast<unsigned char>(src_[pos_ + 1]))) {
      is_float = true;
      digits += '.';
      ++pos_;
      take_digits();
    }
    if (pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
      size_t k = pos_ + 1;
      if (k < src_.size() && (src_[k] == '+' || src_[k] == '-')) ++k;
      if (k < src_.size() && std::isdigit(static_cast<unsigned char>(src_[k]))) {
        is_float = true;
        digits += src_.substr(pos_, k - pos_);
        pos_ = k;
        take_digits();
      }
    }
    emit(is_float ? Token::Type::floating : Token::Type::integer, digits, start);
  }

  void lex_string(size_t start) {
    const char q = src_[pos_++];
    std::string out;
    for (;;) {
      if (pos_ >= src_.size()) error_at(start, "unterminated string literal");
      const char c = src_[pos_++];
      if (c == q) break;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= src_.size()) error_at(start, "unterminated string literal");
      const char e = src_[pos_++];
      auto hex = [&](int n) {
        uint32_t cp = 0;
        for (int k = 0; k < n; ++k) {
          if (pos_ >= src_.size() || !std::isxdigit(static_cast<unsigned char>(src_[pos_])))
            error_at(pos_, "bad escape in string literal");
          const char h = src_[pos_++];
          cp = cp * 16 + (std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
        }
        append_utf8(out, cp);
      };
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case '0': out += '\0'; break;
        case 'a': out += '\a'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'v': out += '\v'; break;
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        case '\n': break;
        case 'x': hex(2); break;
        case 'u': hex(4); break;
        case 'U': hex(8); break;
        default: out += '\\'; out += e;  // Python keeps unknown escapes as written
      }
    }
    emit(Token::Type::string, std::move(out), start);
  }

  std::string src_;
  LexOptions opt_;
  size_t pos_ = 0;
  std::vector<Token> tokens_;
  mutable size_t scan_ = 0;
  mutable int scan_line_ = 1, scan_col_ = 1;
};

}  // namespace

std::vector<Token> lex(std::string_view source, const LexOptions& options) {
  return Lexer(normalize_newlines(source), options).run();
}

}  // namespace tessera::llm::jinja
