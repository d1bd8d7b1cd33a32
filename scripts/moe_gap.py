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

With --transfer, each run in turn is the one measured step of a stack: its implied host time goes
into a calibration (the run's own coefficients plus host.moe_forward_s, the run listed as fitted),
`strata validate --calibration` predicts every other selected run with it, and the script prints
the absolute tokens/s/GPU error on those others (mean and median, and the mean over the runs of
the source's model family): how far one measurement of the host time carries, to compare with one kernel-throughput factor (scripts/calibration_transfer.py).
Select runs of one GPU: the calibration is applied to every selected run.

Exit 1 when no selected run has both a measurement and a prediction.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

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


def transfer(args, records, predictions):
    rows = []
    for src in predictions:
        g = gap(records.get(src["id"]), src)
        if g is None:
            continue
        host_s = g[6] + g[5]
        if not 0 <= host_s <= 1:
            continue
        cal = dict(src["calibration"])
        cal["source"] = f"host time implied by {src['id']} (scripts/moe_gap.py --transfer)"
        cal["host"] = {"moe_forward_s": host_s}
        cal["fit"] = {"runs": [{"id": src["id"]}]}
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(cal, f)
            path = f.name
        try:
            cmd = [args.strata, "validate", "--runs", args.runs, "--json", "--calibration", path]
            for o in args.only:
                cmd += ["--only", o]
            out = subprocess.run(cmd, capture_output=True, text=True)
            if out.returncode != 0:
                sys.exit(f"moe_gap.py: {' '.join(cmd)} failed ({out.returncode}): {out.stderr.strip()}")
        finally:
            os.unlink(path)
        family = records[src["id"]].get("model_family")
        errors, same = [], []
        for line in out.stdout.splitlines():
            p = json.loads(line)
            if p["id"] == src["id"] or any(x in p["id"] for x in args.exclude) or p.get("error") is not None:
                continue
            t_meas = measured_step_s(records[p["id"]])
            if t_meas:
                e = abs(t_meas / p["iteration_time_s"] - 1) * 100  # tokens/s/GPU error, in %
                errors.append(e)
                if records[p["id"]].get("model_family") == family:
                    same.append(e)
        if errors:
            rows.append({"calibrated_on": src["id"], "host_ms": 1e3 * host_s, "others": len(errors),
                         "mape_pct": statistics.mean(errors), "median_pct": statistics.median(errors),
                         "same_family": len(same), "same_family_mape_pct": statistics.mean(same) if same else None})
    if not rows:
        sys.exit("moe_gap.py: no selected run has both a measured step time and a prediction")
    for row in rows:
        if args.json:
            print(json.dumps(row))
        else:
            fam = (f"; the {row['same_family']} of its model family: MAPE {row['same_family_mape_pct']:5.1f}%"
                   if row["same_family"] else "")
            print(f"{row['calibrated_on'][:46]:46s} host {row['host_ms']:6.2f} ms  on the {row['others']} others: "
                  f"MAPE {row['mape_pct']:5.1f}%, median {row['median_pct']:5.1f}%{fam}")
    if not args.json:
        print(f"median over {len(rows)} sources: MAPE {statistics.median(r['mape_pct'] for r in rows):.1f}%")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", required=True, help="runs file in the format of shared/validation/public_runs.json")
    ap.add_argument("--only", action="append", default=[], help="only runs whose id or source_group contains this text")
    ap.add_argument("--strata", default=STRATA, help="the strata executable (default: build/planner/strata)")
    ap.add_argument("--json", action="store_true", help="one JSON object per run instead of the table")
    ap.add_argument("--exclude", action="append", default=[], help="leave out runs whose id contains this text (repeatable)")
    ap.add_argument("--transfer", action="store_true",
                    help="calibrate the host time on each run alone and predict the others with it")
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
    if args.transfer:
        transfer(args, records, predictions)
        return
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
