#include <doctest/doctest.h>

#include <fmt/format.h>

#include "profiler/classify.h"
#include "profiler/profiler_test_util.h"
#include "test_util.h"

using namespace strata;
using namespace strata::profiler;

namespace {
KernelRecord kernel(int op, int inst, std::uint64_t start, double us, int ctas, int threads = 256, int regs = 128, int smem = 0) {
  KernelRecord r;
  r.name = fmt::format("k{}", op);
  r.op_index = op;
  r.op_instance = inst;
  r.start_ns = start;
  r.end_ns = start + static_cast<std::uint64_t>(us * 1000);
  r.grid = {ctas, 1, 1};
  r.block = {threads, 1, 1};
  r.registers_per_thread = regs;
  r.dynamic_shared_bytes = smem;
  return r;
}
}  // namespace

TEST_SUITE("profiler") {
TEST_CASE("ctas_per_sm: the tightest of threads, registers, shared memory and the block limit") {
  DeviceInfo h100 = profiler::test::device("H100", 132);  // 2048 threads, 64K registers, 228 KiB, 32 CTAs
  CHECK(ctas_per_sm(kernel(0, 0, 0, 1, 1, 256, 32), h100) == 8);               // threads: 2048/256
  CHECK(ctas_per_sm(kernel(0, 0, 0, 1, 1, 128, 255), h100) == 2);              // registers: 65536/(255*128)
  CHECK(ctas_per_sm(kernel(0, 0, 0, 1, 1, 384, 168, 200 * 1024), h100) == 1);  // shared memory
  CHECK(ctas_per_sm(kernel(0, 0, 0, 1, 1, 32, 16), h100) == 32);               // block limit
}

TEST_CASE("classify: from the problem's tiles and the roofline ridge, never from the launched grid") {
  const GpuSpec h100 = strata::test::catalog().gpu("h100-sxm");  // 132 SMs, ridge ~295 bf16 FLOP/byte
  // 8192 x 8192 output: 2048 tiles of 256x128, intensity far above the ridge.
  OpLabel big = profiler::test::gemm_label("fc1", "gemm", 8192, 8192, 8192, 1, 2.0 * 8192 * 8192 * 8192, 3 * 2.0 * 8192 * 8192);
  // 1024 x 1024 output: 32 tiles of 256x128 (64 of 128x128), fewer than the SMs.
  OpLabel small = profiler::test::gemm_label("fc1", "gemm", 1024, 1024, 8192, 1, 2.0 * 1024 * 1024 * 8192, 2.0 * (2 * 1024 * 8192 + 1024 * 1024));
  // 65536 x 8 output (a router): many tiles, 16 FLOP/byte.
  OpLabel thin = profiler::test::gemm_label("router", "gemm", 65536, 8, 8192, 1, 2.0 * 65536 * 8 * 8192, 2.0 * (65536 * 8192 + 8192 * 8 + 65536 * 8));
  OpLabel norm = profiler::test::label("layernorm", "elementwise", 1e8, 1e8);
  OpLabel tiny = profiler::test::label("layernorm", "elementwise", 1e5, 1e5);
  OpLabel attn = profiler::test::gemm_label("flash_attention_bwd", "attention", 4096, 4096, 128, 32, 1e12, 1e8);
  CHECK(classify(big, h100) == KernelClass::compute_bound);
  CHECK(classify(small, h100) == KernelClass::under_utilized);
  CHECK(classify(thin, h100) == KernelClass::dram_bound);
  CHECK(classify(norm, h100) == KernelClass::dram_bound);
  CHECK(classify(tiny, h100) == KernelClass::under_utilized);
  CHECK(classify(attn, h100) == KernelClass::attention_bwd);
}

TEST_CASE("build_samples: kernels of one invocation add up, the sample is the median over invocations") {
  GpuSpec gpu = strata::test::catalog().gpu("h100-sxm");
  ProfileDb p;
  p.devices.push_back(profiler::test::device(gpu.name, 132));
  p.ops.push_back(profiler::test::gemm_label("fc1", "gemm", 8192, 28672, 8192, 1, 2.0 * 8192 * 28672 * 8192,
                                     2.0 * (8192.0 * 8192 + 8192.0 * 28672 + 8192.0 * 28672)));
  p.ops.push_back(profiler::test::label("all_reduce", "collective", 0, 1e9));
  p.ops.back().ranks = 8;
  // Three invocations of a split GEMM (main kernel + reduction) with times 600, 500 and 700 us.
  for (int i = 0; i < 3; ++i) {
    double main_us = 590 + (i == 1 ? -100 : i == 2 ? 100 : 0);
    p.records.push_back(kernel(0, i, 1000000 * i, main_us, 1792, 384, 168, 200 * 1024));
    p.records.push_back(kernel(0, i, 1000000 * i + 700000, 10, 64));
  }
  p.records.push_back(kernel(1, 0, 9000000, 1000, 32));
  p.records.push_back(kernel(-1, -1, 0, 5, 1));  // unlabelled: ignored
  auto s = build_samples(p, gpu, p.devices.front());
  REQUIRE(s.size() == 1);
  CHECK(s[0].time_s == doctest::Approx(600e-6));
  CHECK(s[0].instances == 3);
  CHECK(s[0].kernels_per_instance == 2);
  CHECK(s[0].ctas == 1792);
  CHECK(s[0].ctas_per_sm == 1);
  CHECK(s[0].waves == doctest::Approx(1792.0 / 132));
  CHECK(s[0].cls == KernelClass::compute_bound);
  CHECK(s[0].flops_fraction == doctest::Approx(p.ops[0].flops / 600e-6 / 989.4e12));

  auto c = build_collective_samples(p);
  REQUIRE(c.size() == 1);
  CHECK(c[0].time_s == doctest::Approx(1e-3));
  CHECK(c[0].busbw_GBps == doctest::Approx(1e9 / 1e-3 * 2 * 7 / 8 / 1e9));  // nccl-tests all-reduce busbw
}

TEST_CASE("to_costmodel_op: the label becomes the op the kernel model times") {
  OpLabel l = profiler::test::gemm_label("flash_attention_bwd", "attention", 4096, 4096, 128, 8, 1e12, 1e8);
  Op op = to_costmodel_op(l);
  CHECK(op.kind == OpKind::attention);
  CHECK(std::string(op.name) == "flash_attention_bwd");
  CHECK(op.batch == 8);
  CHECK(op.flops == 1e12);
}
}
