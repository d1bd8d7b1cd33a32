#pragma once
// Iterative bottleneck alleviation (Aceso, Liu et al. EuroSys'24, §4): from several initial plans,
// predict, read the bottleneck, apply the primitives that relieve it (up to kMaxHops in sequence
// before judging, Aceso's multi-hop), keep improvements; at a local optimum try the whole
// neighbourhood once and relieve its plans that ran out of memory, then a few seeded random
// kicks. Starts run in parallel; each start is a pure function of (workload, options, start
// index, seed), so results do not depend on threads.
#include <cstdint>
#include <vector>

#include "search/evaluator.h"

namespace strata {

constexpr int kMaxHops = 3;              // primitives applied in sequence before judging
constexpr int kBeamWidth = 2;            // non-improving plans carried to the next hop
constexpr int kKicks = 2;                // random restarts from a local optimum, per start
constexpr int kMinStarts = 4;            // starts that climb whatever their bound; fewer explore as much
constexpr double kKickSlack = 1.25;      // a kick may land at most this much slower than the best
constexpr int kKickAttempts = 8;         // random first moves tried per kick before giving up
constexpr int kDefaultTrialsPerStart = 400;  // distinct plans one start may score

// The (tp, pp, cp) starting points (two expert layouts each for MoE models, start_plans) with
// defaults for the rest: even stages, vpp 1, the smallest micro-batch, SP with TP, the distributed
// optimizer with DP, and the least recompute that fits.
std::vector<ParallelPlan> initial_plans(Evaluator& ev);

// One start: hill-climbs from `start`, kicks `kicks` times, and returns the best plan it scored
// (null if `start` is illegal). `trials` bounds the distinct plans it scores.
EvalPtr climb_from(Evaluator& ev, const ParallelPlan& start, std::uint64_t seed, int trials, int kicks = kKicks);

struct BottleneckOutcome {
  EvalPtr best;  // null when no start was legal
  int starts = 0;
};
BottleneckOutcome bottleneck_search(Evaluator& ev);

}  // namespace strata
