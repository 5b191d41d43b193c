#!/bin/sh
# bench/system/run.sh — the system provider's cost, as docs/benchmarks.md
# reports it: the time of one sample (system_bench); a session of the memory
# counters alone (--provider Ltr.System:0x4) sampling one idle process every
# 10 ms for SECS seconds (default 10): the recorder's CPU time and the
# trace's size per sample; then processes, threads and modules (below).
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
"$ltr" start --provider Ltr.System:0x4 --filemode --instance sysbench --pid $target --memory-interval 0.01 -o "$out" 2>/dev/null >/dev/null
rec=$("$ltr" status --instance sysbench | sed -n 's/.*recorder pid \([0-9]*\).*/\1/p')
sleep "$secs"
ticks=$(awk '{print $14 + $15}' /proc/$rec/stat)
"$ltr" stop "$out" --instance sysbench >/dev/null
events=$("$ltr" info "$out" | sed -n 's/^events: *\([0-9]*\).*/\1/p')
size=$(stat -c %s "$out")
hz=$(getconf CLK_TCK)
echo "recorder CPU over ${secs} s at 100 samples/s of 1 process: $(echo "$ticks $hz $secs" | awk '{printf "%.2f%%", $1 / $2 / $3 * 100}')"
echo "trace: $events events, $size bytes ($(echo "$size $events" | awk '{printf "%.1f", $1 / $2}') bytes per event)"

# ProcessThread and Loader: a general.light session (memory counters at the
# default 1 s) following the same idle target, while a shell starts 2000
# short processes: the recorder's CPU time, and the time the shell took
# beside the same loop with no session.
loop() { i=0; while [ $i -lt 2000 ]; do /bin/true; i=$((i + 1)); done; }
t0=$(date +%s.%N); loop; t1=$(date +%s.%N)
out2=$LTR_RUNTIME_DIR/bench2.ltr
"$ltr" start general.light --filemode --instance sysbench2 --pid $target -o "$out2" 2>/dev/null >/dev/null
rec=$("$ltr" status --instance sysbench2 | sed -n 's/.*recorder pid \([0-9]*\).*/\1/p')
b0=$(awk '{print $14 + $15}' /proc/$rec/stat)
t2=$(date +%s.%N); loop; t3=$(date +%s.%N)
b1=$(awk '{print $14 + $15}' /proc/$rec/stat)
"$ltr" stop "$out2" --instance sysbench2 >/dev/null
events=$("$ltr" info "$out2" | sed -n 's/^events: *\([0-9]*\).*/\1/p')
echo "2000 processes: $(echo "$t0 $t1" | awk '{printf "%.2f", $2 - $1}') s without a session, $(echo "$t2 $t3" | awk '{printf "%.2f", $2 - $1}') s with general.light (root: process connector)"
echo "recorder CPU meanwhile: $(echo "$b0 $b1 $hz" | awk '{printf "%.2f", ($2 - $1) / $3}') s; trace: $events events, $(stat -c %s "$out2") bytes"

# SampledProfile: ltr-test-busy spins 3 s of CPU in one function while a
# general session samples it (root): the recorder's CPU time (unwinding and
# naming each sample with libdw), the samples, the trace's bytes per sample.
busy=$build/tests/ltr-test-busy
if [ -x "$busy" ]; then
  mkfifo "$LTR_RUNTIME_DIR/go"
  "$busy" 3000 < "$LTR_RUNTIME_DIR/go" > /dev/null & bp=$!
  out3=$LTR_RUNTIME_DIR/bench3.ltr
  "$ltr" start general --filemode --instance sysbench3 --pid $bp -o "$out3" 2>/dev/null >/dev/null
  rec=$("$ltr" status --instance sysbench3 | sed -n 's/.*recorder pid \([0-9]*\).*/\1/p')
  sleep 0.5
  b0=$(awk '{print $14 + $15}' /proc/$rec/stat)
  echo g > "$LTR_RUNTIME_DIR/go"
  wait $bp
  b1=$(awk '{print $14 + $15}' /proc/$rec/stat)
  "$ltr" stop "$out3" --instance sysbench3 >/dev/null
  samples=$("$ltr" analyze "$out3" --cpu --format json | sed -n 's/.*"cpu_samples":\([0-9]*\).*/\1/p')
  echo "3 s of CPU sampled: $samples samples; recorder CPU $(echo "$b0 $b1 $hz" | awk '{printf "%.2f", ($2 - $1) / $3}') s ($(echo "$b0 $b1 $hz $samples" | awk '{printf "%.0f", ($2 - $1) / $3 / $4 * 1e6}') us a sample); trace $(stat -c %s "$out3") bytes"
fi
