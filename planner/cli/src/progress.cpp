#include "cli/progress.h"

#include <cstdio>
#include <unistd.h>

#include <fmt/format.h>

#include "search/searcher.h"

namespace strata {

ProgressBar::ProgressBar(std::size_t total, bool enabled, std::string what)
    : total_(total), enabled_(enabled && total > 0), what_(std::move(what)), start_(std::chrono::steady_clock::now()) {
  if (enabled_) update(0);
}

ProgressBar::~ProgressBar() { finish(); }

bool ProgressBar::stderr_is_tty() { return isatty(fileno(stderr)) != 0; }

void ProgressBar::update(std::size_t done) {
  if (!enabled_) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (finished_) return;
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(kWidth * done / total_);
  std::string bar(static_cast<std::size_t>(filled), '=');
  if (filled < kWidth) bar += '>';
  bar.resize(kWidth, ' ');
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  fmt::print(stderr, "\r[{}] {}/{} {} {:.1f} s", bar, done, total_, what_, secs);
  std::fflush(stderr);
}

void ProgressBar::finish() {
  if (!enabled_) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (finished_) return;
  finished_ = true;
  // Clear the line so the table starts clean.
  fmt::print(stderr, "\r{:<{}}\r", "", 72);
  std::fflush(stderr);
}

void print_search_progress(const SearchProgress& p) {
  if (p.done) {
    std::fprintf(stderr, "\n");
    return;
  }
  const std::string best = p.best_tokens_per_sec_per_gpu > 0 ? fmt::format("best {:.0f} tokens/s/GPU", p.best_tokens_per_sec_per_gpu)
                                                             : std::string("none fits yet");
  std::fprintf(stderr, "\rstrata plan: %.1f s, %lld plans predicted, %lld ruled out by memory, %s   ", p.seconds,
               static_cast<long long>(p.plans_predicted), static_cast<long long>(p.ruled_out_by_memory), best.c_str());
  std::fflush(stderr);
}

}  // namespace strata
