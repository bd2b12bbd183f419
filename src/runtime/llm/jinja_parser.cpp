#include "runtime/llm/jinja_parser.h"

#include <cstdlib>
#include <initializer_list>

namespace tessera::llm::jinja {

namespace {

using T = Token::Type;

class Parser {
 public:
  Parser(std::vector<Token> toks, int max_depth) : t_(std::move(toks)), max_depth_(max_depth) {}

  Template run() {
    Template tpl;
    std::string end;
    tpl.body = body({}, end);
    return tpl;
  }

 private:
  // --- tokens ---
  const Token& peek(size_t ahead = 0) const { return t_[std::min(p_ + ahead, t_.size() - 1)]; }
  const Token& next() { return t_[p_ < t_.size() - 1 ? p_++ : p_]; }
  bool is_op(std::string_view op, size_t ahead = 0) const {
    return peek(ahead).type == T::op && peek(ahead).text == op;
  }
  bool is_name(std::string_view n, size_t ahead = 0) const {
    return peek(ahead).type == T::name && peek(ahead).text == n;
  }
  bool accept_op(std::string_view op) {
    if (!is_op(op)) return false;
    ++p_;
    return true;
  }
  bool accept_name(std::string_view n) {
    if (!is_name(n)) return false;
    ++p_;
    return true;
  }
  [[noreturn]] void error(const Token& at, const std::string& msg) const { throw JinjaError{msg, at.line, at.column}; }
  static std::string describe(const Token& tok) {
    switch (tok.type) {
      case T::eof: return "end of template";
      case T::block_end: return "'%}'";
      case T::var_end: return "'}}'";
      case T::string: return "string";
      default: return "'" + tok.text + "'";
    }
  }
  void expect_op(std::string_view op) {
    if (!accept_op(op)) error(peek(), "expected '" + std::string(op) + "', got " + describe(peek()));
  }
  std::string expect_name() {
    if (peek().type != T::name) error(peek(), "expected a name, got " + describe(peek()));
    return next().text;
  }
  void expect_block_end() {
    if (peek().type != T::block_end) error(peek(), "expected '%}', got " + describe(peek()));
    ++p_;
  }

  struct DepthGuard {
    Parser& p;
    explicit DepthGuard(Parser& parser, const Token& at) : p(parser) {
      if (++p.depth_ > p.max_depth_) p.error(at, "template nests too deeply (limit " + std::to_string(p.max_depth_) + ")");
    }
    ~DepthGuard() { --p.depth_; }
  };

  // --- statements ---
  // Parses nodes until a block whose keyword is in `ends` (that keyword is returned in
  // `end`, the parser left after it); with no ends, until end of template.
  Body body(std::initializer_list<std::string_view> ends, std::string& end) {
    DepthGuard guard(*this, peek());
    Body out;
    for (;;) {
      const Token& tok = peek();
      if (tok.type == T::eof) {
        if (ends.size() != 0) error(tok, "unexpected end of template, expected '" + std::string(*ends.begin()) + "'");
        return out;
      }
      if (tok.type == T::text) {
        auto n = node(Node::Kind::text, tok);
        n->text = tok.text;
        out.push_back(std::move(n));
        ++p_;
      } else if (tok.type == T::var_begin) {
        ++p_;
        auto n = node(Node::Kind::output, tok);
        n->expr = expression();
        if (peek().type != T::var_end) error(peek(), "expected '}}', got " + describe(peek()));
        ++p_;
        out.push_back(std::move(n));
      } else if (tok.type == T::block_begin) {
        const Token& kw = peek(1);
        if (kw.type != T::name) error(kw, "expected a statement keyword, got " + describe(kw));
        for (std::string_view e : ends)
          if (kw.text == e) {
            p_ += 2;
            end = kw.text;
            return out;
          }
        p_ += 2;
        out.push_back(statement(kw));
      } else {
        error(tok, "unexpected " + describe(tok));
      }
    }
  }

  NodePtr node(Node::Kind k, const Token& at) {
    auto n = std::make_unique<Node>();
    n->kind = k;
    n->line = at.line;
    n->column = at.column;
    return n;
  }

