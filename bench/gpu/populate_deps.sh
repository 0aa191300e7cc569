#!/usr/bin/env bash
# Fills the git-ignored folder .deps/ with what bench/gpu/build_and_bench.sh needs on the GPU machine, which
# has nvcc, CMake, ninja, g++ and PyTorch but no Eigen, Catch2, zlib headers or data, and cannot
# download anything. Run it here (a machine with libeigen3-dev, catch2, zlib1g-dev and the data
# prepared by scripts/setup_data.sh), from the repo root; ~42 MB, under the 64 MiB a device call
# may carry. Then: run(command="bench/gpu/build_and_bench.sh", carry=[".deps"], timeout_s=540).
#   .deps/include/{eigen3,catch2,zlib.h,zconf.h}   headers
#   .deps/share/eigen3/cmake, .deps/lib/cmake/Catch2   their CMake package files (relocatable)
#   .deps/fashion-mnist/*.gz                         the data set (real files, not links)
set -euo pipefail
cd "$(dirname "$0")/../.."
rm -rf .deps
mkdir -p .deps/include .deps/share .deps/lib/cmake .deps/fashion-mnist
cp -r /usr/include/eigen3 .deps/include/
cp -r /usr/share/eigen3 .deps/share/
cp -r /usr/include/catch2 .deps/include/
cp -r /usr/lib/cmake/Catch2 .deps/lib/cmake/
cp /usr/lib/libCatch2WithMain.a .deps/lib/  # only checked for existence by the CMake files
cp /usr/include/zlib.h /usr/include/zconf.h .deps/include/
cp -L data/fashion-mnist/*-ubyte.gz .deps/fashion-mnist/
du -sh .deps
