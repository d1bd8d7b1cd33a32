#!/usr/bin/env python3
"""Host time and GPU time of one Megatron-Core MoE layer, forward and backward, on one GPU.

What it settles: whether a dropless MoE layer's forward is bound by the host. Megatron-Core's
dropless dispatchers copy the token counts to the host once per layer
(`_maybe_dtoh_and_synchronize` in megatron/core/transformer/moe/token_dispatcher.py) and wait for
them, so the host cannot queue the rest of the layer ahead of the GPU: the forward takes about
GPU time + the host time after the sync point, not max(GPU, host) over a long queue.

The layer is Megatron-Core's own `MoELayer` (a source snapshot of Megatron-LM on PYTHONPATH,
`--mcore DIR`) built with the local spec (no Transformer Engine: it cannot be installed on the
measuring machine), so the experts are `SequentialMLP` (one expert after another, each with its
own kernels: what strata's own launch runs) and the permutation is PyTorch's, not TE's fused one.
Expert parallelism is emulated on one GPU: the local experts of one EP rank, and the routed rows
per expert that rank receives when routing is balanced (Megatron-Bridge forces balance in its
benchmarks, `moe_router_force_load_balancing`), so the GEMMs have the shapes of the real run.
The all-to-all itself is not exercised (EP = 1).

Per case:
- fwd_s / bwd_s: wall time of the forward (until the GPU is done) and of the backward.
- fwd_host_return_s: when the forward call returned on the host (the GPU may still be busy).
- fwd_gpu_busy_s / bwd_gpu_busy_s: summed kernel time of one forward / backward (torch.profiler,
  CUPTI; the second profiled pass, the first pays the profiler's set-up), and the kernel and
  CPU-operator counts.
- tiny-token twin of each case (rows per expert 8): its forward wall time is the host time to
  issue the layer, since its kernels are a few microseconds each.

With --whole-layer the same cases time the whole decoder layer (the local spec's unfused attention
with GQA and QK-norm, then the MoE block): what the attention part adds to the host time.

  python3 scripts/measure_moe_layer.py --mcore .mcore --out moe-layer.json [--whole-layer]
"""
import argparse
import datetime as dt
import json
import os
import platform
import statistics
import sys
import time
import traceback


def cases(quick):
    # name, hidden, moe_ffn, local experts, topk, tokens: rows per expert = tokens * topk / experts
    real = [
        # Qwen3-30B-A3B at ep 16 (8 of its 128 experts per GPU), 4096 tokens per GPU, top-8:
        # 4096 rows per local expert under balanced routing.
        ("qwen3-30b-a3b_ep16", 2048, 768, 8, 8, 4096),
        # Qwen3-235B-A22B at tp 2 (sp) ep 32: 4 local experts, 2048 tokens per GPU, top-8.
        ("qwen3-235b-a22b_ep32_tp2", 4096, 1536, 4, 4, 4096),
        # GPT-OSS-120B at ep 8: 16 local experts, 4096 tokens per GPU, top-4.
        ("gpt-oss-120b_ep8", 2880, 2880, 16, 4, 4096),
        # DeepSeek-V3 at ep 64: 4 local experts, 4096 tokens per GPU, top-8.
        ("deepseek-v3_ep64", 7168, 2048, 4, 4, 4096),
    ]
    sweep = [(f"sweep_e{e}", 2048, 768, e, min(8, e), 4096) for e in (1, 2, 4, 8, 16, 32, 64)]
    return real[:2] + sweep[:3] if quick else real + sweep


