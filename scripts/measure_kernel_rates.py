#!/usr/bin/env python3
"""Rates of the kernels a Transformer Engine run dispatches to, on one GPU.

Transformer Engine is not needed: it is measured through the same libraries it calls.
- Attention: PyTorch's SDPA with its cuDNN backend runs cuDNN's fused flash attention (the kernels
  Transformer Engine's FusedAttention, its default on Hopper, calls through cudnn-frontend), and
  with its flash backend FlashAttention-2 (what pre-TE stacks ran). Causal and full (the
  off-diagonal blocks of a context-parallel ring), head dims 64, 128 and MLA's 192/128, few and
  many heads per GPU, 1k to 128k tokens, forward and backward.
- GEMMs: bf16 `torch.mm` and fp8 (e4m3) `torch._scaled_mm` with per-tensor scales (Transformer
  Engine's delayed and current scaling: one cuBLASLt fp8 GEMM per linear), per-row scales, and
  1x128 / 128x128 block scales (Transformer Engine's Float8BlockScaling on Hopper), on the linears
  of today's models at their TP shards: forward, input-gradient and weight-gradient shapes.
- Sustained: an 8192^3 GEMM back to back for a while in bf16 and in fp8, with the SM clock and the
  power the driver reports, to see what the power limit leaves of each.

Timing: CUDA events around calls queued back to back after one queued call (the GPU never waits
for Python), median of the samples; random inputs, never zeros. Writes one JSON file.

  python3 scripts/measure_kernel_rates.py --out kernel-rates.json [--quick]
"""
import argparse
import datetime as dt
import json
import math
import os
import socket
import statistics
import subprocess
import sys
import time


def time_calls(torch, fn, target_s=0.04, samples=5):
    """Median seconds per fn() call and the samples. One untimed call first (warm-up, and an
    estimate that sets how many calls each sample queues, so that each sample lasts ~target_s)."""
    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    est = max(time.perf_counter() - t0, 1e-6)
    reps = max(1, min(200, int(target_s / est)))
    if est > 0.3:
        samples = 2
    times = []
    for _ in range(samples):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        fn()  # queued before `start`, so the GPU is busy when the timing begins
        start.record()
        for _ in range(reps):
            fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3 / reps)
    return statistics.median(times), times, reps


def attention_cases(quick):
    """Most telling first (a time budget may cut the tail): head dim 128 on both backends, then
    full blocks, MLA's 192/128 and head dim 64."""
    seqs = [1024, 4096] if quick else [1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072]
    full_seqs = [2048, 8192] if quick else [2048, 4096, 8192, 16384, 32768]
    cases = []
    def add(backends, dqk, dv, seq_list, causal):
        for backend in backends:
            for heads in (8, 32):
                for s in seq_list:
                    cases.append(dict(backend=backend, dqk=dqk, dv=dv, heads=heads, batch=1, seq=s, causal=causal))
    add(("cudnn", "flash"), 128, 128, seqs, True)
    # Full (non-causal) blocks, as each off-diagonal step of a context-parallel ring computes.
    add(("cudnn", "flash"), 128, 128, full_seqs, False)
    add(("cudnn",), 192, 128, seqs, True)  # flash (FA2) needs one head dim for Q, K and V
    add(("cudnn", "flash"), 64, 64, seqs, True)
    return cases


