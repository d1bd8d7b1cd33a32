#include "costmodel/pipeline_sim.h"

#include <algorithm>
#include <cassert>

namespace strata {

namespace {

struct ScheduledOp {
  bool backward;
  int chunk;
  std::int64_t mb;
};

// Megatron-LM's order of ops on one pipeline rank (schedules.py:
// forward_backward_pipelining_with/without_interleaving): warm-up forwards, steady 1F1B, cool-down.
void rank_order(int rank, int p, int v, std::int64_t m, std::vector<ScheduledOp>& out) {
  out.clear();
  const std::int64_t total = m * v;
  std::int64_t warmup = v == 1 ? std::min<std::int64_t>(p - rank - 1, m)
                               : std::min<std::int64_t>(static_cast<std::int64_t>(p - rank - 1) * 2 + static_cast<std::int64_t>(v - 1) * p, total);
  auto fwd = [&](std::int64_t k) {
    if (v == 1) return ScheduledOp{false, 0, k};
    int chunk = static_cast<int>((k / p) % v);
    std::int64_t mb = (k / (static_cast<std::int64_t>(p) * v)) * p + k % p;
    return ScheduledOp{false, chunk, mb};
  };
  auto bwd = [&](std::int64_t k) {
    if (v == 1) return ScheduledOp{true, 0, k};
    int chunk = v - 1 - static_cast<int>((k / p) % v);
    std::int64_t mb = (k / (static_cast<std::int64_t>(p) * v)) * p + k % p;
    return ScheduledOp{true, chunk, mb};
  };
  out.reserve(static_cast<std::size_t>(2 * total));
  for (std::int64_t k = 0; k < warmup; ++k) out.push_back(fwd(k));
  for (std::int64_t i = 0; i < total - warmup; ++i) {
    out.push_back(fwd(warmup + i));
    out.push_back(bwd(i));
  }
  for (std::int64_t k = total - warmup; k < total; ++k) out.push_back(bwd(k));
}

}  // namespace

PipelineResult simulate_pipeline(const PipelineInput& in, std::vector<PipelineEvent>* trace) {
  const int p = in.stages, v = in.chunks;
  const std::int64_t m = in.micro_batches;
  PipelineResult res;
  res.busy_s.assign(p, 0);
  res.end_s.assign(p, 0);
  res.peak_in_flight.assign(p, 0);
  if (p < 1 || v < 1 || m < 1 || (v > 1 && m % p != 0)) return res;

  const int vstages = p * v;
  std::vector<double> fdone(static_cast<std::size_t>(vstages * m), -1.0), bdone(fdone.size(), -1.0);
  std::vector<std::vector<ScheduledOp>> order(p);
  for (int r = 0; r < p; ++r) rank_order(r, p, v, m, order[r]);
  std::vector<std::size_t> ptr(p, 0);
  std::vector<double> clock(p, 0.0);
  std::vector<int> in_flight(p, 0);
  std::size_t remaining = 0;
  for (const auto& o : order) remaining += o.size();

  while (remaining > 0) {
    bool progressed = false;
    for (int r = 0; r < p; ++r) {
      auto& ops = order[r];
      while (ptr[r] < ops.size()) {
        const ScheduledOp& op = ops[ptr[r]];
        const int vs = op.chunk * p + r;
        double ready = 0;
        if (!op.backward) {
          if (vs > 0) {
            double d = fdone[static_cast<std::size_t>((vs - 1) * m + op.mb)];
            if (d < 0) break;
            ready = d + ((vs - 1) % p != r ? in.p2p_s : 0.0);
          }
        } else if (vs < vstages - 1) {
          double d = bdone[static_cast<std::size_t>((vs + 1) * m + op.mb)];
          if (d < 0) break;
          ready = d + ((vs + 1) % p != r ? in.p2p_s : 0.0);
        }
        const double dur = op.backward ? in.backward_s[r][op.chunk] : in.forward_s[r][op.chunk];
        const double start = std::max(clock[r], ready);
        const double end = start + dur;
        clock[r] = end;
        res.busy_s[r] += dur;
        (op.backward ? bdone : fdone)[static_cast<std::size_t>(vs * m + op.mb)] = end;
        in_flight[r] += op.backward ? -1 : 1;
        res.peak_in_flight[r] = std::max(res.peak_in_flight[r], in_flight[r]);
        if (trace) trace->push_back({r, op.chunk, op.mb, op.backward, start, end});
        ++ptr[r];
        --remaining;
        progressed = true;
      }
    }
    assert(progressed && "pipeline schedule deadlocked");
    if (!progressed) break;
  }
  for (int r = 0; r < p; ++r) {
    res.end_s[r] = clock[r];
    res.makespan_s = std::max(res.makespan_s, clock[r]);
  }
  return res;
}

}  // namespace strata
