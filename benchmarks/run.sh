#!/usr/bin/env bash
# Builds the benchmarks (release preset, -O3 -march=native) and prints each as a ratio to its
# baseline measured in the same run. Usage: benchmarks/run.sh [runtime|ct|all]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps
which=${1:-all}
cmake --preset release -DXPR_BUILD_TESTS=OFF -DXPR_BUILD_EXAMPLES=OFF >/dev/null
out=build/release/benchmarks
mkdir -p "$out/results"
run() {  # target, baseline regex pairs handled by ratios.py
  cmake --build --preset release --target "$1" >/dev/null
  "$out/$1" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
    --benchmark_format=json --benchmark_out="$out/results/$1.json" >/dev/null
  echo "## $1"
  python3 benchmarks/ratios.py "$out/results/$1.json"
  echo
}
if [ "$which" = runtime ] || [ "$which" = all ]; then
  run bench_rt_eager
  run bench_rt_transformations
fi
if [ "$which" = ct ] || [ "$which" = all ]; then
  for t in $(cd benchmarks/ct 2>/dev/null && ls *.cpp 2>/dev/null | sed 's/\.cpp$//'); do
    run "bench_ct_$t"
  done
fi
