#pragma once
// Helpers shared by the tests: the built-in catalog and workloads (catalog_util.h), a standard job,
// running the strata binary.
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sys/wait.h>
#include <memory>
#include <string>

#include "catalog_util.h"
#include "costmodel/catalog.h"
#include "costmodel/errors.h"
#include "costmodel/job.h"
#include "costmodel/prediction.h"

namespace strata::test {

// Every part of the critical stage's breakdown; a prediction's adds up to its iteration time.
inline double breakdown_sum(const TimeBreakdown& b) {
  return b.compute_s + b.recompute_s + b.tp_comm_s + b.cp_comm_s + b.ep_comm_s + b.host_s + b.offload_s + b.pp_comm_s + b.dp_comm_s +
         b.bubble_s + b.imbalance_s + b.optimizer_s + b.step_overhead_s;
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

// The same on pp 4 x vpp 2 with uneven stages (23, 25, 25, 23 layers): a split Megatron runs only
// from an explicit --pipeline-model-parallel-layout.
inline Job gpt3_175b_uneven_interleaved_job() {
  Job job = gpt3_175b_job();
  job.plan.pp = 4;
  job.plan.dp = 32;
  job.plan.vpp = 2;
  job.plan.stage_layers = {23, 25, 25, 23};
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

// Runs `f` and returns the message of the InputError it throws, or a marker no expected message
// contains when it throws none (so a CHECK on the message fails).
template <class F>
std::string input_error(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "<no InputError thrown>";
}

// A file in the temporary directory with the given bytes, removed when the object goes away.
class TempFile {
 public:
  TempFile(const std::string& name, const std::string& content) {
    static std::atomic<int> counter{0};
    path_ = (std::filesystem::temp_directory_path() /
             ("strata_test_" + std::to_string(getpid()) + "_" + std::to_string(counter++) + "_" + name))
                .string();
    std::ofstream(path_, std::ios::binary) << content;
  }
  ~TempFile() {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Path of a test input under tests/data/.
inline std::string data_file(const std::string& name) { return std::string(STRATA_SOURCE_DIR) + "/tests/data/" + name; }

}  // namespace strata::test
