#include <doctest/doctest.h>

#include <cmath>

#include "costmodel/json_reader.h"
#include "costmodel/comm_model.h"
#include "costmodel/layer_ops.h"
#include "costmodel/memory_model.h"
#include "costmodel/predictor.h"
#include "test_util.h"

using namespace strata;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

Job llama3_70b_job() {
  Job job;
  job.model = test::catalog().model("llama3-70b");
  job.cluster = test::catalog().cluster("dgx-h100-ndr");
  job.calibration = test::catalog().calibration_or_default(job.cluster.gpu);
  job.training.global_batch_size = 512;
  job.training.seq_length = 8192;
  job.plan.tp = 8;
  job.plan.pp = 4;
  job.plan.dp = 8;
  job.plan.sequence_parallel = true;
  job.plan.distributed_optimizer = true;
  return job;
}

// A set of plans covering the schedule and framework variants.
std::vector<std::pair<std::string, Job>> plan_variants() {
  std::vector<std::pair<std::string, Job>> v;
  v.emplace_back("gpt3 tp8 pp16 dp8 selective dist-opt", test::gpt3_175b_job());
  Job j = llama3_70b_job();
  v.emplace_back("llama3-70b tp8 pp4 dp8", j);
  j.plan.vpp = 5;  // 80 layers / (4*5) = 4 per chunk
  v.emplace_back("llama3-70b interleaved vpp5", j);
  j = llama3_70b_job();
  j.plan.recompute.granularity = RecomputeGranularity::full;
  j.plan.recompute.num_layers = 5;
  v.emplace_back("llama3-70b full recompute of 5 layers/stage", j);
  j = llama3_70b_job();
  j.plan.cp = 2;
  j.plan.dp = 4;
  v.emplace_back("llama3-70b cp2", j);
  j = llama3_70b_job();
  j.plan.stage_layers = {18, 22, 22, 18};
  v.emplace_back("llama3-70b uneven stages", j);
  j = llama3_70b_job();
  j.plan.pp = 1;
  j.plan.dp = 32;
  j.plan.distributed_optimizer = false;
  j.plan.zero_stage = 0;
  j.runtime.framework = Framework::fsdp;
  j.plan.tp = 8;
  v.emplace_back("llama3-70b fsdp tp8 dp32", j);
  return v;
}

}  // namespace

