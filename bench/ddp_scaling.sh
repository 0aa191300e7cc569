#!/usr/bin/env bash
# Data parallel on this machine: 2 ranks x 1 thread (DDP over MPI) against 1 process x 2 threads,
# for each model, alternated `rounds` times; then the efficiency (2x1 samples/s over 1x2) and the
# overlap fraction, as printed by minidl-bench-ddp. Run on an otherwise idle machine:
#   bash bench/ddp_scaling.sh [build dir] [rounds]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=${2:-3}
bin="$build/bench/minidl-bench-ddp"
[ -x "$bin" ] || { echo "ddp_scaling: $bin is missing (build with MPI)"; exit 2; }
mpirun=(mpirun --allow-run-as-root --oversubscribe --mca btl self,vader,tcp --bind-to none)
echo "# CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores"
for model in mlp lenet cnn resnet20; do
  batch=64
  [ "$model" = mlp ] || [ "$model" = resnet20 ] && batch=128
  for r in $(seq "$rounds"); do
    echo "## $model round $r"
    OMP_NUM_THREADS=2 "$bin" "$model" $((2 * batch)) 5
    "${mpirun[@]}" -np 2 -x OMP_NUM_THREADS=1 "$bin" "$model" "$batch" 5
  done
done
