// The command line: the input is split at newlines into arguments after "strata", and parsed by
// the real predict / validate / calibrate / list subcommands (CLI11 options, job building, plan and runs
// files, prediction). Outputs go to /dev/null; inputs that ask to write a file (-o/--output) are
// skipped, so the fuzzer never writes files.
#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Subcommands print reports to stdout: discard them (libFuzzer reports on stderr).
  int devnull = open("/dev/null", O_WRONLY);
  if (devnull >= 0) dup2(devnull, STDOUT_FILENO);
  // `--megatron-args -` reads standard input: give it an empty one rather than the terminal.
  int empty_in = open("/dev/null", O_RDONLY);
  if (empty_in >= 0) dup2(empty_in, STDIN_FILENO);
  return 0;
}

namespace {

bool writes_a_file(const std::string& arg) {
  if (arg.rfind("--output", 0) == 0 || arg.rfind("--trace", 0) == 0) return true;
  // "-o", "-ofile" and combined short flags such as "-ho".
  return arg.size() > 1 && arg[0] == '-' && arg[1] != '-' && arg.find('o') != std::string::npos;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> args{"strata"};
  std::string cur;
  for (std::size_t i = 0; i < size; ++i) {
    const char c = static_cast<char>(data[i]);
    if (c == '\n') {
      args.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  if (!cur.empty()) args.push_back(cur);
  if (args.size() > 64) return 0;
  for (const auto& a : args)
    if (writes_a_file(a)) return 0;
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());

  CLI::App app{"strata (fuzz)"};
  app.require_subcommand(1);
  strata::CommandContext ctx;
  strata::register_predict(app, ctx);
  strata::register_validate(app, ctx);
  strata::register_calibrate(app, ctx);
  strata::register_list(app, ctx);
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::Error&) {
    // Usage errors, --help and --version: CLI11 reports them, main() maps them to exit codes.
  } catch (const strata::InputError&) {
  }
  return 0;
}
