#include "cli/whatif_report.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "cli/report.h"
#include "costmodel/predictor.h"
#include "whatif/energy_model.h"

namespace strata {

namespace {

std::string fmt_opt_net(const std::optional<double>& v) { return v ? fmt::format("{:g}", *v) : "preset"; }

std::string si(double v) {
  if (v >= 1e12) return fmt::format("{:.3g}T", v / 1e12);
  if (v >= 1e9) return fmt::format("{:.3g}B", v / 1e9);
  if (v >= 1e6) return fmt::format("{:.3g}M", v / 1e6);
  return fmt::format("{:.3g}", v);
}

std::string money(double usd) {
  if (usd >= 1e6) return fmt::format("${:.2f}M", usd / 1e6);
  if (usd >= 1e3) return fmt::format("${:.1f}k", usd / 1e3);
  return fmt::format("${:.0f}", usd);
}

std::string row_note(const SweepRow& r) {
  std::string note;
  switch (r.selection) {
    case RowSelection::searched: break;
    case RowSelection::scaled: note = fmt::format("{}-GPU plan scaled by dp", r.kept_from_gpus); break;
    case RowSelection::kept: note = fmt::format("uses {} of {} GPUs (more are not faster)", r.gpus_used, r.point.gpus); break;
  }
  // As in `strata plan`: above this share the memory model's error could take the plan over.
  const Prediction& p = r.prediction;
  if (r.feasible && p.memory_per_gpu_GiB > kTightMemoryFraction * p.memory_capacity_GiB)
    note += fmt::format("{}memory tight ({:.0f}% of usable)", note.empty() ? "" : "; ", 100 * p.memory_per_gpu_GiB / p.memory_capacity_GiB);
  return note;
}

}  // namespace

std::string csv_escape(const std::string& f) {
  if (f.find_first_of(",\"\n\r") == std::string::npos) return f;
  std::string o = "\"";
  for (char c : f) {
    if (c == '"') o += '"';
    o += c;
  }
  return o + "\"";
}

const std::vector<std::string>& whatif_csv_columns() {
  static const std::vector<std::string> cols = {
      "gpu", "cluster", "gpus", "gpus_used", "inter_node_GBps", "seq_length", "global_batch", "feasible", "selection", "plan",
      "tp", "pp", "dp", "cp", "vpp", "micro_batch_size", "sequence_parallel", "recompute", "iteration_time_s",
      "tokens_per_sec_per_gpu", "mfu", "memory_per_gpu_GiB", "iterations", "time_to_train_days", "gpu_hours",
      "price_per_gpu_hour_usd", "price_is_default", "cost_usd", "gpu_busy_fraction", "avg_gpu_power_W", "energy_kWh",
      "carbon_intensity_g_per_kWh", "carbon_is_default", "co2_t", "reason"};
  return cols;
}

std::string whatif_csv(const std::vector<SweepRow>& rows) {
  std::string out;
  const auto& cols = whatif_csv_columns();
  for (std::size_t i = 0; i < cols.size(); ++i) {
    if (i) out += ',';
    out += cols[i];
  }
  out += "\n";
  for (const auto& r : rows) {
    const ParallelPlan& p = r.job.plan;
    const bool f = r.feasible;
    auto num = [&](double v, const char* spec = "{:.6g}") { return f ? fmt::format(fmt::runtime(spec), v) : std::string(); };
    auto inum = [&](long long v) { return f ? std::to_string(v) : std::string(); };
    std::vector<std::string> v = {
        r.point.gpu, r.job.cluster.name, std::to_string(r.point.gpus), inum(r.gpus_used),
        r.point.inter_node_GBps ? fmt::format("{:g}", *r.point.inter_node_GBps) : fmt::format("{:g}", r.job.cluster.inter_node_GBps_per_gpu()),
        std::to_string(r.point.seq), std::to_string(r.point.global_batch), f ? "true" : "false", f ? to_string(r.selection) : "",
        f ? plan_summary(p) : "", inum(p.tp), inum(p.pp), inum(p.dp), inum(p.cp), inum(p.vpp), inum(p.micro_batch_size),
        f ? (p.sequence_parallel ? "true" : "false") : "", f ? to_string(p.recompute.granularity) : "",
        num(r.prediction.iteration_time_s), num(r.prediction.tokens_per_sec_per_gpu, "{:.1f}"), num(r.prediction.mfu, "{:.4f}"),
        num(r.prediction.memory_per_gpu_GiB, "{:.2f}"), num(r.iterations, "{:.1f}"), num(r.time_to_train_s / 86400, "{:.4f}"),
        num(r.gpu_hours, "{:.0f}"), fmt::format("{:g}", r.price_per_gpu_hour_usd), r.price_is_default ? "true" : "false",
        num(r.cost_usd, "{:.0f}"), num(r.busy_fraction, "{:.4f}"), num(r.avg_gpu_power_W, "{:.1f}"), num(r.energy_kWh, "{:.0f}"),
        fmt::format("{:g}", r.carbon_intensity_g_per_kWh), r.carbon_is_default ? "true" : "false", num(r.co2_kg / 1000, "{:.3f}"),
        r.reason};
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (i) out += ',';
      out += csv_escape(v[i]);
    }
    out += "\n";
  }
  return out;
}