TEST_SUITE("costmodel") {
TEST_CASE("check_plan") {
  SUBCASE("the SC21 plan is legal") { CHECK(check_plan(test::gpt3_175b_job()) == ""); }
  SUBCASE("an explicit chunk layout lists every virtual stage and adds up to each stage's layers") {
    Job job = test::gpt3_175b_job();  // pp 16, 6 layers a stage
    job.plan.vpp = 2;
    job.plan.chunk_layout = std::vector<int>(32, 3);
    job.plan.chunk_layout[0] = 2;  // stage 0: 2 + 4
    job.plan.chunk_layout[16] = 4;
    CHECK(check_plan(job) == "");
    job.plan.chunk_layout[16] = 3;
    CHECK(contains(check_plan(job), "the virtual stages of pipeline stage 0 hold 5 layers, the stage 6"));
    job.plan.chunk_layout.pop_back();
    CHECK(contains(check_plan(job), "31 virtual-stage layer counts given for pp*vpp = 32"));
    job.plan.vpp = 1;
    CHECK(contains(check_plan(job), "a virtual-stage layout needs vpp > 1"));
  }
  SUBCASE("tp must divide the heads") {
    Job job = test::gpt3_175b_job();
    job.plan.tp = 5;
    CHECK(contains(check_plan(job), "tp=5 does not divide the 96 attention heads"));
  }
  SUBCASE("chunked attention (Llama 4) is causal attention up to one chunk, refused beyond") {
    Job job = test::gpt3_175b_job();
    job.model.attention_chunk_size = 2048;
    CHECK(check_plan(job) == "");
    job.training.seq_length = 4096;
    CHECK(contains(check_plan(job), "a 4096-token sequence spans several of the model's 2048-token attention chunks"));
  }
  SUBCASE("sequence parallelism needs the sequence divisible by tp") {
    // tp = 3 divides GPT-3's 96 heads, 12288 hidden and 49152 ffn, but not the 2048 tokens.
    Job job = test::gpt3_175b_job();
    job.plan.tp = 3;
    CHECK(contains(check_plan(job), "sequence parallelism needs the per-CP sequence 2048 divisible by tp=3"));
    job.plan.sequence_parallel = false;
    CHECK(check_plan(job) == "");
  }
  SUBCASE("tp must divide the GQA query groups or be a multiple of them (Megatron-Core's KV replication)") {
    Job job = llama3_70b_job();
    job.plan.tp = 16;  // divides the 64 heads; a multiple of the 8 groups: each rank gathers the QKV output
    CHECK(check_plan(job) == "");
    job.model.num_query_groups = 32;
    CHECK(check_plan(job) == "");
    job.model.num_query_groups = 6;  // 16 neither divides 6 nor is a multiple of it
    CHECK(contains(check_plan(job), "tp=16 neither divides nor is a multiple of the 6 query groups"));
  }
  SUBCASE("the global batch must divide into dp x micro-batch") {
    Job job = test::gpt3_175b_job();
    job.plan.dp = 7;
    CHECK(contains(check_plan(job), "global batch 1536 is not divisible by dp*micro_batch = 7*1"));
    job.plan.dp = 8;
    job.plan.micro_batch_size = 5;
    CHECK(contains(check_plan(job), "not divisible"));
  }
  SUBCASE("more stages than layers") {
    Job job = test::gpt3_175b_job();
    job.plan.pp = 128;
    CHECK(contains(check_plan(job), "pp=128 exceeds the 96 layers"));
  }
  SUBCASE("interleaving rules") {
    Job job = test::gpt3_175b_job();
    job.plan.vpp = 2;
    CHECK(check_plan(job) == "");  // 96 % 32 == 0, 192 micro-batches % 16 == 0
    // 96 layers over 80 virtual stages: the balanced layout (embedding and loss counted) gives
    // every rank 6 layers, the even split, so Megatron runs it with an explicit layout.
    job.plan.vpp = 5;
    CHECK(check_plan(job) == "");
    // 112 virtual stages for 96 layers: no layout gives every virtual stage a layer.
    job.plan.vpp = 7;
    CHECK(contains(check_plan(job), "96 layers are not divisible by pp*vpp = 112"));
    job.plan.vpp = 2;
    // Micro-batches pp does not divide run in larger groups (Megatron-Core
    // --microbatch-group-size-per-virtual-pipeline-stage): 24 micro-batches over pp=16 in one
    // group of 24, which strata picks, or a group given that Megatron-Core accepts.
    job.training.global_batch_size = 8 * 24;
    CHECK(check_plan(job) == "");
    CHECK(interleaved_microbatch_group(job.plan, 24) == 24);
    job.plan.microbatch_group = 20;  // last group of 4 < pp
    CHECK(contains(check_plan(job), "leave a last group of 4 (groups of 20), fewer than pp=16"));
    job.plan.microbatch_group = 12;  // fewer than pp
    CHECK(contains(check_plan(job), "must lie in [pp=16, micro-batches=24]"));
    job.plan.microbatch_group = 0;
    job.training.global_batch_size = 8 * 8;  // 8 micro-batches cannot fill pp=16 in any group
    CHECK(contains(check_plan(job), "needs at least pp=16 micro-batches per step, this one has 8"));
    job.training.global_batch_size = 8 * 192;
    job.plan.vpp = 1;
    job.plan.microbatch_group = 16;
    CHECK(contains(check_plan(job), "needs interleaving"));
    job = test::gpt3_175b_job();
    job.plan.pp = 1;
    job.plan.vpp = 2;
    CHECK(contains(check_plan(job), "needs pp >= 2"));
    job = test::gpt3_175b_job();
    job.plan.vpp = 2;
    job.plan.stage_layers = std::vector<int>(16, 6);
    CHECK(check_plan(job).empty());  // an explicit even split is fine with interleaving
    job.plan.stage_layers[0] = 1;  // the first chunk holds only the embedding: Megatron's "E|t*6|t|..."
    job.plan.stage_layers[1] = 11;
    CHECK(check_plan(job).empty());
    job.plan.stage_layers[0] = 11;
    job.plan.stage_layers[1] = 1;  // a middle stage's chunk would be empty
    CHECK(contains(check_plan(job), "stage 1 has 1 layers, fewer than its vpp=2 model chunks"));
  }
  SUBCASE("uneven stage layers must cover the model") {
    Job job = llama3_70b_job();
    job.plan.stage_layers = {20, 20, 20};
    CHECK(contains(check_plan(job), "3 stage layer counts given for pp=4"));
    job.plan.stage_layers = {20, 20, 20, 19};
    CHECK(contains(check_plan(job), "stage layers add up to 79, the model has 80"));
    job.plan.stage_layers = {40, 40, 0, 0};
    CHECK(contains(check_plan(job), "at least one layer"));
  }
  SUBCASE("expert parallelism needs an MoE model") {
    Job job = test::gpt3_175b_job();
    job.plan.ep = 2;
    CHECK(contains(check_plan(job), "ep > 1 needs a mixture-of-experts model"));
    job.model = test::catalog().model("mixtral-8x7b");
    job.plan.ep = 3;
    CHECK(contains(check_plan(job), "ep=3 does not divide the 8 experts"));
  }
  SUBCASE("fp8 needs fp8 tensor cores") {
    Job job = test::gpt3_175b_job();
    job.training.precision = Precision::fp8;
    CHECK(contains(check_plan(job), "A100-SXM4-80GB has no fp8 tensor cores"));
    Job h = llama3_70b_job();
    h.training.precision = Precision::fp8;
    CHECK(check_plan(h) == "");
  }
  SUBCASE("ZeRO and the distributed optimizer are alternatives; context parallelism needs 2*cp | seq") {
    Job job = test::gpt3_175b_job();
    job.plan.zero_stage = 1;
    CHECK(contains(check_plan(job), "alternatives"));
    job = llama3_70b_job();
    job.plan.cp = 3;
    CHECK(contains(check_plan(job), "cp=3"));
  }
  SUBCASE("Megatron's optimizer checks: precision-aware is Adam with the distributed optimizer; offload needs it") {
    Job job = test::gpt3_175b_job();
    REQUIRE(job.plan.distributed_optimizer);
    OptimizerSpec& o = job.training.optimizer;
    o.exp_avg = StateDtype::bf16;
    CHECK(contains(check_plan(job), "need the precision-aware optimizer"));
    o.precision_aware = true;
    CHECK(check_plan(job) == "");
    o.main_params = StateDtype::bf16;
    CHECK(contains(check_plan(job), "fp32 or fp16"));
    o.main_params = StateDtype::fp32;
    o.kind = OptimizerKind::sgd;
    CHECK(contains(check_plan(job), "Adam only"));
    o.kind = OptimizerKind::adam;
    job.plan.distributed_optimizer = false;
    CHECK(contains(check_plan(job), "only with the distributed optimizer"));
    job.plan.distributed_optimizer = true;
    o.cpu_offload_fraction = 1.5;
    CHECK(contains(check_plan(job), "between 0 and 1"));
    o = OptimizerSpec{};
    o.cpu_offload_fraction = 0.5;
    CHECK(contains(check_plan(job), "CPU offload needs the precision-aware optimizer"));
    o = OptimizerSpec{};
    job.plan.optimizer_instances = 3;  // dp 8
    CHECK(contains(check_plan(job), "3 distributed optimizer instances do not divide dp*cp = 8"));
    job.plan.optimizer_instances = 2;
    CHECK(check_plan(job) == "");
    job.plan.distributed_optimizer = false;
    CHECK(contains(check_plan(job), "instances need the distributed optimizer"));
  }
  SUBCASE("an illegal plan predicts nothing but says why") {
    Job job = test::gpt3_175b_job();
    job.plan.tp = 5;
    Prediction p = predict(job);
    CHECK_FALSE(p.feasible);
    CHECK(p.iteration_time_s == 0);
    CHECK(p.reason == check_plan(job));
  }
}

TEST_CASE("predict") {
  SUBCASE("a plan that cannot fit is infeasible with a reason in GiB") {
    Job job = test::gpt3_175b_job();
    job.plan.tp = 8;
    job.plan.pp = 1;
    job.plan.dp = 1;
    job.training.global_batch_size = 8;
    Prediction p = predict(job);
    CHECK_FALSE(p.feasible);
    CHECK(contains(p.reason, "GiB"));
    CHECK(contains(p.reason, "stage 0 needs"));
    CHECK(p.bottleneck.kind == "memory");
    CHECK(p.memory_per_gpu_GiB > p.memory_capacity_GiB);
    // 175B parameters at 18 B each over 8 GPUs alone exceed 80 GiB.
    CHECK(p.memory_per_gpu_GiB > 174.6e9 * 18 / 8 / (1024.0 * 1024 * 1024));
    CHECK_FALSE(contains(p.reason, "may fit"));  // far over: no doubt
    // Over by less than the memory model's error: infeasible, and the reason says it may fit.
    job.runtime.memory_reserve_GiB = job.cluster.gpu.memory_GiB - p.memory_per_gpu_GiB / 1.05;
    const Prediction close = predict(job);
    CHECK_FALSE(close.feasible);
    CHECK_MESSAGE(contains(close.reason, "; 5% over, within the memory model's error on published runs, so it may fit"), close.reason);
  }
  SUBCASE("memory_reserve lowers the capacity") {
    Job job = test::gpt3_175b_job();
    job.runtime.memory_reserve_GiB = 10;
    CHECK(predict(job).memory_capacity_GiB == doctest::Approx(70.0));
  }
  SUBCASE("every plan variant: finite, consistent, deterministic") {
    for (const auto& [name_, job] : plan_variants()) {
      const auto& name = name_;  // a plain name: clang 14 cannot capture structured bindings (CAPTURE)
      CAPTURE(name);
      const Prediction p = predict(job);
      REQUIRE_MESSAGE(p.feasible, p.reason);
      // Finite and positive.
      for (double x : {p.iteration_time_s, p.tokens_per_sec_per_gpu, p.mfu, p.hfu, p.memory_per_gpu_GiB}) {
        CHECK(std::isfinite(x));
        CHECK(x > 0);
      }
      CHECK(p.memory_per_gpu_GiB <= p.memory_capacity_GiB);
      CHECK(p.stages.size() == static_cast<std::size_t>(job.plan.pp));
      // Throughput identity: tokens/s/GPU * time * world = tokens per iteration.
      CHECK(p.tokens_per_sec_per_gpu * p.iteration_time_s * job.plan.world_size() ==
            doctest::Approx(static_cast<double>(job.training.global_batch_size * job.training.seq_length)).epsilon(1e-12));
      // The breakdown of the critical stage adds up to the iteration time.
      CHECK(test::breakdown_sum(p.breakdown) == doctest::Approx(p.iteration_time_s).epsilon(1e-9));
      for (double x : {p.breakdown.compute_s, p.breakdown.recompute_s, p.breakdown.tp_comm_s, p.breakdown.cp_comm_s, p.breakdown.ep_comm_s,
                       p.breakdown.pp_comm_s, p.breakdown.dp_comm_s, p.breakdown.bubble_s, p.breakdown.imbalance_s, p.breakdown.optimizer_s,
                       p.breakdown.step_overhead_s})
        CHECK(x >= 0);
      // Utilization is a fraction; hardware FLOPs include the model FLOPs.
      CHECK(p.mfu < 1);
      CHECK(p.hfu < 1);
      CHECK(p.hfu >= p.mfu);
      CHECK_FALSE(p.bottleneck.kind.empty());
      CHECK(predict(job) == p);  // deterministic
      CHECK(AnalyticalCostModel().predict(job) == p);
    }
  }
}

// Megatron's hybrid-model migration guide (docs/user-guide/hybrid-model-migration.md): a GPT
// decoder block is the hybrid pattern "*-", an attention layer then an MLP layer.
TEST_CASE("predict: a hybrid model of \"*-\" pairs is the transformer it splits") {
  Job gpt = test::gpt3_175b_job();
  gpt.model = test::catalog().model("llama3-8b");
  gpt.plan.tp = 4;
  gpt.plan.pp = 1;
  gpt.plan.dp = 8;
  gpt.plan.sequence_parallel = true;
  gpt.plan.micro_batch_size = 1;
  gpt.training.global_batch_size = 64;
  gpt.training.seq_length = 8192;
  for (RecomputeGranularity g : {RecomputeGranularity::none, RecomputeGranularity::selective}) {
    CAPTURE(static_cast<int>(g));
    gpt.plan.recompute.granularity = g;
    Job hybrid = gpt;
    hybrid.model.num_layers = 2 * gpt.model.num_layers;
    for (int i = 0; i < gpt.model.num_layers; ++i) hybrid.model.hybrid_pattern += "*-";
    CHECK(hybrid.model.total_params() == doctest::Approx(gpt.model.total_params()).epsilon(1e-12));
    const Prediction a = predict(gpt), b = predict(hybrid);
    REQUIRE(a.feasible);
    REQUIRE(b.feasible);
    CHECK(b.iteration_time_s == doctest::Approx(a.iteration_time_s).epsilon(0.005));
    CHECK(b.breakdown.tp_comm_s == doctest::Approx(a.breakdown.tp_comm_s).epsilon(1e-9));
    CHECK(b.memory_per_gpu_GiB == doctest::Approx(a.memory_per_gpu_GiB).epsilon(0.005));
    CHECK(b.mfu == doctest::Approx(a.mfu).epsilon(0.005));
  }
}

TEST_CASE("predict: more TP ranks than query groups gather the QKV output over TP (Megatron-Core KV replication)") {
  Job job = test::gpt3_175b_job();
  job.model = test::catalog().model("llama3-70b");  // 8 query groups
  job.plan.tp = 16;
  job.plan.pp = 4;
  job.plan.dp = 16;
  job.plan.sequence_parallel = true;
  job.plan.distributed_optimizer = true;
  job.training.global_batch_size = 256;
  job.training.seq_length = 8192;
  REQUIRE(check_plan(job).empty());
  Job own_groups = job;
  own_groups.model.num_query_groups = 16;  // a group per rank: no gather
  const Prediction replicated = predict(job), split = predict(own_groups);
  REQUIRE(replicated.feasible);
  REQUIRE(split.feasible);
  CHECK(replicated.breakdown.tp_comm_s > split.breakdown.tp_comm_s);
}

TEST_CASE("check_plan: a hybrid model's Mamba heads and groups split over TP and CP as Megatron-Core splits them") {
  Job job = test::gpt3_175b_job();
  const std::string path = test::data_file("hf/nemotron-h-8b.json");
  job.model = model_from_json(load_json_file(path), path);
  job.plan.tp = 8;
  job.plan.pp = 1;
  job.plan.dp = 16;
  job.training.global_batch_size = 128;
  job.training.seq_length = 8192;
  CHECK(check_plan(job).empty());
  job.model.mamba->num_groups = 4;
  CHECK(contains(check_plan(job), "tp=8 does not divide the Mamba layers' 128 heads and 4 groups"));
  job.model.mamba->num_groups = 8;
  job.plan.tp = 4;
  job.plan.dp = 8;
  job.plan.cp = 4;  // 32 heads and 2 groups per TP rank: 4 divides 32 and is divided by 2
  CHECK(check_plan(job).empty());
  job.plan.cp = 2;
  job.plan.dp = 16;
  CHECK(check_plan(job).empty());
  job.model.mamba->num_groups = 4;  // 1 group per TP rank, 32 heads
  job.plan.tp = 4;
  job.plan.cp = 64;
  job.plan.dp = 1;
  job.plan.micro_batch_size = 1;
  job.training.global_batch_size = 8;
  CHECK(contains(check_plan(job), "cp=64 must divide the Mamba heads per TP rank (32)"));
}

TEST_CASE("check_plan: gated DeltaNet heads split over TP and CP") {
  Job job = test::gpt3_175b_job();
  const std::string path = test::data_file("hf/qwen3.5-27b.json");
  job.model = model_from_json(load_json_file(path), path);
  job.plan.tp = 4;
  job.plan.pp = 1;
  job.plan.dp = 4;
  job.plan.cp = 4;  // 16 key heads over tp x cp = 16
  job.plan.sequence_parallel = true;
  job.training.global_batch_size = 16;
  job.training.seq_length = 16384;
  CHECK(check_plan(job).empty());
  job.plan.cp = 8;
  job.plan.dp = 2;
  CHECK(contains(check_plan(job), "tp x cp = 32 must divide the gated DeltaNet layers' 16 key and 48 value heads"));
}

TEST_CASE("predict: MFU counts the published model FLOPs") {
  // Narayanan et al. SC21 eq. (3) without recompute: 72 B s l h^2 (1 + s/(6h) + V/(12 l h)) FLOPs per
  // iteration for a GPT model; MFU = that / (time * GPUs * peak).
  Job job = test::gpt3_175b_job();
  const Prediction p = predict(job);
  const double B = 1536, s = 2048, l = 96, h = 12288, V = 50257;
  const double flops = 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
  CHECK(p.mfu == doctest::Approx(flops / (p.iteration_time_s * 1024 * 312e12)).epsilon(1e-9));
  // Without recompute the hardware does exactly the model FLOPs.
  job.plan.recompute.granularity = RecomputeGranularity::none;
  const Prediction q = predict(job);
  CHECK(q.hfu == doctest::Approx(q.mfu).epsilon(1e-12));
  // Full recompute adds a forward pass: HFU/MFU approaches 4/3 (96 vs 72 in eq. 3) from below.
  job.plan.recompute.granularity = RecomputeGranularity::full;
  const Prediction r = predict(job);
  CHECK(r.hfu / r.mfu > 1.2);
  CHECK(r.hfu / r.mfu < 4.0 / 3.0);
}

TEST_CASE("predict: more micro-batches shrink the bubble fraction") {
  Job job = test::gpt3_175b_job();
  double prev = 1;
  for (std::int64_t gbs : {128, 512, 1536, 3072}) {
    CAPTURE(gbs);
    job.training.global_batch_size = gbs;
    Prediction p = predict(job);
    REQUIRE(p.feasible);
    const double frac = p.breakdown.bubble_s / p.iteration_time_s;
    CHECK(frac < prev);
    prev = frac;
  }
}

TEST_CASE("predict: interleaving shrinks the bubble") {
  Job job = test::gpt3_175b_job();
  job.training.global_batch_size = 256;  // 32 micro-batches on 16 stages: a large bubble
  Prediction p1 = predict(job);
  job.plan.vpp = 2;
  Prediction p2 = predict(job);
  REQUIRE(p2.feasible);
  CHECK(p2.breakdown.bubble_s < p1.breakdown.bubble_s);
  CHECK(p2.iteration_time_s < p1.iteration_time_s);
  // ... at the price of more in-flight activations on stage 0.
  CHECK(p2.stages[0].memory.activations_GiB > p1.stages[0].memory.activations_GiB);
}

TEST_CASE("predict: uneven stages: waiting on a busier stage is stage imbalance, not bubble, and the busiest stage is the bottleneck") {
  Job job = test::gpt3_175b_job();  // 192 micro-batches on 16 stages of 6 layers: a small bubble
  const Prediction even = predict(job);
  REQUIRE(even.feasible);
  CHECK(even.bottleneck.kind != "stage_time");
  auto busy_excess = [](const Prediction& p) {  // the busiest stage's work beyond the mean
    double most = 0, sum = 0;
    for (const auto& s : p.stages) { most = std::max(most, s.busy_s); sum += s.busy_s; }
    return most - sum / static_cast<double>(p.stages.size());
  };
  auto predict_moving = [&](int from, int to) {  // four layers of stage `from` moved to stage `to`
    Job moved = job;
    moved.plan.stage_layers = std::vector<int>(16, 6);
    moved.plan.stage_layers[from] -= 4;
    moved.plan.stage_layers[to] += 4;
    const Prediction p = predict(moved);
    REQUIRE(p.feasible);
    return p;
  };
  SUBCASE("an overloaded middle stage: stage 0, which ends the iteration, waits for it") {
    const Prediction p = predict_moving(15, 14);
    CHECK(test::breakdown_sum(p.breakdown) == doctest::Approx(p.iteration_time_s).epsilon(1e-9));
    // The wait is about stage 14's extra work per micro-batch, four layers' worth of 192 micro-batches.
    CHECK(p.breakdown.imbalance_s > 0.3 * p.iteration_time_s);
    CHECK(p.breakdown.imbalance_s <= p.stages[14].busy_s - p.stages[0].busy_s + 1e-9);
    CHECK(p.breakdown.stage == 0);  // its last backward ends the iteration
    // The schedule's own fill and drain stays about what the even split has.
    CHECK(p.breakdown.bubble_s < 2 * even.breakdown.bubble_s);
    CHECK(p.bottleneck.kind == "stage_time");
    CHECK(p.bottleneck.stage == 14);
  }
  SUBCASE("the overloaded stage ends the iteration itself: no idle time to show, still the bottleneck") {
    const Prediction p = predict_moving(0, 1);
    CHECK(p.breakdown.stage == 1);
    CHECK(p.breakdown.imbalance_s == 0);
    CHECK(p.bottleneck.kind == "stage_time");
    CHECK(p.bottleneck.stage == 1);
    CHECK(p.bottleneck.seconds == doctest::Approx(busy_excess(p)).epsilon(1e-9));
    CHECK(p.bottleneck.seconds > 0.3 * p.iteration_time_s);
  }
}

TEST_CASE("predict: uneven stages with interleaving move work between stages without creating or losing any") {
  Job job = test::gpt3_175b_job();
  job.plan.vpp = 2;
  Prediction even = predict(job);
  job.plan.stage_layers = std::vector<int>(16, 6);
  job.plan.stage_layers[0] = 5;
  job.plan.stage_layers[1] = 7;
  Prediction uneven = predict(job);
  REQUIRE(even.feasible);
  REQUIRE_MESSAGE(uneven.feasible, uneven.reason);
  CHECK(test::breakdown_sum(uneven.breakdown) == doctest::Approx(uneven.iteration_time_s).epsilon(1e-9));
  CHECK(uneven.stages[0].layers == 5);
  CHECK(uneven.stages[0].forward_s < even.stages[0].forward_s);
  CHECK(uneven.stages[1].forward_s > even.stages[1].forward_s);
  auto total_work = [](const Prediction& p) {
    double t = 0;
    for (const auto& s : p.stages) t += s.forward_s + s.backward_s;
    return t;
  };
  CHECK(total_work(uneven) == doctest::Approx(total_work(even)).epsilon(1e-12));
  // The 7-layer stage is now the slowest: the iteration cannot be faster than the even split.
  CHECK(uneven.iteration_time_s > even.iteration_time_s);
}

TEST_CASE("predict: async backward TP all-reduce hides behind the weight-gradient GEMMs") {
  Job job = test::gpt3_175b_job();
  job.plan.sequence_parallel = false;
  job.runtime.async_tp_allreduce = false;
  Prediction blocking = predict(job);
  job.runtime.async_tp_allreduce = true;
  Prediction async = predict(job);
  CHECK(async.breakdown.tp_comm_s < blocking.breakdown.tp_comm_s);
  CHECK(async.iteration_time_s < blocking.iteration_time_s);
  // The forward collectives stay exposed, so at most the backward half is hidden.
  CHECK(async.breakdown.tp_comm_s > 0.45 * blocking.breakdown.tp_comm_s);
  CHECK(async.breakdown.compute_s == doctest::Approx(blocking.breakdown.compute_s));
  CHECK(test::breakdown_sum(async.breakdown) == doctest::Approx(async.iteration_time_s).epsilon(1e-9));
  // Without tensor parallelism there is nothing to hide.
  job.plan.tp = 1;
  job.plan.dp = 64;
  job.runtime.async_tp_allreduce = false;
  Prediction a1 = predict(job);
  job.runtime.async_tp_allreduce = true;
  Prediction b1 = predict(job);
  CHECK(a1.iteration_time_s == b1.iteration_time_s);
}

TEST_CASE("predict: tp_comm_overlap lowers the exposed TP communication") {
  Job job = test::gpt3_175b_job();
  Prediction a = predict(job);
  job.runtime.tp_comm_overlap = true;
  Prediction b = predict(job);
  CHECK(a.breakdown.tp_comm_s > 0);
  CHECK(b.breakdown.tp_comm_s < 0.5 * a.breakdown.tp_comm_s);
  CHECK(b.iteration_time_s < a.iteration_time_s);
  CHECK(b.breakdown.compute_s == doctest::Approx(a.breakdown.compute_s));
}

TEST_CASE("predict: recompute costs time and saves memory") {
  Job job = llama3_70b_job();
  job.runtime.flash_attention = false;
  job.plan.recompute.granularity = RecomputeGranularity::none;
  Prediction none = predict(job);
  job.plan.recompute.granularity = RecomputeGranularity::selective;
  Prediction sel = predict(job);
  job.plan.recompute.granularity = RecomputeGranularity::full;
  Prediction full = predict(job);
  CHECK(none.breakdown.recompute_s == 0);
  CHECK(sel.breakdown.recompute_s > 0);
  CHECK(full.breakdown.recompute_s > sel.breakdown.recompute_s);
  CHECK(full.iteration_time_s > sel.iteration_time_s);
  CHECK(sel.iteration_time_s > none.iteration_time_s);
  CHECK(full.memory_per_gpu_GiB < sel.memory_per_gpu_GiB);
  CHECK(sel.memory_per_gpu_GiB < none.memory_per_gpu_GiB);
}

TEST_CASE("predict: the breakdown adds up for DeepSpeed pipelines and unfused gradient accumulation") {
  // Blocking DeepSpeed p2p sends count as PP communication and unfused gradient accumulation as
  // compute, so the breakdown adds up to iteration_time_s (DESIGN.md).
  Job job = test::gpt3_175b_job();
  job.plan.distributed_optimizer = false;
  job.runtime.framework = Framework::deepspeed;
  job.plan.zero_stage = 1;
  Prediction p = predict(job);
  CHECK(test::breakdown_sum(p.breakdown) == doctest::Approx(p.iteration_time_s).epsilon(1e-9));
  Job m = test::gpt3_175b_job();
  m.runtime.fused_grad_accumulation = false;
  Prediction q = predict(m);
  CHECK(test::breakdown_sum(q.breakdown) == doctest::Approx(q.iteration_time_s).epsilon(1e-9));
}

TEST_CASE("predict: an offloaded optimizer share costs its host-link copies instead of its GPU update, and says so") {
  Job job = test::gpt3_175b_job();
  job.model = test::catalog().model("gpt3-13b");
  job.plan.pp = 1;  // one stage: both predictions' critical stage
  job.plan.distributed_optimizer = true;
  job.training.optimizer.precision_aware = true;
  const Prediction gpu = predict(job);
  job.training.optimizer.cpu_offload_fraction = 1;
  const Prediction host = predict(job);
  REQUIRE(gpu.feasible);
  REQUIRE(host.feasible);
  // Every parameter's 4 B fp32 gradient goes down and its 2 B weight comes back over PCIe.
  const double updated = gpu.breakdown.optimizer_s * job.cluster.gpu.hbm_GBps * 1e9 * job.calibration.kernel.memory_efficiency /
                         optimizer_step_bytes(job.training.optimizer, job.training.precision, job.training.recipe, 4, 2);
  CHECK(host.breakdown.optimizer_s == doctest::Approx(updated * 6 / (job.cluster.gpu.pcie_GBps * 1e9)).epsilon(1e-9));
  CHECK(host.stages[0].memory.optimizer_GiB == 0);
  CHECK(std::any_of(host.notes.begin(), host.notes.end(), [](const std::string& n) { return contains(n, "host's update itself is not"); }));
  CHECK_FALSE(std::any_of(gpu.notes.begin(), gpu.notes.end(), [](const std::string& n) { return contains(n, "host's update"); }));
}

TEST_CASE("predict: copies of the distributed optimizer trade memory for a shorter reduce-scatter plus an all-reduce of the shard") {
  Job job = test::gpt3_175b_job();  // tp 8 pp 16 dp 8: the data-parallel ranks are on 8 nodes
  job.plan.distributed_optimizer = true;
  job.runtime.overlap_grad_reduce = job.runtime.overlap_param_gather = false;  // every collective exposed
  const Prediction one = predict(job);
  job.plan.optimizer_instances = 8;  // each copy on one rank: no reduce-scatter or gather, a full all-reduce
  const Prediction eight = predict(job);
  REQUIRE(one.feasible);
  REQUIRE(eight.feasible);
  CHECK(eight.stages[5].memory.optimizer_GiB == doctest::Approx(8 * one.stages[5].memory.optimizer_GiB).epsilon(1e-9));
  // The critical stage (the first, with the embedding): one copy reduce-scatters the fp32 gradients over the 8 ranks and
  // all-gathers the bf16 weights; eight copies of one rank each all-reduce the whole gradient.
  REQUIRE(one.stages.size() == 16);
  const ParamSplit split = stage_param_split(job, 0, 6);
  const CommModel comm(job.cluster, job.calibration.comm);
  const GroupPlacement dp_g = place_group(8, 8, job.cluster.gpus_per_node);
  const double ar = comm.all_reduce(split.total() * 4, dp_g);
  const double rs_ag = comm.reduce_scatter(split.total() * 4, dp_g) + comm.all_gather(split.total() * 2, dp_g);
  CHECK(eight.breakdown.dp_comm_s - one.breakdown.dp_comm_s == doctest::Approx(ar - rs_ag).epsilon(1e-6));
  CHECK(eight.breakdown.optimizer_s == doctest::Approx(8 * one.breakdown.optimizer_s).epsilon(1e-6));  // each rank updates 8x the shard
}

TEST_CASE("predict: the host-side step overhead adds to the iteration once and is reported") {
  Job job = test::gpt3_175b_job();
  job.runtime.step_overhead_s = 0;
  Prediction none = predict(job);
  job.runtime.step_overhead_s = 0.25;
  Prediction some = predict(job);
  CHECK(some.iteration_time_s - none.iteration_time_s == doctest::Approx(0.25).epsilon(1e-9));
  CHECK(some.breakdown.step_overhead_s == 0.25);
  CHECK(none.breakdown.step_overhead_s == 0);
  // Only the default is flagged as a guess.
  job.runtime.step_overhead_s = RuntimeOptions::kDefaultStepOverheadS;
  Prediction def = predict(job);
  auto flagged = [](const Prediction& p) {
    return std::any_of(p.notes.begin(), p.notes.end(), [](const std::string& n) { return contains(n, "step overhead"); });
  };
  CHECK(flagged(def));
  CHECK_FALSE(flagged(some));
}

TEST_CASE("predict: a plan within 10% of the memory limit fits but is flagged as tight") {
  Job job = test::gpt3_175b_job();
  const Prediction roomy = predict(job);
  REQUIRE(roomy.feasible);
  auto tight = [](const Prediction& p) {
    return std::any_of(p.notes.begin(), p.notes.end(), [](const std::string& n) { return contains(n, "may not fit"); });
  };
  CHECK(roomy.memory_per_gpu_GiB < 0.9 * roomy.memory_capacity_GiB);
  CHECK_FALSE(tight(roomy));
  // Reserve memory until the plan uses 95% of what is left: same memory, now flagged.
  job.runtime.memory_reserve_GiB = job.cluster.gpu.memory_GiB - roomy.memory_per_gpu_GiB / 0.95;
  const Prediction close = predict(job);
  REQUIRE(close.feasible);
  CHECK(close.memory_per_gpu_GiB == doctest::Approx(roomy.memory_per_gpu_GiB));
  CHECK(tight(close));
}

TEST_CASE("predict: DeepSpeed pipeline sends are TP-partitioned but block the stage") {
  // DeepSpeed's PipelineEngine partitions the activation over the TP group like Megatron's
  // scatter-gather, so per-micro-batch p2p cost must shrink with tp; unlike Megatron the send
  // sits inside the stage's time (counted as PP comm).
  Job job = test::gpt3_175b_job();
  job.plan.distributed_optimizer = false;
  job.plan.zero_stage = 1;
  job.runtime.framework = Framework::deepspeed;
  Prediction ds = predict(job);
  job.runtime.framework = Framework::megatron;
  Prediction mg = predict(job);
  CHECK(ds.breakdown.pp_comm_s > mg.breakdown.pp_comm_s);
  // Per-stage blocking cost: stage busy time minus the Megatron stage's, per micro-batch, must be
  // about one partitioned transfer each way (act/tp over the inter-node link), not tp times that.
  const double act_bytes = 2048.0 * static_cast<double>(job.plan.micro_batch_size) * static_cast<double>(job.model.hidden_size) * 2;
  const double per_gpu_link = job.cluster.inter_node_GBps_per_gpu() * 1e9;
  const double full_size_both_ways = 2 * act_bytes / per_gpu_link;
  const double extra_per_mb = (ds.stages[1].forward_s + ds.stages[1].backward_s) - (mg.stages[1].forward_s + mg.stages[1].backward_s);
  CHECK(extra_per_mb > 0);
  CHECK(extra_per_mb < 0.5 * full_size_both_ways);
}

TEST_CASE("predict: tied embeddings over a pipeline add one all-reduce of the embedding gradient between the end stages") {
  // GPT-3 ties its input and output embeddings; with pp > 1 both end stages hold a copy either way
  // (Megatron keeps one on the last stage), so untying changes nothing but that all-reduce.
  Job job = test::gpt3_175b_job();
  REQUIRE(job.model.tied_embeddings);
  const Prediction tied = predict(job);
  job.model.tied_embeddings = false;
  const Prediction untied = predict(job);
  // Megatron's fp32 main gradient of the 51200 x 12288 / tp8 shard, between ranks 15*8*8 apart:
  // on different nodes, one rank per node.
  const CommModel comm(job.cluster, job.calibration.comm);
  const double expected = comm.all_reduce(51200.0 * 12288 / 8 * 4, place_group(2, 15 * 8 * 8, 8));
  CHECK(expected > 0);
  CHECK(tied.iteration_time_s - untied.iteration_time_s == doctest::Approx(expected).epsilon(1e-9));
  CHECK(tied.breakdown.dp_comm_s - untied.breakdown.dp_comm_s == doctest::Approx(expected).epsilon(1e-9));
}

TEST_CASE("predict: with the distributed optimizer each overlap flag hides only its own collective") {
  // Llama-3 8B, pure data parallelism over 64 H100s: one micro-batch's forward and backward are
  // each longer than either collective, so an overlap hides its collective whole.
  Job job;
  job.model = test::catalog().model("llama3-8b");
  job.cluster = test::catalog().cluster("dgx-h100-ndr");
  job.calibration = test::catalog().calibration_or_default(job.cluster.gpu);
  job.training.global_batch_size = 256;
  job.training.seq_length = 4096;
  job.plan.dp = 64;
  job.plan.micro_batch_size = 2;
  job.plan.recompute.granularity = RecomputeGranularity::full;
  job.plan.distributed_optimizer = true;
  auto exposed_dp = [&](bool grad_reduce, bool param_gather) {
    Job j = job;
    j.runtime.overlap_grad_reduce = grad_reduce;
    j.runtime.overlap_param_gather = param_gather;
    const Prediction p = predict(j);
    REQUIRE(p.feasible);
    return p.breakdown.dp_comm_s;
  };
  const double none = exposed_dp(false, false), grads = exposed_dp(true, false), params = exposed_dp(false, true),
               both = exposed_dp(true, true);
  const double rs_hidden = none - grads, ag_hidden = none - params;
  CHECK(rs_hidden > 0);
  CHECK(ag_hidden > 0);
  // fp32 main gradients are reduce-scattered, bf16 parameters all-gathered: about twice the bytes.
  CHECK(rs_hidden / ag_hidden == doctest::Approx(2.0).epsilon(0.05));
  // The two savings add up: neither flag alone hides the other's collective.
  CHECK(none - both == doctest::Approx(rs_hidden + ag_hidden).epsilon(1e-9));
  // DeepSpeed ZeRO-1 gathers the updated parameters inside its optimizer step: nothing to overlap.
  job.plan.distributed_optimizer = false;
  job.plan.zero_stage = 1;
  job.runtime.framework = Framework::deepspeed;
  CHECK(exposed_dp(false, true) == exposed_dp(false, false));
}

TEST_CASE("predict: scaling data parallelism") {
  // At a fixed global batch, doubling dp halves each replica's micro-batches: faster iterations,
  // and no more tokens/s/GPU than perfect scaling.
  Job job = test::gpt3_175b_job();
  Prediction a = predict(job);
  job.plan.dp = 16;
  Prediction b = predict(job);
  CHECK(b.iteration_time_s < a.iteration_time_s);
  CHECK(b.tokens_per_sec_per_gpu <= a.tokens_per_sec_per_gpu * (1 + 1e-12));
}

TEST_CASE("measured on an H100 (configs/measurements): whole training iterations on one GPU") {
  // Real iterations of GPT-3 350M..2.7B (scripts/measure_train_step.py: eager PyTorch, bf16
  // weights, fp32 main gradients added per micro-batch, fused AdamW with clipping, SDPA flash),
  // predicted with the uncalibrated Hopper defaults and the same setup: one GPU, no fused
  // gradient accumulation, GPT-2's 50257-row vocabulary unpadded (a misaligned logits GEMM). The
  // measurement's reserved memory excludes the CUDA context.
  const nlohmann::json file = load_json_file(std::string(STRATA_SOURCE_DIR) + "/configs/measurements/h100-sxm-2026-11-22.train-steps.json");
  REQUIRE(file.at("measurements").size() == 4);
  for (const auto& m : file.at("measurements")) {
    Job job = test::workload(m.at("model"), "dgx-h100-ndr", m.at("global_batch"), m.at("seq"));
    job.calibration = default_calibration(job.cluster.gpu);
    job.plan.micro_batch_size = m.at("micro_batch");
    if (m.at("recompute") == "full") job.plan.recompute.granularity = RecomputeGranularity::full;
    job.runtime.fused_grad_accumulation = false;
    job.runtime.vocab_divisor = 1;
    job.runtime.attention_kernel = AttentionKernel::flash2;  // SDPA's flash backend, as measured
    // The script's layers are a few plain torch modules, not Megatron's layer code, whose measured
    // host time (dense_layer_host_time) would bind at these shapes; the script's was not measured.
    job.calibration.host = test::no_moe_host_time();
    const Prediction p = predict(job);
    REQUIRE(p.feasible);
    CAPTURE(job.model.name);
    CAPTURE(job.plan.recompute.granularity);
    CHECK(std::fabs(p.iteration_time_s / m.at("iteration_time_s").get<double>() - 1) < 0.12);
    // GPT-3 350M at micro-batch 8 is left out of the memory check: its measured peak is eager
    // cross entropy holding three fp32 logit-sized buffers (3 GiB each), which Megatron's fused
    // vocab-parallel cross entropy, the memory model's subject, does not allocate.
    if (job.model.name == "gpt3-350m") continue;
    // One GPU: the modelled buffers are the CUDA context alone, which the allocator does not see.
    CHECK(p.stages.at(0).memory.outside_allocator_GiB == p.stages.at(0).memory.buffers_GiB);
    const double predicted_GiB = peak_measured_as_GiB(p, MemoryMeasure::reserved);
    CHECK(std::fabs(predicted_GiB / m.at("peak_memory_reserved_GiB").get<double>() - 1) < 0.10);
  }
}
}

