#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds twice (plain, and with
# AddressSanitizer + UndefinedBehaviorSanitizer) and runs ctest on both builds.
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
