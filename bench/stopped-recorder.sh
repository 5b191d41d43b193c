#!/usr/bin/env bash
# What a stopped recorder costs the programs it traces: N short processes
# (tests/programs/target.c dormant: 6000 heap events each) run one after another
# under the heap agent with no session, beside a running heap session, and
# beside the same session with its recorder stopped (SIGSTOP). Prints the
# wall time of each batch; the stopped batch should be about the no-session
# one plus the one bounded wait of the first process (docs/design.md,
# "A traced program never waits on ltr").
# Usage: bench/stopped-recorder.sh [PROCESSES]   (after scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build}
n=${1:-20}
ltr=$build/bin/ltr
agent=$build/lib/libltr-heap.so
target=$build/tests/heap-target
export LTR_RUNTIME_DIR=$(mktemp -d /tmp/ltr-bench-XXXXXX)
rec=
cleanup() {
  [ -n "$rec" ] && kill -CONT "$rec" 2>/dev/null || true
  "$ltr" cancel --instance stopped >/dev/null 2>&1 || true
  rm -rf "$LTR_RUNTIME_DIR"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
batch() {
  local t0 t1
  t0=$(date +%s.%N)
  for _ in $(seq "$n"); do LD_PRELOAD=$agent "$target" dormant >/dev/null; done
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" -v what="$1" -v n="$n" 'BEGIN { printf "%-18s %d processes: %.2f s\n", what, n, b - a }'
}
batch "no session"
"$ltr" start heap --instance stopped --buffers 64 --buffer-size 1024 >/dev/null 2>&1
batch "running recorder"
rec=$("$ltr" status --instance stopped | sed -n 's/.*recorder pid \([0-9]*\).*/\1/p')
kill -STOP "$rec"
batch "stopped recorder"
batch "stopped, again"
kill -CONT "$rec"
"$ltr" status --instance stopped | sed -n '/collector/,$p'
