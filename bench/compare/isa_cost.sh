#!/usr/bin/env bash
# Builds minidl-bench-step twice, the default way (CPU kernels chosen at run time) into
# build-compare/ and with -DMINIDL_NATIVE=ON into build-compare-native/, then runs
# bench/compare/isa_cost.py on both. Extra arguments go to isa_cost.py (--reps, --models, ...).
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/bootstrap.sh
for variant in default native; do
  build=build-compare; native=OFF
  if [ "$variant" = native ]; then build=build-compare-native; native=ON; fi
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DMINIDL_CUDA=OFF -DMINIDL_MPI=OFF -DMINIDL_BUILD_TESTS=OFF \
    -DMINIDL_NATIVE=$native ${CMAKE_CXX_COMPILER_LAUNCHER:+-DCMAKE_CXX_COMPILER_LAUNCHER=$CMAKE_CXX_COMPILER_LAUNCHER} >/dev/null
  cmake --build "$build" -j"$(nproc)" --target minidl-bench-step >/dev/null
done
exec /usr/bin/python3 bench/compare/isa_cost.py --dispatch build-compare/bench/minidl-bench-step \
  --native build-compare-native/bench/minidl-bench-step "$@"
