#!/usr/bin/env bash
# The sanitizer suite: one extra build (build-sanitize/) with clang 14, AddressSanitizer +
# UndefinedBehaviorSanitizer and the libFuzzer targets (tests/fuzz/), CUDA off. Runs the whole CTest
# suite under the sanitizers (MPI off: LeakSanitizer reports Open MPI's own allocations, e.g. in
# ompi_op_base_op_select, as leaks at exit of every rank; the 2-rank tests report themselves
# skipped), then every fuzz target for MINIDL_FUZZ_SECONDS (default 30) seconds
# from its seed corpus. scripts/test.sh calls it after the plain suite. Any sanitizer report, test
# failure or fuzzer finding fails it (a finding's input is kept under build-sanitize/fuzz-findings/).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bootstrap.sh
# clang 14, its runtime libraries (ASan, UBSan, libFuzzer: libclang-rt-14-dev) and LLVM's OpenMP.
minidl_need_packages clang-14 libclang-rt-14-dev libomp-14-dev

jobs="$(nproc)"
launcher=()
if command -v ccache >/dev/null 2>&1; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++-14 \
  -DMINIDL_CUDA=OFF -DMINIDL_MPI=OFF -DMINIDL_SANITIZE=ON -DMINIDL_FUZZ=ON -DMINIDL_BUILD_BENCH=OFF "${launcher[@]}" >/dev/null
cmake --build build-sanitize -j"$jobs"

# Stop at the first report of either sanitizer, with a stack; leaks are reported at exit.
export ASAN_OPTIONS="abort_on_error=1:detect_leaks=1:strict_string_checks=1:check_initialization_order=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
# One test is left out: the CIFAR-10 end-to-end run of minidl-train (9 training runs of the three
# CNNs, the slowest test at ~160 s unsanitized, many times that under ASan). Its code paths run
# sanitized in the CNN step test, the other minidl-train tests and the model tests.
(cd build-sanitize && ctest --output-on-failure -j"$jobs" --timeout 1200 \
  -E "minidl-train trains the CIFAR-10 models end to end")

seconds="${MINIDL_FUZZ_SECONDS:-30}"
findings="build-sanitize/fuzz-findings"
mkdir -p "$findings"
for target in fuzz_idx fuzz_idx_gz fuzz_cifar fuzz_safetensors fuzz_checkpoint fuzz_json fuzz_train_flags; do
  # New inputs go to a scratch copy: the committed corpus stays the small seed set.
  work="$(mktemp -d)"
  cp tests/fuzz/corpus/"$target"/* "$work"/
  echo "fuzzing $target for ${seconds}s"
  if ! build-sanitize/tests/fuzz/"$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -artifact_prefix="$findings/$target-" -print_final_stats=1 "$work" >"$findings/$target.log" 2>&1; then
    tail -n 60 "$findings/$target.log"
    echo "minidl: $target found a problem; the input is in $findings/"
    rm -rf "$work"
    exit 1
  fi
  grep -E "stat::number_of_executed_units|stat::new_units_added" "$findings/$target.log" | tr '\n' ' '
  echo
  rm -rf "$work"
done
