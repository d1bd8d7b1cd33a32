#include "profiler/step_calibration.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace strata::profiler {

Calibration scale_throughput(const Calibration& base, double scale) {
  Calibration c = base;
  c.kernel.gemm_efficiency = std::min(1.0, base.kernel.gemm_efficiency * scale);
  // Every DRAM access pattern's bandwidth fraction (kernel_model.h) moves together.
  c.kernel.memory_efficiency = std::min(1.0, base.kernel.memory_efficiency * scale);
  c.kernel.gemm_memory_efficiency = std::min(1.0, base.kernel.gemm_memory_efficiency * scale);
  c.kernel.row_memory_efficiency = std::min(1.0, base.kernel.row_memory_efficiency * scale);
  return c;
}

namespace {

double mape(const std::vector<StepFitRun>& runs, double StepFitRun::*predicted) {
  double sum = 0;
  for (const auto& r : runs) sum += std::fabs(r.*predicted - r.measured_s) / r.measured_s;
  return 100.0 * sum / static_cast<double>(runs.size());
}

}  // namespace

namespace {

// Golden-section search for the minimum of a unimodal f on [lo, hi]: ~1e-6 of the interval within
// 40 steps.
double golden_section_min(const std::function<double(double)>& f, double lo, double hi) {
  const double g = (std::sqrt(5.0) - 1) / 2;
  double x1 = hi - g * (hi - lo), x2 = lo + g * (hi - lo);
  double f1 = f(x1), f2 = f(x2);
  for (int i = 0; i < 40; ++i) {
    if (f1 <= f2) {
      hi = x2;
      x2 = x1;
      f2 = f1;
      x1 = hi - g * (hi - lo);
      f1 = f(x1);
    } else {
      lo = x1;
      x1 = x2;
      f1 = f2;
      x2 = lo + g * (hi - lo);
      f2 = f(x2);
    }
  }
  return (lo + hi) / 2;
}

// The minimum of f over an increasing grid's range: the best grid point first, then golden-section
// search between its neighbours. The objectives here are flat over part of their range (a
// host-bound run does not respond to faster kernels, a GPU-bound one to a shorter host time), and
// where both of golden-section search's probes fall on such a plateau it cannot tell which way the
// minimum lies; the grid finds its neighbourhood first.
double grid_then_golden_min(const std::function<double(double)>& f, const std::vector<double>& grid) {
  std::size_t best = 0;
  double f_best = f(grid[0]);
  for (std::size_t i = 1; i < grid.size(); ++i) {
    const double fi = f(grid[i]);
    if (fi < f_best) {
      best = i;
      f_best = fi;
    }
  }
  const double lo = grid[best == 0 ? 0 : best - 1], hi = grid[std::min(best + 1, grid.size() - 1)];
  const double x = golden_section_min(f, lo, hi);
  return f(x) < f_best ? x : grid[best];
}

// n points from lo to hi, evenly spaced.
std::vector<double> even_grid(double lo, double hi, int n) {
  std::vector<double> g(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) g[static_cast<std::size_t>(i)] = lo + (hi - lo) * i / (n - 1);
  return g;
}

StepFit start_fit(const std::string& gpu, const Calibration& base, std::vector<StepFitRun> runs, StepFitTarget target) {
  if (runs.empty()) throw std::invalid_argument("fit_step_times: no runs");
  for (const auto& r : runs)
    if (!(r.measured_s > 0)) throw std::invalid_argument("fit_step_times: run " + r.id + " has no positive measured time");
  StepFit fit;
  fit.target = target;
  fit.gpu = gpu;
  fit.base = base;
  fit.runs = std::move(runs);
  return fit;
}

// Sum over the runs of the squared log-ratio of predicted to measured iteration time.
double log_error(const StepFit& fit, const Calibration& c, const StepTimePredictor& predict_time) {
  double sum = 0;
  for (std::size_t i = 0; i < fit.runs.size(); ++i) {
    const double e = std::log(predict_time(i, c) / fit.runs[i].measured_s);
    sum += e * e;
  }
  return sum;
}

void finish_fit(StepFit& fit, const StepTimePredictor& predict_time) {
  for (std::size_t i = 0; i < fit.runs.size(); ++i) fit.runs[i].after_s = predict_time(i, fit.calibration);
  fit.mape_before_pct = mape(fit.runs, &StepFitRun::before_s);
  fit.mape_after_pct = mape(fit.runs, &StepFitRun::after_s);
}

}  // namespace

StepFit fit_step_times(const std::string& gpu, const Calibration& base, std::vector<StepFitRun> runs,
                       const StepTimePredictor& predict_time) {
  StepFit fit = start_fit(gpu, base, std::move(runs), StepFitTarget::throughput);
  // The predicted time falls monotonically as the kernels get faster, so the objective has one
  // minimum.
  const double top = 1.0 / std::max(fit.base.kernel.gemm_efficiency, fit.base.kernel.memory_efficiency);
  const double log_scale = grid_then_golden_min(
      [&](double x) { return log_error(fit, scale_throughput(fit.base, std::exp(x)), predict_time); },
      even_grid(std::log(0.2), std::log(std::max(top, 0.2 + 1e-9)), 32));
  fit.throughput_scale = std::exp(log_scale);
  fit.at_bound = fit.throughput_scale < 0.2 * 1.01 || fit.throughput_scale > top * 0.99;
  fit.calibration = scale_throughput(fit.base, fit.throughput_scale);
  finish_fit(fit, predict_time);
  return fit;
}

