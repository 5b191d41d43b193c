#!/usr/bin/env bash
# Many threads allocating in bursts at once under `ltr record` with its
# default buffers (issue 17's goal: 1000 threads on 2 CPUs lose nothing).
# Prints the events the program made, what the trace holds and what it
# counted as lost, and the session's shared memory, which the goal wants
# bounded by CPUs and buffers, not threads. Not a test.
# Usage: bench/threads/run.sh [BUILD_DIR] [THREADS] [ROUNDS] [BURST]
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
threads=${2:-1000}; rounds=${3:-20}; burst=${4:-256}
ltr=$build/bin/ltr
tmp=$(mktemp -d /tmp/ltr-bench-threads-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export LTR_RUNTIME_DIR=$tmp/rt

out=$("$ltr" record -o "$tmp/t.ltr" -- "$build/bench/bursts" "$threads" "$rounds" "$burst" 2>"$tmp/err")
ops=$(echo "$out" | awk '/^ops / { print $2 }')
"$ltr" info "$tmp/t.ltr" >"$tmp/info"
written=$(awk '/^    events:/ { print $2; exit }' "$tmp/info")
lost=$(awk '/^    events:/ { print $4; exit }' "$tmp/info")
buffers=$(awk '/^buffers:/ { print $2 " x " $4 " bytes" }' "$tmp/info")
echo "workload: $threads threads x $rounds bursts x $burst malloc/free pairs, $(nproc) CPUs, buffers $buffers"
awk -v o="$ops" -v w="$written" -v l="$lost" 'BEGIN {
  printf "events made by the program: %d\n", o
  printf "in the trace: %d; counted as lost: %d (%.1f %%)\n", w, l, 100 * l / (w + l) }'
grep -i 'lost' "$tmp/err" | head -3 || true
