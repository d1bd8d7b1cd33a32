#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <tuple>

#include "costmodel/pipeline_sim.h"

using namespace strata;

namespace {

PipelineInput uniform(int p, int v, std::int64_t m, double f, double b, double p2p = 0) {
  PipelineInput in;
  in.stages = p;
  in.chunks = v;
  in.micro_batches = m;
  in.forward_s.assign(static_cast<std::size_t>(p * v), f);
  in.backward_s.assign(static_cast<std::size_t>(p * v), b);
  in.p2p_s = p2p;
  return in;
}

// The phase sweep adds up the same durations in the same order as the event order, except that a
// steady state which advances every rank alike is extrapolated: equal up to rounding.
void check_same_clocks(const PipelineResult& a, const PipelineResult& b) {
  REQUIRE(a.end_s.size() == b.end_s.size());
  for (std::size_t r = 0; r < a.end_s.size(); ++r) CHECK(a.end_s[r] == doctest::Approx(b.end_s[r]).epsilon(1e-12));
  CHECK(a.makespan_s == doctest::Approx(b.makespan_s).epsilon(1e-12));
}

// A pipeline with random durations per stage and chunk.
PipelineInput random_pipeline(int p, int v, std::int64_t m, double p2p, bool combined, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> dur(0.01, 3.0);
  PipelineInput in = uniform(p, v, m, 1, 2, p2p);
  in.combined_1f1b = combined;
  for (double& d : in.forward_s) d = dur(rng);
  for (double& d : in.backward_s) d = dur(rng);
  return in;
}

// The untraced fast path (every prediction's phase sweep) against the traced event order's result.
void check_sweep_matches(const PipelineInput& in, const PipelineResult& traced) {
  const PipelineResult swept = simulate_pipeline(in);
  check_same_clocks(swept, traced);
  CHECK(swept.busy_s == traced.busy_s);
  CHECK(swept.peak_in_flight == traced.peak_in_flight);
}

void check_sweep_matches_event_order(const PipelineInput& in) {
  CAPTURE(in.stages);
  CAPTURE(in.chunks);
  CAPTURE(in.micro_batches);
  CAPTURE(in.p2p_s);
  CAPTURE(in.combined_1f1b);
  std::vector<PipelineEvent> trace;
  const PipelineResult traced = simulate_pipeline(in, &trace);
  REQUIRE(traced.makespan_s > 0);
  check_sweep_matches(in, traced);
}

// Every op of a schedule exactly once, never two at a time on a stage, after its dependencies; the
// untraced path equal to the traced one; in-flight peaks as counted from the trace.
void check_schedule_trace(const PipelineInput& in) {
  const int p = in.stages, v = in.chunks;
  const std::int64_t m = in.micro_batches;
  std::vector<PipelineEvent> trace;
  PipelineResult r = simulate_pipeline(in, &trace);
  REQUIRE(trace.size() == static_cast<std::size_t>(2 * m * v * p));
  std::set<std::tuple<int, int, std::int64_t, bool>> seen;
  std::map<std::tuple<int, int, std::int64_t, bool>, PipelineEvent> by_key;
  double latest = 0;
  for (const auto& e : trace) {
    CHECK(e.end_s > e.start_s);
    CHECK(e.chunk < v);
    CHECK(e.micro_batch < m);
    auto key = std::tuple{e.stage, e.chunk, e.micro_batch, e.backward};
    CHECK(seen.insert(key).second);
    by_key[key] = e;
    latest = std::max(latest, e.end_s);
  }
  CHECK(latest == doctest::Approx(r.makespan_s));
  // The untraced fast path gives the traced result, and per-stage in-flight peaks equal those
  // counted from the trace.
  check_sweep_matches(in, r);
  for (int s = 0; s < p; ++s) {
    std::vector<std::pair<double, int>> steps;
    for (const auto& e : trace)
      if (e.stage == s) steps.push_back({e.start_s, e.backward ? -1 : 1});
    std::sort(steps.begin(), steps.end());
    int f = 0, peak = 0;
    for (const auto& [t, d] : steps) peak = std::max(peak, f += d);
    CHECK(r.peak_in_flight[s] == peak);
    CHECK(pipeline_peak_in_flight(p, v, s, m, in.microbatch_group, in.combined_1f1b) == peak);  // the closed form the search uses
  }
  for (int s = 0; s < p; ++s) {
    std::vector<PipelineEvent> mine;
    for (const auto& e : trace)
      if (e.stage == s) mine.push_back(e);
    std::sort(mine.begin(), mine.end(), [](const auto& a, const auto& b) { return a.start_s < b.start_s; });
    for (std::size_t i = 1; i < mine.size(); ++i) CHECK(mine[i].start_s >= mine[i - 1].end_s - 1e-12);
  }
  // Dependencies: a forward follows the previous virtual stage's forward plus the transfer;
  // a backward follows the next virtual stage's backward and its own forward. (One stage sends
  // nothing between its chunks.)
  const double hop = p > 1 ? in.p2p_s : 0.0;
  for (const auto& [key, e] : by_key) {
    auto [s, c, mb, bwd] = key;
    const int vs = c * p + s;
    if (!bwd && vs > 0) {
      const auto& prev = by_key.at({(vs - 1) % p, (vs - 1) / p, mb, false});
      CHECK(e.start_s >= prev.end_s + hop - 1e-12);
    }
    if (bwd) {
      CHECK(e.start_s >= by_key.at({s, c, mb, false}).end_s - 1e-12);
      if (vs < p * v - 1) {
        const auto& next = by_key.at({(vs + 1) % p, (vs + 1) / p, mb, true});
        CHECK(e.start_s >= next.end_s + hop - 1e-12);
      }
    }
  }
}

}  // namespace

