#pragma once
// Entry points of the CUDA part (strata_profiler_cuda, built only with the CUDA toolkit and CUPTI;
// planner/cli compiles its calls under STRATA_HAS_CUPTI). No CUDA type appears here.
#include <string>
#include <vector>

#include "costmodel/catalog.h"
#include "profiler/suite.h"

namespace strata::profiler {

struct ProfileOptions {
  std::string out;          // profile DB JSON to write
  std::string chrome_trace; // optional Chrome trace of the session
  SuiteOptions suite;
  int device = 0;
  int warmup = 2;
  int repetitions = 10;
  std::string command;      // the command line, recorded in the file
};

// Runs the suites on the GPU with CUPTI recording; returns the process exit code (1 and a message
// on stderr when no GPU is present).
int run_profile(const Catalog& catalog, const ProfileOptions& options);

// Path of the injection library (libstrata_inject.so) to put in CUDA_INJECTION64_PATH.
std::string injection_library_path();

}  // namespace strata::profiler
