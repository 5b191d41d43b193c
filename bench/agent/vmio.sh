#!/bin/sh
# bench/agent/vmio.sh — the cost of the agent's VirtualAllocation (0x10) and
# FileIO (0x20) hooks to a traced program (docs/benchmarks.md, "Mappings and
# files"): bench/vmio plain, with the agent preloaded and no session, under a
# heap session without the keywords, with 0x10, with 0x20, with both; each
# ROUNDS times (default 3), the lowest of each figure is the one to keep.
# Usage: bench/agent/vmio.sh [BUILD_DIR] [ROUNDS]
set -eu
build=${1:-build}
rounds=${2:-3}
ltr=$build/bin/ltr
vmio=$build/bench/vmio
export LTR_RUNTIME_DIR=$(mktemp -d)
trap 'rm -rf "$LTR_RUNTIME_DIR"' EXIT
file=$LTR_RUNTIME_DIR/vmio.dat
agent=$(ls "$build"/lib/libltr-heap.so "$build"/src/agent/libltr-heap.so 2>/dev/null | head -1)
session() { # NAME PROVIDER-OPTIONS
  "$ltr" start heap $2 --filemode --instance "$1" -o "$LTR_RUNTIME_DIR/$1.ltr" >/dev/null 2>&1
  printf '%-28s ' "$1:"; "$ltr" run --instance "$1" -- "$vmio" "$file"
  "$ltr" stop "$LTR_RUNTIME_DIR/$1.ltr" --instance "$1" >/dev/null
  rm -f "$LTR_RUNTIME_DIR/$1.ltr"
}
i=0
while [ $i -lt "$rounds" ]; do
  printf '%-28s ' "plain:"; "$vmio" "$file"
  printf '%-28s ' "agent, no session:"; LD_PRELOAD=$agent "$vmio" "$file"
  session heap-only ""
  session vmem "--provider Ltr.System:0x10"
  session fileio "--provider Ltr.System:0x20"
  session both "--provider Ltr.System:0x30"
  i=$((i + 1))
done