StepFit fit_moe_host_time(const std::string& gpu, const Calibration& base, std::vector<StepFitRun> runs,
                          const StepTimePredictor& predict_time) {
  StepFit fit = start_fit(gpu, base, std::move(runs), StepFitTarget::moe_host);
  auto with_host = [&](double h) {
    Calibration c = fit.base;
    c.host.moe_forward_s = h;
    return c;
  };
  // A grid even in the logarithm from 0.1 ms (steps of 12%). Not zero: host.moe_forward_s = 0 means
  // no measured figure, the line's host time.
  std::vector<double> grid;
  for (double x : even_grid(std::log(1e-4), std::log(kMaxMoeHostFitS), 64)) grid.push_back(std::exp(x));
  const double h = grid_then_golden_min([&](double x) { return log_error(fit, with_host(x), predict_time); }, grid);
  fit.calibration = with_host(h);
  fit.at_bound = h < 1e-3 * kMaxMoeHostFitS || h > 0.99 * kMaxMoeHostFitS;
  finish_fit(fit, predict_time);
  return fit;
}

nlohmann::json step_fit_to_json(const StepFit& fit, const std::string& file) {
  nlohmann::json j = calibration_to_json(fit.calibration);
  const bool host = fit.target == StepFitTarget::moe_host;
  j["source"] = host ? fmt::format("strata calibrate --steps {} --fit moe-host: {} measured iteration time(s); MoE host time {:.3f} ms "
                                   "per layer forward, kernels as {}",
                                   file, fit.runs.size(), 1e3 * fit.calibration.host.moe_forward_s, fit.base.source)
                     : fmt::format("strata calibrate --steps {}: {} measured iteration time(s); kernel throughput x{:.3f} of {}", file,
                                   fit.runs.size(), fit.throughput_scale, fit.base.source);
  j["gpu"] = fit.gpu;
  nlohmann::json runs = nlohmann::json::array();
  for (const auto& r : fit.runs)
    runs.push_back({{"id", r.id}, {"measured_s", r.measured_s}, {"predicted_before_s", r.before_s}, {"predicted_after_s", r.after_s}});
  j["fit"] = {{"kind", "step_times"},
              {"target", host ? "moe_host" : "throughput"},
              {"file", file},
              {"throughput_scale", fit.throughput_scale},
              {"moe_forward_s", fit.calibration.host.moe_forward_s},
              {"at_bound", fit.at_bound},
              {"base", fit.base.source},
              {"mape_before_pct", fit.mape_before_pct},
              {"mape_after_pct", fit.mape_after_pct},
              {"runs", runs}};
  return j;
}

std::string step_fit_report(const StepFit& fit) {
  std::string s = fmt::format("Calibration of {} from {} measured training step(s)\n", fit.gpu, fit.runs.size());
  const bool host = fit.target == StepFitTarget::moe_host;
  if (host)
    s += fmt::format("  MoE host time per layer forward: {:.3f} ms (host.moe_forward_s: the MoE block; its layer's attention block's\n"
                     "  host time scales with it; was {:.3f} ms, 0 = the measured line)\n",
                     1e3 * fit.calibration.host.moe_forward_s, 1e3 * fit.base.host.moe_forward_s);
  else
    s += fmt::format("  kernel throughput x{:.3f}: gemm_efficiency {:.3f} -> {:.3f}, memory_efficiency {:.3f} -> {:.3f}\n",
                     fit.throughput_scale, fit.base.kernel.gemm_efficiency, fit.calibration.kernel.gemm_efficiency,
                     fit.base.kernel.memory_efficiency, fit.calibration.kernel.memory_efficiency);
  s += fmt::format("  base: {}\n", fit.base.source);
  if (fit.at_bound && host && fit.calibration.host.moe_forward_s < 0.5 * kMaxMoeHostFitS)
    s += "  note: no host time helps: these runs' MoE layers drop tokens at a padded capacity (no host synchronisation),\n"
         "        or each forward is at least as long as the host time that would match them, or they are predicted slower\n"
         "        than measured. A dropless run at micro-batch 1, whose forward is short, measures it\n";
  else if (fit.at_bound && host)
    s += fmt::format("  note: the best host time is at the edge of the searched range ({:.0f} ms): the measurements are further\n"
                     "        from the model than a host time explains; check the runs' plans and clusters\n",
                     1e3 * kMaxMoeHostFitS);
  else if (fit.at_bound)
    s += "  note: the best factor is at the edge of the searched range (0.2 .. an efficiency of 1): the measurements are\n"
         "        further from the model than a kernel-throughput factor can explain; check the runs' plans and clusters\n";
  s += fmt::format("\n  {:<48} {:>11} {:>11} {:>7} {:>11} {:>7}\n", "run", "measured s", "before s", "err%", "after s", "err%");
  for (const auto& r : fit.runs)
    s += fmt::format("  {:<48} {:>11.3f} {:>11.3f} {:>+7.1f} {:>11.3f} {:>+7.1f}\n", r.id.substr(0, 48), r.measured_s, r.before_s,
                     100.0 * (r.before_s - r.measured_s) / r.measured_s, r.after_s, 100.0 * (r.after_s - r.measured_s) / r.measured_s);
  s += fmt::format("  iteration-time MAPE over these runs: {:.1f}% before, {:.1f}% after\n", fit.mape_before_pct, fit.mape_after_pct);
  if (fit.mape_before_pct < 10)
    s += fmt::format("  note: the defaults were already within {:.1f}% of these runs, inside the model's error on published runs\n"
                     "        (~10%): {} may fit the runs' noise rather than the stack\n",
                     fit.mape_before_pct, host ? "a host time fitted to them" : "a factor this close to 1");
  if (fit.runs.size() == 1)
    s += "  note: one run fixes the fitted figure exactly; its error after the fit says nothing about accuracy. Check the\n"
         "        calibration on runs it was not fitted to (strata validate --calibration).\n";
  return s;
}

}  // namespace strata::profiler