  NodePtr statement(const Token& kw) {
    const std::string& k = kw.text;
    std::string end;
    if (k == "if") {
      auto n = node(Node::Kind::if_, kw);
      ExprPtr cond = expression();
      expect_block_end();
      for (;;) {
        Body b = body({"elif", "else", "endif"}, end);
        n->branches.emplace_back(std::move(cond), std::move(b));
        if (end == "elif") {
          cond = expression();
          expect_block_end();
          continue;
        }
        if (end == "else") {
          expect_block_end();
          n->else_body = body({"endif"}, end);
        }
        expect_block_end();
        return n;
      }
    }
    if (k == "for") {
      auto n = node(Node::Kind::for_, kw);
      n->targets = targets();
      if (!accept_name("in")) error(peek(), "expected 'in', got " + describe(peek()));
      n->expr = or_expr();  // not expression(): a trailing `if` filters the loop
      if (accept_name("if")) n->cond = expression();
      if (accept_name("recursive")) error(peek(), "recursive for loops are not supported");
      expect_block_end();
      n->body = body({"else", "endfor"}, end);
      if (end == "else") {
        expect_block_end();
        n->else_body = body({"endfor"}, end);
      }
      expect_block_end();
      return n;
    }
    if (k == "set") {
      const std::vector<std::string> names = targets();
      if (names.size() == 1 && accept_op(".")) {
        auto n = node(Node::Kind::set, kw);
        n->targets = names;
        n->target_attr = expect_name();
        expect_op("=");
        n->expr = tuple_or_expression();
        expect_block_end();
        return n;
      }
      if (accept_op("=")) {
        auto n = node(Node::Kind::set, kw);
        n->targets = names;
        n->expr = tuple_or_expression();
        expect_block_end();
        return n;
      }
      if (names.size() != 1) error(peek(), "expected '='");
      auto n = node(Node::Kind::set_block, kw);
      n->targets = names;
      if (is_op("|")) n->expr = filters(nullptr);
      expect_block_end();
      n->body = body({"endset"}, end);
      expect_block_end();
      return n;
    }
    if (k == "macro") {
      auto n = node(Node::Kind::macro, kw);
      n->text = expect_name();
      n->params = params();
      expect_block_end();
      n->body = body({"endmacro"}, end);
      expect_block_end();
      return n;
    }
    if (k == "call") {
      auto n = node(Node::Kind::call, kw);
      if (is_op("(")) n->params = params();
      n->expr = expression();
      if (n->expr->kind != Expr::Kind::call) error(kw, "expected a call after 'call'");
      expect_block_end();
      n->body = body({"endcall"}, end);
      expect_block_end();
      return n;
    }
    if (k == "filter") {
      auto n = node(Node::Kind::filter, kw);
      n->expr = filter_chain_after_keyword();
      expect_block_end();
      n->body = body({"endfilter"}, end);
      expect_block_end();
      return n;
    }
    if (k == "break" || k == "continue") {
      auto n = node(k == "break" ? Node::Kind::break_ : Node::Kind::continue_, kw);
      expect_block_end();
      return n;
    }
    error(kw, "unknown statement '" + k + "'");
  }

  // `{% filter a | b(x) %}`: the filter names after the keyword.
  ExprPtr filter_chain_after_keyword() {
    ExprPtr e;
    do {
      e = one_filter(std::move(e));
    } while (accept_op("|"));
    return e;
  }

  std::vector<std::string> targets() {
    std::vector<std::string> names;
    const bool paren = accept_op("(");
    names.push_back(expect_name());
    while (accept_op(",")) {
      if (peek().type != T::name || is_name("in")) break;
      names.push_back(expect_name());
    }
    if (paren) expect_op(")");
    return names;
  }

  std::vector<std::pair<std::string, ExprPtr>> params() {
    std::vector<std::pair<std::string, ExprPtr>> out;
    expect_op("(");
    while (!accept_op(")")) {
      std::string name = expect_name();
      ExprPtr def;
      if (accept_op("=")) def = expression();
      out.emplace_back(std::move(name), std::move(def));
      if (!is_op(")")) expect_op(",");
    }
    return out;
  }

  // --- expressions ---
  ExprPtr make(Expr::Kind k, const Token& at) {
    auto e = std::make_unique<Expr>();
    e->kind = k;
    e->line = at.line;
    e->column = at.column;
    return e;
  }

  // `a, b` without brackets (set x = 1, 2) is a tuple.
  ExprPtr tuple_or_expression() {
    const Token& at = peek();
    ExprPtr first = expression();
    if (!is_op(",")) return first;
    auto t = make(Expr::Kind::tuple, at);
    t->items.push_back(std::move(first));
    while (accept_op(",")) {
      if (peek().type == T::block_end) break;
      t->items.push_back(expression());
    }
    return t;
  }

  ExprPtr expression() {
    DepthGuard guard(*this, peek());
    ExprPtr e = or_expr();
    while (is_name("if")) {
      const Token& at = next();
      auto c = make(Expr::Kind::cond, at);
      c->items.push_back(std::move(e));
      c->items.push_back(or_expr());
      c->items.push_back(accept_name("else") ? expression() : nullptr);
      e = std::move(c);
    }
    return e;
  }

