// End to end: the `saturn eqsat` command line.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "helpers.hpp"

namespace {

std::filesystem::path temp_dir() {
  auto d = saturn::test::scratch_dir() / "eqsat";
  std::filesystem::create_directories(d);
  return d;
}

std::string write(const std::string& name, const std::string& text) {
  auto p = temp_dir() / name;
  std::ofstream(p) << text;
  return p.string();
}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

saturn::test::CliResult run_saturn(const std::string& args) { return saturn::test::run_cli(args); }

const char* kRules = R"(
(defoptimizer simplify :phase 0
  (rule add0 (+ ?x 0) => ?x)
  (rule mul1 (* ?x 1) => ?x)
  (rule comm (+ ?a ?b) => (+ ?b ?a)))
)";

}  // namespace

TEST_CASE("eqsat --json prints one object per term with the documented fields") {
  auto rules = write("s.rules", kRules);
  auto terms = write("s.terms", "; two terms\n(* (+ 0 a) 1)\n(+ b c)\n");
  auto r = run_saturn("eqsat --rules " + rules + " " + terms + " --json");
  INFO(r.err);
  REQUIRE(r.status == 0);
  std::istringstream lines(r.out);
  std::string line;
  std::vector<nlohmann::json> objs;
  while (std::getline(lines, line))
    if (!line.empty()) objs.push_back(nlohmann::json::parse(line));
  REQUIRE(objs.size() == 2);
  for (const char* key : {"term", "iterations", "enodes", "eclasses", "stop_reason", "time_ms", "best", "best_cost"})
    CHECK(objs[0].contains(key));
  CHECK(objs[0]["term"] == "(* (+ 0 a) 1)");
  CHECK(objs[0]["best"] == "a");
  CHECK(objs[0]["best_cost"] == 1.0);
  CHECK(objs[0]["stop_reason"] == "saturated");
  CHECK(objs[1]["enodes"] == 4);  // b, c, (+ b c), (+ c b)
  CHECK(objs[1]["eclasses"] == 3);
  CHECK(objs[0]["rules"]["add0"]["applications"].get<int>() >= 1);
}

TEST_CASE("eqsat reports the AC sizes of egg with the simple scheduler") {
  auto rules =
      write("ac.rules", "(rule comm (+ ?a ?b) => (+ ?b ?a))\n(rule assoc (+ ?a (+ ?b ?c)) => (+ (+ ?a ?b) ?c))\n");
  auto terms = write("ac.terms", "(+ x1 (+ x2 (+ x3 (+ x4 (+ x5 (+ x6 (+ x7 x8)))))))\n");
  for (std::string mode : {"", " --no-incremental"}) {
    auto r =
        run_saturn("eqsat --rules " + rules + " " + terms + " --scheduler simple --node-limit 100000 --json" + mode);
    REQUIRE(r.status == 0);
    auto j = nlohmann::json::parse(r.out);
    INFO("mode:" << mode);
    CHECK(j["enodes"] == 6058);
    CHECK(j["eclasses"] == 255);
    CHECK(j["stop_reason"] == "saturated");
  }
}

TEST_CASE("hitting a limit is reported") {
  auto rules =
      write("ac2.rules", "(rule comm (+ ?a ?b) => (+ ?b ?a))\n(rule assoc (+ ?a (+ ?b ?c)) => (+ (+ ?a ?b) ?c))\n");
  auto terms = write("ac2.terms", "(+ x1 (+ x2 (+ x3 (+ x4 (+ x5 (+ x6 (+ x7 x8)))))))\n");
  auto r = run_saturn("eqsat --rules " + rules + " " + terms + " --node-limit 100");
  REQUIRE(r.status == 0);
  CHECK(r.out.find(" node_limit ") != std::string::npos);
  CHECK(r.err.find("before saturating") != std::string::npos);
}

TEST_CASE("a rule phase that blows up leaves the phases after it their share of the node limit") {
  // Phase 1 grows without end (associativity and commutativity); phase 2's
  // rule must still run. Before the shares, phase 1 took all 300 e-nodes
  // and phase 2 never ran.
  auto rules = write("phased.rules",
                     "(defoptimizer ac :phase 1\n"
                     "  (rule comm (+ ?a ?b) => (+ ?b ?a))\n"
                     "  (rule assoc (+ ?a (+ ?b ?c)) => (+ (+ ?a ?b) ?c)))\n"
                     "(defoptimizer lib :phase 2 (rule call (f ?x) => (g ?x)))\n");
  auto terms = write("phased.terms", "(f (+ x1 (+ x2 (+ x3 (+ x4 (+ x5 (+ x6 (+ x7 x8))))))))\n");
  auto r = run_saturn("eqsat --rules " + rules + " " + terms + " --scheduler simple --node-limit 300 --json");
  INFO(r.err);
  REQUIRE(r.status == 0);
  auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["phases"].size() == 2);
  const auto& ac = j["phases"][0];
  CHECK(ac["stop_reason"] == "node_limit");
  CHECK(ac["node_limit"] == 16 + (300 - 16) / 2);  // the 16 e-nodes of the term, then half of what is left
  CHECK(ac["enodes"].back().get<int>() < 300);
  CHECK(j["phases"][1]["node_limit"] == 300);  // the last phase: all that is left
  CHECK(j["rules"]["call"]["applications"] == 1);
  CHECK(j["enodes"].get<int>() <= 300 + 2);
}

