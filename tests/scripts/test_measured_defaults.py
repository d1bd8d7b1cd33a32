#!/usr/bin/env python3
"""The scripts that derive calibration defaults from measurements, run on the committed measurements,
print the values costmodel/include/costmodel/calibration.h states: a change of either side fails here.

- scripts/moe_sync_split.py: the share of the MoE block's fixed forward host time issued before the
  dispatcher's synchronisation and where a synchronisation at the experts' activation falls (two
  profiled H100 layers), and the attention block's host time,
  forward and backward (whole layer minus MoE block on an H200 machine);
- scripts/eager_op_host.py: the host time of the eager per-expert bias ops of biased experts under a
  grouped GEMM (the same profiled H100 layers);
- scripts/attention_dropout.py: the rate of fused attention with dropout relative to without
  (FlashAttention-2 and cuDNN, an H200);
- scripts/moe_dispatcher_share.py: the alltoall dispatcher's share of the fixed MoE host time, which
  README states.
"""
import json
import os
import re
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
with open(os.path.join(ROOT, "costmodel", "include", "costmodel", "calibration.h")) as f:
    header = f.read()
problems = []
for script in ("moe_sync_split.py", "eager_op_host.py", "attention_dropout.py"):
    out = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", script), "--json"], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{script} exited {out.returncode}: {out.stderr}")
    measured = json.loads(out.stdout)
    if not measured:
        problems.append(f"{script} printed no figures")
    for key, value in measured.items():
        m = re.search(rf"double {key} = ([0-9.e+-]+);", header)
        if not m:
            problems.append(f"calibration.h has no default for {key} ({script})")
        elif abs(float(m.group(1)) - value) > 0.005 * abs(value):
            problems.append(f"{key}: calibration.h says {m.group(1)}, {script} gives {value}")
    print(f"{script}: {measured}")
# scripts/moe_dispatcher_share.py: the alltoall dispatcher's share of the fixed host time, as the
# README states it for the flex dispatcher's bound ("51-61% ... forward and 65-68% ... backward").
out = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "moe_dispatcher_share.py")], capture_output=True, text=True)
if out.returncode != 0:
    sys.exit(f"moe_dispatcher_share.py exited {out.returncode}: {out.stderr}")
shares = {"forward": [], "backward": []}
for phase, share in re.findall(r"(forward|backward)\s*: .* share ([0-9.]+)", out.stdout):
    shares[phase].append(round(100 * float(share)))
with open(os.path.join(ROOT, "README.md")) as f:
    readme = " ".join(f.read().split())
for phase, values in shares.items():
    if not values:
        problems.append(f"moe_dispatcher_share.py printed no {phase} share")
    elif f"{min(values)}-{max(values)}% of the fixed {phase}" not in readme:
        problems.append(f"README does not state the {phase} dispatcher share {min(values)}-{max(values)}% that moe_dispatcher_share.py gives")
print(f"moe_dispatcher_share.py: {shares}")
if problems:
    sys.exit("\n".join(problems))
print("ok")
