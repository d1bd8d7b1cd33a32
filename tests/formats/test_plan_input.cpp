#include <doctest/doctest.h>

#include "formats/plan_input.h"

using namespace strata;

TEST_SUITE("formats") {
TEST_CASE("parse_recompute") {
  CHECK(parse_recompute("none") == RecomputeGranularity::none);
  CHECK(parse_recompute("off") == RecomputeGranularity::none);
  CHECK(parse_recompute("Selective") == RecomputeGranularity::selective);
  CHECK(parse_recompute("full") == RecomputeGranularity::full);
  CHECK(parse_recompute("full (activation checkpointing of every layer)") == RecomputeGranularity::full);
  CHECK(parse_recompute("selective (attention only)") == RecomputeGranularity::selective);
  CHECK_FALSE(parse_recompute("partial").has_value());
  CHECK_FALSE(parse_recompute("").has_value());
}

TEST_CASE("parse_framework") {
  CHECK(parse_framework("megatron") == Framework::megatron);
  CHECK(parse_framework("Megatron-LM") == Framework::megatron);
  CHECK(parse_framework("megatron-core") == Framework::megatron);
  CHECK(parse_framework("DeepSpeed") == Framework::deepspeed);
  CHECK(parse_framework("megatron-deepspeed") == Framework::deepspeed);
  CHECK(parse_framework("fsdp") == Framework::fsdp);
  CHECK_FALSE(parse_framework("jax").has_value());
}
}
