#include <doctest/doctest.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "costmodel/errors.h"
#include "costmodel/predictor.h"
#include "catalog_util.h"
#include "fake_cost_model.h"
#include "search/searcher.h"
#include "test_util.h"

using namespace strata;

TEST_SUITE("search") {
TEST_CASE("search_plans: never slower than the published GPT-3 175B plan") {
  // Korthikanti et al. 2022 (Table 3 / Megatron-LM): GPT-3 175B on 1024 A100-80GB, global batch
  // 1536, seq 2048: tp8 pp16 dp8, micro-batch 1, selective recompute, SP, distributed optimizer.
  const Job expert = test::gpt3_175b_job();
  const AnalyticalCostModel model;
  const Prediction published = model.predict(expert);
  REQUIRE(published.feasible);
  SearchOptions o;
  o.num_gpus = 1024;
  for (SearchAlgorithm a : {SearchAlgorithm::bottleneck, SearchAlgorithm::exhaustive}) {
    o.algorithm = a;
    const SearchResult r = search_plans(expert, o, model);
    REQUIRE(r.found);
    CHECK(r.best.prediction.feasible);
    CHECK(r.best.prediction.iteration_time_s <= published.iteration_time_s);
    CHECK(r.best.job.plan.world_size() == 1024);
    CHECK(r.best.prediction == model.predict(r.best.job));  // the returned prediction is the model's
  }
}

TEST_CASE("search_plans: runners-up are feasible, slower and differ in a major dimension") {
  const AnalyticalCostModel model;
  SearchOptions o;
  o.num_gpus = 1024;
  const SearchResult r = search_plans(test::gpt3_175b_job(), o, model);
  REQUIRE(r.found);
  CHECK(r.runners_up.size() == 3);
  double last = r.best.prediction.iteration_time_s;
  for (const RankedPlan& ru : r.runners_up) {
    CHECK(ru.prediction.feasible);
    CHECK(ru.prediction.iteration_time_s >= last);
    last = ru.prediction.iteration_time_s;
    ParallelPlan a = ru.job.plan, b = r.best.job.plan;
    a.stage_layers = b.stage_layers = {};
    a.recompute.num_layers = b.recompute.num_layers = -1;
    a.distributed_optimizer = b.distributed_optimizer;
    CHECK_FALSE(a == b);
  }
  CHECK(r.plans_evaluated > 0);
  CHECK(r.starts > 0);
  CHECK(r.seconds > 0);
}

TEST_CASE("search_plans: nothing fits: the reason, the least memory and the GPUs that would fit") {
  Job w = test::workload("llama3.1-405b", "dgx-a100-hdr", 16, 8192);
  const AnalyticalCostModel model;
  SearchOptions o;
  o.num_gpus = 8;
  for (SearchAlgorithm a : {SearchAlgorithm::bottleneck, SearchAlgorithm::exhaustive}) {
    o.algorithm = a;
    const SearchResult r = search_plans(w, o, model);
    CHECK_FALSE(r.found);
    CHECK(r.min_memory_needed_GiB > 80);
    CHECK(r.gpus_needed_to_fit > 8);
    CHECK(r.infeasible_reason.find("no plan fits in the 80.0 GiB per GPU available on A100-SXM4-80GB") == 0);
  }
}

TEST_CASE("search_plans: constraints fix dimensions") {
  const AnalyticalCostModel model;
  SearchOptions o;
  o.num_gpus = 1024;
  o.tp = 8;
  o.pp = 16;
  o.micro_batch_size = 1;
  o.recompute = RecomputeGranularity::selective;
  const SearchResult r = search_plans(test::gpt3_175b_job(), o, model);
  REQUIRE(r.found);
  CHECK(r.best.job.plan.tp == 8);
  CHECK(r.best.job.plan.pp == 16);
  CHECK(r.best.job.plan.micro_batch_size == 1);
  CHECK(r.best.job.plan.recompute.granularity == RecomputeGranularity::selective);
}

TEST_CASE("search_plans: fixed expert parallelism holds in both algorithms, and the start honours it") {
  // Mixtral 8x7B on 64 H100s: unconstrained, the starts shard the 8 experts as widely as dp allows.
  const Job w = test::workload("mixtral-8x7b", "dgx-h100-ndr", 256, 4096);
  const AnalyticalCostModel model;
  SearchOptions o;
  o.num_gpus = 64;
  for (int ep : {2, 4}) {
    CAPTURE(ep);
    o.ep = ep;
    o.etp = 1;
    for (SearchAlgorithm a : {SearchAlgorithm::bottleneck, SearchAlgorithm::exhaustive}) {
      o.algorithm = a;
      const SearchResult r = search_plans(w, o, model);
      REQUIRE(r.found);
      CHECK(r.best.job.plan.ep == ep);
      CHECK(r.best.job.plan.etp == 1);
      for (const auto& q : r.runners_up) CHECK(q.job.plan.ep == ep);
    }
  }
  // Each expert split over two GPUs, whatever the dense layers' tp (Megatron-Core's
  // --expert-tensor-parallel-size; ep x etp tiles tp x dp x cp).
  o = SearchOptions{};
  o.num_gpus = 64;
  o.etp = 2;
  for (SearchAlgorithm a : {SearchAlgorithm::bottleneck, SearchAlgorithm::exhaustive}) {
    o.algorithm = a;
    const SearchResult split = search_plans(w, o, model);
    REQUIRE(split.found);
    CHECK(split.best.job.plan.etp == 2);
  }
}

TEST_CASE("search_plans: DeepSeek-V3's 61 layers interleave on the balanced layout (Megatron-Bridge's)") {
  // 1024 H100s with the MoE all-to-all overlapped, which Megatron-Core allows with pp > 1 only
  // when interleaved: before the balanced layout the search had only pp 1 plans.
  Job w = test::workload("deepseek-v3", "dgx-h100-ndr", 8192, 4096);
  w.runtime.moe_a2a_overlap = true;
  const AnalyticalCostModel model;
  SearchOptions o;
  o.num_gpus = 1024;
  o.pp = 8;
  o.vpp = 4;
  const SearchResult fixed = search_plans(w, o, model);
  REQUIRE(fixed.found);
  const ParallelPlan& p = fixed.best.job.plan;
  CHECK(p.stage_layers == standard_stage_layers(61, 8, 4, 1));
  CHECK(chunk_layers(p, 7, p.stage_layers.back(), 3, 1) == 0);  // "...|mL"
  o.pp.reset();
  o.vpp.reset();
  const SearchResult free = search_plans(w, o, model);
  REQUIRE(free.found);
  CHECK(free.best.job.plan.pp > 1);
  o.pp = 1;
  const SearchResult flat = search_plans(w, o, model);
  REQUIRE(flat.found);
  CHECK(free.best.prediction.iteration_time_s < flat.best.prediction.iteration_time_s);
  CHECK(fixed.best.prediction.iteration_time_s < flat.best.prediction.iteration_time_s);
}

TEST_CASE("search_plans: an MoE search climbs from several starts (Qwen3-30B-A3B on 16 H100s)") {
  // Its experts fit only sharded widely, so one shape starts within the bound of the best start;
  // the search used to climb from it alone and return it (4,662 tokens/s/GPU, one plan predicted).
  // The node-local expert layout and the first starts that fit whatever their bound climb too.
  const Job w = test::workload("qwen3-30b-a3b", "dgx-h100-ndr", 512, 4096);
  const AnalyticalCostModel model;
  SearchOptions o;
  o.num_gpus = 16;
  const SearchResult r = search_plans(w, o, model);
  REQUIRE(r.found);
  CHECK(r.starts >= 2);
  Job start = w;
  start.plan = ParallelPlan{};
  start.plan.dp = 16;
  start.plan.ep = 16;
  start.plan.distributed_optimizer = true;
  const Prediction from = model.predict(start);
  REQUIRE(from.feasible);
  CHECK(r.best.prediction.iteration_time_s < 0.8 * from.iteration_time_s);
}

TEST_CASE("search_plans: MoE searches find the same plan from every seed") {
  // Before the node-local expert starts, the starts kept whatever their bound and the memory hop of
  // the whole neighbourhood, the plan depended on the seed of the kicks: DeepSeek-V3 on 1024 H100s
  // 643-783 tokens/s/GPU over seeds 0-5, 846-958 with the all-to-all overlapped, GPT-OSS-120B on
  // 64 H100s 4,946-6,457; before the moves interleaved up to one layer per chunk with the
  // embedding and loss counted, Qwen3-235B-A22B on 256 H100s 1,288-1,315 (vpp 6 or 12).
  const AnalyticalCostModel model;
  const Job deepseek = test::workload("deepseek-v3", "dgx-h100-ndr", 8192, 4096);
  Job overlapped = deepseek;
  overlapped.runtime.moe_a2a_overlap = true;
  const Job gpt_oss = test::workload("gpt-oss-120b", "dgx-h100-ndr", 1280, 4096);
  const Job qwen = test::workload("qwen3-235b-a22b", "dgx-h100-ndr", 1024, 4096);
  // Not a structured binding: clang before 16 cannot capture one in doctest's CAPTURE lambdas.
  for (const std::pair<const Job*, int>& c : {std::pair<const Job*, int>{&deepseek, 1024}, {&overlapped, 1024}, {&gpt_oss, 64}, {&qwen, 256}}) {
    const Job* job = c.first;
    CAPTURE(job->model.name);
    CAPTURE(job->runtime.moe_a2a_overlap);
    SearchOptions o;
    o.num_gpus = c.second;
    std::vector<double> times;
    for (std::uint64_t seed = 0; seed < 4; ++seed) {
      o.seed = seed;
      const SearchResult r = search_plans(*job, o, model);
      REQUIRE(r.found);
      times.push_back(r.best.prediction.iteration_time_s);
    }
    for (double t : times) CHECK(t == doctest::Approx(times.front()).epsilon(1e-12));
  }
}

TEST_CASE("search_plans: bad options are input errors") {
  const AnalyticalCostModel model;
  SearchOptions o;
  CHECK_THROWS_AS(search_plans(test::gpt3_175b_job(), o, model), InputError);
  o.num_gpus = 8;
  o.runtime = "deepspeed";
  CHECK_THROWS_WITH(search_plans(test::gpt3_175b_job(), o, model), "command line: --runtime: expected megatron, found \"deepspeed\"");
  o.runtime = "megatron";
  Job ds = test::gpt3_175b_job();
  ds.runtime.framework = Framework::deepspeed;
  CHECK_THROWS_WITH(search_plans(ds, o, model), "command line: --framework: strata plan searches Megatron-LM plans (--runtime megatron) and the workload says "
                    "deepspeed; drop --framework, or predict a given deepspeed plan with strata predict --framework");
}

TEST_CASE("search_plans: a fake cost model's optimum, same answer from both algorithms") {
  const test::FakeCostModel model(
      [](const ParallelPlan& p) { return 3 + test::dist(p.tp, 8) + 0.5 * test::dist(p.pp, 2) + 0.2 * test::dist(p.micro_batch_size, 2); },
      [](const ParallelPlan& p) { return 10.0 * p.micro_batch_size / p.tp; }, 40);
  const Job w = test::workload("llama3-8b", "dgx-h100-ndr", 64, 4096);
  SearchOptions o;
  o.num_gpus = 32;
  const SearchResult bn = search_plans(w, o, model);
  o.algorithm = SearchAlgorithm::exhaustive;
  const SearchResult ex = search_plans(w, o, model);
  REQUIRE(bn.found);
  REQUIRE(ex.found);
  CHECK(bn.best.job.plan.tp == 8);
  CHECK(bn.best.job.plan.pp == 2);
  CHECK(bn.best.job.plan.micro_batch_size == 2);
  CHECK(bn.best.prediction.iteration_time_s == ex.best.prediction.iteration_time_s);
}

TEST_CASE("search_plans: of plans predicted within 0.5% of each other, the one needing the least memory wins") {
  // mbs barely changes the time (0.2% per doubling) and halves the memory per doubling.
  const test::FakeCostModel model(
      [](const ParallelPlan& p) { return 3 + test::dist(p.tp, 8) + 0.5 * test::dist(p.pp, 2) + 0.006 * test::dist(p.micro_batch_size, 1); },
      [](const ParallelPlan& p) { return 16.0 / p.micro_batch_size; }, 40);
  const Job w = test::workload("llama3-8b", "dgx-h100-ndr", 64, 4096);
  SearchOptions o;
  o.num_gpus = 32;
  o.algorithm = SearchAlgorithm::exhaustive;
  const SearchResult r = search_plans(w, o, model);
  REQUIRE(r.found);
  REQUIRE(r.fastest_tied.has_value());
  CHECK(r.fastest_tied->job.plan.micro_batch_size == 1);
  // tp8 pp2 leaves dp2 and 32 sequences per replica: 0.006 * log2(m) <= 0.5% of 3 s allows mbs 4.
  CHECK(r.best.job.plan.micro_batch_size == 4);
  CHECK(r.best.prediction.memory_per_gpu_GiB < r.fastest_tied->prediction.memory_per_gpu_GiB);
  CHECK(r.best.prediction.iteration_time_s <= 1.005 * r.fastest_tied->prediction.iteration_time_s);
}

TEST_CASE("search_plans: offloading must buy time: of tied plans, one that keeps its activations wins") {
  // GPT-3 175B on 256 H100s: offloading the attention's inputs lets a micro-batch of 2 fit, 0.4%
  // faster than the best plan without; a tie, so the plan without wins and the other is reported.
  Job w = test::workload("gpt3-175b", "dgx-h100-ndr", 512, 2048);
  w.calibration = test::catalog().calibration_or_default(w.cluster.gpu);
  const AnalyticalCostModel model;
  SearchOptions o;
  o.num_gpus = 256;
  const SearchResult kept = search_plans(w, o, model);
  o.allow_offload = true;
  const SearchResult r = search_plans(w, o, model);
  REQUIRE(kept.found);
  REQUIRE(r.found);
  CHECK(kept.best.job.plan.offload.modules == 0);
  CHECK(r.best.job.plan.offload.modules == 0);
  REQUIRE(r.fastest_tied.has_value());
  CHECK(r.fastest_tied->job.plan.offload.modules != 0);
  CHECK(r.fastest_tied->prediction.iteration_time_s < r.best.prediction.iteration_time_s);
  CHECK(r.best.prediction.iteration_time_s <= (1 + kTimeTie) * r.fastest_tied->prediction.iteration_time_s);
}

TEST_CASE("search_plans: a plan near the memory limit comes with the fastest one that leaves headroom") {
  Job w = test::workload("llama3-70b", "dgx-h100-ndr", 1024, 8192);
  w.runtime.memory_reserve_GiB = 2;
  const AnalyticalCostModel model;
  SearchOptions o;
  o.num_gpus = 512;
  const SearchResult r = search_plans(w, o, model);
  REQUIRE(r.found);
  const double usable = w.cluster.gpu.memory_GiB - 2;
  REQUIRE(r.best.prediction.memory_per_gpu_GiB > kTightMemoryFraction * usable);
  REQUIRE(r.with_headroom.has_value());
  const Prediction& h = r.with_headroom->prediction;
  CHECK(h.feasible);
  CHECK(h.memory_per_gpu_GiB <= kTightMemoryFraction * usable);
  CHECK(h.iteration_time_s >= r.best.prediction.iteration_time_s);
  CHECK(h == model.predict(r.with_headroom->job));  // predicted against the user's reserve
  CHECK(r.with_headroom->job.runtime.memory_reserve_GiB == 2);
  // With the reserve it suggests, the search picks it.
  w.runtime.memory_reserve_GiB = w.cluster.gpu.memory_GiB - kTightMemoryFraction * usable;
  const SearchResult again = search_plans(w, o, model);
  REQUIRE(again.found);
  CHECK(again.best.job.plan == r.with_headroom->job.plan);
  CHECK_FALSE(again.with_headroom.has_value());
}
}