nlohmann::json whatif_row_json(const SweepRow& r) {
  nlohmann::json j;
  j["gpu"] = r.point.gpu;
  j["gpu_name"] = r.job.cluster.gpu.name;
  j["cluster"] = r.job.cluster.name;
  j["gpus"] = r.point.gpus;
  j["inter_node_GBps"] = r.point.inter_node_GBps ? *r.point.inter_node_GBps : r.job.cluster.inter_node_GBps_per_gpu();
  j["seq_length"] = r.point.seq;
  j["global_batch"] = r.point.global_batch;
  j["feasible"] = r.feasible;
  if (!r.feasible) {
    j["reason"] = r.reason;
    return j;
  }
  const ParallelPlan& p = r.job.plan;
  j["gpus_used"] = r.gpus_used;
  j["selection"] = to_string(r.selection);
  if (r.selection != RowSelection::searched) j["from_gpus"] = r.kept_from_gpus;
  j["plan"] = {{"summary", plan_summary(p)}, {"tp", p.tp}, {"pp", p.pp}, {"dp", p.dp}, {"cp", p.cp}, {"vpp", p.vpp},
               {"micro_batch_size", p.micro_batch_size}, {"sequence_parallel", p.sequence_parallel},
               {"recompute", to_string(p.recompute.granularity)}, {"distributed_optimizer", p.distributed_optimizer}};
  j["iteration_time_s"] = r.prediction.iteration_time_s;
  j["tokens_per_sec_per_gpu"] = r.prediction.tokens_per_sec_per_gpu;
  j["mfu"] = r.prediction.mfu;
  j["memory_per_gpu_GiB"] = r.prediction.memory_per_gpu_GiB;
  j["bottleneck"] = r.prediction.bottleneck.kind;
  j["iterations"] = r.iterations;
  j["time_to_train_s"] = r.time_to_train_s;
  j["time_to_train_days"] = r.time_to_train_s / 86400;
  j["gpu_hours"] = r.gpu_hours;
  j["price_per_gpu_hour_usd"] = r.price_per_gpu_hour_usd;
  j["price_is_default"] = r.price_is_default;
  j["price_source"] = r.price_source;
  j["cost_usd"] = r.cost_usd;
  j["gpu_busy_fraction"] = r.busy_fraction;
  j["avg_gpu_power_W"] = r.avg_gpu_power_W;
  j["gpu_tdp_W"] = r.gpu_tdp_W;
  j["host_power_W_per_node"] = r.host_power_W_per_node;
  j["pue"] = r.pue;
  j["energy_kWh"] = r.energy_kWh;
  j["carbon_intensity_g_per_kWh"] = r.carbon_intensity_g_per_kWh;
  j["carbon_is_default"] = r.carbon_is_default;
  j["co2_kg"] = r.co2_kg;
  return j;
}

