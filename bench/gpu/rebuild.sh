#!/usr/bin/env bash
# bench/gpu/rebuild.sh BUILD_DIR: builds the GPU check's programs on the GPU machine itself, for when
# the binaries that bench/gpu/prepare.sh bundled do not load there (a C library, libstdc++ or driver
# the bundle was not built for). run.sh calls it only then, or when MINIDL_GPU_REBUILD=1 asks for it.
#
# The GPU machine's image has nvcc, CMake, ninja and a C++ compiler but none of Debian's -dev packages,
# so prepare.sh packs the headers and CMake package files minidl needs (Eigen, Catch2, CLI11, zlib)
# into gpu-bundle/buildkit.tar.xz. Optional parts are turned off: oneDNN (CPU convolutions only) and
# MPI, so test_dist_nccl (which needs MPI for NCCL's unique id) is not built; run.sh skips its stage.
# Prints the folder that holds the built programs as its last line.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="${1:?usage: rebuild.sh BUILD_DIR}"
KIT_ARCHIVE="$ROOT/gpu-bundle/buildkit.tar.xz"
die() { echo "rebuild.sh: $*" >&2; exit 1; }

[ -f "$KIT_ARCHIVE" ] || die "no $KIT_ARCHIVE: run bench/gpu/prepare.sh on the CPU machine"
NVCC=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null | head -1) || true
[ -n "$NVCC" ] || die "no nvcc on this machine: cannot rebuild"
command -v cmake >/dev/null || die "no cmake on this machine: cannot rebuild"
command -v c++ >/dev/null || command -v g++ >/dev/null || die "no C++ compiler on this machine: cannot rebuild"

KIT="$BUILD/kit"
mkdir -p "$KIT"
tar -C "$KIT" -xJf "$KIT_ARCHIVE"
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
# The kit first, so that its packages win over anything half-installed on the machine.
cmake -S "$ROOT" -B "$BUILD" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DMINIDL_CUDA=ON \
  -DCMAKE_CUDA_COMPILER="$NVCC" -DCMAKE_CUDA_ARCHITECTURES=90 -DMINIDL_NATIVE=OFF \
  -DMINIDL_MPI=OFF -DMINIDL_NCCL=OFF -DMINIDL_DNNL=OFF \
  -DCMAKE_PREFIX_PATH="$KIT/usr" -DZLIB_ROOT="$KIT/usr" >"$BUILD/configure.log" 2>&1 ||
  { tail -30 "$BUILD/configure.log" >&2; die "configure failed (log: $BUILD/configure.log)"; }
TARGETS=(test_cuda test_cuda_cnn test_cuda_deferred_errors test_cuda_elsewhere test_kernel_coverage minidl-train
         minidl-bench-step)
cmake --build "$BUILD" -j"$(nproc)" --target "${TARGETS[@]}" >"$BUILD/build.log" 2>&1 ||
  { tail -40 "$BUILD/build.log" >&2; die "build failed (log: $BUILD/build.log)"; }
BIN="$BUILD/programs"
mkdir -p "$BIN"
for t in "${TARGETS[@]}"; do
  f=$(find "$BUILD" -name "$t" -type f -perm -u+x -not -path "$BIN/*" | head -1)
  [ -n "$f" ] || die "built program $t not found under $BUILD"
  ln -sf "$f" "$BIN/$t"
done
echo "$BIN"
