#!/bin/bash
# bash arithmetic: 040 is octal (32 layers), 0x10 is 16 heads.
torchrun --nnodes 1 --nproc-per-node 8 pretrain_gpt.py --num-layers $(( 040 )) --hidden-size 2048 \
  --num-attention-heads $((0x10)) --seq-length 2048 --micro-batch-size 1 --global-batch-size 64 --bf16 --vocab-size 51200
