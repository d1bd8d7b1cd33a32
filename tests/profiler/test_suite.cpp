#include <doctest/doctest.h>

#include <set>

#include "costmodel/layer_ops.h"
#include "profiler/suite.h"
#include "test_util.h"

using namespace strata;
using namespace strata::profiler;

TEST_SUITE("profiler") {
TEST_CASE("kernel_suite: GEMM shapes are exactly those decoder_layer_ops produces for the model and tp") {
  SuiteOptions o;
  o.models = {"llama3-70b"};
  o.tp = {8};
  o.seq = {8192};
  o.precisions = {"bf16"};
  auto ops = kernel_suite(test::catalog(), o);
  LayerShape s;
  s.seq = 8192;
  s.tp = 8;
  s.sequence_parallel = true;
  LayerOps layer = decoder_layer_ops(test::catalog().model("llama3-70b"), s);
  for (const auto& op : layer.forward) {
    if (op.kind != OpKind::gemm) continue;
    bool found = false;
    for (const auto& l : ops) found = found || (l.kind == "gemm" && l.name == op.name && l.m == op.m && l.n == op.n && l.k == op.k);
    CHECK_MESSAGE(found, op.name);
  }
  // qkv of Llama-3-70B at tp 8: 8192 tokens x (8192 + 2*1024)/8 x 8192.
  bool qkv = false;
  for (const auto& l : ops) qkv = qkv || (l.name == "qkv_proj" && l.m == 8192 && l.n == 1280 && l.k == 8192);
  CHECK(qkv);
  // Own kernels: RMSNorm and SwiGLU for Llama; softmax and batched score GEMMs for attention.
  std::set<std::string> names;
  for (const auto& l : ops) names.insert(l.name);
  for (const char* n : {"rmsnorm", "swiglu", "residual_add", "softmax", "attn_scores", "attn_values", "fc1", "fc2", "out_proj"})
    CHECK_MESSAGE(names.count(n) == 1, n);
  CHECK(names.count("layernorm") == 0);
}

TEST_CASE("kernel_suite: deduplicated, quick is smaller than full, fp8 only where supported") {
  SuiteOptions quick;
  quick.quick = true;
  auto q = kernel_suite(test::catalog(), quick);
  std::set<std::tuple<std::string, std::string, double, double, double, double, double>> keys;
  for (const auto& l : q) keys.insert({l.name, l.precision, l.m, l.n, l.k, l.batch, l.bytes});
  CHECK(keys.size() == q.size());
  SuiteOptions full;
  auto f = kernel_suite(test::catalog(), full);
  CHECK(f.size() > q.size());
  quick.fp8_supported = false;
  for (const auto& l : kernel_suite(test::catalog(), quick)) CHECK(l.precision != "fp8");
  bool any_fp8 = false;
  for (const auto& l : q) any_fp8 = any_fp8 || l.precision == "fp8";
  CHECK(any_fp8);
}

TEST_CASE("collective_suite / memcpy_suite: collectives need two GPUs") {
  CHECK(collective_suite(true, 1).empty());
  auto c = collective_suite(true, 8);
  CHECK(c.size() == 9);
  CHECK(c[0].ranks == 8);
  CHECK(memcpy_suite(true).size() == 9);
}
}
