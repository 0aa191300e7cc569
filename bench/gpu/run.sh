#!/usr/bin/env bash
# bench/gpu/run.sh: the CUDA backend's check on a GPU machine, in one device call, over the bundle
# that bench/gpu/prepare.sh builds on a CPU machine (nothing is compiled here).
#
# NOT YET RUN on a GPU: written in a session without one. The first session lent a GPU runs it,
# fixes what fails, reruns, and quotes $OUT/summary.md.
#
#   on the CPU machine:  bench/gpu/prepare.sh
#   the device call:     run(command="bench/gpu/run.sh", carry=["gpu-bundle"], timeout_s=420)
#
# Stages, each under its own time limit (a hung stage cannot eat the others; every log comes back
# even when a stage fails); under 6 minutes in all:
#   env        GPU, driver, where the CUDA libraries come from, ldd of the binaries     -> env.log
#   coverage   test_kernel_coverage (the kernel table, on the live registry)             -> coverage.log
#   test_cuda, test_cuda_cnn   the [cuda] tests with MINIDL_EXPECT_GPU=1 (a skip fails)  -> test_cuda*.log
#   nccl       test_dist_nccl as a world of one (NCCL collectives, DDP on CUDA)           -> nccl.log
#   memcheck_*  compute-sanitizer --tool memcheck over both, when compute-sanitizer exists -> memcheck_*.log
#   lenet_f32, lenet_fp16, lenet_bf16   LeNet-5 on Fashion-MNIST, 1 epoch, --device cuda -> lenet_*.log
#   summary.md  one table: stage, exit status, seconds, result line
# Outside the device tool (OUT unset) it writes to out/gpu/.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
OUT="${OUT:-$ROOT/out/gpu}"
mkdir -p "$OUT"
BUNDLE="$ROOT/gpu-bundle"
BIN="$BUNDLE/bin"
LIBDIR="$BUNDLE/lib"
T0=$(date +%s)
STAGES=()

# stage NAME LIMIT_S COMMAND...: runs COMMAND under `timeout`, logs to $OUT/NAME.log, records exit and time.
stage() {
  local name=$1 limit=$2
  shift 2
  local t=$(date +%s)
  echo "== $name (limit ${limit}s, at +$((t - T0))s): $*" >>"$OUT/$name.log"
  timeout --signal=KILL "$limit" "$@" >>"$OUT/$name.log" 2>&1
  local rc=$?
  STAGES+=("$name $rc $(($(date +%s) - t))")
  echo "== $name: exit $rc after $(($(date +%s) - t))s" | tee -a "$OUT/$name.log"
}

if [ -f "$BUNDLE/bin.tar.xz" ]; then
  UNPACKED="${TMPDIR:-/tmp}/minidl-gpu-bundle"
  rm -rf "$UNPACKED" && mkdir -p "$UNPACKED" && tar -C "$UNPACKED" -xJf "$BUNDLE/bin.tar.xz"
  BIN="$UNPACKED/bin"
  LIBDIR="$UNPACKED/lib"
fi
if [ ! -x "$BIN/test_cuda" ]; then
  echo "no gpu-bundle/bin.tar.xz: run bench/gpu/prepare.sh on the CPU machine and carry gpu-bundle" | tee "$OUT/summary.md"
  exit 1
fi

# ---------------------------------------------------------------- environment and libraries
# The bundle's own libstdc++/libgomp/libz first; the CUDA libraries from the toolkit or, failing
# that, from PyTorch's nvidia-* wheels.
LIBS="$LIBDIR"
for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && LIBS="$LIBS:$d"
done
for m in cudnn cublas cuda_runtime nccl; do
  d=$(python3 -c "import nvidia.$m as x; print(list(x.__path__)[0])" 2>/dev/null) && [ -d "$d/lib" ] && LIBS="$LIBS:$d/lib"
done
export LD_LIBRARY_PATH="$LIBS:${LD_LIBRARY_PATH:-}"
{
  echo "# $(date -u)"
  cat "$BUNDLE/MANIFEST" 2>/dev/null | head -2
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || echo "nvidia-smi not found"
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  for b in "$BIN"/*; do echo "== ldd $(basename "$b")"; ldd "$b" | grep -E "cuda|cublas|cudnn|not found"; done
  command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || echo "no compute-sanitizer"
} >"$OUT/env.log" 2>&1
if grep -q "not found" "$OUT/env.log"; then echo "MISSING LIBRARIES (see env.log):"; grep "not found" "$OUT/env.log" | sort -u; fi

export MINIDL_EXPECT_GPU=1
# ---------------------------------------------------------------- tests
stage coverage 30 "$BIN/test_kernel_coverage"
stage test_cuda 90 "$BIN/test_cuda" "[cuda]" --durations yes
stage test_cuda_cnn 90 "$BIN/test_cuda_cnn" "[cuda]" --durations yes
stage nccl 60 "$BIN/test_dist_nccl" "[nccl]" --durations yes

SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
if [ -n "$SAN" ]; then
  # The training cases are the slow ones under the sanitizer: kernels only here.
  stage memcheck_cuda 60 "$SAN" --tool memcheck --error-exitcode 9 "$BIN/test_cuda" "[cuda]~[train]"
  stage memcheck_cuda_cnn 60 "$SAN" --tool memcheck --error-exitcode 9 "$BIN/test_cuda_cnn" "[cuda]~[train]"
fi

# ---------------------------------------------------------------- LeNet-5, 1 epoch per precision
for amp in off fp16 bf16; do
  name=lenet_$([ $amp = off ] && echo f32 || echo $amp)
  stage "$name" 45 "$BIN/minidl-train" --model lenet --dataset fashion-mnist --data "$BUNDLE/data/fashion-mnist" \
    --epochs 1 --batch-size 64 --device cuda --amp $amp --no-progress --json "$OUT/$name.json"
done

# ---------------------------------------------------------------- summary
{
  echo "# minidl CUDA check (bench/gpu/run.sh) on $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)"
  echo
  echo "| stage | exit | seconds | result |"
  echo "| --- | --- | --- | --- |"
  for s in "${STAGES[@]}"; do
    read -r name rc secs <<<"$s"
    log="$OUT/$name.log"
    case $name in
      lenet_*) res=$(grep -o 'test_accuracy":[0-9.]*\|train_samples_per_s":[0-9.]*\|skipped_steps":[0-9]*' "$log" | tr '\n' ' ') ;;
      memcheck_*) res=$(grep -m1 -E "ERROR SUMMARY|error" "$log") ;;
      *) res=$(grep -E "All tests passed|test cases:|assertions:" "$log" | tail -2 | tr '\n' ' ') ;;
    esac
    echo "| $name | $rc | $secs | ${res:-see $name.log} |"
  done
  echo
  echo "total: $(($(date +%s) - T0))s"
} >"$OUT/summary.md"
cat "$OUT/summary.md"
