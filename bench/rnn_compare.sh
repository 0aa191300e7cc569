#!/usr/bin/env bash
# minidl's LSTM training step beside PyTorch's nn.LSTM on the CPU (bench/rnn_lab.cpp,
# bench/compare/torch_rnn.py): the same shapes, 3 rounds with the side that goes first alternating,
# OMP_NUM_THREADS=2 for both; PyTorch once with its default settings and once with
# OPENBLAS_NUM_THREADS=1 (Debian's OpenBLAS threads fight PyTorch's own on 2 cores: the best setting
# the compare bench's search finds here). Needs a build with bench targets (build/ by default) and Debian's
# python3-torch (a baseline, never a dependency). Prints the CPU model and one JSON line per run.
#   bench/rnn_compare.sh [BUILD_DIR] [SEQ BATCH INPUT HIDDEN LAYERS]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${1:-build}"
shift || true
SHAPE=("${@:-32 64 64 128 1}")
# shellcheck disable=SC2206
SHAPE=(${SHAPE[*]})
[ -x "$BUILD/bench/minidl-bench-rnn-lab" ] || cmake --build "$BUILD" --target minidl-bench-rnn-lab
PY=python3
$PY -c "import torch" 2>/dev/null || PY=/usr/bin/python3
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs); shape (seq batch input hidden layers): ${SHAPE[*]}"
export OMP_NUM_THREADS=2
for round in 1 2 3; do
  for precision in f32 bf16; do
    if [ $((round % 2)) -eq 1 ]; then
      "$BUILD/bench/minidl-bench-rnn-lab" "${SHAPE[@]}" 2 "$precision"
      $PY bench/compare/torch_rnn.py "${SHAPE[@]}" 2 "$precision"
      OPENBLAS_NUM_THREADS=1 $PY bench/compare/torch_rnn.py "${SHAPE[@]}" 2 "$precision"
    else
      OPENBLAS_NUM_THREADS=1 $PY bench/compare/torch_rnn.py "${SHAPE[@]}" 2 "$precision"
      $PY bench/compare/torch_rnn.py "${SHAPE[@]}" 2 "$precision"
      "$BUILD/bench/minidl-bench-rnn-lab" "${SHAPE[@]}" 2 "$precision"
    fi
  done
done
