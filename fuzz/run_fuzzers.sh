#!/usr/bin/env bash
# Runs every libFuzzer target for a bounded time from a seed corpus made of the project's own
# files. Usage: fuzz/run_fuzzers.sh BUILD_DIR [SECONDS_PER_TARGET] [TARGET...]
# BUILD_DIR was configured with -DSTRATA_FUZZ=ON (clang). Fails on the first crash, leak,
# sanitizer report, timeout or out-of-memory; the reproducer is left in BUILD_DIR/fuzz-artifacts/.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: fuzz/run_fuzzers.sh BUILD_DIR [SECONDS_PER_TARGET] [TARGET...]}
seconds=${2:-60}
shift $(( $# >= 2 ? 2 : 1 ))
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(model gpu cluster calibration plan validation_runs cli megatron_launch launch_script calibration_steps tokenizer)

corpus_root="$build/fuzz-corpus"
artifacts="$build/fuzz-artifacts"
mkdir -p "$artifacts"

seed() {  # seed TARGET SOURCE...: copy seed files into the target's corpus
  local dir="$corpus_root/$1"; shift
  mkdir -p "$dir"
  for f in "$@"; do [ -f "$f" ] && cp "$f" "$dir/"; done
  return 0
}
seed model models/*.json fuzz/seeds/model/* tests/data/hf/*.json
seed gpu configs/gpus/*.json
seed cluster configs/clusters/*.json
seed calibration fuzz/seeds/calibration/*
seed plan fuzz/seeds/plan/*
seed validation_runs fuzz/seeds/validation_runs/*
seed cli fuzz/seeds/cli/*
seed megatron_launch fuzz/seeds/megatron_launch/* tests/data/megatron_gpt3_175b.sh
seed launch_script fuzz/seeds/megatron_launch/* tests/data/megatron_gpt3_175b.sh tests/data/hostile/*.sh
seed tokenizer tests/data/sentencepiece/tiny.model fuzz/seeds/tokenizer/*
seed calibration_steps tests/data/validation_runs_small.json tests/data/hostile/steps_1e300.json fuzz/seeds/validation_runs/0[0-5]*

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# Targets run FUZZ_JOBS at a time (default: the number of cores), each on one core.
jobs=${FUZZ_JOBS:-$(nproc)}
run_one() {
  local t=$1 log="$build/fuzz-$1.log"
  "$build/fuzz/fuzz_$t" "$corpus_root/$t" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=3072 -max_len=20000 \
    -dict=fuzz/strata.dict -artifact_prefix="$artifacts/${t}-" -print_final_stats=1 >"$log" 2>&1
}
declare -A pid_of
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do sleep 1; done
  echo "== fuzz_$t: ${seconds}s"
  run_one "$t" &
  pid_of[$t]=$!
done
status=0
for t in "${targets[@]}"; do
  log="$build/fuzz-$t.log"
  if wait "${pid_of[$t]}"; then
    echo "fuzz_$t ok: $(grep -E "stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss_mb" "$log" | tr -s ' \n' ' ')"
  else
    echo "fuzz_$t FAILED: see $log"; tail -n 60 "$log"; status=1
  fi
done
exit $status
