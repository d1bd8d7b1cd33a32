#!/usr/bin/env python3
"""Split measured and predicted step times into a time per micro-batch and a fixed time per step.

A published configuration measured at several global batch sizes (the same plan, only the number
of micro-batches per step changing) gives a line: step time = fixed + per_microbatch x count. The
fixed part holds what a step does once (optimizer, exposed gradient reduction, host overhead, the
pipeline's fill and drain); the slope holds the layers' work. Comparing the two lines of
`strata validate` with the measured ones tells which of the two strata gets wrong, where a single
MAPE mixes them.

    python3 scripts/step_slope.py --runs ../shared/validation/modern_runs.json --only simumax

Prints one line per configuration with at least two micro-batch counts (--json: one JSON object
each). Exit 1 when no configuration has two.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

# The fields that define a configuration; the global batch (and so the micro-batch count) and the
# measurements are what may differ between its runs.
CONFIG_FIELDS = ("source_group", "model_name", "num_layers", "hidden_size", "seq_length", "gpu_type", "num_gpus", "tp",
                 "pp", "dp", "cp", "ep", "vpp", "micro_batch_size", "precision", "recompute", "framework",
                 "zero_or_dist_optimizer")


def microbatches(r):
    n = r.get("num_microbatches_per_replica")
    if n:
        return n
    denom = (r.get("micro_batch_size") or 0) * (r.get("dp") or 0)
    return r["global_batch_size"] / denom if denom else None


def measured_step_s(r):
    t = r.get("meas_iteration_time_s") or r.get("derived_iteration_time_s")
    if t:
        return t
    tps = r.get("meas_tokens_per_sec_per_gpu") or r.get("derived_tokens_per_sec_per_gpu")
    if tps:
        return r["global_batch_size"] * r["seq_length"] / (tps * r["num_gpus"])
    return None


def line(points):
    """Least-squares intercept and slope of (x, y) points."""
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    slope = sum((x - mx) * (y - my) for x, y in points) / sxx
    return my - slope * mx, slope


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", required=True, help="runs file in the format of shared/validation/public_runs.json")
    ap.add_argument("--only", action="append", default=[], help="passed to strata validate --only (repeatable)")
    ap.add_argument("--strata", default=os.path.join(os.path.dirname(__file__), "..", "build", "planner", "strata"))
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()

    with open(a.runs) as f:
        data = json.load(f)
    records = {r["id"]: r for r in (data["runs"] if isinstance(data, dict) else data)}
    cmd = [a.strata, "validate", "--runs", a.runs, "--json"] + [x for o in a.only for x in ("--only", o)]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} exited {out.returncode}: {out.stderr.strip()}")

    configs = {}
    for text in out.stdout.splitlines():
        p = json.loads(text)
        r = records.get(p["id"])
        if r is None or p.get("iteration_time_s") is None:
            continue
        m, n = measured_step_s(r), microbatches(r)
        if m is None or n is None:
            continue
        key = json.dumps([r.get(k) for k in CONFIG_FIELDS])
        configs.setdefault(key, []).append((n, m, p["iteration_time_s"], p["id"]))

    rows = []
    for points in configs.values():
        if len({n for n, *_ in points}) < 2:
            continue
        points.sort()
        m_fixed, m_slope = line([(n, m) for n, m, _, _ in points])
        p_fixed, p_slope = line([(n, p) for n, _, p, _ in points])
        rows.append({"runs": [i for *_, i in points], "microbatches": [n for n, *_ in points],
                     "measured_per_microbatch_s": m_slope, "measured_fixed_s": m_fixed,
                     "predicted_per_microbatch_s": p_slope, "predicted_fixed_s": p_fixed,
                     "per_microbatch_ratio": m_slope / p_slope if p_slope > 0 else None})
    if not rows:
        sys.exit("no configuration was measured at two or more micro-batch counts")
    for row in rows:
        if a.json:
            print(json.dumps(row))
        else:
            print(f"{row['runs'][0][:56]:56s} x{len(row['runs'])}  per micro-batch: measured "
                  f"{row['measured_per_microbatch_s'] * 1e3:7.1f} ms, predicted {row['predicted_per_microbatch_s'] * 1e3:7.1f} ms "
                  f"(x{row['per_microbatch_ratio']:.3f})  fixed: measured {row['measured_fixed_s']:6.3f} s, "
                  f"predicted {row['predicted_fixed_s']:6.3f} s")
    if not a.json:
        ratios = [r["per_microbatch_ratio"] for r in rows if r["per_microbatch_ratio"]]
        print(f"{len(rows)} configurations; measured over predicted time per micro-batch: median "
              f"{statistics.median(ratios):.3f}, range {min(ratios):.3f}-{max(ratios):.3f}")


if __name__ == "__main__":
    main()