TEST_SUITE("costmodel") {
TEST_CASE("DeepSeek Sparse Attention: Megatron-Core's rules, the indexer replicated over TP, the top-k indices kept") {
  Job job = test::workload("deepseek-v3", "dgx-h100-ndr", 512, 4096);
  job.model = model_from_json(load_json_file(test::data_file("hf/deepseek-v3.2.json")), "deepseek-v3.2.json");
  job.plan.tp = 2;
  job.plan.pp = 16;
  job.plan.dp = 16;
  job.plan.ep = 16;
  job.plan.sequence_parallel = true;
  CHECK(check_plan(job).empty());
  job.plan.sequence_parallel = false;
  CHECK(contains(check_plan(job), "needs sequence parallelism"));
  job.plan.sequence_parallel = true;
  job.plan.cp = 2;
  job.plan.dp = 8;
  job.runtime.cp_comm_type = CpCommType::p2p;
  CHECK(contains(check_plan(job), "--cp-comm-type allgather only"));
  job.runtime.cp_comm_type = CpCommType::allgather;
  CHECK(check_plan(job).empty());
  job.cluster = test::catalog().cluster("dgx-a100-hdr");
  CHECK(contains(check_plan(job), "need Hopper or later"));
  job.cluster = test::catalog().cluster("dgx-h100-ndr");
  job.plan.cp = 1;
  job.plan.dp = 16;
  // Top-k shared every 4 layers after the first 3 (layers 1, 2, 3, 7, 11, ... run the indexer):
  // every pipeline stage must start on one of those.
  Job shared = job;
  shared.model.dsa->topk_freq = 4;
  shared.model.dsa->skip_topk_offset = 3;
  shared.plan.pp = 2;
  shared.plan.dp = 128;
  CHECK(contains(check_plan(shared), "the model chunk starting at layer 32 would reuse the top-k"));  // 61 layers: 31 + 30
  shared.plan.stage_layers = {30, 31};  // the second stage starts at layer 31 = 3 + 7 x 4
  CHECK(check_plan(shared).empty());

  // Per GPU the indexer's weights are whole at any tp: going from tp 2 to tp 4 halves the rest of
  // the dense part and leaves the indexer.
  auto dense_params = [&](int tp) {
    Job j = job;
    j.plan.tp = tp;
    return decoder_param_split(j, 1, 1).dense;  // one MoE layer of the second stage
  };
  const double idx = job.model.indexer_params();
  CHECK(dense_params(2) - idx == doctest::Approx(2 * (dense_params(4) - idx)).epsilon(1e-12));
  // Activations: the top-k indices (int32, 2048 per token) are kept for every layer, whatever the tp.
  Job frozen = job;
  frozen.model.dsa->indexer_loss_coeff = 0;
  Job dense = job;
  dense.model.dsa.reset();
  const double full_layer = layer_activation_bytes(frozen, RecomputeGranularity::selective);
  CHECK(full_layer > layer_activation_bytes(dense, RecomputeGranularity::selective));
  const double with_loss = layer_activation_bytes(job, RecomputeGranularity::selective);
  CHECK(with_loss - full_layer == doctest::Approx(4096.0 * 2 * (64 * 128 + 128 + 64)));
  job.plan.distributed_optimizer = true;
  job.plan.recompute.granularity = RecomputeGranularity::full;
  const Prediction pred = predict(job);
  CHECK(pred.feasible);
  // The output says what is not measured and which indexer-loss setting is costed.
  CHECK(std::any_of(pred.notes.begin(), pred.notes.end(), [](const std::string& n) {
    return contains(n, "not measured (no DSA kernel") && contains(n, "coefficient 0.001, over the top-k keys");
  }));
}

TEST_CASE("check_plan: Megatron-Core's expert-parallel rules") {
  Job job = test::workload("qwen3-30b-a3b", "dgx-h100-ndr", 512, 4096);
  job.plan.dp = 16;
  job.plan.ep = 16;
  CHECK(check_plan(job).empty());
  job.plan.ep = 32;  // 128 experts would divide, but 32 does not fit the 16 ranks
  CHECK(contains(check_plan(job), "ep*etp = 32*1 must divide tp*dp*cp = 16"));
  job.plan.ep = 3;
  CHECK(contains(check_plan(job), "ep=3 does not divide the 128 experts"));
  // ep*etp may exceed dp when tp supplies the ranks (Megatron-Core's separate expert grid).
  job.plan.tp = 2;
  job.plan.dp = 8;
  job.plan.ep = 16;
  job.plan.sequence_parallel = true;
  CHECK(check_plan(job).empty());
  job.plan.etp = 2;
  CHECK(contains(check_plan(job), "must divide tp*dp*cp"));
  job.plan.ep = 8;
  CHECK(check_plan(job).empty());
  job.plan.sequence_parallel = false;
  CHECK(contains(check_plan(job), "need sequence parallelism"));
  job.plan.sequence_parallel = true;
  job.plan.pp = 2;  // 32 GPUs: tp 2 x dp 8 ranks per stage hold ep 8 x etp 2
  job.runtime.moe_a2a_overlap = true;
  CHECK(contains(check_plan(job), "needs vpp > 1"));
  job.plan.vpp = 2;
  CHECK(check_plan(job).empty());
  // GPT-OSS's experts carry biases, which Megatron-Core splits over no expert-TP ranks: the same
  // plan is refused for it, and fits with etp 1.
  Job oss = job;
  oss.model = test::catalog().model("gpt-oss-120b");
  CHECK(contains(check_plan(oss), "biased experts (GPT-OSS) need etp = 1"));
  oss.plan.etp = 1;
  CHECK(check_plan(oss).empty());
}

TEST_CASE("MoE: shared experts beside the dispatcher's all-to-alls hide up to their own work, and Megatron-Core's rules") {
  Job job = test::qwen3_30b_ep8_job();
  job.plan.ep = 16;  // over two nodes: the all-to-all is not free
  const Prediction routed_only = predict(job);
  job.runtime.moe_shared_expert_overlap = true;  // no shared experts: nothing to overlap
  CHECK(predict(job).iteration_time_s == routed_only.iteration_time_s);
  job.model.moe->shared_expert_ffn_hidden_size = 2048;  // a shared expert of 2048, DeepSeek-style
  job.runtime.moe_shared_expert_overlap = false;
  const Prediction serial = predict(job);
  job.runtime.moe_shared_expert_overlap = true;
  REQUIRE(check_plan(job).empty());
  const Prediction overlapped = predict(job);
  REQUIRE(serial.breakdown.ep_comm_s > 0);
  // Less of the all-to-all shows, and the step is shorter by what was hidden; the shared work
  // itself stays in compute.
  CHECK(overlapped.breakdown.ep_comm_s < serial.breakdown.ep_comm_s);
  CHECK(overlapped.breakdown.compute_s == doctest::Approx(serial.breakdown.compute_s).epsilon(1e-12));
  CHECK(serial.iteration_time_s - overlapped.iteration_time_s > 0);
  CHECK(serial.iteration_time_s - overlapped.iteration_time_s <=
        (serial.breakdown.ep_comm_s - overlapped.breakdown.ep_comm_s) * (1 + 1e-9));
  // What it hides is at most the shared experts' own work: with them twice as wide, more hides.
  job.model.moe->shared_expert_ffn_hidden_size = 4096;
  const Prediction wider = predict(job);
  job.runtime.moe_shared_expert_overlap = false;
  CHECK(predict(job).breakdown.ep_comm_s - wider.breakdown.ep_comm_s >
        serial.breakdown.ep_comm_s - overlapped.breakdown.ep_comm_s);
  job.runtime.moe_shared_expert_overlap = true;
  // Megatron-Core's checks (TransformerConfig.__post_init__).
  job.runtime.moe_allgather_dispatch = true;
  CHECK(contains(check_plan(job), "needs the alltoall or flex dispatcher"));
  job.runtime.moe_allgather_dispatch = false;
  job.plan.recompute = {RecomputeGranularity::selective, -1};
  job.plan.recompute.modules = kRecomputeSharedExperts;
  CHECK(contains(check_plan(job), "recomputing the shared experts cannot work with their overlap"));
}

TEST_CASE("MoE: sequential experts unless grouped GEMM is on, said in the notes, and grouped is faster at 16 local experts") {
  Job job = test::qwen3_30b_ep8_job();
  job.runtime.moe_grouped_gemm = false;
  REQUIRE(check_plan(job).empty());
  auto note_has = [](const Prediction& p, const std::string& part) {
    return std::any_of(p.notes.begin(), p.notes.end(), [&](const std::string& n) { return n.find(part) != std::string::npos; });
  };
  const Prediction sequential = predict(job);
  REQUIRE_MESSAGE(sequential.feasible, sequential.reason);  // an infeasible prediction carries no notes
  CHECK(note_has(sequential, "timed one after another (Megatron's SequentialMLP"));
  job.runtime.moe_grouped_gemm = true;
  const Prediction grouped = predict(job);
  REQUIRE_MESSAGE(grouped.feasible, grouped.reason);
  CHECK(note_has(grouped, "timed as Transformer Engine's grouped GEMM"));
  CHECK(grouped.iteration_time_s < sequential.iteration_time_s);
}

TEST_CASE("MoE: a measured host time per MoE layer forward bounds that forward from below") {
  // Qwen3-30B-A3B, 48 MoE layers, one stage: each layer's forward takes at least its host time.
  // No host line: the measured forward alone (its backward scales with a line, here zero), all of
  // it issued after the synchronisation (the line's share before it is zero too).
  Job job = test::qwen3_30b_ep8_job();
  job.calibration.host = test::no_moe_host_time();
  REQUIRE(check_plan(job).empty());
  const Prediction gpu_only = predict(job);
  REQUIRE_MESSAGE(gpu_only.feasible, gpu_only.reason);
  CHECK(gpu_only.breakdown.host_s == 0);
  const int layers = job.model.num_layers;
  const double fwd_per_layer = gpu_only.stages[0].forward_s / layers;  // with the embedding and the loss: an upper bound
  const double mbs = static_cast<double>(job.num_micro_batches());
  auto note_has = [](const Prediction& p, const std::string& part) {
    return std::any_of(p.notes.begin(), p.notes.end(), [&](const std::string& n) { return contains(n, part); });
  };

  SUBCASE("a host time below the GPU time of the experts' part changes nothing") {
    job.calibration.host.moe_forward_s = 0.01 * fwd_per_layer;
    const Prediction p = predict(job);
    CHECK(p.iteration_time_s == gpu_only.iteration_time_s);
    CHECK(p.breakdown.host_s == 0);
  }
  SUBCASE("a longer host time sets each MoE layer's forward, and again in its full recompute") {
    const double host = 3 * fwd_per_layer;
    job.calibration.host.moe_forward_s = host;
    const Prediction p = predict(job);
    job.calibration.host.moe_forward_s = host + 0.001;
    const Prediction later = predict(job);
    // Every one of the 48 layers' forwards waits for the host: 1 ms more host time is 48 ms more
    // forward per micro-batch, and twice that per micro-batch in the iteration (the forward and its
    // full recompute).
    CHECK(later.stages[0].forward_s - p.stages[0].forward_s == doctest::Approx(layers * 0.001).epsilon(1e-6));
    CHECK(later.breakdown.host_s - p.breakdown.host_s == doctest::Approx(2 * mbs * layers * 0.001).epsilon(1e-6));
    CHECK(p.stages[0].forward_s > layers * host);
    CHECK(p.breakdown.host_s > 2 * mbs * layers * (host - fwd_per_layer));
    CHECK(p.breakdown.host_s < 2 * mbs * layers * host);
    CHECK(test::breakdown_sum(p.breakdown) == doctest::Approx(p.iteration_time_s).epsilon(1e-9));
    CHECK(p.iteration_time_s == doctest::Approx(gpu_only.iteration_time_s + p.breakdown.host_s).epsilon(1e-6));
    CHECK(p.bottleneck.kind == "host");
    // A larger micro-batch gives the host more GPU work per forward to hide behind.
    Job big = job;
    big.calibration.host.moe_forward_s = host;
    big.plan.micro_batch_size = 2;
    const Prediction q = predict(big);
    REQUIRE(q.feasible);
    CHECK(q.breakdown.host_s < p.breakdown.host_s);
  }
  SUBCASE("token dropping padded to capacity keeps the sizes static: the host runs ahead and binds only as a rate") {
    job.calibration.host.moe_forward_s = 3 * fwd_per_layer;
    job.runtime.moe_capacity_factor = 1.0;
    const Prediction dropped = predict(job);
    CHECK(dropped.breakdown.host_s > 0);  // dropping alone still brings the output size to the host
    job.runtime.moe_pad_to_capacity = true;
    REQUIRE(check_plan(job).empty());
    CHECK_FALSE(moe_layer_host_time(job).synchronises);
    const Prediction padded = predict(job);
    // Without the wait the host's forward overlaps the GPU's backward: less host time exposed.
    CHECK(padded.breakdown.host_s < dropped.breakdown.host_s);
    CHECK(note_has(padded, "the dispatcher does not synchronise"));
    // A host that issues each layer faster than the GPU runs its forward and backward costs nothing,
    // though it takes longer than the forward alone (which a synchronising dispatcher would expose).
    job.calibration.host.moe_forward_s = 1.2 * fwd_per_layer;
    CHECK(predict(job).breakdown.host_s == 0);
    job.runtime.moe_pad_to_capacity = false;
    CHECK(predict(job).breakdown.host_s > 0);
    job.runtime.moe_pad_to_capacity = true;
    // Nor does the prediction warn that a host time is left out: none is.
    CHECK_FALSE(note_has(padded, "not modelled"));
    // Host-bound under full recompute the host issues each forward twice, each backward once: a
    // millisecond more forward host time is two more per layer and micro-batch, backward one.
    REQUIRE(job.plan.recompute.granularity == RecomputeGranularity::full);
    job.calibration.host.moe_forward_s = 0;  // the line: forward and backward host times apart
    job.calibration.host.moe_forward_fixed_s = 3 * fwd_per_layer;
    job.calibration.host.moe_backward_fixed_s = 3 * fwd_per_layer;
    const Prediction bound = predict(job);
    Job slower_fwd = job, slower_bwd = job;
    slower_fwd.calibration.host.moe_forward_fixed_s += 0.001;
    slower_bwd.calibration.host.moe_backward_fixed_s += 0.001;
    CHECK(predict(slower_fwd).breakdown.host_s - bound.breakdown.host_s == doctest::Approx(2 * mbs * layers * 0.001).epsilon(1e-6));
    CHECK(predict(slower_bwd).breakdown.host_s - bound.breakdown.host_s == doctest::Approx(mbs * layers * 0.001).epsilon(1e-6));
    CHECK(test::breakdown_sum(bound.breakdown) == doctest::Approx(bound.iteration_time_s).epsilon(1e-9));
    job.runtime.moe_capacity_factor = 0;  // padding needs a capacity
    CHECK(contains(check_plan(job), "--moe-pad-expert-input-to-capacity requires --moe-expert-capacity-factor"));
  }
  SUBCASE("dense models have no dispatcher to wait for") {
    Job dense = test::gpt3_175b_job();
    const Prediction before = predict(dense);
    dense.calibration.host.moe_forward_s = 1.0;
    CHECK(predict(dense).iteration_time_s == before.iteration_time_s);
  }
}

TEST_CASE("MoE: the synchronisation splits the layer: host time issued before the attention block is not hidden by it") {
  // Qwen3-30B-A3B, ep 8, one stage. After the dispatcher's synchronisation the host issues the
  // experts (H_post), then the next layer's attention block (H_pre); one layer's forward is
  // max(max(G_post, H_post) + G_pre, H_post + H_pre).
  Job job = test::qwen3_30b_ep8_job();
  job.calibration.host = test::no_moe_host_time();
  const Prediction gpu_only = predict(job);
  REQUIRE_MESSAGE(gpu_only.feasible, gpu_only.reason);
  const int layers = job.model.num_layers;
  const double fwd_per_layer = gpu_only.stages[0].forward_s / layers;  // with the embedding and the loss: an upper bound
  auto forward_with = [&](double moe_forward, double attention_forward) {
    Job j = job;  // the line's fixed part, all of it after the synchronisation
    j.calibration.host.moe_forward_fixed_s = moe_forward;
    j.calibration.host.moe_forward_presync_fraction = 0;
    j.calibration.host.moe_attention_forward_s = attention_forward;
    const Prediction p = predict(j);
    REQUIRE(p.feasible);
    return p.stages[0].forward_s;
  };
  SUBCASE("an attention block's host time alone hides behind the layer's GPU time") {
    CHECK(forward_with(0, 0.5 * fwd_per_layer) == doctest::Approx(gpu_only.stages[0].forward_s).epsilon(1e-12));
  }
  SUBCASE("host time below the layer's GPU time still lengthens it: the attention cannot run under it") {
    // The old bound, max(GPU, host), would leave this forward unchanged.
    const double host = 0.9 * fwd_per_layer;
    const double f = forward_with(host, 0);
    CHECK(f > gpu_only.stages[0].forward_s);
    CHECK(f - gpu_only.stages[0].forward_s < layers * host);  // the experts' own GPU time still runs under it
  }
  SUBCASE("host-bound, the two parts' host times add up") {
    const double host = 3 * fwd_per_layer, attention = 2 * fwd_per_layer;
    const double f = forward_with(host, attention);
    CHECK(f > layers * (host + attention));
    CHECK(forward_with(host, attention + 0.001) - f == doctest::Approx(layers * 0.001).epsilon(1e-6));
    CHECK(forward_with(host + 0.001, attention) - f == doctest::Approx(layers * 0.001).epsilon(1e-6));
  }
  SUBCASE("the share issued before the synchronisation runs under the attention's GPU time") {
    // The line's fixed part at a share s before the synchronisation: with the attention's host
    // time zero, moving the fixed part before the synchronisation can only shorten the forward.
    job.calibration.host.moe_forward_fixed_s = 0.8 * fwd_per_layer;
    job.calibration.host.moe_forward_presync_fraction = 0;
    const double after = predict(job).stages[0].forward_s;
    job.calibration.host.moe_forward_presync_fraction = 1;
    const double before = predict(job).stages[0].forward_s;
    CHECK(before < after);
    CHECK(before == doctest::Approx(gpu_only.stages[0].forward_s).epsilon(1e-12));  // 0.8 of the layer hides under it
  }
}

TEST_CASE("MoE: GPT-OSS's fused quick-GeGLU synchronises the host at each expert activation") {
  // Qwen3-30B-A3B's layers at ep 8 (16 local experts, grouped GEMM) with GPT-OSS's activation: the
  // same GPU work (a gated activation costs the same either way), one more synchronisation.
  Job job = test::qwen3_30b_ep8_job();
  job.plan.recompute.granularity = RecomputeGranularity::none;
  const HostCoefficients line;
  Job swiglu = job;
  job.model.activation = Activation::quick_geglu;
  REQUIRE(check_plan(job).empty());
  auto forward = [](const Job& j) {
    const Prediction p = predict(j);
    REQUIRE_MESSAGE(p.feasible, p.reason);
    return p.stages[0].forward_s;
  };

  SUBCASE("one per grouped GEMM, one per SequentialMLP expert, none for SwiGLU; where they fall") {
    MoeHostTime t = moe_layer_host_time(job);
    CHECK(t.activation_syncs == 1);
    CHECK(moe_layer_host_time(swiglu).activation_syncs == 0);
    const double post_fixed = (1 - line.moe_forward_presync_fraction) * line.moe_forward_fixed_s;
    CHECK(t.forward_before_experts_s == doctest::Approx(line.moe_forward_before_experts_fraction * post_fixed));
    CHECK(t.experts_forward_s == 0);  // a grouped GEMM's own host work is not measured
    CHECK(t.first_activation_s == 0);
    job.runtime.moe_grouped_gemm = false;
    t = moe_layer_host_time(job);
    CHECK(t.activation_syncs == 16);
    CHECK(t.experts_forward_s == doctest::Approx(16 * line.moe_forward_per_expert_s));
    CHECK(t.first_activation_s == doctest::Approx(line.moe_expert_before_activation_fraction * line.moe_forward_per_expert_s));
    CHECK(t.forward_before_experts_s + t.experts_forward_s <= t.forward_s - t.forward_presync_s);
  }
  SUBCASE("the dispatch and fc1 no longer run under the host's issue of the next layer") {
    const double without = forward(swiglu), with = forward(job);
    CHECK(with > without);
    // At most the GPU time it takes out from under the host: the layer's whole forward GPU time.
    Job gpu_only = swiglu;
    gpu_only.calibration.host = test::no_moe_host_time();
    CHECK(with - without < forward(gpu_only));
    // SequentialMLP: a synchronisation per expert, each expert's work no longer overlapping the next.
    Job sequential = job, sequential_swiglu = swiglu;
    sequential.runtime.moe_grouped_gemm = sequential_swiglu.runtime.moe_grouped_gemm = false;
    CHECK(forward(sequential) > forward(sequential_swiglu));
  }
  SUBCASE("with no host time it costs nothing; padded to capacity it splits the layer on its own") {
    Job gpu_only = job, gpu_only_swiglu = swiglu;
    gpu_only.calibration.host = gpu_only_swiglu.calibration.host = test::no_moe_host_time();
    CHECK(forward(gpu_only) == doctest::Approx(forward(gpu_only_swiglu)).epsilon(1e-12));
    Job padded = job, padded_swiglu = swiglu;
    for (Job* j : {&padded, &padded_swiglu}) {
      j->runtime.moe_capacity_factor = 1.0;
      j->runtime.moe_pad_to_capacity = true;
    }
    REQUIRE_FALSE(moe_layer_host_time(padded).synchronises);
    // Without the dispatcher's synchronisation the host runs ahead as a rate (no wait in the
    // forward at all when the GPU is the slower); with the activation's the layer waits once.
    CHECK(predict(padded).breakdown.host_s > predict(padded_swiglu).breakdown.host_s);
  }
  SUBCASE("a whole MoE block in one CUDA graph (padded: nothing to wait for) replays without it") {
    job.runtime.moe_capacity_factor = 1.0;
    job.runtime.moe_pad_to_capacity = true;
    job.runtime.cuda_graph_modules = kCudaGraphMoe;
    CHECK(moe_layer_host_time(job).activation_syncs == 0);
  }
}

TEST_CASE("MoE: the measured Megatron-Core host line over the local experts binds forward and backward") {
  // Qwen3-30B-A3B at ep 8: 16 local experts per GPU, dropless, one stage, full recompute.
  Job job = test::qwen3_30b_ep8_job();
  job.calibration.host = test::no_moe_host_time();
  const Prediction gpu_only = predict(job);
  REQUIRE_MESSAGE(gpu_only.feasible, gpu_only.reason);
  const HostCoefficients line;  // the measured defaults
  const int layers = job.model.num_layers;
  auto note_has = [](const Prediction& p, const std::string& part) {
    return std::any_of(p.notes.begin(), p.notes.end(), [&](const std::string& n) { return contains(n, part); });
  };

  SUBCASE("SequentialMLP: the fixed part and each of the 16 local experts, forward and backward") {
    job.runtime.moe_grouped_gemm = false;
    job.calibration.host = line;
    const MoeHostTime t = moe_layer_host_time(job);
    CHECK(t.experts_counted == 16);
    CHECK_FALSE(t.measured_override);
    CHECK(t.forward_s == doctest::Approx(line.moe_forward_fixed_s + 16 * line.moe_forward_per_expert_s));
    CHECK(t.backward_s == doctest::Approx(line.moe_backward_fixed_s + 16 * line.moe_backward_per_expert_s));
    Job gpu = job;
    gpu.calibration.host = test::no_moe_host_time();
    const Prediction base = predict(gpu), p = predict(job);
    REQUIRE(p.feasible);
    // Each layer's forward and backward take at least the host's time; the full recompute's
    // forward synchronises again.
    CHECK(p.stages[0].forward_s >= layers * t.forward_s);
    CHECK(p.stages[0].backward_s >= layers * (t.backward_s + t.forward_s));
    CHECK(p.breakdown.host_s > 0);
    CHECK(p.iteration_time_s == doctest::Approx(base.iteration_time_s + p.breakdown.host_s).epsilon(1e-6));
    CHECK(note_has(p, "16 local experts one after another"));
    // More experts per GPU (ep 4: 32 local) cost the host more.
    Job fewer_ranks = job;
    fewer_ranks.plan.ep = 4;
    CHECK(moe_layer_host_time(fewer_ranks).forward_s > t.forward_s);
  }
  SUBCASE("each dispatcher its own measured line: allgather, and the flex dispatcher on the alltoall one, said so") {
    job.runtime.moe_grouped_gemm = false;
    job.calibration.host = line;
    Job allgather = job;
    allgather.runtime.moe_allgather_dispatch = true;
    const MoeHostTime a2a = moe_layer_host_time(job), ag = moe_layer_host_time(allgather);
    CHECK_FALSE(a2a.allgather_line);
    CHECK(ag.allgather_line);
    CHECK(ag.forward_s == doctest::Approx(line.moe_allgather_forward_fixed_s + 16 * line.moe_allgather_forward_per_expert_s));
    CHECK(ag.backward_s == doctest::Approx(line.moe_allgather_backward_fixed_s + 16 * line.moe_allgather_backward_per_expert_s));
    CHECK(ag.forward_presync_s == doctest::Approx(line.moe_forward_presync_fraction * line.moe_allgather_forward_fixed_s));
    CHECK(ag.forward_s != doctest::Approx(a2a.forward_s));
    CHECK(note_has(predict(allgather), "with the allgather dispatcher measured"));
    Job flex = job;
    flex.runtime.moe_token_dedup = true;
    CHECK(moe_layer_host_time(flex).forward_s == a2a.forward_s);
    CHECK(note_has(predict(flex), "DeepEP/HybridEP fuse its permutation"));
  }
  SUBCASE("grouped GEMM: the router and dispatcher part alone, and the output says it is a lower bound") {
    job.calibration.host = line;
    const MoeHostTime t = moe_layer_host_time(job);
    CHECK(t.experts_counted == 0);
    CHECK(t.forward_s == line.moe_forward_fixed_s);
    CHECK(t.backward_s == line.moe_backward_fixed_s);
    const Prediction p = predict(job);
    REQUIRE(p.feasible);
    CHECK(p.iteration_time_s >= gpu_only.iteration_time_s);
    CHECK(note_has(p, "router and dispatcher only"));
    CHECK(note_has(p, "lower bound"));
  }
  SUBCASE("CUDA graphs: the captured attention, router and preprocessing cost one replay each way; the rest stays eager") {
    job.calibration.host = line;
    job.plan.recompute.granularity = RecomputeGranularity::selective;  // per-layer graphs do not run with full recompute
    const double replay = line.cuda_graph_replay_s, presync = line.moe_forward_presync_fraction * line.moe_forward_fixed_s;
    const MoeHostTime eager = moe_layer_host_time(job);
    const Prediction before = predict(job);
    job.runtime.cuda_graph_modules = kCudaGraphAttn | kCudaGraphMoeRouter | kCudaGraphMoePreprocess;
    const MoeHostTime t = moe_layer_host_time(job);
    CHECK(t.graph_replays == 3);
    CHECK(t.attention_forward_s == replay);
    CHECK(t.attention_backward_s == replay);
    CHECK(t.forward_presync_s == doctest::Approx(2 * replay));
    // What follows the synchronisation (dispatch, experts, combine) is unchanged.
    CHECK(t.forward_s - t.forward_presync_s == doctest::Approx(eager.forward_s - eager.forward_presync_s));
    CHECK(t.backward_s == doctest::Approx(eager.backward_s - line.moe_forward_presync_fraction * line.moe_backward_fixed_s + 2 * replay));
    const Prediction graphed = predict(job);
    REQUIRE(graphed.feasible);
    CHECK(graphed.breakdown.host_s < before.breakdown.host_s);
    CHECK(graphed.iteration_time_s < before.iteration_time_s);
    CHECK(note_has(graphed, "CUDA graphs capture attn, moe_router, moe_preprocess"));
    CHECK(note_has(graphed, "a guess, not measured"));
    CHECK(note_has(graphed, "the memory their capture keeps"));  // not modelled, and said
    CHECK_FALSE(note_has(before, "the memory their capture keeps"));
    CHECK_FALSE(note_has(before, "CUDA graphs"));
    // The router alone: half of the part before the synchronisation, a guess.
    job.runtime.cuda_graph_modules = kCudaGraphMoeRouter;
    const MoeHostTime router = moe_layer_host_time(job);
    CHECK(router.attention_forward_s == eager.attention_forward_s);
    CHECK(router.forward_presync_s == doctest::Approx(presync / 2 + replay));
    // A dense layer's MLP in a graph changes nothing of an MoE layer's host time.
    job.runtime.cuda_graph_modules = kCudaGraphMlp;
    CHECK(moe_layer_host_time(job).forward_s == eager.forward_s);
    CHECK(moe_layer_host_time(job).graph_replays == 0);
  }
  SUBCASE("grouped GEMM with biased experts: each local expert's eager fc2 bias adds its ops' host time") {
    job.calibration.host = line;
    job.model.add_linear_bias = true;  // as GPT-OSS's experts
    const MoeHostTime t = moe_layer_host_time(job);
    CHECK(t.experts_counted == 0);
    CHECK(t.biased_experts == 16);
    CHECK(t.forward_s == doctest::Approx(line.moe_forward_fixed_s + 16 * line.moe_expert_bias_forward_per_expert_s));
    CHECK(t.backward_s == doctest::Approx(line.moe_backward_fixed_s + 16 * line.moe_expert_bias_backward_per_expert_s));
    // Issued after the synchronisation, with the experts.
    CHECK(t.forward_presync_s == doctest::Approx(line.moe_forward_presync_fraction * line.moe_forward_fixed_s));
    CHECK(note_has(predict(job), "the eager fc2 bias of 16 local experts"));
    job.runtime.moe_grouped_gemm = false;  // SequentialMLP's experts bias inside their own linears
    CHECK(moe_layer_host_time(job).biased_experts == 0);
  }
  SUBCASE("a measured forward replaces the line; the backward keeps the line's proportion") {
    job.runtime.moe_grouped_gemm = false;
    job.calibration.host = line;
    job.calibration.host.moe_forward_s = 0.02;
    const MoeHostTime t = moe_layer_host_time(job);
    CHECK(t.measured_override);
    CHECK(t.forward_s == 0.02);
    const double line_fwd = line.moe_forward_fixed_s + 16 * line.moe_forward_per_expert_s;
    const double line_bwd = line.moe_backward_fixed_s + 16 * line.moe_backward_per_expert_s;
    CHECK(t.backward_s == doctest::Approx(0.02 * line_bwd / line_fwd));
    CHECK(note_has(predict(job), "(calibration host.moe_forward_s, --moe-forward-host-ms)"));
  }
  SUBCASE("padded to capacity or a per-rank budget: the line binds as a rate; another framework or a whole-step graph: not at all") {
    job.calibration.host = line;
    // Tokens dropped at a capacity: the dispatcher still synchronises (the output size), the GPU's
    // work is the padded one's.
    job.runtime.moe_capacity_factor = 1.0;
    const Prediction synchronised = predict(job);
    job.runtime.moe_pad_to_capacity = true;
    const MoeHostTime padded = moe_layer_host_time(job);
    CHECK_FALSE(padded.synchronises);
    CHECK(padded.forward_s == line.moe_forward_fixed_s);
    const Prediction p = predict(job);
    // This layer's host is slower than its GPU in forward and backward alike: the rate binds as
    // fully as the synchronisation (a layer it binds less is in "token dropping padded to capacity").
    CHECK(p.breakdown.host_s > 0);
    CHECK(p.breakdown.host_s <= synchronised.breakdown.host_s);
    CHECK_FALSE(moe_host_time_unmodelled(job));
    // HybridEP's static per-rank budget: the same, and it caps the busiest rank's tokens.
    job.runtime.moe_capacity_factor = 0;
    job.runtime.moe_pad_to_capacity = false;
    job.runtime.moe_token_dedup = true;
    job.runtime.moe_load_imbalance = 2.0;
    job.runtime.moe_rank_capacity_factor = 1.5;
    CHECK_FALSE(moe_layer_host_time(job).synchronises);
    CHECK(effective_moe_imbalance(job.runtime) == 1.5);
    CHECK(note_has(predict(job), "static per-rank token budget (1.5 x the mean"));
    // The whole step in one CUDA graph: no host time at all, and only where nothing waits on the host.
    job.runtime.cuda_graph_modules = kCudaGraphWholeLayer | kCudaGraphFullIteration;
    REQUIRE(check_plan(job).empty());
    CHECK(moe_layer_host_time(job).forward_s == 0);
    CHECK(predict(job).breakdown.host_s == 0);
    job.runtime.moe_rank_capacity_factor = 0;
    CHECK(contains(check_plan(job), "a full-iteration CUDA graph cannot capture a dropless MoE dispatcher"));
    job.runtime.cuda_graph_modules = 0;
    job.runtime.framework = Framework::fsdp;
    CHECK(moe_layer_host_time(job).forward_s == 0);
  }
  SUBCASE("a zeroed line is left out, and said to be") {
    CHECK(moe_host_time_unmodelled(job));
    CHECK(note_has(gpu_only, "the calibration's host line is zero"));
    CHECK(gpu_only.breakdown.host_s == 0);
  }
}

TEST_CASE("MoE all-to-all overlap hides at most the compute it runs beside") {
  // Qwen3-235B-A22B layers with ep 32 over four H100 nodes: the token all-to-alls take longer
  // than a layer's compute (one pipeline stage, so memory is not the point here).
  Job job = test::workload("qwen3-235b-a22b", "dgx-h100-ndr", 2048, 4096);
  job.calibration = test::catalog().calibration_or_default(job.cluster.gpu);
  job.training.precision = Precision::fp8;
  job.plan.tp = 2;
  job.plan.dp = 16;
  job.plan.ep = 32;
  job.plan.sequence_parallel = true;
  job.plan.distributed_optimizer = true;
  job.runtime.moe_load_imbalance = 1.0;
  REQUIRE(check_plan(job) == "");
  const Prediction plain = predict(job);
  job.runtime.moe_a2a_overlap = true;
  const Prediction overlapped = predict(job);
  REQUIRE(plain.breakdown.ep_comm_s > plain.breakdown.compute_s);  // the communication-bound case
  const double hidden = plain.breakdown.ep_comm_s - overlapped.breakdown.ep_comm_s;
  CHECK(hidden > 0);
  // The combined 1F1B schedule hides forward all-to-alls behind backward compute and vice versa:
  // never more than the compute there is.
  CHECK(hidden <= overlapped.breakdown.compute_s * 1.001);
  CHECK(overlapped.breakdown.ep_comm_s >= plain.breakdown.ep_comm_s - plain.breakdown.compute_s - 1e-9);

  // Within one node the all-to-alls are short: all but the interference is hidden.
  job.plan.tp = 1;
  job.plan.ep = 8;
  job.plan.dp = 32;
  job.plan.sequence_parallel = false;
  REQUIRE(check_plan(job) == "");
  job.runtime.moe_a2a_overlap = false;
  const Prediction short_plain = predict(job);
  job.runtime.moe_a2a_overlap = true;
  const Prediction short_overlapped = predict(job);
  REQUIRE(short_plain.breakdown.ep_comm_s < short_plain.breakdown.compute_s);
  CHECK(short_overlapped.breakdown.ep_comm_s ==
        doctest::Approx(short_plain.breakdown.ep_comm_s * job.calibration.kernel.overlap_interference).epsilon(0.02));
}

TEST_CASE("ZeRO-3: Megatron-FSDP prefetches each layer's gather behind compute, DeepSpeed gathers on demand") {
  // Llama-3 70B on 64 H100s, sharded parameters: the same traffic, hidden by Megatron-FSDP's
  // layer-by-layer prefetch (runtime_schedule.md), on the critical path for DeepSpeed's ZeRO-3.
  Job job = test::workload("llama3-70b", "dgx-h100-ndr", 128, 4096);
  job.calibration = test::catalog().calibration_or_default(job.cluster.gpu);
  job.plan.dp = 64;
  job.plan.recompute.granularity = RecomputeGranularity::full;
  job.plan.zero_stage = 3;
  REQUIRE(check_plan(job) == "");
  const Prediction megatron_fsdp = predict(job);
  job.runtime.framework = Framework::deepspeed;
  job.runtime.overlap_grad_reduce = job.runtime.overlap_param_gather = false;
  REQUIRE(check_plan(job) == "");
  const Prediction deepspeed = predict(job);
  CHECK(megatron_fsdp.breakdown.dp_comm_s < 0.5 * deepspeed.breakdown.dp_comm_s);
  CHECK(megatron_fsdp.breakdown.dp_comm_s <= megatron_fsdp.breakdown.compute_s);

  // Hybrid sharding (HSDP): two replica groups of 32 ranks, each gradient shard all-reduced across
  // them once per step.
  job.runtime = RuntimeOptions{};
  job.plan.optimizer_instances = 2;
  REQUIRE(check_plan(job) == "");
  const Prediction hsdp = predict(job);
  CHECK(hsdp.feasible);
  CHECK(hsdp.memory_per_gpu_GiB > megatron_fsdp.memory_per_gpu_GiB);  // sharded over 32 ranks, not 64
  CHECK(hsdp.breakdown.dp_comm_s > megatron_fsdp.breakdown.dp_comm_s);    // plus the step's all-reduce across the replicas
  job.plan.outer_optimizer_sharding = true;
  REQUIRE(check_plan(job) == "");
  CHECK(predict(job).memory_per_gpu_GiB < hsdp.memory_per_gpu_GiB);
  job.plan.zero_stage = 2;
  CHECK(contains(check_plan(job), "needs Megatron-FSDP's optim_grads_params"));
  job.plan.zero_stage = 3;
  // PyTorch FSDP2's HSDP (torchtitan's data_parallel_replicate_degree): replicas of its full
  // sharding, each unit's gradient shard all-reduced across them after every reduce-scatter.
  job.runtime.framework = Framework::fsdp;
  CHECK(contains(check_plan(job), "is Megatron-FSDP's; PyTorch FSDP's HSDP replicas hold the same shards"));
  job.plan.outer_optimizer_sharding = false;
  REQUIRE(check_plan(job) == "");
  const Prediction fsdp_hsdp = predict(job);
  job.plan.optimizer_instances = 1;
  const Prediction fsdp = predict(job);
  CHECK(fsdp_hsdp.memory_per_gpu_GiB > fsdp.memory_per_gpu_GiB);  // sharded over 32 ranks, not 64
  job.plan.optimizer_instances = 2;
  job.plan.zero_stage = 2;
  CHECK(contains(check_plan(job), "replicates its full sharding: --zero 3"));
  job.runtime.framework = Framework::deepspeed;
  CHECK(contains(check_plan(job), "not DeepSpeed"));
}

TEST_CASE("check_plan: Megatron-LM and FSDP2's pipelining interleave pipeline stages, DeepSpeed does not") {
  Job job = test::gpt3_175b_job();
  job.plan.vpp = 2;
  CHECK(check_plan(job) == "");
  job.runtime.framework = Framework::fsdp;  // torch.distributed.pipelining's Interleaved1F1B (torchtitan)
  job.plan.distributed_optimizer = false;
  job.plan.zero_stage = 3;
  CHECK(check_plan(job) == "");
  job.runtime.framework = Framework::deepspeed;
  job.plan.zero_stage = 1;
  CHECK(contains(check_plan(job), "the deepspeed pipeline does not interleave"));
}

TEST_CASE("FSDP under a pipeline schedule gathers each stage once per step and reduce-scatters once, after the last backward") {
  // torchtitan with PP: reshard_after_forward False, and PipelineStage's backward_maybe_with_nosync
  // keeps every backward but the last from resharding and reducing: the data-parallel traffic does
  // not grow with the micro-batches, as FSDP's per-micro-batch gathers without a pipeline do.
  Job job = test::gpt3_175b_job();  // tp8 pp16 dp8
  job.runtime.framework = Framework::fsdp;
  job.plan.distributed_optimizer = false;
  job.plan.zero_stage = 3;
  REQUIRE(check_plan(job) == "");
  const Prediction few = predict(job);
  job.training.global_batch_size *= 4;
  const Prediction many = predict(job);
  CHECK(many.breakdown.dp_comm_s == doctest::Approx(few.breakdown.dp_comm_s).epsilon(1e-9));
  CHECK(few.breakdown.dp_comm_s > 0);
  // Without a pipeline each micro-batch gathers every layer twice and reduce-scatters once.
  job.plan.pp = 1;
  job.plan.tp = 8;
  job.plan.dp = 128;
  job.model.num_layers = 6;  // what fits on one stage
  job.training.global_batch_size = 128 * 2;
  const double two = predict(job).breakdown.dp_comm_s;
  job.training.global_batch_size = 128 * 8;
  CHECK(predict(job).breakdown.dp_comm_s > 2 * two);
}

TEST_CASE("FSDP's float8 all-gather halves the linears' gathers, and torchao runs it with tensorwise scaling only") {
  // Llama 3 8B on 64 H100s, FSDP without a pipeline: every micro-batch gathers every layer twice.
  Job job = test::workload("llama3-8b", "dgx-h100-ndr", 256, 4096);
  job.calibration = test::catalog().calibration_or_default(job.cluster.gpu);
  job.runtime = RuntimeOptions{};
  job.runtime.framework = Framework::fsdp;
  job.plan.dp = 64;
  job.plan.zero_stage = 3;
  job.training.precision = Precision::fp8;
  job.training.recipe = LowPrecisionRecipe::tensorwise;
  job.runtime.overlap_grad_reduce = false;  // the whole gather traffic shows (nothing hidden)
  REQUIRE(check_plan(job) == "");
  const double bf16_gathers = predict(job).breakdown.dp_comm_s;
  job.runtime.fp8_param_gather = true;
  REQUIRE(check_plan(job) == "");
  const double fp8_gathers = predict(job).breakdown.dp_comm_s;
  CHECK(fp8_gathers < bf16_gathers);
  job.training.recipe = LowPrecisionRecipe::delayed;
  CHECK(contains(check_plan(job), "needs Float8 training with tensorwise scaling"));
}

TEST_CASE("MoE allgather dispatcher: every token of the group travels, routed to this rank or not") {
  // Mixtral routes each token to 2 of 8 experts: the all-to-all moves 2 copies of 7/8 of the
  // tokens, the all-gather and reduce-scatter move all of the other 7 ranks' tokens each way.
  Job job = test::workload("mixtral-8x7b", "dgx-h100-ndr", 256, 4096);
  job.calibration = test::catalog().calibration_or_default(job.cluster.gpu);
  job.plan.dp = 8;
  job.plan.ep = 8;
  job.plan.distributed_optimizer = true;
  REQUIRE(check_plan(job) == "");
  const Prediction alltoall = predict(job);
  job.runtime.moe_allgather_dispatch = true;
  REQUIRE(check_plan(job) == "");
  const Prediction allgather = predict(job);
  CHECK(allgather.breakdown.ep_comm_s > 2.5 * alltoall.breakdown.ep_comm_s);
  job.runtime.moe_a2a_overlap = true;
  CHECK(contains(check_plan(job), "needs the alltoall or flex dispatcher"));
  job.runtime.moe_a2a_overlap = false;
  job.runtime.moe_token_dedup = true;
  CHECK(contains(check_plan(job), "exclude each other"));
}

TEST_CASE("context parallelism: --cp-comm-type a2a exposes its all-to-alls, p2p hides its ring behind attention") {
  Job job = test::gpt3_175b_job();
  job.cluster = test::catalog().cluster("dgx-h100-ndr");
  job.calibration = test::catalog().calibration_or_default(job.cluster.gpu);
  // Long enough that each ring step's attention (cuDNN's, on Hopper) outlasts the inter-node K/V
  // transfer it hides; at 32k tokens it no longer does, and the ring is exposed too.
  job.training.seq_length = 131072;
  job.training.global_batch_size = 64;
  job.plan.tp = 8;
  job.plan.cp = 4;
  job.plan.pp = 8;
  job.plan.dp = 4;
  REQUIRE(check_plan(job).empty());
  const Prediction ring = predict(job);
  job.runtime.cp_comm_type = CpCommType::a2a;
  REQUIRE(check_plan(job).empty());  // 96 heads over tp*cp = 32
  const Prediction a2a = predict(job);
  CHECK(a2a.breakdown.cp_comm_s > ring.breakdown.cp_comm_s);
  CHECK(a2a.iteration_time_s > ring.iteration_time_s);
  // The ring's attention runs step by step over one rank's K/V block and merges the steps; after
  // the all-to-all (or the all-gather) one kernel attends to the whole sequence.
  CHECK(ring.breakdown.compute_s > a2a.breakdown.compute_s);
  job.runtime.cp_comm_type = CpCommType::allgather;
  CHECK(predict(job).breakdown.compute_s == doctest::Approx(a2a.breakdown.compute_s).epsilon(1e-12));
  job.runtime.cp_comm_type = CpCommType::a2a;
  job.plan.cp = 8;
  job.plan.dp = 2;
  CHECK_FALSE(check_plan(job).empty());  // 96 heads are not divisible by tp*cp = 64
  CHECK(cp_comm_type_from_string("allgather") == CpCommType::allgather);
  CHECK(std::string(to_string(CpCommType::a2a)) == "a2a");
}

TEST_CASE("context parallelism: PyTorch's all-gather rotation hides behind the rank's own K/V block, TE's behind half the attention") {
  // GPT-3 175B (96 K/V heads) at 8k tokens, tp 8 x cp 4 (a CP rank per node): the gathered K/V
  // outlast the hiding compute.
  Job job = test::workload("gpt3-175b", "dgx-h100-ndr", 128, 8192);
  job.calibration = test::catalog().calibration_or_default(job.cluster.gpu);
  job.training.global_batch_size = 16;
  job.plan.tp = 8;
  job.plan.cp = 4;
  job.plan.pp = 4;
  job.plan.dp = 1;
  job.plan.sequence_parallel = true;
  job.plan.recompute.granularity = RecomputeGranularity::full;
  job.runtime.attention_kernel = AttentionKernel::flash2;  // the same kernel under both stacks
  job.runtime.cp_comm_type = CpCommType::allgather;
  REQUIRE(check_plan(job).empty());
  const double te = predict(job).breakdown.cp_comm_s;
  job.runtime.framework = Framework::fsdp;
  job.plan.distributed_optimizer = false;
  job.plan.zero_stage = 3;
  REQUIRE(check_plan(job).empty());
  const double torch_cp = predict(job).breakdown.cp_comm_s;
  CHECK(te > 0);
  CHECK(torch_cp > te);
}

TEST_CASE("context parallelism: --cp-comm-type a2a+p2p is a2a inside each group and the p2p ring between them") {
  // Llama 3 70B (64 heads, 8 query groups), tp 2 x cp 8 on 8-GPU nodes: the CP group spans two nodes.
  Job job = test::workload("llama3-70b", "dgx-h100-ndr", 64, 32768);
  job.calibration = test::catalog().calibration_or_default(job.cluster.gpu);
  job.training.global_batch_size = 16;
  job.plan.tp = 2;
  job.plan.cp = 8;
  job.plan.pp = 4;
  job.plan.dp = 1;
  job.plan.sequence_parallel = true;
  job.plan.recompute.granularity = RecomputeGranularity::full;
  REQUIRE(check_plan(job).empty());
  const Prediction ring = predict(job);
  job.runtime.cp_comm_type = CpCommType::a2a;
  CHECK_FALSE(check_plan(job).empty());  // 8 query groups over tp*cp = 16
  job.runtime.cp_comm_type = CpCommType::a2a_p2p;
  // Default group: the CP ranks of one node, 4 x tp 2 = 8 GPUs, which split the 8 groups evenly.
  CHECK(cp_a2a_group_size(job) == 4);
  REQUIRE(check_plan(job).empty());
  const Prediction hier = predict(job);
  CHECK(hier.breakdown.cp_comm_s > 0);
  // A group of one is the plain ring, the same time to the picosecond.
  job.runtime.cp_a2a_size = 1;
  REQUIRE(check_plan(job).empty());
  CHECK(predict(job).iteration_time_s == doctest::Approx(ring.iteration_time_s).epsilon(1e-12));
  // A group of all CP ranks is plain a2a (legal once the heads divide: tp 1).
  job.plan.tp = 1;
  job.plan.dp = 2;
  job.plan.sequence_parallel = false;
  job.runtime.cp_a2a_size = 8;
  REQUIRE(check_plan(job).empty());
  const Prediction all = predict(job);
  job.runtime.cp_comm_type = CpCommType::a2a;
  REQUIRE(check_plan(job).empty());
  CHECK(all.breakdown.cp_comm_s == doctest::Approx(predict(job).breakdown.cp_comm_s).epsilon(1e-12));
  // Sizes that do not divide cp, or split the heads unevenly, are refused.
  job.runtime.cp_comm_type = CpCommType::a2a_p2p;
  job.runtime.cp_a2a_size = 3;
  CHECK(contains(check_plan(job), "divides cp=8"));
  job.plan.tp = 2;
  job.plan.dp = 1;
  job.runtime.cp_a2a_size = 8;
  CHECK(contains(check_plan(job), "query groups divisible by tp times the all-to-all group = 16"));
  CHECK(cp_comm_type_from_string("a2a+p2p") == CpCommType::a2a_p2p);
  CHECK(std::string(to_string(CpCommType::a2a_p2p)) == "a2a+p2p");
}
}

