#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>

#include "costmodel/job.h"

using namespace strata;

TEST_SUITE("costmodel") {
TEST_CASE("resolve_stage_layers: explicit layers as given, else an even split with the remainder in front") {
  ParallelPlan p;
  p.pp = 4;
  CHECK(resolve_stage_layers(p, 32) == std::vector<int>{8, 8, 8, 8});
  CHECK(resolve_stage_layers(p, 30) == std::vector<int>{8, 8, 7, 7});
  p.stage_layers = {7, 9, 8, 6};
  CHECK(resolve_stage_layers(p, 30) == std::vector<int>{7, 9, 8, 6});
}

TEST_CASE("chunk_layers: whole layers per model chunk, remainders away from the embedding and loss chunks") {
  ParallelPlan p;
  p.pp = 16;
  p.vpp = 2;
  // Llama 3.1 405B's layout: 126 layers, one fewer on the first and the last stage.
  p.stage_layers = std::vector<int>(16, 8);
  p.stage_layers.front() = 7;
  p.stage_layers.back() = 7;
  CHECK(chunk_layers(p, 0, 7, 0, 0) == 3);   // holds the embedding: the short chunk
  CHECK(chunk_layers(p, 0, 7, 1, 0) == 4);
  CHECK(chunk_layers(p, 15, 7, 0, 0) == 4);
  CHECK(chunk_layers(p, 15, 7, 1, 0) == 3);  // holds the output layer: the short chunk
  CHECK(chunk_layers(p, 5, 8, 0, 0) == 4);
  CHECK(chunk_layers(p, 5, 8, 1, 0) == 4);
  // Every stage's chunks add up to its layers, for any split and chunk count.
  for (int v : {1, 2, 3, 4, 5}) {
    p.vpp = v;
    for (int layers : {5, 6, 7, 8, 9, 13}) {
      for (int s : {0, 7, 15}) {
        int sum = 0, lo = layers, hi = 0;
        for (int c = 0; c < v; ++c) {
          const int n = chunk_layers(p, s, layers, c, 0);
          sum += n;
          lo = std::min(lo, n);
          hi = std::max(hi, n);
        }
        CAPTURE(v);
        CAPTURE(layers);
        CAPTURE(s);
        CHECK(sum == layers);
        CHECK(hi - lo <= 1);  // as even as whole layers allow
      }
    }
  }
  // A middle stage gives remainder layers to its first chunks.
  p.vpp = 3;
  CHECK(chunk_layers(p, 4, 7, 0, 0) == 3);
  CHECK(chunk_layers(p, 4, 7, 1, 0) == 2);
  CHECK(chunk_layers(p, 4, 7, 2, 0) == 2);
}
TEST_CASE("chunk_layers: an MTP model's last chunk gives up layers under an explicit layout, not under the even split") {
  // DeepSeek-V3 (61 layers, 1 MTP layer) at pp 16 x vpp 2: "Et|(tt|)*30mL", Megatron-Bridge's layout.
  ParallelPlan p;
  p.pp = 16;
  p.vpp = 2;
  p.stage_layers = standard_stage_layers(61, 16, 2, 1);
  REQUIRE(p.stage_layers.front() == 3);
  REQUIRE(p.stage_layers.back() == 2);
  CHECK(chunk_layers(p, 0, 3, 0, 1) == 1);
  CHECK(chunk_layers(p, 0, 3, 1, 1) == 2);
  CHECK(chunk_layers(p, 7, 4, 0, 1) == 2);
  CHECK(chunk_layers(p, 15, 2, 0, 1) == 2);
  CHECK(chunk_layers(p, 15, 2, 1, 1) == 0);  // the MTP layer and the loss alone
  CHECK(chunk_layers(p, 15, 2, 1, 0) == 1);  // without MTP the loss chunk keeps its layer
  // pp 8 x vpp 4, the same layout: the last rank runs tt|tt|tt|mL.
  p.pp = 8;
  p.vpp = 4;
  p.stage_layers = standard_stage_layers(61, 8, 4, 1);
  REQUIRE(p.stage_layers.back() == 6);
  for (int c = 0; c < 3; ++c) CHECK(chunk_layers(p, 7, 6, c, 1) == 2);
  CHECK(chunk_layers(p, 7, 6, 3, 1) == 0);
  // Every split adds up, and counting the embedding, the loss and the MTP layers as layers no
  // chunk carries two layers' worth more than another unless it holds no decoder layer.
  for (int mtp : {0, 1, 2, 3})
    for (int v : {2, 3, 4})
      for (int layers : {2, 3, 5, 6, 8, 11}) {
        p.vpp = v;
        int sum = 0, lo = 1 << 20, hi = 0, hi_layers = 0;
        for (int c = 0; c < v; ++c) {
          const int n = chunk_layers(p, 7, layers, c, mtp);
          const int load = n + (c == v - 1 ? 1 + mtp : 0);
          sum += n;
          lo = std::min(lo, load);
          if (load > hi) {
            hi = load;
            hi_layers = n;
          }
        }
        CAPTURE(mtp);
        CAPTURE(v);
        CAPTURE(layers);
        CHECK(sum == layers);
        CHECK((hi - lo <= 1 || hi_layers == 0));
      }
  // Equal stages run Megatron's even split (--num-layers-per-virtual-pipeline-stage), MTP or not.
  p.pp = 8;
  p.vpp = 2;
  p.stage_layers.clear();
  CHECK(chunk_layers(p, 7, 8, 0, 1) == 4);
  CHECK(chunk_layers(p, 7, 8, 1, 1) == 4);
}
TEST_CASE("resolved_attention_kernel: Transformer Engine's choice by GPU, unless the run names one") {
  GpuSpec hopper, ampere, blackwell;
  hopper.architecture = "hopper";
  ampere.architecture = "ampere";
  blackwell.architecture = "blackwell";
  RuntimeOptions rt;  // Megatron, automatic
  CHECK(resolved_attention_kernel(rt, hopper) == AttentionKernel::cudnn);
  CHECK(resolved_attention_kernel(rt, blackwell) == AttentionKernel::cudnn);
  CHECK(resolved_attention_kernel(rt, ampere) == AttentionKernel::flash2);
  rt.framework = Framework::fsdp;  // flash-attn, whatever the GPU
  CHECK(resolved_attention_kernel(rt, hopper) == AttentionKernel::flash2);
  rt.attention_kernel = AttentionKernel::cudnn;
  CHECK(resolved_attention_kernel(rt, ampere) == AttentionKernel::cudnn);
  rt.framework = Framework::megatron;
  rt.attention_kernel = AttentionKernel::flash2;
  CHECK(resolved_attention_kernel(rt, hopper) == AttentionKernel::flash2);
  for (AttentionKernel k : {AttentionKernel::automatic, AttentionKernel::flash2, AttentionKernel::cudnn})
    CHECK(attention_kernel_from_string(to_string(k)) == k);
  CHECK_FALSE(attention_kernel_from_string("fa3").has_value());
}

TEST_CASE("padded_vocab_size: Megatron pads to a multiple of 128 * tp, FSDP keeps the model's vocabulary") {
  Job job;
  job.model.vocab_size = 50257;  // GPT-2
  job.plan.tp = 8;
  CHECK(padded_vocab_size(job) == 51200);  // the V of Narayanan et al. 2021 for GPT models at tp=8
  job.plan.tp = 1;
  CHECK(padded_vocab_size(job) == 50304);
  job.runtime.framework = Framework::deepspeed;  // Megatron-DeepSpeed keeps Megatron's padding
  CHECK(padded_vocab_size(job) == 50304);
  job.runtime.vocab_divisor = 1;
  CHECK(padded_vocab_size(job) == 50257);
  job.runtime.vocab_divisor = 128;
  job.runtime.framework = Framework::fsdp;
  CHECK(padded_vocab_size(job) == 50257);
  job.runtime.framework = Framework::megatron;
  job.model.vocab_size = 128256;  // Llama 3: a multiple of 128, not of 128 * 8
  job.plan.tp = 8;
  CHECK(padded_vocab_size(job) == 129024);
  job.model.vocab_size = 32000;   // Llama 2 at tp=2: already a multiple of 256
  job.plan.tp = 2;
  CHECK(padded_vocab_size(job) == 32000);
}

}

