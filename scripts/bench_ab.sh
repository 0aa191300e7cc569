#!/usr/bin/env bash
# A/B benchmark of two revisions in one run, so that a change is measured against its baseline on
# the same machine at the same time: builds minidl-bench-step and minidl-bench-ops of each revision
# (git worktrees under build-ab/, Release, CPU only), then runs them alternately, A B A B ..., and
# prints each run's output after a header naming the revision. Compare the ratios within a run.
#
#   scripts/bench_ab.sh REV_A REV_B [rounds=2] [models=mlp,lenet,cnn] [ops filter regex]
#
# Run it on an idle machine (no build alongside); it prints the CPU model and the load first.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bootstrap.sh
minidl_need_packages libbenchmark-dev libopenblas-dev

[ $# -ge 2 ] || { echo "usage: $0 REV_A REV_B [rounds] [models] [ops-filter]" >&2; exit 2; }
rev_a=$1 rev_b=$2 rounds=${3:-2} models=${4:-mlp,lenet,cnn} filter=${5:-.}
root=$PWD/build-ab
mkdir -p "$root"

build_rev() {  # $1 revision -> prints the folder holding its bench binaries
  local sha tree
  sha=$(git rev-parse --short "$1")
  tree=$root/$sha
  [ -d "$tree/src" ] || git worktree add --detach "$tree/src" "$sha" >/dev/null 2>&1
  cmake -S "$tree/src" -B "$tree/build" -DCMAKE_BUILD_TYPE=Release -DMINIDL_CUDA=OFF -DMINIDL_BUILD_TESTS=OFF >/dev/null
  cmake --build "$tree/build" -j"$(nproc)" --target minidl-bench-ops minidl-bench-step >/dev/null
  echo "$tree/build/bench"
}

dir_a=$(build_rev "$rev_a")
dir_b=$(build_rev "$rev_b")
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
echo "== A = $rev_a ($(git rev-parse --short "$rev_a")), B = $rev_b ($(git rev-parse --short "$rev_b"))"
echo "== $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), load $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 1; r <= rounds; ++r)); do
  for side in A B; do
    dir=$dir_a; [ $side = B ] && dir=$dir_b
    echo; echo "==== round $r, $side: minidl-bench-step 3 $models"
    "$dir/minidl-bench-step" 3 "$models"
  done
done
for side in A B; do
  dir=$dir_a; [ $side = B ] && dir=$dir_b
  echo; echo "==== $side: minidl-bench-ops --benchmark_filter='$filter'"
  "$dir/minidl-bench-ops" --benchmark_filter="$filter"
done
