#include "search/bottleneck_search.h"

#include "search/threads.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <optional>
#include <unordered_set>

#include <omp.h>

#include "search/primitives.h"

namespace strata {

namespace {

// SplitMix64 (Steele et al. 2014): a well-mixed 64-bit stream from any seed; one per start,
// seeded from seed + start index, so a start's choices do not depend on which thread runs it.
struct SplitMix64 {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  std::size_t below(std::size_t n) { return static_cast<std::size_t>(next() % n); }
};

// One start's view of the evaluator: counts the distinct plans this start asked for (its trial
// budget), independent of what other starts already put in the shared cache.
class Walker {
 public:
  Walker(Evaluator& ev, int trials) : ev_(ev), trials_(trials) {}
  bool exhausted() const { return static_cast<int>(asked_.size()) >= trials_; }
  // Scores a plan; with `must_beat_s` a plan that provably cannot beat it may come back bounded.
  EvalPtr score(const ParallelPlan& p, double must_beat_s = std::numeric_limits<double>::infinity()) {
    if (!asked_.count(p)) {
      if (exhausted()) return nullptr;
      asked_.insert(p);
    }
    return ev_.evaluate(p, must_beat_s);
  }
  // Scores every move's plan; returns the scored ones, best first. Moves are scored cheapest
  // time-bound first, and the bar rises to the best time found: a plan whose bound exceeds a
  // candidate already predicted cannot be the best of this step, so it comes back bounded. When
  // nothing beats `must_beat_s` the bar never moves, so the step's outcome is unchanged; only
  // predictions are saved.
  std::vector<EvalPtr> score_all(const std::vector<Move>& moves, double must_beat_s) {
    std::vector<std::pair<double, const ParallelPlan*>> order;
    order.reserve(moves.size());
    for (const Move& m : moves) order.emplace_back(ev_.time_lower_bound(m.plan), &m.plan);
    std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<EvalPtr> out;
    for (const auto& [bound, plan] : order) {
      EvalPtr e = score(*plan, must_beat_s);
      if (!e) continue;
      if (e->feasible && !e->bounded && e->time_s < must_beat_s) must_beat_s = e->time_s;
      out.push_back(std::move(e));
    }
    std::sort(out.begin(), out.end(), [](const EvalPtr& a, const EvalPtr& b) { return better(*a, *b); });
    return out;
  }
  Evaluator& ev() { return ev_; }

