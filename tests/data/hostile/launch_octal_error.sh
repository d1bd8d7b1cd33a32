#!/bin/bash
# 08 is not an octal number: bash stops with "value too great for base".
torchrun --nnodes 1 --nproc-per-node 8 pretrain_gpt.py --num-layers $(( 08 )) --hidden-size 2048 \
  --num-attention-heads 16 --seq-length 2048 --micro-batch-size 1 --global-batch-size 64 --bf16 --vocab-size 51200
