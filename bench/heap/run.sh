#!/usr/bin/env bash
# Heap tracing benchmark: the same workload (workload.c) uninstrumented, under
# `ltr record`, under heaptrack, and under LTTng-UST's libc wrapper when it is
# installed. Prints ns per operation, each tracer's ratio to the uninstrumented
# run, and trace bytes per event of ltr and heaptrack. Not a test: numbers
# depend on the machine. Each figure is the best of RUNS runs (default 5);
# "cpu" is the CPU time of the workload process (all threads), which other
# programs on the machine disturb less than the wall time.
# Usage: [RUNS=N] bench/heap/run.sh [BUILD_DIR] [THREADS] [OPS_PER_THREAD]
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
threads=${2:-2}
ops=${3:-100000}
work=$build/bench/heap-workload
ltr=$build/bin/ltr
tmp=$(mktemp -d)
export LTR_RUNTIME_DIR=$tmp/run
mkdir -m 700 "$LTR_RUNTIME_DIR"
. "$(dirname "$0")/../peers/lttng-session.sh"
cleanup() {
  lttng_snapshot_cleanup
  rm -rf "$tmp"
}
trap cleanup EXIT

runs=${RUNS:-5}

# Best of $runs runs: "ops N ns T cpu_ns C" -> prints "N T C", the least wall
# and the least CPU time ("0 0 0" if a run failed)
best() {
  local best_ns="" best_cpu="" n="" ns cpu
  for _ in $(seq "$runs"); do
    if ! read -r _ n _ ns _ cpu < <("$@" 2>/dev/null | grep '^ops '); then echo "0 0 0"; return; fi
    rm -f "$tmp"/*.ltr "$tmp"/heaptrack.* 2>/dev/null || true
    if [ -z "$best_ns" ] || [ "$ns" -lt "$best_ns" ]; then best_ns=$ns; fi
    if [ -z "$best_cpu" ] || [ "$cpu" -lt "$best_cpu" ]; then best_cpu=$cpu; fi
  done
  echo "$n $best_ns $best_cpu"
}

report() { # name ops ns cpu_ns base_ns_per_op
  if [ "$2" = 0 ]; then echo "$1: the run failed (no 'ops' line)"; return; fi
  awk -v name="$1" -v n="$2" -v ns="$3" -v cpu="$4" -v base="$5" 'BEGIN {
    per = ns / n; printf "%-22s %8.1f ns/op   x%.2f", name, per, (base > 0 ? per / base : 1);
    if (base > 0) printf "   overhead %.1f ns/op", per - base;
    printf "   (cpu %.1f ns/op)\n", cpu / n }'
}

echo "workload: $threads threads x $ops operations, $(nproc) CPUs"
read -r n ns cpu < <(best "$work" "$threads" "$ops")
base=$(awk -v n="$n" -v ns="$ns" 'BEGIN { print ns / n }')
report "uninstrumented" "$n" "$ns" "$cpu" 0

read -r n ns cpu < <(best "$ltr" record -o "$tmp/b.ltr" -- "$work" "$threads" "$ops")
report "ltr record" "$n" "$ns" "$cpu" "$base"
ltr_over=$(awk -v n="$n" -v ns="$ns" -v b="$base" 'BEGIN { print ns / n - b }')
"$ltr" record -o "$tmp/size.ltr" -- "$work" "$threads" "$ops" >/dev/null 2>&1
ltr_events=$("$ltr" info "$tmp/size.ltr" | awk '/^events:/ { print $2 }')
ltr_bytes=$(stat -c %s "$tmp/size.ltr")

ht_over=""
if command -v heaptrack >/dev/null; then
  read -r n ns cpu < <(best heaptrack -o "$tmp/heaptrack.b" "$work" "$threads" "$ops")
  report "heaptrack" "$n" "$ns" "$cpu" "$base"
  if [ "$n" != 0 ]; then
    # heaptrack 1.4 sometimes dies of std::bad_alloc on longer runs of this workload
    ht_over=$(awk -v n="$n" -v ns="$ns" -v b="$base" 'BEGIN { print ns / n - b }')
    heaptrack -o "$tmp/heaptrack.size" "$work" "$threads" "$ops" >/dev/null 2>&1 || true
    ht_file=$(ls "$tmp"/heaptrack.size.* | head -1)
    ht_bytes=$(stat -c %s "$ht_file")
    ht_events=$n # every operation of the workload is one heaptrack event
  fi
else
  echo "heaptrack              not installed (apt-get install heaptrack)"
fi

wrapper=$(ls /usr/lib/*/liblttng-ust-libc-wrapper.so.1 2>/dev/null | head -1 || true)
if [ -n "$wrapper" ] && command -v lttng-sessiond >/dev/null; then
  lttng_snapshot_start heapbench 'lttng_ust_libc:*'
  read -r n ns cpu < <(best env LD_PRELOAD="$wrapper" "$work" "$threads" "$ops")
  report "lttng-ust libc wrapper" "$n" "$ns" "$cpu" "$base"
  echo "                       (no call stacks: the wrapper records the caller's address only)"
else
  echo "lttng-ust libc wrapper not installed (apt-get install liblttng-ust1 lttng-tools)"
fi

echo
awk -v b="$ltr_bytes" -v e="$ltr_events" 'BEGIN { printf "ltr trace:       %d bytes, %d events, %.2f bytes/event\n", b, e, b / e }'
if [ -n "$ht_over" ]; then
  awk -v b="$ht_bytes" -v e="$ht_events" 'BEGIN { printf "heaptrack trace: %d bytes, %d events, %.2f bytes/event\n", b, e, b / e }'
  awk -v l="$ltr_over" -v h="$ht_over" 'BEGIN { printf "ltr overhead / heaptrack overhead: %.2f (goal: at most 0.20)\n", l / h }'
fi
