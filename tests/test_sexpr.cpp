// The s-expression reader: structure, positions and errors.
#include <catch2/catch.hpp>

#include "ir/sexpr.hpp"

using namespace saturn;

TEST_CASE("reads lists - brackets - strings and atoms with positions") {
  auto r = parse_sexprs("; comment\n(rule x\n  [1 -2 3.5] \"doc \\\"q\\\"\") atom", "f.rules");
  REQUIRE(r);
  REQUIRE(r->size() == 2);
  const SExpr& list = (*r)[0];
  CHECK(list.is_list());
  CHECK(list.loc.line == 2);
  CHECK(list.loc.col == 1);
  REQUIRE(list.items.size() == 4);
  CHECK(list.items[1].is_atom("x"));
  const SExpr& br = list.items[2];
  CHECK(br.kind == SExpr::Kind::Bracket);
  CHECK(br.loc.line == 3);
  CHECK(br.loc.col == 3);
  CHECK(std::get<std::int64_t>(*br.items[1].number()) == -2);
  CHECK(std::get<double>(*br.items[2].number()) == 3.5);
  CHECK(list.items[3].kind == SExpr::Kind::String);
  CHECK(list.items[3].text == "doc \"q\"");
  CHECK((*r)[1].is_atom("atom"));
  CHECK((*r)[1].loc.col == 27);
}

TEST_CASE("numbers and symbols are told apart") {
  auto r = parse_sexprs("3 -4 1e3 .5 - -x inf ?v :kw", "t");
  REQUIRE(r);
  auto& v = *r;
  CHECK(std::holds_alternative<std::int64_t>(*v[0].number()));
  CHECK(std::get<std::int64_t>(*v[1].number()) == -4);
  CHECK(std::get<double>(*v[2].number()) == 1000.0);
  CHECK_FALSE(std::holds_alternative<std::int64_t>(*v[2].number()));
  CHECK(std::get<double>(*v[3].number()) == 0.5);
  CHECK_FALSE(v[4].number().has_value());
  CHECK_FALSE(v[5].number().has_value());
  CHECK_FALSE(v[6].number().has_value());
  CHECK(v[7].is_var());
  CHECK(v[8].is_keyword());
}

TEST_CASE("errors name the place and what was expected") {
  auto unclosed = parse_sexprs("(a\n (b c)", "u.rules");
  REQUIRE_FALSE(unclosed);
  CHECK(unclosed.error().loc.line == 1);
  CHECK(unclosed.error().loc.col == 1);
  CHECK(unclosed.error().to_string().find("u.rules:1:1: error: unclosed '('") == 0);

  auto extra = parse_sexprs("(a)\n  )", "e.rules");
  REQUIRE_FALSE(extra);
  CHECK(extra.error().to_string() == "e.rules:2:3: error: unexpected ')' with no open bracket");

  auto mismatched = parse_sexprs("(a [b)", "m.rules");
  REQUIRE_FALSE(mismatched);
  CHECK(mismatched.error().loc.col == 6);
  CHECK(mismatched.error().message.find("expected ']'") != std::string::npos);

  auto str = parse_sexprs("(a \"open", "s.rules");
  REQUIRE_FALSE(str);
  CHECK(str.error().loc.col == 4);
  CHECK(str.error().message.find("unterminated string") != std::string::npos);
}

TEST_CASE("a missing file is a diagnostic - not a crash") {
  auto r = read_file("/nonexistent/file.rules");
  REQUIRE_FALSE(r);
  CHECK(r.error().to_string().find("/nonexistent/file.rules") != std::string::npos);
}

TEST_CASE("nesting is bounded - an error at the list too deep - not a stack overflow") {
  const int levels = 20000;
  const std::string deep = std::string(levels, '(') + "x" + std::string(levels, ')');
  auto r = parse_sexprs(deep, "d.rules");
  REQUIRE_FALSE(r);
  CHECK(r.error().loc.line == 1);
  CHECK(r.error().loc.col == kMaxSExprNesting + 1);
  CHECK(r.error().message.find("nested deeper than") != std::string::npos);
  // Brackets count as lists; the deepest nesting allowed still reads.
  const std::string limit = std::string(kMaxSExprNesting, '[') + std::string(kMaxSExprNesting, ']');
  CHECK(parse_sexprs(limit, "l.rules"));
  CHECK_FALSE(parse_sexprs("[" + limit + "]", "l.rules"));
}

TEST_CASE("a directory or a device is refused - not read as empty or forever") {
  auto dir = read_file("/tmp");
  REQUIRE_FALSE(dir);
  CHECK(dir.error().to_string() == "/tmp: error: is a directory");
  auto device = read_file("/dev/zero");
  REQUIRE_FALSE(device);
  CHECK(device.error().to_string() == "/dev/zero: error: is not a regular file");
}
