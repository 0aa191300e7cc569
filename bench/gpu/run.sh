#!/usr/bin/env bash
# bench/gpu/run.sh: the CUDA backend's check on a GPU machine, in one device call, over the bundle
# that bench/gpu/prepare.sh builds on a CPU machine (nothing is compiled here unless the bundled
# programs fail to load: then bench/gpu/rebuild.sh builds them here).
#
# First run on an H200 on 2026-12-04 (bench/README.md, "The GPU check"): fixed what failed, reran.
#
#   on the CPU machine:  bench/gpu/prepare.sh
#   the device call:     run(command="bench/gpu/run.sh", carry=["gpu-bundle"], timeout_s=480)
#
# Stages, in this order, each under its own time limit (a hung stage cannot eat the others; every log
# comes back even when a stage fails). Limits, in seconds, sum to 525, a hang's worst case; a passing
# run took 135 s on an H200 (2026-12-04), so a fix and a rerun fit in 15 minutes of GPU time:
#   rebuild              420   only when a bundled program does not load here (or MINIDL_GPU_REBUILD=1):
#                              bench/gpu/rebuild.sh builds them on this machine          -> rebuild.log
#   env                        GPU, driver, where the CUDA libraries come from, ldd          -> env.log
#   coverage              10   test_kernel_coverage (the kernel table, on the live registry) -> coverage.log
#   test_cuda, test_cuda_cnn   30 + 30   the [cuda] tests with MINIDL_EXPECT_GPU=1 (a skip fails)
#   test_cuda_deferred    12   no host wait in the CUDA losses; bad targets/indices reported at the next wait
#   test_cuda_elsewhere   30   the [cuda] cases of the other test files (foreach, losses, nn options,
#                              tensor gaps, DataParallel on CUDA devices, sort/topk/cumsum/scatter_add, the math
#                              ops, einsum, distances and margin losses, selections, RNN/LSTM/GRU); added after the H200 runs
#   nccl                  15   test_dist_nccl as a world of one (NCCL collectives, DDP on CUDA)
#   memcheck_cuda, memcheck_cuda_cnn   28 + 28   compute-sanitizer --tool memcheck over the kernel
#                              tests (not [train]), when compute-sanitizer exists
#   racecheck_reduce, racecheck_softmax, racecheck_norm   12 + 10 + 15   compute-sanitizer --tool
#                              racecheck over the reduction ([cuda][reduce]), softmax/cross-entropy
#                              ([cuda][softmax]) and batch norm ([cuda][norm]) cases
#   lenet_f32, lenet_fp16, lenet_bf16   25 x 3   LeNet-5 on Fashion-MNIST, 2 epochs with a cosine
#                              learning rate (one epoch at a constant rate ended 1.5 points apart
#                              between two f32 runs), --device cuda
#   steps                100   training step, minidl-bench-step --suite against torch_models.py --suite
#                              (MLP b128, b1024, ResNet-20 b128; f32, fp16 + GradScaler, bf16), 3
#                              alternated rounds in a 90 s budget (bench/gpu/versus_torch.sh)  -> steps.md
#   conv_layout           36   f16 conv2d forward + backward on ResNet-20's shapes, NCHW against
#                              channels-last, minidl and PyTorch (cuDNN's NHWC)               -> conv_layout.md
#   resnet20_fp16_exhaustive, resnet20_fp16_heuristic   15 + 15   the fp16 step with each cuDNN
#                              algorithm search (MINIDL_CUDNN_SEARCH)
#   kernel_times          60   ncu's duration of every kernel of 2 timed ResNet-20 fp16 steps, summed
#                              by kernel (bench/gpu/kernel_times.py)                    -> kernel_times.log
#   host_profile_f32, host_profile_fp16   12 + 12   ResNet-20 b128 steps under the host sampler
#                              (MINIDL_BENCH_SAMPLE) -> host_profile_resnet20_<prec>.txt in logs.tgz
#   summary.md  one table: stage, exit status, seconds, result line; then steps.md and conv_layout.md
# Outside the device tool (OUT unset) it writes to out/gpu/.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
# The device tool brings back at most 8 files from $OUT: the stages log into a scratch folder, packed
# into $OUT/logs.tgz after every stage (so a call killed at its limit still returns what ran), and
# summary.md, steps.md and conv_layout.md are copied beside it at the end.
if [ -n "${OUT:-}" ]; then
  RESULTS="$OUT"
  OUT="${TMPDIR:-/tmp}/minidl-gpu-logs"
  rm -rf "$OUT"
