#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds twice (plain, and with
# AddressSanitizer + UndefinedBehaviorSanitizer) and runs ctest on both builds,
# then builds the libFuzzer targets with clang and fuzzes each for
# LTR_FUZZ_SECONDS (default 60; 0 skips the fuzzing, docs/fuzzing.md).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs=$(nproc)
echo "== build (warnings are errors)"
scripts/build.sh build
echo "== tests"
ctest --test-dir build --output-on-failure -j"$jobs" --timeout 300
echo "== build with ASan + UBSan"
scripts/build.sh build-asan -DLTR_SANITIZE=ON
echo "== tests under ASan + UBSan"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j"$jobs" --timeout 600
fuzz_seconds=${LTR_FUZZ_SECONDS:-60}
if [ "$fuzz_seconds" -gt 0 ]; then
  echo "== fuzz build (clang, libFuzzer + ASan + UBSan)"
  scripts/build.sh build-fuzz -DLTR_FUZZ=ON -DLTR_FUZZ_SECONDS="$fuzz_seconds" \
    -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14
  echo "== fuzzing, $fuzz_seconds s per target"
  ctest --test-dir build-fuzz --output-on-failure -L fuzz -j"$jobs"
fi
