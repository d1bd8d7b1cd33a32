#include "profiler/calibrate.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include <Eigen/Dense>
#include <fmt/format.h>

namespace strata::profiler {

namespace {

constexpr int kMin = CalibrateOptions::kMinSamples;

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  double pos = q * static_cast<double>(v.size() - 1);
  auto lo = static_cast<std::size_t>(std::floor(pos));
  auto hi = std::min(lo + 1, v.size() - 1);
  double f = pos - static_cast<double>(lo);
  return v[lo] * (1 - f) + v[hi] * f;
}

double abs_pct(double predicted, double measured) { return std::abs(predicted - measured) / measured * 100.0; }

Precision precision_of(const Sample& s) { return precision_from_string(s.op.precision).value_or(Precision::bf16); }

// The compute term without efficiency: flops / (peak * wave/tile utilization * K-loop factor).
double compute_feature(const Sample& s, const GpuSpec& gpu, double k_overhead) {
  const Precision p = precision_of(s);
  KernelModel km(gpu, p, KernelCoefficients{});
  double util = 1, kfac = 1;
  if (s.op.kind != "elementwise") {
    util = km.gemm_utilization(s.op.m, s.op.n, s.op.batch);
    kfac = s.op.k / (s.op.k + k_overhead);
  }
  double peak = gpu.peak_flops(p);
  return s.op.flops / (peak * std::max(util, 1e-9) * std::max(kfac, 1e-9));
}

double memory_feature(const Sample& s, const GpuSpec& gpu) { return s.op.bytes / (gpu.hbm_GBps * 1e9); }

double model_time(const Sample& s, const GpuSpec& gpu, const KernelCoefficients& c) {
  KernelModel km(gpu, precision_of(s), c);
  Op op = to_costmodel_op(s.op);
  return km.time(op).time_s;
}

// Weighted sum of squared relative residuals of a linear fit.
double relative_sse(const std::vector<std::vector<double>>& cols, const std::vector<double>& coef, const std::vector<double>& y) {
  double sse = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    double p = 0;
    for (std::size_t j = 0; j < cols.size(); ++j) p += coef[j] * cols[j][i];
    double r = (p - y[i]) / y[i];
    sse += r * r;
  }
  return sse;
}

ErrorStats fit_errors(const std::vector<std::vector<double>>& cols, const std::vector<double>& coef, const std::vector<double>& y) {
  std::vector<double> e;
  for (std::size_t i = 0; i < y.size(); ++i) {
    double p = 0;
    for (std::size_t j = 0; j < cols.size(); ++j) p += coef[j] * cols[j][i];
    e.push_back(abs_pct(p, y[i]));
  }
  return error_stats(e);
}

std::string class_name(const Sample& s) {
  if (s.op.kind == "attention") return s.op.name.ends_with("_bwd") ? "attention_bwd" : "attention_fwd";
  return to_string(s.cls);
}

}  // namespace

ErrorStats error_stats(std::vector<double> e) {
  ErrorStats s;
  s.count = static_cast<int>(e.size());
  s.median_pct = percentile(e, 0.5);
  s.p90_pct = percentile(e, 0.9);
  return s;
}

std::vector<double> fit_nonnegative(const std::vector<std::vector<double>>& columns, const std::vector<double>& y) {
  const std::size_t nc = columns.size(), n = y.size();
  std::vector<double> best(nc, 0.0);
  if (nc == 0 || n == 0) return best;
  double best_sse = std::numeric_limits<double>::infinity();
  // Minimize sum(((A x - y) / y)^2): scale each row by 1/y (relative error, so microsecond kernels
  // count as much as 100 ms GEMMs). Try every subset of columns; keep the best non-negative one.
  for (unsigned mask = 1; mask < (1u << nc); ++mask) {
    std::vector<std::size_t> idx;
    for (std::size_t j = 0; j < nc; ++j)
      if (mask & (1u << j)) idx.push_back(j);
    if (idx.size() > n) continue;
    Eigen::MatrixXd A(n, idx.size());
    Eigen::VectorXd b(n);
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t c = 0; c < idx.size(); ++c) A(i, c) = columns[idx[c]][i] / y[i];
      b(i) = 1.0;
    }
    Eigen::VectorXd x = A.colPivHouseholderQr().solve(b);
    if (!x.allFinite() || (x.array() < 0).any()) continue;
    std::vector<double> coef(nc, 0.0);
    for (std::size_t c = 0; c < idx.size(); ++c) coef[idx[c]] = x(c);
    double sse = relative_sse(columns, coef, y);
    if (sse < best_sse - 1e-15) {
      best_sse = sse;
      best = coef;
    }
  }
  return best;
}

