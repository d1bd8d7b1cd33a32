#include <doctest/doctest.h>

#include <cmath>

#include "test_util.h"
#include "whatif/energy_model.h"
#include "whatif/sweep.h"

using namespace strata;

namespace {

// A cost model whose iteration time depends only on the plan: dp-only plans scale perfectly.
class FakeModel final : public CostModel {
 public:
  Prediction predict(const Job& job) const override {
    Prediction p;
    p.feasible = true;
    p.iteration_time_s = job.plan.tp == 1 && job.plan.pp == 1 ? 8.0 / job.plan.dp : job.plan.tp == 2 && job.plan.pp == 1 ? 0.8 : 5.0;
    p.breakdown.compute_s = 0.8 * p.iteration_time_s;
    p.tokens_per_sec_per_gpu = static_cast<double>(job.training.global_batch_size * job.training.seq_length) /
                               p.iteration_time_s / job.plan.world_size();
    return p;
  }
};

Job small_workload(std::int64_t gbs) {
  Job w;
  w.model = test::catalog().model("gpt3-1.3b");
  w.cluster = test::catalog().cluster("dgx-a100-hdr");
  w.training.global_batch_size = gbs;
  w.training.seq_length = 2048;
  return w;
}

// A deliberately bad searcher: dp-only at 8 GPUs, a slow tp=8 pp=2 plan at 16.
SearchResult bad_search(const Job& w, int n, const CostModel& m) {
  SearchResult r;
  r.found = true;
  r.best.job = w;
  r.best.job.plan = ParallelPlan{};
  if (n == 8) {
    r.best.job.plan.dp = 8;
  } else {
    r.best.job.plan.tp = 8;
    r.best.job.plan.pp = 2;
    r.best.job.plan.dp = n / 16;
  }
  r.best.prediction = m.predict(r.best.job);
  return r;
}

std::vector<SweepPoint> counts(std::initializer_list<int> ns, std::int64_t gbs) {
  std::vector<SweepPoint> pts;
  for (int n : ns) pts.push_back({"a100-80gb", n, std::nullopt, 2048, gbs, 0});
  return pts;
}

}  // namespace

