#!/usr/bin/env python3
"""Host time of the eager per-expert bias ops of a grouped-GEMM MoE layer, from profiled layers.

Two figures of costmodel/include/costmodel/calibration.h (HostCoefficients) come from here; a test
keeps them equal to what this prints:

- moe_expert_bias_forward_per_expert_s: one aten::mul and one aten::add, what Megatron-Core's
  TEGroupedMLP._apply_bias issues per local expert forward (t + b * p);
- moe_expert_bias_backward_per_expert_s: their autograd nodes, MulBackward0 and AddBackward0.

Read from the profiled forward and backward of Megatron-Core MoE layers (torch.profiler Chrome
traces written by scripts/measure_moe_layer.py --trace-dir; the committed
configs/measurements/h100-2026-11-27.moe-layer-*.trace.json.gz), whose SequentialMLP experts issue
the same kinds of ops: the median CPU duration of each op in the phase (aten::mul / aten::add, and
the autograd engine's evaluate_function of MulBackward0 / AddBackward0, which includes their
kernel launches). The profiler slows the host, so each trace's medians are scaled by the phase's
unprofiled wall time over its profiled one (the same case's median over the runs of
configs/measurements/h100-2026-11-27.moe-layer-host.json, at real shapes, host-bound there); the
figure is the median over the traces.

    python3 scripts/eager_op_host.py [--traces T.json.gz ...] [--host H.json] [--json]
"""
import argparse
import glob
import gzip
import json
import os
import statistics
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
MEAS = os.path.join(ROOT, "configs", "measurements")
PHASES = {
    "forward": ("strata_fwd", "fwd", ["aten::mul", "aten::add"]),
    "backward": ("strata_bwd", "bwd", ["autograd::engine::evaluate_function: MulBackward0",
                                        "autograd::engine::evaluate_function: AddBackward0"]),
}


def unprofiled_wall(host, case, phase):
    """Median wall time of one phase of `case` (alltoall dispatcher) over the runs, seconds."""
    walls = [c[f"{phase}_s"] for run in host["runs"] for c in run["cases"]
             if c["case"] == case and c["dispatcher"] == "alltoall" and c.get(f"{phase}_s")]
    if not walls:
        raise ValueError(f"no unprofiled {phase} time for {case}")
    return statistics.median(walls)


def per_expert_ops(path, host):
    """{phase: (seconds of the bias ops per expert, scale, per-op medians in us)} of one trace."""
    with gzip.open(path, "rt") as f:
        doc = json.load(f)
    events = doc["traceEvents"]
    case = CASES[os.path.basename(path).split(".moe-layer-")[1].split(".trace")[0]]
    out = {}
    for phase, (annotation, key, names) in PHASES.items():
        span = next(e for e in events if e.get("cat") == "user_annotation" and e.get("name") == annotation)
        t0, t1 = span["ts"], span["ts"] + span["dur"]
        ops = [e for e in events if e.get("ph") == "X" and e.get("cat") == "cpu_op" and t0 <= e["ts"] <= t1]
        medians = []
        for name in names:
            durations = [e["dur"] for e in ops if e["name"] == name]
            if not durations:
                raise ValueError(f"{os.path.basename(path)}: no {name} in the {phase}")
            medians.append(statistics.median(durations))
        scale = unprofiled_wall(host, case, key) * 1e6 / span["dur"]
        out[phase] = (sum(medians) * scale * 1e-6, scale, medians)
    return out


# Trace file stem -> the case name measure_moe_layer.py gives it in the host-time results.
CASES = {"gpt-oss-120b-ep8": "gpt-oss-120b_ep8", "qwen3-30b-ep16": "qwen3-30b-a3b_ep16"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--traces", nargs="*", default=sorted(glob.glob(os.path.join(MEAS, "h100-2026-11-27.moe-layer-*.trace.json.gz"))))
    ap.add_argument("--host", default=os.path.join(MEAS, "h100-2026-11-27.moe-layer-host.json"))
    ap.add_argument("--json", action="store_true", help="print the two figures as JSON (seconds)")
    args = ap.parse_args()
    try:
        with open(args.host) as f:
            host = json.load(f)
        per_trace = {t: per_expert_ops(t, host) for t in args.traces}
    except (OSError, ValueError, KeyError, TypeError, StopIteration, IndexError) as e:
        sys.exit(f"eager_op_host.py: not a measure_moe_layer.py trace or host-time result ({type(e).__name__}: {e})")
    if not per_trace:
        sys.exit("eager_op_host.py: no traces")
    result = {
        f"moe_expert_bias_{phase}_per_expert_s": round(statistics.median(r[phase][0] for r in per_trace.values()), 7)
        for phase in PHASES
    }
    if args.json:
        print(json.dumps(result))
        return
    for t, r in per_trace.items():
        for phase, (seconds, scale, medians) in r.items():
            print(f"{os.path.basename(t)} {phase}: op medians {[round(m, 1) for m in medians]} us profiled, "
                  f"x{scale:.3f} unprofiled/profiled: {1e6 * seconds:.1f} us per expert")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
