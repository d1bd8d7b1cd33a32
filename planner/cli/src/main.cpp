// strata: parallel-plan predictor and auto-tuner for transformer training.
// Exit codes: 0 success, 1 bad input (message names the file/flag and field), 2 a valid request
// with no feasible plan, 3 internal error (a bug: unexpected exception or non-finite prediction).
#include <csignal>
#include <cstdio>
#include <exception>
#include <string>
#include <system_error>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.h"
#include "costmodel/errors.h"
#include "costmodel/json_reader.h"
#include "search/threads.h"

namespace {

// `strata predcit ...`: CLI11 would only say a subcommand is required; name the word it did not know.
bool unknown_subcommand(const CLI::App& app, int argc, char** argv) {
  if (argc < 2) return false;
  const std::string word = argv[1];
  if (word.empty() || word[0] == '-') return false;
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) names.push_back(sub->get_name());
  for (const auto& n : names)
    if (n == word) return false;
  const std::string hint = strata::closest_match(word, names);
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  fmt::print(stderr, "strata: error: command line: unknown subcommand \"{}\"{}; expected one of {}\n", word,
             hint.empty() ? "" : " (did you mean \"" + hint + "\"?)", list);
  return true;
}

// Output that could not be written (a closed pipe, a full disk behind a redirection) is an error
// the user must see, not a success.
int stdout_status(int code) {
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    std::fprintf(stderr, "strata: error: standard output: cannot write the output (closed pipe or full disk)\n");
    return code == 0 ? 1 : code;
  }
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  // A write past `ulimit -f` or into a closed pipe fails with an error strata reports, instead of
  // killing the process with a signal.
  std::signal(SIGXFSZ, SIG_IGN);
  std::signal(SIGPIPE, SIG_IGN);
  // OMP_NUM_THREADS beyond the machine's cores would make OpenMP start that many threads.
  strata::cap_openmp_threads_from_environment();

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
  if (unknown_subcommand(app, argc, argv)) return 1;
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return stdout_status(app.exit(e));
  } catch (const CLI::CallForAllHelp& e) {
    return stdout_status(app.exit(e));
  } catch (const CLI::CallForVersion& e) {
    return stdout_status(app.exit(e));
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 1;
  } catch (const strata::InputError& e) {
    fmt::print(stderr, "strata: error: {}\n", e.what());
    return 1;
  } catch (const std::system_error& e) {
    // fmt::print reports a failed write to stdout this way.
    if (std::ferror(stdout)) return stdout_status(1);
    fmt::print(stderr, "strata: internal error: {}\n", e.what());
    return 3;
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "strata: error: out of memory; the request is too large for this machine's memory limit\n");
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "strata: internal error: {}\n", e.what());
    return 3;
  }
  return stdout_status(ctx.exit_code);
}
