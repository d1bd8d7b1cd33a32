#!/usr/bin/env python3
"""Randomized Megatron-LM conformance: launches strata writes for plans nobody listed.

tests/megatron/launches.txt holds jobs chosen by hand; this draws `strata predict` jobs at random
(built-in models and the Hugging Face configs of tests/data/hf, GPUs from A100 to GB200, tp, pp,
vpp, cp, ep, micro-batches, recompute, fp8 recipes, overlaps, micro-batch groups) and now and then
a `strata plan` search for a random batch, keeps those
strata writes a launch for, and judges each with conformance.py: Megatron-LM must accept it,
derive the planned job, and the launch must read back to the same prediction. The seed fixes the
draw, so a run is reproducible; CI runs one seed, a wider sweep is `--seed N --launches 200`.

Usage: random_sweep.py --strata BIN --check CHECK_PY [--seed N] [--launches K] [--draws D]
Exit 0: every launch conforms; 1: a launch does not (printed); 77: the checker is not available.
"""
import argparse
import glob
import json
import os
import random
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SKIP = 77

CATALOG = ["gpt3-175b", "gpt3-13b", "llama2-7b", "llama3-70b", "llama3.1-8b", "llama3.1-405b", "mixtral-8x7b",
           "qwen3-30b-a3b", "qwen3-235b-a22b", "deepseek-v3", "gpt-oss-120b", "llama-4-maverick"]
MOE_CATALOG = {"mixtral-8x7b", "qwen3-30b-a3b", "qwen3-235b-a22b", "deepseek-v3", "gpt-oss-120b", "llama-4-maverick"}
GPUS = ["a100-80gb", "h100", "h200", "b200", "gb200", "b300"]
BLACKWELL = {"b200", "gb200", "b300"}


def is_moe_config(path):
    with open(path) as f:
        c = json.load(f)
    return any(k in c for k in ("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts", "ffn_config"))


def draw(rng, hf_configs):
    """One random `strata predict` job, or now and then a `strata plan` search (many are refused or
    infeasible; the caller skips those)."""
    model = rng.choice(CATALOG + hf_configs)
    moe = model in MOE_CATALOG or (model.endswith(".json") and is_moe_config(model))
    gpu = rng.choice(GPUS)
    if rng.random() < 0.2:
        gpus = rng.choice([8, 16, 64, 128, 256, 512])
        args = ["plan", "--model", model, "--gpu", gpu, "--gpus", str(gpus),
                "--global-batch", str(gpus * rng.choice([1, 2, 4]) + rng.choice([0, 0, 8, 24])),
                "--seq", str(rng.choice([2048, 4096, 8192]))]
        if rng.random() < 0.3:
            args += ["--precision", "fp8"]
        if rng.random() < 0.3:
            args += ["--allow-offload"]
        return args
    tp, pp, cp, dp = rng.choice([1, 2, 4, 8]), rng.choice([1, 2, 4, 8, 16]), rng.choice([1, 1, 1, 2, 4]), rng.choice([1, 2, 4, 8, 16])
    mbs, vpp = rng.choice([1, 1, 2, 4]), rng.choice([1, 1, 2, 3, 4, 5])
    micro_batches = rng.choice([8, 9, 12, 16, 24, 30, 32, 36, 64])
    args = ["predict", "--model", model, "--gpu", gpu, "--gpus", str(tp * pp * cp * dp), "--tp", str(tp), "--pp", str(pp),
            "--cp", str(cp), "--mbs", str(mbs), "--global-batch", str(micro_batches * mbs * dp),
            "--seq", str(rng.choice([2048, 4096, 8192, 16384]))]
    ep = rng.choice([1, 2, 4, 8, 16, 32]) if moe else 1
    if ep > 1:
        args += ["--ep", str(ep)]
    if vpp > 1:
        args += ["--vpp", str(vpp)]
        if rng.random() < 0.2:
            args += ["--microbatch-group", str(rng.choice([pp, pp + 1, micro_batches]))]
    if tp > 1 and rng.random() < 0.7:
        args += ["--sp"]
        if rng.random() < 0.3:
            args += ["--tp-comm-overlap"]
    if dp * cp > 1 and rng.random() < 0.7:
        args += ["--dist-opt"]
        if rng.random() < 0.2:
            args += ["--precision-aware-optimizer", "--exp-avg-dtype", rng.choice(["fp32", "bf16", "fp16", "fp8"]),
                     "--exp-avg-sq-dtype", rng.choice(["fp32", "bf16", "fp8"]), "--main-params-dtype", rng.choice(["fp32", "fp16"])]
            if rng.random() < 0.3:
                args += ["--optimizer-offload-fraction", rng.choice(["0.25", "0.5", "1"])]
        if dp * cp % 2 == 0 and rng.random() < 0.15:
            args += ["--dist-opt-instances", "2"]
    elif rng.random() < 0.1:
        args += ["--optimizer", rng.choice(["sgd", "muon", "lion"])]
    recompute = rng.choice(["none", "selective", "full"])
    args += ["--recompute", recompute]
    if recompute == "full" and rng.random() < 0.3:
        args += ["--recompute-layers", str(rng.choice([1, 2, 4]))]
    if rng.random() < 0.35:
        recipes = ["delayed", "tensorwise", "blockwise", "mxfp8"] + (["nvfp4"] if gpu in BLACKWELL else [])
        args += ["--precision", "fp8", "--fp8-recipe", rng.choice(recipes)]
        if rng.random() < 0.3:
            args += ["--fp8-param-gather"]
    if rng.random() < 0.2:
        args += ["--grad-reduce-in-bf16"]
    if ep > 1 and rng.random() < 0.3:
        args += ["--moe-a2a-overlap"]
    if ep > 1 and rng.random() < 0.2:
        args += ["--moe-token-dedup"]
    if ep > 1 and rng.random() < 0.2:
        args += ["--moe-shared-expert-overlap"]
    if cp > 1 and rng.random() < 0.4:
        args += ["--cp-comm-type", rng.choice(["p2p", "a2a", "allgather", "a2a+p2p"])]
    if rng.random() < 0.15:
        # Multi-token prediction: taken away, or 1-2 modules (sharing one module's weights now and then).
        depth = rng.choice([0, 1, 2])
        args += ["--mtp-layers", str(depth)]
        if depth > 0 and rng.random() < 0.4:
            args += ["--mtp-repeated-layer"]
    if rng.random() < 0.25:
        # Fine-grained activation offloading: attention modules anywhere, the experts' where there are some.
        modules = rng.choice([["core_attn"], ["core_attn", "attn_proj"], ["qkv_linear"], ["attn_norm", "mlp_norm"]] +
                             ([["expert_fc1"], ["moe_act"], ["fused_group_mlp"]] if moe else []))
        args += ["--offload-modules", ",".join(modules)]
        if rng.random() < 0.3:
            args += ["--min-offloaded-tensor-size", str(rng.choice([0, 1 << 20, 50_000_000]))]
    if rng.random() < 0.2:
        # CUDA graphs: the whole layer or step, or modules (MoE ones on any model: check_plan sorts them out).
        args += ["--cuda-graphs", rng.choice(["layer", "full_iteration", "attn", "attn,mlp", "moe_router,moe_preprocess",
                                              "attn,moe_router", "moe", "mamba"])]
    return args