 private:
  Evaluator& ev_;
  int trials_;
  std::unordered_set<ParallelPlan, PlanHash> asked_;
};

// Multi-hop bottleneck alleviation from `cur`: hop 1 applies the primitives aimed at cur's
// bottleneck; if none improves, the best kBeamWidth results are themselves relieved of their own
// bottlenecks, up to kMaxHops. Returns the best improving plan found at the first hop that has
// one, or null.
EvalPtr directed_step(Walker& w, const EvalPtr& cur) {
  std::vector<EvalPtr> frontier{cur};
  for (int hop = 1; hop <= kMaxHops && !frontier.empty(); ++hop) {
    std::vector<EvalPtr> next;
    for (const EvalPtr& f : frontier) {
      std::vector<EvalPtr> scored = w.score_all(propose_moves(w.ev(), *f, MoveScope::directed), cur->time_s);
      next.insert(next.end(), scored.begin(), scored.end());
    }
    std::sort(next.begin(), next.end(), [](const EvalPtr& a, const EvalPtr& b) { return better(*a, *b); });
    next.erase(std::unique(next.begin(), next.end()), next.end());
    if (!next.empty() && better(*next.front(), *cur)) return next.front();
    // Plans known only by a bound have no bottleneck to relieve; they do not carry on.
    next.erase(std::remove_if(next.begin(), next.end(), [&](const EvalPtr& e) { return e == cur || e->bounded; }), next.end());
    if (static_cast<int>(next.size()) > kBeamWidth) next.resize(kBeamWidth);
    frontier = std::move(next);
  }
  return nullptr;
}

// The second hop of the whole neighbourhood: the neighbours that only ran out of memory (least
// over first, kBeamWidth of them) relieved of it by the moves aimed at memory. A change that needs
// memory it does not have (context parallelism given back to data parallelism, fewer expert
// ranks) pays off only with recompute or sharding beside it; the directed steps never propose
// it when it does not address the bottleneck, and one hop alone never fits. Returns the best
// improving plan, or null.
EvalPtr relieve_memory(Walker& w, const std::vector<EvalPtr>& neighbours, const EvalPtr& cur) {
  EvalPtr best;
  int tried = 0;
  for (const EvalPtr& n : neighbours) {
    if (tried == kBeamWidth) break;
    if (n->feasible || n->bounded) continue;
    ++tried;
    std::vector<EvalPtr> scored = w.score_all(propose_moves(w.ev(), *n, MoveScope::directed), cur->time_s);
    if (!scored.empty() && better(*scored.front(), *cur) && (!best || better(*scored.front(), *best))) best = scored.front();
  }
  return best;
}

// Steepest descent: directed multi-hop steps, then the whole one-hop neighbourhood when those
// find nothing; stops at a local optimum or when the trial budget is spent.
EvalPtr descend(Walker& w, EvalPtr cur) {
  while (!w.exhausted()) {
    EvalPtr next = directed_step(w, cur);
    if (!next) {
      std::vector<EvalPtr> all = w.score_all(propose_moves(w.ev(), *cur, MoveScope::all), cur->time_s);
      if (!all.empty() && better(*all.front(), *cur)) next = all.front();
      else next = relieve_memory(w, all, cur);
    }
    if (!next) break;
    cur = std::move(next);
  }
  return cur;
}

}  // namespace

std::vector<ParallelPlan> initial_plans(Evaluator& ev) {
  const Job& w = ev.workload();
  const SearchOptions& o = ev.options();
  const int n = o.num_gpus;
  const int max_tp = o.allow_tp_across_nodes ? n : std::min(n, w.cluster.gpus_per_node);
  // Context parallelism is worth starting from only for long sequences: at least 4K tokens per
  // CP rank (shorter shards make the ring exchange hard to hide).
  constexpr std::int64_t kMinTokensPerCpRank = 4096;
  std::vector<ParallelPlan> shapes;
  for (int cp = 1; cp <= n; cp *= 2) {
    if (o.cp ? *o.cp != cp : (cp > 1 && w.training.seq_length / cp < kMinTokensPerCpRank)) continue;
    for (int tp = 1; tp <= max_tp; tp *= 2) {
      if (n % (tp * cp) != 0) continue;
      for (int pp : divisors(n / (tp * cp))) {
        if (pp > w.model.num_layers) break;
        for (const ParallelPlan& shape : start_plans(o, w, tp, pp, cp)) {
          if (w.training.global_batch_size % shape.dp != 0) continue;
          // The least recompute that passes the memory pre-check (or the fixed one), else full. A
          // shape illegal at the start's micro-batch (too many micro-batches for the pipeline steps
          // strata simulates, at huge batches) starts at the smallest doubling that is legal; one
          // illegal without interleaving (Megatron-Core overlaps the MoE all-to-all with pp > 1 only
          // when interleaved) at the fewest model chunks the search interleaves.
          std::vector<ParallelPlan> layouts = {shape};
          for (int v = 2; !o.vpp && pp >= 2 && v <= max_virtual_stages(w.model, pp); ++v)
            if (auto split = interleaved_stage_layers(w.model, pp, v)) {
              layouts.push_back(shape);
              layouts.back().vpp = v;
              layouts.back().stage_layers = std::move(*split);
              break;
            }
          std::optional<ParallelPlan> pick;
          const int sizes = o.micro_batch_size ? 1 : 8;  // a fixed micro-batch stays fixed
          for (ParallelPlan p : layouts) {
            for (int i = 0; i < sizes && !pick; ++i, p.micro_batch_size *= 2) {
              for (RecomputeGranularity g : {RecomputeGranularity::none, RecomputeGranularity::selective, RecomputeGranularity::full}) {
                p.recompute = {g, -1};
                if (!ev.illegal_reason(p).empty()) continue;
                pick = p;
                if (ev.may_fit(p)) break;
              }
            }
            if (pick) break;
          }
          if (pick) shapes.push_back(*pick);
        }
      }
    }
  }
  // Predict the shapes cheapest-bound first and keep those that could still beat the best start
  // seen: a shape whose busiest stage alone (a bound whatever the interleaving) takes longer than
  // a start already predicted would mostly climb back into the region other starts cover. The
  // first kMinStarts that fit are kept whatever their bound: a start's bound is at its own
  // micro-batch and recompute, and where the host issues each layer (GPT-OSS-120B on 64 H100s) a
  // larger micro-batch makes a shape whose start looked slowest the fastest (4,946 -> 6,457
  // tokens/s/GPU when the search climbed from one start only). Serial and in a fixed order, so the
  // set of starts does not depend on threads.
  std::vector<double> bound(shapes.size());
  for (std::size_t i = 0; i < shapes.size(); ++i) bound[i] = ev.busy_lower_bound(shapes[i]);
  std::vector<std::size_t> order(shapes.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return bound[a] < bound[b]; });
  std::vector<ParallelPlan> starts;
  double best = std::numeric_limits<double>::infinity();
  int fitting = 0;
  for (std::size_t i : order) {
    if (bound[i] > best && fitting >= kMinStarts) continue;
    EvalPtr e = ev.evaluate(shapes[i]);
    if (!e) continue;
    if (e->feasible) {
      best = std::min(best, e->time_s);
      ++fitting;
    }
    starts.push_back(e->plan);
  }
  return starts;
}

