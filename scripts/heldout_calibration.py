#!/usr/bin/env python3
"""Held-out check of `strata calibrate --steps` on a published-runs file.

For each source group, and each GPU type inside it, fits the kernel-throughput factor on the run
with the fewest GPUs (what a team would time first), then predicts the group's other runs with that
calibration and prints their MAPE of tokens/s/GPU. The fitted runs are left out. This reproduces
the table in README.md ("Calibrating to your own stack from measured steps").

usage: scripts/heldout_calibration.py [RUNS_JSON] [STRATA_EXE]
"""
import collections
import json
import os
import subprocess
import sys
import tempfile

runs_file = sys.argv[1] if len(sys.argv) > 1 else "../shared/validation/public_runs.json"
strata = sys.argv[2] if len(sys.argv) > 2 else "./build/planner/strata"
runs = json.load(open(runs_file))


def measured(r):
    return r.get("meas_tokens_per_sec_per_gpu") or r.get("derived_tokens_per_sec_per_gpu")


groups = collections.defaultdict(list)
for r in runs:
    if measured(r):
        groups[r["source_group"]].append(r)

all_errors = []
with tempfile.TemporaryDirectory() as tmp:
    cal = os.path.join(tmp, "calibration.json")
    for group, members in groups.items():
        by_gpu = collections.defaultdict(list)
        for r in members:
            by_gpu[(r["gpu_type"], r.get("gpu_memory_gb"))].append(r)
        errors = []
        for (gpu, _), rs in by_gpu.items():
            first = min(rs, key=lambda r: r["num_gpus"])
            fit = subprocess.run([strata, "calibrate", "--steps", runs_file, "--only", first["id"], "-o", cal],
                                 capture_output=True, text=True)
            if fit.returncode != 0:
                print(f"  {group} / {gpu}: calibration on {first['id']} failed:\n{fit.stdout}{fit.stderr}")
                continue
            factor = json.load(open(cal))["fit"]["throughput_scale"]
            print(f"  {group} / {gpu}: fitted on {first['id']} ({first['num_gpus']} GPUs), factor {factor:.3f}")
            # Predict only this GPU's runs of the group (exact ids), with --json for exact numbers.
            ids = [r["id"] for r in rs if r["id"] != first["id"]]
            if not ids:
                continue
            args = [strata, "validate", "--runs", runs_file, "--json", "--calibration", cal]
            for i in ids:
                args += ["--only", i]
            out = subprocess.run(args, capture_output=True, text=True).stdout
            by_id = {r["id"]: r for r in rs}
            for line in out.splitlines():
                p = json.loads(line)
                if p["id"] in ids and p["tokens_per_sec_per_gpu"]:
                    meas = measured(by_id[p["id"]])
                    errors.append(100.0 * (p["tokens_per_sec_per_gpu"] - meas) / meas)
        if errors:
            mape = sum(abs(e) for e in errors) / len(errors)
            bias = sum(errors) / len(errors)
            print(f"{group}: held-out MAPE {mape:.1f}%, bias {bias:+.1f}% ({len(errors)} runs)")
            all_errors += errors
print(f"overall held-out MAPE {sum(abs(e) for e in all_errors) / len(all_errors):.1f}% ({len(all_errors)} runs)")
