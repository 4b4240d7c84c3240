// The `saturn` command line: one verb per job (docs/design.md, "Command
// line"). This is libsaturn_main.so, which the small `saturn` executable
// (saturn.cpp) opens for every verb: loading it relocates LLVM and the rest
// of Saturn, which `saturn --version` does not need.
#include <CLI/CLI.hpp>
#include <iostream>

#include "runtime/thread_env.hpp"
#include "tools/calibrate.hpp"
#include "tools/cli_common.hpp"
#include "tools/dot_command.hpp"
#include "tools/eqsat_command.hpp"
#include "tools/extract_command.hpp"
#include "tools/grad_command.hpp"
#include "tools/opt_command.hpp"
#include "tools/run_command.hpp"
#include "tools/train_command.hpp"
#include "tools/verify_command.hpp"

extern "C" __attribute__((visibility("default"))) int saturn_main(int argc, char** argv) {
  using namespace saturn::cli;
  CLI::App app{"Saturn: a tensor-graph compiler built on equality saturation."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "saturn 0.1.0");
  EqsatOptions eqsat;
  add_eqsat_command(app, eqsat);
  RunOptions run;
  add_run_command(app, run);
  OptOptions opt;
  add_opt_command(app, opt);
  ExtractOptions ext;
  add_extract_command(app, ext);
  VerifyCommandOptions verify;
  add_verify_command(app, verify);
  CalibrateOptions calibrate;
  add_calibrate_command(app, calibrate);
  DotOptions dot;
  add_dot_command(app, dot);
  GradOptions grad;
  add_grad_command(app, grad);
  TrainOptions train;
  add_train_command(app, train);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kBadInput;
  }
  // Running a compiled model wants its thread pools' environment, which
  // the libraries read before main (runtime/thread_env.hpp).
  if ((app.got_subcommand("run") && run.target == "cpu") ||
      (app.got_subcommand("opt") && (opt.measure || opt.calibration.calibrate)) || app.got_subcommand("calibrate") ||
      (app.got_subcommand("train") && train.target == "cpu"))
    saturn::runtime::restart_with_thread_env(argv);
  try {
    if (app.got_subcommand("eqsat")) return run_eqsat(eqsat);
    if (app.got_subcommand("run")) return run_model(run);
    if (app.got_subcommand("opt")) return run_opt(opt);
    if (app.got_subcommand("extract")) return run_extract(ext);
    if (app.got_subcommand("verify")) return run_verify(verify);
    if (app.got_subcommand("calibrate")) return run_calibrate(calibrate);
    if (app.got_subcommand("dot")) return run_dot(dot);
    if (app.got_subcommand("grad")) return run_grad(grad);
    if (app.got_subcommand("train")) return run_train(train);
  } catch (const std::bad_alloc&) {
    // Saturation is what grows without a bound the model fixes.
    const bool saturates = app.got_subcommand("opt") || app.got_subcommand("eqsat");
    std::cerr << "saturn: error: out of memory" << (saturates ? " (lower --node-limit)" : "") << "\n";
    return kBadInput;
  } catch (const std::exception& e) {
    std::cerr << "saturn: internal error: " << e.what() << "\n";
    return 3;
  }
  return kOk;
}
