#!/usr/bin/env bash
# Analysis speed: ltr analyze against heaptrack_print on traces of the same
# workload (bench/analyze/workload.c, N allocations). Prints events per
# second of each; the goal is ltr at least five times heaptrack_print.
# Usage: bench/analyze/analyze.sh [BUILD_DIR] [N]   (a benchmark, not a test)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}; n=${2:-2000000}
ltr=$build/bin/ltr; work=$build/bench/analyze_workload
tmp=$(mktemp -d /tmp/ltr-bench-analyze-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export LTR_RUNTIME_DIR=$tmp/rt
command -v heaptrack >/dev/null || { echo "heaptrack is not installed (scripts/install-deps.sh)"; exit 1; }

$ltr record --buffers 256 -o "$tmp/w.ltr" -- "$work" "$n" >/dev/null
(cd "$tmp" && heaptrack -o "$tmp/w.heaptrack" "$OLDPWD/$work" "$n" >/dev/null 2>&1)
ht=$(ls "$tmp"/w.heaptrack*)

now() { date +%s.%N; }
t0=$(now); $ltr analyze "$tmp/w.ltr" --format json > "$tmp/a.json"; t1=$(now)
heaptrack_print "$ht" > "$tmp/h.txt"; t2=$(now)
events=$(grep -o '"heap_events":[0-9]*' "$tmp/a.json" | cut -d: -f2)
lost=$(grep -o '"events_lost":[0-9]*' "$tmp/a.json" | cut -d: -f2)
awk -v e="$events" -v l="$lost" -v a="$(echo "$t1 - $t0" | bc)" -v h="$(echo "$t2 - $t1" | bc)" \
    -v ls="$(stat -c %s "$tmp/w.ltr")" -v hs="$(stat -c %s "$ht")" 'BEGIN {
  printf "workload: %d heap events (%d lost), trace %.1f MB, heaptrack file %.1f MB\n", e, l, ls/1e6, hs/1e6
  printf "ltr analyze:     %.3f s  %.2f M events/s\n", a, e/a/1e6
  printf "heaptrack_print: %.3f s  %.2f M events/s\n", h, e/h/1e6
  printf "ratio: ltr analyze is %.1f times as fast\n", h/a }'