  ExprPtr logic(std::string op, ExprPtr a, ExprPtr b, const Token& at) {
    auto e = make(Expr::Kind::logic, at);
    e->name = std::move(op);
    e->items.push_back(std::move(a));
    e->items.push_back(std::move(b));
    return e;
  }

  ExprPtr or_expr() {
    ExprPtr e = and_expr();
    while (is_name("or")) {
      const Token& at = next();
      e = logic("or", std::move(e), and_expr(), at);
    }
    return e;
  }
  ExprPtr and_expr() {
    ExprPtr e = not_expr();
    while (is_name("and")) {
      const Token& at = next();
      e = logic("and", std::move(e), not_expr(), at);
    }
    return e;
  }
  ExprPtr not_expr() {
    if (is_name("not")) {
      DepthGuard guard(*this, peek());
      const Token& at = next();
      auto e = make(Expr::Kind::unary, at);
      e->name = "not";
      e->items.push_back(not_expr());
      return e;
    }
    return compare();
  }
  ExprPtr binary(std::string op, ExprPtr a, ExprPtr b, const Token& at) {
    auto e = make(Expr::Kind::binary, at);
    e->name = std::move(op);
    e->items.push_back(std::move(a));
    e->items.push_back(std::move(b));
    return e;
  }
  ExprPtr compare() {
    ExprPtr e = math1();
    ExprPtr chain;  // a < b < c is (a < b) and (b < c); chains are rare: b is evaluated twice
    for (;;) {
      const Token& at = peek();
      std::string op;
      if (at.type == T::op && (at.text == "==" || at.text == "!=" || at.text == "<" || at.text == ">" ||
                               at.text == "<=" || at.text == ">=")) {
        op = at.text;
        ++p_;
      } else if (is_name("in")) {
        op = "in";
        ++p_;
      } else if (is_name("not") && is_name("in", 1)) {
        op = "not in";
        p_ += 2;
      } else {
        break;
      }
      e = binary(op, std::move(e), math1(), at);
    }
    return e;
  }
  ExprPtr math1() {
    ExprPtr e = concat();
    while (is_op("+") || is_op("-")) {
      const Token& at = next();
      e = binary(at.text, std::move(e), concat(), at);
    }
    return e;
  }
  ExprPtr concat() {
    ExprPtr e = math2();
    while (is_op("~")) {
      const Token& at = next();
      e = binary("~", std::move(e), math2(), at);
    }
    return e;
  }
  ExprPtr math2() {
    ExprPtr e = power();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const Token& at = next();
      e = binary(at.text, std::move(e), power(), at);
    }
    return e;
  }
  ExprPtr power() {
    ExprPtr e = unary(true);
    while (is_op("**")) {
      const Token& at = next();
      e = binary("**", std::move(e), unary(true), at);
    }
    return e;
  }
  ExprPtr unary(bool with_filter) {
    DepthGuard guard(*this, peek());
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
      const Token& at = next();
      e = make(Expr::Kind::unary, at);
      e->name = at.text;
      e->items.push_back(unary(false));
    } else {
      e = postfix(primary());
    }
    if (with_filter) e = filters_and_tests(std::move(e));
    return e;
  }

  ExprPtr primary() {
    const Token& tok = peek();
    switch (tok.type) {
      case T::name: {
        ++p_;
        const std::string& n = tok.text;
        auto lit = [&](Value v) {
          auto e = make(Expr::Kind::literal, tok);
          e->value = std::move(v);
          return e;
        };
        if (n == "true" || n == "True") return lit(true);
        if (n == "false" || n == "False") return lit(false);
        if (n == "none" || n == "None") return lit(Value::none());
        auto e = make(Expr::Kind::name, tok);
        e->name = n;
        return e;
      }
      case T::string: {
        std::string s;
        while (peek().type == T::string) s += next().text;  // adjacent literals join
        auto e = make(Expr::Kind::literal, tok);
        e->value = Value(std::move(s));
        return e;
      }
      case T::integer: {
        ++p_;
        auto e = make(Expr::Kind::literal, tok);
        errno = 0;
        const long long v = std::strtoll(tok.text.c_str(), nullptr, 10);
        if (errno == ERANGE) error(tok, "integer literal out of range");
        e->value = Value(static_cast<int64_t>(v));
        return e;
      }
      case T::floating: {
        ++p_;
        auto e = make(Expr::Kind::literal, tok);
        e->value = Value(std::strtod(tok.text.c_str(), nullptr));
        return e;
      }
      case T::op:
        if (tok.text == "(") {
          ++p_;
          if (accept_op(")")) return make(Expr::Kind::tuple, tok);
          ExprPtr first = expression();
          if (accept_op(")")) return first;
          auto t = make(Expr::Kind::tuple, tok);
          t->items.push_back(std::move(first));
          while (accept_op(",")) {
            if (is_op(")")) break;
            t->items.push_back(expression());
          }
          expect_op(")");
          return t;
        }
        if (tok.text == "[") {
          ++p_;
          auto l = make(Expr::Kind::list, tok);
          while (!accept_op("]")) {
            l->items.push_back(expression());
            if (!is_op("]")) expect_op(",");
          }
          return l;
        }
        if (tok.text == "{") {
          ++p_;
          auto d = make(Expr::Kind::dict, tok);
          while (!accept_op("}")) {
            d->items.push_back(expression());
            expect_op(":");
            d->items.push_back(expression());
            if (!is_op("}")) expect_op(",");
          }
          return d;
        }
        break;
      default: break;
    }
    error(tok, "unexpected " + describe(tok));
  }

