#include "search/primitives.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <unordered_set>

#include <fmt/format.h>

namespace strata {

namespace {

enum Dim { kTp, kPp, kDp, kCp };
constexpr std::array<const char*, 4> kDimName = {"tp", "pp", "dp", "cp"};

int& dim(ParallelPlan& p, Dim d) {
  switch (d) {
    case kTp: return p.tp;
    case kPp: return p.pp;
    case kDp: return p.dp;
    case kCp: return p.cp;
  }
  return p.tp;
}

// Bottlenecks that shrinking / growing a parallel degree relieves (Aceso Table 2, in this cost
// model's terms): less TP means less TP communication and larger GEMMs; less PP a smaller bubble
// and fewer p2p transfers; less DP (for the same GPUs) less gradient traffic; less CP less ring
// exchange. More TP, PP or CP shard weights and activations (memory, optimizer step).
bool shrink_relieves(Dim d, const std::string& k) {
  switch (d) {
    // Fewer tp or cp ranks give each GPU more work per op the host issues (host).
    case kTp: return k == "tp_comm" || k == "compute" || k == "host";
    case kPp: return k == "bubble" || k == "pp_comm" || k == "stage_time";
    case kDp: return k == "dp_comm" || k == "memory" || k == "optimizer";
    case kCp: return k == "cp_comm" || k == "host";
  }
  return false;
}
bool grow_relieves(Dim d, const std::string& k) {
  switch (d) {
    case kTp: return k == "memory" || k == "optimizer" || k == "recompute";
    case kPp: return k == "memory" || k == "optimizer" || k == "recompute";
    case kDp: return false;
    case kCp: return k == "memory" || k == "recompute";
  }
  return false;
}

// Largest divisor of n not above cap (at least 1).
int divisor_at_most(std::int64_t n, int cap) {
  int best = 1;
  for (int d : divisors(n))
    if (d <= cap) best = d;
  return best;
}

// Re-establishes what a change of degrees may have broken, keeping the other choices: an even
// split when pp changed, vpp and the micro-batch size shrunk to legal values, SP switched on when
// TP appears and the distributed optimizer when a data-parallel group appears.
void repair(ParallelPlan& p, const ParallelPlan& before, const Evaluator& ev) {
  const Job& w = ev.workload();
  const int L = w.model.num_layers;
  if (p.pp != before.pp) p.stage_layers.clear();
  if (p.tp > 1 && before.tp == 1) p.sequence_parallel = ev.options().sequence_parallel.value_or(true);
  if (p.dp * p.cp > 1 && before.dp * before.cp == 1) p.distributed_optimizer = true;
  const std::int64_t gbs = w.training.global_batch_size;
  if (p.dp > 0 && gbs % p.dp == 0) p.micro_batch_size = divisor_at_most(gbs / p.dp, p.micro_batch_size);
  if (p.vpp > 1) {
    const std::int64_t m = p.dp > 0 ? gbs / (static_cast<std::int64_t>(p.dp) * p.micro_batch_size) : 0;
    // Interleaving runs on the splits interleaved_stage_layers admits: even, Megatron's with the
    // embedding and loss counted as layers, or the balanced layout where neither exists.
    const std::optional<std::vector<int>> layout = interleaved_stage_layers(w.model, p.pp, p.vpp);
    const bool layout_ok = layout && (p.stage_layers.empty() ? L % (p.pp * p.vpp) == 0 : p.stage_layers == *layout);
    // Micro-batches pp does not divide interleave in larger groups (interleaved_microbatch_group).
    const bool schedulable = p.pp >= 2 && interleaved_microbatch_group(p, m) > 0;
    if (!schedulable || !layout_ok) {
      if (schedulable && p.stage_layers.empty() && layout && !layout->empty()) p.stage_layers = *layout;
      else p.vpp = 1;
    }
  }
  if (p.ep > 1 && (p.dp * p.cp) % p.ep != 0) p.ep = std::gcd(p.ep, p.dp * p.cp);
  canonicalize(p, L);
}

// Layers of each stage after moving `n` layers from stage a to stage b.
std::vector<int> moved(const ParallelPlan& p, int L, int a, int b, int n) {
  std::vector<int> layers = resolve_stage_layers(p, L);
  layers[a] -= n;
  layers[b] += n;
  return layers;
}

// Stage layer counts that equalize the stages' busy time (greedy water-filling): each stage's time
// is modelled as its fixed part (embedding, output layer, loss) plus layers x the per-layer time
// of the interior stages; layers go one at a time to the stage that would finish earliest.
std::vector<int> rebalanced(const Prediction& pred, int L) {
  const int pp = static_cast<int>(pred.stages.size());
  double per_layer = 0;
  int counted = 0;
  for (const auto& s : pred.stages)
    if ((s.stage > 0 && s.stage < pp - 1) || pp <= 2) {
      const double c = s.busy_s / std::max(1, s.layers);
      per_layer = counted == 0 ? c : std::min(per_layer, c);
      ++counted;
    }
  std::vector<int> out(pp, 1);
  if (per_layer <= 0) return out;
  std::vector<double> fixed(pp);
  for (int s = 0; s < pp; ++s) fixed[s] = std::max(0.0, pred.stages[s].busy_s - pred.stages[s].layers * per_layer);
  for (int left = L - pp; left > 0; --left) {
    int pick = 0;
    double best = INFINITY;
    for (int s = 0; s < pp; ++s) {
      const double t = fixed[s] + (out[s] + 1) * per_layer;
      if (t < best) {
        best = t;
        pick = s;
      }
    }
    ++out[pick];
  }
  return out;
}

struct Builder {
  const Evaluator& ev;
  const Evaluation& from;
  MoveScope scope;
  std::string kind;
  std::vector<Move> out;
  std::unordered_set<ParallelPlan, PlanHash> seen;