TEST_SUITE("whatif") {
TEST_CASE("sweep_points: cartesian product, GPU count fastest, one group per other combination") {
  SweepAxes ax;
  ax.gpus_types = {"h100", "b200"};
  ax.gpu_counts = {64, 128, 256};
  ax.inter_node_GBps = {std::nullopt};
  ax.seqs = {4096, 8192};
  ax.global_batches = {1024};
  const auto pts = sweep_points(ax);
  REQUIRE(pts.size() == 12);
  CHECK(pts[0].gpu == "h100");
  CHECK(pts[0].gpus == 64);
  CHECK(pts[2].gpus == 256);
  CHECK(pts[3].seq == 8192);
  CHECK(pts[3].group == 1);
  CHECK(pts[11].gpu == "b200");
  CHECK(pts[11].group == 3);
}

TEST_CASE("node_ladder: whole nodes doubling up to the cap, 8 x 2^k for non-power-of-two nodes") {
  CHECK(node_ladder(8, 100) == std::vector<int>{8, 16, 32, 64});
  CHECK(node_ladder(4, 16) == std::vector<int>{4, 8, 16});
  CHECK(node_ladder(72, 64) == std::vector<int>{8, 16, 32, 64});
}

TEST_CASE("run_sweep: more GPUs are never reported slower (monotonicity rule)") {
  FakeModel model;
  CapacityOptions opts;
  opts.tokens = 1e9;
  SearchFn search = [&](const Job& w, int n) { return bad_search(w, n, model); };

  SUBCASE("the smaller count's plan scaled by dp when it is legal and faster") {
    WorkloadFn wl = [](const SweepPoint& p) { return small_workload(p.global_batch); };
    auto rows = run_sweep(counts({8, 16}, 64), wl, search, model, opts);
    REQUIRE(rows.size() == 2);
    CHECK(rows[0].selection == RowSelection::searched);
    CHECK(rows[1].selection == RowSelection::scaled);
    CHECK(rows[1].kept_from_gpus == 8);
    CHECK(rows[1].job.plan.dp == 16);
    CHECK(rows[1].gpus_used == 16);
    CHECK(rows[1].prediction.iteration_time_s == doctest::Approx(0.5));
    CHECK(rows[1].time_to_train_s < rows[0].time_to_train_s);
    CHECK(rows[1].searched_time_to_train_s > rows[0].time_to_train_s);
  }
  SUBCASE("the scaled plan replaces a searched best that is faster than the smaller count but not than scaling it") {
    // At 16 GPUs the search finds tp=2 dp=8 (0.8 s, faster than 8 GPUs' 1.0 s); dp=16 gives 0.5 s.
    SearchFn search2 = [&](const Job& w, int n) {
      SearchResult r = bad_search(w, n, model);
      if (n == 16) {
        r.best.job.plan = ParallelPlan{};
        r.best.job.plan.tp = 2;
        r.best.job.plan.dp = 8;
        r.best.prediction = model.predict(r.best.job);
      }
      return r;
    };
    WorkloadFn wl = [](const SweepPoint& p) { return small_workload(p.global_batch); };
    auto rows = run_sweep(counts({8, 16}, 64), wl, search2, model, opts);
    CHECK(rows[1].searched_time_to_train_s < rows[0].time_to_train_s);
    CHECK(rows[1].selection == RowSelection::scaled);
    CHECK(rows[1].prediction.iteration_time_s == doctest::Approx(0.5));
  }
  SUBCASE("the smaller count's plan kept on the GPUs it uses when dp cannot grow") {
    // Global batch 8: dp=16 does not divide it, so the 8-GPU plan is kept.
    WorkloadFn wl = [](const SweepPoint& p) { return small_workload(p.global_batch); };
    auto rows = run_sweep(counts({8, 16, 32}, 8), wl, search, model, opts);
    REQUIRE(rows.size() == 3);
    for (int i : {1, 2}) {
      CHECK(rows[i].selection == RowSelection::kept);
      CHECK(rows[i].gpus_used == 8);
      CHECK(rows[i].kept_from_gpus == 8);
      CHECK(rows[i].time_to_train_s == doctest::Approx(rows[0].time_to_train_s));
      CHECK(rows[i].gpu_hours == doctest::Approx(rows[0].gpu_hours));
      CHECK(rows[i].point.gpus == (i == 1 ? 16 : 32));
    }
  }
}

TEST_CASE("run_sweep: real search, time non-increasing, cost and energy consistent with time x GPUs") {
  AnalyticalCostModel model;
  SearchFn search = [&](const Job& w, int n) {
    SearchOptions so;
    so.num_gpus = n;
    so.threads = 1;
    return search_plans(w, so, model);
  };
  WorkloadFn wl = [](const SweepPoint& p) {
    Job w = small_workload(p.global_batch);
    w.model = test::catalog().model("llama3-8b");
    w.cluster = test::catalog().cluster(p.gpu);
    w.training.seq_length = p.seq;
    return w;
  };
  CapacityOptions opts;
  opts.tokens = 1e11;
  std::vector<SweepPoint> pts;
  for (const char* c : {"dgx-a100-hdr", "dgx-h100-ndr"})
    for (int n : {8, 16, 32, 64, 128, 256, 512})
      pts.push_back({c, n, std::nullopt, 8192, 256, std::string(c) == "dgx-a100-hdr" ? 0 : 1});
  auto rows = run_sweep(pts, wl, search, model, opts);
  REQUIRE(rows.size() == pts.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const SweepRow& r = rows[i];
    CHECK(r.point.gpus == pts[i].gpus);  // deterministic order
    REQUIRE(r.feasible);
    CHECK(r.job.plan.world_size() == r.gpus_used);
    const double hours = r.time_to_train_s / 3600;
    CHECK(r.time_to_train_s == doctest::Approx(opts.tokens / (r.prediction.tokens_per_sec_per_gpu * r.gpus_used)).epsilon(1e-9));
    CHECK(r.gpu_hours == doctest::Approx(hours * r.gpus_used));
    CHECK(r.price_is_default);
    CHECK(r.price_per_gpu_hour_usd == doctest::Approx(*r.job.cluster.price_per_gpu_hour_usd));
    CHECK(r.cost_usd == doctest::Approx(hours * r.gpus_used * r.price_per_gpu_hour_usd));
    const ClusterSpec& cl = r.job.cluster;
    const double it_W = r.gpus_used * gpu_average_power_W(cl.gpu.power_W, gpu_busy_fraction(r.prediction), 0.3) +
                        static_cast<double>(r.gpus_used) / cl.gpus_per_node * cl.host_power_W_per_node;
    CHECK(r.energy_kWh == doctest::Approx(it_W * cl.pue * hours / 1000));
    CHECK(r.co2_kg == doctest::Approx(r.energy_kWh * *cl.carbon_intensity_g_per_kWh / 1000));
    // Energy is bounded by every GPU at TDP plus hosts.
    CHECK(r.energy_kWh <= (r.gpus_used * cl.gpu.power_W + r.gpus_used / 8.0 * cl.host_power_W_per_node) * cl.pue * hours / 1000 * (1 + 1e-9));
    if (i > 0 && rows[i - 1].point.group == r.point.group)
      CHECK(r.time_to_train_s <= rows[i - 1].time_to_train_s * (1 + 1e-9));
  }
  SUBCASE("the deadline answer meets the deadline and one step fewer does not") {
    for (double days : {3.0, 10.0, 40.0}) {
      for (const auto& a : answer_deadline(rows, days * 86400)) {
        if (!a.met) continue;
        CHECK(a.time_to_train_s <= days * 86400);
        CHECK(rows[a.row].point.gpus == a.gpus);
        CHECK(a.cost_usd == doctest::Approx(rows[a.row].cost_usd));
        if (a.fewer_gpus > 0) {
          CHECK(a.fewer_gpus < a.gpus);
          CHECK((!a.fewer_feasible || a.fewer_time_to_train_s > days * 86400));
        }
      }
    }
  }
}

TEST_CASE("fill_capacity: a given price and carbon intensity replace the presets' defaults") {
  SweepRow r;
  r.feasible = true;
  r.job = small_workload(64);
  r.gpus_used = 16;
  r.prediction.iteration_time_s = 2;
  r.prediction.breakdown.compute_s = 2;
  CapacityOptions opts;
  opts.tokens = 64.0 * 2048 * 1000;  // 1000 iterations
  opts.price_per_gpu_hour_usd = 3;
  opts.carbon_intensity_g_per_kWh = 50;
  fill_capacity(r, opts);
  CHECK(r.iterations == doctest::Approx(1000));
  CHECK(r.time_to_train_s == doctest::Approx(2000));
  CHECK(!r.price_is_default);
  CHECK(r.price_source == "--price-per-gpu-hour");
  CHECK(r.cost_usd == doctest::Approx(16 * 2000 / 3600.0 * 3));
  CHECK(!r.carbon_is_default);
  CHECK(r.co2_kg == doctest::Approx(r.energy_kWh * 0.05));
  CHECK(r.avg_gpu_power_W == doctest::Approx(r.job.cluster.gpu.power_W));
}

TEST_CASE("answer_deadline: unmet deadlines say how close the largest count came") {
  FakeModel model;
  CapacityOptions opts;
  opts.tokens = 1e12;
  SearchFn search = [&](const Job& w, int n) { return bad_search(w, n, model); };
  WorkloadFn wl = [](const SweepPoint& p) { return small_workload(p.global_batch); };
  auto rows = run_sweep(counts({8, 16}, 64), wl, search, model, opts);
  auto ans = answer_deadline(rows, 1.0);
  REQUIRE(ans.size() == 1);
  CHECK(!ans[0].met);
  CHECK(ans[0].note.find("not met: even 16 GPUs take") != std::string::npos);
  ans = answer_deadline(rows, rows[0].time_to_train_s * 2);
  CHECK(ans[0].met);
  CHECK(ans[0].gpus == 8);
  CHECK(ans[0].fewer_gpus == 0);
}
}
