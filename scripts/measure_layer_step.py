#!/usr/bin/env python3
"""Measure PyTorch transformer-layer training steps on one GPU, for comparing strata's kernel model.

Runs forward + backward of a stack of decoder layers (bf16 or fp16, RMSNorm/LayerNorm, SwiGLU/GELU
MLP, causal attention either as scaled_dot_product_attention with the flash backend (FlashAttention-2),
with --attention cudnn its cuDNN backend (cuDNN's fused flash attention, which Transformer Engine
runs on Hopper and later), or, with --attention unfused, the way Megatron-LM and Megatron-DeepSpeed ran it before flash attention:
baddbmm of the scaled scores (plus the ALiBi bias for ALiBi models), causal mask, softmax, bmm with
the values) at the per-GPU shapes of several
models under tensor parallelism tp (heads, query groups and FFN width divided by tp, as one
Megatron TP rank computes them; the TP collectives themselves are not run). Records the step time
(CUDA events, median of --iters after --warmup) and peak memory per configuration into a JSON that
`strata calibrate --layers FILE` compares with the kernel model before and after calibration.

With --attention-profile FILE it also times SDPA forward and backward alone and writes them as a
strata profile DB (ops of kind "attention", names flash_attention / flash_attention_bwd, or
cudnn_attention / cudnn_attention_bwd with --attention cudnn), from which `strata calibrate` fits
the attention efficiencies and fixed blocks of that kernel.

Needs a CUDA GPU and PyTorch >= 2.3. Not run in CI.
"""
import argparse
import datetime as dt
import json
import os
import socket
import statistics
import sys

MODELS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models")


def load_model(name):
    """A catalog name (models/<name>.json) or a path to a model JSON."""
    path = name if name.endswith(".json") else os.path.join(MODELS_DIR, name + ".json")
    with open(path) as f:
        return json.load(f)