CalibrationFit fit_calibration(const std::vector<Sample>& samples, const GpuSpec& gpu, const Calibration& base) {
  CalibrationFit fit;
  fit.calibration = base;
  fit.samples = samples;
  KernelCoefficients& c = fit.calibration.kernel;

  std::vector<const Sample*> compute, dram, under, att_fwd, att_bwd;
  for (const auto& s : samples) {
    if (s.op.kind == "attention") (s.op.name.ends_with("_bwd") ? att_bwd : att_fwd).push_back(&s);
    else if (s.cls == KernelClass::compute_bound) compute.push_back(&s);
    else if (s.cls == KernelClass::dram_bound) dram.push_back(&s);
    else under.push_back(&s);
  }
  auto times = [](const std::vector<const Sample*>& v) {
    std::vector<double> t;
    for (const auto* s : v) t.push_back(s->time_s);
    return t;
  };
  auto ones = [](std::size_t n) { return std::vector<double>(n, 1.0); };

  // Compute-bound: t = a * X_c + c, with the K-loop overhead chosen by grid search. fp8 GEMMs get
  // their own term (t = a * X_c + a8 * X_c8 + c, fp8_gemm_factor = a / a8) when there are enough
  // of them and of the others; otherwise they count at the base fp8_gemm_factor.
  const auto n_fp8 = std::count_if(compute.begin(), compute.end(), [](const Sample* s) { return precision_of(*s) == Precision::fp8; });
  const bool split_fp8 = n_fp8 >= kMin && static_cast<std::int64_t>(compute.size()) - n_fp8 >= kMin;
  ClassFit cf{"compute_bound", {"flops_term", "intercept_s"}, {0, 0}, {}, false};
  if (split_fp8) cf = {"compute_bound", {"flops_term", "fp8_flops_term", "intercept_s"}, {0, 0, 0}, {}, false};
  if (static_cast<int>(compute.size()) >= kMin) {
    std::vector<double> y = times(compute);
    double best_sse = std::numeric_limits<double>::infinity();
    for (double kov : {0.0, 16.0, 32.0, 48.0, 64.0, 96.0, 128.0, 192.0, 256.0, 384.0, 512.0}) {
      std::vector<double> x, x8;
      for (const auto* s : compute) {
        const double f = compute_feature(*s, gpu, kov);
        const bool fp8 = precision_of(*s) == Precision::fp8;
        x.push_back(fp8 ? (split_fp8 ? 0.0 : f / c.fp8_gemm_factor) : f);
        x8.push_back(fp8 ? f : 0.0);
      }
      std::vector<std::vector<double>> cols{x, ones(y.size())};
      if (split_fp8) cols = {x, x8, ones(y.size())};
      auto coef = fit_nonnegative(cols, y);
      double sse = relative_sse(cols, coef, y);
      if (coef[0] > 0 && sse < best_sse) {
        best_sse = sse;
        cf.coefficients = coef;
        cf.error = fit_errors(cols, coef, y);
        c.gemm_k_overhead = kov;
      }
    }
    if (cf.coefficients[0] > 0) {
      cf.used = true;
      double eff = 1.0 / cf.coefficients[0];
      if (eff > 1.0) fit.notes.push_back(fmt::format("compute-bound fit gives gemm_efficiency {:.3f} > 1; capped at 1", eff));
      c.gemm_efficiency = std::min(eff, 1.0);
      if (split_fp8 && cf.coefficients[1] > 0) c.fp8_gemm_factor = std::clamp(cf.coefficients[0] / cf.coefficients[1], 0.05, 1.5);
    }
  }
  if (n_fp8 > 0 && !split_fp8)
    fit.notes.push_back(fmt::format("{} fp8 compute-bound samples (need {} of them and of the others): fp8_gemm_factor kept", n_fp8, kMin));
  if (!cf.used) fit.notes.push_back(fmt::format("{} compute-bound samples (< {}): gemm_efficiency and gemm_k_overhead kept", compute.size(), kMin));
  fit.classes.push_back(cf);

  // DRAM-bound: t = b * X_m + c.
  ClassFit df{"dram_bound", {"bytes_term", "intercept_s"}, {0, 0}, {}, false};
  if (static_cast<int>(dram.size()) >= kMin) {
    std::vector<double> y = times(dram), x;
    for (const auto* s : dram) x.push_back(memory_feature(*s, gpu));
    std::vector<std::vector<double>> cols{x, ones(y.size())};
    df.coefficients = fit_nonnegative(cols, y);
    df.error = fit_errors(cols, df.coefficients, y);
    if (df.coefficients[0] > 0) {
      df.used = true;
      double eff = 1.0 / df.coefficients[0];
      if (eff > 1.0) fit.notes.push_back(fmt::format("DRAM-bound fit gives memory_efficiency {:.3f} > 1 (L2 hits?); capped at 1", eff));
      c.memory_efficiency = std::min(eff, 1.0);
    }
  }
  if (!df.used) fit.notes.push_back(fmt::format("{} DRAM-bound samples (< {}): memory_efficiency kept", dram.size(), kMin));
  fit.classes.push_back(df);

  // Under-utilized: its own linear model t = a_u X_c + b_u X_m + c_u (reported; its intercept
  // informs the launch overhead below).
  ClassFit uf{"under_utilized", {"flops_term", "bytes_term", "intercept_s"}, {0, 0, 0}, {}, false};
  if (static_cast<int>(under.size()) >= kMin) {
    std::vector<double> y = times(under), xc, xm;
    for (const auto* s : under) {
      xc.push_back(compute_feature(*s, gpu, c.gemm_k_overhead));
      xm.push_back(memory_feature(*s, gpu));
    }
    std::vector<std::vector<double>> cols{xc, xm, ones(y.size())};
    uf.coefficients = fit_nonnegative(cols, y);
    uf.error = fit_errors(cols, uf.coefficients, y);
    uf.used = true;
  } else {
    fit.notes.push_back(fmt::format("{} under-utilized samples (< {}): no fit for that class", under.size(), kMin));
  }
  fit.classes.push_back(uf);

  // Launch overhead: the common intercept of the kernel model given the fitted efficiencies,
  // minimizing the relative error over every non-attention sample: c = sum(r/t^2) / sum(1/t^2).
  {
    KernelCoefficients no_launch = c;
    no_launch.launch_overhead_us = 0;
    double num = 0, den = 0;
    int n = 0;
    for (const auto& s : samples) {
      if (s.op.kind == "attention") continue;
      double r = s.time_s - model_time(s, gpu, no_launch);
      num += r / (s.time_s * s.time_s);
      den += 1.0 / (s.time_s * s.time_s);
      ++n;
    }
    if (n >= kMin && den > 0) c.launch_overhead_us = std::clamp(num / den * 1e6, 0.0, 1e4);
    else fit.notes.push_back("too few kernel samples: launch_overhead_us kept");
  }

  // Attention, relative to GEMMs: t - launch = s * (time at attention efficiency 1), eff = 1/s.
  auto fit_attention = [&](const std::vector<const Sample*>& v, const char* name, double& eff) {
    ClassFit af{name, {"time_over_gemm_time"}, {0}, {}, false};
    if (static_cast<int>(v.size()) >= kMin) {
      KernelCoefficients ideal = c;
      ideal.attention_fwd_efficiency = ideal.attention_bwd_efficiency = 1.0;
      ideal.launch_overhead_us = 0;
      std::vector<double> x, y;
      for (const auto* s : v) {
        x.push_back(model_time(*s, gpu, ideal));
        y.push_back(std::max(s->time_s - c.launch_overhead_us * 1e-6, 1e-9));
      }
      af.coefficients = fit_nonnegative({x}, y);
      af.error = fit_errors({x}, af.coefficients, y);
      if (af.coefficients[0] > 0) {
        af.used = true;
        eff = std::clamp(1.0 / af.coefficients[0], 0.01, 1.5);
      }
    }
    if (!af.used) fit.notes.push_back(fmt::format("{} {} samples (< {}): {}_efficiency kept", v.size(), name, kMin, name));
    fit.classes.push_back(af);
  };
  fit_attention(att_fwd, "attention_fwd", c.attention_fwd_efficiency);
  fit_attention(att_bwd, "attention_bwd", c.attention_bwd_efficiency);

  // The kernel model against the profile, before (base) and after (fitted), per measured class.
  struct PerClass {
    std::vector<double> before, after, flops_fraction, bandwidth_fraction, waves;
  };
  std::map<std::string, PerClass> per;
  for (const auto& s : samples) {
    double before = abs_pct(model_time(s, gpu, base.kernel), s.time_s);
    double after = abs_pct(model_time(s, gpu, c), s.time_s);
    for (const std::string& key : {class_name(s), std::string("all")}) {
      auto& p = per[key];
      p.before.push_back(before);
      p.after.push_back(after);
      p.flops_fraction.push_back(s.flops_fraction);
      p.bandwidth_fraction.push_back(s.bandwidth_fraction);
      p.waves.push_back(s.waves);
    }
  }
  for (const char* key : {"compute_bound", "dram_bound", "under_utilized", "attention_fwd", "attention_bwd", "all"}) {
    auto it = per.find(key);
    if (it == per.end()) continue;
    const auto& p = it->second;
    fit.comparison.push_back({key, error_stats(p.before), error_stats(p.after), percentile(p.flops_fraction, 0.5),
                              percentile(p.bandwidth_fraction, 0.5), percentile(p.waves, 0.5)});
  }
  return fit;
}