TEST_CASE("multi-token prediction: the last stage runs one more layer of the last kind and one more output layer") {
  Job job = test::workload("deepseek-v3", "dgx-h100-ndr", 1024, 4096);
  job.calibration = test::catalog().calibration_or_default(job.cluster.gpu);
  job.plan.tp = 2;
  job.plan.pp = 8;
  job.plan.dp = 64;
  job.plan.ep = 64;
  job.plan.sequence_parallel = true;
  job.plan.distributed_optimizer = true;
  job.plan.recompute.granularity = RecomputeGranularity::full;
  REQUIRE(job.model.mtp_layers == 1);
  REQUIRE(check_plan(job) == "");
  const Prediction with = predict(job);
  Job plain_job = job;
  plain_job.model.mtp_layers = 0;
  const Prediction without = predict(plain_job);
  const int last = job.plan.pp - 1;
  for (int s = 0; s < last; ++s) {
    CAPTURE(s);
    CHECK(with.stages[s].forward_s == without.stages[s].forward_s);
    CHECK(with.stages[s].memory == without.stages[s].memory);
  }
  // One MoE layer, the projection, the embedding lookup and the output layer more, forward; an
  // eighth of a stage is one layer.
  const double extra = with.stages[last].forward_s - without.stages[last].forward_s;
  CHECK(extra > without.stages[last].forward_s / without.stages[last].layers);
  CHECK(extra < 0.5 * without.stages[last].forward_s);
  CHECK(with.stages[last].backward_s > without.stages[last].backward_s);
  CHECK(with.iteration_time_s > without.iteration_time_s);
  CHECK(test::breakdown_sum(with.breakdown) == doctest::Approx(with.iteration_time_s).epsilon(1e-9));
  // Its own logits and loss, and its parameters (one routed-expert layer over ep 64).
  CHECK(with.stages[last].memory.logits_GiB == doctest::Approx(2 * without.stages[last].memory.logits_GiB).epsilon(1e-12));
  CHECK(with.stages[last].memory.weights_GiB > without.stages[last].memory.weights_GiB);
  CHECK(with.stages[last].memory.activations_GiB > without.stages[last].memory.activations_GiB);
  // Model FLOPs count the module as Megatron's num_floating_point_operations does: a layer of the
  // last kind, the 2h x h projection and one more logit computation.
  const ModelSpec& m = job.model;
  const double seq = 4096, h = static_cast<double>(m.hidden_size);
  double layers = 0;
  for (int i = 0; i < m.num_layers; ++i) layers += layer_model_flops_fwd(m, seq, seq, m.layer_kind(i));
  const double logits = 2 * seq * h * static_cast<double>(m.vocab_size);
  const double mtp = layer_model_flops_fwd(m, seq, seq, m.layer_kind(m.num_layers - 1)) + 2 * seq * 2 * h * h + logits;
  CHECK((with.mfu * with.iteration_time_s) / (without.mfu * without.iteration_time_s) ==
        doctest::Approx((layers + logits + mtp) / (layers + logits)).epsilon(1e-9));
  // Megatron overlaps the MoE all-to-all with at most one MTP layer.
  job.plan.recompute.granularity = RecomputeGranularity::selective;
  job.plan.pp = 1;
  job.plan.dp = 512;
  job.runtime.moe_a2a_overlap = true;
  CHECK(check_plan(job) == "");
  job.model.mtp_layers = 2;
  CHECK(contains(check_plan(job), "at most one MTP layer"));
}

