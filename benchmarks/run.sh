#!/usr/bin/env bash
# Builds the benchmarks (release preset, -O3 -march=native) and prints each as a ratio to its
# baseline measured in the same run. Usage: benchmarks/run.sh [runtime|ct|all]
# XPR_BENCH_BUILD_DIR chooses the build directory (default build/release); XPR_BENCH_REPS the
# number of repetitions (default 5, the median is reported).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps
which=${1:-all}
build=${XPR_BENCH_BUILD_DIR:-build/release}
reps=${XPR_BENCH_REPS:-5}
cmake --preset release -B "$build" -DXPR_BUILD_TESTS=OFF -DXPR_BUILD_EXAMPLES=OFF >/dev/null
out=$build/benchmarks
mkdir -p "$out/results"
measure() {  # target [extra flags]: build it, run it single-threaded, keep the JSON
  cmake --build "$build" -j2 --target "$1" >/dev/null
  # Repetitions interleaved in random order, so a change in machine load hits every contender.
  "$out/$1" --benchmark_repetitions="$reps" --benchmark_enable_random_interleaving=true \
    "${@:2}" --benchmark_format=json --benchmark_out="$out/results/$1.json" >/dev/null \
    2>"$out/results/$1.log"
}
run() {  # target, printed as BM_xpr_X / BM_hand_X ratios by ratios.py
  measure "$1" --benchmark_report_aggregates_only=true
  echo "## $1"
  python3 benchmarks/ratios.py "$out/results/$1.json"
  echo
}
if [ "$which" = runtime ] || [ "$which" = all ]; then
  run bench_rt_eager
  run bench_rt_transformations
fi
if [ "$which" = ct ] || [ "$which" = all ]; then
  # W1-W3 against hand-written code and the peers found at configure time (benchmarks/ct/).
  results=()
  for t in $(cd benchmarks/ct && ls *.cpp | sed 's/\.cpp$//'); do
    measure "bench_ct_$t" --benchmark_display_aggregates_only=true  # JSON keeps each repetition
    results+=("$out/results/bench_ct_$t.json")
  done
  echo "## compile-time tier (benchmarks/ct)"
  python3 benchmarks/ct_table.py "${results[@]}"
  echo
  python3 benchmarks/ct_table.py --markdown "${results[@]}"
fi
