// strata whatif: capacity studies. Runs the plan search at every point of a sweep (GPU type x
// inter-node bandwidth x sequence length x global batch x GPU count) and reports time-to-train for
// a token budget, GPU-hours, cost, energy and CO2; answers "the smallest GPU count that meets a
// deadline"; writes CSV, JSON and an SVG of the scaling curves.
#include <algorithm>
#include <chrono>
#include <cmath>

#include <set>
#include <sstream>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/job_options.h"
#include "cli/progress.h"
#include "cli/whatif_report.h"
#include "costmodel/catalog.h"
#include "costmodel/errors.h"
#include "costmodel/file_io.h"
#include "formats/svg_plot.h"
#include "search/searcher.h"
#include "whatif/energy_model.h"
#include "whatif/sweep.h"

namespace strata {

namespace {

constexpr const char* kCmd = "command line";

struct WhatifArgs {
  JobOptions job;  // model, precision, framework, runtime flags (the list flags are below)
  std::string gpu_list, cluster_list, gpus_list, batch_list, seq_list, net_list;
  std::optional<double> tokens;
  std::optional<double> price, carbon, pue, host_power;
  double static_fraction = kDefaultGpuStaticPowerFraction;
  std::optional<double> deadline_days;
  int max_gpus = 16384;
  bool max_gpus_given = false;
  std::string csv_file, plot_file;
  bool json = false;
  bool quiet = false;
};

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    out.push_back(item);
  }
  return out;
}