TEST_CASE("selective recompute modules: Megatron-Core's rules, and a whole MoE block dispatches its tokens again") {
  Job job = test::workload("qwen3-30b-a3b", "dgx-h100-ndr", 256, 4096);
  job.calibration = test::catalog().calibration_or_default(job.cluster.gpu);
  job.plan.dp = 256;
  job.plan.ep = 16;  // over two nodes: the all-to-all is not free
  job.runtime.moe_load_imbalance = 1.0;
  job.plan.recompute.granularity = RecomputeGranularity::selective;
  REQUIRE(check_plan(job) == "");
  job.plan.recompute.modules = kRecomputeMoeAct;
  // Megatron's default SequentialMLP experts are plain MLPs, which recompute nothing.
  CHECK(contains(check_plan(job), "its default SequentialMLP recomputes nothing"));
  job.runtime.moe_grouped_gemm = true;
  REQUIRE(check_plan(job) == "");
  const Prediction act = predict(job);
  job.plan.recompute.modules = kRecomputeMoe;
  const Prediction whole = predict(job);
  CHECK(whole.breakdown.recompute_s > act.breakdown.recompute_s);
  CHECK(whole.breakdown.ep_comm_s == doctest::Approx(act.breakdown.ep_comm_s).epsilon(1e-9));  // re-sent inside recompute
  // (less of the gradient reduction shows behind the longer backward)
  CHECK(whole.iteration_time_s - act.iteration_time_s ==
        doctest::Approx(whole.breakdown.recompute_s - act.breakdown.recompute_s -
                        (act.breakdown.dp_comm_s - whole.breakdown.dp_comm_s)).epsilon(0.01));
  CHECK(whole.memory_per_gpu_GiB < act.memory_per_gpu_GiB);
  job.plan.recompute.modules = kRecomputeMlaUpProj;
  CHECK(contains(check_plan(job), "mla_up_proj needs multi-latent attention"));
  job.plan.recompute.modules = kRecomputeSharedExperts;
  CHECK(contains(check_plan(job), "shared_experts needs shared experts"));
  job.plan.recompute.modules = kRecomputeMoeAct;
  job.training.precision = Precision::fp8;  // delayed scaling
  CHECK(contains(check_plan(job), "delayed scaling does not support moe_act and layernorm recompute"));
  job.training.recipe = LowPrecisionRecipe::tensorwise;
  CHECK(check_plan(job) == "");
  job.plan.recompute.modules = kRecomputeMoe;
  job.runtime.moe_a2a_overlap = true;
  CHECK(contains(check_plan(job), "excludes overlapping the MoE all-to-all"));
  job.model = test::catalog().model("llama3-8b");
  job.plan.ep = 1;
  job.runtime.moe_a2a_overlap = false;
  job.plan.recompute.modules = kRecomputeMoeAct;
  CHECK(contains(check_plan(job), "need a mixture-of-experts model"));
}

