#!/usr/bin/env python3
"""Rate of fused attention with dropout on its probabilities, relative to without, from measurements.

Four figures of costmodel/include/costmodel/calibration.h (KernelCoefficients) come from here; a test
keeps them equal to what this prints: attention_dropout_{fwd,bwd}_factor (FlashAttention-2) and
cudnn_attention_dropout_{fwd,bwd}_factor (cuDNN's fused flash attention, what Transformer Engine's
FusedAttention runs). Each is the median, over the measured shapes, of the time without dropout
over the time with dropout p 0.1, the same call otherwise (scripts/measure_kernel_rates.py's
attention variants; the committed configs/measurements/h200-2026-11-27.attention-variants.json:
H200, causal, 32 heads of 128, 2k-16k tokens, PyTorch SDPA's cuDNN and flash backends).

    python3 scripts/attention_dropout.py [--variants V.json] [--json]
"""
import argparse
import json
import os
import statistics
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
DEFAULT = os.path.join(ROOT, "configs", "measurements", "h200-2026-11-27.attention-variants.json")
PREFIX = {"flash": "attention_dropout", "cudnn": "cudnn_attention_dropout"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--variants", default=DEFAULT)
    ap.add_argument("--json", action="store_true", help="print the four factors as JSON")
    args = ap.parse_args()
    try:
        with open(args.variants) as f:
            variants = json.load(f)["attention_variants"]
        calls = {}
        for v in variants:
            shape = (v["backend"], v["heads"], v["kv_heads"], v["seq"], v["dqk"], v["dv"])
            calls.setdefault(shape, {})[float(v["dropout"])] = v
        ratios = {}
        for shape, by_p in sorted(calls.items()):
            if 0.0 in by_p and 0.1 in by_p and shape[0] in PREFIX:
                for d in ("fwd", "bwd"):
                    r = by_p[0.0][f"{d}_s"] / by_p[0.1][f"{d}_s"]
                    ratios.setdefault((shape[0], d), []).append(r)
                    if not args.json:
                        print(f"{shape[0]:5s} heads {shape[1]}/{shape[2]} seq {shape[3]:6d} {d}: x{r:.3f}")
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit(f"attention_dropout.py: not a measure_kernel_rates.py attention-variants result ({type(e).__name__}: {e})")
    if len(ratios) != 4:
        sys.exit("attention_dropout.py: no pairs with and without dropout for both backends and directions")
    result = {f"{PREFIX[b]}_{d}_factor": round(statistics.median(v), 3) for (b, d), v in sorted(ratios.items())}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
