#include "search/threads.h"

#include "costmodel/errors.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <omp.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

namespace strata {

// The CPUs of the affinity mask, as OpenMP counts them (omp_get_num_procs), without starting the
// OpenMP runtime.
int available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  return static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
}

// LLVM's OpenMP runtime registers itself at start-up in a small shared-memory file
// (/dev/shm/__KMP_REGISTERED_LIB_<pid>, kmp_runtime.cpp __kmp_register_library_startup, 1 KiB in
// LLVM 14) and dies by a signal when it cannot size it. Under a file-size limit below that
// (`ulimit -f 0`) say so before any OpenMP call, instead of crashing inside the runtime.
void check_openmp_can_start() {
  constexpr rlim_t kRegistrationBytes = 4096;  // the 1 KiB file, with room for other runtime versions
  struct rlimit lim {};
  if (getrlimit(RLIMIT_FSIZE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < kRegistrationBytes) {
    throw InputError("environment", "ulimit -f",
                     "the file size limit is " + std::to_string(lim.rlim_cur) +
                         " bytes; the OpenMP runtime needs to create a " + std::to_string(kRegistrationBytes) +
                         "-byte registration file to start the search threads (raise it, e.g. ulimit -f 8)");
  }
  remove_truncated_openmp_registration();
}

// The registration file is named by pid and uid (/dev/shm/__KMP_REGISTERED_LIB_<pid>_<uid>). The
// runtime creates it (O_CREAT | O_EXCL), sizes it to 1 KiB and writes its "address-flag-library"
// string; when the create finds the file already there, it maps 1 KiB of it and reads that string
// to see whether its owner is alive. A file shorter than 1 KiB there, left by a process that died
// between the create and the sizing and whose pid this one now has (pids wrap at 32768 in a few
// minutes of a test run), makes that read fault: SIGBUS inside the runtime, before strata can say
// anything (seen three times in CI's sanitizer runs). A file still short after 100 ms has no
// writer (a live owner sizes it microseconds after creating it): remove it so the runtime creates
// its own. A full-size file the runtime reads and handles itself.
void remove_truncated_openmp_registration() {
  constexpr off_t kFileBytes = 1024;  // kmp_runtime.cpp __kmp_register_library_startup, LLVM 14
  char path[64];  // the runtime's own format, "__KMP_REGISTERED_LIB_%d_%d", under /dev/shm
  std::snprintf(path, sizeof path, "/dev/shm/__KMP_REGISTERED_LIB_%d_%d", static_cast<int>(::getpid()), static_cast<int>(::getuid()));
  struct stat st {};
  for (int wait_ms = 0; wait_ms < 100; wait_ms += 2) {
    if (::stat(path, &st) != 0 || st.st_size >= kFileBytes) return;  // none, or one the runtime reads
    ::usleep(2000);
  }
  ::unlink(path);  // if this fails the runtime's own error is the best report left
}

int search_threads(int requested) {
  check_openmp_can_start();
  const int wanted = requested > 0 ? requested : omp_get_max_threads();
  return std::clamp(wanted, 1, available_cores());
}

void cap_openmp_threads_from_environment() {
  const char* env = std::getenv("OMP_NUM_THREADS");
  if (!env) return;
  const long cores = available_cores();
  // OMP_NUM_THREADS may be a list ("8,4" for nested levels); strata uses one level: read the first.
  const std::string text = env;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  const bool number = end != text.c_str() && errno == 0 && v > 0;
  if (number && v <= cores && (*end == '\0' || *end == ',')) return;
  setenv("OMP_NUM_THREADS", std::to_string(number ? std::min<long long>(v, cores) : cores).c_str(), 1);
}

}  // namespace strata
