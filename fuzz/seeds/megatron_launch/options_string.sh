case "${MODEL_SCALE}" in
    "800M") HIDDEN_SIZE=1024 ;;
    "8B") HIDDEN_SIZE=4096 ;;
esac
E=
options=" \
       --tensor-model-parallel-size 2 $E \
       --hybrid-layer-pattern M-M* \
       --hidden-size ${HIDDEN_SIZE} --num-attention-heads 32 --seq-length 4096 --micro-batch-size 1 --vocab-size 32000 --bf16"
torchrun --nproc_per_node 8 ../../pretrain_hybrid.py ${options} "$options"
