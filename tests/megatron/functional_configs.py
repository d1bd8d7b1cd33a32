#!/usr/bin/env python3
"""Megatron-LM's own functional-test launches, read by strata and by Megatron-LM: do they agree?

conformance.py and random_sweep.py judge launches strata writes. This judges strata's reading of
launches it did not write: the model_config.yaml of every GPT, MoE, Mixtral, hybrid and Nemotron
case under tests/functional_tests/test_cases of a Megatron-LM checkout (some three hundred, using
most of Megatron's flags). Each case's MODEL_ARGS become a command line as Megatron's CI makes
them (shell_test_utils/_run_training.sh: `true` is the bare switch, a "[a b]" value is its words);
strata predicts it (`--megatron-args`, on the fewest GPUs of 8, 16, 32 or 64 its parallel sizes
fit), and check.py asks Megatron-LM for what it derives from the same flags. For the cases both
accept, conformance.py's comparison must find no difference: dp, vpp, micro-batches, the decoder
layers of every stage and chunk, recompute, the model's shape, MoE and MLA settings, the parallel
and runtime settings, as for a launch strata writes. Vocabulary sizes are compared where the launch
gives --vocab-size (Megatron's args hold none for a tokenizer file); a departure strata states in a
note of its own is not a disagreement: DSA launches without a fused kernel backend, costed as the
fused kernels. The checkout is not part of the project, so CI does not run this; a developer runs
it against the Megatron-LM commit check.py pins (about four minutes).

Usage: functional_configs.py --strata BIN --check CHECK_PY --megatron MEGATRON_LM_CHECKOUT
Exit 0: every case both read agrees; 1: a case disagrees, or strata crashes (printed).
Needs PyYAML (python3-yaml).
"""
import argparse
import contextlib
import glob
import io
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


def megatron_judges(check_py, job, words, world, env):
    """conformance.py's judgement of `job` against what Megatron-LM derives from `words`, in a
    child process: check.py's stand-ins for torch and friends stay in the process that loads them."""
    request = json.dumps({"check": check_py, "job": job, "words": words, "world": world, "env": env})
    r = subprocess.run([sys.executable, os.path.abspath(__file__), "--judge-one"], input=request, capture_output=True,
                       text=True, cwd=tempfile.gettempdir(), timeout=180)
    try:
        return json.loads(r.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        return {"valid": False, "crashed": True, "error": r.stderr[-400:]}


def judge_one():
    """Child process: read the request on stdin, print {valid, error, problems}."""
    request = json.load(sys.stdin)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import conformance
    check = conformance.load_checker(request["check"])
    for k, v in request["env"].items():
        os.environ[k] = v
    flags = [w for w in request["words"] if w not in NOT_CHECKABLE]
    quiet = io.StringIO()
    with contextlib.redirect_stdout(quiet):
        verdict, args, config = conformance.megatron_view(check, flags, request["world"], 9, request["env"])
        problems = conformance.compare(request["job"], args, config, verdict, written_by_strata=False) if verdict["valid"] else []
        if verdict["valid"] and getattr(config, "experimental_attention_variant", None) == "gdn":
            problems = gated_deltanet_problems(conformance, request["job"], args, config, verdict, problems)
    print(json.dumps({"valid": verdict["valid"], "error": verdict["error"], "problems": problems}))
    return 0


def gated_deltanet_problems(conformance, job, args, config, verdict, problems):
    """A GPT launch with --experimental-attention-variant gated_delta_net: strata costs each decoder
    layer as two of its hybrid layers, the mixer (G gated DeltaNet, * attention) and the MLP (-, or
    E for MoE). The comparison is made in that form: the pattern Megatron builds, and twice its
    layers in every stage and chunk."""
    n = config.num_layers
    freq = config.linear_attention_freq
    # experimental_attention_variant_module_specs.py: an integer N puts softmax attention on every
    # N-th layer, gated DeltaNet on the others; a list gives each layer (1 linear, 0 softmax).
    linear = [0 if (i + 1) % freq == 0 else 1 for i in range(n)] if isinstance(freq, int) else list(freq)
    moe_freq = config.moe_layer_freq if config.num_moe_experts else None
    moe = ([1 if i % moe_freq == 0 else 0 for i in range(n)] if isinstance(moe_freq, int)
           else list(moe_freq) if moe_freq else [0] * n)
    expected = "".join(("G" if linear[i] else "*") + ("E" if moe[i] else "-") for i in range(n))
    model = job["model"]
    left = [p for p in problems if not p.startswith(("layers:", "hybrid layer pattern:", "attention variant:",
                                                    "decoder layers per stage and chunk:"))]
    if model.get("hybrid_pattern") != expected:
        left.append(f"gated DeltaNet layers: strata planned {model.get('hybrid_pattern')!r}, Megatron builds {expected!r}")
    chunks = job.get("stage_chunks") or [[s] for s in job["stages"]]
    megatron_chunks = conformance.megatron_layers(config, job["parallel"]["pp"], verdict["derived"]["vpp"], args)
    doubled = [[2 * layers for layers in stage] for stage in megatron_chunks]
    if chunks != doubled:
        left.append(f"layers per stage and chunk (mixer and MLP apart): strata planned {chunks}, Megatron builds {doubled}")
    return left


def main():
    if sys.argv[1:] == ["--judge-one"]:
        return judge_one()
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
        # The case's environment as its CI job sets it; Megatron needs CUDA_DEVICE_MAX_CONNECTIONS=1
        # with TP or CP, which every CI job exports.
        env = {"CUDA_DEVICE_MAX_CONNECTIONS": "1"}
        env.update({k: str(v) for k, v in (config.get("ENV_VARS") or {}).items()})
        verdict = megatron_judges(a.check, job, words, world, env)
        if verdict.get("crashed"):
            failures.append(f"{name}: the Megatron-LM check gave no verdict: {verdict['error']}")
            continue
        if not verdict["valid"]:
            refused_by_megatron += 1
            continue
        compared += 1
        notes = " ".join(job.get("megatron_launch", {}).get("notes", []))
        for problem in verdict["problems"]:
            if problem.startswith("vocabulary:") and "--vocab-size" not in words:
                continue
            if problem.startswith("DSA fused kernels:") and "costed as the fused kernels" in notes:
                continue
            failures.append(f"{name} on {world} GPUs: {problem}")
    print(f"{len(cases)} configs; strata predicted {read}; Megatron-LM accepted {compared} of those "
          f"({refused_by_megatron} refused by it or its checker's stand-ins); disagreements: {len(failures)}")
    for line in failures:
        print("  " + line)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