TEST_SUITE("costmodel") {
TEST_CASE("standard_stage_layers: embedding and loss counted as layers when the layers do not divide") {
  // Llama 3.1 405B: 126 layers, pp 16 x vpp 4 = 64 chunks of 2 with embedding and loss counted.
  const std::vector<int> llama = standard_stage_layers(126, 16, 4);
  REQUIRE(llama.size() == 16);
  CHECK(llama.front() == 7);
  CHECK(llama.back() == 7);
  CHECK(std::count(llama.begin(), llama.end(), 8) == 14);
  // The chunks of the first stage: the embedding chunk holds one layer, the others two.
  ParallelPlan p;
  p.pp = 16;
  p.vpp = 4;
  CHECK(chunk_layers(p, 0, 7, 0, 0) == 1);
  CHECK(chunk_layers(p, 0, 7, 1, 0) == 2);
  CHECK(chunk_layers(p, 15, 7, 3, 0) == 1);
  // 94 layers over pp 8 x vpp 4 (Qwen3-235B): 96 = 32 x 3.
  const std::vector<int> qwen = standard_stage_layers(94, 8, 4);
  REQUIRE(qwen.size() == 8);
  CHECK(qwen.front() == 11);
  CHECK(qwen.back() == 11);
  // Only the loss needed: 95 layers over pp 8 x vpp 4.
  const std::vector<int> one = standard_stage_layers(95, 8, 4);
  REQUIRE(one.size() == 8);
  CHECK(one.front() == 12);
  CHECK(one.back() == 11);
  // Even splits and impossible ones give no layout.
  CHECK(standard_stage_layers(96, 8, 4).empty());
  CHECK(standard_stage_layers(10, 1, 1).empty());
  CHECK(standard_stage_layers(4, 1000000, 1000000).empty());
  // 32 chunks for 32 units: the embedding's and the loss's chunks hold no decoder layer ("E|t|...|t|L").
  CHECK(standard_stage_layers(30, 8, 4) == std::vector<int>{3, 4, 4, 4, 4, 4, 4, 3});
  CHECK(standard_stage_layers(28, 8, 4).empty());  // 30 units for 32 chunks: a middle chunk would be empty
}

TEST_CASE("standard_stage_layers: the balanced layout where neither the embedding nor the loss makes the layers divide") {
  // DeepSeek-V3: 61 layers and one MTP layer over pp 8 x vpp 4. Megatron-Bridge's H100 recipe
  // runs "Et|(tt|)*30mL": the first virtual stage one layer, 30 of two, the last only MTP and loss.
  const std::vector<int> ds = standard_stage_layers(61, 8, 4, 1);
  REQUIRE(ds.size() == 8);
  CHECK(std::accumulate(ds.begin(), ds.end(), 0) == 61);
  CHECK(ds.front() == 7);  // chunks 1, 2, 2, 2
  CHECK(ds.back() == 6);   // chunks 2, 2, 2, 0
  CHECK(std::count(ds.begin(), ds.end(), 8) == 6);
  // pp 16 (vpp 1): 64 units of 4; the first stage 3 layers, the MTP-and-loss stage 2.
  const std::vector<int> ds16 = standard_stage_layers(61, 16, 1, 1);
  REQUIRE(ds16.size() == 16);
  CHECK(ds16.front() == 3);
  CHECK(ds16.back() == 2);
  CHECK(std::accumulate(ds16.begin(), ds16.end(), 0) == 61);
  // Without MTP the last stage takes a layer more and a middle stage gives one up.
  const std::vector<int> k2 = standard_stage_layers(61, 16, 1, 0);
  REQUIRE(k2.size() == 16);
  CHECK(std::accumulate(k2.begin(), k2.end(), 0) == 61);
  CHECK(*std::max_element(k2.begin(), k2.end()) == 4);
  CHECK(k2.back() == 3);
  // 97 over 32 chunks: 99 units, at most 4 per chunk, every stage within one layer of the others
  // once the embedding and the loss are counted.
  const std::vector<int> odd = standard_stage_layers(97, 8, 4);
  REQUIRE(odd.size() == 8);
  CHECK(std::accumulate(odd.begin(), odd.end(), 0) == 97);
  CHECK(*std::max_element(odd.begin(), odd.end()) - *std::min_element(odd.begin(), odd.end()) <= 2);
}
}

