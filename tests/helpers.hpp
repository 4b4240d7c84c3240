// Small helpers shared by the tests.
#pragma once

#include <sys/wait.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "egraph/egraph.hpp"
#include "egraph/runner.hpp"
#include "egraph/term.hpp"
#include "rules/rule_file.hpp"
#include "scratch.hpp"

namespace saturn::test {

// Exit status, stdout and stderr of one `saturn` invocation.
struct CliResult {
  int status;
  std::string out;
  std::string err;
};
CliResult run_cli(const std::string& args);

// The source tree and the `saturn` binary (environment overrides build defaults).
inline std::string source_dir() {
  const char* env = std::getenv("SATURN_SOURCE_DIR");
  return env ? env : SATURN_SOURCE_DIR_DEFAULT;
}
inline std::string saturn_bin() {
  const char* env = std::getenv("SATURN_BIN");
  return env ? env : SATURN_BIN_DEFAULT;
}

inline CliResult run_cli(const std::string& args) {
  const auto err = scratch_file("cli-stderr");
  std::string cmd = saturn_bin() + " " + args + " 2>" + err.string();
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buf[4096];
  while (std::size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  int status = pclose(p);
  std::ifstream e(err);
  std::string errs((std::istreambuf_iterator<char>(e)), {});
  return CliResult{WIFEXITED(status) ? WEXITSTATUS(status) : -1, out, errs};
}

// Parses rules from text; fails the test with the diagnostic if they do not load.
inline std::vector<egraph::Rewrite> rules_from(const std::string& text) {
  auto f = rules::parse_rules(text, "test.rules");
  if (!f) FAIL(f.error().to_string());
  std::vector<egraph::Rewrite> out;
  for (auto& o : f->optimizers)
    for (auto& r : o.rewrites) out.push_back(std::move(r));
  return out;
}

inline egraph::Term term_from(const std::string& text) {
  auto t = rules::parse_terms(text, "test.terms");
  if (!t) FAIL(t.error().to_string());
  REQUIRE(t->size() == 1);
  return (*t)[0];
}

// "v3" from ("v", 3). (Built by append: GCC 12 warns falsely on "v" + s.)
inline std::string numbered(const char* prefix, int i) {
  std::string s(prefix);
  s.append(std::to_string(i));
  return s;
}

// `name` in the folder `prefix` of the test program's scratch directory,
// made if missing.
inline std::filesystem::path temp_path(const char* prefix, const std::string& name) {
  auto d = scratch_dir() / prefix;
  std::filesystem::create_directories(d);
  return d / name;
}

// A NumPy .npy file (format 1.0): `descr` such as "<f4", `shape` as
// Python writes it ("(2, 3, )"), `data` the raw little-endian bytes.
inline void write_npy(const std::filesystem::path& p, const std::string& descr, const std::string& shape,
                      const std::string& data) {
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  while ((10 + header.size() + 1) % 64) header += ' ';
  header += '\n';
  std::ofstream out(p, std::ios::binary);
  out << "\x93NUMPY" << '\x01' << '\x00' << static_cast<char>(header.size() & 0xFF)
      << static_cast<char>(header.size() >> 8) << header << data;
}

// (+ x1 (+ x2 (+ ... xn)))
inline std::string sum_of_vars(int n) {
  std::string t = numbered("x", n);
  for (int i = n - 1; i >= 1; --i) {
    std::string outer = "(+ ";
    outer.append(numbered("x", i)).append(" ").append(t).append(")");
    t = std::move(outer);
  }
  return t;
}

inline const char* kAssocComm = R"(
(rule comm (+ ?a ?b) => (+ ?b ?a))
(rule assoc (+ ?a (+ ?b ?c)) => (+ (+ ?a ?b) ?c))
)";

}  // namespace saturn::test
