#pragma once
// Capacity sweeps: the plan search run at every point of a cartesian product of GPU type, network
// bandwidth, sequence length, global batch and GPU count, turned into time-to-train, GPU-hours,
// cost, energy and CO2 for a token budget; and the reverse question (the smallest GPU count that
// meets a deadline).
//
// Monotonicity rule (documented guarantee): within a group of points that differ only in the GPU
// count, the reported time-to-train never increases as GPUs are added, and the plan reported at N
// GPUs is at least as fast as the plan reported at the next smaller count M scaled up by data
// parallelism. A user who can run the M-GPU configuration can run it on the larger allocation, so,
// walking each group in ascending GPU count:
//   1. the M-GPU plan is scaled by data parallelism (dp x N/M, same tp/pp/cp/vpp/mbs/recompute),
//      predicted, and taken when it is legal, fits in memory and is faster than the searched best
//      at N ("scaled");
//   2. if the result is still slower than (or, where nothing was found, not as good as) the M-GPU
//      plan, the M-GPU plan is kept and the row says it uses only M of the N GPUs ("kept"):
//      GPU-hours, cost and energy are charged for the M GPUs it uses (the others can be given
//      back), and time-to-train equals M's. This happens when the global batch cannot feed more
//      data-parallel ranks.
// Rows say which of the three (searched, scaled, kept) they report.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "costmodel/job.h"
#include "costmodel/predictor.h"
#include "search/searcher.h"

namespace strata {

// One point of the sweep. `group` numbers the points that differ only in `gpus`.
struct SweepPoint {
  std::string gpu;                         // as the user named it (--gpu / --cluster entry)
  int gpus = 0;
  std::optional<double> inter_node_GBps;   // per GPU, per direction; unset: the cluster's own
  std::int64_t seq = 0;
  std::int64_t global_batch = 0;
  int group = 0;
};

// The axes of a sweep; the points are their cartesian product (GPU count fastest).
struct SweepAxes {
  std::vector<std::string> gpus_types;
  std::vector<int> gpu_counts;
  std::vector<std::optional<double>> inter_node_GBps;  // {nullopt} when not swept
  std::vector<std::int64_t> seqs;
  std::vector<std::int64_t> global_batches;
};
std::vector<SweepPoint> sweep_points(const SweepAxes& axes);

// GPU counts to try for a deadline question when no list is given: gpus_per_node x 2^k up to cap
// (whole nodes). A node size that is not a power of two (a 72-GPU NVL72 rack) gives 8 x 2^k
// instead: global batches are powers of two, so a data-parallel size with a factor 9 rarely
// divides them, and a job can run on a power-of-two subset of a rack's GPUs.
std::vector<int> node_ladder(int gpus_per_node, int cap);

struct CapacityOptions {
  double tokens = 0;                              // token budget to train
  std::optional<double> price_per_gpu_hour_usd;   // overrides the cluster presets
  std::optional<double> carbon_intensity_g_per_kWh;
  std::optional<double> pue;
  std::optional<double> host_power_W_per_node;
  double gpu_static_power_fraction = 0.30;
};

enum class RowSelection { searched, scaled, kept };
const char* to_string(RowSelection s);

struct SweepRow {
  SweepPoint point;
  bool feasible = false;
  std::string reason;          // why no plan was found (feasible == false)
  Job job;                     // the reported plan (job.plan.world_size() == gpus_used)
  Prediction prediction;
  RowSelection selection = RowSelection::searched;
  int gpus_used = 0;           // < point.gpus only for RowSelection::kept
  int kept_from_gpus = 0;      // the smaller count whose plan was scaled or kept
  std::int64_t plans_evaluated = 0;
  double searched_time_to_train_s = 0;  // what the search alone gave (0 when infeasible)
  // Capacity figures for the token budget.
  double iterations = 0;
  double time_to_train_s = 0;
  double gpu_hours = 0;
  double price_per_gpu_hour_usd = 0;
  bool price_is_default = true;
  std::string price_source;
  double cost_usd = 0;
  double busy_fraction = 0;
  double avg_gpu_power_W = 0;
  double gpu_tdp_W = 0;
  double host_power_W_per_node = 0;
  double pue = 1;
  double energy_kWh = 0;
  double carbon_intensity_g_per_kWh = 0;
  bool carbon_is_default = true;
  double co2_kg = 0;
};

// Resolves a point into a workload (model, cluster with the point's network, batch, sequence);
// throws InputError. Called serially before the parallel search.
using WorkloadFn = std::function<Job(const SweepPoint&)>;
// Searches the best plan for a workload on `num_gpus` GPUs.
using SearchFn = std::function<SearchResult(const Job& workload, int num_gpus)>;
// Called after each finished point (from any thread, serialized by the sweep).
using ProgressFn = std::function<void(std::size_t done, std::size_t total)>;

// Runs the search at every point in parallel (OpenMP, dynamic schedule), applies the
// monotonicity rule and fills the capacity figures. Rows come back in the order of `points`.
std::vector<SweepRow> run_sweep(const std::vector<SweepPoint>& points, const WorkloadFn& workload, const SearchFn& search,
                                const CostModel& model, const CapacityOptions& opts, const ProgressFn& progress = {});

// Fills the time, cost, energy and CO2 fields of a row from its job and prediction.
void fill_capacity(SweepRow& row, const CapacityOptions& opts);

// The reverse question, per group: the smallest GPU count whose time-to-train meets the deadline.
struct DeadlineAnswer {
  int group = 0;
  bool met = false;
  int row = -1;               // index into the rows of the answer (met == true)
  int gpus = 0;
  double time_to_train_s = 0;
  double cost_usd = 0;
  int fewer_gpus = 0;         // one step fewer in the ladder (0 when the answer is the first step)
  double fewer_time_to_train_s = 0;  // 0 when that step had no feasible plan
  bool fewer_feasible = false;
  std::string note;
};
std::vector<DeadlineAnswer> answer_deadline(const std::vector<SweepRow>& rows, double deadline_s);

}  // namespace strata
