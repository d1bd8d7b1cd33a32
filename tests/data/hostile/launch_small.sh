torchrun --nnodes 1 --nproc-per-node 8 pretrain_gpt.py --num-layers 24 --hidden-size 2048 \
  --num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048 --micro-batch-size 1 \
  --global-batch-size 64 --bf16 --vocab-size 51200 --tensor-model-parallel-size 1 --pipeline-model-parallel-size 1
