#!/bin/bash
if [ -z ${HF_MODEL_CKPT} ]; then
    HF_MODEL_CKPT=Qwen/Qwen3-8B
fi
MODEL_ARGS=" \
    --micro-batch-size 1 --bf16 --swiglu --num-layers 36 --hidden-size 4096 --ffn-hidden-size 12288 \
    --num-attention-heads 32 --group-query-attention --num-query-groups 8 --kv-channels 128 --seq-length 4096 \
"
EXTRA="--vocab-size 151936 $MODEL_ARGS"
