#!/bin/bash
# A notes block written with a here-document: its lines are cat's input, not flags of the launch.
cat <<EOF > notes.txt
next run: --tensor-model-parallel-size 8 --pipeline-model-parallel-size 4
EOF
cat <<-'END'
	--num-layers 96
	END
torchrun --nnodes 1 --nproc-per-node 8 pretrain_gpt.py --num-layers 24 --hidden-size 2048 \
  --num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048 --micro-batch-size 1 \
  --global-batch-size 64 --bf16 --vocab-size 51200 --tensor-model-parallel-size 2 --pipeline-model-parallel-size 1
