#!/usr/bin/env bash
# Installs the Debian packages strata needs (idempotent), configures and builds a Release build in
# build/, then runs one real prediction with the built-in data as a smoke check.
set -euo pipefail
cd "$(dirname "$0")/.."
packages=(build-essential cmake nlohmann-json3-dev libfmt-dev libeigen3-dev doctest-dev libcli11-dev libomp-dev libbenchmark-dev
  python3 python3-packaging python3-typing-extensions  # Megatron-LM conformance tests (../shared/megatron-check)
  clang libclang-rt-dev)  # clang + libFuzzer: the fuzz targets of .ci/run (docs/robustness.md)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release ${STRATA_CMAKE_ARGS:-}
cmake --build build -j"$(nproc)"
./build/planner/strata predict --model gpt3-175b --gpu a100-80gb --gpus 1024 --global-batch 1536 --seq 2048 \
  --tp 8 --pp 16 --dp 8 --mbs 1 --sp --recompute selective --dist-opt
