#!/usr/bin/env bash
# ltr report's page on a large trace: its size, the time `ltr report` takes,
# and how long headless Chromium takes to open it and run its scripts
# (--dump-dom of the page, against a blank page: Chromium's own start-up),
# medians of RUNS. The trace is bench/analyze's workload of N allocations
# (2 N heap events). A benchmark, not a test: figures for docs/benchmarks.md.
# Usage: bench/report/run.sh [BUILD_DIR] [N] [RUNS]
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
n=${2:-2000000}; runs=${3:-5}
ltr=$build/bin/ltr
tmp=$(mktemp -d /tmp/ltr-bench-report-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export LTR_RUNTIME_DIR=$tmp/rt HOME=$tmp
command -v chromium >/dev/null || { echo "chromium is not installed (scripts/install-deps.sh)"; exit 1; }
"$ltr" record -o "$tmp/w.ltr" -- "$build/bench/analyze_workload" "$n" >/dev/null
echo '<!DOCTYPE html><html><body>blank</body></html>' >"$tmp/blank.html"
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
secs() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null 2>&1; t1=$(date +%s.%N); echo "$t1 - $t0" | bc; }
report=$(for _ in $(seq "$runs"); do rm -f "$tmp/w.html"; secs "$ltr" report "$tmp/w.ltr" -o "$tmp/w.html"; done | median)
open() { chromium --headless --no-sandbox --disable-gpu --virtual-time-budget=5000 --dump-dom "file://$1"; }
page=$(for _ in $(seq "$runs"); do secs open "$tmp/w.html"; done | median)
blank=$(for _ in $(seq "$runs"); do secs open "$tmp/blank.html"; done | median)
open "$tmp/w.html" 2>/dev/null | grep -q '"errors":\[\]' || echo "warning: the page reported script errors"
echo "trace: $(du -k "$tmp/w.ltr" | cut -f1) KiB, $((2 * n)) heap events"
echo "ltr report: ${report} s; page: $(du -k "$tmp/w.html" | cut -f1) KiB"
echo "chromium --dump-dom: page ${page} s, blank page ${blank} s (the page's own cost: $(echo "$page - $blank" | bc) s)"
