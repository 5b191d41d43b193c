#!/usr/bin/env bash
# Runs one libFuzzer target for a bounded time (the fuzz build's ctest test):
#   run.sh TARGET SECONDS WORKDIR SEEDS REGRESSIONS
# New inputs go to WORKDIR/corpus (the committed seeds stay untouched), any
# crash, leak or timeout to WORKDIR/artifacts; copy such a file to
# tests/fuzz/regressions/<target>/ and fix the code (docs/fuzzing.md).
set -euo pipefail
target=$1 seconds=$2 work=$3 seeds=$4 regressions=$5
mkdir -p "$work/corpus" "$work/artifacts"
exec "$target" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 -malloc_limit_mb=256 -max_len=65536 \
  -print_final_stats=1 -artifact_prefix="$work/artifacts/" \
  "$work/corpus" "$seeds" "$regressions"
