#!/usr/bin/env python3
"""Megatron-LM conformance of one launch strata writes.

Runs `strata ARGS -o plan.json`, then asks Megatron-LM itself (the pinned snapshot behind
../shared/megatron-check/check.py) whether the plan's launch starts, and compares what Megatron
derives from the flags with what strata planned and predicted: data-parallel size, virtual
pipeline size, micro-batches, decoder layers of every (stage, chunk), recompute per chunk, the
model's shape (layers, hidden, heads, groups, kv_channels, ffn, vocabulary, biases, normalization,
rotary base, MoE and MLA settings) and the parallel and runtime settings.

A plan strata calls infeasible, or one for a runtime Megatron-LM does not run, must carry no
launch and say why (`launch.refused`); the case line says which outcome it expects.

Usage: conformance.py --strata BIN --check CHECK_PY [--expect launch|refused] -- STRATA_ARGS...
Exit 0: conforms; 1: a mismatch or a refusal (printed); 77: the checker is not available (skip).
"""
import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

SKIP = 77


def load_checker(path):
    if not os.path.isfile(path):
        print(f"skip: {path} not found (the shared folder is not beside the checkout)")
        sys.exit(SKIP)
    for mod in ("packaging", "typing_extensions"):
        if importlib.util.find_spec(mod) is None:
            print(f"FAIL: python module {mod} is missing: scripts/setup.sh installs "
                  "python3-packaging and python3-typing-extensions")
            sys.exit(1)
    spec = importlib.util.spec_from_file_location("megatron_check", path)
    check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(check)
    return check


def megatron_view(check, flags, world, arch, env):
    """check.py's verdict plus the parsed args and TransformerConfig Megatron built."""
    import typing
    typing.override = getattr(typing, "override", lambda f: f)  # as check.check does (Python < 3.12)
    sys.meta_path.insert(0, check._StubFinder())
    sys.path.insert(0, check.MEGATRON)
    # check.py stands numpy in with an inert module whose prod() is no number, so Megatron's
    # `context_parallel_size == prod(hierarchical_context_parallel_sizes)` (arguments.py, the
    # a2a+p2p launches) could never hold there; the stand-in gets the real product.
    import math
    import numpy as stub_numpy  # the checker's stand-in, not the real package
    stub_numpy.prod = math.prod
    from megatron.training import arguments as A
    captured = {}
    build_config = A.core_transformer_config_from_args

    def capture(args, *a, **k):
        captured["args"] = args
        captured["config"] = build_config(args, *a, **k)
        return captured["config"]

    A.core_transformer_config_from_args = capture
    # TransformerConfig asks for a CUDA device and the flash_mla / cuDNN DSA packages when a fused
    # DSA kernel backend is named (_validate_dsa_kernel_backend_dependencies): a check the
    # checker's stand-ins cannot pass on any machine without a GPU. The backend's name is still
    # checked, by the same function given "none" for a valid name.
    from megatron.core import utils as U
    from megatron.core.transformer import transformer_config as TC
    validate_dsa_backend = U._validate_dsa_kernel_backend_dependencies
    TC._validate_dsa_kernel_backend_dependencies = (
        lambda backend: validate_dsa_backend("none" if backend in U._VALID_DSA_KERNEL_BACKENDS else backend))
    verdict = check.check(flags, world, arch, env)
    return verdict, captured.get("args"), captured.get("config")


