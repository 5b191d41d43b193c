#!/usr/bin/env bash
# Trace sizes on real programs, ltr against heaptrack, in one run: the same
# workload recorded by each (`ltr record`, `heaptrack`), the file sizes, and
# both divided by ltr's heap event count (heaptrack's own count differs in
# kind: it writes no free of an allocation it pairs itself). bench/compare.sh
# measures the issue's three benchmark workloads; this one shows how the
# trace format does on the programs people trace, each in its own way of
# using the heap: perl and python3 grow hashes of fresh strings, node's V8
# reuses freed blocks, git shows this repository's last 300 commits, sqlite3
# builds a table and an index in memory, a Rust program (built here with
# rustc when there is one) tears a map down in bucket order. Not a test.
# Usage: bench/programs/run.sh [BUILD_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-build}" && pwd)
ltr=$build/bin/ltr
command -v heaptrack >/dev/null || { echo "heaptrack is not installed (scripts/install-deps.sh)"; exit 1; }
tmp=$(mktemp -d /tmp/ltr-bench-programs-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export LTR_RUNTIME_DIR=$tmp/rt
cd "$tmp"

names=() cmds=()
add() { names+=("$1"); shift; cmds+=("$(printf '%q ' "$@")"); }
command -v perl >/dev/null && add perl perl -e '$h{$_} = "x" x 100 for 1..100000'
# Debian's python3: a version manager's python3 is a shell script, whose
# children heaptrack does not follow (ltr does: their bash processes)
py=/usr/bin/python3; [ -x "$py" ] || py=$(command -v python3 || true)
[ -n "$py" ] && add python3 "$py" -c 'd = {str(i): "x" * 100 for i in range(100000)}'
command -v node >/dev/null && add node node -e 'let a=[]; for(let i=0;i<200000;i++) a.push({x:"y".repeat(50)+i})'
repo=$(cd "$here/../.." && pwd)
command -v git >/dev/null && [ -d "$repo/.git" ] && add git git -C "$repo" log -p -n 300
command -v sqlite3 >/dev/null && add sqlite3 sqlite3 :memory: "create table t(a,b); with recursive c(x) as (select 1 union all select x+1 from c where x<100000) insert into t select x, hex(randomblob(20)) from c; create index i on t(b);"
if command -v rustc >/dev/null && rustc -O "$here/hashmap.rs" -o "$tmp/hashmap" 2>/dev/null; then add rust "$tmp/hashmap"; fi

printf '%-8s %9s %10s %10s %8s %8s %6s\n' program events ltr_bytes ht_bytes ltr_B/ev ht_B/ev ratio
for i in "${!names[@]}"; do
  n=${names[$i]}
  eval "\"$ltr\" record --force -o \"$tmp/$n.ltr\" -- ${cmds[$i]}" >/dev/null 2>&1 || { echo "$n: ltr record failed"; continue; }
  eval "heaptrack -o \"$tmp/$n.ht\" ${cmds[$i]}" >/dev/null 2>&1 || { echo "$n: heaptrack failed"; continue; }
  events=$("$ltr" info "$tmp/$n.ltr" | awk '/^events:/ { print $2 }')
  ls=$(stat -c %s "$tmp/$n.ltr"); hs=$(stat -c %s "$(ls "$tmp/$n.ht".*)")
  awk -v n="$n" -v e="$events" -v l="$ls" -v h="$hs" 'BEGIN {
    printf "%-8s %9d %10d %10d %8.3f %8.3f %6.2f\n", n, e, l, h, l / e, h / e, l / h }'
done
echo "ratio: ltr's trace over heaptrack's (the product's aim: at most 1). $(nproc) CPUs."
