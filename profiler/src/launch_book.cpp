#include "profiler/launch_book.h"

#include <algorithm>

namespace strata::profiler {

void LaunchBook::begin(int op_index, int instance, std::uint64_t now_ns) {
  std::lock_guard lock(mu_);
  open_op_ = op_index;
  open_instance_ = instance;
  open_since_ = now_ns;
}

void LaunchBook::end(std::uint64_t now_ns) {
  std::lock_guard lock(mu_);
  if (open_op_ >= 0) windows_.push_back({open_op_, open_instance_, open_since_, now_ns});
  open_op_ = open_instance_ = -1;
}

void LaunchBook::on_api_enter(std::uint32_t correlation_id) {
  std::lock_guard lock(mu_);
  if (open_op_ >= 0) by_correlation_[correlation_id] = {open_op_, open_instance_};
}

std::size_t LaunchBook::annotate(std::vector<KernelRecord>& records) const {
  std::lock_guard lock(mu_);
  std::vector<Window> w = windows_;
  std::sort(w.begin(), w.end(), [](const Window& a, const Window& b) { return a.begin_ns < b.begin_ns; });
  std::size_t matched = 0;
  for (auto& r : records) {
    if (auto it = by_correlation_.find(r.correlation_id); r.correlation_id != 0 && it != by_correlation_.end()) {
      r.op_index = it->second.first;
      r.op_instance = it->second.second;
      ++matched;
      continue;
    }
    // Ordering fallback: the last window that began before the record started and ends after it.
    auto it = std::upper_bound(w.begin(), w.end(), r.start_ns, [](std::uint64_t t, const Window& x) { return t < x.begin_ns; });
    if (it != w.begin()) {
      const Window& x = *std::prev(it);
      if (r.start_ns <= x.end_ns) {
        r.op_index = x.op_index;
        r.op_instance = x.instance;
        ++matched;
      }
    }
  }
  return matched;
}

std::size_t LaunchBook::bound_correlations() const {
  std::lock_guard lock(mu_);
  return by_correlation_.size();
}

}  // namespace strata::profiler
