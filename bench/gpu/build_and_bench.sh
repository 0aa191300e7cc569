#!/usr/bin/env bash
# bench/gpu/build_and_bench.sh: builds minidl ON the GPU machine and compares the MLP step with
# PyTorch (issue 6), in one device call. The CUDA check itself (tests, sanitizer, LeNet) is
# bench/gpu/run.sh over the bundle of bench/gpu/prepare.sh, which needs no build there.
#
# NOT YET RUN: written in a session that had no GPU machine (nothing in it could execute CUDA code).
# The first session lent an H200 should run it, fix what fails, rerun, and quote $OUT/summary.md.
#
# Before the call, once, on this (CPU) machine, from the repo root:
#   bench/gpu/populate_deps.sh        # Eigen, Catch2 (headers + CMake files), zlib headers and
#                                     # Fashion-MNIST into the git-ignored .deps/ (~42 MB)
# The call:  run(command="bench/gpu/build_and_bench.sh", carry=[".deps"], timeout_s=540)
#
# Stages, each under its own time limit (one slow stage cannot eat the others; every log comes
# back even when a stage fails); about 6-7 minutes in all, 8 at most:
#   1. environment: GPU, driver, nvcc, g++, cmake, torch, where cuBLAS/cuDNN are     -> env.log
#   2. configure + build for sm_90: the CMake project bench/gpu (library, test_cuda,
#      minidl-train, minidl-gpu-step)                                                 -> build.log
#   3. the [cuda] tests                                                               -> test_cuda.log
#   4. MLP 784-256-256-10 on Fashion-MNIST, 3 epochs, --device cuda, --amp fp16 / off -> train_fp16.log, train_f32.log
#   5. the training step against PyTorch, batch 128 and 1024, fp16 autocast and f32   -> step.log
#   6. summary.md: test result, accuracies, the step-time table                        -> summary.md
# Targets (issue 6): every [cuda] test passes; fp16 test accuracy within 1 point of f32; minidl's
# step at least as fast as PyTorch's with AMP at batch 1024, and faster at batch 128.
# Outside the device tool (OUT unset) it writes to out/gpu/.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
OUT="${OUT:-$ROOT/out/gpu}"
mkdir -p "$OUT"
BUILD="$ROOT/build-gpu"
DEPS="$ROOT/.deps"
JOBS="$(nproc)"
T0=$(date +%s)
declare -A STATUS

# stage NAME LIMIT_S COMMAND: runs COMMAND under `timeout`, logs to $OUT/NAME.log, records its status.
stage() {
  local name=$1 limit=$2
  shift 2
  local t=$(date +%s)
  echo "== $name (limit ${limit}s, at +$((t - T0))s)" | tee -a "$OUT/$name.log"
  timeout --signal=KILL "$limit" bash -c "$*" >>"$OUT/$name.log" 2>&1
  local rc=$?
  STATUS[$name]=$rc
  echo "== $name: exit $rc after $(($(date +%s) - t))s" | tee -a "$OUT/$name.log"
  return $rc
}

# ---------------------------------------------------------------- 1. environment
CMAKE_EXTRA=()
{
  echo "# $(date -u)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv || true
  nvcc --version | tail -2 || true
  g++ --version | head -1 || true
  cmake --version | head -1 || true
  ninja --version || true
  python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)' || true
  ls /usr/local/cuda/lib64 2>/dev/null | grep -E '^lib(cublas|cudnn|cudart)\.so' || echo "no cuBLAS/cuDNN in /usr/local/cuda/lib64"
  ls "$DEPS" || echo "MISSING .deps: run bench/gpu/populate_deps.sh here and carry .deps"
} >"$OUT/env.log" 2>&1

# cuDNN (linked, not yet used by any kernel) and, if the toolkit lacks it, cuBLAS: take them from
# PyTorch's pip wheels (nvidia-cudnn-cu13, nvidia-cublas) when /usr/local/cuda has none.
pip_lib_dir() { python3 -c "import nvidia.$1 as m; print(list(m.__path__)[0])" 2>/dev/null; }
if ! ls /usr/local/cuda/include/cudnn.h /usr/include/cudnn.h >/dev/null 2>&1; then
  d=$(pip_lib_dir cudnn)
  lib=$(ls "$d"/lib/libcudnn.so* 2>/dev/null | head -1)
  if [ -n "$lib" ]; then
    CMAKE_EXTRA+=("-DMINIDL_CUDNN_LIB=$lib" "-DMINIDL_CUDNN_INCLUDE=$d/include")
    export LD_LIBRARY_PATH="$d/lib:${LD_LIBRARY_PATH:-}"
    echo "cuDNN from pip: $lib" >>"$OUT/env.log"
  fi
fi
if ! ls /usr/local/cuda/include/cublas_v2.h >/dev/null 2>&1; then
  d=$(pip_lib_dir cublas)
  if [ -n "$d" ]; then
    CMAKE_EXTRA+=("-DCUDA_cublas_LIBRARY=$(ls "$d"/lib/libcublas.so* | head -1)"
                  "-DCUDA_cublasLt_LIBRARY=$(ls "$d"/lib/libcublasLt.so* | head -1)"
                  "-DCMAKE_CUDA_FLAGS=-I$d/include" "-DCMAKE_CXX_FLAGS=-I$d/include")
    export LD_LIBRARY_PATH="$d/lib:${LD_LIBRARY_PATH:-}"
    echo "cuBLAS from pip: $d" >>"$OUT/env.log"
  fi
