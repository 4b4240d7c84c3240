// S-expressions with source positions: the syntax of .rules, terms and .sat
// files (shared by rules/ and ir/).
//
// Atoms are runs of characters other than whitespace, parentheses, brackets,
// '"' and ';'. "(" ... ")" is a list, "[" ... "]" a bracket list (literal
// lists such as [1 0 2]), "..." a string with \" and \\ escapes, and ';'
// starts a comment to the end of the line. Every node remembers where it
// started, so later stages can report file:line:col.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <cstdint>
#include <variant>

#include "ir/diagnostic.hpp"

namespace saturn {

// A number as written: "3" is an integer, "3.0" and "1e3" are reals.
using ParsedNumber = std::variant<std::int64_t, double>;

struct SExpr {
  enum class Kind { Atom, String, List, Bracket };
  Kind kind = Kind::Atom;
  std::string text;          // Atom and String
  std::vector<SExpr> items;  // List and Bracket
  SourceLoc loc;

  bool is_atom() const { return kind == Kind::Atom; }
  bool is_atom(std::string_view s) const { return kind == Kind::Atom && text == s; }
  bool is_list() const { return kind == Kind::List; }
  bool is_var() const { return kind == Kind::Atom && text.size() > 1 && text[0] == '?'; }
  bool is_keyword() const { return kind == Kind::Atom && text.size() > 1 && text[0] == ':'; }
  // The atom read as a number ("3" is an integer, "3.0" and "1e3" reals).
  std::optional<ParsedNumber> number() const;
  // Text form, for messages.
  std::string to_string() const;
};

// How deep lists may nest; deeper input is an error at the list that
// exceeds it (no rule, term or model line needs a fraction of it).
inline constexpr int kMaxSExprNesting = 1000;

// Reads every top-level form of `text`; `file` names it in diagnostics.
Expected<std::vector<SExpr>> parse_sexprs(std::string_view text, const std::string& file);

// Reads a whole file; a missing or unreadable file is a Diagnostic.
Expected<std::string> read_file(const std::string& path);

[[noreturn]] void fail_at(const SourceLoc& loc, std::string message);

}  // namespace saturn
