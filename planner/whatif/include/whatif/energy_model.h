#pragma once
// Energy, cost and CO2 of a training run from the predicted iteration and the cluster's power,
// price and carbon figures.
//
// Model (the accounting of Patterson et al. 2021, "Carbon Emissions and Large Neural Network
// Training", arXiv:2104.10350, §2: energy = hours x (processors x average power + other IT power)
// x PUE; tCO2e = MWh x tCO2e/MWh; and of Luccioni et al. 2023, "Estimating the Carbon Footprint of
// BLOOM", JMLR 24(253), §4, which adds the idle/static and host power of the nodes):
//
//   busy        = (compute_s + recompute_s) / iteration_time_s      (critical stage; the share of
//                 the iteration the GPU runs its math kernels, from the predicted breakdown)
//   P_gpu       = TDP x (f_static + (1 - f_static) x busy)          (linear power-utilization
//                 model, Fan, Weber & Barroso 2007, "Power provisioning for a warehouse-sized
//                 computer", ISCA, §4.1: P(u) = P_idle + (P_busy - P_idle) u)
//   P_IT        = gpus x P_gpu + (gpus / gpus_per_node) x host_power_W_per_node
//                 (host power shared pro rata: a job on part of a node, e.g. 64 GPUs of a
//                 72-GPU NVL72 rack, is charged its share of the rack's CPUs, switches and fans)
//   E [kWh]     = P_IT x PUE x time_h / 1000
//   CO2 [kg]    = E x carbon_intensity_g_per_kWh / 1000
//   cost [USD]  = gpus x time_h x price_per_gpu_hour_usd,  GPU-hours = gpus x time_h
//
// f_static (default 0.30) is the draw of a GPU that is allocated but waiting (communication,
// pipeline bubbles) as a fraction of its TDP. It is an ESTIMATE: idle H100/A100 boards read
// 10-15% of TDP in nvidia-smi, a GPU spinning in NCCL kernels draws more; Patel et al. 2024
// ("Characterizing Power Management Opportunities for LLMs in the Cloud", ASPLOS'24, §4) observe
// training running near TDP with dips during communication phases. A GPU busy with dense GEMMs is
// assumed to draw its TDP (power-capped), an upper bound for memory-bound kernels.
#include "costmodel/cluster_spec.h"
#include "costmodel/prediction.h"

namespace strata {

inline constexpr double kDefaultGpuStaticPowerFraction = 0.30;

// The share of an iteration a GPU spends in math kernels (0..1).
double gpu_busy_fraction(const Prediction& pred);
// Average board power of one GPU at this busy fraction.
double gpu_average_power_W(double tdp_W, double busy_fraction, double static_fraction);

struct EnergyInput {
  int gpus = 0;
  int gpus_per_node = 8;
  double gpu_tdp_W = 0;
  double busy_fraction = 0;
  double static_fraction = kDefaultGpuStaticPowerFraction;
  double host_power_W_per_node = 0;
  double pue = 1.0;
  double carbon_intensity_g_per_kWh = 0;
  double time_s = 0;
};

struct EnergyEstimate {
  double avg_gpu_power_W = 0;  // per GPU
  double it_power_W = 0;       // all GPUs + hosts
  double facility_power_W = 0; // x PUE
  double energy_kWh = 0;
  double co2_kg = 0;
};

EnergyEstimate estimate_energy(const EnergyInput& in);

}  // namespace strata
