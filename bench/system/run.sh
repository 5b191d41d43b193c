#!/bin/sh
# bench/system/run.sh — the system provider's cost, as docs/benchmarks.md
# reports it: the time of one sample (system_bench), and a memory session
# sampling one idle process every 10 ms for SECS seconds (default 10): the
# recorder's CPU time and the trace's size per sample.
# Usage: bench/system/run.sh [BUILD_DIR] [SECS]
set -eu
build=${1:-build}
secs=${2:-10}
ltr=$build/bin/ltr
export LTR_RUNTIME_DIR=$(mktemp -d)
trap 'rm -rf "$LTR_RUNTIME_DIR"; kill $target 2>/dev/null || true' EXIT
sleep 600 & target=$!
"$build/bench/system_bench" $target
out=$LTR_RUNTIME_DIR/bench.ltr
"$ltr" start memory.light --filemode --instance sysbench --pid $target --memory-interval 0.01 -o "$out" 2>/dev/null >/dev/null
rec=$("$ltr" status --instance sysbench | sed -n 's/.*recorder pid \([0-9]*\).*/\1/p')
sleep "$secs"
ticks=$(awk '{print $14 + $15}' /proc/$rec/stat)
"$ltr" stop "$out" --instance sysbench >/dev/null
events=$("$ltr" info "$out" | sed -n 's/^events: *\([0-9]*\).*/\1/p')
size=$(stat -c %s "$out")
hz=$(getconf CLK_TCK)
echo "recorder CPU over ${secs} s at 100 samples/s of 1 process: $(echo "$ticks $hz $secs" | awk '{printf "%.2f%%", $1 / $2 / $3 * 100}')"
echo "trace: $events events, $size bytes ($(echo "$size $events" | awk '{printf "%.1f", $1 / $2}') bytes per event)"