nlohmann::json whatif_json(const std::vector<SweepRow>& rows, const std::vector<DeadlineAnswer>& answers, const WhatifContext& ctx) {
  nlohmann::json j;
  j["model"] = ctx.model;
  j["tokens"] = ctx.tokens;
  j["assumptions"] = whatif_assumptions(rows, ctx);
  j["energy_model"] = {{"gpu_static_power_fraction", ctx.capacity.gpu_static_power_fraction},
                       {"formula", "P_gpu = TDP*(f_static + (1-f_static)*busy); E = (gpus*P_gpu + nodes*P_host)*PUE*t"}};
  j["rows"] = nlohmann::json::array();
  for (const auto& r : rows) j["rows"].push_back(whatif_row_json(r));
  if (ctx.deadline_days) {
    j["deadline_days"] = *ctx.deadline_days;
    j["deadline"] = nlohmann::json::array();
    for (const auto& a : answers) {
      const SweepRow& first = *std::find_if(rows.begin(), rows.end(), [&](const SweepRow& r) { return r.point.group == a.group; });
      nlohmann::json d = {{"gpu", first.point.gpu}, {"seq_length", first.point.seq}, {"global_batch", first.point.global_batch},
                          {"met", a.met}, {"note", a.note}};
      if (first.point.inter_node_GBps) d["inter_node_GBps"] = *first.point.inter_node_GBps;
      if (a.met) {
        d["gpus"] = a.gpus;
        d["time_to_train_days"] = a.time_to_train_s / 86400;
        d["cost_usd"] = a.cost_usd;
        d["plan"] = plan_summary(rows[a.row].job.plan);
        if (a.fewer_gpus > 0) {
          d["fewer_gpus"] = a.fewer_gpus;
          d["fewer_feasible"] = a.fewer_feasible;
          if (a.fewer_feasible) d["fewer_time_to_train_days"] = a.fewer_time_to_train_s / 86400;
        }
      }
      j["deadline"].push_back(d);
    }
  }
  return j;
}

std::string series_label(const SweepPoint& p, const WhatifContext& ctx) {
  std::string s = p.gpu;
  if (ctx.vary_net) s += " net=" + fmt_opt_net(p.inter_node_GBps) + (p.inter_node_GBps ? "GB/s" : "");
  if (ctx.vary_seq) s += fmt::format(" seq={}", p.seq);
  if (ctx.vary_batch) s += fmt::format(" gbs={}", p.global_batch);
  return s;
}

