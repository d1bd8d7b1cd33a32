#pragma once
// A one-line progress bar on stderr for long sweeps ("[=====>     ] 12/20 points 3.1 s").
// Thread-safe; drawn only when enabled (not --quiet and stderr is a terminal).
#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>

namespace strata {

struct SearchProgress;
// The search's progress line on stderr ("strata plan: 3.5 s, 1200 plans predicted, ..."), ended
// with a newline when the search reports it is done.
void print_search_progress(const SearchProgress& p);

class ProgressBar {
 public:
  ProgressBar(std::size_t total, bool enabled, std::string what = "points");
  ~ProgressBar();
  void update(std::size_t done);
  void finish();
  bool enabled() const { return enabled_; }
  // True when stderr is a terminal.
  static bool stderr_is_tty();

 private:
  std::size_t total_;
  bool enabled_;
  bool finished_ = false;
  std::string what_;
  std::mutex mu_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace strata
