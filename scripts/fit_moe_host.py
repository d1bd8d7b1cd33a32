#!/usr/bin/env python3
"""The host time of a Megatron-Core MoE layer as a line over its local experts, from a measurement.

Reads the file scripts/measure_moe_layer.py writes (or the committed
configs/measurements/h100-2026-11-27.moe-layer-host.json, which holds several runs of it) and fits

    host time per layer = fixed + per_expert x local experts

for the forward and the backward of each dispatcher, by least squares over the sweep cases
(hidden 2048, 1-64 local experts), on the median over the runs of each case's tiny-token twin:
its kernels take microseconds, so its wall time is the host's time to issue the layer. These are
the HostCoefficients defaults of costmodel/include/costmodel/calibration.h (alltoall dispatcher);
a test keeps the two equal. It also prints, for the model-shaped cases, the measured forward and
backward at their real token counts next to their kernels' time: a layer whose wall time exceeds
its kernels' time, and matches its host time, was bound by the host.

    python3 scripts/fit_moe_host.py configs/measurements/h100-2026-11-27.moe-layer-host.json [--json]
"""
import argparse
import json
import statistics
import sys

from step_slope import line  # least squares (intercept, slope): one definition


def runs_of(doc):
    """The cases of each run: a multi-run file ("runs") or the script's single-run output ("cases")."""
    if "runs" in doc:
        return [r["cases"] for r in doc["runs"]]
    return [doc["cases"]]


def medians(doc, dispatcher, key, sweep):
    by_case = {}
    for cases in runs_of(doc):
        for c in cases:
            if c["dispatcher"] != dispatcher or c["case"].startswith("sweep_") != sweep or key not in c:
                continue
            by_case.setdefault(c["case"], (c["local_experts"], []))[1].append(c[key])
    return {name: (e, statistics.median(v)) for name, (e, v) in by_case.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("measurement")
    ap.add_argument("--json", action="store_true", help="print the fitted lines as JSON (seconds)")
    args = ap.parse_args()
    try:
        with open(args.measurement) as f:
            doc = json.load(f)
        dispatchers = sorted({c["dispatcher"] for cases in runs_of(doc) for c in cases})
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit(f"fit_moe_host.py: {args.measurement}: not a measure_moe_layer.py result ({e})")
    fits = {}
    for d in dispatchers:
        fits[d] = {}
        for phase in ("fwd", "bwd"):
            pts = sorted(medians(doc, d, f"tiny_{phase}_s", sweep=True).values())
            if len(pts) < 2:
                continue  # no sweep in this file (say, --whole-layer cases only): nothing to fit
            fixed, slope = line(pts)
            fits[d][phase] = {"fixed_s": fixed, "per_expert_s": slope,
                              "points": [[e, y, fixed + slope * e] for e, y in pts]}
    if args.json:
        print(json.dumps(fits, indent=1))
        return
    for d, f in fits.items():
        print(f"{d} dispatcher (host time per MoE layer, medians of the runs' tiny-token twins):")
        if not f:
            print("  no sweep cases (1-64 local experts) to fit a line to")
        for phase, name in (("fwd", "forward"), ("bwd", "backward")):
            if phase not in f:
                continue
            p = f[phase]
            print(f"  {name:8s}: {1e3 * p['fixed_s']:.2f} ms + {1e3 * p['per_expert_s']:.3f} ms per local expert")
            print("            " + ", ".join(f"{e}: {1e3 * y:.2f} (line {1e3 * l:.2f})" for e, y, l in p["points"]))
        real = {k: medians(doc, d, k, sweep=False) for k in ("fwd_s", "bwd_s", "fwd_gpu_busy_s", "bwd_gpu_busy_s",
                                                              "tiny_fwd_s", "tiny_bwd_s")}
        for name, (e, fwd) in sorted(real["fwd_s"].items()):
            g = lambda k: 1e3 * real[k][name][1] if name in real[k] else float("nan")
            print(f"  {name} ({e} local experts): forward {g('fwd_s'):.2f} ms (kernels {g('fwd_gpu_busy_s'):.2f}, "
                  f"host {g('tiny_fwd_s'):.2f}), backward {g('bwd_s'):.2f} ms (kernels {g('bwd_gpu_busy_s'):.2f}, "
                  f"host {g('tiny_bwd_s'):.2f})")


if __name__ == "__main__":
    main()