def build_layer(torch, m, tp, device, dtype, attention, dropout=0.0):
    """One decoder layer as one TP rank computes it (no TP collectives). dropout > 0 adds hidden
    dropout after the attention projection and fc2 and attention dropout inside SDPA."""
    nn = torch.nn
    F = torch.nn.functional
    h = m["hidden_size"]
    heads = m["num_attention_heads"] // tp
    groups = m.get("num_query_groups", m["num_attention_heads"]) // tp
    d = h // m["num_attention_heads"]
    swiglu = m.get("activation", "gelu") == "swiglu"
    rms = m.get("normalization", "layernorm") == "rmsnorm"
    moe = m.get("moe")
    ffn = (moe["expert_ffn_hidden_size"] if moe else m["ffn_hidden_size"]) // tp

    def drop(t):
        return F.dropout(t, dropout) if dropout > 0 else t

    class Norm(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.ones(h))
            self.b = None if rms else nn.Parameter(torch.zeros(h))

        def forward(self, x):
            if rms:
                return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-5).to(x.dtype) * self.w
            return F.layer_norm(x, (h,), self.w, self.b)

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.n1, self.n2 = Norm(), Norm()
            self.qkv = nn.Linear(h, (heads + 2 * groups) * d, bias=not rms)
            self.proj = nn.Linear(heads * d, h, bias=not rms)
            self.fc1 = nn.Linear(h, (2 if swiglu else 1) * ffn, bias=not rms)
            self.fc2 = nn.Linear(ffn, h, bias=not rms)

        def forward(self, x):  # x: [b, s, h]
            b, s, _ = x.shape
            q, k, v = self.qkv(self.n1(x)).split([heads * d, groups * d, groups * d], dim=-1)
            q = q.view(b, s, heads, d).transpose(1, 2)
            k = k.view(b, s, groups, d).transpose(1, 2)
            v = v.view(b, s, groups, d).transpose(1, 2)
            if groups != heads:
                k = k.repeat_interleave(heads // groups, dim=1)
                v = v.repeat_interleave(heads // groups, dim=1)
            if attention in ("flash", "cudnn"):  # the backend is chosen around the call (sdpa_kernel)
                a = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=dropout)
            else:
                a = unfused_attention(torch, q, k, v, alibi)
            x = x + drop(self.proj(a.transpose(1, 2).reshape(b, s, heads * d)))
            y = self.fc1(self.n2(x))
            if swiglu:
                g, u = y.chunk(2, dim=-1)
                y = F.silu(g) * u
            else:
                y = F.gelu(y, approximate="tanh")
            return x + drop(self.fc2(y))

    alibi = None
    if attention == "unfused" and m.get("position_embedding") == "alibi":
        # ALiBi slopes of this rank's heads (Press et al. 2022), added to the scores by baddbmm as
        # BLOOM's Megatron-DeepSpeed does: one [heads, 1, s] bias broadcast over the query rows.
        n = m["num_attention_heads"]
        slopes = torch.tensor([2 ** (-8 * (i + 1) / n) for i in range(n)])[:heads]
        alibi = (slopes[:, None, None] * torch.arange(m.get("max_seq_length", 2048))[None, None, :]).to(device=device, dtype=dtype)
    return Layer().to(device=device, dtype=dtype)


def unfused_attention(torch, q, k, v, alibi):
    """Scores materialized as [b*heads, s, s]: baddbmm (scale folded into alpha, ALiBi as the added
    input), causal mask, softmax, bmm with V. Megatron's fused kernel does scale, mask and softmax
    in one pass; here the mask fill and the softmax are two."""
    b, heads, s, d = q.shape
    q2, k2, v2 = q.reshape(b * heads, s, d), k.reshape(b * heads, s, d), v.reshape(b * heads, s, d)
    if alibi is not None:
        bias = alibi[:, :, :s].repeat(b, 1, 1)
        scores = torch.baddbmm(bias, q2, k2.transpose(1, 2), beta=1.0, alpha=d ** -0.5)
    else:
        scores = torch.bmm(q2, k2.transpose(1, 2)) * (d ** -0.5)
    mask = torch.ones(s, s, device=q.device, dtype=torch.bool).triu_(1)
    probs = torch.softmax(scores.masked_fill(mask, torch.finfo(scores.dtype).min), dim=-1)
    return torch.bmm(probs, v2).view(b, heads, s, d)


def attention_profile(out, args, device_name, compute_capability, sm_count, memory_GiB, ops, records):
    """The SDPA timings as a strata profile DB (profiler/include/profiler/profile_db.h)."""
    return {"schema_version": 1, "tool": "scripts/measure_layer_step.py", "suite": "pytorch-sdpa",
            "measured_at": out["measured_at"], "host": out["host"], "command": " ".join(sys.argv),
            "software": {"cuda_runtime_version": 0, "cupti_version": 0, "cublas_version": "", "nccl_version": ""},
            "method": {"warmup": args.warmup, "repetitions": args.iters, "dropped_records": 0},
            "devices": [{"index": 0, "name": device_name, "compute_capability": compute_capability,
                         "sm_count": sm_count, "memory_GiB": memory_GiB}],
            "notes": ["SDPA times from CUDA events (one record per call, not per kernel)"],
            "ops": ops, "records": records}


def time_cuda(torch, fn, warmup, iters, back_to_back=1):
    """Median GPU time of one fn() call. With back_to_back > 1 each sample times that many calls
    queued one after another and divides: a single short kernel timed between two events also
    counts the GPU waiting for the host to dispatch it (tens of microseconds from Python)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        fn()  # queued first, so the GPU is busy when `start` is reached
        start.record()
        for _ in range(back_to_back):
            fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3 / back_to_back)
    return statistics.median(times), times


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="llama3-8b,gpt3-13b,llama3-70b")
    ap.add_argument("--tp", default="1,2,4,8")
    ap.add_argument("--seq", default="2048,4096")
    ap.add_argument("--micro-batch", type=int, default=1)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--precision", choices=["bf16", "fp16"], default="bf16")
    ap.add_argument("--attention", choices=["flash", "cudnn", "unfused"], default="flash")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--out", required=True, help="measurements JSON (e.g. configs/measurements/h100-layer-steps.json)")
    ap.add_argument("--attention-profile", help="also write SDPA fwd/bwd timings as a strata profile DB")
    args = ap.parse_args()

    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    sdpa_backend = SDPBackend.CUDNN_ATTENTION if args.attention == "cudnn" else SDPBackend.FLASH_ATTENTION
    sdpa_label = {"flash": "SDPA flash", "cudnn": "SDPA cuDNN"}.get(args.attention, "unfused baddbmm/softmax/bmm")

    if not torch.cuda.is_available():
        sys.exit("measure_layer_step.py: no CUDA GPU available")
    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(dev)
    out = {
        "schema_version": 1,
        "gpu": props.name,
        "measured_at": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "host": socket.gethostname(),
        "torch_version": torch.__version__,
        "cuda_version": torch.version.cuda,
        "method": f"forward+backward of {args.layers} decoder layers, {args.precision}, "
                  f"{sdpa_label} attention (causal), CUDA events, "
                  f"median of {args.iters} after {args.warmup} warmup; TP collectives not run",
        "measurements": [],
    }
    attention_ops, attention_records = [], []
    t_ns = 0
    dtype = torch.bfloat16 if args.precision == "bf16" else torch.float16
    for name in args.models.split(","):
        m = load_model(name)
        for tp in [int(t) for t in args.tp.split(",")]:
            if m["num_attention_heads"] % tp or m.get("num_query_groups", m["num_attention_heads"]) % tp:
                continue
            for seq in [int(s) for s in args.seq.split(",")]:
                torch.cuda.empty_cache()
                torch.cuda.reset_peak_memory_stats()
                try:
                    layers = torch.nn.Sequential(*[build_layer(torch, m, tp, dev, dtype, args.attention) for _ in range(args.layers)])
                    x = torch.randn(args.micro_batch, seq, m["hidden_size"], device=dev, dtype=dtype, requires_grad=True)

                    def step():
                        with sdpa_kernel(sdpa_backend):
                            layers(x).float().sum().backward()

                    def fwd():
                        with torch.no_grad(), sdpa_kernel(sdpa_backend):
                            layers(x)

                    t_step, _ = time_cuda(torch, step, args.warmup, args.iters)
                    t_fwd, _ = time_cuda(torch, fwd, args.warmup, args.iters)
                    peak = torch.cuda.max_memory_allocated() / 2**30
                except torch.cuda.OutOfMemoryError:
                    print(f"{name} tp={tp} seq={seq}: out of memory, skipped", file=sys.stderr)
                    continue
                finally:
                    layers = x = None
                rec = {"model": name, "tp": tp, "seq": seq, "micro_batch": args.micro_batch, "layers": args.layers,
                       "precision": args.precision, "attention": args.attention, "step_time_s": t_step, "forward_time_s": t_fwd,
                       "backward_time_s": max(t_step - t_fwd, 0.0), "peak_memory_GiB": peak}
                out["measurements"].append(rec)
                print(f"{name:<14} tp={tp} seq={seq:<6} {args.precision} {args.attention:<7} step {t_step*1e3:8.2f} ms  fwd {t_fwd*1e3:8.2f} ms  peak {peak:6.2f} GiB")

                if args.attention_profile and args.attention in ("flash", "cudnn"):
                    heads = m["num_attention_heads"] // tp
                    d = m["hidden_size"] // m["num_attention_heads"]
                    b = args.micro_batch
                    q = torch.randn(b, heads, seq, d, device=dev, dtype=dtype, requires_grad=True)
                    k = torch.randn_like(q, requires_grad=True)
                    v = torch.randn_like(q, requires_grad=True)
                    go = torch.randn_like(q)

                    def a_fwd():
                        with torch.no_grad(), sdpa_kernel(sdpa_backend):
                            torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)

                    with sdpa_kernel(sdpa_backend):
                        o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)

                    def a_bwd():
                        torch.autograd.grad(o, (q, k, v), go, retain_graph=True)

                    # FLOPs and bytes as costmodel's decoder_layer_ops counts them (causal half).
                    flops = 4.0 * b * heads * seq * seq * d * 0.5
                    h = m["hidden_size"]
                    kv = d * m.get("num_query_groups", m["num_attention_heads"])
                    byts = (b * seq * (h + 2 * kv) / tp + b * seq * h / tp) * 2
                    # Named as strata's layer_ops names the kernel it costs for this backend.
                    base = "cudnn_attention" if args.attention == "cudnn" else "flash_attention"
                    for label, fn, f, by in ((base, a_fwd, flops, byts), (base + "_bwd", a_bwd, flops * 2.5, byts * 2)):
                        _, times = time_cuda(torch, fn, args.warmup, args.iters, back_to_back=10)
                        idx = len(attention_ops)
                        attention_ops.append({"name": label, "kind": "attention", "precision": args.precision, "m": seq, "n": seq,
                                              "k": d, "batch": b * heads, "flops": f, "bytes": by,
                                              "source": f"{name} tp={tp} seq={seq} (PyTorch {sdpa_label})"})
                        for i, t in enumerate(times):
                            # One record per call; the grid is flash attention's (query tiles of 128 x b*heads).
                            attention_records.append({"kind": "kernel", "name": f"sdpa_{label}", "grid": [max(1, seq // 128), b * heads, 1],
                                                      "block": [128, 1, 1], "start_ns": t_ns, "end_ns": t_ns + int(t * 1e9),
                                                      "op": idx, "op_instance": i})
                            t_ns += int(t * 1e9) + 1000
                    q = k = v = o = go = None

    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(out, f, indent=2)
    print(f"wrote {args.out} ({len(out['measurements'])} configurations)")
    if args.attention_profile:
        prof = attention_profile(out, args, props.name, f"{props.major}.{props.minor}", props.multi_processor_count,
                                 props.total_memory / 2**30, attention_ops, attention_records)
        with open(args.attention_profile, "w") as f:
            json.dump(prof, f)
        print(f"wrote {args.attention_profile} ({len(attention_ops)} attention ops)")


if __name__ == "__main__":
    main()
