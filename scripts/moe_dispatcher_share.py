#!/usr/bin/env python3
"""The alltoall dispatcher's own share of a Megatron-Core MoE layer's fixed host time, from profiled layers.

The host line of HostCoefficients (calibration.h) was measured with the alltoall dispatcher; the
flex dispatcher (DeepEP, HybridEP) takes it unmeasured. This prints how much of the line's fixed
part is the alltoall dispatcher's own operators, which DeepEP/HybridEP fuse into one call each way:
the bound that README "The host time of a MoE layer" states for the flex dispatcher.

From the torch.profiler Chrome traces of scripts/measure_moe_layer.py --trace-dir (the committed
configs/measurements/h100-2026-11-27.moe-layer-*.trace.json.gz), on the top-level CPU operators:
- forward: the dispatcher is what runs after the router's last operator (MoEAuxLossAutoScaler) and
  before the first expert (_CopyToModelParallelRegion after the synchronisation), and after the
  last expert; the fixed part is the forward's span less the experts' span, the one-off first
  router GEMM (as scripts/moe_sync_split.py leaves it out) and the synchronisation's wait;
- backward: the dispatcher's autograd nodes are those before the first expert's backward and
  between the last expert's backward and MoEAuxLossAutoScalerBackward; the fixed part is the
  backward's span less the experts'.
Profiling slows the host, so only the share is meaningful.

    python3 scripts/moe_dispatcher_share.py [T.json.gz ...]
"""
import glob
import gzip
import json
import os
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
EXPERT_FWD = ("_CopyToModelParallelRegion", "_ReduceFromModelParallelRegion")
EXPERT_BWD = ("LinearWith", "_CopyToModelParallelRegionBackward", "_ReduceFromModelParallelRegionBackward")


def top_level(events, t0, t1):
    """CPU operators within [t0, t1] not nested in another one, in time order."""
    ops = sorted((e for e in events if e.get("ph") == "X" and e.get("cat") == "cpu_op" and t0 <= e["ts"] <= t1),
                 key=lambda e: (e["ts"], -e["dur"]))
    out, end = [], -1.0
    for e in ops:
        if e["ts"] >= end:
            out.append(e)
            end = e["ts"] + e["dur"]
    return out


def annotation(events, name):
    w = next(e for e in events if e.get("cat") == "user_annotation" and e.get("name") == name)
    return w["ts"], w["ts"] + w["dur"]


def forward_share(events):
    t0, t1 = annotation(events, "strata_fwd")
    ops = top_level(events, t0, t1)
    inner = [e for e in events if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "cuda_runtime") and t0 <= e["ts"] <= t1]
    sync = next(e for e in inner if e["name"] == "cudaEventSynchronize")
    first_gemm = max((e for e in inner if e["name"] == "aten::mm" and e["ts"] < sync["ts"]), key=lambda e: e["dur"])
    aux = [e for e in ops if e["name"] == "MoEAuxLossAutoScaler"][-1]
    experts = [e for e in ops if e["ts"] > sync["ts"] and (e["name"] in EXPERT_FWD or e["name"].startswith("LinearWith"))]
    ex0, ex1 = min(e["ts"] for e in experts), max(e["ts"] + e["dur"] for e in experts)
    start, end = min(e["ts"] for e in ops), max(e["ts"] + e["dur"] for e in ops)
    dispatcher = (ex0 - (aux["ts"] + aux["dur"]) - sync["dur"]) + (end - ex1)
    fixed = (end - start - first_gemm["dur"]) - (ex1 - ex0) - sync["dur"]
    n = sum(1 for e in ops if aux["ts"] + aux["dur"] <= e["ts"] < ex0 or e["ts"] >= ex1)
    return dispatcher / fixed, dispatcher / 1e3, fixed / 1e3, n


def backward_share(events):
    t0, t1 = annotation(events, "strata_bwd")
    ops = top_level(events, t0, t1)
    experts = [e for e in ops if any(k in e["name"] for k in EXPERT_BWD)]
    aux = next(e for e in ops if "MoEAuxLossAutoScalerBackward" in e["name"])
    ex0, ex1 = min(e["ts"] for e in experts), max(e["ts"] + e["dur"] for e in experts)
    end = max(e["ts"] + e["dur"] for e in ops)
    dispatcher = (ex0 - t0) + (aux["ts"] - ex1)
    fixed = (end - t0) - (ex1 - ex0)
    n = sum(1 for e in ops if e["ts"] < ex0 or ex1 <= e["ts"] < aux["ts"])
    return dispatcher / fixed, dispatcher / 1e3, fixed / 1e3, n


def main():
    paths = sys.argv[1:] or sorted(glob.glob(os.path.join(ROOT, "configs", "measurements", "h100-2026-11-27.moe-layer-*.trace.json.gz")))
    if not paths:
        sys.exit("moe_dispatcher_share.py: no traces given or found")
    for path in paths:
        try:
            with gzip.open(path, "rt") as f:
                events = json.load(f)["traceEvents"]
            fwd, bwd = forward_share(events), backward_share(events)
        except (OSError, ValueError, KeyError, StopIteration) as e:
            sys.exit(f"moe_dispatcher_share.py: {path}: not a profiled MoE layer trace ({type(e).__name__}: {e})")
        print(os.path.basename(path))
        for phase, (share, disp, fixed, n) in (("forward", fwd), ("backward", bwd)):
            print(f"  {phase:8s}: dispatcher {disp:.2f} ms ({n} operators) of the fixed {fixed:.2f} ms, share {share:.2f} (profiled)")


if __name__ == "__main__":
    main()
