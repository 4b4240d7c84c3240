// Errors as values at library borders, shared by every module (ir/ depends on
// nothing of Saturn, and the others may depend on ir/).
//
// A Diagnostic carries the place (file:line:col, or a file and an ONNX node)
// and what was expected; Expected<T> is a value or a Diagnostic. Parsers may
// throw internally but every public entry point returns Expected, so no
// exception reaches the CLI.
#pragma once

#include <exception>
#include <new>
#include <string>
#include <utility>
#include <variant>

namespace saturn {

struct SourceLoc {
  std::string file;
  int line = 0;
  int col = 0;
  std::string to_string() const { return file + ":" + std::to_string(line) + ":" + std::to_string(col); }
};

struct Diagnostic {
  SourceLoc loc;
  std::string message;
  // "file:line:col: error: message" (place omitted when unknown).
  std::string to_string() const {
    return (loc.line > 0 ? loc.to_string() + ": " : (loc.file.empty() ? "" : loc.file + ": ")) + "error: " + message;
  }
};

// Thrown inside a module only; caught and turned into a Diagnostic at each
// public entry point.
struct DiagnosticError {
  Diagnostic diag;
};

// A std::exception that escapes a reader's checks: running out of memory is
// the input's size (a user can act on it); anything else is a check Saturn
// lacks, said as such so that it is reported, not mistaken for the input's
// fault (a library's text like "vector::_M_range_check" names nothing).
inline Diagnostic stray_exception(SourceLoc where, const std::exception& e, const std::string& what_was_read) {
  if (dynamic_cast<const std::bad_alloc*>(&e))
    return Diagnostic{std::move(where), what_was_read + " does not fit in memory"};
  return Diagnostic{std::move(where), "internal error reading " + what_was_read + " (" + e.what() +
                                          "): a check Saturn lacks; please report it with this file"};
}

template <class T>
class Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}   // NOLINT(google-explicit-constructor)
  Expected(Diagnostic d) : v_(std::move(d)) {}  // NOLINT(google-explicit-constructor)
  explicit operator bool() const { return v_.index() == 0; }
  T& operator*() { return std::get<0>(v_); }
  const T& operator*() const { return std::get<0>(v_); }
  T* operator->() { return &std::get<0>(v_); }
  const T* operator->() const { return &std::get<0>(v_); }
  const Diagnostic& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Diagnostic> v_;
};

}  // namespace saturn
