#!/usr/bin/env python3
"""scripts/calibration_transfer.py end to end on Megatron-Bridge's 26.04 and 26.04.01 MoE rows.

Qwen3-30B-A3B ran in the same configuration in both releases (8901 and 8960 tokens/s/GPU):
calibrated on one, the other must come out within 2%. Every source is checked against the other
five runs, with a throughput factor in a physical range. Exit 77 (skipped) without the shared
validation folder beside the checkout.
"""
import json
import os
import subprocess
import sys

from shared_runs import ROOT as root, modern_runs_or_skip

runs = modern_runs_or_skip()
strata = sys.argv[1]
out = subprocess.run([sys.executable, os.path.join(root, "scripts", "calibration_transfer.py"), "--runs", runs,
                      "--only", "mbridge26.04", "--strata", strata, "--json"], capture_output=True, text=True)
if out.returncode != 0:
    sys.exit(f"calibration_transfer.py exited {out.returncode}: {out.stderr}")
results = {r["source"]: r for r in (json.loads(line) for line in out.stdout.splitlines() if line.strip())}
problems = []
if len(results) != 6:
    problems.append(f"expected 6 calibration sources (26.04 and 26.04.01 x 3 models), found {sorted(results)}")
for source, r in results.items():
    if r["runs"] != len(results) - 1:
        problems.append(f"{source}: predicted {r['runs']} other runs, expected {len(results) - 1}")
    if not 0.3 < r["throughput_scale"] < 1.5:
        problems.append(f"{source}: throughput factor {r['throughput_scale']} outside 0.3..1.5")
twin = results.get("mbridge26.04_h100_qwen3_30b_16gpu", {}).get("errors_pct", {}).get("mbridge26.04.01_h100_qwen3_30b_16gpu")
if twin is None or abs(twin) > 2.0:
    problems.append(f"the same Qwen3-30B configuration one release later is off by {twin}% (expected within 2%)")
if problems:
    sys.exit("\n".join(problems))
print("ok:", ", ".join(f"{s} MAPE {r['mape_pct']:.1f}%" for s, r in sorted(results.items())))
