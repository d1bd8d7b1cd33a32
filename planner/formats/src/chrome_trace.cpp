#include "formats/chrome_trace.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "formats/plan_summary.h"

namespace strata {

namespace {

constexpr int kComputeLane = 0;
constexpr int kCommLane = 1;
constexpr int kP2pLane = 2;  // own lane: sends may straddle the next op's communication

nlohmann::json complete(const std::string& name, const char* cat, int pid, int tid, double start_s, double dur_s, nlohmann::json args = nullptr) {
  // Microseconds with nanosecond resolution; the end is rounded, not the duration, so that ops
  // that touch in the simulation touch in the trace (viewers nest events on one thread).
  const double ts_ns = std::round(start_s * 1e9), end_ns = std::round((start_s + dur_s) * 1e9);
  nlohmann::json e = {{"name", name}, {"cat", cat}, {"ph", "X"}, {"pid", pid}, {"tid", tid},
                      {"ts", ts_ns / 1e3}, {"dur", (end_ns - ts_ns) / 1e3}};
  if (!args.is_null()) e["args"] = std::move(args);
  return e;
}

nlohmann::json meta(const char* what, int pid, int tid, nlohmann::json args) {
  nlohmann::json e = {{"name", what}, {"ph", "M"}, {"pid", pid}, {"args", std::move(args)}};
  if (tid >= 0) e["tid"] = tid;
  return e;
}

}  // namespace

nlohmann::json chrome_trace(const Job& job, const Prediction& pred, const std::vector<PipelineEvent>& events) {
  const ParallelPlan& p = job.plan;
  const int v = std::max(1, p.vpp);
  nlohmann::json ev = nlohmann::json::array();
  const std::vector<int> layers = resolve_stage_layers(p, job.model.num_layers);
  int first_layer = 0;
  for (int s = 0; s < p.pp; ++s) {
    const int nl = s < static_cast<int>(layers.size()) ? layers[s] : 0;
    ev.push_back(meta("process_name", s, -1, {{"name", fmt::format("stage {} (layers {}-{})", s, first_layer, first_layer + nl - 1)}}));
    ev.push_back(meta("process_sort_index", s, -1, {{"sort_index", s}}));
    ev.push_back(meta("thread_name", s, kComputeLane, {{"name", "compute"}}));
    ev.push_back(meta("thread_name", s, kCommLane, {{"name", "comm"}}));
    ev.push_back(meta("thread_name", s, kP2pLane, {{"name", "comm (pipeline p2p)"}}));
    first_layer += nl;
  }

  // Pipeline p2p time, read off the schedule: stage 1's first forward waits exactly for stage 0's
  // first forward plus one transfer (pipeline_sim.cpp: ready = done + p2p_s).
  double p2p_s = 0;
  if (p.pp > 1) {
    const PipelineEvent *f0 = nullptr, *f1 = nullptr;
    for (const auto& e : events) {
      if (e.backward || e.chunk != 0 || e.micro_batch != 0) continue;
      if (e.stage == 0) f0 = &e;
      if (e.stage == 1) f1 = &e;
    }
    if (f0 && f1) p2p_s = std::max(0.0, f1->start_s - f0->end_s);
  }
  // Share of forward/backward time that is exposed TP/CP/EP communication (critical stage's
  // breakdown; per layer these are the same on every stage).
  const TimeBreakdown& b = pred.breakdown;
  const double comm = b.tp_comm_s + b.cp_comm_s + b.ep_comm_s;
  const double work = b.compute_s + b.recompute_s + comm + b.host_s + b.offload_s;
  const double comm_share = work > 0 ? comm / work : 0;

  std::vector<double> stage_end(p.pp, 0);
  const int last_vs = p.pp * v - 1;
  for (const auto& e : events) {
    const double dur = e.end_s - e.start_s;
    const std::string tag = fmt::format("mb{} chunk{}", e.micro_batch, e.chunk);
    nlohmann::json args = {{"stage", e.stage}, {"chunk", e.chunk}, {"micro_batch", e.micro_batch}};
    ev.push_back(complete(fmt::format("{} {}", e.backward ? "B" : "F", tag), e.backward ? "backward" : "forward", e.stage, kComputeLane,
                          e.start_s, dur, args));
    stage_end[e.stage] = std::max(stage_end[e.stage], e.end_s);
    if (e.backward && e.stage < static_cast<int>(pred.stages.size())) {
      const double rec = pred.stages[e.stage].recompute_s / v;
      if (rec > 0) ev.push_back(complete("R " + tag, "recompute", e.stage, kComputeLane, e.start_s, std::min(rec, dur), args));
    }
    if (comm_share > 0 && dur > 0)
      ev.push_back(complete(fmt::format("TP/CP/EP comm (exposed) {} {}", e.backward ? "B" : "F", tag), "tp_cp_comm", e.stage, kCommLane,
                            e.end_s - comm_share * dur, comm_share * dur, args));
    const int vs = e.chunk * p.pp + e.stage;
    if (p2p_s > 0 && !e.backward && vs < last_vs)
      ev.push_back(complete("send act " + tag, "pp_comm", e.stage, kP2pLane, e.end_s, p2p_s, args));
    if (p2p_s > 0 && e.backward && vs > 0)
      ev.push_back(complete("send grad " + tag, "pp_comm", e.stage, kP2pLane, e.end_s, p2p_s, args));
  }
  // The critical stage ends the iteration with its exposed DP synchronization and optimizer step.
  if (!events.empty() && p.pp > 0) {
    const int crit = std::clamp(b.stage, 0, p.pp - 1);
    if (b.dp_comm_s > 0) ev.push_back(complete("DP grad sync (exposed)", "dp_comm", crit, kCommLane, stage_end[crit], b.dp_comm_s));
    if (b.optimizer_s > 0)
      ev.push_back(complete("optimizer step", "optimizer", crit, kComputeLane, stage_end[crit] + b.dp_comm_s, b.optimizer_s));
    if (b.step_overhead_s > 0)
      ev.push_back(complete("step overhead (host)", "host", crit, kComputeLane, stage_end[crit] + b.dp_comm_s + b.optimizer_s,
                            b.step_overhead_s));
  }
  nlohmann::json out;
  out["traceEvents"] = std::move(ev);
  out["displayTimeUnit"] = "ms";
  out["otherData"] = {{"model", job.model.name}, {"gpu", job.cluster.gpu.name}, {"plan", plan_summary(p)},
                      {"micro_batches", job.num_micro_batches()}, {"iteration_time_s", pred.iteration_time_s},
                      {"note", "simulated schedule of one iteration (strata predict); exposed TP/CP communication is drawn aggregated at the end of each op"}};
  return out;
}

}  // namespace strata