void fit_comm(const std::vector<CollectiveSample>& samples, const GpuSpec& gpu, CalibrationFit& fit) {
  std::vector<double> busbw;
  for (const auto& s : samples)
    if (s.op.name == "all_reduce" && s.op.bytes >= 64.0 * (1 << 20)) busbw.push_back(s.busbw_GBps);
  if (busbw.empty()) {
    fit.notes.push_back("no large all-reduce samples: comm coefficients kept");
    return;
  }
  if (gpu.nvlink_GBps <= 0) {
    fit.notes.push_back("GPU has no NVLink in its spec: nvlink_efficiency kept");
    return;
  }
  double eff = percentile(busbw, 0.5) / gpu.nvlink_GBps;
  fit.calibration.comm.nvlink_efficiency = std::clamp(eff, 0.01, 1.0);
  fit.notes.push_back(fmt::format("nvlink_efficiency {:.3f} from {} large all-reduce samples (median busbw {:.0f} GB/s)",
                                  fit.calibration.comm.nvlink_efficiency, busbw.size(), percentile(busbw, 0.5)));
}

nlohmann::json calibration_fit_to_json(const CalibrationFit& fit, const std::string& gpu_name) {
  nlohmann::json j = calibration_to_json(fit.calibration);
  j["gpu"] = gpu_name;
  j["notes"] = fit.notes;
  auto stats = [](const ErrorStats& e) { return nlohmann::json{{"count", e.count}, {"median_abs_pct_error", e.median_pct}, {"p90_abs_pct_error", e.p90_pct}}; };
  nlohmann::json classes = nlohmann::json::array();
  for (const auto& c : fit.classes) {
    nlohmann::json coef = nlohmann::json::object();
    for (std::size_t i = 0; i < c.terms.size(); ++i) coef[c.terms[i]] = c.coefficients[i];
    classes.push_back({{"class", c.cls}, {"fitted", c.used}, {"coefficients", coef}, {"error", stats(c.error)}});
  }
  nlohmann::json cmp = nlohmann::json::array();
  for (const auto& c : fit.comparison)
    cmp.push_back({{"class", c.cls}, {"before", stats(c.before)}, {"after", stats(c.after)},
                   {"median_flops_fraction", c.flops_fraction}, {"median_bandwidth_fraction", c.bandwidth_fraction},
                   {"median_waves", c.waves}});
  std::map<std::string, int> counts;
  for (const auto& s : fit.samples) ++counts[class_name(s)];
  j["fit"] = {{"method", "per-class non-negative least squares on relative error (Eigen)"},
              {"samples", fit.samples.size()},
              {"samples_per_class", counts},
              {"classes", classes},
              {"kernel_model_error", cmp}};
  return j;
}

