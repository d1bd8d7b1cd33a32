#include "search/evaluator.h"

#include <algorithm>

#include <fmt/format.h>

#include "search/memory_bound.h"

namespace strata {

namespace {

const std::string kMemory = "memory";

// The pre-check may only rule out plans that clearly do not fit: a small margin keeps a plan on
// the edge for the cost model to decide.
constexpr double kPrecheckMargin = 1.0005;

}  // namespace

const std::string& Evaluation::bottleneck_kind() const { return prediction ? prediction->bottleneck.kind : kMemory; }

bool better(const Evaluation& a, const Evaluation& b) {
  if (a.feasible != b.feasible) return a.feasible;
  if (a.feasible) {
    if (a.time_s != b.time_s) return a.time_s < b.time_s;
  } else if (a.memory_GiB != b.memory_GiB) {
    return a.memory_GiB < b.memory_GiB;
  }
  return plan_less(a.plan, b.plan);
}

Evaluator::Evaluator(const Job& workload, const SearchOptions& options, const CostModel& model)
    : workload_(workload),
      options_(options),
      model_(model),
      exact_memory_(dynamic_cast<const AnalyticalCostModel*>(&model) != nullptr),
      capacity_GiB_(workload.cluster.gpu.memory_GiB - workload.runtime.memory_reserve_GiB),
      start_(std::chrono::steady_clock::now()),
      last_progress_(start_) {}

Job Evaluator::job_for(const ParallelPlan& plan) const {
  Job j = workload_;
  j.plan = plan;
  return j;
}

std::string Evaluator::illegal_reason(const ParallelPlan& plan) const { return plan_illegal_reason(job_for(plan), options_); }

bool Evaluator::may_fit(const ParallelPlan& plan) const {
  if (!exact_memory_) return true;
  return estimate_plan_memory(job_for(plan)).GiB <= capacity_GiB_ * kPrecheckMargin;
}

Evaluator::Bounds Evaluator::bounds(const ParallelPlan& plan) {
  if (!exact_memory_) return {};
  {
    std::lock_guard lock(mu_);
    if (auto it = bounds_.find(plan); it != bounds_.end()) return it->second;
  }
  Job one = job_for(plan);
  one.plan.vpp = 1;
  one.training.global_batch_size = static_cast<std::int64_t>(plan.dp) * plan.micro_batch_size;  // one micro-batch
  const Prediction pred = model_.predict(one);
  Bounds b;
  if (static_cast<int>(pred.stages.size()) == plan.pp) {
    const double m = static_cast<double>(workload_.training.global_batch_size / (static_cast<std::int64_t>(plan.dp) * plan.micro_batch_size));
    double before = 0;  // sum over earlier stages of f_j + b_j
    for (const StagePrediction& st : pred.stages) {
      const double per_mb = st.forward_s + st.backward_s;
      b.fill = std::max(b.fill, before / plan.vpp + m * per_mb);
      b.busy = std::max(b.busy, m * per_mb);
      before += per_mb;
    }
  }
  std::lock_guard lock(mu_);
  bounds_.emplace(plan, b);
  return b;
}

double Evaluator::time_lower_bound(const ParallelPlan& plan) { return bounds(plan).fill; }

std::int64_t Evaluator::bound_predictions() const {
  std::lock_guard lock(mu_);
  return static_cast<std::int64_t>(bounds_.size());
}

double Evaluator::busy_lower_bound(const ParallelPlan& plan) { return bounds(plan).busy; }

EvalPtr Evaluator::evaluate(const ParallelPlan& plan, double must_beat_s) {
  auto bounded_view = [&](double bound) {
    auto b = std::make_shared<Evaluation>();
    b->plan = plan;
    b->feasible = true;  // passed the memory pre-check
    b->time_s = bound;
    b->bounded = true;
    return EvalPtr(b);
  };
  {
    std::unique_lock lock(mu_);
    if (auto it = cache_.find(plan); it != cache_.end()) {
      EvalPtr hit = it->second;
      lock.unlock();
      if (hit && hit->prediction && must_beat_s < std::numeric_limits<double>::infinity()) {
        const double bound = time_lower_bound(plan);
        if (bound > must_beat_s) return bounded_view(bound);
      }
      return hit;
    }
  }
  const Job job = job_for(plan);
  if (!plan_illegal_reason(job, options_).empty()) {
    std::lock_guard lock(mu_);
    cache_.emplace(plan, nullptr);  // remembered as illegal
    return nullptr;
  }
  auto e = std::make_shared<Evaluation>();
  e->plan = plan;
  bool predicted = false;
  if (exact_memory_) {
    const MemoryEstimate m = estimate_plan_memory(job);
    if (m.GiB > capacity_GiB_ * kPrecheckMargin) {
      e->memory_GiB = m.GiB;
      e->memory_stage = m.stage;
      e->stage_memory_GiB = m.stage_GiB;
    } else {
      predicted = true;
    }
  } else {
    predicted = true;
  }
  if (predicted && must_beat_s < std::numeric_limits<double>::infinity()) {
    const double bound = time_lower_bound(plan);
    if (bound > must_beat_s) return bounded_view(bound);
  }
  if (predicted) {
    auto pred = std::make_shared<Prediction>(model_.predict(job));
    e->feasible = pred->feasible;
    e->time_s = pred->feasible ? pred->iteration_time_s : std::numeric_limits<double>::infinity();
    e->memory_GiB = pred->memory_per_gpu_GiB;
    for (const auto& s : pred->stages) {
      e->stage_memory_GiB.push_back(s.memory.total_GiB);
      if (s.memory.total_GiB >= e->memory_GiB) e->memory_stage = s.stage;
    }
    e->prediction = std::move(pred);
  }
  EvalPtr out = e;
  {
    std::lock_guard lock(mu_);
    auto [it, inserted] = cache_.emplace(plan, out);
    if (!inserted) return it->second;  // another thread got there first: same value
    (predicted ? predictions_ : pruned_).fetch_add(1);
    if (!best_ || better(*out, *best_)) best_ = out;
  }
  if (options_.on_progress) maybe_report_progress();
  return out;
}

std::vector<EvalPtr> Evaluator::all() const {
  std::vector<EvalPtr> out;
  {
    std::lock_guard lock(mu_);
    out.reserve(cache_.size());
    for (const auto& [plan, e] : cache_)
      if (e) out.push_back(e);
  }
  std::sort(out.begin(), out.end(), [](const EvalPtr& a, const EvalPtr& b) { return plan_less(a->plan, b->plan); });
  return out;
}

void Evaluator::finish_progress() {
  std::lock_guard lock(mu_);
  if (!progress_printed_ || !options_.on_progress) return;
  options_.on_progress(progress_report(std::chrono::steady_clock::now(), true));
  progress_printed_ = false;
}

SearchProgress Evaluator::progress_report(std::chrono::steady_clock::time_point now, bool done) const {
  SearchProgress p;
  p.seconds = std::chrono::duration<double>(now - start_).count();
  p.plans_predicted = predictions_.load();
  p.ruled_out_by_memory = pruned_.load();
  if (best_ && best_->feasible) {
    const double tokens = static_cast<double>(workload_.training.global_batch_size) * static_cast<double>(workload_.training.seq_length);
    p.best_tokens_per_sec_per_gpu = tokens / best_->time_s / options_.num_gpus;
  }
  p.done = done;
  return p;
}

void Evaluator::maybe_report_progress() {
  // A report at most every half second, starting after the first second (searches shorter than a
  // second report nothing).
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mu_);
  if (now - start_ < std::chrono::seconds(1) || now - last_progress_ < std::chrono::milliseconds(500)) return;
  last_progress_ = now;
  progress_printed_ = true;
  options_.on_progress(progress_report(now, false));
}

}  // namespace strata
