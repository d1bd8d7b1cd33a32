#!/bin/bash
# A Megatron-LM launch of a top-1 MoE GPT routed with Sinkhorn balancing (S-BASE,
# --moe-router-load-balancing-type sinkhorn): Megatron-Core accepts a top-1 softmax router only
# with it (or with --moe-router-pre-softmax). Test input for `strata predict --megatron-args`
# (tests/megatron/launches.txt): 8 experts, ep 8 on one node of 8 GPUs.
export CUDA_DEVICE_MAX_CONNECTIONS=1

torchrun --nproc-per-node 8 pretrain_gpt.py \
    --num-layers 12 --hidden-size 1024 --ffn-hidden-size 4096 --num-attention-heads 16 \
    --swiglu --normalization RMSNorm --disable-bias-linear --position-embedding-type rope \
    --untie-embeddings-and-output-weights --attention-dropout 0 --hidden-dropout 0 \
    --seq-length 4096 --max-position-embeddings 4096 \
    --tokenizer-type NullTokenizer --vocab-size 32000 \
    --micro-batch-size 1 --global-batch-size 64 --bf16 \
    --num-experts 8 --moe-router-topk 1 --moe-router-load-balancing-type sinkhorn \
    --moe-token-dispatcher-type alltoall --expert-model-parallel-size 8 \
    --use-distributed-optimizer --overlap-grad-reduce