fi
# zlib: the system's headers if present, else the carried ones with the runtime library.
if [ ! -f /usr/include/zlib.h ]; then
  zl=$(ldconfig -p | awk '/libz\.so\.1 .*x86-64/ {print $NF; exit}')
  CMAKE_EXTRA+=("-DZLIB_INCLUDE_DIR=$DEPS/include" "-DZLIB_LIBRARY=$zl")
  echo "zlib: carried headers, $zl" >>"$OUT/env.log"
fi
GEN=()
command -v ninja >/dev/null && GEN=(-G Ninja)
echo "cmake extra: ${CMAKE_EXTRA[*]:-none}" >>"$OUT/env.log"

# ---------------------------------------------------------------- 2. build
q() { [ $# -gt 0 ] && printf '%q ' "$@"; return 0; }
stage build 240 "cmake -S bench/gpu -B $(q "$BUILD") $(q "${GEN[@]}") -DCMAKE_BUILD_TYPE=Release -DMINIDL_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=$(q "$DEPS") -DMINIDL_BUILD_BENCH=OFF \
  -DCMAKE_POLICY_VERSION_MINIMUM=3.5 $(q "${CMAKE_EXTRA[@]}") && \
  cmake --build $(q "$BUILD") -j $JOBS --target test_cuda minidl-train minidl-gpu-step"
BIN="$BUILD/minidl"

# ---------------------------------------------------------------- 3. tests
if [ "${STATUS[build]}" = 0 ]; then
  stage test_cuda 60 "$(q "$BIN/tests/test_cuda") '[cuda]' --durations yes"
  # ---------------------------------------------------------------- 4. training
  for amp in fp16 off; do
    name=train_$([ $amp = off ] && echo f32 || echo fp16)
    stage "$name" 50 "$(q "$BIN/apps/minidl-train") --model mlp --dataset fashion-mnist --data $(q "$DEPS/fashion-mnist") \
      --epochs 3 --batch-size 128 --device cuda --amp $amp --workers 2 --no-progress"
  done
  # ---------------------------------------------------------------- 5. step time vs PyTorch
  stage step 90 "for b in 128 1024; do for a in fp16 off; do $(q "$BUILD/minidl-gpu-step") --batch \$b --amp \$a || true; done; done; \
    PYTHONUNBUFFERED=1 python3 bench/gpu/torch_mlp.py --batch 128 1024 --amp fp16 off"
fi

# ---------------------------------------------------------------- 6. summary
python3 - "$OUT" <<'PY' || echo "summary failed" >>"$OUT/summary.md"
import json, os, re, sys
out = sys.argv[1]
def read(name):
    p = os.path.join(out, name)
    return open(p, errors="replace").read() if os.path.exists(p) else ""
lines = ["# minidl CUDA backend on the GPU machine (bench/gpu/build_and_bench.sh)", ""]
env = read("env.log").splitlines()
lines += ["```"] + env[:8] + ["```", ""]
stages = re.findall(r"== (\w+): exit (\d+) after (\d+)s", "".join(read(f) for f in sorted(os.listdir(out)) if f.endswith(".log")))
lines += ["| stage | exit | seconds |", "| --- | --- | --- |"] + [f"| {n} | {rc} | {s} |" for n, rc, s in stages] + [""]
t = read("test_cuda.log")
m = re.search(r"(All tests passed.*|test cases:.*\n.*assertions:.*)", t)
lines += ["[cuda] tests: " + (m.group(1).replace("\n", "; ") if m else "no result (see test_cuda.log)"), ""]
acc = {}
for name, label in (("train_fp16.log", "fp16"), ("train_f32.log", "f32")):
    js = [l for l in read(name).splitlines() if l.startswith("{")]
    if js:
        try:
            acc[label] = json.loads(js[-1])
        except ValueError:
            pass
if acc:
    lines += ["| MLP Fashion-MNIST, 3 epochs | test accuracy | train samples/s | skipped steps | final scale |",
              "| --- | --- | --- | --- | --- |"]
    for label, j in acc.items():
        lines.append(f"| {label} | {j.get('test_accuracy', float('nan')):.4f} | {j.get('train_samples_per_s', 0):.0f} "
                     f"| {j.get('skipped_steps', '')} | {j.get('final_scale', '')} |")
    if "fp16" in acc and "f32" in acc:
        d = 100 * (acc["fp16"]["test_accuracy"] - acc["f32"]["test_accuracy"])
        lines.append(f"\nfp16 - f32 accuracy: {d:+.2f} points (target: within 1)")
    lines.append("")
res = {}
for l in read("step.log").splitlines():
    if l.startswith("RESULT"):
        kv = dict(x.split("=", 1) for x in l.split()[1:])
        res[(kv["framework"], int(kv["batch"]), kv["amp"])] = kv
if res:
    lines += ["| batch | amp | minidl ms/step | torch ms/step | torch/minidl | minidl cudaMalloc calls (timed steps) |",
              "| --- | --- | --- | --- | --- | --- |"]
    for b in (128, 1024):
        for a in ("fp16", "off"):
            mm, tt = res.get(("minidl", b, a)), res.get(("torch", b, a))
            ms = float(mm["ms_per_step"]) if mm else float("nan")
            ts = float(tt["ms_per_step"]) if tt else float("nan")
            lines.append(f"| {b} | {a} | {ms:.3f} | {ts:.3f} | {ts / ms if mm and tt else float('nan'):.2f}x "
                         f"| {mm['device_allocs'] if mm else ''} |")
open(os.path.join(out, "summary.md"), "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
echo "total: $(($(date +%s) - T0))s"
