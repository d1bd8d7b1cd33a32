#include <doctest/doctest.h>

#include <algorithm>
#include <set>

#include "costmodel/predictor.h"
#include "search/primitives.h"
#include "catalog_util.h"
#include "test_util.h"

using namespace strata;

namespace {

bool has(const std::vector<Move>& moves, const std::string& name) {
  return std::any_of(moves.begin(), moves.end(), [&](const Move& m) { return m.name == name; });
}

// GPT-3 175B on 1024 GPUs, the evaluator every test here proposes moves from (the evaluator keeps
// references to the model and the options, so they live beside it).
struct Gpt3Search {
  AnalyticalCostModel model;
  SearchOptions options = [] {
    SearchOptions o;
    o.num_gpus = 1024;
    return o;
  }();
  Evaluator ev{test::gpt3_175b_job(), options, model};
};

}  // namespace

TEST_SUITE("search") {
TEST_CASE("propose_moves: legal, canonical, distinct neighbours") {
  Gpt3Search search;
  Evaluator& ev = search.ev;
  EvalPtr from = ev.evaluate(test::gpt3_175b_job().plan);
  REQUIRE(from);
  const auto moves = propose_moves(ev, *from, MoveScope::all);
  CHECK(moves.size() > 15);
  std::set<std::uint64_t> seen;
  for (const Move& m : moves) {
    INFO(m.name);
    CHECK(ev.illegal_reason(m.plan) == "");
    CHECK_FALSE(m.plan == from->plan);
    CHECK(seen.insert(plan_hash(m.plan)).second);
    CHECK(m.plan.world_size() == 1024);
  }
  for (const char* name : {"tp->dp", "pp->dp", "dp->pp", "mbs+", "vpp+", "recompute+", "recompute-"}) {
    INFO(std::string(name));
    CHECK(has(moves, name));
  }
}

TEST_CASE("propose_moves: under interleaving the recompute ladder steps whole layers per model chunk") {
  // GPT-3 175B at pp 16: 6 layers per stage; with vpp 2, 3 per model chunk. Megatron's
  // --recompute-num-layers counts per chunk, so a stage recomputes 2 or 4 of its layers, never 1.
  Gpt3Search search;
  Evaluator& ev = search.ev;
  ParallelPlan p = test::gpt3_175b_job().plan;
  p.vpp = 2;
  p.recompute = {RecomputeGranularity::selective, -1};
  EvalPtr e = ev.evaluate(p);
  REQUIRE(e);
  std::set<int> partial;
  auto ladder = [](const Move& m) { return m.name.rfind("recompute", 0) == 0; };
  for (const Move& m : propose_moves(ev, *e, MoveScope::all))
    if (ladder(m) && m.plan.recompute.granularity == RecomputeGranularity::full && m.plan.recompute.num_layers >= 0)
      partial.insert(m.plan.recompute.num_layers);
  CHECK(partial == std::set<int>{2, 4});
  // From 2 layers per stage the ladder goes to 4 (and to every layer), not to 3.
  p.recompute = {RecomputeGranularity::full, 2};
  e = ev.evaluate(p);
  REQUIRE(e);
  partial.clear();
  bool every = false;
  for (const Move& m : propose_moves(ev, *e, MoveScope::all)) {
    if (!ladder(m) || m.plan.recompute.granularity != RecomputeGranularity::full) continue;
    if (m.plan.recompute.num_layers >= 0) partial.insert(m.plan.recompute.num_layers);
    else every = true;
  }
  CHECK(partial == std::set<int>{4});
  CHECK(every);
}

TEST_CASE("propose_moves: interleaving up to one layer per model chunk with the embedding and loss counted") {
  // Qwen3-235B-A22B's 94 layers at pp 8: with the embedding and the loss counted as layers
  // (Megatron's accounted split 11, 12, ..., 12, 11), 96 = 8 x 12 chunks of one layer. The moves
  // stopped at 94 / 8 = 11 chunks per stage, and the search returned vpp 6 or 12 by seed.
  const AnalyticalCostModel model;
  SearchOptions o;
  o.num_gpus = 256;
  Job w = test::workload("qwen3-235b-a22b", "dgx-h100-ndr", 1024, 4096);
  ParallelPlan p;
  p.pp = 8;
  p.dp = 32;
  p.ep = 8;
  p.vpp = 6;
  p.micro_batch_size = 2;
  p.distributed_optimizer = true;
  p.recompute = {RecomputeGranularity::full, -1};
  p.stage_layers = accounted_stage_layers(94, 8, 6);
  REQUIRE(p.stage_layers.size() == 8);
  const Evaluator ev(w, o, model);
  Evaluation from;
  from.plan = p;
  std::set<int> vpps;
  for (const Move& m : propose_moves(ev, from, MoveScope::all))
    if (m.name == "vpp+" || m.name == "vpp-") vpps.insert(m.plan.vpp);
  CHECK(vpps == std::set<int>{1, 2, 3, 4, 12});  // the chunk counts 96 divides into on 8 stages
  CHECK(max_virtual_stages(w.model, 8) == 12);
  CHECK(max_virtual_stages(test::gpt3_175b_job().model, 16) == 6);  // 98 / 16
}

TEST_CASE("propose_moves: selective recompute of other module sets than the attention core") {
  // DeepSeek-V3 (multi-latent attention): MLA's up-projections and norms, with and without the core.
  Job w = test::workload(test::data_file("hf/deepseek-v3.json"), "dgx-h100-ndr", 8192, 4096);
  SearchOptions o;
  o.num_gpus = 1024;
  const AnalyticalCostModel model;
  Evaluator ev(w, o, model);
  ParallelPlan p;
  p.tp = 8;
  p.dp = 128;
  p.ep = 64;
  p.sequence_parallel = true;
  p.distributed_optimizer = true;
  p.recompute = {RecomputeGranularity::selective, -1};
  EvalPtr e = ev.evaluate(p);
  REQUIRE_MESSAGE(e, ev.illegal_reason(p));
  auto named = [&](const std::vector<Move>& moves, unsigned modules) {
    for (const Move& m : moves)
      if (m.plan.recompute.granularity == RecomputeGranularity::selective && m.plan.recompute.modules == modules &&
          m.name.rfind("recompute", 0) == 0)
        return m.name;
    return std::string();
  };
  auto moves = propose_moves(ev, *e, MoveScope::all);
  CHECK(named(moves, kRecomputeLayernorm | kRecomputeMlaUpProj) == "recompute~");  // another set than the core
  CHECK(named(moves, kRecomputeCoreAttn | kRecomputeLayernorm | kRecomputeMlaUpProj) == "recompute+");  // a superset
  CHECK(named(moves, kRecomputeCoreAttn | kRecomputeMoeAct).empty());  // moe_act: no launch strata writes
  // From full recompute every set is less recompute; a full plan keeps no module set.
  p.recompute = {RecomputeGranularity::full, -1};
  e = ev.evaluate(p);
  REQUIRE(e);
  moves = propose_moves(ev, *e, MoveScope::all);
  CHECK(named(moves, kRecomputeLayernorm | kRecomputeMlaUpProj) == "recompute-");
  for (const Move& m : moves)
    if (m.plan.recompute.granularity != RecomputeGranularity::selective) CHECK(m.plan.recompute.modules == kRecomputeCoreAttn);
  // A dense model without MLA: the core with the MLP, no MLA sets.
  Gpt3Search gpt3;
  ParallelPlan q = test::gpt3_175b_job().plan;
  q.recompute = {RecomputeGranularity::selective, -1};
  EvalPtr g = gpt3.ev.evaluate(q);
  REQUIRE(g);
  const auto dense = propose_moves(gpt3.ev, *g, MoveScope::all);
  CHECK(named(dense, kRecomputeCoreAttn | kRecomputeMlp) == "recompute+");
  CHECK(named(dense, kRecomputeLayernorm | kRecomputeMlaUpProj).empty());
  CHECK(move_relieves("recompute~", "memory"));
  CHECK(move_relieves("recompute~", "recompute"));
}

TEST_CASE("propose_moves: directed moves follow the bottleneck") {
  Gpt3Search search;
  Evaluator& ev = search.ev;
  SUBCASE("memory: recompute more, smaller micro-batches, more model parallelism") {
    ParallelPlan p = test::gpt3_175b_job().plan;
    p.recompute = {RecomputeGranularity::none, -1};
    p.micro_batch_size = 16;
    EvalPtr e = ev.evaluate(p);
    REQUIRE(e);
    REQUIRE(e->bottleneck_kind() == "memory");
    const auto moves = propose_moves(ev, *e, MoveScope::directed);
    CHECK(has(moves, "recompute+"));
    CHECK(has(moves, "mbs-"));
    CHECK(has(moves, "dp->pp"));
    CHECK_FALSE(has(moves, "recompute-"));
    CHECK_FALSE(has(moves, "mbs+"));
    for (const Move& m : moves) CHECK(move_relieves(m.name, "memory"));
  }
  SUBCASE("recompute: less of it") {
    CHECK(move_relieves("recompute-", "recompute"));
    CHECK_FALSE(move_relieves("recompute+", "recompute"));
    CHECK(move_relieves("vpp+", "bubble"));
    CHECK(move_relieves("pp->dp", "bubble"));
    CHECK(move_relieves("tp->dp", "tp_comm"));
    CHECK(move_relieves("cp->dp", "cp_comm"));
    CHECK(move_relieves("dp->tp", "dp_comm"));
    CHECK(move_relieves("layer@time 3->4", "stage_time"));
    CHECK(move_relieves("layer@memory 0->1", "memory"));
    // Host-bound layers: a larger micro-batch gives the host more GPU work to hide behind.
    CHECK(move_relieves("mbs+", "host"));
    CHECK_FALSE(move_relieves("mbs-", "host"));
    CHECK(move_relieves("tp->dp", "host"));  // more work per GPU for each op the host issues
    CHECK_FALSE(move_relieves("dp->tp", "host"));
  }
}

TEST_CASE("propose_moves: a layer leaves the slowest stage, rebalance evens the stages out") {
  Gpt3Search search;
  Evaluator& ev = search.ev;
  ParallelPlan p = test::gpt3_175b_job().plan;
  p.stage_layers = {3, 9, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6};
  EvalPtr e = ev.evaluate(p);
  REQUIRE(e);
  REQUIRE(e->prediction);
  const auto moves = propose_moves(ev, *e, MoveScope::all);
  // Stage 1 is both the slowest and the heaviest: one of the two layer moves proposes it.
  auto it = std::find_if(moves.begin(), moves.end(), [](const Move& m) { return m.name.starts_with("layer") && m.name.ends_with(" 1->0"); });
  REQUIRE(it != moves.end());
  CHECK(it->plan.stage_layers[1] == 8);
  CHECK(it->plan.stage_layers[0] == 4);
  it = std::find_if(moves.begin(), moves.end(), [](const Move& m) { return m.name == "rebalance"; });
  REQUIRE(it != moves.end());
  const auto& l = it->plan.stage_layers;
  CHECK((l.empty() || *std::max_element(l.begin(), l.end()) - *std::min_element(l.begin(), l.end()) <= 1));
}

TEST_CASE("propose_moves: activation offloading only with allow_offload, its module sets and the trade for recompute") {
  Gpt3Search plain;
  ParallelPlan p = test::gpt3_175b_job().plan;
  p.recompute = {RecomputeGranularity::selective, -1};
  EvalPtr e = plain.ev.evaluate(p);
  REQUIRE(e);
  for (const Move& m : propose_moves(plain.ev, *e, MoveScope::all)) CHECK(m.plan.offload.modules == 0);
  ParallelPlan off = p;
  off.offload.modules = kOffloadCoreAttn | kOffloadAttnProj;
  CHECK(plain.ev.illegal_reason(off).find("--allow-offload") != std::string::npos);

  const AnalyticalCostModel model;
  SearchOptions o;
  o.num_gpus = 1024;
  o.allow_offload = true;
  Evaluator ev(test::gpt3_175b_job(), o, model);
  e = ev.evaluate(p);
  REQUIRE(e);
  auto moves = propose_moves(ev, *e, MoveScope::all);
  auto find = [&](const std::string& name, unsigned modules, RecomputeGranularity g) {
    return std::any_of(moves.begin(), moves.end(), [&](const Move& m) {
      return m.name == name && m.plan.offload.modules == modules && m.plan.recompute.granularity == g;
    });
  };
  // DeepSeek-V3's set (Megatron-Bridge) and the attention block whole, kept beside the recompute or
  // instead of it; a dense model has no expert modules to offload.
  CHECK(find("offload+", kOffloadCoreAttn | kOffloadAttnProj, RecomputeGranularity::selective));
  CHECK(find("offload+", kOffloadQkvLinear | kOffloadCoreAttn | kOffloadAttnProj, RecomputeGranularity::selective));
  CHECK(find("recompute->offload", kOffloadCoreAttn | kOffloadAttnProj, RecomputeGranularity::none));
  for (const Move& m : moves) {
    INFO(m.name);
    CHECK(ev.illegal_reason(m.plan) == "");
    CHECK((m.plan.offload.modules & kOffloadExpertFc1) == 0);
  }
  // From an offloading plan: less, another set, or none.
  e = ev.evaluate(off);
  REQUIRE(e);
  moves = propose_moves(ev, *e, MoveScope::all);
  CHECK(find("offload-", 0, RecomputeGranularity::selective));
  CHECK(find("offload+", kOffloadQkvLinear | kOffloadCoreAttn | kOffloadAttnProj, RecomputeGranularity::selective));
  // A layer recomputed whole keeps only its input: a full-recompute plan offloads nothing.
  ParallelPlan full = p;
  full.recompute = {RecomputeGranularity::full, -1};
  e = ev.evaluate(full);
  REQUIRE(e);
  moves = propose_moves(ev, *e, MoveScope::all);
  CHECK_FALSE(std::any_of(moves.begin(), moves.end(), [](const Move& m) { return m.name == "offload+"; }));
  CHECK(find("recompute->offload", kOffloadCoreAttn | kOffloadAttnProj, RecomputeGranularity::none));
  // The bottlenecks they relieve.
  CHECK(move_relieves("offload+", "memory"));
  CHECK(move_relieves("offload-", "offload"));
  CHECK(move_relieves("recompute->offload", "recompute"));
  CHECK_FALSE(move_relieves("offload+", "offload"));
}
}
