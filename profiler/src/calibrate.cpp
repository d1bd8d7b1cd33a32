#include "profiler/calibrate.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include <Eigen/Dense>
#include <unsupported/Eigen/LevenbergMarquardt>
#include <unsupported/Eigen/NumericalDiff>
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

double model_time(const Sample& s, const GpuSpec& gpu, const KernelCoefficients& c) {
  KernelModel km(gpu, precision_of(s), c);
  return km.time(to_costmodel_op(s.op)).time_s;
}

// One fitted coefficient: a KernelCoefficients field, its valid range, and whether the optimizer
// works on its inverse (a rate whose "off" state is an infinite efficiency, like the ALU term).
struct Param {
  const char* name;
  double KernelCoefficients::*field;
  double lo, hi;
  bool inverse = false;
  // Where the search starts besides the base value: a threshold parameter (a min(1, x/p) fill)
  // has no gradient on the side where it does not bind, so a few starts find the side that does.
  std::vector<double> starts = {};
};

// Relative residuals of the class's model over its samples, for Levenberg-Marquardt on the log of
// each parameter (so every parameter stays positive).
struct ClassResiduals : Eigen::DenseFunctor<double> {
  const std::vector<const Sample*>& samples;
  const GpuSpec& gpu;
  KernelCoefficients base;
  const std::vector<Param>& params;
  ClassResiduals(const std::vector<const Sample*>& s, const GpuSpec& g, const KernelCoefficients& b, const std::vector<Param>& p)
      : Eigen::DenseFunctor<double>(static_cast<int>(p.size()), static_cast<int>(s.size())), samples(s), gpu(g), base(b), params(p) {}
  KernelCoefficients at(const Eigen::VectorXd& x) const {
    KernelCoefficients c = base;
    for (std::size_t i = 0; i < params.size(); ++i) {
      const double v = std::exp(std::clamp(x(static_cast<Eigen::Index>(i)), -40.0, 40.0));
      c.*params[i].field = params[i].inverse ? 1.0 / v : v;
    }
    return c;
  }
  int operator()(const Eigen::VectorXd& x, Eigen::VectorXd& fvec) const {
    const KernelCoefficients c = at(x);
    for (std::size_t i = 0; i < samples.size(); ++i)
      fvec(static_cast<Eigen::Index>(i)) = model_time(*samples[i], gpu, c) / samples[i]->time_s - 1.0;
    return 0;
  }
};

ErrorStats errors_of(const std::vector<const Sample*>& samples, const GpuSpec& gpu, const KernelCoefficients& c) {
  std::vector<double> e;
  for (const auto* s : samples) e.push_back(abs_pct(model_time(*s, gpu, c), s->time_s));
  return error_stats(e);
}

// Fits `params` of `c` on `samples`; out-of-range results are clamped to the range (a note says so).
ClassFit fit_class(const char* cls, const std::vector<const Sample*>& samples, const GpuSpec& gpu, const std::vector<Param>& params,
                   KernelCoefficients& c, std::vector<std::string>& notes) {
  ClassFit f{cls, {}, {}, {}, false};
  for (const auto& p : params) f.terms.push_back(p.name);
  if (params.empty() || static_cast<int>(samples.size()) < kMin || samples.size() < params.size()) {
    for (const auto& p : params) f.coefficients.push_back(c.*p.field);
    return f;
  }
  ClassResiduals functor(samples, gpu, c, params);
  auto solve = [&](const KernelCoefficients& start) {
    Eigen::VectorXd x(static_cast<Eigen::Index>(params.size()));
    for (std::size_t i = 0; i < params.size(); ++i) {
      double v = start.*params[i].field;
      if (params[i].inverse) v = std::max(v, 0.1);  // 0 ("off") starts the search at a small term
      x(static_cast<Eigen::Index>(i)) = std::log(params[i].inverse ? 1.0 / v : std::max(v, 1e-6));
    }
    Eigen::NumericalDiff<ClassResiduals> numeric(functor);
    Eigen::LevenbergMarquardt<Eigen::NumericalDiff<ClassResiduals>> lm(numeric);
    lm.setMaxfev(400 * static_cast<int>(params.size() + 1));
    lm.minimize(x);
    return x;
  };
  auto sse = [&](const Eigen::VectorXd& x) {
    Eigen::VectorXd r(static_cast<Eigen::Index>(samples.size()));
    functor(x, r);
    return x.allFinite() && r.allFinite() ? r.squaredNorm() : std::numeric_limits<double>::infinity();
  };
  Eigen::VectorXd x = solve(c);
  for (std::size_t i = 0; i < params.size(); ++i)
    for (double v : params[i].starts) {
      KernelCoefficients start = c;
      start.*params[i].field = v;
      Eigen::VectorXd y = solve(start);
      if (sse(y) < sse(x)) x = y;
    }
  if (!std::isfinite(sse(x))) {
    notes.push_back(fmt::format("{}: the fit did not converge; coefficients kept", cls));
    for (const auto& p : params) f.coefficients.push_back(c.*p.field);
    return f;
  }
  const KernelCoefficients fitted = functor.at(x);
  for (const auto& p : params) {
    double v = fitted.*p.field;
    if (p.inverse && v > p.hi) v = 0;  // the term vanished: the math hides behind the loads
    if (v < p.lo || v > p.hi) {
      notes.push_back(fmt::format("{}: the fit gives {} = {:.4g}, outside {}..{}; clamped", cls, p.name, v, p.lo, p.hi));
      v = std::clamp(v, p.lo, p.hi);
    }
    c.*p.field = v;
    f.coefficients.push_back(v);
  }
  f.used = true;
  f.error = errors_of(samples, gpu, c);
  return f;
}