else
  RESULTS="$ROOT/out/gpu"
  OUT="$RESULTS"
fi
mkdir -p "$OUT" "$RESULTS"
pack() { [ "$OUT" = "$RESULTS" ] || tar -C "$OUT" -czf "$RESULTS/logs.tgz" . 2>/dev/null; }
BUNDLE="$ROOT/gpu-bundle"
BIN="$BUNDLE/bin"
LIBDIR="$BUNDLE/lib"
DATA="$BUNDLE/data/fashion-mnist"
T0=$(date +%s)
STAGES=()

# stage NAME LIMIT_S COMMAND...: runs COMMAND under `timeout`, logs to $OUT/NAME.log, records exit and time.
# MINIDL_GPU_STAGES="name ...": run only these stages (a short rerun after a fix); default all.
stage() {
  local name=$1 limit=$2
  shift 2
  if [ -n "${MINIDL_GPU_STAGES:-}" ] && [[ " $MINIDL_GPU_STAGES " != *" $name "* ]]; then return 0; fi
  local t=$(date +%s)
  echo "== $name (limit ${limit}s, at +$((t - T0))s): $*" >>"$OUT/$name.log"
  timeout --signal=KILL "$limit" "$@" >>"$OUT/$name.log" 2>&1
  local rc=$?
  STAGES+=("$name $rc $(($(date +%s) - t))")
  echo "== $name: exit $rc after $(($(date +%s) - t))s" | tee -a "$OUT/$name.log"
  pack
}

if [ -f "$BUNDLE/bin.tar.xz" ]; then
  UNPACKED="${TMPDIR:-/tmp}/minidl-gpu-bundle"
  rm -rf "$UNPACKED" && mkdir -p "$UNPACKED" && tar -C "$UNPACKED" -xJf "$BUNDLE/bin.tar.xz"
  BIN="$UNPACKED/bin"
  LIBDIR="$UNPACKED/lib"
  DATA="$UNPACKED/data/fashion-mnist"
fi
if [ ! -x "$BIN/test_cuda" ]; then
  echo "no gpu-bundle/bin.tar.xz: run bench/gpu/prepare.sh on the CPU machine and carry gpu-bundle" | tee "$OUT/summary.md"
  exit 1
fi

# ---------------------------------------------------------------- environment and libraries
# The bundle's own libstdc++/libgomp/libz first; the CUDA libraries from the toolkit or, failing
# that, from PyTorch's nvidia-* wheels.
# PyTorch (the steps and conv_layout stages) runs with this machine's own library path: the bundle's
# libstdc++ may be older than what torch was built against, and torch brings its own CUDA libraries.
export MINIDL_PY_LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}"
LIBS=""
for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && LIBS="$LIBS:$d"
done
# PyTorch's nvidia-* wheels: nvidia/<name>/lib (CUDA 12 wheels) or nvidia/cu13/lib (CUDA 13 wheels).
for d in $(python3 -c 'import nvidia; print(" ".join(nvidia.__path__))' 2>/dev/null); do
  for l in $(find "$d" -name 'lib*.so*' \( -name 'libcudnn.so*' -o -name 'libcublas*.so*' -o -name 'libcudart.so*' -o -name 'libnccl.so*' \) -printf '%h\n' 2>/dev/null | sort -u); do
    LIBS="$LIBS:$l"
  done
done
CUDA_LIBS="${LIBS#:}"
export LD_LIBRARY_PATH="$LIBDIR:$CUDA_LIBS:${MINIDL_PY_LD_LIBRARY_PATH}"

