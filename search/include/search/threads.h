#pragma once
// How many OpenMP threads strata runs: never more than the machine has. A request for 65,536
// threads (--threads or OMP_NUM_THREADS) would otherwise make OpenMP try to start them all, which
// ends in a crash; the search result does not depend on the count.

#include <exception>
#include <mutex>

namespace strata {

// body(i) for i in [0, n) on `threads` OpenMP threads, `chunk` iterations at a time. An exception
// escaping an OpenMP region ends the process (std::terminate): the first one a body throws
// (InputError, bad_alloc under a memory limit) is caught and rethrown after the loop instead.
// Never inlined: clang starts the OpenMP runtime (__kmpc_global_thread_num) at the entry of the
// function that holds a parallel region, so a caller's check_openmp_can_start() must run in
// another function, before this one is entered.
template <class Body>
[[gnu::noinline]] void parallel_for(int n, int threads, int chunk, Body&& body) {
  std::exception_ptr first;
  std::mutex mu;
#pragma omp parallel for schedule(dynamic, chunk) num_threads(threads)
  for (int i = 0; i < n; ++i) {
    try {
      body(i);
    } catch (...) {
      std::lock_guard lock(mu);
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

// The cores this process may run on: the CPUs of its affinity mask (what OpenMP's omp_get_num_procs says).
int available_cores();
// `requested` 0: OpenMP's default (OMP_NUM_THREADS, else the cores); either way at most the cores.
// Throws InputError when a file-size limit (ulimit -f) would keep the OpenMP runtime from starting.
int search_threads(int requested);
// Throws InputError when a file-size limit (ulimit -f) would keep the OpenMP runtime from starting
// (it dies by a signal then), and removes a truncated registration file a dead process with this
// pid left behind (the runtime would crash reading it); called before the first OpenMP call of a
// search or sweep.
void check_openmp_can_start();
// The second half of check_openmp_can_start, on its own for its test.
void remove_truncated_openmp_registration();
// Called first thing in main, before any OpenMP call: an OMP_NUM_THREADS larger than the cores,
// or not a positive number, is replaced by the core count so the runtime never starts more.
void cap_openmp_threads_from_environment();

}  // namespace strata