def measure_attention(torch, case, peak_bf16):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    backend = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION}[case["backend"]]
    b, h, s, dqk, dv = case["batch"], case["heads"], case["seq"], case["dqk"], case["dv"]
    # [b, s, h, d] in memory (Megatron's layout up to the batch/sequence order), viewed as SDPA's [b, h, s, d].
    q = torch.randn(b, s, h, dqk, device="cuda", dtype=torch.bfloat16).transpose(1, 2).requires_grad_()
    k = torch.randn(b, s, h, dqk, device="cuda", dtype=torch.bfloat16).transpose(1, 2).requires_grad_()
    v = torch.randn(b, s, h, dv, device="cuda", dtype=torch.bfloat16).transpose(1, 2).requires_grad_()
    sdpa = torch.nn.functional.scaled_dot_product_attention
    with sdpa_kernel(backend):
        with torch.no_grad():
            t_fwd, fwd_samples, fwd_reps = time_calls(torch, lambda: sdpa(q, k, v, is_causal=case["causal"]))
        o = sdpa(q, k, v, is_causal=case["causal"])
        go = torch.randn_like(o)
        t_bwd, bwd_samples, bwd_reps = time_calls(torch, lambda: torch.autograd.grad(o, (q, k, v), go, retain_graph=True))
    # FLOPs: QK^T (dqk) and PV (dv), 2 per multiply-add, the causal half only; backward 2.5x forward
    # (recomputed QK^T, then dV, dP, dQ, dK), as strata's layer_ops counts them.
    frac = 0.5 if case["causal"] else 1.0
    flops = 2.0 * b * h * s * s * (dqk + dv) * frac
    rec = dict(case, fwd_s=t_fwd, bwd_s=t_bwd, fwd_samples=fwd_samples, bwd_samples=bwd_samples,
               fwd_calls_per_sample=fwd_reps, bwd_calls_per_sample=bwd_reps, fwd_flops=flops, bwd_flops=2.5 * flops,
               fwd_fraction_of_peak=flops / t_fwd / peak_bf16, bwd_fraction_of_peak=2.5 * flops / t_bwd / peak_bf16)
    return rec


