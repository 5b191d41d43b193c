#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds twice (plain, and with
# AddressSanitizer + UndefinedBehaviorSanitizer) and runs ctest on both builds,
# then builds the libFuzzer targets with clang and fuzzes each for
# LTR_FUZZ_SECONDS (default 90, all targets at once; 0 skips the fuzzing,
# docs/fuzzing.md).
#
# Each next build runs beside the tests before it, at nice 19: the tests wait
# (processes starting, polls, sleeps) more than they compute, and at ctest -j2
# they left the two CPUs idle a third of the time (docs/benchmarks.md, "The
# test suite's time (session 35)"); the builds took 4 of the run's 21 minutes
# after them. A build's failure is said, with its output, once the tests
# beside it have finished.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# Twice as many tests as CPUs: ctest -j2 alone left the CPUs half idle (336 s
# of wall for 328 s of CPU); beside the next build, -j4 took the plain tests
# from 404 to 347 s, and the ASan tests stayed CPU-bound (600 and 612 s:
# docs/benchmarks.md "The test suite's time (session 37)").
jobs=$((2 * $(nproc)))
started=$SECONDS
stage() { echo "== $1 (at $((SECONDS - started)) s)"; }

# Builds DIR with the rest of the arguments in the background, niced, its
# output kept in DIR.log; `finish DIR` waits for it and fails with that output.
declare -A building=()
background_build() {
  local dir=$1; shift
  setsid nice -n 19 scripts/build.sh "$dir" "$@" >"$dir.log" 2>&1 & # its own group: killed whole
  building[$dir]=$!
}
finish() {
  if ! wait "${building[$1]}"; then
    cat "$1.log" >&2
    echo "test.sh: building $1 failed (its output above)" >&2
    exit 1
  fi
  unset "building[$1]"
}
stop_builds() { local p; for p in "${building[@]}"; do kill -- "-$p" 2>/dev/null || true; done; }
trap stop_builds EXIT

# The four fuzz targets at once for 90 s on two CPUs: each gets 45 s of a CPU
# (three had 60 s; run one after another, none runs alone beside an idle
# CPU, and the stage stays about 93 s of wall time).
fuzz_seconds=${LTR_FUZZ_SECONDS:-90}
stage "build (warnings are errors)"
scripts/build.sh build
stage "tests; the ASan + UBSan build beside them"
background_build build-asan -DLTR_SANITIZE=ON
ctest --test-dir build --output-on-failure -j"$jobs" --timeout 300
finish build-asan
stage "tests under ASan + UBSan"
if [ "$fuzz_seconds" -gt 0 ]; then
  echo "   (the fuzz build, clang with libFuzzer + ASan + UBSan, beside them)"
  background_build build-fuzz -DLTR_FUZZ=ON -DLTR_FUZZ_SECONDS="$fuzz_seconds" \
    -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14
fi
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j"$jobs" --timeout 600
if [ "$fuzz_seconds" -gt 0 ]; then
  finish build-fuzz
  stage "fuzzing, $fuzz_seconds s per target"
  targets=$(ctest --test-dir build-fuzz -N -L fuzz | grep -c 'Test *#')
  ctest --test-dir build-fuzz --output-on-failure -L fuzz -j"$targets"
fi
stage "done"
