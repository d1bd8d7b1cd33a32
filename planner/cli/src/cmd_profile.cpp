// strata profile: microbenchmark suites recorded with CUPTI into a profile DB (needs the CUDA part).
#include <sstream>

#include <fmt/format.h>

#include "cli/commands.h"
#include "costmodel/catalog.h"
#include "costmodel/errors.h"
#include "profiler/suite.h"
#ifdef STRATA_HAS_CUPTI
#include "profiler/runner.h"
#endif

namespace strata {

namespace {

struct ProfileArgs {
  std::string out;
  std::string chrome_trace;
  bool quick = false;
  int device = 0;
  int warmup = 2;
  int reps = 10;
  std::vector<std::string> models;
  std::vector<int> tp;
  std::vector<std::int64_t> seq;
  std::vector<std::string> precisions;
  bool list = false;
};

// Far beyond any GPU's tensor-parallel group or any measured sequence; keeps every shape finite.
constexpr int kMaxProfileTp = 1024;
constexpr std::int64_t kMaxProfileSeq = std::int64_t{1} << 24;

}  // namespace

const char* const kNoCudaMessage =
    "this strata was built without the CUDA profiler (configured with STRATA_WITH_CUDA=OFF, or the CUDA toolkit with "
    "CUPTI, cuBLAS and NCCL was not found). Rebuild on a machine with the CUDA toolkit and a GPU: "
    "cmake -S . -B build -DSTRATA_WITH_CUDA=ON";

void register_profile(CLI::App& app, CommandContext& ctx, const std::string& command_line) {
  auto* cmd = app.add_subcommand("profile", "Measure GEMM/attention/elementwise/copy/NCCL microbenchmarks with CUPTI into a profile JSON");
  auto a = std::make_shared<ProfileArgs>();
  cmd->add_option("--out,-o", a->out, "Profile JSON to write (input of `strata calibrate`)");
  cmd->add_flag("--quick", a->quick, "Small suite (3 models, tp 1 and 8, seq 2048; about a minute)");
  cmd->add_option("--device", a->device, "CUDA device index")->check(CLI::NonNegativeNumber);
  cmd->add_option("--warmup", a->warmup, "Untimed launches per op")->check(CLI::Range(0, 1000));
  cmd->add_option("--reps", a->reps, "Recorded launches per op")->check(CLI::Range(1, 1000));
  cmd->add_option("--models", a->models, "Models whose layer shapes to measure (default: 1B..1T set)")->delimiter(',');
  cmd->add_option("--tp", a->tp, "Tensor-parallel degrees (default 1,2,4,8)")->delimiter(',');
  cmd->add_option("--seq", a->seq, "Sequence lengths (default 2048,8192)")->delimiter(',');
  cmd->add_option("--precisions", a->precisions, "bf16,fp16,fp8 (fp8 only where the GPU has it)")->delimiter(',');
  cmd->add_option("--chrome-trace", a->chrome_trace, "Also write a Chrome/Perfetto trace of the session");
  cmd->add_flag("--list", a->list, "Print the suite's ops and exit (no GPU needed)");
  cmd->callback([a, &ctx, command_line] {
    Catalog catalog(Catalog::default_data_dir());
    profiler::SuiteOptions suite;
    suite.quick = a->quick;
    suite.models = a->models;
    suite.tp = a->tp;
    suite.seq = a->seq;
    for (const auto& p : a->precisions)
      if (p != "bf16" && p != "fp16" && p != "fp8" && p != "fp32")
        throw InputError("command line", "--precisions", "expected bf16, fp16, fp8 or fp32, found \"" + p + "\"");
    suite.precisions = a->precisions;
    // Every size is a divisor or a multiplier in the suite's shapes: 0 divides by zero, a negative
    // one gives negative FLOPs.
    for (int tp : a->tp)
      if (tp < 1 || tp > kMaxProfileTp)
        throw InputError("command line", "--tp", "expected tensor-parallel sizes 1.." + std::to_string(kMaxProfileTp) + ", found " + std::to_string(tp));
    for (std::int64_t s : a->seq)
      if (s < 1 || s > kMaxProfileSeq)
        throw InputError("command line", "--seq", "expected sequence lengths 1.." + std::to_string(kMaxProfileSeq) + ", found " + std::to_string(s));
    if (a->list && (!a->out.empty() || !a->chrome_trace.empty()))
      throw InputError("command line", a->out.empty() ? "--chrome-trace" : "--out",
                       "--list only prints the suite and measures nothing; it would be ignored");
    if (a->list) {
      auto ops = profiler::kernel_suite(catalog, suite);
      for (const auto& o : ops)
        fmt::print("{:<12} {:<20} {:<5} m={:<8} n={:<8} k={:<8} batch={:<5} {:.3g} GFLOP {:.3g} MB  ({})\n", o.kind, o.name,
                   o.precision, o.m, o.n, o.k, o.batch, o.flops / 1e9, o.bytes / 1e6, o.source);
      fmt::print("{} kernel ops\n", ops.size());
      ctx.exit_code = 0;
      return;
    }
    if (a->out.empty()) throw InputError("command line", "--out", "expected the profile JSON to write (--out FILE)");
#ifdef STRATA_HAS_CUPTI
    profiler::ProfileOptions o;
    o.out = a->out;
    o.chrome_trace = a->chrome_trace;
    o.suite = suite;
    o.device = a->device;
    o.warmup = a->warmup;
    o.repetitions = a->reps;
    o.command = command_line;
    ctx.exit_code = profiler::run_profile(catalog, o);
#else
    fmt::print(stderr, "strata profile: {}\n", kNoCudaMessage);
    ctx.exit_code = 1;
#endif
  });
}

}  // namespace strata