TEST_CASE("a bad rule file exits 2 naming file:line:col") {
  auto rules = write("bad.rules", "(rule ok (f ?x) => ?x)\n(rule broken (g ?x) => (h ?y))\n");
  auto terms = write("t.terms", "(f a)\n");
  auto r = run_saturn("eqsat --rules " + rules + " " + terms);
  CHECK(r.status == 2);
  CHECK(r.err.find("bad.rules:2:27: error: variable ?y") != std::string::npos);
  CHECK(r.out.empty());
}

TEST_CASE("bad terms - missing files and bad flags exit 2") {
  auto rules = write("ok.rules", kRules);
  auto terms = write("bad.terms", "(f a\n");
  auto r = run_saturn("eqsat --rules " + rules + " " + terms);
  CHECK(r.status == 2);
  CHECK(r.err.find("bad.terms:1:1: error: unclosed '('") != std::string::npos);
  CHECK(run_saturn("eqsat --rules /no/such.rules " + terms).status == 2);
  CHECK(run_saturn("eqsat --rules " + rules + " " + write("g.terms", "(f a)\n") + " --scheduler fancy").status == 2);
  CHECK(run_saturn("eqsat --rules " + rules + " " + write("g2.terms", "(f a)\n") + " --cost +=abc").status == 2);
  CHECK(run_saturn("frobnicate").status == 2);
  CHECK(run_saturn("opt model.onnx").status == 2);
}

TEST_CASE("numeric flags refuse negative - NaN and infinite values with exit 2 naming the flag") {
  auto rules = write("neg.rules", kRules);
  auto terms = write("neg.terms", "(+ a b)\n");
  for (const char* flag : {"--iter-limit -3", "--node-limit -1", "--time-limit nan", "--time-limit -1",
                           "--memory-limit -5", "--time-limit inf"}) {
    INFO(flag);
    auto r = run_saturn("eqsat --rules " + rules + " " + terms + " " + flag);
    CHECK(r.status == 2);
    const std::string name(flag, std::string(flag).find(' '));
    CHECK(r.err.find(name + ": expected a finite number >= 0") != std::string::npos);
  }
  CHECK(run_saturn("eqsat --rules " + rules + " " + terms + " --time-limit 0.5 --iter-limit 0").status == 0);
  // The other commands' numeric flags take the same check.
  CHECK(run_saturn("run " + terms + " --bench -2").status == 2);
  CHECK(run_saturn("run " + terms + " --rtol nan").status == 2);
  CHECK(run_saturn("extract " + terms + " --time-limit -1").status == 2);
  CHECK(run_saturn("verify " + rules + " --max-instances -1").status == 2);
}

TEST_CASE("eqsat help exits 0 and lists the flags") {
  auto r = run_saturn("eqsat --help");
  CHECK(r.status == 0);
  for (const char* flag : {"--rules", "--iter-limit", "--node-limit", "--time-limit", "--scheduler", "--json"})
    CHECK(r.out.find(flag) != std::string::npos);
}

TEST_CASE("constant folding and writing the e-graph as JSON") {
  auto rules = write("cf.rules", "(rule mul0 (* ?x 0) => 0)\n");
  auto terms = write("cf.terms", "(+ (* 2 3) (* y (- 1 1)))\n");
  auto out = (temp_dir() / "eg.json").string();
  auto r = run_saturn("eqsat --rules " + rules + " " + terms + " --const-fold --json --egraph-json " + out);
  INFO(r.err);
  REQUIRE(r.status == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["best"] == "6");
  auto eg = nlohmann::json::parse(slurp(out));
  CHECK(eg["nodes"].size() == j["enodes"].get<std::size_t>());
}

TEST_CASE("text output is a table with a header and one row per term") {
  auto rules = write("tbl.rules", kRules);
  auto terms = write("tbl.terms", "(* (+ 0 a) 1)\n(+ b c)\n");
  auto r = run_saturn("eqsat --rules " + rules + " " + terms);
  REQUIRE(r.status == 0);
  std::istringstream lines(r.out);
  std::string header, row1, row2;
  std::getline(lines, header);
  std::getline(lines, row1);
  std::getline(lines, row2);
  for (const char* col : {"iters", "e-nodes", "e-classes", "stop", "time ms", "cost", "term => best"})
    CHECK(header.find(col) != std::string::npos);
  CHECK(row1.rfind("1 ", 0) == 0);
  CHECK(row1.find("saturated") != std::string::npos);
  CHECK(row1.find("(* (+ 0 a) 1)  =>  a") != std::string::npos);
  CHECK(row2.find("(+ b c)  =>  (+ b c)") != std::string::npos);
}

TEST_CASE("an unsound rule caught by constant folding exits 1") {
  // (+ 1 1) folds to 2; the wrong rule below equates it with 3.
  auto rules = write("unsound.rules", "(rule wrong (+ ?a ?a) => (+ ?a (+ ?a ?a)))\n");
  auto terms = write("unsound.terms", "(+ 1 1)\n");
  auto r = run_saturn("eqsat --rules " + rules + " " + terms + " --const-fold --iter-limit 2");
  CHECK(r.status == 1);
  CHECK(r.err.find("merged classes with different constants") != std::string::npos);
  CHECK(run_saturn("eqsat --rules " + rules + " " + terms + " --iter-limit 2").status ==
        0);  // without folding: no check
}
