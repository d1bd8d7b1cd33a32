#include "whatif/sweep.h"

#include <algorithm>
#include <exception>
#include <new>
#include <limits>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "costmodel/errors.h"
#include "search/threads.h"
#include "whatif/energy_model.h"

namespace strata {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

double ttt(const SweepRow& r) { return r.feasible ? r.time_to_train_s : kInf; }

// A relative tolerance so that equal times computed along different paths compare equal.
bool slower(double a, double b) { return a > b * (1 + 1e-9); }

// Indices of each group's rows, ascending in GPU count (stable for equal counts).
std::map<int, std::vector<int>> groups_of(const std::vector<SweepRow>& rows) {
  std::map<int, std::vector<int>> g;
  for (int i = 0; i < static_cast<int>(rows.size()); ++i) g[rows[i].point.group].push_back(i);
  for (auto& [id, idx] : g)
    std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) { return rows[a].point.gpus < rows[b].point.gpus; });
  return g;
}

}  // namespace

const char* to_string(RowSelection s) {
  switch (s) {
    case RowSelection::searched: return "searched";
    case RowSelection::scaled: return "scaled";
    case RowSelection::kept: return "kept";
  }
  return "?";
}

std::vector<SweepPoint> sweep_points(const SweepAxes& axes) {
  std::vector<SweepPoint> pts;
  int group = 0;
  for (const auto& gpu : axes.gpus_types)
    for (const auto& net : axes.inter_node_GBps)
      for (auto seq : axes.seqs)
        for (auto gbs : axes.global_batches) {
          for (int n : axes.gpu_counts) pts.push_back(SweepPoint{gpu, n, net, seq, gbs, group});
          ++group;
        }
  return pts;
}

std::vector<int> node_ladder(int gpus_per_node, int cap) {
  std::vector<int> out;
  const bool pow2 = gpus_per_node > 0 && (gpus_per_node & (gpus_per_node - 1)) == 0;
  for (long long n = pow2 ? gpus_per_node : 8; n <= cap; n *= 2) out.push_back(static_cast<int>(n));
  return out;
}

void fill_capacity(SweepRow& row, const CapacityOptions& opts) {
  const ClusterSpec& cl = row.job.cluster;
  row.price_is_default = !opts.price_per_gpu_hour_usd;
  row.price_per_gpu_hour_usd = opts.price_per_gpu_hour_usd.value_or(cl.price_per_gpu_hour_usd.value_or(0));
  row.price_source = opts.price_per_gpu_hour_usd ? "--price-per-gpu-hour"
                     : cl.price_per_gpu_hour_usd ? (cl.price_source.empty() ? "default of cluster preset " + cl.name : cl.price_source)
                                                 : "no price in cluster " + cl.name + "; give --price-per-gpu-hour";
  row.carbon_is_default = !opts.carbon_intensity_g_per_kWh;
  row.carbon_intensity_g_per_kWh = opts.carbon_intensity_g_per_kWh.value_or(cl.carbon_intensity_g_per_kWh.value_or(0));
  row.pue = opts.pue.value_or(cl.pue);
  row.host_power_W_per_node = opts.host_power_W_per_node.value_or(cl.host_power_W_per_node);
  row.gpu_tdp_W = cl.gpu.power_W;
  if (!row.feasible || row.prediction.iteration_time_s <= 0) return;
  const double tokens_per_iter = static_cast<double>(row.job.training.global_batch_size) * static_cast<double>(row.job.training.seq_length);
  row.iterations = opts.tokens / tokens_per_iter;  // fractional: the last iteration is not rounded up
  row.time_to_train_s = row.iterations * row.prediction.iteration_time_s;
  const double hours = row.time_to_train_s / 3600.0;
  row.gpu_hours = row.gpus_used * hours;
  row.cost_usd = row.gpu_hours * row.price_per_gpu_hour_usd;
  row.busy_fraction = gpu_busy_fraction(row.prediction);
  EnergyInput in;
  in.gpus = row.gpus_used;
  in.gpus_per_node = cl.gpus_per_node;
  in.gpu_tdp_W = cl.gpu.power_W;
  in.busy_fraction = row.busy_fraction;
  in.static_fraction = opts.gpu_static_power_fraction;
  in.host_power_W_per_node = row.host_power_W_per_node;
  in.pue = row.pue;
  in.carbon_intensity_g_per_kWh = row.carbon_intensity_g_per_kWh;
  in.time_s = row.time_to_train_s;
  const EnergyEstimate e = estimate_energy(in);
  row.avg_gpu_power_W = e.avg_gpu_power_W;
  row.energy_kWh = e.energy_kWh;
  row.co2_kg = e.co2_kg;
}

namespace {

// The searches of every point, in parallel; each point's failure is kept in `errors`. Never
// inlined: clang starts the OpenMP runtime at the entry of the function holding the parallel
// region, and run_sweep's check_openmp_can_start() must come first.
[[gnu::noinline]] void search_points(const std::vector<SweepPoint>& points, const std::map<int, Job>& workloads,
                                     const SearchFn& search, const CapacityOptions& opts, const ProgressFn& progress,
                                     int threads, std::vector<SweepRow>& rows, std::vector<std::exception_ptr>& errors) {
  const long n = static_cast<long>(points.size());
  std::size_t done = 0;
#pragma omp parallel for schedule(dynamic) num_threads(threads)
  for (long i = 0; i < n; ++i) {
    SweepRow& row = rows[i];
    row.point = points[i];
    try {
      const Job& w = workloads.at(points[i].group);
      SearchResult r = search(w, points[i].gpus);
      row.plans_evaluated = r.plans_evaluated;
      row.feasible = r.found;
      if (r.found) {
        row.job = r.best.job;
        row.prediction = r.best.prediction;
        row.gpus_used = row.job.plan.world_size();
      } else {
        row.job = w;
        row.gpus_used = points[i].gpus;
        row.reason = r.infeasible_reason.empty() ? "no feasible plan" : r.infeasible_reason;
      }
      fill_capacity(row, opts);
      row.searched_time_to_train_s = row.time_to_train_s;
    } catch (...) {
      errors[i] = std::current_exception();  // exceptions must not leave the OpenMP region
    }
#pragma omp critical(strata_sweep_progress)
    {
      ++done;
      if (progress) progress(done, points.size());
    }
  }
}

}  // namespace