TEST_CASE("fine-grained activation offloading: copies the layer's own work hides, the rest exposed, Megatron-Core's rules") {
  Job job = test::workload("qwen3-30b-a3b", "dgx-h100-ndr", 256, 4096);
  job.calibration = test::catalog().calibration_or_default(job.cluster.gpu);
  job.plan.dp = 256;
  job.plan.ep = 8;
  job.runtime.moe_grouped_gemm = true;  // TEGroupedMLP: the experts that offload
  const Prediction kept = predict(job);
  job.plan.offload.modules = kOffloadCoreAttn | kOffloadAttnProj | kOffloadExpertFc1;
  REQUIRE(check_plan(job) == "");
  // Over PCIe Gen5 a layer's copies (~0.2 GB at ~55 GB/s) fit in its own compute: the step is as
  // long and needs less memory.
  const Prediction offloaded = predict(job);
  CHECK(offloaded.breakdown.offload_s == 0);
  CHECK(offloaded.iteration_time_s == doctest::Approx(kept.iteration_time_s).epsilon(1e-12));
  CHECK(offloaded.memory_per_gpu_GiB < kept.memory_per_gpu_GiB - 1);
  // Over a 1 GB/s link they do not: the waits are the whole difference, forward and backward, and
  // each layer waits the copy's time less its own work.
  job.cluster.gpu.pcie_GBps = 1;
  const Prediction slow = predict(job);
  CHECK(slow.breakdown.offload_s > 0.05 * slow.iteration_time_s);
  // (Less of the gradient reduction shows once the backward waits on copies: it overlaps a longer
  // backward.)
  CHECK(slow.iteration_time_s - kept.iteration_time_s ==
        doctest::Approx(slow.breakdown.offload_s - (kept.breakdown.dp_comm_s - slow.breakdown.dp_comm_s)).epsilon(0.01));
  CHECK(test::breakdown_sum(slow.breakdown) == doctest::Approx(slow.iteration_time_s).epsilon(1e-9));
  const double copy = job.model.num_layers * static_cast<double>(job.num_micro_batches()) *
                      layer_offloaded_bytes(job, RecomputeGranularity::none, LayerKind{true, false}) / (1e9 * 0.86);
  CHECK(slow.breakdown.offload_s < 2 * copy);
  const TimeBreakdown& k = kept.breakdown;
  CHECK(slow.breakdown.offload_s > 2 * copy - (k.compute_s + k.recompute_s + k.tp_comm_s + k.ep_comm_s + k.host_s));
  // Megatron-Core's checks (TransformerConfig.__post_init__).
  job.plan.offload.modules = kOffloadAttnProj;
  CHECK(contains(check_plan(job), "attn_proj needs core_attn"));
  job.plan.offload.modules = kOffloadFusedGroupMlp | kOffloadMoeAct;
  CHECK(contains(check_plan(job), "cannot be combined with expert_fc1 or moe_act"));
  job.plan.offload.modules = kOffloadExpertFc1;
  job.plan.recompute.granularity = RecomputeGranularity::selective;
  job.plan.recompute.modules = kRecomputeMoe;
  CHECK(contains(check_plan(job), "while recomputing the whole block"));
  job.plan.recompute = RecomputeSpec{};
  // Megatron's default SequentialMLP experts are plain MLPs, which offload nothing.
  job.runtime.moe_grouped_gemm = false;
  CHECK(contains(check_plan(job), "its default SequentialMLP offloads nothing"));
  job.plan.offload.modules = kOffloadCoreAttn;
  CHECK(check_plan(job) == "");
  // The fused grouped MLP is Transformer Engine's op fuser: no expert tensor parallelism.
  job.runtime.moe_grouped_gemm = true;
  job.plan.offload.modules = kOffloadFusedGroupMlp;
  CHECK(check_plan(job) == "");
  job.plan.tp = 2;
  job.plan.dp = 128;
  job.plan.etp = 2;
  job.plan.sequence_parallel = true;
  CHECK(contains(check_plan(job), "no expert tensor parallelism"));
  job.plan.etp = 1;
  CHECK(check_plan(job) == "");
  job.model.activation = Activation::gelu;
  CHECK(contains(check_plan(job), "fuses only SwiGLU, quick GeGLU and squared ReLU"));
  job.model.activation = Activation::swiglu;
  job.plan.offload.modules = kOffloadExpertFc1;
  job.runtime.framework = Framework::deepspeed;
  CHECK(contains(check_plan(job), "Megatron-Core's"));
  job.runtime.framework = Framework::megatron;
  job.model = test::catalog().model("llama3-8b");
  job.plan.ep = 1;
  CHECK(contains(check_plan(job), "need a mixture-of-experts model"));
}

