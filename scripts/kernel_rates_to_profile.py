#!/usr/bin/env python3
"""The attention timings of scripts/measure_kernel_rates.py as a strata profile DB
(profiler/include/profiler/profile_db.h), for `strata calibrate --profile`.

One op per measured case and direction (its source starts with the head dims, the family that
`strata calibrate --cross-validate` holds out), named as strata's layer_ops names the fused attention
kernels it costs: cudnn_attention / cudnn_attention_bwd for the cuDNN backend (Transformer
Engine's FusedAttention), flash_attention / flash_attention_bwd for FlashAttention-2. FLOPs and
bytes are counted as layer_ops counts them (QK^T over dqk and PV over dv, the causal half only;
backward 2.5x the forward FLOPs and 2x its bytes). One record per timing sample (seconds per call).

Calls under --min-us are left out: a Python SDPA call takes ~30-40 us of host time to issue, and
the kernel-only CUPTI times of the same run show shorter kernels than their back-to-back event
time (h200-2026-11-27.kernel-only.json).

  python3 scripts/kernel_rates_to_profile.py --backend cudnn RATES.json -o cudnn-attention.profile.json
"""
import argparse
import json
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("rates", help="kernel-rates JSON of scripts/measure_kernel_rates.py")
    ap.add_argument("--backend", choices=["cudnn", "flash"], required=True)
    ap.add_argument("--causal-only", action="store_true", help="leave out the full (non-causal) blocks")
    ap.add_argument("--min-us", type=float, default=50.0)
    ap.add_argument("-o", "--out", required=True)
    args = ap.parse_args()
    with open(args.rates) as f:
        rates = json.load(f)
    base = "cudnn_attention" if args.backend == "cudnn" else "flash_attention"
    ops, records, t_ns, skipped = [], [], 0, 0
    for case in rates.get("attention", []):
        if case["backend"] != args.backend or (args.causal_only and not case["causal"]):
            continue
        if case["fwd_s"] * 1e6 < args.min_us:
            skipped += 1
            continue
        b, h, s, dqk, dv = case["batch"], case["heads"], case["seq"], case["dqk"], case["dv"]
        fwd_bytes = (b * s * h * (dqk + dqk + dv) + b * s * h * dv) * 2.0
        for name, flops, byts, samples in ((base, case["fwd_flops"], fwd_bytes, case["fwd_samples"]),
                                           (base + "_bwd", case["bwd_flops"], 2 * fwd_bytes, case["bwd_samples"])):
            idx = len(ops)
            # Causal: the kernel visits half the keys on average (keys_fraction 0.5 in layer_ops); a
            # full block is an off-diagonal step of a context-parallel ring: all keys, no mask.
            ops.append({"name": name, "kind": "attention", "precision": "bf16", "m": s, "n": s if case["causal"] else 2 * s,
                        "k": dqk, "batch": b * h, "flops": flops, "bytes": byts,
                        "source": f"d{dqk}/{dv} SDPA {args.backend}, heads {h}, seq {s}, {'causal' if case['causal'] else 'full'}"})
            for i, t in enumerate(samples):
                records.append({"kind": "kernel", "name": f"sdpa_{name}", "grid": [max(1, s // 128), b * h, 1], "block": [128, 1, 1],
                                "start_ns": t_ns, "end_ns": t_ns + int(t * 1e9), "op": idx, "op_instance": i})
                t_ns += int(t * 1e9) + 1000
    if not ops:
        sys.exit(f"kernel_rates_to_profile.py: {args.rates}: no attention cases of backend {args.backend}")
    prof = {"schema_version": 1, "tool": "scripts/kernel_rates_to_profile.py", "suite": f"pytorch-sdpa-{args.backend}",
            "measured_at": rates["measured_at"], "host": rates.get("host", ""), "command": rates.get("command", ""),
            "software": {"cuda_runtime_version": 0, "cupti_version": 0, "cublas_version": "", "nccl_version": ""},
            "method": {"warmup": 1, "repetitions": 5, "dropped_records": 0},
            "devices": [{"index": 0, "name": rates["gpu"], "compute_capability": "9.0", "sm_count": rates["sm_count"],
                         "memory_GiB": rates["memory_GiB"]}],
            "notes": [f"SDPA times from CUDA events around back-to-back calls (one record per sample, seconds per call); "
                      f"{skipped} cases under {args.min_us:g} us left out (host-bound)"],
            "ops": ops, "records": records}
    with open(args.out, "w") as f:
        json.dump(prof, f)
    print(f"wrote {args.out}: {len(ops)} ops, {len(records)} records, {skipped} cases left out")


if __name__ == "__main__":
    main()
