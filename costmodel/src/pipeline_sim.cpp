#include "costmodel/pipeline_sim.h"

#include <algorithm>
#include <cassert>
#include <map>
#include <memory>
#include <tuple>

namespace strata {

namespace {

// Megatron-LM's order of ops on one pipeline rank (schedules.py:
// forward_backward_pipelining_with/without_interleaving, get_pp_rank_microbatches): `warmup`
// forwards, then steady 1F1B (one forward, one backward), then the cool-down backwards. With
// interleaving the warmup covers (vpp - 1) micro-batch groups of `g`; the combined 1F1B of MoE
// all-to-all overlap adds one.
struct RankSchedule {
  std::int64_t total, warmup;

  RankSchedule(int p, int v, int rank, std::int64_t m, std::int64_t g, bool combined)
      : total(m * v),
        warmup(std::min<std::int64_t>((v == 1 ? p - rank - 1
                                              : static_cast<std::int64_t>(p - rank - 1) * 2 + static_cast<std::int64_t>(v - 1) * g) +
                                          (combined ? 1 : 0),
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

// Megatron-Core's schedule table (schedules.py get_schedule_table): the k-th forward of every
// rank runs model chunk `chunk` on micro-batch `mb`, groups of g micro-batches passing chunk 0,
// then chunk 1, ...; a last group of m % g micro-batches goes through the chunks the same way. The
// k-th backward runs the same micro-batch through the mirrored chunk v - 1 - chunk.
struct TableEntry {
  int chunk;
  std::int64_t mb;
};
TableEntry schedule_entry(std::int64_t k, int v, std::int64_t m, std::int64_t g) {
  if (v == 1) return {0, k};
  const std::int64_t full_groups = m / g, in_full = full_groups * g * v;
  if (k < in_full) {
    const std::int64_t i = k % (g * v);
    return {static_cast<int>(i / g), (k / (g * v)) * g + i % g};
  }
  const std::int64_t last = m % g, i = k - in_full;
  return {static_cast<int>(i / last), full_groups * g + i % last};
}

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

// The dependency structure of a schedule depends only on (p, v, m, g, combined), not on durations:
// compute a topological order once, then every simulation is a single pass over it.
ScheduleOrder build_order(int p, int v, std::int64_t m, std::int64_t g, bool combined) {
  const std::int64_t total = m * v;
  const int vstages = p * v;
  std::vector<std::int32_t> fpos(static_cast<std::size_t>(vstages * m), -1), bpos(fpos.size(), -1);
  std::vector<RankSchedule> sched;
  for (int r = 0; r < p; ++r) sched.emplace_back(p, v, r, m, g, combined);
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
      const TableEntry e = schedule_entry(k, v, m, g);
      const int chunk = backward ? v - 1 - e.chunk : e.chunk;
      const std::int64_t mb = e.mb;
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

// Per-thread cache of schedule orders (searches evaluate many plans with the same schedule).
const ScheduleOrder& cached_order(int p, int v, std::int64_t m, std::int64_t g, bool combined) {
  thread_local std::map<std::tuple<int, int, std::int64_t, std::int64_t, bool>, std::unique_ptr<ScheduleOrder>> cache;
  auto key = std::make_tuple(p, v, m, g, combined);
  auto it = cache.find(key);
  if (it != cache.end()) return *it->second;
  if (cache.size() >= 32) cache.clear();
  auto order = std::make_unique<ScheduleOrder>(build_order(p, v, m, g, combined));
  return *cache.emplace(key, std::move(order)).first->second;
}

// Every op of the event order, timed: the traced path, and the untraced one of a schedule the phase
// sweep does not cover (micro-batch groups other than pp). Fills res.end_s and, when
// given, the trace.
void simulate_in_event_order(const PipelineInput& in, const ScheduleOrder& order, PipelineResult& res,
                             std::vector<PipelineEvent>* trace) {
  const int p = in.stages, v = in.chunks;
  // Durations by slot 2 * vstage + backward.
  std::vector<double> dur(static_cast<std::size_t>(2 * p * v));
  for (int r = 0; r < p; ++r)
    for (int c = 0; c < v; ++c) {
      dur[static_cast<std::size_t>(2 * (c * p + r))] = in.forward(r, c);
      dur[static_cast<std::size_t>(2 * (c * p + r) + 1)] = in.backward(r, c);
    }
  const double hop = p > 1 ? in.p2p_s : 0.0;
  // done[i]: when op i ends. The last slot stands for "no dependency": -hop, so that it is ready at 0.
  const std::size_t n = order.ops.size();
  std::vector<double> done(n + 1);
  done[n] = -hop;
  double* const clock = res.end_s.data();
  for (std::size_t i = 0; i < n; ++i) {
    const HotOp& op = order.hot[i];
    const double end = std::max(clock[op.rank], done[op.dep] + hop) + dur[op.slot];
    done[i] = end;
    clock[op.rank] = end;
  }
  if (trace == nullptr) return;
  for (std::size_t i = 0; i < n; ++i) {
    const FlatOp& op = order.ops[i];
    trace->push_back({op.rank, op.vstage / p, op.micro_batch, op.backward, done[i] - dur[order.hot[i].slot], done[i]});
  }
}

// ---- The phase sweep: the untraced path of every prediction ------------------------------------
//
// Give the k-th forward of rank r the phase 2k + s*r and its k-th backward the phase 2k + c - s*r,
// with s = 1, c = 2p - 1 for 1F1B and s = 2, c = 2(v+1)p - 3 for interleaved 1F1B; the combined
// 1F1B of MoE all-to-all overlap runs one more warmup forward, 2 phases more. Then
//  (1) the ops of each rank, in the order the rank runs them (RankSchedule: warmup forwards, then
//      alternating forward and backward, then cool-down backwards), have strictly increasing
//      phases, one per phase at most: c is exactly what puts each steady-state backward between
//      its two forwards, and with interleaving forwards fall on even phases, backwards on odd;
//  (2) every dependency is an op of a neighbouring rank exactly s phases earlier: forward k of rank
//      r waits for forward k of rank r-1 (or, the first rank of a later model chunk, for forward
//      k-p of the last rank), backward k of rank r for backward k of rank r+1 (or, the last rank of
//      an earlier chunk, for backward k-p of the first rank).
// So sweeping the phases in order, every rank that has an op in phase t ends it at
// max(own clock after t-1, neighbour's clock after t-s + hop) + duration: the very operands, in the
// very order, of the event simulation, hence bit-identical times. Ranks without an op keep their
// clock. The sweep needs no schedule order, only a few rows of p clocks, and each phase is a loop
// over the ranks that compilers vectorize. In the steady state, where every rank runs an op in
// every phase, two phases run fused (run_1f1b_pair, run_interleaved_pair); a steady state that has
// settled into advancing every rank alike (each pair under 1F1B, each period of p*v pairs under
// interleaving) is extrapolated (advanced_alike), equal to the event order up to rounding.

// cur[r] = max(own[r], dep[r] + hop) + d[r]: ranks [0, n) each run an op in this phase.
void run_ops(double* __restrict cur, const double* __restrict own, const double* __restrict dep, const double* __restrict d,
             int n, double hop) {
  for (int r = 0; r < n; ++r) cur[r] = std::max(own[r], dep[r] + hop) + d[r];
}

// 1F1B steady state, two phases at once, with the even ranks' clocks in `even` and the odd ranks'
// in `odd` (each with a ghost cell at -1 and at its end, -hop: no neighbour). In the first phase
// even ranks run a forward after rank r-1 and odd ranks a backward after rank r+1; in the second
// the roles swap, each rank reading the other's fresh clock. Everything one pair of ranks
// (2i, 2i+1) needs sits at index i, so the loop vectorizes without blends.
void run_1f1b_pair(double* __restrict even_out, double* __restrict odd_out, const double* __restrict even,
                   const double* __restrict odd, const double* __restrict d, int ne, int no, double hop) {
  const double *f_even = d, *b_even = d + ne, *f_odd = d + 2 * ne, *b_odd = d + 2 * ne + no;
  for (int i = 0; i < no; ++i) {
    const double e = std::max(even[i], odd[i - 1] + hop) + f_even[i];
    const double o = std::max(odd[i], even[i + 1] + hop) + b_odd[i];
    odd_out[i] = std::max(o, e + hop) + f_odd[i];
    even_out[i] = std::max(e, o + hop) + b_even[i];
  }
  if (ne > no) {  // p odd: the last rank is even, with no rank after it
    const double e = std::max(even[no], odd[no - 1] + hop) + f_even[no];
    even_out[no] = std::max(e, odd[no] + hop) + b_even[no];
  }
}

// Interleaved steady state, two phases at once: every rank runs a forward after rank r-1's
// forward two phases back (h2), then a backward after its own forward and rank r+1's backward two
// phases back (h1). x and y receive the two new rows.
void run_interleaved_pair(double* __restrict x, double* __restrict y, const double* __restrict h2, const double* __restrict h1,
                          const double* __restrict df, const double* __restrict db, int n, double hop) {
  for (int r = 0; r < n; ++r) {
    const double f = std::max(h1[r], h2[r - 1] + hop) + df[r];
    x[r] = f;
    y[r] = std::max(f, h1[r + 1] + hop) + db[r];
  }
}

// Whether one steady 1F1B pair (or interleaved period) advanced every clock by the same time
// (lambda, returned), up to rounding. The pair is a max-plus linear map of the clocks: each new
// clock is a max of clocks plus fixed durations (the ghost cells' terms are 0 and never win over
// clocks >= 0). Once such a map advances every clock by lambda it does so on every later pair,
// since A(x + lambda) = A(x) + lambda; and it is nonexpansive in the max norm, so clocks that
// advanced alike within eps stay within eps of that each pair (Baccelli, Cohen, Olsder, Quadrat,
// "Synchronization and Linearity", 1992, ch. 3). The steady state then ends at the clocks plus
// lambda per pair (period) left. eps is 1e-12 of the clocks: rounding, far below anything a
// duration carries.
bool advanced_alike(const double* even, const double* even_before, int ne, const double* odd, const double* odd_before, int no,
                    double& lambda) {
  lambda = even[0] - even_before[0];
  double lo = lambda, hi = lambda, top = even[0];
  for (int i = 1; i < ne; ++i) {
    const double step = even[i] - even_before[i];
    lo = std::min(lo, step);
    hi = std::max(hi, step);
    top = std::max(top, even[i]);
  }
  for (int i = 0; i < no; ++i) {
    const double step = odd[i] - odd_before[i];
    lo = std::min(lo, step);
    hi = std::max(hi, step);
    top = std::max(top, odd[i]);
  }
  return hi - lo <= 1e-12 * top;
}

void keep_clocks(double* __restrict cur, const double* __restrict own, int from, int to) {
  for (int r = from; r < to; ++r) cur[r] = own[r];
}

// Op index k of rank 0 in blocks of p ops: k = block * p + offset, 0 <= offset < p (k may be
// negative before the rank's first op), and the model chunk of the block, block mod v. Rank r
// of the same phase is r ops behind (forwards) or ahead (backwards), one block at most away.
struct BlockCursor {
  std::int64_t block;
  int offset, chunk, p, v;

  BlockCursor(std::int64_t k, int p_, int v_) : p(p_), v(v_) {
    block = k >= 0 ? k / p : -((-k + p - 1) / p);
    offset = static_cast<int>(k - block * p);
    chunk = static_cast<int>(((block % v) + v) % v);
  }
  void advance() {
    if (++offset < p) return;
    offset = 0;
    ++block;
    chunk = chunk + 1 == v ? 0 : chunk + 1;
  }
  int prev_chunk() const { return chunk == 0 ? v - 1 : chunk - 1; }
  int next_chunk() const { return chunk + 1 == v ? 0 : chunk + 1; }
};

class PhaseSweep {
 public:
  explicit PhaseSweep(const PipelineInput& in)
      : p_(in.stages),
        v_(in.chunks),
        total_(in.micro_batches * in.chunks),
        extra_(in.combined_1f1b ? 1 : 0),
        c_((v_ == 1 ? 2 * static_cast<std::int64_t>(p_) - 1 : 2 * static_cast<std::int64_t>(v_ + 1) * p_ - 3) + 2 * extra_),
        hop_(p_ > 1 ? in.p2p_s : 0.0),
        fwd_(in.forward_s.data()),
        bwd_(in.backward_s.data()),
        buf_(3 * static_cast<std::size_t>(p_ + 2) + (v_ == 1 ? 8 * static_cast<std::size_t>(p_ / 2 + 3) : 5 * static_cast<std::size_t>(p_) + 2),
             -hop_) {
    // Three rows of clocks (phases t-2, t-1, t), each with a ghost cell at -1 and p: the
    // dependency an edge rank reads there is the wrapped-around neighbour or "none", -hop (ready
    // at 0, as in the event order). Clocks start at 0.
    dep_ = buf_.data() + 1;
    own_ = dep_ + p_ + 2;
    cur_ = own_ + p_ + 2;
    spare_ = cur_ + p_ + 2;  // interleaved only: the fourth row of run_interleaved_steady
    std::fill(dep_, dep_ + p_, 0.0);
    std::fill(own_, own_ + p_, 0.0);
  }

  // Runs every phase; writes each rank's clock after its last op to end[0, p).
  void run(double* end) {
    if (v_ == 1) run_1f1b();
    else run_interleaved();
    std::copy(own_, own_ + p_, end);
  }

 private:
  const double* fwd(int chunk) const { return fwd_ + static_cast<std::size_t>(chunk) * p_; }
  const double* bwd(int chunk) const { return bwd_ + static_cast<std::size_t>(chunk) * p_; }
  void next_phase() {
    double* reuse = dep_;
    dep_ = own_;
    own_ = cur_;
    cur_ = reuse;
  }
  // Ranks outside [lo, hi) have no op this phase; false when none has.
  bool keep_idle(int lo, int hi) {
    if (lo >= hi) {
      keep_clocks(cur_, own_, 0, p_);
      return false;
    }
    keep_clocks(cur_, own_, 0, lo);
    keep_clocks(cur_, own_, hi, p_);
    return true;
  }

  // Interleaved: phase 2q runs forwards, phase 2q+1 backwards (2(T + (c-1)/2) phases in all).
  // From q = (c-1)/2 to T-1 every rank runs an op in both phases: those pairs run fused.
  void run_interleaved() {
    const std::int64_t back_lag = (c_ - 1) / 2;
    BlockCursor fq(0, p_, v_), bu(-back_lag, p_, v_);
    for (std::int64_t q = 0; q < total_ + back_lag; ++q) {
      if (q == back_lag && back_lag < total_) {
        run_interleaved_steady(fq, bu, total_ - back_lag);
        q = total_ - 1;
        continue;
      }
      forward_phase(q, fq);
      next_phase();
      backward_phase(q - back_lag, bu);
      next_phase();
      fq.advance();
      bu.advance();
    }
  }

  // `pairs` steady phase pairs from forward cursor fq and backward cursor bu on (both advanced
  // past them). The durations of the ranks' ops live in one row per direction: from one forward
  // phase to the next, each rank's op index k grows by one, so exactly one rank enters a new
  // block of p (its chunk changes); likewise for the backwards.
  //
  // The durations and the ghost cells' rules repeat every p*v pairs (the cursors' offsets and chunks
  // cycle), so a period of pairs is one fixed max-plus map: once a period advances every clock
  // alike, every later one does (see advanced_alike), and whole periods left are extrapolated.
  void run_interleaved_steady(BlockCursor& fq, BlockCursor& bu, std::int64_t pairs) {
    double* const df = buf_.data() + 4 * static_cast<std::size_t>(p_ + 2);
    double* const db = df + p_;
    double* const h2_before = db + p_;  // the clocks one period earlier
    double* const h1_before = h2_before + p_;
    const std::int64_t period = static_cast<std::int64_t>(p_) * v_;
    std::int64_t to_period_end = period;  // pairs left in the current period (no division per pair)
    bool have_before = false;
    for (int r = 0; r < p_; ++r) {
      // k = q - r and u + r with (q, u) at the cursors: rank 0 in their blocks, the others in the
      // block before (forwards) or after (backwards) once past the offset.
      df[r] = fwd(r <= fq.offset ? fq.chunk : fq.prev_chunk())[r];
      db[r] = bwd(v_ - 1 - (r < p_ - bu.offset ? bu.chunk : bu.next_chunk()))[r];
    }
    double *h2 = dep_, *h1 = own_, *x = cur_, *y = spare_;
    for (std::int64_t j = 0; j < pairs; ++j) {
      h2[-1] = fq.chunk > 0 ? h2[p_ - 1] : -hop_;
      h1[p_] = (bu.offset == 0 ? bu.chunk : bu.next_chunk()) > 0 ? h1[0] : -hop_;
      run_interleaved_pair(x, y, h2, h1, df, db, p_, hop_);
      std::swap(h2, x);
      std::swap(h1, y);
      fq.advance();
      bu.advance();
      df[fq.offset] = fwd(fq.chunk)[fq.offset];
      const int entering = bu.offset == 0 ? 0 : p_ - bu.offset;
      db[entering] = bwd(v_ - 1 - (bu.offset == 0 ? bu.chunk : bu.next_chunk()))[entering];
      if (--to_period_end > 0) continue;
      to_period_end = period;
      if (pairs - j - 1 < period) continue;
      double lambda = 0;
      if (have_before && advanced_alike(h2, h2_before, p_, h1, h1_before, p_, lambda)) {
        // The cursors and duration rows return to this state after every period.
        const std::int64_t skip = (pairs - j - 1) / period;
        const double ahead = static_cast<double>(skip) * lambda;
        for (int r = 0; r < p_; ++r) {
          h2[r] += ahead;
          h1[r] += ahead;
        }
        j += skip * period;
        fq.block += skip * v_;
        bu.block += skip * v_;
        continue;
      }
      std::copy(h2, h2 + p_, h2_before);
      std::copy(h1, h1 + p_, h1_before);
      have_before = true;
    }
    dep_ = h2;
    own_ = h1;
    cur_ = x;
    spare_ = y;
  }

  // Rank r runs forward k = q - r when 0 <= k < total, after the forward of rank r-1 two phases
  // earlier (rank 0: rank p-1's forward k-p, unless k is in chunk 0).
  void forward_phase(std::int64_t q, const BlockCursor& k0) {
    const int lo = static_cast<int>(std::clamp<std::int64_t>(q - total_ + 1, 0, p_));
    const int hi = static_cast<int>(std::min<std::int64_t>(q + 1, p_));
    if (!keep_idle(lo, hi)) return;
    if (lo == 0) dep_[-1] = k0.chunk > 0 ? dep_[p_ - 1] : -hop_;
    // Ranks up to k0.offset run a forward in k0's block, the later ones in the block before.
    const int split = std::clamp(k0.offset + 1, lo, hi);
    if (lo < split) run_ops(cur_ + lo, own_ + lo, dep_ + lo - 1, fwd(k0.chunk) + lo, split - lo, hop_);
    if (split < hi) run_ops(cur_ + split, own_ + split, dep_ + split - 1, fwd(k0.prev_chunk()) + split, hi - split, hop_);
  }

  // Rank r runs backward k = u + r when 0 <= k < total, after the backward of rank r+1 two phases
  // earlier (rank p-1: rank 0's backward k-p, unless k runs the last chunk).
  void backward_phase(std::int64_t u, const BlockCursor& k0) {
    const int lo = static_cast<int>(std::clamp<std::int64_t>(-u, 0, p_));
    const int hi = static_cast<int>(std::clamp<std::int64_t>(total_ - u, 0, p_));
    if (!keep_idle(lo, hi)) return;
    // Ranks before p - k0.offset run a backward in k0's block, the later ones in the block after.
    const int split = std::clamp(p_ - k0.offset, lo, hi);
    if (hi == p_) dep_[p_] = (k0.offset == 0 ? k0.chunk : k0.next_chunk()) > 0 ? dep_[0] : -hop_;
    if (lo < split) run_ops(cur_ + lo, own_ + lo, dep_ + lo + 1, bwd(v_ - 1 - k0.chunk) + lo, split - lo, hop_);
    if (split < hi)
      run_ops(cur_ + split, own_ + split, dep_ + split + 1, bwd(v_ - 1 - k0.next_chunk()) + split, hi - split, hop_);
  }

  // 1F1B: in phase t, rank r runs forward (t - r)/2 when t - r is even, else backward
  // (t - c + r)/2, when that index is in [0, m), after its neighbour's op one phase earlier
  // (the ghost cells stay -hop: no dependency). All ranks are busy for t in [c, 2m): the phase
  // pairs from 2(p + extra) on run as steady pairs.
  void run_1f1b() {
    const std::int64_t phases = 2 * total_ - 1 + c_;
    const std::int64_t steady_from = p_ + extra_;
    for (std::int64_t t = 0; t < phases; ++t) {
      if (t == 2 * steady_from && total_ > steady_from) {
        run_1f1b_steady(total_ - steady_from);
        t = 2 * total_ - 1;
        continue;
      }
      boundary_phase_1f1b(t);
      next_phase();
    }
  }

  // `pairs` steady phase pairs from own_ on, in the even/odd layout of run_1f1b_pair; the result
  // goes back to own_.
  void run_1f1b_steady(std::int64_t pairs) {
    const int ne = (p_ + 1) / 2, no = p_ / 2, w = ne + 2;
    double* const extra = buf_.data() + 3 * static_cast<std::size_t>(p_ + 2);
    double* const d = extra + 4 * w;  // forward even, backward even, forward odd, backward odd
    double *even = extra + 1, *odd = even + w, *even_out = odd + w, *odd_out = even_out + w;
    for (int i = 0; i < ne; ++i) {
      d[i] = fwd_[2 * i];
      d[ne + i] = bwd_[2 * i];
      even[i] = own_[2 * i];
    }
    for (int i = 0; i < no; ++i) {
      d[2 * ne + i] = fwd_[2 * i + 1];
      d[2 * ne + no + i] = bwd_[2 * i + 1];
      odd[i] = own_[2 * i + 1];
    }
    for (std::int64_t j = 0; j < pairs; ++j) {
      run_1f1b_pair(even_out, odd_out, even, odd, d, ne, no, hop_);
      std::swap(even, even_out);
      std::swap(odd, odd_out);
      // Checked after pairs 1, 2, 4, 8, ...: a few checks per prediction, found at most twice as
      // late as it sets in.
      double lambda = 0;
      if ((j & (j + 1)) == 0 && j + 1 < pairs && advanced_alike(even, even_out, ne, odd, odd_out, no, lambda)) {
        const double ahead = static_cast<double>(pairs - j - 1) * lambda;
        for (int i = 0; i < ne; ++i) even[i] += ahead;
        for (int i = 0; i < no; ++i) odd[i] += ahead;
        break;
      }
    }
    for (int i = 0; i < ne; ++i) own_[2 * i] = even[i];
    for (int i = 0; i < no; ++i) own_[2 * i + 1] = odd[i];
  }

  // A phase outside the steady state: only the ranks whose op index is in [0, m) run. Forwards
  // fall on ranks r of t's parity with 0 <= t - r < 2m, backwards on the others with
  // 0 <= t - c + r < 2m.
  void boundary_phase_1f1b(std::int64_t t) {
    keep_clocks(cur_, own_, 0, p_);
    const int parity = static_cast<int>(t & 1);
    const auto first_of = [](std::int64_t lo, int parity_) { return static_cast<int>(lo + ((lo & 1) != parity_)); };
    const int f_end = static_cast<int>(std::min<std::int64_t>(t, p_ - 1));
    for (int r = first_of(std::max<std::int64_t>(0, t - 2 * total_ + 1), parity); r <= f_end; r += 2)
      cur_[r] = std::max(own_[r], own_[r - 1] + hop_) + fwd_[r];
    const int b_end = static_cast<int>(std::min<std::int64_t>(2 * total_ + c_ - t - 1, p_ - 1));
    for (int r = first_of(std::max<std::int64_t>(0, c_ - t), 1 - parity); r <= b_end; r += 2)
      cur_[r] = std::max(own_[r], own_[r + 1] + hop_) + bwd_[r];
  }

  int p_, v_;
  std::int64_t total_;  // forwards (and backwards) per rank: m * v
  int extra_;           // warmup forwards beyond Megatron's 1F1B: 1 under the combined 1F1B
  std::int64_t c_;      // phase offset of the backwards
  double hop_;
  const double *fwd_, *bwd_;  // [chunk * p + rank]
  // The three rows of clocks, then run_1f1b_steady's rows and durations (1F1B) or a fourth row and
  // the rows of durations of run_interleaved_steady.
  std::vector<double> buf_;
  double *dep_, *own_, *cur_;  // clocks after phases t-2, t-1 and t
  double* spare_;
};

// The group a schedule runs with: `stages` by default (Megatron-Core's), irrelevant without interleaving.
std::int64_t group_of(int stages, int chunks, std::int64_t micro_batches, std::int64_t microbatch_group) {
  if (chunks == 1) return micro_batches;
  return microbatch_group > 0 ? microbatch_group : stages;
}

}  // namespace

bool microbatch_group_accepted(std::int64_t group, int stages, std::int64_t micro_batches) {
  if (group < stages || group > micro_batches) return false;
  const std::int64_t last = micro_batches % group;
  return last == 0 || last >= stages;
}

int pipeline_peak_in_flight(int stages, int chunks, int rank, std::int64_t micro_batches, std::int64_t microbatch_group,
                            bool combined_1f1b) {
  const RankSchedule rs(stages, chunks, rank, micro_batches, group_of(stages, chunks, micro_batches, microbatch_group), combined_1f1b);
  return static_cast<int>(std::min(rs.warmup + 1, rs.total));
}

PipelineResult simulate_pipeline(const PipelineInput& in, std::vector<PipelineEvent>* trace) {
  const int p = in.stages, v = in.chunks;
  const std::int64_t m = in.micro_batches;
  PipelineResult res;
  res.busy_s.assign(p, 0);
  res.end_s.assign(p, 0);
  res.peak_in_flight.assign(p, 0);
  const std::int64_t g = group_of(p, v, m, in.microbatch_group);
  if (p < 1 || v < 1 || m < 1 || (v > 1 && !microbatch_group_accepted(g, p, m))) return res;
  // Orders beyond 2^31 ops are not representable (and not plausible: 16k stages x 64k micro-batches).
  if (2 * m * v * p >= (std::int64_t{1} << 31)) return res;

  const std::size_t chunks = static_cast<std::size_t>(p) * v;
  if (in.forward_s.size() != chunks || in.backward_s.size() != chunks) return res;
  for (int r = 0; r < p; ++r)
    for (int c = 0; c < v; ++c)
      // Every micro-batch passes every chunk once each way.
      res.busy_s[static_cast<std::size_t>(r)] += static_cast<double>(m) * (in.forward(r, c) + in.backward(r, c));
  // The phase sweep covers 1F1B and interleaving in groups of p (its phase offsets assume their
  // warmups, the combined 1F1B's included); other schedules take the event order.
  if (trace || (v > 1 && g != p)) {
    const ScheduleOrder& order = cached_order(p, v, m, g, in.combined_1f1b);
    res.peak_in_flight = order.peak_in_flight;
    simulate_in_event_order(in, order, res, trace);
  } else {
    for (int r = 0; r < p; ++r)
      res.peak_in_flight[static_cast<std::size_t>(r)] = pipeline_peak_in_flight(p, v, r, m, g, in.combined_1f1b);
    PhaseSweep(in).run(res.end_s.data());
  }
  res.makespan_s = *std::max_element(res.end_s.begin(), res.end_s.end());
  return res;
}

}  // namespace strata
