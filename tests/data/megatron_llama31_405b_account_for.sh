#!/bin/bash
# A Megatron-LM launch of Llama 3.1 405B split the way such runs are: 126 decoder layers plus the
# embedding and the loss counted as layers (--account-for-embedding-in-pipeline-split,
# --account-for-loss-in-pipeline-split), 128 slots over pp 16 in model chunks of 2 (vpp 4). Test
# input for `strata predict --megatron-args` (tests/megatron/launches.txt): tp 8 x cp 2 x pp 16 on
# 256 nodes of 8 GPUs, 8k tokens.
export CUDA_DEVICE_MAX_CONNECTIONS=1

torchrun --nproc-per-node 8 --nnodes 256 pretrain_gpt.py \
    --num-layers 126 --hidden-size 16384 --ffn-hidden-size 53248 --num-attention-heads 128 \
    --group-query-attention --num-query-groups 8 --kv-channels 128 \
    --swiglu --normalization RMSNorm --norm-epsilon 1e-5 --disable-bias-linear \
    --position-embedding-type rope --rotary-base 500000 --use-rope-scaling --untie-embeddings-and-output-weights \
    --attention-dropout 0 --hidden-dropout 0 \
    --seq-length 8192 --max-position-embeddings 131072 \
    --tokenizer-type NullTokenizer --vocab-size 128256 \
    --micro-batch-size 1 --global-batch-size 2048 --bf16 \
    --tensor-model-parallel-size 8 --context-parallel-size 2 --pipeline-model-parallel-size 16 \
    --num-layers-per-virtual-pipeline-stage 2 \
    --account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split \
    --sequence-parallel --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather \
    --recompute-granularity full --recompute-method uniform --recompute-num-layers 1
