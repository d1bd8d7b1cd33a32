#!/usr/bin/env python3
"""Measure whole training iterations of a GPT-style model on one GPU, for comparing `strata predict`.

Trains a catalog model (models/<name>.json: embedding, learned positions, pre-norm decoder layers,
final norm, tied or untied logits, cross entropy) the way Megatron-LM's mixed-precision optimizer
does without data parallelism, in plain PyTorch:
  - bf16 parameters and activations, SDPA flash attention (causal), the model's dropout;
  - per micro-batch: forward, backward, then the bf16 weight gradients added into fp32 main
    gradients (Megatron without --gradient-accumulation-fusion);
  - per iteration: global-norm gradient clipping, fused AdamW on fp32 master weights, master weights
    copied back to bf16, main gradients zeroed.
Optionally full activation recompute (torch.utils.checkpoint per layer).

Records per configuration: iteration time (CUDA events around the whole iteration and host wall
clock, median of --iters after --warmup), the part spent in the optimizer phase, and peak memory
(allocated and reserved). Needs a CUDA GPU and PyTorch >= 2.3. Not run in CI.
"""
import argparse
import datetime as dt
import json
import os
import socket
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from measure_layer_step import build_layer, load_model  # noqa: E402


def build_model(torch, m, device, recompute):
    nn = torch.nn
    F = torch.nn.functional
    h, vocab = m["hidden_size"], m["vocab_size"]
    dropout = 0.1 if m.get("dropout") else 0.0

    class Gpt(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(vocab, h)
            self.wpe = nn.Embedding(m["max_seq_length"], h) if m.get("position_embedding", "learned") == "learned" else None
            self.layers = nn.ModuleList([build_layer(torch, m, 1, device, torch.bfloat16, "flash", dropout)
                                         for _ in range(m["num_layers"])])
            self.norm = nn.LayerNorm(h) if m.get("normalization", "layernorm") == "layernorm" else nn.RMSNorm(h)
            self.head = None if m.get("tied_embeddings", True) else nn.Linear(h, vocab, bias=False)

        def forward(self, tokens, targets):
            x = self.wte(tokens)
            if self.wpe is not None:
                x = x + self.wpe.weight[: tokens.shape[1]]
            if dropout:
                x = F.dropout(x, dropout)
            for layer in self.layers:
                if recompute:
                    x = torch.utils.checkpoint.checkpoint(layer, x, use_reentrant=False)
                else:
                    x = layer(x)
            x = self.norm(x)
            logits = x @ (self.wte.weight if self.head is None else self.head.weight).t()
            # Cross entropy in fp32, as Megatron's vocab-parallel cross entropy computes it.
            return F.cross_entropy(logits.float().view(-1, vocab), targets.reshape(-1))

    with torch.device(device):
        model = Gpt()
    return model.to(device=device, dtype=torch.bfloat16)


def measure(torch, args, name, mbs, gbs, recompute):
    dev = torch.device("cuda")
    m = load_model(name)
    seq = args.seq or m["max_seq_length"]
    micro_batches = gbs // mbs
    model = build_model(torch, m, dev, recompute)
    params = [p for p in model.parameters() if p.requires_grad]
    n_params = sum(p.numel() for p in params)
    master = [p.detach().float().clone().requires_grad_(True) for p in params]
    main_grads = [torch.zeros_like(p) for p in master]
    for p, g in zip(master, main_grads):
        p.grad = g
    opt = torch.optim.AdamW(master, lr=1e-5, weight_decay=0.1, fused=True)
    tokens = torch.randint(0, m["vocab_size"], (micro_batches, mbs, seq + 1), device=dev)

    def iteration(events=None):
        for i in range(micro_batches):
            loss = model(tokens[i, :, :-1], tokens[i, :, 1:])
            loss.backward()
            torch._foreach_add_(main_grads, [p.grad for p in params])
            for p in params:
                p.grad = None
        if events:
            events[0].record()
        torch.nn.utils.clip_grad_norm_(master, 1.0, foreach=True)
        opt.step()
        with torch.no_grad():
            torch._foreach_copy_(params, master)
        torch._foreach_zero_(main_grads)

    for _ in range(args.warmup):
        iteration()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    gpu_times, wall_times, opt_times = [], [], []
    for _ in range(args.iters):
        start, mid, end = (torch.cuda.Event(enable_timing=True) for _ in range(3))
        t0 = time.perf_counter()
        start.record()
        iteration([mid])
        end.record()
        torch.cuda.synchronize()
        wall_times.append(time.perf_counter() - t0)
        gpu_times.append(start.elapsed_time(end) / 1e3)
        opt_times.append(mid.elapsed_time(end) / 1e3)
    rec = {"model": name, "gpus": 1, "seq": seq, "micro_batch": mbs, "global_batch": gbs, "micro_batches": micro_batches,
           "recompute": "full" if recompute else "none", "precision": "bf16", "parameters": n_params,
           "iteration_time_s": statistics.median(wall_times), "gpu_iteration_time_s": statistics.median(gpu_times),
           "optimizer_phase_s": statistics.median(opt_times), "iteration_times_s": wall_times,
           "peak_memory_allocated_GiB": torch.cuda.max_memory_allocated() / 2**30,
           "peak_memory_reserved_GiB": torch.cuda.max_memory_reserved() / 2**30}
    rec["tokens_per_sec"] = gbs * seq / rec["iteration_time_s"]
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", default="gpt3-1.3b:4:32,gpt3-2.7b:2:32",
                    help="comma-separated model:micro_batch:global_batch[:full] (full = full activation recompute)")
    ap.add_argument("--seq", type=int, default=0, help="sequence length (default: the model's max_seq_length)")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    import torch
    if not torch.cuda.is_available():
        sys.exit("measure_train_step.py: no CUDA GPU available")
    props = torch.cuda.get_device_properties(0)
    out = {"schema_version": 1, "gpu": props.name,
           "measured_at": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "host": socket.gethostname(), "torch_version": torch.__version__, "cuda_version": torch.version.cuda,
           "method": "whole training iterations on one GPU, eager PyTorch, Megatron-style mixed precision (bf16 params, "
                     "fp32 main grads added per micro-batch, fused AdamW on fp32 master weights, grad clipping), "
                     f"SDPA flash; median of {args.iters} after {args.warmup} warmup",
           "measurements": []}
    for spec in args.runs.split(","):
        parts = spec.split(":")
        name, mbs, gbs = parts[0], int(parts[1]), int(parts[2])
        recompute = len(parts) > 3 and parts[3] == "full"
        torch.cuda.empty_cache()
        try:
            rec = measure(torch, args, name, mbs, gbs, recompute)
        except torch.cuda.OutOfMemoryError:
            print(f"{spec}: out of memory, skipped", file=sys.stderr)
            continue
        out["measurements"].append(rec)
        print(f"{spec:<24} iter {rec['iteration_time_s']:.3f} s (gpu {rec['gpu_iteration_time_s']:.3f}, optimizer "
              f"{rec['optimizer_phase_s']*1e3:.1f} ms)  {rec['tokens_per_sec']:.0f} tok/s  "
              f"peak {rec['peak_memory_allocated_GiB']:.1f} GiB allocated, {rec['peak_memory_reserved_GiB']:.1f} reserved", flush=True)
    with open(args.out, "w") as f:
        json.dump(out, f, indent=2)
    print(f"wrote {args.out} ({len(out['measurements'])} configurations)")


if __name__ == "__main__":
    main()