std::vector<std::string> whatif_assumptions(const std::vector<SweepRow>& rows, const WhatifContext& ctx) {
  std::vector<std::string> a;
  std::int64_t any_seq = rows.empty() ? 0 : rows.front().point.seq;
  a.push_back(fmt::format("time to train {} tokens = iterations x predicted iteration time; iterations = tokens / (global batch x seq){}",
                          si(ctx.tokens), rows.size() && !ctx.vary_seq && !ctx.vary_batch
                                              ? fmt::format(" = {:.0f}", ctx.tokens / (static_cast<double>(rows.front().point.global_batch) * static_cast<double>(any_seq)))
                                              : ""));
  // One line per cluster used, with its defaults.
  std::map<std::string, const SweepRow*> clusters;
  for (const auto& r : rows) clusters.emplace(r.job.cluster.name, &r);
  if (ctx.capacity.price_per_gpu_hour_usd) {
    a.push_back(fmt::format("cost: ${:.2f} per GPU-hour for every GPU type (--price-per-gpu-hour)", *ctx.capacity.price_per_gpu_hour_usd));
  } else {
    std::string s = "cost: DEFAULT prices of the cluster presets, guesses and not quotes (override with --price-per-gpu-hour):";
    for (const auto& [name, r] : clusters)
      s += fmt::format(" {} ${:.2f}/GPU-h ({});", r->job.cluster.gpu.name, r->price_per_gpu_hour_usd, name);
    s.pop_back();
    a.push_back(s);
  }
  std::string e = fmt::format("energy: GPU power = TDP x ({:.2f} + {:.2f} x busy), busy = compute+recompute share of the predicted iteration; "
                              "plus host power per node; times PUE (Patterson et al. 2021; Fan et al. 2007). Per cluster (TDP, host W/node, PUE{}):",
                              ctx.capacity.gpu_static_power_fraction, 1 - ctx.capacity.gpu_static_power_fraction,
                              ctx.capacity.pue || ctx.capacity.host_power_W_per_node ? ", as overridden" : ", preset defaults");
  for (const auto& [name, r] : clusters) e += fmt::format(" {} {:.0f} W, {:.0f} W, {:.2f};", name, r->gpu_tdp_W, r->host_power_W_per_node, r->pue);
  e.pop_back();
  a.push_back(e);
  if (ctx.capacity.carbon_intensity_g_per_kWh) {
    a.push_back(fmt::format("CO2: {:.0f} g/kWh (--carbon-intensity)", *ctx.capacity.carbon_intensity_g_per_kWh));
  } else {
    std::set<double> ci;
    for (const auto& [name, r] : clusters) ci.insert(r->carbon_intensity_g_per_kWh);
    std::string v;
    for (double c : ci) v += fmt::format("{}{:.0f}", v.empty() ? "" : "/", c);
    a.push_back(fmt::format("CO2: {} g/kWh, the DEFAULT grid carbon intensity of the cluster presets (a world-average guess; override with --carbon-intensity)", v));
  }
  // A dropless MoE's per-layer host time: not modelled (another framework, or a zeroed line), or
  // the measured Megatron-Core default, of which a grouped GEMM counts only the router and
  // dispatcher part (the same caveats predict prints; README, "The host time of a MoE layer").
  const bool moe_host_unmodelled =
      std::any_of(rows.begin(), rows.end(), [](const SweepRow& r) { return r.feasible && moe_host_time_unmodelled(r.job); });
  const bool moe_host_default = std::any_of(rows.begin(), rows.end(), [](const SweepRow& r) {
    const MoeHostTime t = moe_layer_host_time(r.job);
    return r.feasible && t.forward_s > 0 && !t.measured_override;
  });
  if (moe_host_unmodelled)
    a.push_back("MoE: the host time of a dropless dispatcher's per-layer synchronisation is not modelled, so times to train are "
                "lower bounds; measure it once (--moe-forward-host-ms, or strata calibrate --steps --fit moe-host)");
  else if (moe_host_default)
    a.push_back("MoE: the host time of each MoE layer is Megatron-Core's, measured on an H100 machine's CPU and its attention block's "
                "on an H200 machine's, without Transformer Engine (a property of the stack and the CPU; with --moe-grouped-gemm only "
                "the MoE block's router and dispatcher part, so times to train are lower bounds); "
                "measure yours once (--moe-forward-host-ms, or strata calibrate --steps --fit moe-host)");
  bool any_kept = std::any_of(rows.begin(), rows.end(), [](const SweepRow& r) { return r.feasible && r.selection != RowSelection::searched; });
  if (any_kept)
    a.push_back("monotonic in GPU count: where more GPUs were not faster, the smaller count's plan is scaled by dp or kept on the GPUs it uses (see note)");
  return a;
}