std::string calibration_report(const CalibrationFit& fit, const std::string& gpu_name) {
  std::string out = fmt::format("Calibration of {} from {} kernel samples\n\n", gpu_name, fit.samples.size());
  out += fmt::format("{:<16} {:>5}  {:<44} {:>9} {:>9}\n", "class fit", "n", "coefficients", "med %err", "p90 %err");
  for (const auto& c : fit.classes) {
    std::string coef;
    for (std::size_t i = 0; i < c.terms.size(); ++i) coef += fmt::format("{}{}={:.4g}", i ? " " : "", c.terms[i], c.coefficients[i]);
    if (!c.used) coef = "(not fitted: too few samples)";
    out += fmt::format("{:<16} {:>5}  {:<44} {:>9.2f} {:>9.2f}\n", c.cls, c.error.count, coef, c.error.median_pct, c.error.p90_pct);
  }
  const auto& k = fit.calibration.kernel;
  out += fmt::format("\nkernel coefficients: gemm_efficiency={:.3f} memory_efficiency={:.3f} launch_overhead_us={:.2f} "
                     "gemm_k_overhead={:.0f} attention_fwd_efficiency={:.3f} attention_bwd_efficiency={:.3f} "
                     "fp8_gemm_factor={:.3f}\n",
                     k.gemm_efficiency, k.memory_efficiency, k.launch_overhead_us, k.gemm_k_overhead,
                     k.attention_fwd_efficiency, k.attention_bwd_efficiency, k.fp8_gemm_factor);
  out += fmt::format("comm coefficients:   nvlink_efficiency={:.3f}\n", fit.calibration.comm.nvlink_efficiency);
  out += "\nkernel model vs profile (absolute % error; achieved fractions of peak are medians)\n";
  out += fmt::format("{:<16} {:>5}  {:>9} {:>9}  {:>9} {:>9}  {:>9} {:>9} {:>7}\n", "class", "n", "before med", "before p90",
                     "after med", "after p90", "FLOP/s %", "HBM BW %", "waves");
  for (const auto& c : fit.comparison)
    out += fmt::format("{:<16} {:>5}  {:>9.2f} {:>9.2f}  {:>9.2f} {:>9.2f}  {:>9.1f} {:>9.1f} {:>7.1f}\n", c.cls, c.before.count,
                       c.before.median_pct, c.before.p90_pct, c.after.median_pct, c.after.p90_pct, 100 * c.flops_fraction,
                       100 * c.bandwidth_fraction, c.waves);
  if (!fit.notes.empty()) {
    out += "\nnotes:\n";
    for (const auto& n : fit.notes) out += "  - " + n + "\n";
  }
  return out;
}

}  // namespace strata::profiler
