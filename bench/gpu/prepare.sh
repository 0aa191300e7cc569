#!/usr/bin/env bash
# bench/gpu/prepare.sh: builds, on this (CPU-only) machine, everything the GPU check needs into the
# git-ignored folder gpu-bundle/, so the device call only runs binaries (the GPU machine's time is
# scarce; it builds only when they fail to load there: bench/gpu/rebuild.sh). Run from anywhere;
# ~5 minutes with a warm ccache.
#
#   gpu-bundle/bin.tar.xz   bin/, lib/ and data/, packed:
#     bin/   test_cuda, test_cuda_cnn, test_cuda_deferred_errors, test_cuda_elsewhere (the [cuda] cases of
#            the other test files), test_kernel_coverage, test_dist_nccl, minidl-train,
#            minidl-bench-step (sm_90, stripped)
#     lib/   the non-CUDA shared libraries they load (libstdc++, libgcc_s, libgomp, libz, oneDNN, and
#                     Open MPI's libraries, which the binaries link but a world of one never starts):
#                     the GPU machine may have older or none. The CUDA libraries (cudart, cuBLAS,
#                     cuBLASLt, cuDNN, NCCL: over 1 GB) are NOT bundled; run.sh finds them there
#                     (toolkit or PyTorch's nvidia-* wheels) and reports any that are missing.
#     data/fashion-mnist/   the 4 Fashion-MNIST files, uncompressed
#   gpu-bundle/buildkit.tar.xz      headers and CMake files for bench/gpu/rebuild.sh (a fallback build there)
#   gpu-bundle/MANIFEST              git commit, build flags, sizes, ldd of every binary
#
# Then: run(command="bench/gpu/run.sh", carry=["gpu-bundle"], timeout_s=480). The bundle must stay
# under the 64 MiB a device call carries; this script fails when it does not.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
BUILD="$ROOT/build-gpu-bundle"
BUNDLE="$ROOT/gpu-bundle"
TARGETS=(test_cuda test_cuda_cnn test_cuda_deferred_errors test_cuda_elsewhere test_kernel_coverage test_dist_nccl minidl-train
         minidl-bench-step)

die() { echo "prepare.sh: $*" >&2; exit 1; }

# shellcheck disable=SC1091
source scripts/bootstrap.sh >/dev/null 2>&1 || true
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-/work}" CCACHE_DIR="${CCACHE_DIR:-/work/.ccache}"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)

# Portable across x86-64 CPUs: the GPU machine's CPU is not this one (no -march=native).
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DMINIDL_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DMINIDL_NATIVE=OFF \
  "${launcher[@]}" >/dev/null
cmake --build "$BUILD" -j"${JOBS:-2}" --target "${TARGETS[@]}"

rm -rf "$BUNDLE"
mkdir -p "$BUNDLE/bin" "$BUNDLE/lib" "$BUNDLE/data/fashion-mnist"
for t in "${TARGETS[@]}"; do
  f=$(find "$BUILD" -name "$t" -type f -perm -u+x | head -1)
  [ -n "$f" ] || die "built binary $t not found under $BUILD"
  strip -o "$BUNDLE/bin/$t" "$f"
done

