#!/usr/bin/env bash
# minidl against PyTorch, side by side: installs Debian's python3-torch when missing (a baseline for
# this bench only, never a dependency of the library), builds minidl-bench-step and minidl-fma-peak
# into build-compare/, and runs bench/compare/compare.py. Extra arguments go to compare.py:
#   bench/compare/run.sh            # full run, 3 alternated repetitions (13-14 min with --scaling on 2 cores; a quiet machine)
#   bench/compare/run.sh --quick    # smoke test: 1 repetition, short runs, 2 PyTorch settings
#   bench/compare/run.sh --reps 5 --models cnn,resnet20
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/bootstrap.sh
# OpenBLAS: Debian's torch multiplies through the libblas.so.3 alternative, which is netlib's
# reference BLAS (~50x slower in f32) unless OpenBLAS is installed; compare.py checks which it got.
minidl_need_packages python3-torch libopenblas0-pthread
BUILD="${MINIDL_COMPARE_BUILD:-build-compare}"
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DMINIDL_CUDA=OFF -DMINIDL_MPI=OFF -DMINIDL_BUILD_TESTS=OFF \
  ${CMAKE_CXX_COMPILER_LAUNCHER:+-DCMAKE_CXX_COMPILER_LAUNCHER=$CMAKE_CXX_COMPILER_LAUNCHER} >/dev/null
cmake --build "$BUILD" -j"$(nproc)" --target minidl-bench-step minidl-fma-peak >/dev/null
exec /usr/bin/python3 bench/compare/compare.py --bench "$BUILD/bench/minidl-bench-step" \
  --fma "$BUILD/bench/minidl-fma-peak" "$@"