  void add(const std::string& name, ParallelPlan p, bool needs_repair = true) {
    if (scope == MoveScope::directed && !move_relieves(name, kind)) return;
    if (needs_repair) repair(p, from.plan, ev);
    else canonicalize(p, ev.workload().model.num_layers);
    if (p == from.plan || !seen.insert(p).second) return;
    if (!ev.illegal_reason(p).empty()) return;
    out.push_back({name, std::move(p)});
  }
};

void trades(Builder& b) {
  for (Dim a : {kTp, kPp, kDp, kCp})
    for (Dim c : {kTp, kPp, kDp, kCp}) {
      if (a == c) continue;
      ParallelPlan p = b.from.plan;
      if (dim(p, a) < 2) continue;
      const int q = smallest_prime_factor(dim(p, a));
      dim(p, a) /= q;
      dim(p, c) *= q;
      b.add(fmt::format("{}->{}", kDimName[a], kDimName[c]), p);
    }
}

// Micro-batch sizes up to two divisor steps away (bigger GEMMs and fewer p2p messages, or less
// activation memory and a smaller bubble).
void micro_batch(Builder& b) {
  const ParallelPlan& f = b.from.plan;
  const std::vector<int> ds = divisors(b.ev.workload().training.global_batch_size / f.dp);
  const auto at = std::find(ds.begin(), ds.end(), f.micro_batch_size) - ds.begin();
  if (at == static_cast<std::ptrdiff_t>(ds.size())) return;
  for (std::ptrdiff_t i = std::max<std::ptrdiff_t>(0, at - 2); i < std::min<std::ptrdiff_t>(ds.size(), at + 3); ++i) {
    if (i == at) continue;
    ParallelPlan p = f;
    p.micro_batch_size = ds[i];
    b.add(i > at ? "mbs+" : "mbs-", p);
  }
}

// Every legal virtual pipeline size (they are few: the chunk counts a stage divides into, up to one
// layer each with the embedding and loss counted, max_virtual_stages); the jump
// matters because the bubble shrinks as 1/vpp while each step alone may not pay for its p2p.
void virtual_pipeline(Builder& b) {
  const ParallelPlan& f = b.from.plan;
  const int L = b.ev.workload().model.num_layers;
  if (f.pp < 2) return;
  for (int v = 1; v <= max_virtual_stages(b.ev.workload().model, f.pp); ++v) {
    if (v == f.vpp) continue;
    // Without interleaving: Megatron's split with the embedding and loss counted where it exists,
    // else the even one (remainder layers in front).
    const std::optional<std::vector<int>> layout =
        v == 1 ? accounted_stage_layers(L, f.pp, 1) : interleaved_stage_layers(b.ev.workload().model, f.pp, v);
    if (!layout) continue;
    ParallelPlan p = f;
    p.vpp = v;
    p.stage_layers = *layout;
    // Partial full recompute keeps its layers per stage, rounded up to whole layers per model chunk
    // (Megatron counts them per chunk); canonicalize turns "every layer" into -1.
    if (p.recompute.granularity == RecomputeGranularity::full && p.recompute.num_layers > 0)
      p.recompute.num_layers = (p.recompute.num_layers + v - 1) / v * v;
    b.add(v > f.vpp ? "vpp+" : "vpp-", p, false);
  }
}

// Selective-recompute module sets the search tries beside Megatron's default (the attention core):
// MLA's up-projections and norms, with and without the core (DeepSeek-V3's recipe, its technical
// report section 3.2.3: they keep MLA's large projected activations out of memory for little
// work), and a dense layer's MLP with the core. Not moe_act: it needs grouped-GEMM experts, which
// strata's launch does not write.
std::vector<unsigned> selective_rungs(const ModelSpec& m) {
  const unsigned applicable = applicable_recompute_modules(m);
  std::vector<unsigned> out = {kRecomputeCoreAttn};
  if (applicable & kRecomputeMlaUpProj) {
    out.push_back(kRecomputeLayernorm | kRecomputeMlaUpProj);
    out.push_back(kRecomputeCoreAttn | kRecomputeLayernorm | kRecomputeMlaUpProj);
  }
  if (applicable & kRecomputeMlp) out.push_back(kRecomputeCoreAttn | kRecomputeMlp);
  return out;
}

// The recompute ladder: none, selective, then full recompute of 1, 2, ... layers per stage, up to
// every layer (Megatron's --recompute-method block --recompute-num-layers n, or uniform). With
// interleaving the rungs are multiples of vpp (Megatron counts the layers per model chunk).
void recompute(Builder& b) {
  const ParallelPlan& f = b.from.plan;
  const std::vector<int> layers = resolve_stage_layers(f, b.ev.workload().model.num_layers);
  const int lmax = *std::max_element(layers.begin(), layers.end());
  const int step = std::max(1, f.vpp);
  const int jump = std::max(2 * step, (lmax / 4) / step * step);
  const auto g = f.recompute.granularity;
  auto with = [&](RecomputeGranularity gr, int n) {
    ParallelPlan p = f;
    p.recompute = {gr, n};
    return p;
  };
  const auto none = RecomputeGranularity::none, sel = RecomputeGranularity::selective, full = RecomputeGranularity::full;
  // Selective recompute of each module set (Megatron's default, the attention core, among them);
  // between two sets, "+" recomputes a superset, "-" a subset, "~" another set (which may save
  // memory or time).
  for (unsigned mods : selective_rungs(b.ev.workload().model)) {
    ParallelPlan p = with(sel, -1);
    p.recompute.modules = mods;
    const unsigned cur = f.recompute.modules;
    const char* name = g == none ? "recompute+"
                       : g == full ? "recompute-"
                       : (mods & cur) == cur ? "recompute+"
                       : (mods & cur) == mods ? "recompute-"
                                              : "recompute~";
    b.add(name, p, false);
  }
  if (g == none) {
    b.add("recompute+", with(full, step), false);
    b.add("recompute+", with(full, jump), false);
    b.add("recompute+", with(full, -1), false);
  } else if (g == sel) {
    b.add("recompute-", with(none, -1), false);
    b.add("recompute+", with(full, step), false);
    b.add("recompute+", with(full, jump), false);
    b.add("recompute+", with(full, -1), false);
  } else {
    const int n = f.recompute.num_layers < 0 ? lmax : f.recompute.num_layers;
    if (n < lmax) {
      b.add("recompute+", with(full, n + step), false);
      b.add("recompute+", with(full, std::min(lmax, n + jump)), false);
      b.add("recompute+", with(full, -1), false);
    }
    if (n > step) {
      b.add("recompute-", with(full, n - step), false);
      b.add("recompute-", with(full, std::max(step, n - jump)), false);
    }
    b.add("recompute-", with(none, -1), false);
  }
}

// Fine-grained activation offloading (Megatron-Core --offload-modules), with --allow-offload: the
// module sets Megatron-Bridge's recipes run (DeepSeek-V3's core_attn attn_proj, Nemotron 3.5's
// expert_fc1) and the attention block whole; the expert modules are legal only with grouped-GEMM
// experts (check_plan). Between two sets "+" offloads a superset, "-" a subset, "~" another set;
// "recompute->offload" drops the recompute for a set, the trade offloading exists for: copies the
// layer's own work hides instead of work done twice.
std::vector<unsigned> offload_rungs(const ModelSpec& m) {
  std::vector<unsigned> out = {kOffloadCoreAttn | kOffloadAttnProj, kOffloadQkvLinear | kOffloadCoreAttn | kOffloadAttnProj};
  if (m.moe) {
    out.push_back(kOffloadExpertFc1);
    out.push_back(kOffloadCoreAttn | kOffloadAttnProj | kOffloadExpertFc1);
  }
  return out;
}

void offloading(Builder& b) {
  if (!b.ev.options().allow_offload) return;
  const ParallelPlan& f = b.from.plan;
  const unsigned cur = f.offload.modules;
  for (unsigned mods : offload_rungs(b.ev.workload().model)) {
    ParallelPlan p = f;
    p.offload.modules = mods;
    b.add((mods & cur) == cur ? "offload+" : (mods & cur) == mods ? "offload-" : "offload~", p, false);
    if (f.recompute.granularity != RecomputeGranularity::none) {
      p.recompute = RecomputeSpec{};
      b.add("recompute->offload", p, false);
    }
  }
  if (cur != 0) {
    ParallelPlan p = f;
    p.offload.modules = 0;
    b.add("offload-", p, false);
  }
}

void toggles(Builder& b) {
  ParallelPlan p = b.from.plan;
  p.sequence_parallel = !p.sequence_parallel;
  b.add("sp", p, false);
  p = b.from.plan;
  p.distributed_optimizer = !p.distributed_optimizer;
  b.add("dist-opt", p, false);
  if (b.ev.workload().model.moe) {
    p = b.from.plan;
    p.ep *= 2;
    b.add("ep+", p, false);
    if (b.from.plan.ep % 2 == 0) {
      p = b.from.plan;
      p.ep /= 2;
      b.add("ep-", p, false);
    }
    // Expert tensor parallelism: split each expert like the dense layers (etp = tp), or not.
    if (b.from.plan.tp > 1) {
      p = b.from.plan;
      p.etp = p.etp == 1 ? p.tp : 1;
      b.add("etp", p, false);
    }
  }
}

// Moves a layer off the stage that limits the iteration (the slowest, or the one out of memory)
// to its neighbours and to the least loaded stage (Aceso's op-moving primitive at layer
// granularity; Megatron places layers per stage, not ops).
void stage_moves(Builder& b) {
  const ParallelPlan& f = b.from.plan;
  const int L = b.ev.workload().model.num_layers;
  if (f.pp < 2 || f.vpp > 1) return;
  const int pp = f.pp;
  const std::vector<int> layers = resolve_stage_layers(f, L);
  auto move = [&](const char* tag, int a, int c) {
    if (a < 0 || c < 0 || a >= pp || c >= pp || a == c || layers[a] < 2) return;
    ParallelPlan p = f;
    p.stage_layers = moved(f, L, a, c, 1);
    b.add(fmt::format("layer{} {}->{}", tag, a, c), p, false);
  };
  // Memory: off the heaviest stage.
  if (!b.from.stage_memory_GiB.empty()) {
    const auto& mem = b.from.stage_memory_GiB;
    const int heavy = static_cast<int>(std::max_element(mem.begin(), mem.end()) - mem.begin());
    const int light = static_cast<int>(std::min_element(mem.begin(), mem.end()) - mem.begin());
    move("@memory", heavy, heavy - 1);
    move("@memory", heavy, heavy + 1);
    move("@memory", heavy, light);
  }
  // Time: off the busiest stage, and a whole rebalance.
  if (b.from.prediction && static_cast<int>(b.from.prediction->stages.size()) == pp) {
    const auto& st = b.from.prediction->stages;
    auto busy = [&](int s) { return st[s].busy_s; };
    int slow = 0, fast = 0;
    for (int s = 1; s < pp; ++s) {
      if (busy(s) > busy(slow)) slow = s;
      if (busy(s) < busy(fast)) fast = s;
    }
    move("@time", slow, slow - 1);
    move("@time", slow, slow + 1);
    move("@time", slow, fast);
    ParallelPlan p = f;
    p.stage_layers = rebalanced(*b.from.prediction, L);
    b.add("rebalance", p, false);
  }
}

}  // namespace

bool move_relieves(const std::string& name, const std::string& k) {
  for (Dim a : {kTp, kPp, kDp, kCp})
    for (Dim c : {kTp, kPp, kDp, kCp})
      if (a != c && name == fmt::format("{}->{}", kDimName[a], kDimName[c])) return shrink_relieves(a, k) || grow_relieves(c, k);
  // A larger micro-batch also lengthens the GPU work the host issues per layer.
  if (name == "mbs+") return k == "compute" || k == "tp_comm" || k == "pp_comm" || k == "cp_comm" || k == "host";
  if (name == "mbs-") return k == "memory" || k == "bubble" || k == "recompute";
  if (name == "vpp+") return k == "bubble";
  if (name == "vpp-") return k == "pp_comm" || k == "memory" || k == "stage_time";
  if (name == "recompute+") return k == "memory";
  if (name == "recompute-") return k == "recompute" || k == "compute" || k == "stage_time";
  if (name == "recompute~") return k == "memory" || k == "recompute";
  if (name == "offload+") return k == "memory";
  if (name == "offload-") return k == "offload";
  if (name == "offload~") return k == "memory" || k == "offload";
  if (name == "recompute->offload") return k == "recompute" || k == "compute" || k == "stage_time";
  if (name == "sp") return k == "memory" || k == "tp_comm";
  if (name == "dist-opt") return k == "memory" || k == "optimizer" || k == "dp_comm";
  if (name == "ep+") return k == "memory";
  if (name == "ep-") return k == "ep_comm";
  if (name == "etp") return k == "memory" || k == "ep_comm" || k == "compute";
  if (name.starts_with("layer@memory")) return k == "memory";
  if (name.starts_with("layer@time") || name == "rebalance") return k == "stage_time" || k == "bubble" || k == "recompute";
  return false;
}

std::vector<Move> propose_moves(const Evaluator& ev, const Evaluation& from, MoveScope scope) {
  Builder b{ev, from, scope, from.bottleneck_kind(), {}, {}};
  trades(b);
  micro_batch(b);
  virtual_pipeline(b);
  recompute(b);
  offloading(b);
  toggles(b);
  stage_moves(b);
  return std::move(b.out);
}

}  // namespace strata
