#include <doctest/doctest.h>

#include "whatif/energy_model.h"

using namespace strata;

TEST_SUITE("whatif") {
TEST_CASE("gpu_average_power_W: static share when waiting, TDP when always busy") {
  CHECK(gpu_average_power_W(700, 0, 0.3) == doctest::Approx(210));
  CHECK(gpu_average_power_W(700, 1, 0.3) == doctest::Approx(700));
  CHECK(gpu_average_power_W(700, 0.5, 0.3) == doctest::Approx(700 * (0.3 + 0.7 * 0.5)));
  SUBCASE("inputs are clamped to 0..1") {
    CHECK(gpu_average_power_W(400, 1.7, 0.3) == doctest::Approx(400));
    CHECK(gpu_average_power_W(400, -1, 0.3) == doctest::Approx(120));
  }
}

TEST_CASE("gpu_busy_fraction: compute and recompute share of the iteration") {
  Prediction p;
  p.iteration_time_s = 10;
  p.breakdown.compute_s = 6;
  p.breakdown.recompute_s = 1;
  p.breakdown.bubble_s = 3;
  CHECK(gpu_busy_fraction(p) == doctest::Approx(0.7));
  p.iteration_time_s = 0;
  CHECK(gpu_busy_fraction(p) == 0);
}

TEST_CASE("estimate_energy: (GPUs x power + host share) x PUE x time, CO2 = energy x intensity") {
  EnergyInput in;
  in.gpus = 64;
  in.gpus_per_node = 8;
  in.gpu_tdp_W = 700;
  in.busy_fraction = 0.8;
  in.static_fraction = 0.3;
  in.host_power_W_per_node = 3000;
  in.pue = 1.2;
  in.carbon_intensity_g_per_kWh = 400;
  in.time_s = 10 * 86400;
  const EnergyEstimate e = estimate_energy(in);
  const double gpu_W = 700 * (0.3 + 0.7 * 0.8);
  CHECK(e.avg_gpu_power_W == doctest::Approx(gpu_W));
  CHECK(e.it_power_W == doctest::Approx(64 * gpu_W + 8 * 3000));
  CHECK(e.energy_kWh == doctest::Approx((64 * gpu_W + 8 * 3000) * 1.2 * 240 / 1000));
  CHECK(e.co2_kg == doctest::Approx(e.energy_kWh * 0.4));
  SUBCASE("part of a node pays its share of the host power") {
    in.gpus = 64;
    in.gpus_per_node = 72;
    CHECK(estimate_energy(in).it_power_W == doctest::Approx(64 * gpu_W + 64.0 / 72 * 3000));
  }
}
}
