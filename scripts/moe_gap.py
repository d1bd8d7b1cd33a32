#!/usr/bin/env python3
"""Where a run's missing time sits: per layer and micro-batch, and against the predicted forward.

For each run with a measured throughput, the difference between the measured and the predicted step
time is spread over the critical stage's layers and the micro-batches of a step:

    gap per layer and micro-batch = (measured step - predicted step) / (micro-batches x layers)

A cost per FLOP would grow with the micro-batch size; a cost per kernel launch, per host-side call
or per layer would not. The script also prints what the gap would mean if the forward pass alone
were host-bound (the host issuing a layer's kernels slower than the GPU runs them, as after a
dropless MoE dispatcher's per-layer host synchronisation): the host time per layer forward that
reproduces the measurement, `implied host = predicted forward per layer + gap`. That figure is a
reading of the published measurement under that hypothesis, not something strata uses.

    python3 scripts/moe_gap.py --runs ../shared/validation/modern_runs.json --only mbridge

Prints one line per run (--json: one JSON object each, times in seconds).

To see how far one measured step's host time carries, fit it with `strata calibrate --steps
--fit moe-host` on each run alone: `python3 scripts/calibration_transfer.py --fit moe-host`.

Exit 1 when no selected run has both a measurement and a prediction.
"""
import argparse
import json
import os
import subprocess
import sys

from step_slope import measured_step_s  # the records' measured step time, one definition

STRATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "planner", "strata")


def microbatches(r):
    denom = (r.get("micro_batch_size") or 0) * (r.get("dp") or 0)
    if denom:
        return r["global_batch_size"] / denom
    return r.get("num_microbatches_per_replica")


def gap(r, p):
    """(record, micro-batches, layers of the critical stage, measured and predicted step, gap per
    layer and micro-batch, predicted forward per layer), or None without a measurement or prediction."""
    if r is None or p.get("error") is not None or "prediction" not in p:
        return None
    t_meas, m = measured_step_s(r), microbatches(r)
    if not t_meas or not m:
        return None
    crit = max(p["prediction"]["stages"], key=lambda s: s["busy_s"])
    layers = crit["layers"]
    t_pred = p["iteration_time_s"]
    return r, m, layers, t_meas, t_pred, (t_meas - t_pred) / (m * layers), crit["forward_s"] / layers


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", required=True, help="runs file in the format of shared/validation/public_runs.json")
    ap.add_argument("--only", action="append", default=[], help="only runs whose id or source_group contains this text")
    ap.add_argument("--strata", default=STRATA, help="the strata executable (default: build/planner/strata)")
    ap.add_argument("--json", action="store_true", help="one JSON object per run instead of the table")
    ap.add_argument("--exclude", action="append", default=[], help="leave out runs whose id contains this text (repeatable)")
    args = ap.parse_args()

    with open(args.runs) as f:
        data = json.load(f)
    records = {r["id"]: r for r in (data["runs"] if isinstance(data, dict) else data) if isinstance(r, dict) and "id" in r}
    cmd = [args.strata, "validate", "--runs", args.runs, "--json"]
    for o in args.only:
        cmd += ["--only", o]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"moe_gap.py: {' '.join(cmd)} failed ({out.returncode}): {out.stderr.strip()}")

    predictions = [json.loads(line) for line in out.stdout.splitlines()]
    predictions = [p for p in predictions if not any(x in p["id"] for x in args.exclude)]
    rows = 0
    if not args.json:
        print(f"{'run':46s} {'mbs':>3s} {'m':>5s} {'L':>3s} {'meas s':>8s} {'pred s':>8s} {'err%':>6s} "
              f"{'gap/layer-mb ms':>15s} {'pred fwd/layer ms':>17s} {'implied host ms':>15s}")
    for p in predictions:
        g = gap(records.get(p["id"]), p)
        if g is None:
            continue
        r, m, layers, t_meas, t_pred, gap_s, fwd_s = g
        rows += 1
        if args.json:
            print(json.dumps({"id": p["id"], "micro_batch_size": r.get("micro_batch_size"), "microbatches": m,
                              "layers": layers, "measured_s": t_meas, "predicted_s": t_pred,
                              "gap_per_layer_microbatch_s": gap_s, "predicted_forward_per_layer_s": fwd_s,
                              "implied_host_forward_per_layer_s": fwd_s + gap_s}))
            continue
        gap_ms, fwd_ms = 1e3 * gap_s, 1e3 * fwd_s
        print(f"{p['id'][:46]:46s} {r.get('micro_batch_size') or 0:3d} {m:5.0f} {layers:3d} {t_meas:8.2f} {t_pred:8.2f} "
              f"{100 * (t_meas / t_pred - 1):+6.1f} {gap_ms:15.2f} {fwd_ms:17.2f} {fwd_ms + gap_ms:15.2f}")
    if rows == 0:
        sys.exit("moe_gap.py: no selected run has both a measured step time and a prediction")


if __name__ == "__main__":
    main()
