#!/usr/bin/env bash
# Heap snapshot benchmark (issue 13): the workload of run.sh (workload.c) in
# one run each way, best of RUNS (default 3): uninstrumented, with heap
# snapshots enabled (the agent's live-block table, no event per allocation),
# under full heap tracing (ltr record), under heaptrack when installed; then
# the table's bytes per live block and the pause of one snapshot (the longest
# a shard was held, which is all a thread of the program can wait) and its
# whole duration for 10^4, 10^5 and 10^6 live blocks (tests' snap-target).
# Not a test: numbers depend on the machine.
# Usage: [RUNS=N] bench/heap/snapshot.sh [BUILD_DIR] [THREADS] [OPS_PER_THREAD]
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
threads=${2:-2}
ops=${3:-100000}
work=$build/bench/heap-workload
ltr=$build/bin/ltr
agent=$build/lib/libltr-heap.so
target=$build/tests/snap-target
tmp=$(mktemp -d)
export LTR_RUNTIME_DIR=$tmp/run TMPDIR=$tmp
mkdir -m 700 "$LTR_RUNTIME_DIR"
cleanup() {
  "$ltr" cancel >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT
runs=${RUNS:-3}

best() { # command... -> "ops ns cpu_ns", the least wall and CPU time of $runs runs
  local bn="" bc="" n="" ns cpu
  for _ in $(seq "$runs"); do
    read -r _ n _ ns _ cpu < <("$@" 2>/dev/null | grep '^ops ') || { echo "0 0 0"; return; }
    rm -f "$tmp"/*.ltr "$tmp"/heaptrack.* 2>/dev/null || true
    if [ -z "$bn" ] || [ "$ns" -lt "$bn" ]; then bn=$ns; fi
    if [ -z "$bc" ] || [ "$cpu" -lt "$bc" ]; then bc=$cpu; fi
  done
  echo "$n $bn $bc"
}
report() { # name ops ns cpu base
  awk -v name="$1" -v n="$2" -v ns="$3" -v cpu="$4" -v base="$5" 'BEGIN {
    per = ns / n; printf "%-20s %8.1f ns/op   x%.2f   (cpu %.1f ns/op)\n", name, per,
    (base > 0 ? per / base : 1), cpu / n }'
}

echo "workload: $threads threads x $ops operations, $(nproc) CPUs"
read -r n ns cpu < <(best "$work" "$threads" "$ops")
base=$(awk -v n="$n" -v ns="$ns" 'BEGIN { print ns / n }')
report "uninstrumented" "$n" "$ns" "$cpu" 0

"$ltr" start heapsnapshot >/dev/null
"$ltr" snapshotconfig heap --name heap-workload enable >/dev/null
read -r n ns cpu < <(best env LD_PRELOAD="$agent" "$work" "$threads" "$ops")
report "snapshots enabled" "$n" "$ns" "$cpu" "$base"
"$ltr" snapshotconfig heap --name heap-workload disable >/dev/null

read -r n ns cpu < <(best "$ltr" record -o "$tmp/b.ltr" -- "$work" "$threads" "$ops")
report "ltr record (full)" "$n" "$ns" "$cpu" "$base"
if command -v heaptrack >/dev/null; then
  read -r n ns cpu < <(best heaptrack -o "$tmp/heaptrack.b" "$work" "$threads" "$ops")
  [ "$n" != 0 ] && report "heaptrack" "$n" "$ns" "$cpu" "$base" || echo "heaptrack: the run failed"
fi

echo
echo "one snapshot of N live blocks of 32 bytes (one stack):"
for blocks in 10000 100000 1000000; do
  d=$tmp/p$blocks
  mkdir "$d"
  "$ltr" run -- "$target" big "$d" "$blocks" >/dev/null 2>&1 &
  while [ ! -f "$d/pid" ]; do sleep 0.01; done
  pid=$(cat "$d/pid")
  "$ltr" snapshotconfig heap --pid "$pid" enable >/dev/null
  until "$ltr" snapshotconfig heap --pid "$pid" | grep -q "table kept"; do sleep 0.01; done
  touch "$d/go"
  while [ ! -f "$d/ready" ]; do sleep 0.01; done
  "$ltr" singlesnapshot heap "$pid" >/dev/null
  touch "$d/exit"
  wait
done
"$ltr" stop "$tmp/pause.ltr" >/dev/null
"$ltr" dump "$tmp/pause.ltr" | grep SnapshotEnd | awk '{
  for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
  printf "  %8d blocks: table %6.1f bytes/block, pause %7.1f us (longest shard held), snapshot %7.1f ms\n",
    v["blocks"], v["table_bytes"] / v["blocks"], v["pause_ns"] / 1000, v["duration_ns"] / 1e6 }'