# Every shared library outside the CUDA toolkit and the C library itself (oneDNN, Open MPI, libstdc++,
# libgomp, ...): the GPU machine's image has none of Debian's, or other versions.
for lib in $(ldd "$BUNDLE"/bin/* | awk '/=>/ {print $3}' | sort -u); do
  case "$lib" in
    /usr/local/cuda*) continue ;;
  esac
  case "$(basename "$lib")" in
    libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|ld-linux*) ;;
    *) cp -L "$lib" "$BUNDLE/lib/" ;;
  esac
done

# Fashion-MNIST: data/fashion-mnist/ as scripts/setup_data.sh prepares it.
if ! ls data/fashion-mnist/*-ubyte.gz >/dev/null 2>&1; then
  echo "prepare.sh: data/fashion-mnist/ is missing; running scripts/setup_data.sh" >&2
  bash scripts/setup_data.sh || die "no Fashion-MNIST data (scripts/setup_data.sh failed)"
fi
# Uncompressed here (the loader reads either) so that the archive's xz does better than gzip did:
# the bundle must stay under the 64 MiB a device call carries.
for f in data/fashion-mnist/*-ubyte.gz; do zcat "$f" >"$BUNDLE/data/fashion-mnist/$(basename "$f" .gz)"; done

{
  echo "commit $(git rev-parse HEAD)$(git diff --quiet || echo ' (dirty)')"
  echo "built $(date -u) on $(uname -n): CMAKE_CUDA_ARCHITECTURES=90 MINIDL_NATIVE=OFF Release"
  du -ab "$BUNDLE" | sort -k2
  for b in "$BUNDLE"/bin/*; do echo "== ldd $(basename "$b")"; ldd "$b"; done
} >"$BUNDLE/MANIFEST"

# The bundled binaries must start here and get as far as looking for a GPU.
export LD_LIBRARY_PATH="$BUNDLE/lib:${LD_LIBRARY_PATH:-}"
"$BUNDLE/bin/test_kernel_coverage" >/dev/null || die "bundled test_kernel_coverage fails here"
out=$("$BUNDLE/bin/test_cuda_cnn" 2>&1 || true)
echo "$out" | grep -q "no device is available\|All tests passed" || die "bundled test_cuda_cnn did not reach the GPU check: $out"
set +e
out=$("$BUNDLE/bin/minidl-train" --device cuda --model lenet --data "$BUNDLE/data/fashion-mnist" --epochs 1 2>&1)
rc=$?
set -e
if [ $rc -eq 2 ] && echo "$out" | grep -q "no usable CUDA GPU"; then
  echo "bundled minidl-train starts and refuses --device cuda without a GPU, as it should"
elif [ $rc -ne 0 ]; then
  die "bundled minidl-train failed (exit $rc): $out"
fi
# The step bench: its CPU mode runs here, its CUDA modes refuse without a GPU (run.sh's steps and
# conv_layout stages need both to start).
out=$("$BUNDLE/bin/minidl-bench-step" --one mlp f32 5 1 2>&1) || die "bundled minidl-bench-step --one failed here: $out"
echo "$out" | grep -q '"samples_per_s": \[[0-9]' || die "bundled minidl-bench-step --one printed no result: $out"
for mode in "--suite mlp:128 fp16 0.1 1" "--conv-layout 0.1 1"; do
  set +e
  # shellcheck disable=SC2086
  out=$("$BUNDLE/bin/minidl-bench-step" $mode --device cuda 2>&1)
  rc=$?
  set -e
  [ $rc -eq 2 ] && echo "$out" | grep -q "no usable CUDA GPU" ||
    die "bundled minidl-bench-step $mode --device cuda did not refuse cleanly without a GPU (exit $rc): $out"
done
echo "bundled minidl-bench-step runs --one on the CPU and refuses --device cuda without a GPU, as it should"
# The build kit for bench/gpu/rebuild.sh, used on the GPU machine only if the bundled binaries do not
# load there: the headers and CMake package files of the Debian -dev packages minidl builds with (its
# image has none of them), laid out as under / so that their relocatable package files find them.
tar -C / -chf - usr/include/eigen3/Eigen usr/include/eigen3/signature_of_eigen3_matrix_library \
  usr/share/eigen3/cmake usr/include/catch2 usr/lib/cmake/Catch2 usr/lib/libCatch2WithMain.a usr/include/CLI usr/share/cmake/CLI11 \
  usr/include/zlib.h usr/include/zconf.h usr/lib/x86_64-linux-gnu/libz.so |
  xz -T2 -9 >"$BUNDLE/buildkit.tar.xz" || die "could not pack the build kit (are the -dev packages installed?)"
# Binaries, libraries and data travel as one xz archive (binaries ~5x smaller, the data 15% smaller
# than gzip's); run.sh unpacks it.
tar -C "$BUNDLE" -cf - bin lib data | xz -T2 -9 >"$BUNDLE/bin.tar.xz"
rm -rf "$BUNDLE/bin" "$BUNDLE/lib" "$BUNDLE/data"
bytes=$(du -sb "$BUNDLE" | cut -f1)
echo "gpu-bundle: $((bytes / 1048576)) MiB ($bytes bytes)"
[ "$bytes" -lt $((64 * 1048576)) ] || die "gpu-bundle is $bytes bytes, over the 64 MiB a device call carries"
echo "gpu-bundle ready: run(command=\"bench/gpu/run.sh\", carry=[\"gpu-bundle\"], timeout_s=480)"