// Positive numbers in a comma-separated list; "2e12"-style values are accepted.
std::vector<double> parse_number_list(const std::string& s, const char* flag, double lo, double hi, bool integer) {
  std::vector<double> out;
  for (const auto& item : split_list(s)) {
    double v = 0;
    try {
      std::size_t used = 0;
      v = std::stod(item, &used);
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (const std::exception&) {
      throw InputError(kCmd, flag, fmt::format("expected a comma-separated list of numbers, found \"{}\"", item));
    }
    if (!(v >= lo && v <= hi) || (integer && v != std::floor(v)))
      throw InputError(kCmd, flag, fmt::format("expected {} between {:g} and {:g}, found \"{}\"", integer ? "integers" : "values", lo, hi, item));
    out.push_back(v);
  }
  if (out.empty()) throw InputError(kCmd, flag, "expected at least one value");
  return out;
}

template <class T>
std::vector<T> unique_in_order(std::vector<T> v) {
  std::vector<T> out;
  for (const T& x : v)
    if (std::find(out.begin(), out.end(), x) == out.end()) out.push_back(x);
  return out;
}

void remove_option(CLI::App& app, const std::string& name) {
  if (CLI::Option* o = app.get_option_no_throw(name)) app.remove_option(o);
}

void run_whatif(const WhatifArgs& a, CommandContext& ctx) {
  const auto t0 = std::chrono::steady_clock::now();
  Catalog catalog(Catalog::default_data_dir());
  // --megatron-args: the model, global batch, sequence, precision and runtime features are the
  // launch's; the sweep varies the hardware.
  std::optional<MegatronLaunch> launch;
  if (!a.job.megatron_args.empty()) {
    for (const auto& [list, flag] : {std::pair{&a.batch_list, "--global-batch"}, std::pair{&a.seq_list, "--seq"}})
      if (!list->empty()) throw InputError(kCmd, flag, "is set by the launch in --megatron-args " + a.job.megatron_args + "; change it there");
    launch = read_launch_file(a.job, catalog);
    if (launch->training.global_batch_size == 0)
      throw InputError(a.job.megatron_args, "--global-batch-size",
                       "missing: whatif needs the launch's global batch (Megatron's default, micro-batch x dp, changes with the GPU count)");
  } else if (a.job.model.empty()) {
    throw InputError(kCmd, "--model", "give --model NAME or a path to a model JSON / config.json");
  }
  if (a.gpu_list.empty() == a.cluster_list.empty())
    throw InputError(kCmd, "--gpu", "give --gpu LIST (GPU types, each on its cluster preset) or --cluster LIST, not both");
  const bool by_cluster = !a.cluster_list.empty();
  const std::vector<std::string> types = unique_in_order(split_list(by_cluster ? a.cluster_list : a.gpu_list));
  for (const auto& t : types)
    if (t.empty()) throw InputError(kCmd, by_cluster ? "--cluster" : "--gpu", "empty name in the list");
  if (!a.tokens || !(*a.tokens > 0) || *a.tokens > 1e18) throw InputError(kCmd, "--tokens", "give the token budget to train, e.g. --tokens 2e12");
  if (a.batch_list.empty() && !launch) throw InputError(kCmd, "--global-batch", "expected a positive number of sequences (or a comma-separated list)");
  if (a.gpus_list.empty() && !a.deadline_days)
    throw InputError(kCmd, "--gpus", "give --gpus LIST (e.g. 64,128,256), or --deadline-days to find the GPU count");
  if (a.deadline_days && !(*a.deadline_days > 0 && *a.deadline_days <= 36500))
    throw InputError(kCmd, "--deadline-days", "expected a positive number of days, at most 36500 (100 years)");
  if (a.max_gpus < 1 || a.max_gpus > 10000000) throw InputError(kCmd, "--max-gpus", "expected 1..10,000,000");
  if (a.max_gpus_given && (!a.deadline_days || !a.gpus_list.empty()))
    throw InputError(kCmd, "--max-gpus", "only bounds the GPU counts --deadline-days tries without --gpus; it would be ignored here");
  if (a.price && !(*a.price >= 0 && *a.price <= 1e6)) throw InputError(kCmd, "--price-per-gpu-hour", "expected a USD amount 0..1000000");
  if (a.carbon && !(*a.carbon >= 0 && *a.carbon <= 5000)) throw InputError(kCmd, "--carbon-intensity", "expected 0..5000 g CO2 per kWh");
  if (a.pue && !(*a.pue >= 1 && *a.pue <= 5)) throw InputError(kCmd, "--pue", "expected a power usage effectiveness between 1 and 5");
  if (a.host_power && !(*a.host_power >= 0 && *a.host_power <= 1e6)) throw InputError(kCmd, "--host-power", "expected 0..1e6 W per node");
  if (!(a.static_fraction >= 0 && a.static_fraction <= 1)) throw InputError(kCmd, "--gpu-static-power", "expected a fraction of TDP between 0 and 1");

  SweepAxes axes;
  axes.gpus_types = types;
  if (launch) {
    axes.global_batches.push_back(launch->training.global_batch_size);
    axes.seqs.push_back(launch->training.seq_length);
  } else {
    for (double v : unique_in_order(parse_number_list(a.batch_list, "--global-batch", 1, 1ull << 40, true)))
      axes.global_batches.push_back(static_cast<std::int64_t>(v));
    if (a.seq_list.empty()) axes.seqs.push_back(0);  // the model's max_seq_length
    else
      for (double v : unique_in_order(parse_number_list(a.seq_list, "--seq", 1, 1 << 24, true))) axes.seqs.push_back(static_cast<std::int64_t>(v));
  }
  if (a.net_list.empty()) axes.inter_node_GBps.push_back(std::nullopt);
  else
    for (double v : unique_in_order(parse_number_list(a.net_list, "--inter-node-GBps", 0.01, 1e5, false))) axes.inter_node_GBps.push_back(v);

  auto options_for = [&](const SweepPoint& p) {
    JobOptions o = a.job;
    (by_cluster ? o.cluster : o.gpu) = p.gpu;
    if (!launch) {
      o.global_batch = p.global_batch;
      if (p.seq > 0) o.seq = p.seq;
    }
    return o;
  };
  WorkloadFn workload = [&](const SweepPoint& p) {
    Job job = launch ? launch_workload(*launch, options_for(p), catalog) : build_workload(options_for(p), catalog);
    if (p.inter_node_GBps) {
      // Per-GPU inter-node bandwidth (GB/s per direction) -> the NIC rate that gives it
      // (ClusterSpec::inter_node_GBps_per_gpu = nics * Gbps / 8 / gpus_per_node).
      ClusterSpec& cl = job.cluster;
      cl.nic_Gbps = *p.inter_node_GBps * 8.0 * cl.gpus_per_node / std::max(1, cl.nics_per_node);
    }
    return job;
  };

  std::vector<SweepPoint> points;
  if (!a.gpus_list.empty()) {
    for (double v : parse_number_list(a.gpus_list, "--gpus", 1, 10000000, true)) axes.gpu_counts.push_back(static_cast<int>(v));
    axes.gpu_counts = unique_in_order(axes.gpu_counts);
    std::sort(axes.gpu_counts.begin(), axes.gpu_counts.end());
    points = sweep_points(axes);
  } else {
    // Deadline without a GPU list: node-size multiples, powers of two, up to --max-gpus.
    int group = 0;
    for (const auto& t : types) {
      SweepAxes one = axes;
      one.gpus_types = {t};
      SweepPoint probe{t, 0, std::nullopt, axes.seqs.front(), axes.global_batches.front(), 0};
      one.gpu_counts = node_ladder(build_workload(options_for(probe), catalog).cluster.gpus_per_node, a.max_gpus);
      if (one.gpu_counts.empty()) throw InputError(kCmd, "--max-gpus", fmt::format("{} is smaller than one node of {}", a.max_gpus, t));
      for (SweepPoint p : sweep_points(one)) {
        p.group += group;
        points.push_back(p);
      }
      group = points.back().group + 1;
    }
  }
  // Every point is a plan search (up to a few tenths of a second each): a sweep of a million
  // points would run for days. Far more than any table a person reads.
  constexpr std::size_t kMaxSweepPoints = 512;
  if (points.size() > kMaxSweepPoints)
    throw InputError(kCmd, a.gpus_list.empty() ? "--max-gpus" : "--gpus",
                     fmt::format("the sweep has {} points (GPU types x counts x batches x sequences x networks); at most {} "
                                 "are run (each is a plan search): split it into several sweeps",
                                 points.size(), kMaxSweepPoints));
  // Resolve every group's workload once up front: bad names fail before any search runs.
  std::set<int> seen;
  for (const auto& p : points)
    if (seen.insert(p.group).second) workload(p);

  CapacityOptions cap;
  cap.tokens = *a.tokens;
  cap.price_per_gpu_hour_usd = a.price;
  cap.carbon_intensity_g_per_kWh = a.carbon;
  cap.pue = a.pue;
  cap.host_power_W_per_node = a.host_power;
  cap.gpu_static_power_fraction = a.static_fraction;

  AnalyticalCostModel model;
  SearchFn search = [&model](const Job& w, int n) {
    SearchOptions so;
    so.num_gpus = n;
    so.threads = 1;  // the sweep parallelizes over points
    return search_plans(w, so, model);
  };
  std::vector<SweepRow> rows;
  {
    ProgressBar bar(points.size(), !a.quiet && ProgressBar::stderr_is_tty());
    rows = run_sweep(points, workload, search, model, cap, [&bar](std::size_t done, std::size_t) { bar.update(done); });
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  WhatifContext wctx;
  wctx.model = rows.empty() ? a.job.model : rows.front().job.model.name;
  if (launch && !a.quiet)
    for (const auto& n : launch->notes) fmt::print(stderr, "note: {}\n", n);
  wctx.tokens = *a.tokens;
  wctx.capacity = cap;
  wctx.deadline_days = a.deadline_days;
  wctx.vary_net = axes.inter_node_GBps.size() > 1;
  wctx.vary_seq = axes.seqs.size() > 1;
  wctx.vary_batch = axes.global_batches.size() > 1;
  std::vector<DeadlineAnswer> answers;
  if (a.deadline_days) answers = answer_deadline(rows, *a.deadline_days * 86400);

  if (!a.csv_file.empty()) write_output_file(a.csv_file, whatif_csv(rows), "--csv");
  if (!a.plot_file.empty()) {
    PlotOptions po;
    const SweepRow& r0 = rows.front();
    po.title = fmt::format("{}: time and cost to train {:.3g}T tokens", wctx.model, *a.tokens / 1e12);
    po.subtitle = fmt::format("{}{}{}", wctx.vary_seq ? std::string("seq swept") : fmt::format("seq {}", r0.job.training.seq_length),
                              wctx.vary_batch ? std::string(", batch swept") : fmt::format(", global batch {}", r0.point.global_batch),
                              a.price ? fmt::format(", ${:.2f}/GPU-h", *a.price) : std::string(", default preset prices (guesses)"));
    write_output_file(a.plot_file, svg_line_charts(whatif_panels(rows, wctx), po), "--plot");
  }
  if (a.json) {
    fmt::print("{}\n", whatif_json(rows, answers, wctx).dump(2));
  } else {
    fmt::print("{}", whatif_table(rows, wctx));
    if (a.deadline_days) fmt::print("\n{}", deadline_table(rows, answers, wctx));
  }
  if (!a.quiet) {
    std::int64_t plans = 0;
    for (const auto& r : rows) plans += r.plans_evaluated;
    fmt::print(stderr, "strata: {} points, {} plans evaluated in {:.1f} s\n", rows.size(), plans, secs);
    if (!a.csv_file.empty()) fmt::print(stderr, "strata: wrote {}\n", a.csv_file);
    if (!a.plot_file.empty()) fmt::print(stderr, "strata: wrote {}\n", a.plot_file);
  }
  const bool any = std::any_of(rows.begin(), rows.end(), [](const SweepRow& r) { return r.feasible; });
  if (!any) {
    if (!a.json) fmt::print(stderr, "strata: no feasible plan at any point of the sweep\n");
    ctx.exit_code = 2;
  }
}

}  // namespace

void register_whatif(CLI::App& app, CommandContext& ctx) {
  auto* cmd = app.add_subcommand("whatif", "Capacity study: time-to-train, GPU-hours, cost, energy and CO2 over a sweep of GPU types and counts");
  auto a = std::make_shared<WhatifArgs>();
  add_workload_options(*cmd, a->job);
  add_megatron_option(*cmd, a->job);
  // The list-valued flags replace the single-valued ones of the shared workload options.
  for (const char* name : {"--gpu", "--cluster", "--gpus", "--global-batch", "--seq"}) remove_option(*cmd, name);
  cmd->add_option("--gpu", a->gpu_list, "GPU types, comma-separated (each on its cluster preset), e.g. a100-80gb,h100,h200,b200");
  cmd->add_option("--cluster", a->cluster_list, "Cluster presets or files, comma-separated (instead of --gpu)");
  cmd->add_option("--gpus", a->gpus_list, "GPU counts, comma-separated, e.g. 64,128,256,512,1024");
  cmd->add_option("--global-batch", a->batch_list, "Global batch sizes in sequences, comma-separated");
  cmd->add_option("--seq", a->seq_list, "Sequence lengths, comma-separated (default: the model's max_seq_length)");
  cmd->add_option("--inter-node-GBps", a->net_list, "Per-GPU inter-node bandwidth in GB/s per direction, comma-separated (overrides the NICs)");
  cmd->add_option("--tokens", a->tokens, "Token budget to train, e.g. 2e12");
  cmd->add_option("--deadline-days", a->deadline_days, "Find, per GPU type, the smallest GPU count that trains the budget within this many days");
  cmd->add_option("--max-gpus", a->max_gpus, "Largest GPU count tried by --deadline-days without --gpus (default 16384)");
  cmd->add_option("--price-per-gpu-hour", a->price, "USD per GPU-hour for every GPU type (default: the cluster presets' default guesses)");
  cmd->add_option("--carbon-intensity", a->carbon, "Grid carbon intensity in g CO2/kWh (default: the cluster preset's, 400)");
  cmd->add_option("--pue", a->pue, "Datacenter power usage effectiveness (default: the cluster preset's, 1.2)");
  cmd->add_option("--host-power", a->host_power, "Non-GPU power per node in W (default: the cluster preset's)");
  cmd->add_option("--gpu-static-power", a->static_fraction, "Power of a waiting GPU as a fraction of TDP (default 0.30)");
  cmd->add_option("--csv", a->csv_file, "Write the rows as CSV to this file");
  cmd->add_flag("--json", a->json, "Print the rows (and deadline answers) as JSON instead of the table");
  cmd->add_option("--plot", a->plot_file, "Write the scaling curves (time-to-train and cost vs GPUs) as SVG to this file");
  cmd->add_flag("-q,--quiet", a->quiet, "No progress bar or summary on stderr");
  cmd->callback([a, cmd, &ctx] {
    a->max_gpus_given = cmd->count("--max-gpus") > 0;
    run_whatif(*a, ctx);
  });
}

}  // namespace strata
