#include <doctest/doctest.h>

#include <algorithm>
#include <set>

#include "search/plan_space.h"
#include "test_util.h"

using namespace strata;

namespace {

// GPT-3 175B on 1024 A100s with the published plan (tp8 pp16 dp8, SP, selective, dist-opt).
std::string reason(const ParallelPlan& p, SearchOptions o = {}) {
  Job job = test::gpt3_175b_job();
  job.plan = p;
  if (o.num_gpus == 0) o.num_gpus = 1024;
  return plan_illegal_reason(job, o);
}

}  // namespace

TEST_SUITE("search") {
TEST_CASE("plan_illegal_reason: the published GPT-3 175B plan is legal") {
  CHECK(reason(test::gpt3_175b_job().plan) == "");
}

TEST_CASE("plan_illegal_reason: search-level rules, each with its reason") {
  const ParallelPlan base = test::gpt3_175b_job().plan;
  SUBCASE("world size must equal the GPU count") {
    ParallelPlan p = base;
    p.dp = 4;
    CHECK(reason(p) == "tp*pp*dp*cp = 512 differs from the 1024 GPUs");
  }
  SUBCASE("tp is a power of two") {
    ParallelPlan p = base;
    p.tp = 3;
    p.dp = 1024 / 48;
    SearchOptions o;
    o.num_gpus = p.world_size();
    CHECK(reason(p, o) == "tp=3 is not a power of two");
  }
  SUBCASE("tp within a node unless allowed") {
    ParallelPlan p = base;
    p.tp = 16;
    p.dp = 4;
    CHECK(reason(p) == "tp=16 spans nodes of 8 GPUs (--allow-tp-across-nodes allows it)");
    SearchOptions o;
    o.num_gpus = 1024;
    o.allow_tp_across_nodes = true;
    CHECK(reason(p, o) == "");
  }
  SUBCASE("runtime megatron: no ZeRO stages") {
    ParallelPlan p = base;
    p.distributed_optimizer = false;
    p.zero_stage = 1;
    CHECK(reason(p) == "ZeRO stages are not part of stock Megatron-LM (use the distributed optimizer)");
  }
  SUBCASE("uneven stages with vpp > 1: every chunk needs a layer but the embedding's and the loss's (check_plan)") {
    ParallelPlan p = base;
    p.vpp = 2;
    p.stage_layers = {5, 7, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6};
    CHECK(reason(p) == "");
    p.stage_layers = {1, 11, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6};
    CHECK(reason(p) == "");  // the first stage's first chunk holds only the embedding
    p.stage_layers = {11, 1, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6};
    CHECK(reason(p) == "stage 1 has 1 layers, fewer than its vpp=2 model chunks (only the embedding's and the loss's chunk may "
                       "hold none)");
  }
  SUBCASE("vpp needs pp >= 2 and at least pp micro-batches (check_plan)") {
    ParallelPlan p = base;
    p.tp = 8;
    p.pp = 1;
    p.dp = 128;
    p.vpp = 2;
    CHECK(reason(p) == "interleaved pipelining (vpp > 1) needs pp >= 2");
    p = base;
    p.micro_batch_size = 12;  // 1536 / (8 * 12) = 16 micro-batches: divisible by 16
    p.vpp = 2;
    CHECK(reason(p) == "");
    p.micro_batch_size = 4;  // 48 micro-batches: groups of 16
    CHECK(reason(p) == "");
    p.micro_batch_size = 8;  // 24 micro-batches: one group of 24 (Megatron-Core's micro-batch groups)
    CHECK(reason(p) == "");
    p.micro_batch_size = 64;  // 3 micro-batches
    CHECK(reason(p) == "interleaved pipelining needs at least pp=16 micro-batches per step, this one has 3");
  }
  SUBCASE("batch divisible and layers >= stages (check_plan)") {
    ParallelPlan p = base;
    p.micro_batch_size = 5;
    CHECK(reason(p) == "global batch 1536 is not divisible by dp*micro_batch = 8*5");
    p = base;
    p.pp = 128;
    p.dp = 1;
    p.distributed_optimizer = false;
    CHECK(reason(p) == "pp=128 exceeds the 96 layers");
  }
  SUBCASE("canonical forms") {
    ParallelPlan p = base;
    p.tp = 1;
    p.dp = 64;
    CHECK(reason(p) == "sequence parallelism needs tp > 1");
    p = base;
    p.dp = 1;
    p.tp = 8;
    p.pp = 16;
    SearchOptions o;
    o.num_gpus = 128;
    CHECK(reason(p, o) == "the distributed optimizer needs a data-parallel group (dp*cp > 1)");
    p = base;
    p.stage_layers = std::vector<int>(16, 6);
    CHECK(reason(p) == "an even split is written as empty stage_layers");
    p = base;
    p.recompute = {RecomputeGranularity::full, 6};
    CHECK(reason(p) == "full recompute of every layer is written num_layers = -1");
    p.recompute = {RecomputeGranularity::full, -1};
    p.recompute.modules = kRecomputeMlp;
    CHECK(reason(p) == "recompute modules apply to selective recompute only");
    p.recompute = {RecomputeGranularity::full, 3};
    CHECK(reason(p) == "");
    // Interleaved, Megatron counts the layers per model chunk: 3 per stage is no whole number over 2
    // chunks; 4 is 2 per chunk (every chunk of 3 layers holds 2), 6 would be every layer.
    p.vpp = 2;
    CHECK(reason(p) == "recomputing some layers per stage (--recompute-method block) is counted per model chunk in Megatron-LM: "
                       "the layers per stage must be a multiple of vpp that every chunk holds");
    p.recompute = {RecomputeGranularity::full, 4};
    CHECK(reason(p) == "");
  }
  SUBCASE("user constraints") {
    SearchOptions o;
    o.num_gpus = 1024;
    o.tp = 4;
    CHECK(reason(base, o) == "tp is fixed to 4 (--tp)");
    o = SearchOptions{};
    o.num_gpus = 1024;
    o.recompute = RecomputeGranularity::full;
    CHECK(reason(base, o) == "recompute is fixed to full (--recompute)");
    o = SearchOptions{};
    o.num_gpus = 1024;
    o.ep = 8;
    CHECK(reason(base, o) == "ep is fixed to 8 (--ep)");
    o.ep.reset();
    o.etp = 8;
    CHECK(reason(base, o) == "etp is fixed to 8 (--etp)");
  }
}

TEST_CASE("canonicalize: one representation per plan") {
  ParallelPlan p;
  p.tp = 1;
  p.pp = 4;
  p.sequence_parallel = true;
  p.distributed_optimizer = true;
  p.stage_layers = {24, 24, 24, 24};
  p.recompute = {RecomputeGranularity::full, 30};
  p.chunk_layout = {12, 12, 12, 12, 12, 12, 12, 12};  // a launch's layout: the search's plans follow the rule
  canonicalize(p, 96);
  CHECK(p.chunk_layout.empty());
  CHECK_FALSE(p.sequence_parallel);
  CHECK_FALSE(p.distributed_optimizer);
  CHECK(p.stage_layers.empty());
  CHECK(p.recompute.num_layers == -1);
  p.recompute = {RecomputeGranularity::selective, 3};
  canonicalize(p, 96);
  CHECK(p.recompute.num_layers == -1);
}

TEST_CASE("divisors and smallest_prime_factor") {
  CHECK(divisors(12) == std::vector<int>{1, 2, 3, 4, 6, 12});
  CHECK(divisors(1) == std::vector<int>{1});
  CHECK(divisors(49) == std::vector<int>{1, 7, 49});
  CHECK(smallest_prime_factor(12) == 2);
  CHECK(smallest_prime_factor(15) == 3);
  CHECK(smallest_prime_factor(13) == 13);
}

TEST_CASE("interleaved_stage_layers: Megatron's splits, the balanced layout only where they give a pp no interleaving") {
  ModelSpec m;
  m.num_layers = 96;  // GPT-3 175B
  CHECK(interleaved_stage_layers(m, 16, 2) == std::vector<int>{});    // even: 3 layers per chunk
  CHECK_FALSE(interleaved_stage_layers(m, 16, 5).has_value());        // pp 16 interleaves evenly at vpp 2, 3, 6
  CHECK_FALSE(interleaved_stage_layers(m, 1, 2).has_value());
  CHECK_FALSE(interleaved_stage_layers(m, 16, 1).has_value());
  m.num_layers = 126;  // Llama 3.1 405B: embedding and loss counted, 64 chunks of 2
  CHECK(interleaved_stage_layers(m, 16, 4) == accounted_stage_layers(126, 16, 4));
  m.num_layers = 61;  // DeepSeek-V3: no even or accounted split at pp 8, so the balanced one
  m.mtp_layers = 1;
  const auto deepseek = interleaved_stage_layers(m, 8, 4);
  REQUIRE(deepseek.has_value());
  std::vector<int> bridge(8, 8);  // "Et|(tt|)*30mL"
  bridge.front() = 7;
  bridge.back() = 6;
  CHECK(*deepseek == bridge);
  CHECK(*deepseek == standard_stage_layers(61, 8, 4, 1));
  // pp 2 interleaves DeepSeek-V3 with the embedding and loss counted (62 = 2 x 31 chunks of 1).
  CHECK(interleaved_stage_layers(m, 2, 31) == accounted_stage_layers(61, 2, 31));
  CHECK_FALSE(interleaved_stage_layers(m, 2, 4).has_value());
}

TEST_CASE("start_plans: an MoE shape also starts with its all-to-all inside one NVLink domain") {
  SearchOptions o;
  o.num_gpus = 1024;
  const Job deepseek = test::workload("deepseek-v3", "dgx-h100-ndr", 8192, 4096);  // 256 experts, 8 GPUs a node
  const std::vector<ParallelPlan> starts = start_plans(o, deepseek, 1, 16, 1);
  REQUIRE(starts.size() == 2);
  CHECK(starts[0] == start_plan(o, deepseek.model, 1, 16, 1));
  CHECK(starts[0].ep == 64);  // as widely as dp 64 allows
  CHECK(starts[1].ep == 8);   // one node
  ParallelPlan same = starts[1];
  same.ep = starts[0].ep;
  CHECK(same == starts[0]);  // nothing else differs
  CHECK(start_plans(o, deepseek, 2, 64, 1).size() == 1);  // dp 8: the widest is the node already
  o.ep = 32;
  CHECK(start_plans(o, deepseek, 1, 16, 1).size() == 1);  // a fixed ep stays fixed
  o.ep.reset();
  o.etp = 2;  // each expert over two GPUs: four expert ranks a node
  CHECK(start_plans(o, deepseek, 2, 16, 1).back().ep == 4);
  SearchOptions dense;
  dense.num_gpus = 1024;
  CHECK(start_plans(dense, test::gpt3_175b_job(), 8, 16, 1).size() == 1);
}

TEST_CASE("uniform_grid: legal, distinct, even, whole-model recompute") {
  Job w = test::gpt3_175b_job();
  SearchOptions o;
  o.num_gpus = 1024;
  const auto grid = uniform_grid(w, o);
  CHECK(grid.size() > 1000);
  std::set<std::uint64_t> hashes;
  for (const ParallelPlan& p : grid) {
    Job j = w;
    j.plan = p;
    REQUIRE(plan_illegal_reason(j, o) == "");
    CHECK(p.stage_layers.empty());
    CHECK(p.recompute.num_layers == -1);
    CHECK(p.distributed_optimizer == (p.dp * p.cp > 1));
    CHECK(p.sequence_parallel == (p.tp > 1));
    hashes.insert(plan_hash(p));
  }
  CHECK(hashes.size() == grid.size());
  // The published plan is in the grid.
  CHECK(std::find(grid.begin(), grid.end(), test::gpt3_175b_job().plan) != grid.end());
}

TEST_CASE("plan_hash and plan_less tell plans apart") {
  ParallelPlan a = test::gpt3_175b_job().plan, b = a;
  CHECK(plan_hash(a) == plan_hash(b));
  b.stage_layers = {5, 7, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6};
  CHECK(plan_hash(a) != plan_hash(b));
  CHECK(plan_less(a, b) != plan_less(b, a));
  CHECK_FALSE(plan_less(a, a));
}
}

TEST_SUITE("search") {
TEST_CASE("uniform_grid: MoE models enumerate ep and etp on Megatron-Core's expert grid") {
  Job w = test::workload("qwen3-30b-a3b", "dgx-h100-ndr", 512, 4096);
  SearchOptions o;
  o.num_gpus = 16;
  const auto grid = uniform_grid(w, o);
  std::set<int> eps, etps;
  for (const ParallelPlan& p : grid) {
    CHECK(w.model.moe->num_experts % p.ep == 0);
    CHECK((p.tp * p.dp * p.cp) % (p.ep * p.etp) == 0);
    CHECK((p.etp == 1 || p.etp == p.tp));
    eps.insert(p.ep);
    etps.insert(p.etp);
  }
  CHECK(eps.count(16) == 1);
  CHECK(eps.count(1) == 1);
  CHECK(etps.count(2) == 1);
}
}
