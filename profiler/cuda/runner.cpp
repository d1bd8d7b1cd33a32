// `strata profile`: runs the suites on one GPU (collectives across all of them) with CUPTI
// recording every kernel and copy, labels each record with the op that launched it, and writes the
// profile DB.
#include "profiler/runner.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <unistd.h>

#include <cuda_runtime.h>
#include <fmt/format.h>

#include "cupti_activity_source.h"
#include "device_info.h"
#include "microbench.h"
#include "costmodel/file_io.h"
#include "profiler/activity_buffers.h"
#include "profiler/chrome_trace.h"
#include "profiler/launch_book.h"
#include "profiler/profile_db.h"

namespace strata::profiler {

std::string injection_library_path() {
  if (const char* env = std::getenv("STRATA_INJECT_LIB"); env && *env) return env;
#ifdef STRATA_INJECT_LIB
  return STRATA_INJECT_LIB;
#else
  return "";
#endif
}

namespace {

std::string hostname() {
  char buf[256] = {};
  return gethostname(buf, sizeof buf - 1) == 0 ? std::string(buf) : std::string("?");
}

}  // namespace

int run_profile(const Catalog& catalog, const ProfileOptions& o) {
  std::string error;
  const int ndev = cuda_device_count(&error);
  if (ndev <= 0) {
    fmt::print(stderr,
               "strata profile: no usable NVIDIA GPU found ({}). Profiling needs a GPU and its driver; calibrate, predict, plan "
               "and validate work without one.\n",
               ndev < 0 ? "CUDA: " + error : std::string("no CUDA devices"));
    return 1;
  }
  if (o.device >= ndev) {
    fmt::print(stderr, "strata profile: --device {} but only {} GPU(s) are present\n", o.device, ndev);
    return 1;
  }
  try {
    cudaSetDevice(o.device);
    ProfileDb db;
    db.tool = "strata profile";
    db.suite = o.suite.quick ? "quick" : "full";
    db.measured_at = utc_now_iso8601();
    db.host = hostname();
    db.command = o.command;
    db.driver_version = cuda_driver_version();
    db.runtime_version = cuda_runtime_version();
    db.cupti_version = CuptiActivitySource::version();
    db.nccl_version = Microbench::nccl_version();
    db.warmup = o.warmup;
    db.repetitions = o.repetitions;
    for (int d = 0; d < ndev; ++d) {
      DeviceInfo info = query_device(d);
      if (d == o.device) db.devices.insert(db.devices.begin(), info);
      else db.devices.push_back(info);
    }
    const DeviceInfo& dev = db.devices.front();

    std::size_t free_bytes = 0, total_bytes = 0;
    cudaMemGetInfo(&free_bytes, &total_bytes);
    const auto workspace = static_cast<std::size_t>(static_cast<double>(free_bytes) * 0.6);

    SuiteOptions suite = o.suite;
    suite.fp8_supported = dev.compute_capability_major * 10 + dev.compute_capability_minor >= 89;
    suite.max_operand_bytes = static_cast<double>(workspace);
    if (!suite.fp8_supported) db.notes.push_back(fmt::format("fp8 skipped: compute capability {}.{} has no fp8 tensor cores", dev.compute_capability_major, dev.compute_capability_minor));

    // Set up the benchmarks before recording so their setup kernels are not traced.
    Microbench bench(o.device, workspace, 1024u << 20);
    db.cublas_version = bench.cublas_version();
    db.ops = kernel_suite(catalog, suite);
    for (auto& c : memcpy_suite(suite.quick)) db.ops.push_back(c);
    for (auto& c : collective_suite(suite.quick, bench.collective_ranks())) db.ops.push_back(c);
    if (bench.collective_ranks() < 2) db.notes.push_back("NCCL collectives skipped: one GPU present (they need at least two)");

    LaunchBook book;
    ActivityBuffers buffers;
    auto& source = CuptiActivitySource::instance();
    source.bind_launches(&book);
    source.enable(buffers);

    std::vector<KernelRecord> records;
    std::size_t skipped = 0, failed = 0;
    fmt::print(stderr, "strata profile: {} ops on {} (GPU {}), {} warmup + {} recorded launches each\n", db.ops.size(), dev.name,
               o.device, o.warmup, o.repetitions);
    for (std::size_t i = 0; i < db.ops.size(); ++i) {
      const OpLabel& op = db.ops[i];
      std::string why;
      if (!bench.supported(op, &why)) {
        ++skipped;
        if (op.kind == "collective" || op.kind == "memcpy") continue;
        if (skipped <= 20) db.notes.push_back(fmt::format("skipped {} {} {} m={} n={} k={}: {}", op.kind, op.name, op.precision, op.m, op.n, op.k, why));
        continue;
      }
      try {
        for (int w = 0; w < o.warmup; ++w) bench.launch(op);
        bench.synchronize();
        // Very long ops (> ~50 ms at peak) get fewer repetitions.
        int reps = op.flops > 5e13 ? std::min(o.repetitions, 3) : o.repetitions;
        for (int r = 0; r < reps; ++r) {
          book.begin(static_cast<int>(i), r, CuptiActivitySource::timestamp_ns());
          bench.launch(op);
          bench.synchronize();
          book.end(CuptiActivitySource::timestamp_ns());
        }
      } catch (const std::exception& e) {
        book.end(CuptiActivitySource::timestamp_ns());
        ++failed;
        cudaGetLastError();  // clear a sticky launch error where possible
        if (failed <= 20) db.notes.push_back(fmt::format("failed {} {} {}: {}", op.kind, op.name, op.precision, e.what()));
      }
      if ((i + 1) % 200 == 0 || i + 1 == db.ops.size()) {
        auto batch = buffers.collect(source);
        records.insert(records.end(), std::make_move_iterator(batch.begin()), std::make_move_iterator(batch.end()));
        fmt::print(stderr, "  {}/{} ops, {} records\n", i + 1, db.ops.size(), records.size());
      }
    }
    auto rest = buffers.collect(source);
    records.insert(records.end(), std::make_move_iterator(rest.begin()), std::make_move_iterator(rest.end()));
    source.disable();

    book.annotate(records);
    std::size_t unlabelled = 0;
    for (auto& r : records) {
      if (r.op_index < 0) {
        ++unlabelled;  // warmup launches and setup work
        continue;
      }
      db.records.push_back(std::move(r));
    }
    db.dropped_records = buffers.stats().dropped_records;
    if (skipped) db.notes.push_back(fmt::format("{} ops skipped (unsupported here or too large)", skipped));
    if (failed) db.notes.push_back(fmt::format("{} ops failed", failed));
    db.notes.push_back(fmt::format("{} unlabelled records (warmup launches) left out", unlabelled));
    if (db.dropped_records) db.notes.push_back(fmt::format("CUPTI dropped {} records (buffers full)", db.dropped_records));
    save_profile(db, o.out);
    if (!o.chrome_trace.empty()) {
      write_output_file(o.chrome_trace, chrome_trace(db).dump() + "\n", "--chrome-trace");
    }
    fmt::print("strata profile: {} records of {} ops on {} -> {}\n", db.records.size(), db.ops.size() - skipped, dev.name, o.out);
    fmt::print("next: strata calibrate --profile {} -o configs/calibration/<gpu id>.json\n", o.out);
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "strata profile: {}\n", e.what());
    return 1;
  }
}

}  // namespace strata::profiler