std::vector<const Sample*> of_pattern(const std::vector<const Sample*>& v, MemoryPattern p) {
  std::vector<const Sample*> out;
  for (const auto* s : v)
    if (memory_pattern(to_costmodel_op(s->op)) == p) out.push_back(s);
  return out;
}

// The classes in report order, then all samples together.
constexpr const char* kClasses[] = {"compute_bound", "dram_bound", "under_utilized", "attention_fwd", "attention_bwd", "all"};

}  // namespace

ErrorStats error_stats(std::vector<double> e) {
  ErrorStats s;
  s.count = static_cast<int>(e.size());
  s.median_pct = percentile(e, 0.5);
  s.p90_pct = percentile(e, 0.9);
  return s;
}

CalibrationFit fit_calibration(const std::vector<Sample>& samples, const GpuSpec& gpu, const Calibration& base) {
  CalibrationFit fit;
  fit.calibration = base;
  fit.samples = samples;
  KernelCoefficients& c = fit.calibration.kernel;
  using K = KernelCoefficients;

  std::map<KernelClass, std::vector<const Sample*>> by_class;
  for (const auto& s : fit.samples) by_class[s.cls].push_back(&s);
  auto kept = [&](const char* what, std::size_t n, const char* coefficients) {
    fit.notes.push_back(fmt::format("{} {} samples (< {}): {} kept", n, what, kMin, coefficients));
  };

  // Compute-bound first: the other classes' tensor-core terms use its efficiency.
  const auto& compute = by_class[KernelClass::compute_bound];
  const auto n_fp8 = std::count_if(compute.begin(), compute.end(), [](const Sample* s) { return precision_of(*s) == Precision::fp8; });
  const bool fit_fp8 = n_fp8 >= kMin && static_cast<std::int64_t>(compute.size()) - n_fp8 >= kMin;
  std::vector<Param> cp{{"gemm_efficiency", &K::gemm_efficiency, 0.05, 1.0},
                        {"gemm_k_overhead", &K::gemm_k_overhead, 0, 4096},
                        {"launch_overhead_us", &K::launch_overhead_us, 0, 1e4}};
  if (fit_fp8) cp.push_back({"fp8_gemm_factor", &K::fp8_gemm_factor, 0.05, 1.5});
  fit.classes.push_back(fit_class("compute_bound", compute, gpu, cp, c, fit.notes));
  if (!fit.classes.back().used) kept("compute-bound", compute.size(), "gemm_efficiency, gemm_k_overhead and launch_overhead_us");
  if (n_fp8 > 0 && !fit_fp8)
    fit.notes.push_back(fmt::format("{} fp8 compute-bound samples (need {} of them and of the others): fp8_gemm_factor kept", n_fp8, kMin));

  // DRAM-bound: the bandwidth of each access pattern that has samples, the row fill, the math.
  const auto& dram = by_class[KernelClass::dram_bound];
  std::vector<Param> dp{{"dram_overhead_us", &K::dram_overhead_us, 0, 1e4}};
  const auto maps = of_pattern(dram, MemoryPattern::elementwise_map), rows = of_pattern(dram, MemoryPattern::row_reduction),
             gemms = of_pattern(dram, MemoryPattern::gemm_operands);
  if (static_cast<int>(maps.size()) >= kMin) dp.push_back({"memory_efficiency", &K::memory_efficiency, 0.01, 1.5});
  else kept("DRAM-bound elementwise", maps.size(), "memory_efficiency");
  if (static_cast<int>(gemms.size()) >= kMin) dp.push_back({"gemm_memory_efficiency", &K::gemm_memory_efficiency, 0.01, 1.5});
  else kept("DRAM-bound GEMM", gemms.size(), "gemm_memory_efficiency");
  if (static_cast<int>(rows.size()) >= kMin) {
    dp.push_back({"row_memory_efficiency", &K::row_memory_efficiency, 0.01, 1.5});
    dp.push_back({"row_rows_per_sm", &K::row_rows_per_sm, 0.01, 1e4, false, {4, 16}});
  } else {
    kept("DRAM-bound row-reduction", rows.size(), "row_memory_efficiency and row_rows_per_sm");
  }
  if (static_cast<int>(maps.size() + rows.size()) >= kMin) {
    dp.push_back({"elementwise_alu_efficiency", &K::elementwise_alu_efficiency, 0, 1.5, true});
    if (gpu.l2_MiB > 0) dp.push_back({"l2_bandwidth_factor", &K::l2_bandwidth_factor, 1, 100, false, {2}});
  }
  fit.classes.push_back(fit_class("dram_bound", dram, gpu, dp, c, fit.notes));
  if (!fit.classes.back().used) kept("DRAM-bound", dram.size(), "the DRAM-bound coefficients");

  // Under-utilized: the latency of a partial wave and the per-SM load rate.
  const auto& under = by_class[KernelClass::under_utilized];
  std::vector<Param> up{{"under_utilized_overhead_us", &K::under_utilized_overhead_us, 0, 1e4}};
  const bool under_gemms = std::any_of(under.begin(), under.end(), [](const Sample* s) { return s->op.kind == "gemm"; });
  if (under_gemms) up.push_back({"under_utilized_gemm_factor", &K::under_utilized_gemm_factor, 0.1, 2.0});
  if (under_gemms && gpu.boost_clock_MHz > 0) up.push_back({"sm_load_bytes_per_clock", &K::sm_load_bytes_per_clock, 1, 4096, false, {16, 256}});
  fit.classes.push_back(fit_class("under_utilized", under, gpu, up, c, fit.notes));
  if (!fit.classes.back().used) kept("under-utilized", under.size(), "under_utilized_overhead_us and sm_load_bytes_per_clock");

  // Attention, each direction and each kernel (FlashAttention-2, cuDNN) on its own: efficiency and
  // the fixed key blocks of a query tile. cuDNN's terms appear only where the profile has its kernels.
  auto of_kernel = [](const std::vector<const Sample*>& v, bool cudnn) {
    std::vector<const Sample*> out;
    for (const auto* s : v)
      if (to_costmodel_op(s->op).cudnn_attention == cudnn) out.push_back(s);
    return out;
  };
  struct AttentionTerms {
    const char* cls;
    KernelClass kernel_class;
    bool cudnn;
    Param efficiency, fixed_blocks;
  };
  const AttentionTerms attention_terms[] = {
      {"attention_fwd", KernelClass::attention_fwd, false, {"attention_fwd_efficiency", &K::attention_fwd_efficiency, 0.01, 1.5},
       {"attention_fwd_fixed_blocks", &K::attention_fwd_fixed_blocks, 0, 1e3}},
      {"attention_bwd", KernelClass::attention_bwd, false, {"attention_bwd_efficiency", &K::attention_bwd_efficiency, 0.01, 1.5},
       {"attention_bwd_fixed_blocks", &K::attention_bwd_fixed_blocks, 0, 1e3}},
      {"cudnn_attention_fwd", KernelClass::attention_fwd, true,
       {"cudnn_attention_fwd_efficiency", &K::cudnn_attention_fwd_efficiency, 0.01, 1.5},
       {"cudnn_attention_fwd_fixed_blocks", &K::cudnn_attention_fwd_fixed_blocks, 0, 1e3}},
      {"cudnn_attention_bwd", KernelClass::attention_bwd, true,
       {"cudnn_attention_bwd_efficiency", &K::cudnn_attention_bwd_efficiency, 0.01, 1.5},
       {"cudnn_attention_bwd_fixed_blocks", &K::cudnn_attention_bwd_fixed_blocks, 0, 1e3}},
  };
  for (const auto& t : attention_terms) {
    const auto kernel_samples = of_kernel(by_class[t.kernel_class], t.cudnn);
    if (kernel_samples.empty() && t.cudnn) continue;
    fit.classes.push_back(fit_class(t.cls, kernel_samples, gpu, {t.efficiency, t.fixed_blocks}, c, fit.notes));
    if (!fit.classes.back().used) kept(t.cls, kernel_samples.size(), t.efficiency.name);
  }

  // The kernel model against the profile, before (base) and after (fitted), per class.
  struct PerClass {
    std::vector<double> before, after, flops_fraction, bandwidth_fraction, waves;
  };
  std::map<std::string, PerClass> per;
  for (const auto& s : fit.samples) {
    double before = abs_pct(model_time(s, gpu, base.kernel), s.time_s);
    double after = abs_pct(model_time(s, gpu, c), s.time_s);
    for (const std::string& key : {std::string(to_string(s.cls)), std::string("all")}) {
      auto& p = per[key];
      p.before.push_back(before);
      p.after.push_back(after);
      p.flops_fraction.push_back(s.flops_fraction);
      p.bandwidth_fraction.push_back(s.bandwidth_fraction);
      p.waves.push_back(s.waves);
    }
  }
  for (const char* key : kClasses) {
    auto it = per.find(key);
    if (it == per.end()) continue;
    const auto& p = it->second;
    fit.comparison.push_back({key, error_stats(p.before), error_stats(p.after), percentile(p.flops_fraction, 0.5),
                              percentile(p.bandwidth_fraction, 0.5), percentile(p.waves, 0.5)});
  }
  return fit;
}

