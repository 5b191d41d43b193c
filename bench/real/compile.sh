#!/usr/bin/env bash
# A real program, side by side: GCC's cc1plus compiling compile.cpp (-O0),
# uninstrumented, under `ltr record` and under heaptrack. Prints the run times,
# trace bytes per heap event of both, and the analysis time of `ltr analyze`
# against heaptrack_print on those traces. Where bench/heap and bench/analyze
# measure one property on a workload built for it, this shows what a user
# sees on a program nobody tuned for either tool. Not a test.
# Figures are the best of RUNS runs (default 3); heaptrack runs once (it
# takes about twenty times as long as the compile). -O0: at -O1 and -O2,
# heaptrack 1.4's heaptrack_interpret dies of std::bad_alloc partway and the
# compiler with it (SIGPIPE), so its trace would hold only part of the run;
# the script checks that heaptrack's run ended well.
# Trace sizes are compared per allocation call, the one count heaptrack_print
# reports.
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
read -r -a cc1 < <(g++ -O0 -S compile.cpp -o compile.s -### 2>&1 | grep -m1 'cc1plus' | tr -d '"')

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
traced=$(best "$ltr" record --force -o "$tmp/cc1.ltr" -- "${cc1[@]}")
t0=$(now); rc=0; heaptrack -o "$tmp/cc1.ht" "${cc1[@]}" >"$tmp/ht.log" 2>&1 || rc=$?; ht=$(echo "$(now) - $t0" | bc)
if [ "$rc" != 0 ]; then
  echo "heaptrack failed on this workload (exit status $rc):"; grep -v '^$' "$tmp/ht.log" | tail -4; exit 1
fi
htfile=$(ls "$tmp"/cc1.ht*)

a=$(best sh -c '"$0" analyze "$1" --format json > "$2"' "$ltr" "$tmp/cc1.ltr" "$tmp/a.json")
h=$(best sh -c 'heaptrack_print "$0" > "$1"' "$htfile" "$tmp/h.txt")
events=$(grep -o '"heap_events":[0-9]*' "$tmp/a.json" | cut -d: -f2)
allocs=$(grep -o '"allocations":[0-9]*' "$tmp/a.json" | head -1 | cut -d: -f2)
calls=$(grep -o '^calls to allocation functions: [0-9]*' "$tmp/h.txt" | grep -o '[0-9]*$')
awk -v p="$plain" -v l="$traced" -v ht="$ht" -v e="$events" -v n="$allocs" -v c="$calls" -v a="$a" -v h="$h" \
    -v ls="$(stat -c %s "$tmp/cc1.ltr")" -v hs="$(stat -c %s "$htfile")" 'BEGIN {
  printf "cc1plus -O0 compile.cpp: %d heap events, %d allocation calls in the ltr trace; %d allocation calls in heaptrack'"'"'s\n", e, n, c
  printf "run time:  uninstrumented %.2f s, ltr record %.2f s (+%.2f), heaptrack %.2f s (+%.2f)\n", p, l, l - p, ht, ht - p
  printf "overhead:  ltr is %.3f of heaptrack'"'"'s\n", (l - p) / (ht - p)
  printf "trace:     ltr %.1f MB (%.2f bytes/allocation call), heaptrack %.1f MB (%.2f bytes/allocation call)\n", ls/1e6, ls/n, hs/1e6, hs/c
  printf "analysis:  ltr analyze %.3f s (%.1f M events/s), heaptrack_print %.3f s: %.2f times as fast\n", a, e/a/1e6, h, h/a }'