  void call_args(Expr& e) {
    expect_op("(");
    while (!accept_op(")")) {
      if (peek().type == T::name && is_op("=", 1)) {
        std::string n = next().text;
        ++p_;
        e.kwargs.emplace_back(std::move(n), expression());
      } else {
        if (!e.kwargs.empty()) error(peek(), "positional argument after keyword argument");
        e.items.push_back(expression());
      }
      if (!is_op(")")) expect_op(",");
    }
  }

  ExprPtr postfix(ExprPtr e) {
    for (;;) {
      const Token& at = peek();
      if (accept_op(".")) {
        const Token& n = peek();
        auto a = make(Expr::Kind::attr, at);
        if (n.type == T::name || n.type == T::integer) {
          a->name = next().text;
        } else {
          error(n, "expected an attribute name, got " + describe(n));
        }
        a->items.push_back(std::move(e));
        e = std::move(a);
      } else if (is_op("[")) {
        ++p_;
        e = subscript(std::move(e), at);
      } else if (is_op("(")) {
        auto c = make(Expr::Kind::call, at);
        c->line = e->line;  // errors of a call point at what is called
        c->column = e->column;
        c->items.push_back(std::move(e));
        call_args(*c);
        e = std::move(c);
      } else {
        return e;
      }
    }
  }

  ExprPtr subscript(ExprPtr target, const Token& at) {
    ExprPtr parts[3];
    int colons = 0;
    if (!is_op(":")) parts[0] = expression();
    while (colons < 2 && accept_op(":")) {
      ++colons;
      if (!is_op(":") && !is_op("]")) parts[colons] = expression();
    }
    expect_op("]");
    if (colons == 0) {
      auto e = make(Expr::Kind::item, at);
      e->items.push_back(std::move(target));
      e->items.push_back(std::move(parts[0]));
      return e;
    }
    auto e = make(Expr::Kind::slice, at);
    e->items.push_back(std::move(target));
    for (auto& p : parts) e->items.push_back(std::move(p));
    return e;
  }

  ExprPtr one_filter(ExprPtr target) {
    const Token& at = peek();
    auto f = make(Expr::Kind::filter, at);
    f->name = expect_name();
    while (accept_op(".")) f->name += "." + expect_name();
    f->items.push_back(std::move(target));
    if (is_op("(")) call_args(*f);
    return f;
  }

  ExprPtr filters(ExprPtr e) {
    while (accept_op("|")) e = one_filter(std::move(e));
    return e;
  }

  ExprPtr filters_and_tests(ExprPtr e) {
    for (;;) {
      if (is_op("|")) {
        e = filters(std::move(e));
      } else if (is_name("is")) {
        const Token& at = next();
        auto t = make(Expr::Kind::test, at);
        t->negate = accept_name("not");
        t->name = expect_name();
        t->items.push_back(std::move(e));
        if (is_op("(")) {
          call_args(*t);
        } else {
          const Token& n = peek();
          const bool arg = n.type == T::string || n.type == T::integer || n.type == T::floating ||
                           (n.type == T::name && n.text != "else" && n.text != "or" && n.text != "and" &&
                            n.text != "if" && n.text != "in" && n.text != "not" && n.text != "is") ||
                           is_op("[") || is_op("{");
          if (arg) t->items.push_back(postfix(primary()));
        }
        e = std::move(t);
      } else {
        return e;
      }
    }
  }

  std::vector<Token> t_;
  size_t p_ = 0;
  int depth_ = 0;
  int max_depth_;
};

}  // namespace

Template parse(std::string_view source, const LexOptions& options, int max_depth) {
  return Parser(lex(source, options), max_depth).run();
}

}  // namespace tessera::llm::jinja