EvalPtr climb_from(Evaluator& ev, const ParallelPlan& start, std::uint64_t seed, int trials, int kicks) {
  Walker w(ev, trials);
  EvalPtr best = w.score(start);
  if (!best) return nullptr;
  best = descend(w, best);
  // Kicks: a short random walk of legal moves away from the local optimum, then descend again
  // (iterated local search); keep what is better. A kick whose first move lands far behind (bound
  // above kKickSlack x the best) is abandoned unpredicted and does not count: in a rugged
  // landscape (MoE models, where most moves run out of memory or flood the all-to-all) most random
  // moves do, and counting them ended the search after a handful of predictions. Up to
  // kKickAttempts tries per kick.
  SplitMix64 rng{seed};
  for (int k = 0, attempts = 0; k < kicks && attempts < kicks * kKickAttempts && !w.exhausted(); ++attempts) {
    EvalPtr at = best;
    for (int step = 0; step < 2; ++step) {
      std::vector<Move> moves = propose_moves(ev, *at, MoveScope::all);
      if (moves.empty()) break;
      const ParallelPlan& p = moves[rng.below(moves.size())].plan;
      EvalPtr e = w.score(p, best->feasible ? kKickSlack * best->time_s : std::numeric_limits<double>::infinity());
      if (!e || e->bounded) break;
      at = e;
    }
    if (at == best) continue;
    ++k;
    EvalPtr cand = descend(w, at);
    if (better(*cand, *best)) best = cand;
  }
  return best;
}

BottleneckOutcome bottleneck_search(Evaluator& ev) {
  const SearchOptions& o = ev.options();
  std::vector<ParallelPlan> starts = initial_plans(ev);
  // Starts that fit in memory are enough when there are any; otherwise climb from all of them
  // (memory-directed primitives may still find a plan that fits).
  std::vector<ParallelPlan> fitting;
  for (const auto& p : starts)
    if (EvalPtr e = ev.evaluate(p); e && e->feasible) fitting.push_back(p);
  if (!fitting.empty()) starts = std::move(fitting);
  BottleneckOutcome out;
  out.starts = static_cast<int>(starts.size());
  if (starts.empty()) return out;
  // Where few starts remain (an MoE model's experts fit only sharded widely, so one shape fits),
  // they share the trial budget and the kicks of kMinStarts starts.
  const int budget_starts = std::max(out.starts, kMinStarts);
  const int per_start = o.max_trials > 0 ? std::max(10, o.max_trials / out.starts) : kDefaultTrialsPerStart * budget_starts / out.starts;
  const int kicks = (kKicks * budget_starts + out.starts - 1) / out.starts;
  std::vector<EvalPtr> results(starts.size());
  const int n = static_cast<int>(starts.size());
  const int threads = search_threads(o.threads);
  parallel_for(n, threads, 1, [&](int i) { results[i] = climb_from(ev, starts[i], o.seed + static_cast<std::uint64_t>(i), per_start, kicks); });
  for (const EvalPtr& e : results)
    if (e && (!out.best || better(*e, *out.best))) out.best = e;
  return out;
}

}  // namespace strata