# ---------------------------------------------------------------- do the bundled programs load?
# A program built on the CPU machine may not load on this one (an older C library or libstdc++ than
# the bundle's, a library the bundle lacks): ldd then reports "not found" for something that is not a
# CUDA library (those come from this machine; no rebuild would help). Only then, or when
# MINIDL_GPU_REBUILD=1 asks, the programs are built here (bench/gpu/rebuild.sh, 16 cores: minutes).
unloadable=$(for b in "$BIN"/*; do ldd "$b" 2>&1 | grep "not found" | grep -v -E "libcud|libcublas|libnccl" | sed "s|^|$(basename "$b"): |"; done)
if [ -n "$unloadable" ] || [ "${MINIDL_GPU_REBUILD:-0}" = 1 ]; then
  { echo "bundled programs do not load here (or MINIDL_GPU_REBUILD=1):"; echo "${unloadable:-(forced)}"; } | tee "$OUT/rebuild.log"
  t=$(date +%s)
  if built=$(timeout --signal=KILL 420 bench/gpu/rebuild.sh "${TMPDIR:-/tmp}/minidl-gpu-build" 2>>"$OUT/rebuild.log" | tail -1) &&
     [ -x "$built/test_cuda" ]; then
    BIN="$built"
    export LD_LIBRARY_PATH="$CUDA_LIBS:${MINIDL_PY_LD_LIBRARY_PATH}"
    STAGES+=("rebuild 0 $(($(date +%s) - t))")
  else
    STAGES+=("rebuild 1 $(($(date +%s) - t))")
    echo "the rebuild failed (rebuild.log): running the bundled programs anyway" | tee -a "$OUT/rebuild.log"
  fi
  echo "== rebuild: $(($(date +%s) - t))s, programs from $BIN" | tee -a "$OUT/rebuild.log"
  pack
fi
{
  echo "# $(date -u)"
  cat "$BUNDLE/MANIFEST" 2>/dev/null | head -2
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || echo "nvidia-smi not found"
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  for b in "$BIN"/*; do echo "== ldd $(basename "$b")"; ldd "$b" | grep -E "cuda|cublas|cudnn|not found"; done
  command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || echo "no compute-sanitizer"
  LD_LIBRARY_PATH="$MINIDL_PY_LD_LIBRARY_PATH" python3 -c \
    'import torch; print("python3: torch", torch.__version__, "CUDA", torch.version.cuda, "GPU", torch.cuda.is_available())' ||
    echo "python3 has no usable torch: the steps and conv_layout stages will have no PyTorch side"
} >"$OUT/env.log" 2>&1
pack
if grep -q "not found" "$OUT/env.log"; then echo "MISSING LIBRARIES (see env.log):"; grep "not found" "$OUT/env.log" | sort -u; fi

export MINIDL_EXPECT_GPU=1
# ---------------------------------------------------------------- tests
stage coverage 10 "$BIN/test_kernel_coverage"
stage test_cuda 30 "$BIN/test_cuda" "[cuda]" --durations yes
stage test_cuda_cnn 30 "$BIN/test_cuda_cnn" "[cuda]" --durations yes
stage test_cuda_deferred 12 "$BIN/test_cuda_deferred_errors" --durations yes
stage test_cuda_elsewhere 30 "$BIN/test_cuda_elsewhere" "[cuda]" --durations yes
# A rebuild here has no MPI, so no test_dist_nccl: its stage then says so instead of failing to start.
if [ -x "$BIN/test_dist_nccl" ]; then
  stage nccl 15 "$BIN/test_dist_nccl" "[nccl]" --durations yes
else
  echo "no test_dist_nccl (built here without MPI): nccl stage not run" | tee -a "$OUT/env.log"
fi

SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
if [ -n "$SAN" ]; then
  # The training cases are the slow ones under the sanitizer: kernels only here.
  stage memcheck_cuda 28 "$SAN" --tool memcheck --error-exitcode 9 "$BIN/test_cuda" "[cuda]~[train]"
  stage memcheck_cuda_cnn 28 "$SAN" --tool memcheck --error-exitcode 9 "$BIN/test_cuda_cnn" "[cuda]~[train]"
  # Shared-memory races in the block reductions (reduce.cu, block_reduce.cuh) and softmax.cu.
  stage racecheck_reduce 12 "$SAN" --tool racecheck --error-exitcode 9 "$BIN/test_cuda" "[cuda][reduce]"
  stage racecheck_softmax 10 "$SAN" --tool racecheck --error-exitcode 9 "$BIN/test_cuda" "[cuda][softmax]"
  # ... and in batch norm's split channel sums (batch_norm.cu).
  stage racecheck_norm 15 "$SAN" --tool racecheck --error-exitcode 9 "$BIN/test_cuda_cnn" "[cuda][norm]"
else
  echo "no compute-sanitizer: memcheck and racecheck stages not run" | tee -a "$OUT/env.log"
fi

# ---------------------------------------------------------------- LeNet-5, 2 epochs per precision
for amp in off fp16 bf16; do
  name=lenet_$([ $amp = off ] && echo f32 || echo $amp)
  stage "$name" 25 "$BIN/minidl-train" --model lenet --dataset fashion-mnist --data "$DATA" \
    --epochs 2 --lr-schedule cosine --batch-size 64 --device cuda --amp $amp --no-progress --json "$OUT/$name.json"
done

# ---------------------------------------------------------------- against PyTorch on this GPU
# Each stops starting processes when its budget (the last argument) is nearly spent, and then writes
# its table: the stage limit is only for a hang.
stage steps 100 bench/gpu/versus_torch.sh steps "$BIN" "$OUT" 90
stage conv_layout 36 bench/gpu/versus_torch.sh conv_layout "$BIN" "$OUT" 33
# Where ResNet-20's step spends host time (bench/host_sampler.h); read back on the CPU machine with
# bench/gpu/host_profile.py and the unstripped build-gpu-bundle/bench/minidl-bench-step.
# The whole fp16 step with cuDNN's timed algorithm search (the default) and with its heuristics.
for search in exhaustive heuristic; do
  stage "resnet20_fp16_$search" 15 env MINIDL_CUDNN_SEARCH=$search "$BIN/minidl-bench-step" --one resnet20 fp16 60 3 --device cuda
done
# Device time per kernel over 2 timed fp16 steps (the bench marks them with cudaProfilerStart/Stop),
# when Nsight Compute is there; read back with bench/gpu/kernel_times.py.
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
if [ -n "$NCU" ]; then
  stage kernel_times 60 "$NCU" --clock-control none --profile-from-start off --launch-count 3000 \
    --metrics gpu__time_duration.sum --csv --log-file "$OUT/kernel_times_resnet20_fp16.csv" \
    "$BIN/minidl-bench-step" --one resnet20 fp16 2 1 --device cuda
  if [ -f "$OUT/kernel_times_resnet20_fp16.csv" ]; then
    python3 bench/gpu/kernel_times.py "$OUT/kernel_times_resnet20_fp16.csv" 2 30 >>"$OUT/kernel_times.log" 2>&1
    pack
  fi
else
  echo "no ncu: kernel_times stage not run" | tee -a "$OUT/env.log"
fi
for prec in f32 fp16; do
  stage "host_profile_$prec" 12 env MINIDL_BENCH_SAMPLE="$OUT/host_profile_resnet20_$prec.txt" \
    "$BIN/minidl-bench-step" --one resnet20 $prec 40 1 --device cuda
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
      memcheck_*|racecheck_*) res=$(grep -v "^== " "$log" | grep -m1 -E "ERROR SUMMARY|RACECHECK SUMMARY|error") ;;
      steps|conv_layout) res=$(grep -m1 "^RESULT" "$log" | sed 's/^RESULT //') ;;
      kernel_times) res=$(grep -m1 "kernels, " "$log") ;;
      resnet20_fp16_*) res=$(grep -o 'samples_per_s": \[[0-9., ]*\|host_syncs_per_step": [0-9.]*' "$log" | tr '\n' ' ') ;;
      host_profile_*) res=$(grep -o 'samples_per_s": \[[0-9.]*' "$log" | sed 's/.*\[/samples\/s under the sampler: /') ;;
      *) res=$(grep -E "All tests passed|test cases:|assertions:" "$log" | tail -2 | tr '\n' ' ') ;;
    esac
    echo "| $name | $rc | $secs | ${res:-see $name.log} |"
  done
  echo
  # LeNet's test accuracy under autocast against f32, in points (the target: within 1).
  acc() { grep -o '"test_accuracy": *[0-9.]*' "$OUT/lenet_$1.json" 2>/dev/null | grep -o '[0-9.]*$'; }
  f32=$(acc f32)
  for p in fp16 bf16; do
    a=$(acc $p)
    [ -n "$f32" ] && [ -n "$a" ] && echo "LeNet $p test accuracy $a, f32 $f32: $(python3 -c "print(f'{100 * ($a - $f32):+.2f}')") points"
  done
  echo
  echo "total: $(($(date +%s) - T0))s"
  for f in steps.md conv_layout.md; do
    [ -f "$OUT/$f" ] && { echo; sed 's/^# /## /' "$OUT/$f"; }
  done
} >"$OUT/summary.md"
pack
if [ "$OUT" != "$RESULTS" ]; then
  for f in summary.md steps.md conv_layout.md; do [ -f "$OUT/$f" ] && cp "$OUT/$f" "$RESULTS/"; done
fi
cat "$OUT/summary.md"
