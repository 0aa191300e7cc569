#!/usr/bin/env bash
# bench/gpu/versus_torch.sh steps|conv_layout BIN OUT BUDGET_S [DEVICE]: minidl-bench-step (from BIN)
# against bench/compare/torch_models.py on the same device, for bench/gpu/run.sh's stages of those
# names; JSON lines and the table (bench/gpu/report.py) go to OUT. Stops starting processes when less
# than a process's worth of BUDGET_S is left, so that the table is written inside the stage's limit.
#
#   steps        MLP b128, MLP b1024, ResNet-20 b128, each in f32, fp16 (autocast + GradScaler) and
#                bf16 (autocast): STEPS_ROUNDS (3) rounds, minidl first in odd rounds and PyTorch
#                first in even ones, each side one process per round (--suite) running every workload
#                for one repetition of ~STEPS_SECONDS (0.25) s -> steps_r<round>_<side>.jsonl, steps.md
#   conv_layout  f16 conv2d forward + backward on ResNet-20's shapes, NCHW and channels-last, one
#                process per side (--conv-layout, CONV_SECONDS (0.06) s x 3 repetitions per shape and
#                layout; minidl first (up to 1/4 of the budget), PyTorch second (up to 3/5), then minidl with
#                MINIDL_CUDNN_SEARCH=heuristic in the rest) -> conv_layout_<side>.jsonl, conv_layout.md
#
# DEVICE defaults to cuda; `cpu` runs the same control flow here as a smoke test (PyTorch 1.13's CPU
# has no fp16 autocast nor f16 convolutions: the CPU run asks for f32,bf16 and bf16 convolutions).
set -uo pipefail
[ $# -ge 4 ] || { echo "usage: versus_torch.sh steps|conv_layout BIN OUT BUDGET_S [cuda|cpu]" >&2; exit 2; }
MODE=$1 BIN=$2 OUT=$3 BUDGET=$4 DEVICE=${5:-cuda}
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
PY="${PYTHON:-python3}"
# run.sh puts the bundle's libraries first on LD_LIBRARY_PATH for minidl; Python gets the machine's own.
if [ -n "${MINIDL_PY_LD_LIBRARY_PATH+set}" ]; then PYENV=(env "LD_LIBRARY_PATH=$MINIDL_PY_LD_LIBRARY_PATH"); else PYENV=(env); fi
TORCH="$ROOT/bench/compare/torch_models.py"
STEP="$BIN/minidl-bench-step"
mkdir -p "$OUT"
T0=$(date +%s)
left() { echo $((BUDGET - ($(date +%s) - T0))); }
[ -x "$STEP" ] || { echo "versus_torch.sh: no $STEP" >&2; exit 2; }

# one LABEL FILE MAX_S COMMAND...: runs one side's process for at most MAX_S s (less if the budget
# has less), its JSON lines into FILE, everything it prints into this log. Returns its exit status.
one() {
  local label=$1 file=$2 max=$3
  shift 3
  local l
  l=$(left)
  [ "$l" -lt "$max" ] && max=$l
  if [ "$max" -lt 5 ]; then
    echo "-- $label: not started, ${l}s of the ${BUDGET}s budget left"
    return 124
  fi
  echo "-- $label (at +$(($(date +%s) - T0))s, limit ${max}s): $*"
  local t=$(date +%s)
  # --foreground: the child stays in run.sh's process group, so the stage's own KILL reaches it too
  # (a python or minidl left running would hold the GPU through the next stage).
  timeout --foreground --signal=KILL "$max" "$@" >"$file" 2>"$file.stderr"
  local rc=$?
  cat "$file" "$file.stderr"
  echo "-- $label: exit $rc after $(($(date +%s) - t))s"
  return $rc
}

fail=0
case $MODE in
  steps)
    W=mlp:128,mlp:1024,resnet20:128
    P=f32,fp16,bf16
    [ "$DEVICE" = cpu ] && W=mlp:128,mlp:1024,resnet20:16 && P=f32,bf16
    S=${STEPS_SECONDS:-0.25}
    rm -f "$OUT"/steps_r*_*.jsonl*
    for r in $(seq 1 "${STEPS_ROUNDS:-3}"); do
      sides="minidl pytorch"
      [ $((r % 2)) -eq 0 ] && sides="pytorch minidl"
      for s in $sides; do
        f="$OUT/steps_r${r}_$s.jsonl"
        if [ $s = minidl ]; then
          one "round $r minidl" "$f" 40 "$STEP" --suite "$W" "$P" "$S" 1 --device "$DEVICE" || fail=1
        else
          one "round $r pytorch" "$f" 40 "${PYENV[@]}" "$PY" "$TORCH" --suite "$W" "$P" "$S" 1 --device "$DEVICE" || fail=1
        fi
      done
    done
    "${PYENV[@]}" "$PY" "$ROOT/bench/gpu/report.py" steps "$OUT" || fail=1
    ;;
  conv_layout)
    S=${CONV_SECONDS:-0.06}
    if [ "$DEVICE" = cpu ]; then margs=(4 bf16) targs=(--batch 4 --dtype bf16); else margs=() targs=(); fi
    rm -f "$OUT"/conv_layout_*.jsonl*
    one "minidl" "$OUT/conv_layout_minidl.jsonl" $((BUDGET / 4)) "$STEP" --conv-layout "$S" 3 ${margs[@]+"${margs[@]}"} --device "$DEVICE" || fail=1
    one "pytorch" "$OUT/conv_layout_pytorch.jsonl" $((BUDGET * 3 / 5)) "${PYENV[@]}" "$PY" "$TORCH" --conv-layout "$S" 3 ${targs[@]+"${targs[@]}"} --device "$DEVICE" || fail=1
    # minidl again with cuDNN's heuristics instead of its timed algorithm search, for the table's last column.
    one "minidl, heuristics" "$OUT/conv_layout_minidl_heuristic.jsonl" "$BUDGET" env MINIDL_CUDNN_SEARCH=heuristic "$STEP" --conv-layout "$S" 3 ${margs[@]+"${margs[@]}"} --device "$DEVICE" || fail=1
    "${PYENV[@]}" "$PY" "$ROOT/bench/gpu/report.py" conv "$OUT" || fail=1
    ;;
  *)
    echo "versus_torch.sh: unknown mode $MODE (steps or conv_layout)" >&2
    exit 2
    ;;
esac
exit $fail
