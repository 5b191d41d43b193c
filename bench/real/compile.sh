#!/usr/bin/env bash
# A real program, side by side: GCC's cc1plus compiling compile.cpp (-O2),
# uninstrumented, under `ltr record` and under heaptrack. Prints the run times,
# trace bytes per heap event of both, and the analysis time of `ltr analyze`
# against heaptrack_print on those traces. Where bench/heap and bench/analyze
# measure one property on a workload built for it, this shows what a user
# sees on a program nobody tuned for either tool. Not a test.
# Figures are the best of RUNS runs (default 3); heaptrack runs once (it
# takes about twenty times as long as the compile).
# Usage: [RUNS=N] bench/real/compile.sh [BUILD_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-build}" && pwd)
ltr=$build/bin/ltr
runs=${RUNS:-3}
command -v heaptrack >/dev/null || { echo "heaptrack is not installed (scripts/install-deps.sh)"; exit 1; }
tmp=$(mktemp -d /tmp/ltr-bench-real-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export LTR_RUNTIME_DIR=$tmp/rt
cp "$here/compile.cpp" "$tmp/"
cd "$tmp"

# cc1plus itself, as the g++ driver would run it (the driver's other programs are not the workload)
read -r -a cc1 < <(g++ -O2 -S compile.cpp -o compile.s -### 2>&1 | grep -m1 'cc1plus' | tr -d '"')

now() { date +%s.%N; }
best() { # best wall time of $runs runs of "$@"
  local b=
  for _ in $(seq "$runs"); do
    local t0 d; t0=$(now); "$@" >/dev/null 2>&1; d=$(echo "$(now) - $t0" | bc)
    if [ -z "$b" ] || [ "$(echo "$d < $b" | bc)" = 1 ]; then b=$d; fi
  done
  echo "$b"
}

plain=$(best "${cc1[@]}")
traced=$(best "$ltr" record -o "$tmp/cc1.ltr" -- "${cc1[@]}")
t0=$(now); heaptrack -o "$tmp/cc1.ht" "${cc1[@]}" >/dev/null 2>&1; ht=$(echo "$(now) - $t0" | bc)
htfile=$(ls "$tmp"/cc1.ht*)

a=$(best sh -c '"$0" analyze "$1" --format json > "$2"' "$ltr" "$tmp/cc1.ltr" "$tmp/a.json")
h=$(best sh -c 'heaptrack_print "$0" > "$1"' "$htfile" "$tmp/h.txt")
events=$(grep -o '"heap_events":[0-9]*' "$tmp/a.json" | cut -d: -f2)
calls=$(grep -o '^calls to allocation functions: [0-9]*' "$tmp/h.txt" | grep -o '[0-9]*$')
awk -v p="$plain" -v l="$traced" -v ht="$ht" -v e="$events" -v c="$calls" -v a="$a" -v h="$h" \
    -v ls="$(stat -c %s "$tmp/cc1.ltr")" -v hs="$(stat -c %s "$htfile")" 'BEGIN {
  printf "cc1plus -O2 compile.cpp: %d heap events in the ltr trace (heaptrack: %d allocation calls)\n", e, c
  printf "run time:  uninstrumented %.2f s, ltr record %.2f s (+%.2f), heaptrack %.2f s (+%.2f)\n", p, l, l - p, ht, ht - p
  printf "overhead:  ltr is %.3f of heaptrack'"'"'s\n", (l - p) / (ht - p)
  printf "trace:     ltr %.1f MB (%.2f bytes/event), heaptrack %.1f MB (%.2f bytes/event)\n", ls/1e6, ls/e, hs/1e6, hs/e
  printf "analysis:  ltr analyze %.3f s (%.1f M events/s), heaptrack_print %.3f s: %.2f times as fast\n", a, e/a/1e6, h, h/a }'