def writes_launch(strata, args):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "plan.json")
        run = subprocess.run([strata, *args, "-o", out], capture_output=True, text=True, timeout=120)
        if run.returncode not in (0, 2) or not os.path.isfile(out):
            return False  # refused as bad input: nothing to judge
        with open(out) as f:
            return "megatron_args" in (json.load(f).get("launch") or {})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strata", required=True)
    ap.add_argument("--check", required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--launches", type=int, default=12, help="launches to judge")
    ap.add_argument("--draws", type=int, default=400, help="most jobs to draw")
    a = ap.parse_args()
    if not os.path.isfile(a.check):
        print(f"skip: {a.check} not found (the shared folder is not beside the checkout)")
        return SKIP
    rng = random.Random(a.seed)
    hf_configs = sorted(glob.glob(os.path.join(HERE, "..", "data", "hf", "*.json")))
    hf_configs = [os.path.relpath(p) for p in hf_configs]
    judged, failed = 0, 0
    for _ in range(a.draws):
        if judged >= a.launches:
            break
        args = draw(rng, hf_configs)
        if not writes_launch(a.strata, args):
            continue
        judged += 1
        run = subprocess.run([sys.executable, os.path.join(HERE, "conformance.py"), "--strata", a.strata, "--check", a.check,
                              "--", *args], capture_output=True, text=True, timeout=300)
        verdict = [line for line in run.stdout.splitlines() if line.startswith(("ok", "FAIL", "skip"))]
        print(f"{'ok  ' if run.returncode == 0 else 'FAIL'} strata {' '.join(args)}")
        if run.returncode == SKIP:
            return SKIP
        if run.returncode != 0:
            failed += 1
            print(run.stdout[-3000:] + run.stderr[-1000:])
        elif verdict:
            print(f"     {verdict[-1][:160]}")
    print(f"seed {a.seed}: {judged} launches judged, {failed} failed")
    if judged == 0:
        print("FAIL: no draw got a launch")
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