TEST_SUITE("costmodel") {
TEST_CASE("interleaved_microbatch_group: pp by default, else the smallest group Megatron-Core accepts") {
  ParallelPlan p;
  p.pp = 4;
  p.vpp = 2;
  CHECK(interleaved_microbatch_group(p, 8) == 4);   // Megatron-Core's default, pp
  CHECK(interleaved_microbatch_group(p, 9) == 5);   // 9 = 4 + 4 + 1: groups of 5 leave 4 >= pp
  CHECK(interleaved_microbatch_group(p, 13) == 7);  // groups of 4, 5, 6 leave 1, 3, 1; of 7, 6
  CHECK(interleaved_microbatch_group(p, 6) == 6);   // one group of all six
  CHECK(interleaved_microbatch_group(p, 3) == 0);   // fewer micro-batches than stages
  p.pp = 8;
  CHECK(interleaved_microbatch_group(p, 36) == 9);  // Megatron-Core would refuse pp=8: last group of 4
  p.microbatch_group = 12;
  CHECK(interleaved_microbatch_group(p, 36) == 12);  // given: taken as it is (check_plan judges it)
  p.vpp = 1;
  CHECK(interleaved_microbatch_group(p, 36) == 36);  // no interleaving: one group
  CHECK(microbatch_group_problem(12, 8, 36) == "");
  CHECK(microbatch_group_problem(10, 8, 36) != "");  // last group of 6 < 8
  CHECK(microbatch_group_problem(37, 8, 36) != "");
}
}