def build_layer(torch, args, hidden, ffn, experts, topk, dispatcher, whole=False):
    import torch.nn.functional as F
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_submodules
    from megatron.core.transformer.moe.moe_layer import MoELayer
    from megatron.core.transformer.spec_utils import get_submodules
    from megatron.core.transformer.transformer_config import TransformerConfig

    heads = max(1, hidden // 128)
    config = TransformerConfig(
        num_layers=1,
        hidden_size=hidden,
        num_attention_heads=heads,
        num_moe_experts=experts,
        moe_router_topk=topk,
        moe_ffn_hidden_size=ffn,
        ffn_hidden_size=ffn,
        moe_token_dispatcher_type=dispatcher,
        moe_router_load_balancing_type="aux_loss",
        moe_aux_loss_coeff=1e-3,
        moe_router_force_load_balancing=True,
        moe_router_pre_softmax=topk == 1,  # Megatron-Core requires it for top-1 routing
        moe_grouped_gemm=False,
        gated_linear_unit=True,
        activation_func=F.silu,
        add_bias_linear=False,
        bf16=True,
        params_dtype=torch.bfloat16,
        gradient_accumulation_fusion=False,
        use_cpu_initialization=False,
    )
    if whole:
        # The whole decoder layer (local spec: Megatron's unfused attention with GQA and QK-norm, then
        # the MoE block): how much host time the attention part adds to the MoE layer's.
        from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
        from megatron.core.transformer.spec_utils import build_module
        config.num_query_groups = max(1, heads // 8)
        config.qk_layernorm = True
        spec = get_gpt_layer_local_spec(num_experts=experts, moe_grouped_gemm=False, qk_layernorm=True)
        # bf16 throughout, as Megatron's Float16Module wraps a bf16 model (its norms too)
        layer = build_module(spec, config=config, layer_number=1).cuda().to(torch.bfloat16)
    else:
        submodules = get_submodules(get_gpt_layer_local_submodules(num_experts=experts, moe_grouped_gemm=False).mlp)
        layer = MoELayer(config, submodules).cuda()
    layer.train()
    return layer


def run_once(torch, layer, x, grad):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    out, _ = layer(x)
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    out.backward(grad)
    torch.cuda.synchronize()
    t3 = time.perf_counter()
    return t2 - t0, t1 - t0, t3 - t2


def gpu_busy(torch, layer, x, grad, trace=None):
    """Summed kernel time and counts of one forward and one backward (torch.profiler: CUPTI), and
    the forward's kernels by total time; `trace`: write the Chrome trace there."""
    from torch.profiler import ProfilerActivity, profile, record_function

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        with record_function("strata_fwd"):
            out, _ = layer(x)
            torch.cuda.synchronize()
        with record_function("strata_bwd"):
            out.backward(grad)
            torch.cuda.synchronize()
    if trace:
        prof.export_chrome_trace(trace)
    events = prof.events()
    spans = {}
    for e in events:
        if e.name in ("strata_fwd", "strata_bwd") and e.device_type.name == "CPU":
            spans[e.name] = (e.time_range.start, e.time_range.end)
    res = {}
    for phase, (s, t) in spans.items():
        # CUDA-side events are kernels and copies; the GPU range of the record_function annotations
        # themselves also shows up there and is left out.
        kernels = [e for e in events if e.device_type.name == "CUDA" and s <= e.time_range.start <= t
                   and not e.name.startswith("strata_")]
        cpu_ops = [e for e in events if e.device_type.name == "CPU" and s < e.time_range.start < t
                   and e.name.startswith("aten::")]
        key = "fwd" if phase == "strata_fwd" else "bwd"
        res[f"{key}_gpu_busy_s"] = sum(k.time_range.elapsed_us() for k in kernels) / 1e6
        res[f"{key}_kernels"] = len(kernels)
        res[f"{key}_aten_ops"] = len(cpu_ops)
        by_name = {}
        for k in kernels:
            by_name[k.name] = by_name.get(k.name, 0.0) + k.time_range.elapsed_us() / 1e6
        res[f"{key}_top_kernels"] = sorted(([n[:90], round(t, 6)] for n, t in by_name.items()),
                                           key=lambda p: -p[1])[:8]
    return res


def measure_case(torch, args, name, hidden, ffn, experts, topk, tokens, dispatcher):
    trace = os.path.join(args.trace_dir, f"{name}_{dispatcher}.trace.json") if args.trace_dir else None
    layer = build_layer(torch, args, hidden, ffn, experts, topk, dispatcher, args.whole_layer)
    res = {"case": name + ("_whole_layer" if args.whole_layer else ""), "dispatcher": dispatcher, "hidden": hidden, "moe_ffn": ffn, "local_experts": experts,
           "topk": topk}
    for label, ntok in (("", tokens), ("tiny_", max(1, 8 * experts // topk))):
        x = torch.randn(ntok, 1, hidden, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        grad = torch.randn_like(x)
        for _ in range(args.warmup):
            run_once(torch, layer, x, grad)
        samples = [run_once(torch, layer, x, grad) for _ in range(args.iters)]
        res[f"{label}tokens"] = ntok
        res[f"{label}rows_per_expert"] = ntok * topk // experts
        res[f"{label}fwd_s"] = statistics.median(s[0] for s in samples)
        res[f"{label}fwd_host_return_s"] = statistics.median(s[1] for s in samples)
        res[f"{label}bwd_s"] = statistics.median(s[2] for s in samples)
        if not label:
            gpu_busy(torch, layer, x, grad)  # the profiler's first pass pays its own set-up: discarded
            res.update(gpu_busy(torch, layer, x, grad, trace))
            flops = 2 * 3 * ntok * topk * hidden * ffn  # fc1 (gated: 2 ffn) + fc2, forward
            res["expert_fwd_flop"] = flops
    del layer
    torch.cuda.empty_cache()
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mcore", required=True, help="folder holding a Megatron-LM snapshot's megatron/core")
    ap.add_argument("--out", required=True)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--dispatchers", default="alltoall,allgather")
    ap.add_argument("--whole-layer", action="store_true",
                    help="time the whole decoder layer (local spec: unfused attention, then the MoE block)")
    ap.add_argument("--only", default="", help="comma-separated case names (default: all)")
    ap.add_argument("--trace-dir", default="", help="write each case's profiled fwd+bwd as a Chrome trace here")
    ap.add_argument("--budget-seconds", type=float, default=1e9, help="stop starting new cases after this")
    args = ap.parse_args()
    sys.path.insert(0, os.path.abspath(args.mcore))
    t_start = time.time()

    import torch
    import torch.distributed as dist

    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29511")
    dist.init_process_group("nccl", rank=0, world_size=1)
    torch.cuda.set_device(0)
    from megatron.core import parallel_state
    from megatron.core.tensor_parallel.random import model_parallel_cuda_manual_seed

    parallel_state.initialize_model_parallel(tensor_model_parallel_size=1, pipeline_model_parallel_size=1,
                                             expert_model_parallel_size=1)
    model_parallel_cuda_manual_seed(123)

    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    doc = {
        "what": "Megatron-Core MoELayer (local spec: SequentialMLP experts, PyTorch permutation; no Transformer "
                "Engine) forward/backward on one GPU, EP emulated by the local experts and routed rows of one EP rank",
        "how": "scripts/measure_moe_layer.py; wall times are medians of --iters fwd+bwd after --warmup, "
               "torch.cuda.synchronize() around each; GPU busy = summed kernel durations of one fwd/bwd "
               "(torch.profiler, CUPTI); bf16; force-balanced aux-loss router",
        "date": dt.date.today().isoformat(),
        "gpu": torch.cuda.get_device_name(0),
        "cpu": cpu,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "megatron_core": getattr(__import__("megatron.core.package_info", fromlist=["__version__"]), "__version__", "?"),
        "cases": [],
        "errors": [],
    }
    for dispatcher in args.dispatchers.split(","):
        for case in cases(args.quick):
            if args.only and case[0] not in args.only.split(","):
                continue
            if time.time() - t_start > args.budget_seconds:
                doc["errors"].append(f"budget reached before {case[0]} / {dispatcher}")
                continue
            try:
                r = measure_case(torch, args, *case, dispatcher)
                doc["cases"].append(r)
                print(json.dumps(r), flush=True)
            except Exception:  # noqa: BLE001 - one failing case must not lose the others
                msg = f"{case[0]} / {dispatcher}: {traceback.format_exc()}"
                doc["errors"].append(msg)
                print(msg, flush=True)
            with open(args.out, "w") as f:
                json.dump(doc, f, indent=1)
    parallel_state.destroy_model_parallel()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
