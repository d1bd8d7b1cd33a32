// strata: parallel-plan predictor and auto-tuner for transformer training.
// Exit codes: 0 success, 1 bad input (message names the file/flag and field), 2 a valid request
// with no feasible plan, 3 internal error (a bug: unexpected exception or non-finite prediction).
#include <exception>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "costmodel/errors.h"
#include "planner/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"strata: predict, search and size parallel plans for training large transformers"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "strata 0.1.0");
  strata::CommandContext ctx;
  strata::register_predict(app, ctx);
  strata::register_plan(app, ctx);
  strata::register_validate(app, ctx);
  strata::register_list(app, ctx);
  std::string command_line;
  for (int i = 0; i < argc; ++i) command_line += (i ? " " : "") + std::string(argv[i]);
  strata::register_profile(app, ctx, command_line);
  strata::register_trace(app, ctx);
  strata::register_calibrate(app, ctx);
  strata::register_whatif(app, ctx);
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
    return 1;
  } catch (const strata::InputError& e) {
    fmt::print(stderr, "strata: error: {}\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "strata: internal error: {}\n", e.what());
    return 3;
  }
  return ctx.exit_code;
}
