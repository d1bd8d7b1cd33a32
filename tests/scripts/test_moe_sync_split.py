#!/usr/bin/env python3
"""scripts/moe_sync_split.py on the committed measurements equals the HostCoefficients defaults.

The share of the MoE block's fixed forward host time issued before the dispatcher's synchronisation
(two profiled H100 layers) and the attention block's host time, forward and backward (whole layer
minus MoE block on an H200 machine), as calibration.h states them: a change of either side fails here.
"""
import json
import os
import re
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
out = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "moe_sync_split.py"), "--json"], capture_output=True, text=True)
if out.returncode != 0:
    sys.exit(f"moe_sync_split.py exited {out.returncode}: {out.stderr}")
measured = json.loads(out.stdout)
with open(os.path.join(ROOT, "costmodel", "include", "costmodel", "calibration.h")) as f:
    header = f.read()
problems = []
for key, value in measured.items():
    m = re.search(rf"double {key} = ([0-9.e+-]+);", header)
    if not m:
        problems.append(f"calibration.h has no default for {key}")
    elif abs(float(m.group(1)) - value) > 0.005 * abs(value):
        problems.append(f"{key}: calibration.h says {m.group(1)}, the measurements give {value}")
if problems:
    sys.exit("\n".join(problems))
print(f"ok: {measured}")