TEST_SUITE("costmodel") {
TEST_CASE("cuda_graph_modules_from_string: Megatron's module names, none listed being the whole layer") {
  CHECK(cuda_graph_modules_from_string("attn moe_router,moe_preprocess") == (kCudaGraphAttn | kCudaGraphMoeRouter | kCudaGraphMoePreprocess));
  CHECK(cuda_graph_modules_from_string("") == kCudaGraphWholeLayer);
  CHECK(cuda_graph_modules_from_string("full") == kCudaGraphWholeLayer);
  CHECK(cuda_graph_modules_from_string("full_iteration") == (kCudaGraphWholeLayer | kCudaGraphFullIteration));
  CHECK(cuda_graph_module_names(kCudaGraphWholeLayer | kCudaGraphFullIteration) == std::vector<std::string>{"full_iteration"});
  CHECK(cuda_graph_module_names(kCudaGraphAttn | kCudaGraphMoeRouter) == std::vector<std::string>{"attn", "moe_router"});
  CHECK(cuda_graph_modules_from_string("attn mamba") == (kCudaGraphAttn | kCudaGraphMamba));
  CHECK_FALSE(cuda_graph_modules_from_string("attn gdn"));
  CHECK(cuda_graph_module_names(kCudaGraphMlp | kCudaGraphAttn) == std::vector<std::string>{"attn", "mlp"});
  CHECK(cuda_graph_module_names(kCudaGraphWholeLayer).empty());
  CHECK(cuda_graph_modules_from_string("") == cuda_graph_modules_from_string("attn mlp moe moe_router moe_preprocess mamba"));
}
}
