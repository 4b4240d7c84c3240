#include "ir/sexpr.hpp"

#include <cctype>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace saturn {

void fail_at(const SourceLoc& loc, std::string message) { throw DiagnosticError{Diagnostic{loc, std::move(message)}}; }

std::optional<ParsedNumber> SExpr::number() const {
  if (kind != Kind::Atom || text.empty()) return std::nullopt;
  std::size_t i = (text[0] == '-') ? 1 : 0;
  if (i >= text.size()) return std::nullopt;
  bool digit = std::isdigit(static_cast<unsigned char>(text[i])) ||
               (text[i] == '.' && i + 1 < text.size() && std::isdigit(static_cast<unsigned char>(text[i + 1])));
  if (!digit) return std::nullopt;
  const char* b = text.data();
  const char* e = b + text.size();
  if (text.find_first_of(".eE") == std::string::npos) {
    std::int64_t v = 0;
    auto r = std::from_chars(b, e, v);
    if (r.ec == std::errc() && r.ptr == e) return ParsedNumber(v);
    return std::nullopt;
  }
  double d = 0;
  auto r = std::from_chars(b, e, d);
  if (r.ec == std::errc() && r.ptr == e) return ParsedNumber(d);
  return std::nullopt;
}

std::string SExpr::to_string() const {
  switch (kind) {
    case Kind::Atom:
      return text;
    case Kind::String:
      return "\"" + text + "\"";
    case Kind::List:
    case Kind::Bracket: {
      std::string s(1, kind == Kind::List ? '(' : '[');
      for (std::size_t i = 0; i < items.size(); ++i) {
        if (i) s += ' ';
        s += items[i].to_string();
      }
      return s + (kind == Kind::List ? ')' : ']');
    }
  }
  return {};
}

namespace {
class Reader {
 public:
  Reader(std::string_view text, const std::string& file) : s_(text), file_(file) {}

  std::vector<SExpr> read_all() {
    std::vector<SExpr> out;
    for (;;) {
      skip();
      if (pos_ >= s_.size()) return out;
      out.push_back(read(0));
    }
  }

 private:
  SourceLoc here() const { return SourceLoc{file_, line_, col_}; }
  char peek() const { return s_[pos_]; }
  void bump() {
    if (s_[pos_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++pos_;
  }
  void skip() {
    while (pos_ < s_.size()) {
      char c = peek();
      if (c == ';') {
        while (pos_ < s_.size() && peek() != '\n') bump();
      } else if (std::isspace(static_cast<unsigned char>(c))) {
        bump();
      } else {
        return;
      }
    }
  }

  SExpr read(int depth) {
    SExpr e;
    e.loc = here();
    char c = peek();
    if (c == '(' || c == '[') {
      // Every stage after the reader (rules, terms, their checks and
      // printing) walks the tree recursively: a bound here keeps them all
      // within the stack.
      if (depth >= kMaxSExprNesting)
        fail_at(e.loc, "lists nested deeper than " + std::to_string(kMaxSExprNesting) + " levels");
      const char close = c == '(' ? ')' : ']';
      e.kind = c == '(' ? SExpr::Kind::List : SExpr::Kind::Bracket;
      bump();
      for (;;) {
        skip();
        if (pos_ >= s_.size())
          fail_at(e.loc, std::string("unclosed '") + c + "': expected '" + close + "' before the end of the file");
        if (peek() == close) {
          bump();
          return e;
        }
        if (peek() == ')' || peek() == ']')
          fail_at(here(), std::string("expected '") + close + "' to close the '" + c + "' opened at " +
                              std::to_string(e.loc.line) + ":" + std::to_string(e.loc.col) + ", found '" + peek() +
                              "'");
        e.items.push_back(read(depth + 1));
      }
    }
    if (c == ')' || c == ']') fail_at(e.loc, std::string("unexpected '") + c + "' with no open bracket");
    if (c == '"') {
      e.kind = SExpr::Kind::String;
      bump();
      for (;;) {
        if (pos_ >= s_.size()) fail_at(e.loc, "unterminated string: expected '\"'");
        char d = peek();
        bump();
        if (d == '"') return e;
        if (d == '\\') {
          if (pos_ >= s_.size()) fail_at(e.loc, "unterminated string: expected '\"'");
          d = peek();
          bump();
          if (d == 'n') d = '\n';
        }
        e.text += d;
      }
    }
    e.kind = SExpr::Kind::Atom;
    while (pos_ < s_.size()) {
      char d = peek();
      if (std::isspace(static_cast<unsigned char>(d)) || d == '(' || d == ')' || d == '[' || d == ']' || d == '"' ||
          d == ';')
        break;
      e.text += d;
      bump();
    }
    return e;
  }

  std::string_view s_;
  const std::string& file_;
  std::size_t pos_ = 0;
  int line_ = 1, col_ = 1;
};
}  // namespace

Expected<std::vector<SExpr>> parse_sexprs(std::string_view text, const std::string& file) {
  try {
    return Reader(text, file).read_all();
  } catch (const DiagnosticError& e) {
    return e.diag;
  }
}

Expected<std::string> read_file(const std::string& path) {
  // A directory reads as an empty file, and a device such as /dev/zero never
  // ends: both are refused (a pipe is read, its writer ends it).
  std::error_code ec;
  const auto kind = std::filesystem::status(path, ec).type();
  if (kind == std::filesystem::file_type::directory) return Diagnostic{SourceLoc{path, 0, 0}, "is a directory"};
  if (kind == std::filesystem::file_type::character || kind == std::filesystem::file_type::block ||
      kind == std::filesystem::file_type::socket)
    return Diagnostic{SourceLoc{path, 0, 0}, "is not a regular file"};
  std::ifstream in(path, std::ios::binary);
  if (!in) return Diagnostic{SourceLoc{path, 0, 0}, "cannot open file"};
  if (kind == std::filesystem::file_type::regular) {
    // One read of the whole file: a stream copy grows its buffer by doubling
    // and copies it again at the end (a third of `saturn opt`'s time on a
    // 350 MB model).
    const auto size = std::filesystem::file_size(path, ec);
    if (!ec) {
      std::string bytes(size, '\0');
      in.read(bytes.data(), static_cast<std::streamsize>(size));
      if (in.bad() || static_cast<std::uintmax_t>(in.gcount()) != size)
        return Diagnostic{SourceLoc{path, 0, 0}, "cannot read file"};
      return bytes;
    }
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Diagnostic{SourceLoc{path, 0, 0}, "cannot read file"};
  return ss.str();
}

}  // namespace saturn
