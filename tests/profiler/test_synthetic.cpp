#include <doctest/doctest.h>

#include "costmodel/kernel_model.h"
#include "profiler/classify.h"
#include "profiler/synthetic.h"
#include "test_util.h"

using namespace strata;
using namespace strata::profiler;

TEST_SUITE("profiler") {
TEST_CASE("synthetic_profile: deterministic, every record labelled, times from the kernel model") {
  GpuSpec gpu = test::catalog().gpu("h100-sxm");
  SyntheticOptions o;
  o.noise = 0;
  o.repetitions = 2;
  ProfileDb a = synthetic_profile(test::catalog(), gpu, KernelCoefficients{}, o);
  ProfileDb b = synthetic_profile(test::catalog(), gpu, KernelCoefficients{}, o);
  CHECK(a == b);
  CHECK(a.records.size() == 2 * a.ops.size());
  for (const auto& r : a.records) CHECK(r.op_index >= 0);
  const auto& r = a.records.front();
  const auto& op = a.ops[r.op_index];
  KernelModel km(gpu, *precision_from_string(op.precision), KernelCoefficients{});
  CHECK(r.duration_us() == doctest::Approx(km.time(to_costmodel_op(op)).time_s * 1e6).epsilon(1e-3));
}
}
