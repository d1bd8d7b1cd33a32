// libstrata_inject.so: loaded into any CUDA program through CUDA_INJECTION64_PATH (the driver calls
// InitializeInjection() during cuInit). Records every kernel, copy and memset with CUPTI and, at
// exit, writes them as a profile DB ($STRATA_TRACE_PROFILE_OUT) and a Chrome/Perfetto trace
// ($STRATA_TRACE_OUT). Processes of a multi-process job (RANK set and not 0) add ".rank<N>".
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <unistd.h>

#include "cupti_activity_source.h"
#include "profiler/activity_buffers.h"
#include "profiler/chrome_trace.h"
#include "profiler/profile_db.h"

namespace {

using namespace strata::profiler;

ActivityBuffers* g_buffers = nullptr;
std::once_flag g_init, g_written;

std::string per_rank(const std::string& path) {
  const char* rank = std::getenv("RANK");
  if (!rank || !*rank || std::string(rank) == "0") return path;
  std::filesystem::path p(path);
  return (p.parent_path() / (p.stem().string() + ".rank" + rank + p.extension().string())).string();
}

std::string command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (auto& c : s)
    if (c == '\0') c = ' ';
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

void write_trace() {
  std::call_once(g_written, [] {
    try {
      auto& source = CuptiActivitySource::instance();
      ProfileDb db;
      db.tool = "strata trace";
      db.suite = "trace";
      db.measured_at = utc_now_iso8601();
      char host[256] = {};
      gethostname(host, sizeof host - 1);
      db.host = host;
      db.command = command_line();
      db.cupti_version = CuptiActivitySource::version();
      db.records = g_buffers->collect(source);
      source.disable();
      db.devices = source.devices();
      db.dropped_records = g_buffers->stats().dropped_records;
      db.notes.push_back("records of an arbitrary program: no op labels (calibrate needs `strata profile`)");
      const char* profile_out = std::getenv("STRATA_TRACE_PROFILE_OUT");
      const char* trace_out = std::getenv("STRATA_TRACE_OUT");
      if (profile_out && *profile_out) save_profile(db, per_rank(profile_out));
      if (trace_out && *trace_out) {
        std::ofstream t(per_rank(trace_out));
        t << chrome_trace(db).dump() << "\n";
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "strata trace: could not write the trace: %s\n", e.what());
    }
  });
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  std::call_once(g_init, [] {
    try {
      g_buffers = new ActivityBuffers();  // lives until exit; CUPTI may call back at any time
      CuptiActivitySource::instance().enable(*g_buffers);
      CuptiActivitySource::instance().flush_at_context_destroy();
      std::atexit(write_trace);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "strata trace: CUPTI setup failed: %s\n", e.what());
    }
  });
  return 1;
}