std::string whatif_table(const std::vector<SweepRow>& rows, const WhatifContext& ctx) {
  std::vector<std::string> head = {"GPU", "GPUs"};
  if (ctx.vary_net) head.push_back("net GB/s");
  if (ctx.vary_seq) head.push_back("seq");
  if (ctx.vary_batch) head.push_back("batch");
  for (const char* h : {"best plan", "tok/s/GPU", "MFU", "days", "GPU-hours", "cost", "energy MWh", "CO2 t", "note"}) head.push_back(h);
  std::vector<std::vector<std::string>> cells;
  for (const auto& r : rows) {
    std::vector<std::string> c = {r.point.gpu, std::to_string(r.point.gpus)};
    if (ctx.vary_net) c.push_back(fmt_opt_net(r.point.inter_node_GBps));
    if (ctx.vary_seq) c.push_back(std::to_string(r.point.seq));
    if (ctx.vary_batch) c.push_back(std::to_string(r.point.global_batch));
    if (!r.feasible) {
      for (int i = 0; i < 8; ++i) c.push_back(i == 0 ? "no feasible plan" : "-");
      c.push_back("see reasons");
    } else {
      c.push_back(plan_summary(r.job.plan));
      c.push_back(fmt::format("{:.0f}", r.prediction.tokens_per_sec_per_gpu));
      c.push_back(fmt::format("{:.1f}%", 100 * r.prediction.mfu));
      c.push_back(fmt::format("{:.1f}", r.time_to_train_s / 86400));
      c.push_back(fmt::format("{:.0f}", r.gpu_hours));
      c.push_back(money(r.cost_usd));
      c.push_back(fmt::format("{:.0f}", r.energy_kWh / 1000));
      c.push_back(fmt::format("{:.0f}", r.co2_kg / 1000));
      c.push_back(row_note(r));
    }
    cells.push_back(std::move(c));
  }
  std::vector<std::size_t> w(head.size());
  for (std::size_t i = 0; i < head.size(); ++i) w[i] = head[i].size();
  for (const auto& c : cells)
    for (std::size_t i = 0; i < c.size(); ++i) w[i] = std::max(w[i], c[i].size());
  // Text columns left-aligned, numbers right-aligned.
  auto left = [&](std::size_t i) { return head[i] == "GPU" || head[i] == "best plan" || head[i] == "note"; };
  auto line = [&](const std::vector<std::string>& c) {
    std::string s;
    for (std::size_t i = 0; i < c.size(); ++i) {
      if (i) s += "  ";
      s += left(i) ? fmt::format("{:<{}}", c[i], w[i]) : fmt::format("{:>{}}", c[i], w[i]);
    }
    while (!s.empty() && s.back() == ' ') s.pop_back();
    return s + "\n";
  };
  std::string out = fmt::format("{}: time to train {} tokens\n", ctx.model, si(ctx.tokens));
  out += line(head);
  for (const auto& c : cells) out += line(c);
  bool any_bad = false;
  for (const auto& r : rows)
    if (!r.feasible) {
      if (!any_bad) out += "no feasible plan:\n";
      any_bad = true;
      out += fmt::format("  {} x {}{}: {}\n", r.point.gpus, r.point.gpu,
                         ctx.vary_seq || ctx.vary_batch || ctx.vary_net ? " (" + series_label(r.point, ctx) + ")" : "", r.reason);
    }
  for (const auto& a : whatif_assumptions(rows, ctx)) out += "note: " + a + "\n";
  return out;
}

std::string deadline_table(const std::vector<SweepRow>& rows, const std::vector<DeadlineAnswer>& answers, const WhatifContext& ctx) {
  std::string out = fmt::format("smallest GPU count that trains {} tokens within {:g} days:\n", si(ctx.tokens), ctx.deadline_days.value_or(0));
  for (const auto& a : answers) {
    const SweepRow& first = *std::find_if(rows.begin(), rows.end(), [&](const SweepRow& r) { return r.point.group == a.group; });
    const std::string label = series_label(first.point, ctx);
    if (!a.met) {
      out += fmt::format("  {:<14} {}\n", label, a.note);
      continue;
    }
    const SweepRow& r = rows[a.row];
    out += fmt::format("  {:<14} {:>6} GPUs  {:6.1f} days  {:>9}  {}  ({}; one step fewer: {})\n", label, a.gpus, a.time_to_train_s / 86400,
                       money(a.cost_usd), plan_summary(r.job.plan), r.price_is_default ? "default price" : "given price", a.note);
  }
  return out;
}

std::vector<PlotPanel> whatif_panels(const std::vector<SweepRow>& rows, const WhatifContext& ctx) {
  PlotPanel t{"Time to train", {"GPUs", AxisScale::log2, false}, {"time to train, days", AxisScale::log10, false}, {}};
  PlotPanel c{"Cost", {"GPUs", AxisScale::log2, false},
              {ctx.capacity.price_per_gpu_hour_usd ? "cost, USD" : "cost, USD (default prices)", AxisScale::linear, true}, {}};
  std::map<int, std::size_t> index;
  for (const auto& r : rows) {
    auto [it, fresh] = index.emplace(r.point.group, t.series.size());
    if (fresh) {
      t.series.push_back({series_label(r.point, ctx), {}});
      c.series.push_back({series_label(r.point, ctx), {}});
    }
    if (!r.feasible) continue;
    t.series[it->second].points.emplace_back(r.point.gpus, r.time_to_train_s / 86400);
    c.series[it->second].points.emplace_back(r.point.gpus, r.cost_usd);
  }
  return {t, c};
}

}  // namespace strata