TEST_CASE("multi-token prediction: Megatron-LM's position embedding rule, YaRN outside MLA included") {
  Job job = test::workload("gpt-oss-120b", "dgx-b200-ndr", 64, 4096);
  job.plan.tp = 8;
  job.plan.dp = 8;
  job.plan.ep = 8;
  job.plan.sequence_parallel = true;
  REQUIRE(check_plan(job) == "");
  job.model.mtp_layers = 1;  // GPT-OSS's YaRN is --position-embedding-type yarn, which MTP refuses
  CHECK(contains(check_plan(job), "YaRN positions outside multi-latent attention"));
  job = test::workload("deepseek-v3", "dgx-h100-ndr", 1024, 4096);  // YaRN inside MLA, with its MTP module
  job.plan.tp = 2;
  job.plan.pp = 16;
  job.plan.dp = 32;
  job.plan.ep = 64;
  job.plan.sequence_parallel = true;
  CHECK_FALSE(contains(check_plan(job), "YaRN"));
}

TEST_CASE("layer-level CPU offloading: the first layers' activations on the host, the copies hidden by the pass or waited for") {
  Job job = test::workload("llama3-8b", "dgx-h100-ndr", 8, 8192);
  job.calibration = test::catalog().calibration_or_default(job.cluster.gpu);
  job.training.global_batch_size = 64;
  job.plan.tp = 2;
  job.plan.dp = 4;
  job.plan.sequence_parallel = true;
  job.plan.distributed_optimizer = true;
  const Prediction kept = predict(job);
  job.plan.cpu_offload_layers = 8;
  REQUIRE(check_plan(job) == "");
  const Prediction few = predict(job);
  // Eight of the 32 layers' activations leave the GPU but the layer being reloaded.
  const double layer = layer_activation_bytes(job, RecomputeGranularity::none, LayerKind{});
  CHECK(cpu_offloaded_bytes(job).total == doctest::Approx(8 * layer).epsilon(1e-12));
  CHECK((kept.stages[0].memory.activations_GiB - few.stages[0].memory.activations_GiB) * 1024.0 * 1024 * 1024 ==
        doctest::Approx(7 * layer).epsilon(1e-9));
  // Their copies (~4 GB each way per micro-batch at ~55 GB/s) hide behind the 32 layers' pass; 30
  // layers' do not, and the pass waits for the rest.
  CHECK(few.breakdown.offload_s == 0);
  CHECK(few.iteration_time_s == doctest::Approx(kept.iteration_time_s).epsilon(1e-12));
  job.plan.cpu_offload_layers = 30;
  const Prediction most = predict(job);
  CHECK(most.breakdown.offload_s > 0);
  CHECK(most.iteration_time_s - kept.iteration_time_s == doctest::Approx(most.breakdown.offload_s).epsilon(0.01));
  CHECK(test::breakdown_sum(most.breakdown) == doctest::Approx(most.iteration_time_s).epsilon(1e-9));
  // On the host: the offloaded layers of the micro-batch in flight, against the node's host memory
  // over its GPUs (DGX H100: 2048 GiB over 8).
  CHECK(most.stages[0].memory.host_GiB * 1024.0 * 1024 * 1024 == doctest::Approx(cpu_offloaded_bytes(job).total).epsilon(1e-9));
  CHECK(job.cluster.host_memory_GiB_per_gpu() == 256);
  CHECK(std::any_of(most.notes.begin(), most.notes.end(), [](const std::string& n) { return contains(n, "of the 256.0 GiB its node has per GPU"); }));
  job.cluster.host_memory_GiB_per_node = 8;  // 1 GiB per GPU: the offloaded layers do not fit
  const Prediction tight = predict(job);
  CHECK_FALSE(tight.feasible);
  CHECK(contains(tight.reason, "GiB of host memory per GPU for offloaded activations and optimizer state > 1.0 GiB"));
  job.cluster.host_memory_GiB_per_node = 0;  // not known: said, not checked
  const Prediction unknown = predict(job);
  CHECK(unknown.feasible);
  CHECK(std::any_of(unknown.notes.begin(), unknown.notes.end(), [](const std::string& n) { return contains(n, "so whether it fits is not checked"); }));
  // Megatron-Core's rules.
  job.plan.cpu_offload_layers = 32;
  CHECK(contains(check_plan(job), "fewer layers than the model's 32"));
  job.plan.cpu_offload_layers = 8;
  job.plan.recompute.granularity = RecomputeGranularity::selective;
  CHECK(contains(check_plan(job), "does not work when activation recomputation is enabled"));
  job.plan.recompute = RecomputeSpec{};
  job.plan.offload.modules = kOffloadCoreAttn;
  CHECK(contains(check_plan(job), "fine-grained activation offloading cannot be enabled with CPU offloading"));
  job.plan.offload.modules = 0;
  job.runtime.cuda_graph_modules = kCudaGraphAttn;
  CHECK(contains(check_plan(job), "CUDA graphs are not supported with CPU offloading"));
  job.runtime.cuda_graph_modules = 0;
  job.plan.pp = 2;
  job.plan.dp = 2;
  CHECK(contains(check_plan(job), "no support for pipeline parallelism with CPU offloading"));
}

