// The quality suite (quality_cases.h) without its heavy cases: the bottleneck search must reach
// 99% of the exhaustive grid's best predicted throughput. The full suite with timings runs in
// bench/bench_search.cpp (BM_Quality).
#include <doctest/doctest.h>

#include "costmodel/predictor.h"
#include "quality_cases.h"
#include "search/searcher.h"
#include "test_util.h"

using namespace strata;

TEST_SUITE("search") {
TEST_CASE("quality: bottleneck search >= 99% of the exhaustive optimum") {
  const AnalyticalCostModel model;
  for (const quality::Case& c : quality::cases()) {
    if (c.heavy) continue;
    INFO(c.name);
    const Job w = quality::workload(c, test::catalog(), STRATA_SOURCE_DIR);
    SearchOptions o;
    o.num_gpus = c.gpus;
    o.algorithm = SearchAlgorithm::exhaustive;
    const SearchResult ex = search_plans(w, o, model);
    o.algorithm = SearchAlgorithm::bottleneck;
    const SearchResult bn = search_plans(w, o, model);
    REQUIRE(ex.found);
    REQUIRE(bn.found);
    const double ratio = bn.best.prediction.tokens_per_sec_per_gpu / ex.best.prediction.tokens_per_sec_per_gpu;
    MESSAGE(c.name, ": exhaustive ", ex.best.prediction.tokens_per_sec_per_gpu, " tokens/s/GPU, bottleneck ",
            bn.best.prediction.tokens_per_sec_per_gpu, " (", ratio, ")");
    CHECK(ratio >= 0.99);
  }
}
}