TEST_SUITE("costmodel") {
TEST_CASE("simulate_pipeline") {
  SUBCASE("1F1B with uniform stages: makespan (m + p - 1)(F + B)") {
    // Narayanan et al. 2021 §2.2.1: the bubble of PipeDream-Flush is (p - 1)(t_f + t_b).
    for (auto [p_, m_, f, b] : {std::tuple{4, 8, 1.0, 2.0}, std::tuple{8, 32, 0.3, 0.7}, std::tuple{16, 192, 1.0, 2.0},
                                std::tuple{2, 1, 1.0, 1.0}, std::tuple{1, 10, 1.0, 3.0}}) {
      const auto p = p_, m = m_;  // plain names: clang 14 cannot capture structured bindings (CAPTURE)
      CAPTURE(p);
      CAPTURE(m);
      PipelineResult r = simulate_pipeline(uniform(p, 1, m, f, b));
      CHECK(r.makespan_s == doctest::Approx((m + p - 1) * (f + b)).epsilon(1e-12));
      for (int s = 0; s < p; ++s) CHECK(r.busy_s[s] == doctest::Approx(m * (f + b)).epsilon(1e-12));
    }
  }
  SUBCASE("1F1B peak in-flight micro-batches: stage i holds min(p - i, m)") {
    for (std::int64_t m : {2, 5, 64}) {
      CAPTURE(m);
      PipelineResult r = simulate_pipeline(uniform(6, 1, m, 1, 2));
      for (int i = 0; i < 6; ++i) CHECK(r.peak_in_flight[i] == std::min<std::int64_t>(6 - i, m));
    }
  }
  SUBCASE("a slower stage dominates") {
    const int p = 4;
    const std::int64_t m = 64;
    PipelineInput in = uniform(p, 1, m, 1, 2);
    in.forward(2, 0) = 2;
    in.backward(2, 0) = 4;
    PipelineResult r = simulate_pipeline(in);
    // At least the slow stage's own work; at most the all-slow pipeline (the schedule is monotone).
    CHECK(r.makespan_s >= m * 6.0);
    CHECK(r.makespan_s <= (m + p - 1) * 6.0 + 1e-9);
    CHECK(r.makespan_s > simulate_pipeline(uniform(p, 1, m, 1, 2)).makespan_s);
    CHECK(r.busy_s[2] == doctest::Approx(m * 6.0));
    CHECK(std::max_element(r.busy_s.begin(), r.busy_s.end()) - r.busy_s.begin() == 2);
  }
  SUBCASE("p2p transfers lengthen the critical path") {
    const int p = 4;
    const double c = 0.1;
    PipelineResult r0 = simulate_pipeline(uniform(p, 1, 8, 1, 2));
    PipelineResult r1 = simulate_pipeline(uniform(p, 1, 8, 1, 2, c));
    CHECK(r1.makespan_s > r0.makespan_s);
    // Micro-batch 0 alone crosses p-1 boundaries forward and p-1 backward.
    CHECK(r1.makespan_s >= p * 3.0 + 2 * (p - 1) * c - 1e-12);
    // A single stage has no neighbour to talk to.
    CHECK(simulate_pipeline(uniform(1, 1, 8, 1, 2, 5.0)).makespan_s == doctest::Approx(8 * 3.0));
  }
  SUBCASE("interleaved: stage i warms up (p - i - 1)*2 + (v - 1)*p chunks, so holds one more, capped at m*v") {
    // Megatron-LM schedules.py, forward_backward_pipelining_with_interleaving: num_warmup_microbatches.
    for (auto [p_, v_, m_] : {std::tuple{4, 2, std::int64_t{8}}, std::tuple{4, 3, std::int64_t{16}}, std::tuple{8, 2, std::int64_t{64}},
                              std::tuple{4, 2, std::int64_t{4}}}) {
      const auto p = p_, v = v_;
      const auto m = m_;
      CAPTURE(p);
      CAPTURE(v);
      CAPTURE(m);
      PipelineResult r = simulate_pipeline(uniform(p, v, m, 1, 2));
      REQUIRE(r.makespan_s > 0);
      for (int i = 0; i < p; ++i) {
        const std::int64_t expected = std::min<std::int64_t>(static_cast<std::int64_t>(p - i - 1) * 2 + (v - 1) * p + 1, m * v);
        CHECK(r.peak_in_flight[i] == expected);
      }
    }
  }
  SUBCASE("interleaving divides the bubble by v for the same work") {
    // Narayanan et al. 2021 §2.2.2: with each rank's layers split into v chunks, the bubble of
    // interleaved 1F1B is (p - 1)(t_f + t_b) / v, t_f and t_b being a whole rank's times.
    const double F = 1, B = 2;
    for (int p : {2, 4, 8})
      for (int v : {1, 2, 3, 4})
        for (std::int64_t m : {8, 16, 64}) {
          CAPTURE(p);
          CAPTURE(v);
          CAPTURE(m);
          PipelineResult r = simulate_pipeline(uniform(p, v, m, F / v, B / v));
          const double work = static_cast<double>(m) * (F + B);
          CHECK(r.makespan_s - work == doctest::Approx((p - 1) * (F + B) / v).epsilon(1e-9));
          for (int s = 0; s < p; ++s) CHECK(r.busy_s[s] == doctest::Approx(work).epsilon(1e-12));
        }
    CHECK(simulate_pipeline(uniform(4, 2, 16, 0.5, 1)).makespan_s < simulate_pipeline(uniform(4, 1, 16, 1, 2)).makespan_s);
  }
  SUBCASE("the trace has 2*m*v*p events, each op exactly once, never overlapping on a stage") {
    for (auto [p_, v_, m] : {std::tuple{4, 1, std::int64_t{6}}, std::tuple{4, 2, std::int64_t{8}}, std::tuple{3, 3, std::int64_t{6}}}) {
      const auto p = p_, v = v_;
      CAPTURE(p);
      CAPTURE(v);
      PipelineInput in = uniform(p, v, m, 1, 2, 0.05);
      in.forward(1, 0) = 1.5;  // uneven, to stress the ordering
      check_schedule_trace(in);
    }
  }
  SUBCASE("micro-batch groups: Megatron-Core's schedule table (schedules.py, PP2 N3 M5 VP2)") {
    // get_schedule_table's docstring: virtual micro-batch 0..9 runs micro-batch 0 1 2 0 1 2 3 4 3 4
    // on model chunk 0 0 0 1 1 1 0 0 1 1. Every rank runs its forwards in that order.
    PipelineInput in = uniform(2, 2, 5, 1, 2, 0.01);
    in.microbatch_group = 3;
    std::vector<PipelineEvent> trace;
    REQUIRE(simulate_pipeline(in, &trace).makespan_s > 0);
    const std::vector<std::pair<std::int64_t, int>> table = {{0, 0}, {1, 0}, {2, 0}, {0, 1}, {1, 1},
                                                             {2, 1}, {3, 0}, {4, 0}, {3, 1}, {4, 1}};
    for (int s = 0; s < 2; ++s) {
      std::vector<PipelineEvent> forwards;
      for (const auto& e : trace)
        if (e.stage == s && !e.backward) forwards.push_back(e);
      std::sort(forwards.begin(), forwards.end(), [](const auto& a, const auto& b) { return a.start_s < b.start_s; });
      std::vector<std::pair<std::int64_t, int>> order;
      for (const auto& e : forwards) order.push_back({e.micro_batch, e.chunk});
      CHECK(order == table);
    }
    check_schedule_trace(in);
  }
  SUBCASE("micro-batch groups: every group Megatron-Core accepts runs each op once, after its dependencies") {
    std::mt19937_64 rng(20261125);
    std::uniform_real_distribution<double> dur(0.01, 3.0);
    int cases = 0;
    for (int p : {2, 3, 4, 5})
      for (int v : {2, 3})
        for (std::int64_t m = 1; m <= 24; ++m)
          for (std::int64_t g = p; g <= m; ++g) {
            if (m % g != 0 && m % g < p) continue;  // schedules.py refuses a last group shorter than pp
            CAPTURE(p);
            CAPTURE(v);
            CAPTURE(m);
            CAPTURE(g);
            PipelineInput in = uniform(p, v, m, 1, 2, 0.05);
            in.microbatch_group = g;
            for (double& d : in.forward_s) d = dur(rng);
            for (double& d : in.backward_s) d = dur(rng);
            check_schedule_trace(in);
            ++cases;
          }
    CHECK(cases > 500);
  }
  SUBCASE("combined 1F1B (MoE all-to-all overlap): one more warm-up forward on every rank") {
    // schedules.py get_pp_rank_microbatches: num_warmup_microbatches + 1 with
    // overlap_moe_expert_parallel_comm; without pipelining, forward i+1 runs with backward i.
    PipelineInput one = uniform(1, 1, 6, 1, 2);
    one.combined_1f1b = true;
    const PipelineResult r1 = simulate_pipeline(one);
    CHECK(r1.peak_in_flight[0] == 2);
    CHECK(r1.makespan_s == doctest::Approx(6 * 3.0));
    PipelineInput in = uniform(4, 2, 8, 1, 2, 0.05);
    in.combined_1f1b = true;
    const PipelineResult r = simulate_pipeline(in);
    for (int i = 0; i < 4; ++i) CHECK(r.peak_in_flight[i] == std::min<std::int64_t>((4 - i - 1) * 2 + 4 + 2, 16));
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> dur(0.01, 3.0);
    for (int p : {1, 2, 3, 4})
      for (int v : {1, 2, 3})
        for (std::int64_t m : {1, 2, 3, 4, 6, 8, 9, 12}) {
          if (v > 1 && m < p) continue;
          CAPTURE(p);
          CAPTURE(v);
          CAPTURE(m);
          PipelineInput c = uniform(p, v, m, 1, 2, 0.05);
          c.combined_1f1b = true;
          c.microbatch_group = v > 1 && m % p != 0 ? m : 0;  // one group where pp does not divide
          for (double& d : c.forward_s) d = dur(rng);
          for (double& d : c.backward_s) d = dur(rng);
          check_schedule_trace(c);
        }
  }
  SUBCASE("micro-batch groups of pp are the default schedule") {
    PipelineInput in = uniform(4, 2, 12, 1, 2, 0.1);
    in.forward(2, 1) = 1.7;
    const PipelineResult by_default = simulate_pipeline(in);
    in.microbatch_group = 4;
    CHECK(simulate_pipeline(in).end_s == by_default.end_s);
    in.microbatch_group = 6;  // other groups, another schedule: more warmup forwards
    const PipelineResult grouped = simulate_pipeline(in);
    REQUIRE(grouped.makespan_s > 0);
    CHECK(grouped.peak_in_flight[0] == (4 - 0 - 1) * 2 + 6 + 1);
  }
  SUBCASE("the phase sweep (untraced) times every schedule like the event order (traced), up to rounding") {
    // Uneven stages and chunks, with and without transfers, small and large m relative to p (all
    // warmup, no steady state, long steady state), p = 1, 2, 3 (wrap-around dependencies), with and
    // without the combined 1F1B's extra warmup forward.
    std::mt19937_64 rng(20240517);
    int cases = 0;
    for (int p : {1, 2, 3, 4, 5, 8, 16})
      for (int v : {1, 2, 3, 4})
        for (std::int64_t m : {1, 2, 3, 4, 6, 8, 12, 16, 32, 48})
          for (double p2p : {0.0, 0.07, 2.5})
            for (bool combined : {false, true}) {
              if (v > 1 && m % p != 0) continue;
              check_sweep_matches_event_order(random_pipeline(p, v, m, p2p, combined, rng));
              ++cases;
            }
    CHECK(cases > 300);
  }
  SUBCASE("long steady states, extrapolated once every rank advances alike, match the event order") {
    // Uneven stages (the slowest anywhere), with and without transfers: the steady state settles
    // into the slowest stage's period after a transient, and the sweep adds the rest at once, per
    // pair of phases under 1F1B, per period of p*v pairs (the durations repeat) when interleaved.
    std::mt19937_64 rng(7);
    for (int p : {2, 3, 5, 8, 16})
      for (int v : {1, 2, 3, 4})
        for (std::int64_t m : v == 1 ? std::vector<std::int64_t>{64, 333, 1000} : std::vector<std::int64_t>{48 * p, 125 * p})
          for (double p2p : {0.0, 0.07, 2.5})
            for (bool combined : {false, true}) check_sweep_matches_event_order(random_pipeline(p, v, m, p2p, combined, rng));
  }
  SUBCASE("inconsistent input returns makespan 0") {
    CHECK(simulate_pipeline(uniform(4, 2, 6, 1, 2)).makespan_s == 0);  // groups of p = 4 leave a last group of 2 < p
    PipelineInput grouped = uniform(4, 2, 6, 1, 2);
    grouped.microbatch_group = 5;  // last group 1 < p
    CHECK(simulate_pipeline(grouped).makespan_s == 0);
    grouped.microbatch_group = 3;  // fewer than p
    CHECK(simulate_pipeline(grouped).makespan_s == 0);
    grouped.microbatch_group = 6;  // one group of all six: legal
    CHECK(simulate_pipeline(grouped).makespan_s > 0);
    CHECK(simulate_pipeline(uniform(4, 1, 0, 1, 2)).makespan_s == 0);
    PipelineInput none;
    none.stages = 0;
    CHECK(simulate_pipeline(none).makespan_s == 0);
  }
}
}