std::vector<SweepRow> run_sweep(const std::vector<SweepPoint>& points, const WorkloadFn& workload, const SearchFn& search,
                                const CostModel& model, const CapacityOptions& opts, const ProgressFn& progress) {
  check_openmp_can_start();
  // Workloads are resolved serially (catalog reads, input errors) before the parallel part.
  std::map<int, Job> workloads;
  for (const auto& p : points)
    if (!workloads.count(p.group)) workloads.emplace(p.group, workload(p));

  std::vector<SweepRow> rows(points.size());
  std::vector<std::exception_ptr> errors(points.size());
  search_points(points, workloads, search, opts, progress, search_threads(0), rows, errors);
  // The first failure in sweep order: bad input and memory exhaustion keep their kind (exit 1),
  // anything else is a bug reported with the point it happened at.
  for (std::size_t i = 0; i < errors.size(); ++i) {
    if (!errors[i]) continue;
    try {
      std::rethrow_exception(errors[i]);
    } catch (const InputError&) {
      throw;
    } catch (const std::bad_alloc&) {
      throw;
    } catch (const std::exception& e) {
      throw std::runtime_error(fmt::format("search failed at {} x {}: {}", points[i].gpus, points[i].gpu, e.what()));
    }
  }

  // Monotonicity rule (sweep.h): walk each group in ascending GPU count.
  for (const auto& [group, idx] : groups_of(rows)) {
    for (std::size_t k = 1; k < idx.size(); ++k) {
      const SweepRow& prev = rows[idx[k - 1]];
      SweepRow& cur = rows[idx[k]];
      if (!prev.feasible) continue;
      // 1. The smaller count's plan, scaled by data parallelism (always tried: one prediction).
      if (prev.gpus_used > 0 && cur.point.gpus % prev.gpus_used == 0 && cur.point.gpus != prev.gpus_used) {
        SweepRow scaled = cur;
        scaled.job = prev.job;
        scaled.job.plan.dp = prev.job.plan.dp * (cur.point.gpus / prev.gpus_used);
        if (check_plan(scaled.job).empty()) {
          scaled.prediction = model.predict(scaled.job);
          if (scaled.prediction.feasible) {
            scaled.feasible = true;
            scaled.reason.clear();
            scaled.selection = RowSelection::scaled;
            scaled.gpus_used = cur.point.gpus;
            scaled.kept_from_gpus = prev.gpus_used;
            fill_capacity(scaled, opts);
            if (slower(ttt(cur), ttt(scaled))) cur = scaled;
          }
        }
      }
      // 2. Still slower than the smaller count: keep its plan on the GPUs it uses.
      if (slower(ttt(cur), ttt(prev))) {
        const double searched = cur.searched_time_to_train_s;
        const std::int64_t evaluated = cur.plans_evaluated;
        const SweepPoint point = cur.point;
        cur = prev;
        cur.point = point;
        cur.selection = RowSelection::kept;
        cur.kept_from_gpus = prev.gpus_used;
        cur.searched_time_to_train_s = searched;
        cur.plans_evaluated = evaluated;
      }
    }
  }
  return rows;
}

std::vector<DeadlineAnswer> answer_deadline(const std::vector<SweepRow>& rows, double deadline_s) {
  std::vector<DeadlineAnswer> out;
  for (const auto& [group, idx] : groups_of(rows)) {
    DeadlineAnswer a;
    a.group = group;
    for (std::size_t k = 0; k < idx.size(); ++k) {
      const SweepRow& r = rows[idx[k]];
      if (!r.feasible || slower(r.time_to_train_s, deadline_s)) continue;
      a.met = true;
      a.row = idx[k];
      a.gpus = r.point.gpus;
      a.time_to_train_s = r.time_to_train_s;
      a.cost_usd = r.cost_usd;
      if (k > 0) {
        const SweepRow& f = rows[idx[k - 1]];
        a.fewer_gpus = f.point.gpus;
        a.fewer_feasible = f.feasible;
        a.fewer_time_to_train_s = f.feasible ? f.time_to_train_s : 0;
        a.note = f.feasible ? fmt::format("{} GPUs would take {:.1f} days", f.point.gpus, f.time_to_train_s / 86400)
                            : fmt::format("{} GPUs have no feasible plan", f.point.gpus);
      } else {
        a.note = fmt::format("{} GPUs is the smallest count tried", r.point.gpus);
      }
      break;
    }
    if (!a.met) {
      const SweepRow& last = rows[idx.back()];
      a.gpus = 0;
      a.note = last.feasible ? fmt::format("not met: even {} GPUs take {:.1f} days", last.point.gpus, last.time_to_train_s / 86400)
                             : fmt::format("not met: no feasible plan up to {} GPUs", last.point.gpus);
    }
    out.push_back(a);
  }
  return out;
}

}  // namespace strata
