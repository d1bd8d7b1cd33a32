#pragma once
// The space of parallel plans the searcher walks, and every legality rule in one place: the cost
// model's own check_plan (divisibility, layers >= stages, vpp rules, ...) plus the search-level
// rules (world size, tp within the NVLink domain, the runtime's capabilities, the user's fixed
// dimensions, and canonical forms so that one physical plan has exactly one representation).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "costmodel/job.h"
#include "search/searcher.h"

namespace strata {

// "" when `job.plan` is a legal point of the search space for `options`, else the first rule it
// breaks, phrased for a user ("tp=16 spans nodes of 8 GPUs (--allow-tp-across-nodes)").
std::string plan_illegal_reason(const Job& job, const SearchOptions& options);

// Brings a plan into canonical form after a primitive changed it: no SP without TP, the
// distributed optimizer exactly when there is a data-parallel group to shard over (unless the
// plan turned it off explicitly while sharding was possible), an even split stored as an empty
// stage_layers, full recompute of every layer stored as num_layers = -1.
void canonicalize(ParallelPlan& plan, int num_layers);

// A plan of shape tp x pp x cp on options.num_gpus GPUs, the rest from the user's fixed options
// or the search's starting defaults: dp fills the GPUs, micro-batch 1, no interleaving, SP
// whenever tp > 1, the distributed optimizer when dp*cp > 1; an MoE model's experts sharded as
// widely as Megatron allows (ep divides the experts and tiles dp x cp: the experts' weights,
// gradients and optimizer states are most of its memory), whole (etp 1). Recompute is the caller's.
ParallelPlan start_plan(const SearchOptions& options, const ModelSpec& model, int tp, int pp, int cp);

// The starts of shape tp x pp x cp the bottleneck search climbs from: start_plan, and for an MoE
// model whose ep is not fixed also the same shape with the widest expert parallelism whose
// all-to-all stays inside one NVLink domain (ep x etp <= GPUs per node), where that differs. The
// two sit in different basins: the widest ep needs the least memory but sends the all-to-all
// over the network, the node-local one is fast but holds more experts per GPU (recompute or more
// pipeline stages pay for it), and the moves between them cross plans slower than both (DeepSeek-V3
// on 1024 H100s: ep 64 at tp 1 x pp 16 starts 85% slower than ep 8 at the same shape).
std::vector<ParallelPlan> start_plans(const SearchOptions& options, const Job& job, int tp, int pp, int cp);

// The split the search interleaves `vpp` model chunks per stage with at pipeline size pp: an empty
// vector for Megatron's even split, Megatron's split with the embedding and loss counted as layers
// (accounted_stage_layers) where the layers do not divide, and, only where neither gives this pp
// any interleaving, the balanced layout that counts the MTP layers too (standard_stage_layers:
// DeepSeek-V3's and Kimi-K2's 61 layers, Megatron-Bridge's "Et|(tt|)*30mL"). nullopt when the
// search does not interleave vpp chunks at this pp. The balanced layout is kept to that case:
// admitting it beside the even splits made the GPT-3 175B search on 1024 GPUs predict 123 plans
// instead of 84 and end on slower plans for 7 of bench_search's workloads.
std::optional<std::vector<int>> interleaved_stage_layers(const ModelSpec& model, int pp, int vpp);

// Positive divisors of n in increasing order.
std::vector<int> divisors(std::int64_t n);
// Smallest prime factor of n (n >= 2).
int smallest_prime_factor(int n);

// The uniform grid of the exhaustive reference: even stages, whole-model recompute none /
// selective / full, sequence parallelism on whenever tp > 1 (hand-tuning practice: it only saves
// memory), the distributed optimizer on when dp*cp > 1, and every legal combination of tp (powers
// of two), pp, cp (powers of two), vpp, micro-batch size (divisors of the per-replica batch up to
// kMaxGridMicroBatch) and, for MoE models, ep. Illegal points are left out.
constexpr int kMaxGridMicroBatch = 64;
std::vector<ParallelPlan> uniform_grid(const Job& workload, const SearchOptions& options);

// Hash and a deterministic total order of plans (for caches and tie-breaking).
std::uint64_t plan_hash(const ParallelPlan& p);
struct PlanHash {
  std::size_t operator()(const ParallelPlan& p) const { return static_cast<std::size_t>(plan_hash(p)); }
};
bool plan_less(const ParallelPlan& a, const ParallelPlan& b);

}  // namespace strata
