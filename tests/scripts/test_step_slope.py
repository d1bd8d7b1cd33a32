#!/usr/bin/env python3
"""scripts/step_slope.py end to end on the SimuMax B200 rows (each configuration at 4, 8, 32 micro-batches).

Checks that all 12 configurations are found with their three runs, that the fitted lines pass
through the step times they were fitted to (strata's own pp 1 predictions are affine in the
micro-batch count, so within 1%), that every ratio of measured to predicted time per micro-batch
is physical (0.5-2x), and that the README's finding still holds (median 1.0-1.4x: strata's time
per micro-batch is the shorter; update the README with this bound when the B200 model changes). Exit 77 (skipped) without
the shared validation folder beside the checkout.
"""
import json
import os
import statistics
import subprocess
import sys

from shared_runs import ROOT as root, modern_runs_or_skip

runs = modern_runs_or_skip()
with open(runs) as f:
    data = json.load(f)
records = {r["id"]: r for r in (data["runs"] if isinstance(data, dict) else data)}
strata = sys.argv[1]
out = subprocess.run([sys.executable, os.path.join(root, "scripts", "step_slope.py"), "--runs", runs, "--only", "simumax",
                      "--strata", strata, "--json"], capture_output=True, text=True)
if out.returncode != 0:
    sys.exit(f"step_slope.py exited {out.returncode}: {out.stderr}")
rows = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
problems = []
if len(rows) != 12:
    problems.append(f"expected 12 configurations, found {len(rows)}")
predicted = {}
for text in subprocess.run([strata, "validate", "--runs", runs, "--only", "simumax", "--json"], capture_output=True,
                           text=True, check=True).stdout.splitlines():
    p = json.loads(text)
    predicted[p["id"]] = p["iteration_time_s"]
for row in rows:
    if row["microbatches"] != [4, 8, 32]:
        problems.append(f"{row['runs'][0]}: micro-batch counts {row['microbatches']}, expected [4, 8, 32]")
    for run_id, n in zip(row["runs"], row["microbatches"]):
        fitted = row["predicted_fixed_s"] + row["predicted_per_microbatch_s"] * n
        if records[run_id]["pp"] == 1 and abs(fitted / predicted[run_id] - 1) > 0.01:
            problems.append(f"{run_id}: the predicted line gives {fitted:.4f} s, strata predicts {predicted[run_id]:.4f} s")
    if not row["per_microbatch_ratio"] or not 0.5 < row["per_microbatch_ratio"] < 2.0:
        problems.append(f"{row['runs'][0]}: measured/predicted time per micro-batch {row['per_microbatch_ratio']}, expected 0.5-2")
ratios = [r["per_microbatch_ratio"] for r in rows if r["per_microbatch_ratio"]]
if ratios and not 1.0 < statistics.median(ratios) < 1.4:
    problems.append(f"median measured/predicted time per micro-batch {statistics.median(ratios):.3f}, expected 1.0-1.4")
if problems:
    sys.exit("\n".join(problems))
print(f"ok: {len(rows)} configurations, median ratio {statistics.median(ratios):.3f}")