def dtype_name(dtype):
    """strata's name of a dtype Megatron's validate_args mapped (fp8 state is torch.uint8)."""
    text = str(dtype).removeprefix("torch.")
    text = text.removesuffix("'>").rsplit(".", 1)[-1]  # the checker's stand-in torch: "<class 'abc.bfloat16'>"
    return {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16", "uint8": "fp8"}.get(text, text)


def hybrid_segments(args):
    """A hybrid model's layer symbols per pipe-delimited segment of --hybrid-layer-pattern (the MTP
    part after '/' left out), as Megatron-Core's select_pipeline_segment splits them."""
    return args.hybrid_layer_pattern.split("/")[0].split("|")


def megatron_layers(config, pp, vpp, args=None):
    """Decoder layers Megatron-Core builds on each (pipeline rank, virtual stage)."""
    if args is not None and args.hybrid_layer_pattern:
        # Segment v * pp + r is chunk v of pipeline rank r (hybrid_layer_allocation.py).
        segments = hybrid_segments(args)
        if len(segments) == 1:
            n = len(segments[0])
            return [[n // pp] for _ in range(pp)]
        chunks = len(segments) // pp
        return [[len(segments[v * pp + r]) for v in range(chunks)] for r in range(pp)]
    from megatron.core.transformer.enums import LayerType
    from megatron.core.transformer.transformer_block import get_num_layers_to_build
    chunks = vpp or 1
    layout = config.pipeline_model_parallel_layout
    out = []
    for rank in range(pp):
        row = []
        for v in range(chunks):
            if layout is not None:
                row.append(layout.layout[rank][v].count(LayerType.decoder))
            else:
                row.append(get_num_layers_to_build(config, vp_stage=v if vpp else None, pp_rank=rank))
        out.append(row)
    return out


def activation_is_squared_relu(config):
    """Whether Megatron built the MLP with its squared ReLU (--squared-relu). The function object
    itself is compared: the checker's stubbed torch hides the names of compiled functions."""
    from megatron.core import activations
    return config.activation_func is activations.squared_relu


def activation_is_quick_gelu(config):
    """Whether Megatron built GPT-OSS's gated unit around quick_gelu (--quick-geglu)."""
    from megatron.core.fusions.fused_bias_geglu import quick_gelu
    return config.activation_func is quick_gelu


def rope_scaling_problems(model, args, config, same):
    """The rotary scaling Megatron builds against the model's rope_scaling: Llama 3's (args), YaRN in
    MLA (MLATransformerConfig's own fields) or YaRN for standard attention (config.yarn_*)."""
    kind = model.get("rope_scaling")
    p = model.get("rope_scaling_parameters") or {}
    same("llama3 rope scaling", kind == "llama3", bool(args.use_rope_scaling))
    if kind == "llama3":
        same("llama3 rope scaling factor", p["factor"], args.rope_scaling_factor)
    if model.get("mla"):
        # MLA builds YaRN unless --rope-type rope; factor 1 with the default mscale pair is no scaling.
        derived = (config.rotary_scaling_factor, config.mscale, config.mscale_all_dim, config.original_max_position_embeddings,
                   config.beta_fast, config.beta_slow) if config.rope_type == "yarn" else None
        planned = (p["factor"], p["mscale"], p["mscale_all_dim"], p["original_max_position_embeddings"], p["beta_fast"],
                   p["beta_slow"]) if kind == "yarn" else (1.0, 1.0, 0.0, 4096, 32, 1)
        same("MLA YaRN (factor, mscale, mscale_all_dim, original positions, beta_fast, beta_slow)", planned, derived)
    elif kind == "yarn" or args.position_embedding_type == "yarn":
        derived = tuple(getattr(config, "yarn_" + k, None) for k in (
            "rotary_scaling_factor", "mscale", "mscale_all_dim", "original_max_position_embeddings", "beta_fast", "beta_slow",
            "correction_range_round_to_int"))
        planned = (p.get("factor"), p.get("mscale"), p.get("mscale_all_dim"), p.get("original_max_position_embeddings"),
                   p.get("beta_fast"), p.get("beta_slow"), p.get("truncate"))
        same("YaRN (factor, mscale, mscale_all_dim, original positions, beta_fast, beta_slow, rounded range)", planned, derived)


def recompute_per_chunk(args, chunk_layers):
    """Layers Megatron recomputes in a chunk holding `chunk_layers` layers (full granularity)."""
    if args.recompute_granularity != "full":
        return 0
    if args.recompute_method == "uniform":
        return chunk_layers
    return min(args.recompute_num_layers, chunk_layers)  # block: the first N layers of each chunk


def launched_graphs(plan):
    """The CUDA graph modules a launch of the plan names: whole-layer graphs (no module named) stop
    at a dropless MoE layer's wait for its token counts, so over such layers the launch names the
    parts the cost model counts as captured: attn, moe_router, moe_preprocess, and the dense MLPs
    and Mamba mixers of the other layers (megatron_args.cpp launched_cuda_graph_modules)."""
    rt, model = plan["runtime"], plan["model"]
    graphs, moe = rt.get("cuda_graph_modules"), model.get("moe")
    if (graphs != [] or not moe or rt.get("framework", "megatron") != "megatron" or rt.get("moe_pad_to_capacity")
            or rt.get("moe_rank_capacity_factor", 0) > 0 or "E" not in (model.get("hybrid_pattern") or "E")):
        return graphs
    hybrid = model.get("hybrid_pattern")
    named = ["attn", "moe_preprocess", "moe_router"]
    if ("-" in hybrid) if hybrid else (0 in (moe.get("layer_pattern") or [])):
        named.append("mlp")
    if model.get("mamba"):
        named.append("mamba")
    return sorted(named)


def compare(plan, args, config, verdict, written_by_strata=True):
    problems = []

    def same(what, planned, derived):
        if planned != derived:
            problems.append(f"{what}: strata planned {planned!r}, Megatron derives {derived!r}")

    par, model, train = plan["parallel"], plan["model"], plan["training"]
    d = verdict["derived"]
    same("dp", par["dp"], d["dp"])
    # Copies of the sharded state: distributed-optimizer instances or Megatron-FSDP's replica groups
    # (HSDP), and whether those split the optimizer state too.
    same("sharded-state copies", par.get("distributed_optimizer_instances", 1), args.num_distributed_optimizer_instances)
    same("outer data-parallel sharding", par.get("outer_dp_sharding_strategy", "no_shard"), args.outer_dp_sharding_strategy)
    same("vpp", par["vpp"], d["vpp"] or 1)
    micro_batches = train["global_batch_size"] // (par["micro_batch_size"] * par["dp"])
    same("micro-batches", micro_batches, d["num_microbatches"])
    if (d["vpp"] or 1) > 1:
        # The micro-batch group of the interleaved schedule (ModelParallelConfig.__post_init__: pp
        # unless given), and the two checks forward_backward_pipelining_with_interleaving
        # (schedules.py) makes at the first step, which check.py does not reach.
        group = config.microbatch_group_size_per_vp_stage
        same("micro-batch group per virtual stage",
             par.get("microbatch_group_size_per_vp_stage", par["pp"]), group)
        if group > micro_batches or group < par["pp"]:
            problems.append(f"Megatron's schedule refuses a micro-batch group of {group}: outside "
                            f"[PP={par['pp']}, M={micro_batches}]")
        elif 0 < micro_batches % group < par["pp"]:
            problems.append(f"Megatron's schedule refuses the last micro-batch group of "
                            f"{micro_batches % group} (< pp {par['pp']})")
    same("tp", par["tp"], args.tensor_model_parallel_size)
    same("pp", par["pp"], args.pipeline_model_parallel_size)
    same("cp", par["cp"], args.context_parallel_size)
    same("ep", par.get("ep", 1), args.expert_model_parallel_size)
    if "etp" in par and model.get("moe"):
        same("etp", par["etp"], args.expert_tensor_parallel_size)
    same("sequence parallel", bool(par["sequence_parallel"] and par["tp"] > 1), bool(args.sequence_parallel))
    zero = par.get("zero_stage", 0)
    # Sharded optimizer state: the distributed optimizer, or the layer-wise one Megatron runs for
    # Muon in its place (validate_args turns use_distributed_optimizer off for it); strata costs
    # PyTorch FSDP2 as Megatron-FSDP's ZeRO-2/3 (said in a launch note).
    layer_wise = bool(getattr(args, "use_layer_wise_distributed_optimizer", False))
    fsdp2 = bool(getattr(args, "use_torch_fsdp2", False))
    same("distributed optimizer", bool(par["distributed_optimizer"] or zero >= 1),
         bool(args.use_distributed_optimizer or layer_wise or fsdp2))
    same("Megatron-FSDP (ZeRO-2/3)", zero >= 2, bool(args.use_megatron_fsdp or fsdp2))
    same("distributed optimizer instances", par.get("distributed_optimizer_instances", 1), args.num_distributed_optimizer_instances)
    if zero >= 2:
        same("FSDP sharding", {2: "optim_grads", 3: "optim_grads_params"}[zero], args.data_parallel_sharding_strategy)
    same("micro-batch size", par["micro_batch_size"], args.micro_batch_size)
    same("global batch", train["global_batch_size"], args.global_batch_size)
    same("sequence length", train["seq_length"], args.seq_length)
    precision = train["precision"]
    same("bf16", precision in ("bf16",) or precision.startswith("fp8") or precision.startswith("fp4")
         or precision in ("mxfp8", "nvfp4"), bool(args.bf16))
    same("fp16", precision == "fp16", bool(args.fp16))
    recipe = train.get("fp8_recipe")
    same("fp8", precision == "fp8" and recipe != "nvfp4", args.fp8 is not None)
    same("fp4 (NVFP4)", precision == "fp8" and recipe == "nvfp4", args.fp4 is not None)
    if precision == "fp8" and recipe != "nvfp4":
        same("fp8 recipe", recipe or "delayed", args.fp8_recipe)
    rt = plan["runtime"]
    same("fp8 parameters", bool(rt.get("fp8_param_gather")), bool(args.fp8_param_gather or getattr(args, "fp4_param_gather", False)))
    if precision not in ("fp32", "tf32"):
        # 16-bit gradients: Megatron reduces in fp32 exactly when accumulate_allreduce_grads_in_fp32
        # holds after validate_args (forced for bf16 unless --grad-reduce-in-bf16; a flag for fp16).
        same("16-bit gradient reduction", bool(rt.get("grad_reduce_in_bf16")), not args.accumulate_allreduce_grads_in_fp32)
    # The optimizer and its state: which optimizer, the precision-aware optimizer's dtypes (Megatron
    # maps their names to torch dtypes in validate_args; the stand-in torch keeps them as names), CPU offload.
    same("optimizer", train.get("optimizer", "adam"), args.optimizer)
    state = train.get("optimizer_state", {})
    same("precision-aware optimizer", bool(state.get("precision_aware")), bool(args.use_precision_aware_optimizer))
    for key, arg in (("main_params_dtype", "main_params_dtype"), ("exp_avg_dtype", "exp_avg_dtype"),
                     ("exp_avg_sq_dtype", "exp_avg_sq_dtype")):
        same(key, state.get(key, "fp32"), dtype_name(getattr(args, arg)))
    offload = state.get("cpu_offload_fraction", 0)
    same("optimizer CPU offload fraction", offload, args.optimizer_offload_fraction if args.optimizer_cpu_offload else 0)
    # Layers a low-precision run keeps in bf16 (fp8_utils.is_first_last_bf16_layer reads the config).
    # Only a low-precision run has layers to keep in bf16: a bf16 run's are all bf16 anyway.
    first_last = bool(getattr(config, "first_last_layers_bf16", False)) and precision == "fp8"
    same("bf16 layers at the start", rt.get("bf16_first_layers", 0), config.num_layers_at_start_in_bf16 if first_last else 0)
    same("bf16 layers at the end", rt.get("bf16_last_layers", 0), config.num_layers_at_end_in_bf16 if first_last else 0)
    if par["cp"] > 1:
        cp_type = args.cp_comm_type if isinstance(args.cp_comm_type, str) else args.cp_comm_type[0]
        same("context-parallel communication", rt.get("cp_comm_type", "p2p"), cp_type)
        if cp_type == "a2a+p2p":
            # The all-to-all group, then the ring: Megatron's hierarchical CP groups.
            a2a = rt.get("cp_a2a_size")
            same("hierarchical CP sizes", [a2a, par["cp"] // a2a] if a2a else None,
                 list(args.hierarchical_context_parallel_sizes or []) or None)
    # CUDA graphs (their modules set the layers' host time): the whole step, the whole layer (no
    # module named) or the named modules, as TransformerConfig holds them after its checks.
    # A launch strata writes names what it captures; a launch read (written_by_strata False) is
    # compared as strata read it.
    graphs = launched_graphs(plan) if written_by_strata else rt.get("cuda_graph_modules")
    impl = getattr(config, "cuda_graph_impl", "none")
    derived_graphs = (None if impl == "none" else ["full_iteration"] if impl == "full_iteration"
                      else sorted(m.name for m in config.cuda_graph_modules))
    same("CUDA graph modules", None if graphs is None else sorted(graphs), derived_graphs)
    if model.get("moe"):
        # The dispatcher the cost model timed: all-to-all, or DeepEP's per-node deduplication.
        dedup = bool(rt.get("moe_token_dedup"))
        dispatcher = "flex" if dedup else "allgather" if rt.get("moe_allgather_dispatch") else "alltoall"
        same("MoE token dispatcher", dispatcher, args.moe_token_dispatcher_type)
        if dedup:  # DeepEP and HybridEP both send a token once per destination node
            same("MoE flex dispatcher backend", "deepep or hybridep",
                 "deepep or hybridep" if args.moe_flex_dispatcher_backend in ("deepep", "hybridep") else args.moe_flex_dispatcher_backend)
        same("MoE all-to-all overlap (combined 1F1B)", bool(rt.get("moe_a2a_overlap")) and par.get("ep", 1) > 1,
             bool(args.overlap_moe_expert_parallel_comm))

    # Layers of each (stage, chunk) and what each chunk recomputes.
    chunks = plan.get("stage_chunks") or [[s] for s in plan["stages"]]
    derived_chunks = megatron_layers(config, par["pp"], d["vpp"], args)
    same("decoder layers per stage and chunk", chunks, derived_chunks)
    rc = plan["recompute"]
    if rc["granularity"] == "full":
        # strata counts recomputed layers per stage; Megatron per model chunk: compare per stage.
        n = rc.get("num_layers")
        planned = [s if n is None else min(n, s) for s in plan["stages"]]
        derived = [sum(recompute_per_chunk(args, c) for c in row) for row in derived_chunks]
        same("layers recomputed per stage", planned, derived)
    same("recompute granularity", None if rc["granularity"] == "none" else rc["granularity"],
         args.recompute_granularity)

    # The model's shape.
    same("layers", model["num_layers"], config.num_layers)
    same("hidden", model["hidden_size"], config.hidden_size)
    same("attention heads", model["num_attention_heads"], config.num_attention_heads)
    same("query groups", model["num_query_groups"], config.num_query_groups or config.num_attention_heads)
    kv = model.get("head_dim") or model["hidden_size"] // model["num_attention_heads"]
    if not model.get("mla"):
        same("kv_channels", kv, config.kv_channels)
    same("ffn hidden", model["ffn_hidden_size"], config.ffn_hidden_size)
    same("vocabulary", model["vocab_size"], args.vocab_size)
    same("gated linear unit", model["activation"] in ("swiglu", "quick_geglu"), bool(config.gated_linear_unit))
    same("quick GeGLU (GPT-OSS)", model["activation"] == "quick_geglu", activation_is_quick_gelu(config))
    same("GLU linear offset", model.get("glu_linear_offset", 0.0), config.glu_linear_offset)
    same("activation clamp", model.get("activation_clamp"), config.activation_func_clamp_value)
    same("attention softmax", "learnable" if model.get("attention_sinks") else "vanilla", config.softmax_type)
    same("qk L2 norm", bool(model.get("qk_l2_norm")), bool(config.qk_l2_norm))
    same("squared ReLU", model["activation"] == "squared_relu", activation_is_squared_relu(config))
    same("normalization", {"layernorm": "LayerNorm", "rmsnorm": "RMSNorm"}[model["normalization"]],
         config.normalization)
    if "add_linear_bias" in model:
        same("linear biases", model["add_linear_bias"], bool(config.add_bias_linear))
    if "add_qkv_bias" in model:
        same("qkv bias", model["add_qkv_bias"] or model.get("add_linear_bias", False), bool(config.add_qkv_bias))
    same("tied embeddings", model["tied_embeddings"], not args.untie_embeddings_and_output_weights)
    pos = {"learned": "learned_absolute", "rope": "rope", "none": "none"}.get(model["position_embedding"])
    if pos == "rope" and model.get("rope_scaling") == "yarn" and not model.get("mla"):
        pos = "yarn"
    same("position embedding", pos, args.position_embedding_type)
    if model["position_embedding"] == "rope" and "rotary_base" in model:
        same("rotary base", model["rotary_base"], args.rotary_base)
        same("rotary percent", model.get("rotary_percent", 1.0), args.rotary_percent)
        rope_scaling_problems(model, args, config, same)
        # TransformerConfig turns an integer --no-rope-freq into the per-layer list (1 = no RoPE).
        same("layers without rope", model.get("no_rope_layers") or None,
             list(config.no_rope_freq) if config.no_rope_freq else None)
    window = model.get("sliding_window")
    # Hugging Face's window counts the query; Megatron's left size does not (gpt_oss_bridge.py: W - 1).
    same("sliding window", (window - 1, 0) if window else None,
         tuple(config.window_size) if config.window_size is not None else None)
    if window and model.get("sliding_window_pattern"):
        freq = config.window_attn_skip_freq
        same("sliding-window layers", model["sliding_window_pattern"], list(freq) if not isinstance(freq, int) else freq)
    if "norm_epsilon" in model:
        same("norm epsilon", model["norm_epsilon"], config.layernorm_epsilon)
    if "qk_layernorm" in model:
        same("qk layernorm", model["qk_layernorm"], bool(config.qk_layernorm))
    same("zero-centred norm gains (--apply-layernorm-1p)", bool(model.get("zero_centered_gamma", False)),
         bool(config.layernorm_zero_centered_gamma))
    moe = model.get("moe")
    if moe:
        same("experts", moe["num_experts"], config.num_moe_experts)
        same("router top-k", moe["top_k"], config.moe_router_topk)
        same("expert ffn", moe["expert_ffn_hidden_size"], config.moe_ffn_hidden_size)
        same("shared expert ffn", moe.get("shared_expert_ffn_hidden_size") or None,
             config.moe_shared_expert_intermediate_size)
        same("shared expert gate", bool(moe.get("shared_expert_gate", False)), bool(config.moe_shared_expert_gate))
        same("MoE latent size", moe.get("latent_size"), config.moe_latent_size)
        if not model.get("hybrid_pattern"):  # a hybrid model places its MoE layers by its pattern (below)
            pattern = moe.get("layer_pattern") or [1] * model["num_layers"]
            freq = config.moe_layer_freq
            derived_pattern = ([1 if i % freq == 0 else 0 for i in range(model["num_layers"])]
                               if isinstance(freq, int) else list(freq))
            same("MoE layer pattern", pattern, derived_pattern)
        same("Sinkhorn routing", bool(moe.get("sinkhorn")), config.moe_router_load_balancing_type == "sinkhorn")
        if not moe.get("sinkhorn"):  # Sinkhorn routing bypasses the score function, groups, bias, pre-softmax (router.py)
            same("router score function", moe.get("router_score_function", "softmax"), config.moe_router_score_function)
            sigmoid = moe.get("router_score_function") == "sigmoid"
            same("router expert bias", bool(moe.get("router_bias")) and sigmoid, bool(config.moe_router_enable_expert_bias))
            # One group holding every expert restricts nothing: the same routing as no groups.
            same("router groups", (moe["num_groups"], moe["group_topk"]) if moe.get("num_groups") else None,
                 (config.moe_router_num_groups, config.moe_router_group_topk) if (config.moe_router_num_groups or 0) > 1 else None)
            same("router top-k scaling factor", moe.get("topk_scaling_factor"), config.moe_router_topk_scaling_factor)
            if not sigmoid:  # pre-softmax orders the softmax; a sigmoid router ignores it (moe_utils.py)
                same("router softmax before top-k", not moe.get("normalize_top_k", True), bool(config.moe_router_pre_softmax))
        if "etp" in par:
            same("expert-data-parallel size", par["tp"] * par["dp"] * par["cp"] // (par["ep"] * par["etp"]),
                 world_size(plan) // (par["pp"] * par["ep"] * par["etp"]))
    else:
        same("experts", None, config.num_moe_experts)
    # A hybrid model: its layers' symbols (the pipes only split them), its MTP modules' layers and the
    # Mamba mixer's shape.
    same("hybrid layer pattern", model.get("hybrid_pattern"),
         "".join(hybrid_segments(args)) if args.hybrid_layer_pattern else None)
    same("MTP modules", model.get("mtp_layers", 0), args.mtp_num_layers or 0)
    if args.hybrid_layer_pattern:
        mtp_parts = args.hybrid_layer_pattern.split("/")[1:]
        same("hybrid MTP pattern", model.get("hybrid_mtp_pattern"), mtp_parts[0] if mtp_parts else None)
    gdn = model.get("gdn")
    if gdn:
        same("gated DeltaNet shape (key heads, value heads, key dim, value dim, conv)",
             (gdn["num_key_heads"], gdn["num_value_heads"], gdn["key_head_dim"], gdn["value_head_dim"], gdn["conv_kernel"]),
             (config.linear_num_key_heads, config.linear_num_value_heads, config.linear_key_head_dim,
              config.linear_value_head_dim, config.linear_conv_kernel_dim))
    same("attention output gate", bool(model.get("attention_output_gate")), bool(config.attention_output_gate))
    mamba = model.get("mamba")
    if mamba and "M" in (model.get("hybrid_pattern") or ""):  # the shape only matters where Mamba layers run
        # Without --mamba-num-heads the mixer takes d_inner / head dim heads, d_inner = 2h
        # (MambaMixer's expand=2, megatron/core/ssm/mamba_mixer.py).
        heads = config.mamba_num_heads or 2 * config.hidden_size // config.mamba_head_dim
        same("Mamba shape (heads, head dim, state, groups)",
             (mamba["num_heads"], mamba["head_dim"], mamba["state_dim"], mamba["num_groups"]),
             (heads, config.mamba_head_dim, config.mamba_state_dim, config.mamba_num_groups))
    mla = model.get("mla")
    same("multi-latent attention", bool(mla), bool(config.multi_latent_attention))
    if mla:
        same("q lora rank", mla.get("q_lora_rank") or None, config.q_lora_rank)
        same("kv lora rank", mla["kv_lora_rank"], config.kv_lora_rank)
        same("qk head dim", mla["qk_nope_head_dim"], config.qk_head_dim)
        same("qk pos-emb head dim", mla["qk_rope_head_dim"], config.qk_pos_emb_head_dim)
        same("v head dim", mla["v_head_dim"], config.v_head_dim)
    dsa = model.get("dsa")
    same("attention variant", "dsa" if dsa else None, config.experimental_attention_variant)
    if dsa:
        same("DSA indexer heads", dsa["index_heads"], config.dsa_indexer_n_heads)
        same("DSA indexer head dim", dsa["index_head_dim"], config.dsa_indexer_head_dim)
        same("DSA top-k", dsa["index_topk"], config.dsa_indexer_topk)
        same("DSA top-k frequency", dsa["topk_freq"], config.dsa_indexer_topk_freq)
        same("DSA top-k offset", dsa["skip_topk_offset"], config.dsa_indexer_skip_topk_offset)
        same("DSA indexer rope interleaved", dsa["rope_interleaved"], config.dsa_indexer_rope_interleaved)
        same("DSA indexer rotation", dsa["rotate_activation"], config.dsa_indexer_rotate_activation)
        same("DSA indexer loss coefficient", dsa["indexer_loss_coeff"], config.dsa_indexer_loss_coeff or 0.0)
        same("DSA sparse indexer loss", dsa["sparse_indexer_loss"], config.dsa_indexer_use_sparse_loss)
        same("DSA fused kernels", True, config.dsa_kernel_backend in ("cudnn", "tilelang"))
    return problems


def world_size(plan):
    return plan["num_gpus"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strata", required=True)
    ap.add_argument("--check", required=True)
    ap.add_argument("--expect", choices=("launch", "refused"), default="launch")
    ap.add_argument("strata_args", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    strata_args = a.strata_args[1:] if a.strata_args[:1] == ["--"] else a.strata_args
    check = load_checker(a.check)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "plan.json")
        # plan: no progress line; its runnable launch.sh too, read back below instead of the flags.
        extra = ["--quiet", "--emit-launch", os.path.join(tmp, "launch")] if strata_args[:1] == ["plan"] else []
        if a.expect == "refused":
            extra = extra[:1]
        run = subprocess.run([a.strata, *strata_args, *extra, "-o", out], capture_output=True, text=True,
                             timeout=120)
        if run.returncode not in (0, 2) or not os.path.isfile(out):
            print(f"FAIL: strata exited {run.returncode}:\n{run.stdout[-2000:]}{run.stderr[-2000:]}")
            return 1
        with open(out) as f:
            plan = json.load(f)
        script = os.path.join(tmp, "launch", "launch.sh")
        if extra and a.expect == "launch":
            syntax = subprocess.run(["bash", "-n", script], capture_output=True, text=True)
            if syntax.returncode != 0:
                print(f"FAIL: {script} is not a valid bash script: {syntax.stderr}")
                return 1
        return judge(a, check, plan, script if extra else None)


def compute_capability(check, gpu):
    """The GPU's compute capability major, from the architecture strata's GPU file names; check.py's
    arch_of guesses it from the name, where an "80GB" reads as a GB200's "gb" (H100-SXM5-80GB as 10,
    so its launches would be judged as Blackwell's, which need no CUDA_DEVICE_MAX_CONNECTIONS)."""
    by_architecture = {"ampere": 8, "ada": 8, "hopper": 9, "blackwell": 10}
    return by_architecture.get(gpu.get("architecture"), check.arch_of(gpu.get("name")))


def judge(a, check, plan, script):
    launch = plan.get("launch") or {}
    if a.expect == "refused":
        if "megatron_args" in launch or not launch.get("refused"):
            print(f"FAIL: expected no launch and a reason, got launch {json.dumps(launch)[:800]}")
            return 1
        print(f"ok: no launch written: {launch['refused']}")
        return 0
    if "megatron_args" not in launch:
        print(f"FAIL: no launch written: {launch.get('refused')}")
        return 1
    flags = [str(x) for x in launch["megatron_args"]]
    world = plan["num_gpus"]
    arch = compute_capability(check, plan["gpu"])
    verdict, args, config = megatron_view(check, flags, world, arch, launch.get("env") or {})
    if not verdict["valid"]:
        print(f"FAIL: Megatron-LM refuses the launch at {verdict['stage']}: {verdict['error']} "
              f"({verdict['at']})\nflags: {' '.join(flags)}\nenv: {launch.get('env')}")
        return 1
    problems = compare(plan, args, config, verdict)
    if problems:
        print("FAIL: Megatron-LM would train another job than strata predicted:\n  " + "\n  ".join(problems)
              + f"\nflags: {' '.join(flags)}")
        return 1
    # A launch note names a model detail the flags cannot carry (e.g. GPT-OSS's router bias):
    # the read-back job differs by that detail alone, so its prediction may differ in the 6th digit.
    tolerance = 1e-5 if launch.get("notes") else 1e-9
    problems = round_trip(a.strata, plan, flags, script, tolerance)
    if problems:
        print("FAIL: the launch read back with --megatron-args predicts another job:\n  " + "\n  ".join(problems)
              + f"\nflags: {' '.join(flags)}")
        return 1
    print(f"ok: Megatron-LM accepts the launch and derives the planned job (world {world}, arch {arch}); "
          "read back with --megatron-args it predicts the same")
    return 0


def round_trip(strata, plan, flags, script, tolerance):
    """The launch (its launch.sh when given, else its flags) read back by `strata predict
    --megatron-args` on the plan's cluster."""
    with tempfile.TemporaryDirectory() as tmp:
        flags_file, cluster_file, out = (os.path.join(tmp, n) for n in ("launch.txt", "cluster.json", "rt.json"))
        with open(flags_file, "w") as f:
            f.write("pretrain_gpt.py " + " ".join(f"'{x}'" for x in flags) + "\n")
        if script:
            flags_file = script
        with open(cluster_file, "w") as f:
            json.dump(plan["cluster"], f)
        rt = plan["runtime"]
        cmd = [strata, "predict", "--megatron-args", flags_file, "--cluster", cluster_file, "--gpus", str(plan["num_gpus"]),
               "--memory-reserve", str(rt["memory_reserve_GiB"]), "--step-overhead", str(rt["step_overhead_s"]), "-o", out]
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if run.returncode not in (0, 2) or not os.path.isfile(out):
            return [f"strata predict --megatron-args exited {run.returncode}: {run.stdout[-1500:]}{run.stderr[-1500:]}"]
        with open(out) as f:
            back = json.load(f)
    problems = []
    for key in ("parallel", "recompute", "stages", "training"):
        if back.get(key) != plan.get(key):
            problems.append(f"{key}: planned {plan.get(key)}, read back {back.get(key)}")
    graphs, graphs_back = launched_graphs(plan), back["runtime"].get("cuda_graph_modules")
    if sorted(graphs or []) != sorted(graphs_back or []) or (graphs is None) != (graphs_back is None):
        problems.append(f"CUDA graph modules: planned {graphs}, read back {graphs_back}")
    t0, t1 = plan["prediction"]["iteration_time_s"], back["prediction"]["iteration_time_s"]
    if abs(t1 - t0) > tolerance * max(t0, 1e-12):
        problems.append(f"iteration time: predicted {t0} s, read back {t1} s")
    m0, m1 = plan["prediction"]["memory_per_gpu_GiB"], back["prediction"]["memory_per_gpu_GiB"]
    if abs(m1 - m0) > tolerance * max(m0, 1e-12):
        problems.append(f"memory: predicted {m0} GiB, read back {m1} GiB")
    return problems


if __name__ == "__main__":
    sys.exit(main())
