#pragma once
// Helpers shared by the tests: the built-in catalog, a standard job, running the strata binary.
#include <array>
#include <cstdio>
#include <sys/wait.h>
#include <memory>
#include <string>

#include "costmodel/catalog.h"
#include "costmodel/job.h"

namespace strata::test {

inline const Catalog& catalog() {
  static Catalog c(STRATA_SOURCE_DIR);
  return c;
}

// GPT-3 175B on 1024 A100-80GB (the Megatron-LM SC21 / Korthikanti 2022 setting).
inline Job gpt3_175b_job() {
  Job job;
  job.model = catalog().model("gpt3-175b");
  job.cluster = catalog().cluster("dgx-a100-hdr");
  job.training.global_batch_size = 1536;
  job.training.seq_length = 2048;
  job.training.precision = Precision::bf16;
  job.plan.tp = 8;
  job.plan.pp = 16;
  job.plan.dp = 8;
  job.plan.sequence_parallel = true;
  job.plan.recompute.granularity = RecomputeGranularity::selective;
  job.plan.distributed_optimizer = true;
  job.calibration = catalog().calibration_or_default(job.cluster.gpu);
  return job;
}

struct RunResult {
  int exit_code = -1;
  std::string out;  // stdout and stderr together
};

// Runs the built strata executable with `args` (shell syntax) and captures its output.
inline RunResult run_strata(const std::string& args) {
  std::string cmd = std::string("STRATA_DATA_DIR='") + STRATA_SOURCE_DIR + "' '" + STRATA_EXE + "' " + args + " 2>&1";
  RunResult r;
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  if (!pipe) return r;
  std::array<char, 4096> buf{};
  std::size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe.get())) > 0) r.out.append(buf.data(), n);
  int status = pclose(pipe.release());
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace strata::test
