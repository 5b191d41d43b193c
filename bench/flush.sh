#!/usr/bin/env bash
# How long `ltr flush` and `ltr capturestate` take, each command's wall time
# from start to exit, while a traced program keeps the session busy: a
# file-mode heap session of tests/programs/state_target.c allocating and
# freeing without pause (flush: everything committed goes into the file and
# is synced), and a memory-mode general.light session following it
# (capturestate: the system provider's rundown of every process, as root
# system-wide). Prints min, median and max of N runs of each, and the
# flushed file's size.
# Usage: bench/flush.sh [N]   (after scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build}
n=${1:-20}
ltr=$(realpath "$build/bin/ltr")
work=$(mktemp -d /tmp/ltr-bench-XXXXXX)
export LTR_RUNTIME_DIR=$work/run TMPDIR=$work
cleanup() {
  touch "$work/exit"
  "$ltr" cancel --instance fl >/dev/null 2>&1 || true
  "$ltr" cancel --instance cs >/dev/null 2>&1 || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
times() { # what, command...: N wall times in ms, summarized
  local what=$1; shift
  for _ in $(seq "$n"); do
    local t0 t1
    t0=$(date +%s%N); "$@" >/dev/null; t1=$(date +%s%N)
    echo $(( (t1 - t0) / 1000 ))
    sleep 0.05
  done | sort -n | awk -v what="$what" '{ v[NR] = $1 } END {
    printf "%-34s %d runs: min %.1f ms, median %.1f ms, max %.1f ms\n", what, NR, v[1] / 1000, v[int((NR + 1) / 2)] / 1000, v[NR] / 1000 }'
}
"$ltr" start heap --instance fl --filemode --buffers 64 >/dev/null
LTR_SESSION=fl "$ltr" run -- "$build/tests/state-target" "$work" 2000000000 >/dev/null 2>&1 &
sleep 1
times "flush (heap, file mode, busy)" "$ltr" flush --instance fl
"$ltr" flush --instance fl | sed 's/.*(\(.*\))/flushed file now: \1/'
pid=$(pgrep -n -f state-target)
"$ltr" start general.light --instance cs --pid "$pid" >/dev/null 2>&1
sleep 0.5
times "capturestate (general.light)" "$ltr" capturestate --instance cs
"$ltr" capturestate --instance cs | head -1
