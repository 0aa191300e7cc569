#!/usr/bin/env bash
# Benchmarks: installs Google Benchmark and OpenBLAS when missing, builds the bench targets
# (Release, build-bench/), then runs with OMP_NUM_THREADS=2:
#   1. minidl-bench-ops: matmul GFLOP/s next to OpenBLAS, element-wise GB/s next to a same-bytes
#      memcpy, repetitions interleaved, ending with the summary table of ratios;
#   2. minidl-bench-step: samples/s of the training steps of the MLP (b128), LeNet-5 and the CIFAR
#      CNN (b64) in f32, bf16 and fp16+GradScaler; the MLP again with the pool's idle spin off
#      (MINIDL_SPIN_US=0).
# Numbers and the decisions they led to: bench/README.md. On a shared machine, run it when idle.
#
#   scripts/bench.sh                                   # everything (~5 minutes)
#   scripts/bench.sh --benchmark_filter='mm/|mlp/'     # extra flags go to minidl-bench-ops
#   MINIDL_BENCH_REPS=9 scripts/bench.sh               # more repetitions
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bootstrap.sh
minidl_need_packages libbenchmark-dev libopenblas-dev

build=${MINIDL_BENCH_BUILD:-build-bench}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DMINIDL_CUDA="${MINIDL_CUDA:-OFF}" >/dev/null
cmake --build "$build" -j"$(nproc)" --target minidl-bench-ops minidl-bench-step

export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
echo "== $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), load $(cut -d' ' -f1-3 /proc/loadavg)"
"$build/bench/minidl-bench-ops" "$@"
echo
reps=${MINIDL_BENCH_REPS:-5}
"$build/bench/minidl-bench-step" "$reps"
MINIDL_SPIN_US=0 "$build/bench/minidl-bench-step" "$reps" mlp
