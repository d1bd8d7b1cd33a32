#include <doctest/doctest.h>

#include "planner/megatron_args.h"
#include "test_util.h"

using namespace strata;

TEST_SUITE("planner") {
TEST_CASE("megatron_args: golden flags of the published GPT-3 175B plan") {
  const Job job = test::gpt3_175b_job();
  CHECK(join_args(megatron_args(job)) ==
        "--num-layers 96 --hidden-size 12288 --ffn-hidden-size 49152 --num-attention-heads 96 "
        "--position-embedding-type learned_absolute --vocab-size 50257 --micro-batch-size 1 --global-batch-size 1536 "
        "--seq-length 2048 --max-position-embeddings 2048 --tensor-model-parallel-size 8 --pipeline-model-parallel-size 16 "
        "--sequence-parallel --recompute-granularity selective --use-distributed-optimizer --overlap-grad-reduce "
        "--overlap-param-gather --bf16");
}

TEST_CASE("megatron_args: interleaving, context parallelism, partial full recompute") {
  Job job = test::gpt3_175b_job();
  job.plan.vpp = 2;
  job.plan.cp = 2;
  job.plan.dp = 4;
  job.plan.recompute = {RecomputeGranularity::full, 2};
  const std::string s = join_args(megatron_args(job));
  CHECK(s.find("--context-parallel-size 2") != std::string::npos);
  CHECK(s.find("--num-layers-per-virtual-pipeline-stage 3") != std::string::npos);
  CHECK(s.find("--recompute-granularity full --recompute-method block --recompute-num-layers 2") != std::string::npos);
}

TEST_CASE("megatron_args: uneven stages, as Megatron-LM spells them") {
  Job job = test::gpt3_175b_job();
  SUBCASE("first and last stage differ: --decoder-first/last-pipeline-num-layers") {
    job.plan.stage_layers = {5, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 7};
    const std::string s = join_args(megatron_args(job));
    CHECK(s.find("--decoder-first-pipeline-num-layers 5 --decoder-last-pipeline-num-layers 7") != std::string::npos);
    CHECK(s.find("--pipeline-model-parallel-layout") == std::string::npos);
  }
  SUBCASE("a middle stage differs: --pipeline-model-parallel-layout") {
    job.plan.stage_layers = {6, 6, 6, 5, 7, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6};
    const std::string s = join_args(megatron_args(job));
    CHECK(s.find("--pipeline-model-parallel-layout 'Et*6|t*6|t*6|t*5|t*7|t*6|t*6|t*6|t*6|t*6|t*6|t*6|t*6|t*6|t*6|t*6L'") !=
          std::string::npos);
  }
}
}
