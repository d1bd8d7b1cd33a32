#!/usr/bin/env bash
# Calibrate strata's kernel model on the GPU of this machine. Run by a person on a machine with an
# NVIDIA GPU, the CUDA toolkit (CUPTI, cuBLAS, NCCL) and, for the layer measurements, PyTorch:
#
#   scripts/profile_on_gpu.sh [gpu-id]        # gpu-id: a configs/gpus/ file stem, e.g. h100-sxm
#
# Steps: build with the CUDA profiler; `strata profile` (GEMM/attention/elementwise/copy/NCCL
# microbenchmarks recorded with CUPTI); PyTorch transformer-layer training steps at several sizes
# and TP shard shapes (scripts/measure_layer_step.py: step times and peak memory into
# configs/measurements/, plus SDPA flash attention timings as a profile); `strata calibrate` on
# both profiles; then the layer steps predicted before vs after calibration. Set QUICK=1 for the
# small suite, SKIP_TORCH=1 without PyTorch.
set -euo pipefail
cd "$(dirname "$0")/.."

build=${BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DSTRATA_WITH_CUDA=ON ${STRATA_CMAKE_ARGS:-}
cmake --build "$build" -j"$(nproc)"
strata="$build/planner/strata"

nvidia-smi --query-gpu=name,clocks.max.sm,clocks.sm,power.limit,driver_version --format=csv || true
gpu_id=${1:-}
if [ -z "$gpu_id" ]; then
  name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
  echo "GPU: $name (pass the configs/gpus id as the first argument if calibrate cannot match it)"
fi

stamp=$(date -u +%Y%m%dT%H%M%SZ)
host=$(hostname -s)
outdir=configs/measurements
mkdir -p "$outdir"
profile="$outdir/${gpu_id:-gpu}-${host}-${stamp}.profile.json"
quick=()
[ "${QUICK:-0}" = 1 ] && quick=(--quick)

# 1. Microbenchmarks with CUPTI.
"$strata" profile --out "$profile" "${quick[@]}" --chrome-trace "${profile%.profile.json}.trace.json"

# 2. PyTorch layer steps (bf16, SDPA flash) and SDPA attention timings.
layers=""
attention=""
if [ "${SKIP_TORCH:-0}" != 1 ] && python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  layers="$outdir/${gpu_id:-gpu}-${host}-${stamp}.layer-steps.json"
  attention="$outdir/${gpu_id:-gpu}-${host}-${stamp}.attention.profile.json"
  if [ "${QUICK:-0}" = 1 ]; then
    python3 scripts/measure_layer_step.py --models llama3-8b --tp 1,8 --seq 2048 --out "$layers" --attention-profile "$attention"
  else
    python3 scripts/measure_layer_step.py --models llama3-8b,gpt3-13b,llama3-70b,gpt3-175b --tp 1,2,4,8 --seq 2048,4096,8192 \
      --out "$layers" --attention-profile "$attention"
  fi
else
  echo "PyTorch with CUDA not available: layer-step measurements skipped"
fi

# 3. Calibrate (and compare the layer steps before/after).
gpu_flag=()
[ -n "$gpu_id" ] && gpu_flag=(--gpu "$gpu_id")
cal_args=(--profile "$profile")
[ -n "$attention" ] && cal_args+=(--profile "$attention")
[ -n "$layers" ] && cal_args+=(--layers "$layers")
cal_out="$outdir/${gpu_id:-gpu}-${host}-${stamp}.calibration.json"
"$strata" calibrate "${cal_args[@]}" "${gpu_flag[@]}" -o "$cal_out" | tee "${cal_out%.json}.txt"

echo
echo "Calibration written to $cal_out (report: ${cal_out%.json}.txt)."
if [ -n "$gpu_id" ]; then
  echo "To make it the default for $gpu_id: cp $cal_out configs/calibration/$gpu_id.json"
fi