TEST_SUITE("costmodel") {
TEST_CASE("MFU is against the peak of the format the GEMMs run in: fp4's for NVFP4, fp8's for MXFP8") {
  Job job = test::workload("llama3-8b", "dgx-b200", 64, 4096);
  job.training.precision = Precision::fp8;
  job.training.recipe = LowPrecisionRecipe::mxfp8;
  const Prediction mx = predict(job);
  job.training.recipe = LowPrecisionRecipe::nvfp4;
  const Prediction fp4 = predict(job);
  REQUIRE(mx.iteration_time_s > 0);
  REQUIRE(fp4.iteration_time_s > 0);
  REQUIRE(job.cluster.gpu.fp4_tflops > job.cluster.gpu.fp8_tflops);
  // The same model FLOPs per step: MFU x time x peak agrees between the two.
  CHECK(fp4.mfu * fp4.iteration_time_s * job.cluster.gpu.fp4_tflops ==
        doctest::Approx(mx.mfu * mx.iteration_time_s * job.cluster.gpu.fp8_tflops));
}

TEST_CASE("fp8 attention: faster attention, fp8 K/V on the CP ring, smaller saved inputs, refused where it cannot run") {
  Job job = test::workload("llama3-8b", "dgx-h100", 64, 32768);
  job.calibration = test::catalog().calibration_or_default(job.cluster.gpu);
  job.training.precision = Precision::fp8;
  job.training.recipe = LowPrecisionRecipe::delayed;
  job.plan.tp = 2;
  job.plan.cp = 4;
  job.plan.dp = 1;
  job.plan.sequence_parallel = true;
  job.plan.distributed_optimizer = true;
  REQUIRE(check_plan(job).empty());
  const Prediction bf16 = predict(job);
  job.runtime.fp8_attention = true;
  REQUIRE(check_plan(job).empty());
  const Prediction fp8 = predict(job);
  REQUIRE(bf16.iteration_time_s > 0);
  REQUIRE(fp8.iteration_time_s > 0);
  CHECK(fp8.breakdown.compute_s < bf16.breakdown.compute_s * 0.95);  // attention is most of a 32k-token layer
  CHECK(fp8.iteration_time_s < bf16.iteration_time_s);
  CHECK(fp8.stages[0].memory.activations_GiB < bf16.stages[0].memory.activations_GiB);
  CHECK(std::any_of(fp8.notes.begin(), fp8.notes.end(), [](const std::string& n) { return n.starts_with("fp8 attention:"); }));
  CHECK_FALSE(std::any_of(bf16.notes.begin(), bf16.notes.end(), [](const std::string& n) { return n.starts_with("fp8 attention:"); }));
  // Where Transformer Engine has no fp8 attention, the plan is refused rather than timed in bf16.
  auto refusal_with = [&](auto change) {
    Job changed = job;
    change(changed);
    return check_plan(changed);
  };
  CHECK(refusal_with([](Job& j) { j.training.recipe = LowPrecisionRecipe::blockwise; }).find("no fp8 attention") != std::string::npos);
  CHECK(refusal_with([](Job& j) { j.training.precision = Precision::bf16; }).find("fp8 attention needs an fp8") != std::string::npos);
  CHECK(refusal_with([](Job& j) { j.runtime.attention_kernel = AttentionKernel::flash2; }).find("cuDNN") != std::string::npos);
  CHECK(refusal_with([](Job& j) { j.runtime.framework = Framework::fsdp; }).find("Transformer Engine") != std::string::npos);
  CHECK(refusal_with([](Job& j) { j.model.sliding_window = 4096; }).find("needs Blackwell") != std::string::npos);
}
}

TEST_CASE("check_plan: Megatron-Core's CUDA graph rules") {
  Job moe = test::qwen3_30b_ep8_job();  // dropless alltoall dispatch, every layer MoE
  moe.plan.recompute.granularity = RecomputeGranularity::none;
  moe.runtime.cuda_graph_modules = kCudaGraphAttn | kCudaGraphMoeRouter | kCudaGraphMoePreprocess;
  CHECK(check_plan(moe).empty());
  moe.runtime.cuda_graph_modules = kCudaGraphMoe | kCudaGraphMoeRouter;
  CHECK(contains(check_plan(moe), "both moe and moe_router"));
  moe.runtime.cuda_graph_modules = kCudaGraphMoePreprocess;
  CHECK(contains(check_plan(moe), "moe_preprocess is only supported with moe_router"));
  moe.runtime.cuda_graph_modules = kCudaGraphAttn | kCudaGraphMlp;
  CHECK(contains(check_plan(moe), "every layer of the model is an MoE layer"));
  // The whole MoE block is captured only with drop-and-pad experts; a capacity factor without the
  // padding leaves the alltoall dispatcher's preprocessing on the host.
  moe.runtime.cuda_graph_modules = kCudaGraphMoe;
  CHECK(contains(check_plan(moe), "only with drop-and-pad experts"));
  moe.runtime.moe_capacity_factor = 1.0;
  moe.runtime.moe_pad_to_capacity = true;
  CHECK(check_plan(moe).empty());
  moe.runtime.moe_pad_to_capacity = false;
  moe.runtime.cuda_graph_modules = kCudaGraphMoeRouter | kCudaGraphMoePreprocess;
  CHECK(contains(check_plan(moe), "moe_preprocess cannot capture the alltoall dispatcher's preprocessing"));
  moe.runtime.moe_capacity_factor = 0;
  moe.plan.recompute.granularity = RecomputeGranularity::selective;
  moe.plan.recompute.modules = kRecomputeMoe;
  CHECK(contains(check_plan(moe), "recomputing whole MoE blocks does not run with the moe_router CUDA graph"));
  // The whole layer (Megatron's empty module list) names no module: the module rules pass it.
  moe.runtime.cuda_graph_modules = kCudaGraphWholeLayer;
  CHECK(check_plan(moe).empty());

  Job dense = llama3_70b_job();  // no dropout
  dense.runtime.cuda_graph_modules = kCudaGraphMoeRouter;
  CHECK(contains(check_plan(dense), "need a mixture-of-experts model"));
  dense.runtime.cuda_graph_modules = kCudaGraphWholeLayer;
  CHECK(check_plan(dense).empty());
  dense.plan.recompute.granularity = RecomputeGranularity::full;
  CHECK(contains(check_plan(dense), "full recompute runs only with a full-iteration CUDA graph"));
  dense.runtime.cuda_graph_modules = kCudaGraphWholeLayer | kCudaGraphFullIteration;
  CHECK(check_plan(dense).empty());
  dense.plan.recompute.granularity = RecomputeGranularity::none;
  dense.plan.offload.modules = kOffloadCoreAttn;
  CHECK(contains(check_plan(dense), "full-iteration CUDA graph needs a bound on in-flight offloads"));

  // GPT-3 trains with dropout: a graph replays its random numbers, so recomputing dropout inside one
  // is refused, and outside one is fine.
  Job gpt = test::gpt3_175b_job();  // selective recompute of the attention core
  gpt.runtime.cuda_graph_modules = kCudaGraphWholeLayer;
  CHECK(contains(check_plan(gpt), "attention dropout does not run with graphed attention recomputation"));
  gpt.runtime.cuda_graph_modules = kCudaGraphMlp;
  CHECK(check_plan(gpt).empty());
  gpt.plan.recompute.modules = kRecomputeMlp;
  CHECK(contains(check_plan(gpt), "hidden dropout does not run with graphed MLP or MoE recomputation"));
  gpt.runtime.framework = Framework::deepspeed;  // Megatron-Core's rules bind Megatron-Core
  CHECK(check_plan(gpt).empty());
}
