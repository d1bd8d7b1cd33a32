#include "costmodel/pipeline_sim.h"

#include <algorithm>
#include <cassert>
#include <map>
#include <memory>
#include <tuple>

namespace strata {

namespace {

// Megatron-LM's order of ops on one pipeline rank (schedules.py:
// forward_backward_pipelining_with/without_interleaving): `warmup` forwards, then steady 1F1B
// (one forward, one backward), then the cool-down backwards.
struct RankSchedule {
  std::int64_t total, warmup;

  RankSchedule(int p, int v, int rank, std::int64_t m)
      : total(m * v),
        warmup(v == 1 ? std::min<std::int64_t>(p - rank - 1, m)
                      : std::min<std::int64_t>(static_cast<std::int64_t>(p - rank - 1) * 2 + static_cast<std::int64_t>(v - 1) * p,
                                               m * v)) {}
  std::int64_t size() const { return 2 * total; }
  // Op j of the rank: whether it is a backward, and which forward/backward index k it is.
  bool op(std::int64_t j, std::int64_t& k) const {
    if (j < warmup) {
      k = j;
      return false;
    }
    const std::int64_t steady = 2 * (total - warmup);
    if (j < warmup + steady) {
      const std::int64_t i = j - warmup;
      k = (i % 2 == 0) ? warmup + i / 2 : i / 2;
      return i % 2 == 1;
    }
    k = total - warmup + (j - warmup - steady);
    return true;
  }
};

// One op of the schedule in a global order that respects every dependency.
struct FlatOp {
  std::int32_t dep;       // index of the op on the neighbouring rank it waits for, -1 if none
  std::int32_t rank;
  std::int32_t vstage;    // chunk * p + rank: selects the duration
  std::int32_t micro_batch;
  bool backward;
};

// What the timing pass reads per op, packed (12 bytes): the dependency (the sentinel `ops.size()`
// when none), the rank and the duration slot 2 * vstage + backward.
struct HotOp {
  std::int32_t dep, rank, slot;
};

// A schedule's global order and what follows from it alone, without durations.
struct ScheduleOrder {
  std::vector<FlatOp> ops;
  std::vector<HotOp> hot;
  std::vector<int> peak_in_flight;  // per rank: most chunk-micro-batches forwarded, not yet backwarded
};

// The dependency structure of a schedule depends only on (p, v, m), not on durations: compute a
// topological order once, then every simulation is a single pass over it.
ScheduleOrder build_order(int p, int v, std::int64_t m) {
  const std::int64_t total = m * v;
  const int vstages = p * v;
  std::vector<std::int32_t> fpos(static_cast<std::size_t>(vstages * m), -1), bpos(fpos.size(), -1);
  std::vector<RankSchedule> sched;
  for (int r = 0; r < p; ++r) sched.emplace_back(p, v, r, m);
  std::vector<std::int64_t> ptr(p, 0);
  std::vector<FlatOp> out;
  out.reserve(static_cast<std::size_t>(2 * total * p));
  // Worklist of ranks that may advance; a rank that ran ops wakes both neighbours.
  std::vector<int> work;
  std::vector<char> queued(p, 1);
  for (int r = p - 1; r >= 0; --r) work.push_back(r);
  while (!work.empty()) {
    const int r = work.back();
    work.pop_back();
    queued[r] = 0;
    const std::int64_t start = ptr[r];
    for (; ptr[r] < sched[r].size(); ++ptr[r]) {
      std::int64_t k;
      const bool backward = sched[r].op(ptr[r], k);
      // The k-th forward runs model chunk (k/p) % v on micro-batch (k/(p*v))*p + k%p; the k-th
      // backward runs the mirrored chunk.
      int chunk = v == 1 ? 0 : static_cast<int>((k / p) % v);
      if (backward) chunk = v - 1 - chunk;
      const std::int64_t mb = v == 1 ? k : (k / (static_cast<std::int64_t>(p) * v)) * p + k % p;
      const int vs = chunk * p + r;
      std::int32_t dep = -1;
      if (!backward && vs > 0) {
        dep = fpos[static_cast<std::size_t>((vs - 1) * m + mb)];
        if (dep < 0) break;
      } else if (backward && vs < vstages - 1) {
        dep = bpos[static_cast<std::size_t>((vs + 1) * m + mb)];
        if (dep < 0) break;
      }
      (backward ? bpos : fpos)[static_cast<std::size_t>(vs * m + mb)] = static_cast<std::int32_t>(out.size());
      out.push_back({dep, r, vs, static_cast<std::int32_t>(mb), backward});
    }
    if (ptr[r] != start && p > 1)
      for (int nb : {(r + 1) % p, (r + p - 1) % p})
        if (!queued[nb]) {
          queued[nb] = 1;
          work.push_back(nb);
        }
  }
  assert(out.size() == static_cast<std::size_t>(2 * total * p) && "pipeline schedule deadlocked");
  ScheduleOrder order;
  order.hot.reserve(out.size());
  order.peak_in_flight.assign(static_cast<std::size_t>(p), 0);
  std::vector<int> in_flight(static_cast<std::size_t>(p), 0);
  const auto none = static_cast<std::int32_t>(out.size());
  for (const FlatOp& op : out) {
    order.hot.push_back({op.dep >= 0 ? op.dep : none, op.rank, 2 * op.vstage + (op.backward ? 1 : 0)});
    int& f = in_flight[static_cast<std::size_t>(op.rank)];
    f += op.backward ? -1 : 1;
    order.peak_in_flight[static_cast<std::size_t>(op.rank)] = std::max(order.peak_in_flight[static_cast<std::size_t>(op.rank)], f);
  }
  order.ops = std::move(out);
  return order;
}

// Per-thread cache of schedule orders (searches evaluate many plans with the same p, v, m).
const ScheduleOrder& cached_order(int p, int v, std::int64_t m) {
  thread_local std::map<std::tuple<int, int, std::int64_t>, std::unique_ptr<ScheduleOrder>> cache;
  auto key = std::make_tuple(p, v, m);
  auto it = cache.find(key);
  if (it != cache.end()) return *it->second;
  if (cache.size() >= 32) cache.clear();
  auto order = std::make_unique<ScheduleOrder>(build_order(p, v, m));
  return *cache.emplace(key, std::move(order)).first->second;
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
  // Orders beyond 2^31 ops are not representable (and not plausible: 16k stages x 64k micro-batches).
  if (2 * m * v * p >= (std::int64_t{1} << 31)) return res;

  const ScheduleOrder& order = cached_order(p, v, m);
  // Durations by slot 2 * vstage + backward.
  std::vector<double> dur(static_cast<std::size_t>(2 * p * v));
  for (int r = 0; r < p; ++r)
    for (int c = 0; c < v; ++c) {
      dur[static_cast<std::size_t>(2 * (c * p + r))] = in.forward_s[r][c];
      dur[static_cast<std::size_t>(2 * (c * p + r) + 1)] = in.backward_s[r][c];
      // Every micro-batch passes every chunk once each way.
      res.busy_s[static_cast<std::size_t>(r)] += static_cast<double>(m) * (in.forward_s[r][c] + in.backward_s[r][c]);
    }
  res.peak_in_flight = order.peak_in_flight;
  const double hop = p > 1 ? in.p2p_s : 0.0;
  // done[i]: when op i ends. The last slot stands for "no dependency": -hop, so that it is ready at 0.
  // The buffer is reused across calls (every slot read was written earlier in the same pass).
  thread_local std::vector<double> done;
  const std::size_t n = order.ops.size();
  if (done.size() < n + 1) done.resize(n + 1);
  done[n] = -hop;
  double* const clock = res.end_s.data();
  // The hot loop of every prediction: one max and one add per op.
  const HotOp* ops = order.hot.data();
  const double* d = dur.data();
  double* const t = done.data();
  for (std::size_t i = 0; i < n; ++i) {
    const HotOp& op = ops[i];
    const double end = std::max(clock[op.rank], t[op.dep] + hop) + d[op.slot];
    t[i] = end;
    clock[op.rank] = end;
  }
  if (trace)
    for (std::size_t i = 0; i < n; ++i) {
      const FlatOp& op = order.ops[i];
      trace->push_back({op.rank, op.vstage / p, op.micro_batch, op.backward, t[i] - d[order.hot[i].slot], t[i]});
    }
  res.makespan_s = *std::max_element(res.end_s.begin(), res.end_s.end());
  return res;
}

}  // namespace strata