std::string shape_family(const OpLabel& op) {
  const auto end = op.source.find(' ');
  std::string f = op.source.substr(0, end);
  return f.empty() ? "(unlabelled)" : f;
}

std::vector<CrossValidationFold> cross_validation_folds(const std::vector<Sample>& samples) {
  std::map<std::string, CrossValidationFold> folds;
  for (std::size_t i = 0; i < samples.size(); ++i) folds[shape_family(samples[i].op)].family = shape_family(samples[i].op);
  for (auto& [family, fold] : folds)
    for (std::size_t i = 0; i < samples.size(); ++i) (shape_family(samples[i].op) == family ? fold.held_out : fold.fit).push_back(i);
  std::vector<CrossValidationFold> out;
  for (auto& [family, fold] : folds) out.push_back(std::move(fold));
  return out;
}

CrossValidation cross_validate(const std::vector<Sample>& samples, const GpuSpec& gpu, const Calibration& base) {
  // In-sample: the "after" errors of one fit on everything (fit_calibration's comparison).
  std::map<std::string, ErrorStats> in_sample;
  for (const auto& c : fit_calibration(samples, gpu, base).comparison) in_sample[c.cls] = c.after;
  std::map<std::string, std::vector<double>> held_out;
  CrossValidation cv;
  for (const auto& fold : cross_validation_folds(samples)) {
    cv.families.push_back(fold.family);
    std::vector<Sample> fit_set;
    for (std::size_t i : fold.fit) fit_set.push_back(samples[i]);
    const KernelCoefficients c = fit_calibration(fit_set, gpu, base).calibration.kernel;
    for (std::size_t i : fold.held_out) {
      const double e = abs_pct(model_time(samples[i], gpu, c), samples[i].time_s);
      held_out[to_string(samples[i].cls)].push_back(e);
      held_out["all"].push_back(e);
    }
  }
  for (const char* cls : kClasses) cv.classes.push_back({cls, in_sample[cls], error_stats(held_out[cls])});
  return cv;
}