def model_linears():
    """(model, tp, tokens, linear, out_features, in_features) of a TP shard's linears."""
    rows = []
    def dense(model, h, heads, kv_heads, d, ffn, gated, tp, tokens):
        qkv = (heads + 2 * kv_heads) * d // tp
        rows.extend([(model, tp, tokens, "qkv", qkv, h), (model, tp, tokens, "proj", h, heads * d // tp),
                     (model, tp, tokens, "fc1", (2 if gated else 1) * ffn // tp, h), (model, tp, tokens, "fc2", h, ffn // tp)])
    dense("llama3-8b", 4096, 32, 8, 128, 14336, True, 1, 8192)
    dense("llama3-70b", 8192, 64, 8, 128, 28672, True, 4, 8192)
    dense("llama3-70b", 8192, 64, 8, 128, 28672, True, 8, 8192)
    dense("llama3.1-405b", 16384, 128, 8, 128, 53248, True, 8, 8192)
    dense("gpt3-175b", 12288, 96, 96, 128, 49152, False, 4, 2048)
    dense("gpt3-175b", 12288, 96, 96, 128, 49152, False, 8, 2048)
    # Routed experts (one expert's GEMMs at its token count): Qwen3-30B-A3B, Qwen3-235B-A22B, DeepSeek-V3.
    for model, h, ffn, tokens in (("qwen3-30b-a3b-expert", 2048, 768, 4096), ("qwen3-235b-a22b-expert", 4096, 1536, 2048),
                                  ("deepseek-v3-expert", 7168, 2048, 4096), ("deepseek-v3-expert", 7168, 2048, 16384)):
        rows.extend([(model, 1, tokens, "fc1", 2 * ffn, h), (model, 1, tokens, "fc2", h, ffn)])
    rows.append(("square", 1, 8192, "square", 8192, 8192))
    return rows


def gemm_variants(torch):
    import torch.nn.functional as F
    f8 = torch.float8_e4m3fn

    def bf16(M, N, K):
        a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(N, K, device="cuda", dtype=torch.bfloat16)
        return lambda: torch.mm(a, b.t())

    def tensorwise(M, N, K):
        a = torch.randn(M, K, device="cuda").to(f8)
        b = torch.randn(N, K, device="cuda").to(f8)
        one = torch.ones((), device="cuda")
        return lambda: torch._scaled_mm(a, b.t(), one, one, out_dtype=torch.bfloat16)

    def rowwise(M, N, K):
        a = torch.randn(M, K, device="cuda").to(f8)
        b = torch.randn(N, K, device="cuda").to(f8)
        sa = torch.rand(M, 1, device="cuda") + 0.5
        sb = torch.rand(1, N, device="cuda") + 0.5
        return lambda: torch._scaled_mm(a, b.t(), sa, sb, out_dtype=torch.bfloat16)

    def blockwise(M, N, K):
        a = torch.randn(M, K, device="cuda").to(f8)
        b = torch.randn(N, K, device="cuda").to(f8)
        sa = (torch.rand(M, K // 128, device="cuda") + 0.5).t().contiguous().t()  # outer-dim-major
        sb = torch.rand(N // 128, K // 128, device="cuda") + 0.5
        return lambda: F.scaled_mm(a, b.t(), sa, F.ScalingType.BlockWise1x128, sb.t(), F.ScalingType.BlockWise128x128,
                                   output_dtype=torch.bfloat16)

    return {"bf16": bf16, "fp8_tensorwise": tensorwise, "fp8_rowwise": rowwise, "fp8_blockwise": blockwise}


def measure_gemms(torch, quick, peak_bf16, log):
    variants = gemm_variants(torch)
    rows = model_linears()
    if quick:
        rows = rows[:4] + rows[-1:]
    out, failed = [], {}
    for model, tp, tokens, linear, n_out, k_in in rows:
        # Forward Y = X W^T; input gradient dX = dY W; weight gradient dW = dY^T X.
        for gemm, (M, N, K) in (("fprop", (tokens, n_out, k_in)), ("dgrad", (tokens, k_in, n_out)), ("wgrad", (n_out, k_in, tokens))):
            rec = dict(model=model, tp=tp, tokens=tokens, linear=linear, gemm=gemm, m=M, n=N, k=K, flops=2.0 * M * N * K)
            for name, make in variants.items():
                if name == "fp8_blockwise" and (N % 128 or K % 512):
                    continue
                try:
                    t, samples, reps = time_calls(torch, make(M, N, K), target_s=0.02)
                    rec[name + "_s"] = t
                    rec[name + "_fraction_of_bf16_peak"] = rec["flops"] / t / peak_bf16
                except Exception as e:  # an unsupported variant is recorded once, not fatal
                    failed.setdefault(name, f"{type(e).__name__}: {str(e)[:300]}")
                torch.cuda.empty_cache()
            out.append(rec)
            log(f"gemm {model:<24} tp{tp} {linear:<6} {gemm:<5} {M:>6}x{N:>6}x{K:>6} " +
                " ".join(f"{n}={rec[n + '_fraction_of_bf16_peak']:.3f}" for n in variants if n + "_s" in rec))
    return out, failed


def smi_sampler(path):
    try:
        return subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu",
                                 "--format=csv,noheader", "-lms", "500"], stdout=open(path, "w"), stderr=subprocess.DEVNULL)
    except OSError:
        return None


def sustained(torch, seconds, out_dir, log):
    variants = gemm_variants(torch)
    res = []
    for name in ("bf16", "fp8_tensorwise"):
        fn = variants[name](8192, 8192, 8192)
        fn()
        torch.cuda.synchronize()
        smi_path = os.path.join(out_dir, f"sustained-{name}.smi.csv")
        smi = smi_sampler(smi_path)
        t_start = time.time()
        windows = []
        while time.time() - t_start < seconds:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(50):
                fn()
            end.record()
            torch.cuda.synchronize()
            windows.append(dict(t=time.time() - t_start, s_per_gemm=start.elapsed_time(end) / 1e3 / 50))
        if smi:
            smi.terminate()
            smi.wait()
        flops = 2.0 * 8192 ** 3
        last = [w["s_per_gemm"] for w in windows if w["t"] > seconds / 3]
        rec = dict(variant=name, seconds=seconds, windows=windows, tflops_first_window=flops / windows[0]["s_per_gemm"] / 1e12,
                   tflops_steady_median=flops / statistics.median(last) / 1e12)
        try:
            clocks, power = [], []
            for line in open(smi_path):
                parts = [p.strip() for p in line.split(",")]
                clocks.append(float(parts[1].split()[0]))
                power.append(float(parts[2].split()[0]))
            rec["sm_clock_mhz_median"] = statistics.median(clocks[len(clocks) // 3:])
            rec["power_w_median"] = statistics.median(power[len(power) // 3:])
        except Exception as e:
            rec["smi_error"] = str(e)[:200]
        res.append(rec)
        log(f"sustained {name}: first {rec['tflops_first_window']:.0f} TFLOP/s, steady {rec['tflops_steady_median']:.0f} TFLOP/s, "
            f"clock {rec.get('sm_clock_mhz_median')} MHz, power {rec.get('power_w_median')} W")
        time.sleep(3)  # let the clock recover before the next variant
    return res


def kernel_names(torch):
    """Which kernels the backends launch (CUPTI activity records through PyTorch's profiler)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.profiler import profile, ProfilerActivity
    names = {}
    q = torch.randn(1, 8, 4096, 128, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    for label, be in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
        with sdpa_kernel(be):
            o = torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)
            o.sum().backward()
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                o = torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)
                o.sum().backward()
                torch.cuda.synchronize()
        names["attention_" + label] = sorted({e.name for e in prof.events() if e.device_type.name == "CUDA"})
    for label, make in gemm_variants(torch).items():
        try:
            fn = make(4096, 4096, 4096)
            fn()
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                fn()
                torch.cuda.synchronize()
            names["gemm_" + label] = sorted({e.name for e in prof.events() if e.device_type.name == "CUDA"})
        except Exception as e:
            names["gemm_" + label] = [f"failed: {type(e).__name__}: {str(e)[:200]}"]
    return names


def attention_variants(torch, peak_bf16, log):
    """Attention dropout (p = 0.1, as GPT-3-style recipes set it) and grouped-query heads (8 key/value
    heads for 32 or 64 query heads, Transformer Engine passes them to cuDNN as they are) against the
    plain causal kernel of the same shape, both backends, head dim 128, 2k-16k tokens."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    sdpa = torch.nn.functional.scaled_dot_product_attention
    out = []
    for backend, be in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
        for heads, kv_heads, p in ((32, 32, 0.0), (32, 32, 0.1), (32, 8, 0.0), (64, 8, 0.0)):
            for s in (2048, 4096, 8192, 16384):
                rec = dict(backend=backend, heads=heads, kv_heads=kv_heads, dropout=p, seq=s, dqk=128, dv=128)
                try:
                    q = torch.randn(1, s, heads, 128, device="cuda", dtype=torch.bfloat16).transpose(1, 2).requires_grad_()
                    k = torch.randn(1, s, kv_heads, 128, device="cuda", dtype=torch.bfloat16).transpose(1, 2).requires_grad_()
                    v = torch.randn(1, s, kv_heads, 128, device="cuda", dtype=torch.bfloat16).transpose(1, 2).requires_grad_()
                    gqa = kv_heads != heads
                    with sdpa_kernel(be):
                        t_fwd, _, _ = time_calls(torch, lambda: sdpa(q, k, v, is_causal=True, dropout_p=p, enable_gqa=gqa))
                        o = sdpa(q, k, v, is_causal=True, dropout_p=p, enable_gqa=gqa)
                        go = torch.randn_like(o)
                        t_bwd, _, _ = time_calls(torch, lambda: torch.autograd.grad(o, (q, k, v), go, retain_graph=True))
                    flops = 2.0 * heads * s * s * 256 * 0.5
                    rec.update(fwd_s=t_fwd, bwd_s=t_bwd, fwd_fraction_of_peak=flops / t_fwd / peak_bf16,
                               bwd_fraction_of_peak=2.5 * flops / t_bwd / peak_bf16)
                    log(f"variant {backend:<5} h{heads}/{kv_heads} p{p} s{s:<6} fwd {rec['fwd_fraction_of_peak']:.3f} bwd {rec['bwd_fraction_of_peak']:.3f}")
                except Exception as e:
                    rec["error"] = f"{type(e).__name__}: {str(e)[:200]}"
                    log(f"variant {rec} failed: {rec['error'][:100]}")
                out.append(rec)
                torch.cuda.empty_cache()
    return out


def kernel_only_times(torch, log):
    """GPU time of the kernels alone (CUPTI activity records through PyTorch's profiler) beside the
    back-to-back event timing, for calls short enough that the host's issue time may bind: the
    routed experts' GEMMs and short attention. Where the event time exceeds the kernels' sum, the
    GPU waited for the host."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.profiler import profile, ProfilerActivity
    variants = gemm_variants(torch)
    cases = []
    for model, tp, tokens, linear, n_out, k_in in model_linears():
        if "expert" not in model and not (model == "llama3-70b" and tp == 8):
            continue
        for gemm, (M, N, K) in (("fprop", (tokens, n_out, k_in)), ("dgrad", (tokens, k_in, n_out)), ("wgrad", (n_out, k_in, tokens))):
            for name in ("bf16", "fp8_tensorwise", "fp8_blockwise"):
                if name == "fp8_blockwise" and (N % 128 or K % 512):
                    continue
                cases.append((dict(kind="gemm", model=model, tp=tp, linear=linear, gemm=gemm, m=M, n=N, k=K, variant=name),
                              lambda make=variants[name], M=M, N=N, K=K: make(M, N, K)))
    for backend, be in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
        for heads in (8, 32):
            for s in (1024, 2048, 4096):
                def make(be=be, heads=heads, s=s):
                    q = torch.randn(1, s, heads, 128, device="cuda", dtype=torch.bfloat16).transpose(1, 2)
                    def f():
                        with sdpa_kernel(be):
                            torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)
                    return f
                cases.append((dict(kind="attention_fwd", backend=backend, heads=heads, seq=s, dqk=128, dv=128), make))
    out = []
    for meta, make in cases:
        try:
            fn = make()
            t_event, _, reps = time_calls(torch, fn, target_s=0.01)
            for _ in range(3):
                fn()
            torch.cuda.synchronize()
            calls = 20
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(calls):
                    fn()
                torch.cuda.synchronize()
            per_kernel = {}
            for e in prof.events():
                if e.device_type.name == "CUDA" and "Memset" not in e.name:
                    per_kernel.setdefault(e.name, []).append(e.time_range.elapsed_us() * 1e-6)
            kernel_s = sum(statistics.median(v) * len(v) for v in per_kernel.values()) / calls
            rec = dict(meta, event_s=t_event, kernel_s=kernel_s, kernels={k[:160]: statistics.median(v) for k, v in per_kernel.items()})
            out.append(rec)
            log(f"kernel-only {json.dumps(meta)[:110]:<110} event {t_event*1e6:8.1f} us  kernels {kernel_s*1e6:8.1f} us")
        except Exception as e:
            out.append(dict(meta, error=f"{type(e).__name__}: {str(e)[:200]}"))
        torch.cuda.empty_cache()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true", help="a few cases of each kind (a smoke test)")
    ap.add_argument("--sustained-seconds", type=float, default=20)
    ap.add_argument("--skip", default="", help="comma list of sections to skip: attention,gemm,sustained,names,kernel_only,variants")
    ap.add_argument("--budget-seconds", type=float, default=1e9,
                    help="start no further attention case after this many seconds (the rest are listed as not run)")
    args = ap.parse_args()
    skip = set(filter(None, args.skip.split(",")))

    import torch
    if not torch.cuda.is_available():
        sys.exit("measure_kernel_rates.py: no CUDA GPU available")
    props = torch.cuda.get_device_properties(0)
    # The dense bf16 peak of the part at its boost clock (the datasheet's 989.4 TFLOP/s for an H100/H200
    # SXM: 132 SMs x 4 tensor cores x 1024 bf16 FMA/clk x 2 x 1.83 GHz). Fractions below are of this.
    peak_bf16 = 989.4e12
    out_dir = os.path.dirname(os.path.abspath(args.out))
    os.makedirs(out_dir, exist_ok=True)
    result = {
        "schema_version": 1, "tool": "scripts/measure_kernel_rates.py", "command": " ".join(sys.argv),
        "measured_at": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "host": socket.gethostname(),
        "gpu": props.name, "sm_count": props.multi_processor_count, "memory_GiB": props.total_memory / 2**30,
        "torch_version": torch.__version__, "cuda_version": torch.version.cuda,
        "cudnn_version": torch.backends.cudnn.version(), "cublas_note": "cuBLASLt of the CUDA above",
        "peak_bf16_flops_assumed": peak_bf16,
        "method": "CUDA events around back-to-back calls after one queued call; median of 5 samples (2 for calls over 0.3 s); "
                  "random normal inputs; bf16 attention; fp8 e4m3 GEMM operands with bf16 output",
    }
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,power.limit,clocks.max.sm,clocks.max.mem",
                              "--format=csv,noheader"], capture_output=True, text=True, timeout=20).stdout.strip()
        result["nvidia_smi"] = smi
    except Exception as e:
        result["nvidia_smi"] = f"failed: {e}"
    print(result["gpu"], result["torch_version"], "cuda", result["cuda_version"], "cudnn", result["cudnn_version"], result["nvidia_smi"], flush=True)

    def save():
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)

    def log(msg):
        print(msg, flush=True)

    t0 = time.time()
    if "names" not in skip:
        try:
            result["kernel_names"] = kernel_names(torch)
        except Exception as e:
            result["kernel_names"] = {"failed": f"{type(e).__name__}: {str(e)[:300]}"}
        save()
    if "gemm" not in skip:
        result["gemms"], result["gemm_failures"] = measure_gemms(torch, args.quick, peak_bf16, log)
        save()
        log(f"[gemms done at {time.time() - t0:.0f} s]")
    if "sustained" not in skip:
        result["sustained"] = sustained(torch, args.sustained_seconds, out_dir, log)
        save()
    if "attention" not in skip:
        result["attention"], result["attention_failures"], result["attention_not_run"] = [], [], []
        for case in attention_cases(args.quick):
            if time.time() - t0 > args.budget_seconds:
                result["attention_not_run"].append(case)
                continue
            try:
                rec = measure_attention(torch, case, peak_bf16)
                result["attention"].append(rec)
                log(f"attn {case['backend']:<5} d{case['dqk']}/{case['dv']} h{case['heads']:<2} s{case['seq']:<6} "
                    f"{'causal' if case['causal'] else 'full  '} fwd {rec['fwd_s']*1e3:9.3f} ms {rec['fwd_fraction_of_peak']:.3f}  "
                    f"bwd {rec['bwd_s']*1e3:9.3f} ms {rec['bwd_fraction_of_peak']:.3f}")
            except Exception as e:
                result["attention_failures"].append(dict(case, error=f"{type(e).__name__}: {str(e)[:300]}"))
                log(f"attn {case} failed: {type(e).__name__}: {str(e)[:120]}")
            torch.cuda.empty_cache()
            save()
        log(f"[attention done at {time.time() - t0:.0f} s]")
    if "variants" not in skip:
        result["attention_variants"] = attention_variants(torch, peak_bf16, log)
        save()
    if "kernel_only" not in skip:
        result["kernel_only"] = kernel_only_times(torch, log)
        save()
    result["wall_seconds"] = time.time() - t0
    save()
    log(f"wrote {args.out} in {result['wall_seconds']:.0f} s")


if __name__ == "__main__":
    main()
