#!/bin/bash
# Nine assignments that multiply a variable eightfold each: 64 x 8^9 bytes (8.6 GB) if expanded.
A=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
A=$A$A$A$A$A$A$A$A
A=$A$A$A$A$A$A$A$A
A=$A$A$A$A$A$A$A$A
A=$A$A$A$A$A$A$A$A
A=$A$A$A$A$A$A$A$A
A=$A$A$A$A$A$A$A$A
A=$A$A$A$A$A$A$A$A
A=$A$A$A$A$A$A$A$A
A=$A$A$A$A$A$A$A$A
torchrun pretrain_gpt.py --num-layers 24 --hidden-size 2048 --num-attention-heads 16 --seq-length 2048 --micro-batch-size 1 --data-path $A
