#include "profiler/classify.h"

#include <algorithm>
#include <map>

namespace strata::profiler {

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

bool is_kernel_op(const std::string& kind) { return kind == "gemm" || kind == "attention" || kind == "elementwise"; }

}  // namespace

int ctas_per_sm(const KernelRecord& k, const DeviceInfo& dev) {
  const std::int64_t threads = std::max<std::int64_t>(32, (k.block.count() + 31) / 32 * 32);
  std::int64_t n = dev.max_blocks_per_sm;
  n = std::min<std::int64_t>(n, dev.max_threads_per_sm / threads);
  if (k.registers_per_thread > 0) n = std::min<std::int64_t>(n, dev.registers_per_sm / (k.registers_per_thread * threads));
  if (k.shared_bytes() > 0) n = std::min<std::int64_t>(n, dev.shared_bytes_per_sm / k.shared_bytes());
  return static_cast<int>(std::max<std::int64_t>(1, n));  // it launched, so at least one fits
}

KernelClass classify(const OpLabel& op, const GpuSpec& gpu) {
  const Precision p = precision_from_string(op.precision).value_or(Precision::bf16);
  return KernelModel(gpu, p, KernelCoefficients{}).classify(to_costmodel_op(op));
}

Op to_costmodel_op(const OpLabel& label) {
  Op op;
  op.name = label.name.c_str();
  op.kind = label.kind == "gemm" ? OpKind::gemm : label.kind == "attention" ? OpKind::attention : OpKind::elementwise;
  op.m = label.m;
  op.n = label.n;
  op.k = label.k;
  op.batch = label.batch;
  op.flops = label.flops;
  op.bytes = label.bytes;
  // Profiled fused attention is flash attention, whose rate grows with the keys per query tile;
  // ops named as layer_ops names cuDNN's kernel (cudnn_attention, _bwd) are timed with its coefficients.
  op.key_loop_scaling = op.kind == OpKind::attention;
  op.cudnn_attention = op.kind == OpKind::attention && label.name.starts_with("cudnn_attention");
  return op;
}

std::vector<Sample> build_samples(const ProfileDb& profile, const GpuSpec& gpu, const DeviceInfo& dev) {
  struct Invocation {
    double time_s = 0;
    int kernels = 0;
    const KernelRecord* longest = nullptr;
  };
  std::map<std::pair<int, int>, Invocation> invocations;
  for (const auto& r : profile.records) {
    if (r.kind != ActivityKind::kernel || r.op_index < 0) continue;
    if (!is_kernel_op(profile.ops[r.op_index].kind)) continue;
    auto& inv = invocations[{r.op_index, r.op_instance}];
    inv.time_s += r.duration_us() * 1e-6;
    ++inv.kernels;
    if (!inv.longest || r.duration_us() > inv.longest->duration_us()) inv.longest = &r;
  }
  std::map<int, std::vector<const Invocation*>> by_op;
  for (const auto& [key, inv] : invocations) by_op[key.first].push_back(&inv);

  std::vector<Sample> out;
  const double hbm = gpu.hbm_GBps * 1e9;
  for (const auto& [op_index, invs] : by_op) {
    const OpLabel& op = profile.ops[op_index];
    auto prec = precision_from_string(op.precision);
    if (!prec) continue;
    const double peak = gpu.peak_flops(*prec);
    if (peak <= 0) continue;
    Sample s;
    s.op_index = op_index;
    s.op = op;
    std::vector<double> times;
    const Invocation* longest = nullptr;
    for (const auto* inv : invs) {
      times.push_back(inv->time_s);
      s.kernels_per_instance = std::max(s.kernels_per_instance, inv->kernels);
      if (!longest || inv->longest->duration_us() > longest->longest->duration_us()) longest = inv;
    }
    s.time_s = median(times);
    if (s.time_s <= 0) continue;
    s.instances = static_cast<int>(invs.size());
    const KernelRecord& k = *longest->longest;
    s.kernel = k.name;
    s.ctas = k.grid.count();
    s.ctas_per_sm = ctas_per_sm(k, dev);
    const int sms = dev.sm_count > 0 ? dev.sm_count : gpu.sm_count;
    s.waves = static_cast<double>(s.ctas) / (static_cast<double>(sms) * s.ctas_per_sm);
    s.flops_fraction = op.flops / s.time_s / peak;
    s.bandwidth_fraction = op.bytes / s.time_s / hbm;
    s.cls = classify(op, gpu);
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<CollectiveSample> build_collective_samples(const ProfileDb& profile) {
  // One invocation spans from its first kernel start to its last kernel end, over all devices.
  std::map<std::pair<int, int>, std::pair<std::uint64_t, std::uint64_t>> spans;
  for (const auto& r : profile.records) {
    if (r.kind != ActivityKind::kernel || r.op_index < 0 || profile.ops[r.op_index].kind != "collective") continue;
    auto [it, fresh] = spans.try_emplace({r.op_index, r.op_instance}, r.start_ns, r.end_ns);
    if (!fresh) {
      it->second.first = std::min(it->second.first, r.start_ns);
      it->second.second = std::max(it->second.second, r.end_ns);
    }
  }
  std::map<int, std::vector<double>> times;
  for (const auto& [key, span] : spans) times[key.first].push_back(static_cast<double>(span.second - span.first) * 1e-9);
  std::vector<CollectiveSample> out;
  for (const auto& [op_index, t] : times) {
    CollectiveSample s;
    s.op = profile.ops[op_index];
    s.time_s = median(t);
    if (s.time_s <= 0 || s.op.ranks < 2) continue;
    const double n = s.op.ranks;
    // nccl-tests PERFORMANCE.md: busbw = algbw * 2(n-1)/n (all-reduce), * (n-1)/n (all-gather,
    // reduce-scatter), with algbw = size / time.
    const double factor = s.op.name == "all_reduce" ? 2.0 * (n - 1) / n : (n - 1) / n;
    s.busbw_GBps = s.op.bytes / s.time_s * factor / 1e9;
    out.push_back(s);
  }
  return out;
}

}  // namespace strata::profiler
