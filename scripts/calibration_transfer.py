#!/usr/bin/env python3
"""How far one measured step carries: calibrate on each run alone, predict all the others.

For every selected run with a measured throughput, `strata calibrate --steps RUNS --only ID` fits
the one kernel-throughput factor that makes that run's predicted iteration time match its
measurement (with --fit moe-host: the MoE layers' host time instead, `--fit moe-host`);
`strata validate --calibration` then predicts every other selected run with it.
The table gives, per calibration source, the fitted figure and the absolute tokens/s/GPU error on the
runs it was not fitted to (mean and median, and the mean over the runs of the source's model
family), which is what a user who measured one step of their stack can expect for the
configurations they did not measure.

    python3 scripts/calibration_transfer.py --runs ../shared/validation/modern_runs.json --only mbridge26 [--fit moe-host]

Only the Python standard library; strata from build/planner/strata unless --strata says otherwise.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


def measured_tokens_per_gpu(rec):
    """tokens/s/GPU as `strata validate` compares it: measured, else derived, else from the time."""
    for key in ("meas_tokens_per_sec_per_gpu", "derived_tokens_per_sec_per_gpu"):
        if isinstance(rec.get(key), (int, float)) and rec[key] > 0:
            return float(rec[key])
    t = rec.get("meas_iteration_time_s") or rec.get("derived_iteration_time_s")
    if isinstance(t, (int, float)) and t > 0 and rec.get("num_gpus"):
        return rec["global_batch_size"] * rec["seq_length"] / (t * rec["num_gpus"])
    return None


def run(cmd):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:
        sys.exit(f"cannot run {cmd[0]}: {e} (build strata first, or give --strata)")
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr.strip() or p.stdout.strip()}")
    return p.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", required=True, help="runs file in the format of shared/validation/public_runs.json")
    ap.add_argument("--only", action="append", default=[], help="runs whose id or source_group contains this text (repeatable)")
    ap.add_argument("--exclude", action="append", default=[], help="leave out runs whose id contains this text (repeatable)")
    ap.add_argument("--strata", default=os.path.join(os.path.dirname(__file__), "..", "build", "planner", "strata"))
    ap.add_argument("--fit", choices=("throughput", "moe-host"), default="throughput",
                    help="what strata calibrate --steps fits: one kernel-throughput factor, or the MoE layers' host time")
    ap.add_argument("--json", action="store_true", help="one JSON object per calibration source")
    args = ap.parse_args()

    try:
        with open(args.runs) as f:
            records = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"{args.runs}: cannot read the runs file: {e}")
    if not isinstance(records, list):
        sys.exit(f"{args.runs}: expected a JSON array of run records")

    def selected(rec):
        text = f"{rec.get('id', '')} {rec.get('source_group', '')}"
        return (not args.only or any(o in text for o in args.only)) and not any(x in rec.get("id", "") for x in args.exclude)

    chosen = [r for r in records if isinstance(r, dict) and selected(r) and measured_tokens_per_gpu(r)]
    if len(chosen) < 2:
        sys.exit(f"{args.runs}: need at least two selected runs with a measured throughput, found {len(chosen)}")
    measured = {r["id"]: measured_tokens_per_gpu(r) for r in chosen}
    family_of = {r["id"]: r.get("model_family") for r in chosen}
    filters = [w for o in args.only for w in ("--only", o)]

    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for rec in chosen:
            source = rec["id"]
            cal_path = os.path.join(tmp, "calibration.json")
            run([args.strata, "calibrate", "--steps", args.runs, "--only", source, "--fit", args.fit, "-o", cal_path])
            with open(cal_path) as f:
                fit = json.load(f)["fit"]
            factor = fit["throughput_scale"] if args.fit == "throughput" else 1e3 * fit["moe_forward_s"]
            out = run([args.strata, "validate", "--runs", args.runs, "--calibration", cal_path, "--json"] + filters)
            errors = {}
            for line in out.splitlines():
                if not line.strip():
                    continue
                p = json.loads(line)
                if p["id"] == source or p["id"] not in measured or p.get("tokens_per_sec_per_gpu") is None:
                    continue
                errors[p["id"]] = 100.0 * (p["tokens_per_sec_per_gpu"] / measured[p["id"]] - 1)
            abs_errors = [abs(e) for e in errors.values()]
            family = [abs(e) for i, e in errors.items() if family_of[i] == family_of[source]]
            results.append({"source": source, "fit": args.fit, "runs": len(errors), "at_bound": fit["at_bound"],
                            ("throughput_scale" if args.fit == "throughput" else "moe_forward_host_ms"): factor,
                            "mape_pct": statistics.mean(abs_errors), "median_abs_pct": statistics.median(abs_errors),
                            "same_family_mape_pct": statistics.mean(family) if family else None, "errors_pct": errors})

    if args.json:
        for r in results:
            print(json.dumps(r))
        return
    figure = "throughput_scale" if args.fit == "throughput" else "moe_forward_host_ms"
    print(f"{'calibrated on':48s} {'factor' if args.fit == 'throughput' else 'host ms':>7s} {'others':>6s} {'MAPE':>7s} "
          f"{'median':>7s} {'family':>7s}")
    for r in results:
        fam = f"{r['same_family_mape_pct']:6.1f}%" if r["same_family_mape_pct"] is not None else "      -"
        print(f"{r['source']:48s} {r[figure]:7.3f}{'*' if r['at_bound'] else ' '}{r['runs']:5d} {r['mape_pct']:6.1f}% "
              f"{r['median_abs_pct']:6.1f}% {fam}")
    if any(r["at_bound"] for r in results):
        print("* the fit is at the edge of its range: the figure cannot make that run's prediction match it")
    print(f"median over calibration sources: MAPE {statistics.median(r['mape_pct'] for r in results):.1f}%, "
          f"median error {statistics.median(r['median_abs_pct'] for r in results):.1f}%")


if __name__ == "__main__":
    main()
