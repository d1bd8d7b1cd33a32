// strata trace: run any CUDA program with the injection library (CUDA_INJECTION64_PATH) and write
// its kernels as a profile DB and a Chrome/Perfetto trace.
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "cli/commands.h"
#include "costmodel/errors.h"
#include "profiler/profile_db.h"
#ifdef STRATA_HAS_CUPTI
#include "profiler/runner.h"
#endif

namespace strata {

namespace {

struct TraceArgs {
  std::string out = "trace.json";
  std::string profile_out;
  std::vector<std::string> command;
};

// "trace.json" -> "trace.profile.json" (used only where strata is built with CUPTI)
[[maybe_unused]] std::string default_profile_path(const std::string& trace) {
  std::filesystem::path p(trace);
  std::string stem = p.extension() == ".json" ? p.stem().string() : p.filename().string();
  return (p.parent_path() / (stem + ".profile.json")).string();
}

}  // namespace

void register_trace(CLI::App& app, CommandContext& ctx) {
  auto* cmd = app.add_subcommand("trace", "Record the kernels of any CUDA program: strata trace --out trace.json -- python train.py");
  auto a = std::make_shared<TraceArgs>();
  cmd->add_option("--out,-o", a->out, "Chrome/Perfetto trace to write (\"traceEvents\" JSON)");
  cmd->add_option("--profile-out", a->profile_out, "Profile DB JSON of the same records (default: <out>.profile.json)");
  cmd->add_option("command", a->command, "The program and its arguments, after --")->required();
  cmd->callback([a, &ctx] {
#ifdef STRATA_HAS_CUPTI
    const std::string lib = profiler::injection_library_path();
    if (lib.empty() || !std::filesystem::exists(lib))
      throw InputError("command line", "trace", "the injection library libstrata_inject.so was not found (set STRATA_INJECT_LIB)");
    const std::string profile_out = a->profile_out.empty() ? default_profile_path(a->out) : a->profile_out;
    std::filesystem::remove(a->out);
    std::filesystem::remove(profile_out);
    pid_t pid = fork();
    if (pid < 0) throw InputError("command line", "trace", std::string("fork failed: ") + std::strerror(errno));
    if (pid == 0) {
      setenv("CUDA_INJECTION64_PATH", lib.c_str(), 1);
      setenv("STRATA_TRACE_OUT", a->out.c_str(), 1);
      setenv("STRATA_TRACE_PROFILE_OUT", profile_out.c_str(), 1);
      std::vector<char*> argv;
      for (auto& s : a->command) argv.push_back(s.data());
      argv.push_back(nullptr);
      execvp(argv[0], argv.data());
      fmt::print(stderr, "strata trace: cannot run \"{}\": {}\n", a->command.front(), std::strerror(errno));
      _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    int child = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    if (!std::filesystem::exists(profile_out)) {
      fmt::print(stderr, "strata trace: the program wrote no trace (exit code {}); did it use CUDA?\n", child);
      ctx.exit_code = child ? child : 1;
      return;
    }
    profiler::ProfileDb p = profiler::load_profile(profile_out);
    fmt::print("strata trace: {} activity records ({} dropped) -> {} and {}\n", p.records.size(), p.dropped_records, a->out, profile_out);
    ctx.exit_code = child;
#else
    fmt::print(stderr, "strata trace: {}\n", kNoCudaMessage);
    ctx.exit_code = 1;
#endif
  });
}

}  // namespace strata
