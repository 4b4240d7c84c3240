#include "tools/dot_command.hpp"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "extract/extractors.hpp"
#include "extract/problem_dot.hpp"
#include "ir/graph_dot.hpp"
#include "ir/sexpr.hpp"
#include "tools/cli_common.hpp"

extern char** environ;

namespace saturn::cli {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Graphviz's output format for a file name: "svg", "png", "pdf"; "" for
// Graphviz text (.dot, .gv); nullopt for anything else.
std::optional<std::string> format_of(const std::string& path) {
  for (const char* f : {"svg", "png", "pdf"})
    if (ends_with(path, std::string(".") + f)) return std::string(f);
  if (ends_with(path, ".dot") || ends_with(path, ".gv")) return std::string();
  return std::nullopt;
}

// The Graphviz text of the input into `text`; what is wrong with the input
// otherwise. (An error string, not an Expected: GCC 12 warns falsely on
// Diagnostics returned early.)
std::string draw(const DotOptions& o, std::string& text) {
  if (ends_with(o.input, ".json")) {
    auto json = read_file(o.input);
    if (!json) return json.error().to_string();
    auto problem = extract::read_serialized_json(*json, o.input);
    if (!problem) return problem.error().to_string();
    auto ex = extract::extract_by_name(o.extractor, *problem, 10.0);
    if (!ex) return "unknown extractor '" + o.extractor + "' (one of " + extract::kExtractorNames + ")";
    text = extract::problem_to_dot(*problem, ex->choice);
    return "";
  }
  auto g = read_model(o.input);
  if (!g) return g.error().to_string();
  auto types = ir::infer_types(*g);
  if (!types) return types.error().to_string();
  text = ir::graph_to_dot(*g, *types);
  return "";
}

// Runs `dot -TFORMAT SOURCE -o OUT`; an error says what went wrong. With
// a time limit (seconds > 0), dot is stopped past it: its layout of a large
// dense graph (densenet121's concatenations) can take many minutes.
std::optional<std::string> run_graphviz(const std::string& format, const std::string& source, const std::string& out,
                                        double seconds = 0) {
  std::string t = "-T" + format, o = "-o";
  std::vector<char*> argv = {const_cast<char*>("dot"),       t.data(), const_cast<char*>(source.c_str()), o.data(),
                             const_cast<char*>(out.c_str()), nullptr};
  pid_t pid = 0;
  if (int e = posix_spawnp(&pid, "dot", nullptr, nullptr, argv.data(), environ); e != 0)
    return e == ENOENT ? "writing " + out + " needs Graphviz's `dot` (Debian: apt install graphviz); -o " +
                             std::filesystem::path(out).replace_extension(".dot").string() +
                             " writes the Graphviz text without it"
                       : "cannot run Graphviz's dot: " + std::string(strerror(e));
  int status = 0;
  if (seconds > 0) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    for (;;) {
      const pid_t done = waitpid(pid, &status, WNOHANG);
      if (done == pid) break;
      if (done < 0 && errno != EINTR) return "cannot wait for Graphviz's dot";
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid, SIGKILL);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        return "Graphviz's dot took more than " + std::to_string(static_cast<int>(seconds)) + " s drawing " + out;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  } else {
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return "Graphviz's dot failed writing " + out;
  return std::nullopt;
}

}  // namespace

void add_dot_command(CLI::App& app, DotOptions& o) {
  auto* cmd = app.add_subcommand("dot",
                                 "Draw a model (with its types) or an e-graph (classes as clusters, the "
                                 "extracted program marked) as Graphviz.");
  cmd->add_option("input", o.input, "Model (.onnx, .sat) or e-graph (egraph-serialize .json)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("-o,--out", o.out,
                  "Write here: .dot or .gv (Graphviz text), .svg, .png or .pdf (needs Graphviz's dot); default: the "
                  "text on stdout");
  cmd->add_option("--extractor", o.extractor,
                  std::string("E-graph: which extractor's program to mark: ") + extract::kExtractorNames)
      ->capture_default_str();
}

bool graphviz_name_ok(const std::string& path) {
  if (format_of(path)) return true;
  bad_input(path + ": the picture's name ends in .dot, .gv, .svg, .png or .pdf");
  return false;
}

int write_graphviz(const std::string& text, const std::string& path) {
  if (!graphviz_name_ok(path)) return kBadInput;
  const std::string format = *format_of(path);
  const std::string source = format.empty() ? path : path + ".dot.tmp";
  {
    std::ofstream f(source, std::ios::binary);
    f << text;
    if (!f.flush()) return bad_input(source + ": cannot write");
  }
  if (format.empty()) return kOk;
  auto failed = run_graphviz(format, source, path);
  std::error_code ec;
  std::filesystem::remove(source, ec);
  if (failed) return bad_input(*failed);
  return kOk;
}

std::optional<std::string> render_svg(const std::string& text, double seconds) {
  const auto base = std::filesystem::temp_directory_path() /
                    ("saturn-svg-" + std::to_string(::getpid()) + "-" + std::to_string(std::hash<std::string>{}(text)));
  const std::string source = base.string() + ".dot", out = base.string() + ".svg";
  {
    std::ofstream f(source, std::ios::binary);
    f << text;
    if (!f.flush()) return std::nullopt;
  }
  auto failed = run_graphviz("svg", source, out, seconds);
  std::string svg;
  if (!failed)
    if (auto read = read_file(out)) svg = std::move(*read);
  std::error_code ec;
  std::filesystem::remove(source, ec);
  std::filesystem::remove(out, ec);
  if (failed || svg.empty()) return std::nullopt;
  return svg;
}

int run_dot(const DotOptions& o) {
  if (!o.out.empty() && !graphviz_name_ok(o.out)) return kBadInput;
  std::string text;
  if (std::string why = draw(o, text); !why.empty()) return bad_input(why);
  if (o.out.empty()) {
    std::cout << text;
    return kOk;
  }
  return write_graphviz(text, o.out);
}

}  // namespace saturn::cli
