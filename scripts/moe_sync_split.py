#!/usr/bin/env python3
"""How the dispatcher's host synchronisation splits a Megatron-Core MoE decoder layer, from measurements.

Two figures of costmodel/include/costmodel/calibration.h (HostCoefficients) come from here; a test
keeps them equal to what this prints:

- moe_forward_presync_fraction: the share of the MoE block's fixed forward host time issued before
  the synchronisation (router, aux loss, permutation), read from profiled forwards (torch.profiler
  Chrome traces written by scripts/measure_moe_layer.py --trace-dir; the committed
  configs/measurements/h100-2026-11-27.moe-layer-*.trace.json.gz). The synchronisation is the
  forward's cudaEventSynchronize; the experts are the span from the first expert's
  _CopyToModelParallelRegion to the last one's _ReduceFromModelParallelRegion (SequentialMLP), left
  out as the per-expert part. The profiled run's first GEMM call (the router's aten::mm, ~2.8 ms of
  one-off set-up, inside the profiler only) is left out too. Profiling slows the host, so only the
  share is used.
- moe_forward_before_experts_fraction: of the fixed part issued after the synchronisation, the share
  issued before the first expert (the token all-to-all and sort; the rest, after the last expert, is
  the unsort, unpermute and combine), from the same traces.
- moe_expert_before_activation_fraction: of one SequentialMLP expert's host time, the share issued
  before its activation function (its fc1), from the same traces: the span from an expert's
  _CopyToModelParallelRegion to its GLU's aten::chunk over the span to the next expert's, median over
  the experts after the first. Where the activation synchronises the host (GPT-OSS's fused
  quick-GeGLU), these place the synchronisation within the layer.
- moe_attention_forward_s / moe_attention_backward_s: the host time of the rest of an MoE decoder
  layer (norms, attention block, residuals), as a whole layer's tiny-token wall time minus its MoE
  block's, paired case by case within each run (scripts/measure_moe_layer.py --whole-layer and
  without it, in one process pair; the committed
  configs/measurements/h200-2026-11-27.moe-whole-layer-host.json): the median of the pairs.

    python3 scripts/moe_sync_split.py [--traces T.json.gz ...] [--whole-layer W.json] [--json]
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


def forward_ops(path):
    """(host ops, synchronisation time, end time) of the one profiled MoE layer forward in a trace, us."""
    with gzip.open(path, "rt") as f:
        events = json.load(f)["traceEvents"]
    fwd = next(e for e in events if e.get("cat") == "user_annotation" and e.get("name") == "strata_fwd")
    t0, t1 = fwd["ts"], fwd["ts"] + fwd["dur"]
    ops = [e for e in events if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "cuda_runtime") and t0 <= e["ts"] <= t1]
    sync = next(e for e in ops if e["name"] == "cudaEventSynchronize")["ts"]
    end = max(e["ts"] + e["dur"] for e in ops if e["name"] != "cudaDeviceSynchronize")  # the script's own sync
    return ops, sync, end


def presync_share(path):
    """(share, pre, post_fixed, experts) of one profiled MoE layer forward, in ms."""
    ops, sync, end = forward_ops(path)
    start = min(e["ts"] for e in ops)
    first_gemm = max((e for e in ops if e["name"] == "aten::mm" and e["ts"] < sync), key=lambda e: e["dur"])
    experts = [e for e in ops if e["ts"] > sync and e["name"] in ("_CopyToModelParallelRegion", "_ReduceFromModelParallelRegion")]
    span = max(e["ts"] + e["dur"] for e in experts) - min(e["ts"] for e in experts)
    n = sum(1 for e in experts if e["name"] == "_CopyToModelParallelRegion")
    pre = sync - start - first_gemm["dur"]
    post_fixed = end - sync - span
    return pre / (pre + post_fixed), pre / 1e3, post_fixed / 1e3, n


def post_sync_split(path):
    """(share of the post-synchronisation fixed part before the first expert, median share of an
    expert's host time before its activation) of one profiled MoE layer forward."""
    ops, sync, end = forward_ops(path)
    after = lambda name: sorted(e["ts"] for e in ops if e["ts"] > sync and e["name"] == name)
    copies, chunks = after("_CopyToModelParallelRegion"), after("aten::chunk")
    last = max(e["ts"] + e["dur"] for e in ops if e["ts"] > sync and e["name"] == "_ReduceFromModelParallelRegion")
    before, behind = copies[0] - sync, end - last
    # Expert i: from its copy to its activation's chunk, over the span to expert i+1's copy; the
    # first expert carries one-off set-up and is left out.
    shares = [(ch - c) / (c2 - c) for c, ch, c2 in zip(copies, chunks, copies[1:])][1:]
    return before / (before + behind), statistics.median(shares)


def attention_host(doc, phase):
    """Whole layer minus MoE block, tiny-token wall time, one value per (run, case) pair, seconds."""
    out = []
    for run in doc["runs"]:
        cases = {(c["case"], c["dispatcher"]): c for c in run["cases"]}
        for (name, disp), whole in cases.items():
            if name.endswith("_whole_layer") and (name[: -len("_whole_layer")], disp) in cases:
                moe = cases[(name[: -len("_whole_layer")], disp)]
                out.append(whole[f"tiny_{phase}_s"] - moe[f"tiny_{phase}_s"])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--traces", nargs="*", default=sorted(glob.glob(os.path.join(MEAS, "h100-2026-11-27.moe-layer-*.trace.json.gz"))))
    ap.add_argument("--whole-layer", default=os.path.join(MEAS, "h200-2026-11-27.moe-whole-layer-host.json"))
    ap.add_argument("--json", action="store_true", help="print the three figures as JSON (seconds, share)")
    args = ap.parse_args()
    try:
        shares, befores, activations = [], [], []
        for t in args.traces:
            share, pre, post_fixed, n = presync_share(t)
            shares.append(share)
            before_experts, before_activation = post_sync_split(t)
            befores.append(before_experts)
            activations.append(before_activation)
            if not args.json:
                print(f"{os.path.basename(t)}: before the sync {pre:.2f} ms, after it {post_fixed:.2f} ms besides {n} experts: share {share:.2f}; "
                      f"of the part after it, {before_experts:.2f} before the first expert; of an expert, {before_activation:.2f} before its activation")
        with open(args.whole_layer) as f:
            doc = json.load(f)
        fwd, bwd = attention_host(doc, "fwd"), attention_host(doc, "bwd")
    except (OSError, ValueError, KeyError, TypeError, StopIteration) as e:
        sys.exit(f"moe_sync_split.py: not a measure_moe_layer.py trace or whole-layer result ({type(e).__name__}: {e})")
    if not shares or not fwd or not bwd:
        sys.exit("moe_sync_split.py: no traces, or no whole-layer/MoE-block pairs")
    result = {
        "moe_forward_presync_fraction": round(statistics.median(shares), 2),
        "moe_forward_before_experts_fraction": round(statistics.median(befores), 2),
        "moe_expert_before_activation_fraction": round(statistics.median(activations), 2),
        "moe_attention_forward_s": round(statistics.median(fwd), 5),
        "moe_attention_backward_s": round(statistics.median(bwd), 5),
    }
    if args.json:
        print(json.dumps(result))
        return
    print(f"attention block, forward: pairs {[round(1e3 * x, 2) for x in fwd]} ms, median {1e3 * result['moe_attention_forward_s']:.2f} ms")
    print(f"attention block, backward: pairs {[round(1e3 * x, 2) for x in bwd]} ms, median {1e3 * result['moe_attention_backward_s']:.2f} ms")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
