#!/usr/bin/env bash
# The review of `ltr analyze --trend` (docs/analysis.md "Trend", "Why a leak
# after a fill"): trend_python.py (a leak, a dict cache, churn and a
# bytearray extended in place, all through PyByteArray_Resize) attached by
# pid, heap snapshots every 1 s for about 8 s, then the trend's verdict lines.
# Not a test: the load decides when the cache's fill ends, and with it
# whether its stack is a leak after a fill or an uneven plateau.
# Usage: bench/analyze/trend-python.sh [BUILD_DIR] [OUT.ltr]
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
ltr=$build/bin/ltr
tmp=$(mktemp -d)
out=${2:-$tmp/trend-python.ltr}
export LTR_RUNTIME_DIR=$tmp/run TMPDIR=$tmp
mkdir -m 700 "$LTR_RUNTIME_DIR"
PYTHONMALLOC=malloc python3 "$(dirname "$0")/trend_python.py" 12 1.5 &
pid=$!
sleep 0.3
"$ltr" start heap heapsnapshot --pid "$pid" --filemode -o "$out" --instance trendpy
"$ltr" snapshotconfig heap --pid "$pid" enable
"$ltr" enableperiodicsnapshot heap 1 "$pid"
sleep 8.6
"$ltr" stop --instance trendpy
kill "$pid"; wait "$pid" 2>/dev/null || true
"$ltr" analyze "$out" --trend | sed -n '/^trend/,$p' | grep -E '^trend|^    #'
