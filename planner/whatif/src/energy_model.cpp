#include "whatif/energy_model.h"

#include <algorithm>

namespace strata {

double gpu_busy_fraction(const Prediction& pred) {
  if (pred.iteration_time_s <= 0) return 0;
  const double busy = (pred.breakdown.compute_s + pred.breakdown.recompute_s) / pred.iteration_time_s;
  return std::clamp(busy, 0.0, 1.0);
}

double gpu_average_power_W(double tdp_W, double busy_fraction, double static_fraction) {
  // Fan, Weber & Barroso 2007 §4.1: P(u) = P_idle + (P_busy - P_idle) u, with P_busy = TDP.
  const double u = std::clamp(busy_fraction, 0.0, 1.0);
  const double f = std::clamp(static_fraction, 0.0, 1.0);
  return tdp_W * (f + (1 - f) * u);
}

EnergyEstimate estimate_energy(const EnergyInput& in) {
  // Patterson et al. 2021 §2: E = hours x (processors x average power + other IT power) x PUE.
  EnergyEstimate e;
  e.avg_gpu_power_W = gpu_average_power_W(in.gpu_tdp_W, in.busy_fraction, in.static_fraction);
  const double node_share = static_cast<double>(in.gpus) / std::max(1, in.gpus_per_node);
  e.it_power_W = in.gpus * e.avg_gpu_power_W + node_share * in.host_power_W_per_node;
  e.facility_power_W = e.it_power_W * in.pue;
  e.energy_kWh = e.facility_power_W * in.time_s / 3600.0 / 1000.0;
  e.co2_kg = e.energy_kWh * in.carbon_intensity_g_per_kWh / 1000.0;
  return e;
}

}  // namespace strata
