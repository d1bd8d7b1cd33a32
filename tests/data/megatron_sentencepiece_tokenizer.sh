#!/bin/bash
# A Megatron-LM launch whose vocabulary is its SentencePiece tokenizer's (no --vocab-size): Megatron
# builds GPTSentencePieceTokenizer from the .model file, get_piece_size() pieces, plus the special
# tokens not among them (legacy mode). Test input for `strata predict --megatron-args`
# (tests/megatron/launches.txt): tests/data/sentencepiece/tiny.model has 600 pieces; "<new_a>" and
# "<new_b>" are not among them, "<s>" is, so the model trains 602 tokens (padded by Megatron).
export CUDA_DEVICE_MAX_CONNECTIONS=1

torchrun --nproc-per-node 8 pretrain_gpt.py \
    --num-layers 16 --hidden-size 2048 --ffn-hidden-size 5632 --num-attention-heads 16 \
    --swiglu --normalization RMSNorm --disable-bias-linear --position-embedding-type rope \
    --untie-embeddings-and-output-weights --attention-dropout 0 --hidden-dropout 0 \
    --seq-length 4096 --max-position-embeddings 4096 \
    --tokenizer-type GPTSentencePieceTokenizer --tokenizer-model tests/data/sentencepiece/tiny.model \
    --tokenizer-sentencepiece-legacy --tokenizer-special-tokens '<new_a>' '<s>' '<new_b>' \
    --tensor-model-parallel-size 2 --micro-batch-size 1 --global-batch-size 64 --bf16 \
    --use-distributed-optimizer --overlap-grad-reduce
