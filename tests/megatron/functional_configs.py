#!/usr/bin/env python3
"""Megatron-LM's own functional-test launches, read by strata and by Megatron-LM: do they agree?

conformance.py and random_sweep.py judge launches strata writes. This judges strata's reading of
launches it did not write: the model_config.yaml of every GPT, MoE, Mixtral, hybrid and Nemotron
case under tests/functional_tests/test_cases of a Megatron-LM checkout (some three hundred, using
most of Megatron's flags). Each case's MODEL_ARGS become a command line as Megatron's CI makes
them (shell_test_utils/_run_training.sh: `true` is the bare switch, a "[a b]" value is its words);
strata predicts it (`--megatron-args`, on the fewest GPUs of 8, 16, 32 or 64 its parallel sizes
fit), and check.py asks Megatron-LM for what it derives from the same flags. For the cases both
accept, the fields below must agree. The checkout is not part of the project, so CI does not run
this; a developer runs it against the Megatron-LM commit check.py pins.

Usage: functional_configs.py --strata BIN --check CHECK_PY --megatron MEGATRON_LM_CHECKOUT
Exit 0: every case both read agrees; 1: a case disagrees, or strata crashes (printed).
Needs PyYAML (python3-yaml).
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

import yaml

FAMILIES = ("gpt", "gpt-nemo", "moe", "mixtral", "hybrid", "nemotron")
# check.py's stand-ins for torch do not run these paths (device capability, a module outside its
# snapshot); neither flag changes what is compared.
NOT_CHECKABLE = {"--deterministic-mode", "--moe-grouped-gemm"}


def launch_words(model_args):
    """MODEL_ARGS as Megatron's CI passes them to the training script."""
    words = []
    for key, value in (model_args or {}).items():
        if value is True:
            words.append(key)
        elif value is False or value is None:
            continue
        else:
            text = str(value).strip()
            if text.startswith("[") and text.endswith("]") and len(text) > 2:
                words += [key] + text[1:-1].split()
            else:
                words += [key, text]
    return words


def strata_prediction(strata, script, words):
    quoted = " ".join("'" + w.replace("'", "'\\''") + "'" for w in words)
    with tempfile.NamedTemporaryFile("w", suffix=".sh", delete=False) as f:
        f.write(f"{script} {quoted}\n")
        path = f.name
    try:
        last = None
        for world in (8, 16, 32, 64):
            r = subprocess.run([strata, "predict", "--megatron-args", path, "--gpus", str(world), "--gpu", "h100", "--json"],
                               capture_output=True, text=True, timeout=60)
            if r.returncode < 0 or r.returncode > 2:
                return world, None, f"strata exited {r.returncode}: {r.stderr[-300:]}"
            last = (world, r)
            if r.returncode in (0, 2) and r.stdout.lstrip().startswith("{"):
                return world, json.loads(r.stdout), None
        return last[0], None, None  # refused with a message: not compared
    finally:
        os.unlink(path)


def compared_fields(job, derived, words):
    plan, model, training = job["parallel"], job["model"], job["training"]
    heads = model["num_attention_heads"]
    fields = {
        "dp": (plan["dp"], derived["dp"]),
        "vpp": (plan.get("vpp") or 1, derived["vpp"] or 1),
        "micro-batches": (training["global_batch_size"] // (plan["micro_batch_size"] * plan["dp"]), derived["num_microbatches"]),
        "sequence parallel": (plan["sequence_parallel"], bool(derived["sequence_parallel"])),
        "cp": (plan["cp"], derived["context_parallel_size"]),
        "swiglu": (model["activation"] == "swiglu", bool(derived["swiglu"])),
        "normalization": (model["normalization"], {"LayerNorm": "layernorm", "RMSNorm": "rmsnorm"}.get(derived["normalization"])),
        "untied embeddings": (not model["tied_embeddings"], bool(derived["untie_embeddings_and_output_weights"])),
        "linear biases": (model["add_linear_bias"], bool(derived["add_bias_linear"])),
        "recompute": (job["recompute"]["granularity"] if job["recompute"]["granularity"] != "none" else None,
                      derived["recompute_granularity"]),
        "fp8": (training["precision"] == "fp8", derived["fp8"] is not None),
    }
    if model.get("moe"):
        fields["etp"] = (plan["etp"], derived["expert_tensor_parallel_size"] or plan["tp"])
    if not model.get("mla"):
        # Megatron's args keep --num-query-groups' default of 1 without --group-query-attention;
        # TransformerConfig then takes one group per head (argument_utils.py).
        groups = derived["num_query_groups"] if "--group-query-attention" in words else heads
        fields["query groups"] = (model["num_query_groups"], groups)
        fields["kv channels"] = (model.get("head_dim", model["hidden_size"] // heads), derived["kv_channels"])
    if model["position_embedding"] == "rope":
        fields["rotary base"] = (model["rotary_base"], derived["rotary_base"])
    return {k: v for k, v in fields.items() if v[0] != v[1]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--strata", required=True)
    ap.add_argument("--check", required=True)
    ap.add_argument("--megatron", required=True, help="a Megatron-LM checkout (its tests/functional_tests)")
    a = ap.parse_args()
    a.strata, a.check = os.path.abspath(a.strata), os.path.abspath(a.check)  # check.py runs from a scratch directory
    root = os.path.join(a.megatron, "tests", "functional_tests", "test_cases")
    cases = sorted(p for fam in FAMILIES for p in glob.glob(os.path.join(root, fam, "*", "model_config.yaml")))
    if not cases:
        print(f"no functional-test configs under {root}", file=sys.stderr)
        return 1
    read = compared = refused_by_megatron = 0
    failures = []
    for path in cases:
        name = os.path.relpath(os.path.dirname(path), root)
        with open(path) as f:
            config = yaml.safe_load(f) or {}
        words = launch_words(config.get("MODEL_ARGS"))
        script = "pretrain_hybrid.py" if "--hybrid-layer-pattern" in words or name.startswith("hybrid/") else "pretrain_gpt.py"
        world, job, crash = strata_prediction(a.strata, script, words)
        if crash:
            failures.append(f"{name}: {crash}")
            continue
        if job is None:
            continue
        read += 1
        env = dict(os.environ, CUDA_DEVICE_MAX_CONNECTIONS="1")
        env.update({k: str(v) for k, v in (config.get("ENV_VARS") or {}).items()})
        checked = [w for w in words if w not in NOT_CHECKABLE]
        r = subprocess.run([sys.executable, a.check, "--world", str(world), "--arch", "9", "--"] + checked,
                           capture_output=True, text=True, env=env, cwd=tempfile.gettempdir(), timeout=120)
        try:
            verdict = json.loads(r.stdout)
        except json.JSONDecodeError:
            failures.append(f"{name}: check.py gave no verdict: {r.stderr[-300:]}")
            continue
        if not verdict.get("valid"):
            refused_by_megatron += 1
            continue
        compared += 1
        for field, (ours, megatrons) in compared_fields(job, verdict["derived"], words).items():
            failures.append(f"{name} on {world} GPUs: {field}: strata reads {ours}, Megatron-LM derives {megatrons}")
    print(f"{len(cases)} configs; strata predicted {read}; Megatron-LM accepted {compared} of those "
          f"({refused_by_megatron} refused by it or its checker's stand-ins); disagreements: {len(failures)}")
    for line in failures:
        print("  " + line)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
