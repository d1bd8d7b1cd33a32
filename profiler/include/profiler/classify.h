#pragma once
// From records to samples, and each sample's SEER class. A sample is one op of the profile (the
// kernels of one invocation summed; the median over its repetitions), which is what the kernel
// model predicts. Its class is the one costmodel's KernelModel gives the op (from the problem's
// tiles and the roofline ridge, see kernel_model.h), so a calibration fits each class's model on
// the kernels that model will time. The launched grid is not used to classify: persistent GEMM
// kernels (cuBLAS nvjet on Hopper) launch about one CTA per SM whatever the problem; the measured
// waves are reported with each sample, with the achieved fractions of peak FLOP/s and bandwidth.
#include <string>
#include <vector>

#include "costmodel/gpu_spec.h"
#include "costmodel/kernel_model.h"
#include "profiler/profile_db.h"

namespace strata::profiler {

struct Sample {
  int op_index = -1;
  OpLabel op;
  double time_s = 0;        // median over instances of the summed kernel time of one invocation
  int instances = 0;
  int kernels_per_instance = 0;
  std::string kernel;       // the longest kernel of the op
  std::int64_t ctas = 0;    // of the longest kernel
  int ctas_per_sm = 1;      // occupancy limit of the longest kernel
  double waves = 0;         // ctas / (sm_count * ctas_per_sm)
  double flops_fraction = 0;      // achieved FLOP/s / peak at the op's precision
  double bandwidth_fraction = 0;  // achieved DRAM bytes/s / HBM peak
  KernelClass cls = KernelClass::dram_bound;
};

// CTAs of a kernel that fit on one SM of `dev` (threads, registers, shared memory, block limits).
int ctas_per_sm(const KernelRecord& k, const DeviceInfo& dev);

// The kernel model's class of a profiled op on `gpu` at the op's precision.
KernelClass classify(const OpLabel& op, const GpuSpec& gpu);

// Samples of every labelled kernel op (gemm / attention / elementwise) of the profile. Memory
// copies and collectives are left out (they are not kernel-model ops). `dev` gives the SM limits;
// `gpu` the datasheet peaks. Ops whose precision the GPU lacks are skipped.
std::vector<Sample> build_samples(const ProfileDb& profile, const GpuSpec& gpu, const DeviceInfo& dev);

// Bus bandwidth samples of the profile's collectives: {op, time_s, busbw_GBps}.
struct CollectiveSample {
  OpLabel op;
  double time_s = 0;
  double busbw_GBps = 0;  // nccl-tests convention: all-reduce 2(n-1)/n, gather/scatter (n-1)/n
};
std::vector<CollectiveSample> build_collective_samples(const ProfileDb& profile);

// The costmodel Op a label stands for (name points into `label`, which must outlive the Op).
Op to_costmodel_op(const OpLabel& label);

}  // namespace strata::profiler
