#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, runs every test with CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
cd build
ctest --output-on-failure -j"$(nproc)" --timeout 600
# Then the same suite under ASan + UBSan (clang) and each fuzz target for 30 s (scripts/test_sanitize.sh).
cd ..
bash scripts/test_sanitize.sh