nlohmann::json cross_validation_to_json(const CrossValidation& cv) {
  // A class without samples has no error: null, not 0.
  auto stats = [](const ErrorStats& e) {
    if (e.count == 0) return nlohmann::json{{"n", 0}, {"median_pct", nullptr}, {"p90_pct", nullptr}};
    return nlohmann::json{{"n", e.count}, {"median_pct", e.median_pct}, {"p90_pct", e.p90_pct}};
  };
  nlohmann::json held = nlohmann::json::object(), in = nlohmann::json::object();
  for (const auto& c : cv.classes) {
    held[c.cls] = stats(c.held_out);
    in[c.cls] = stats(c.in_sample);
  }
  return {{"classes", held}, {"in_sample", in}, {"held_out_families", cv.families},
          {"method", "leave one model's shapes out: fit on the other families' kernels, predict the family's"}};
}

std::string cross_validation_report(const CrossValidation& cv, const std::string& gpu_name) {
  std::string out = fmt::format("Kernel model of {}: each class fitted without one model's shapes at a time ({} families), "
                                "absolute % error\n\n",
                                gpu_name, cv.families.size());
  out += fmt::format("{:<16} {:>5}  {:>10} {:>10}  {:>10} {:>10}\n", "class", "n", "in med", "in p90", "held med", "held p90");
  for (const auto& c : cv.classes) {
    if (c.held_out.count == 0) {
      out += fmt::format("{:<16} {:>5}  {:>10} {:>10}  {:>10} {:>10}\n", c.cls, 0, "-", "-", "-", "-");
      continue;
    }
    out += fmt::format("{:<16} {:>5}  {:>10.2f} {:>10.2f}  {:>10.2f} {:>10.2f}\n", c.cls, c.held_out.count, c.in_sample.median_pct,
                       c.in_sample.p90_pct, c.held_out.median_pct, c.held_out.p90_pct);
  }
  out += "\nheld-out families: ";
  for (std::size_t i = 0; i < cv.families.size(); ++i) out += (i ? ", " : "") + cv.families[i];
  return out + "\n";
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
  for (const auto& s : fit.samples) ++counts[to_string(s.cls)];
  j["fit"] = {{"method", "per-class Levenberg-Marquardt on relative error (Eigen), each class on its own samples"},
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
