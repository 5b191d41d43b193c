#!/usr/bin/env bash
# Figures for `ltr watch` (docs/benchmarks.md "ltr watch"), four watches at
# once for DURATION seconds:
#   rss     watch's own memory over a long run: VmRSS of the watch process
#           (and of its session's recorder) every 10 s, polling every 0.1 s a
#           churning tests/programs/watch_target that never triggers;
#   python, perl
#           --growth-above auto on real programs with heavy transient churn
#           (buffers of 1-60 MiB held 0.2-2 s) and no leak: false triggers;
#   leak    the same python churn plus a slow steady leak of LEAK_KB per
#           second: when auto fires (seconds from the start, MiB leaked by
#           then), and whether the saved trace names the leak's stack.
# Interval 1 s for auto (the churn's hold times are 0.2-2 s). Must run as
# root (the watch attaches the agent with ptrace). Not a test.
# Usage: bench/watch/run.sh [BUILD_DIR] [DURATION_S] [LEAK_KB]
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
duration=${2:-600}; leak_kb=${3:-512}
here=$(cd "$(dirname "$0")" && pwd)
ltr=$build/bin/ltr
tmp=$(mktemp -d /tmp/ltr-bench-watch-XXXXXX)
# every process started, one pid a line (start and watch run in subshells)
cleanup() { xargs -r kill <"$tmp/pids" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$tmp"; }
: >"$tmp/pids"
trap cleanup EXIT

# start NAME COMMAND...: a target in the background, its pid once ready
start() {
  local name=$1; shift
  "$@" >"$tmp/$name.out" 2>&1 &
  echo $! >>"$tmp/pids"
  for _ in $(seq 100); do grep -q '^ready' "$tmp/$name.out" 2>/dev/null && break; sleep 0.1; done
  awk '/^ready/ { print $NF; exit }' "$tmp/$name.out"
}
# watch NAME PID OPTIONS...: a watch in the background, with --monitor
watch() {
  local name=$1 pid=$2; shift 2
  "$ltr" watch --pid "$pid" --record-to "$tmp/$name.ltr" --monitor "$@" >"$tmp/$name.watch" 2>&1 &
  echo $! >>"$tmp/pids"
  echo $!
}
rss_kb() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }

# under a name of its own: tests that watch by the name watch-target must not find it
cp "$build/tests/watch-target" "$tmp/bench-watch-svc"
svc=$(start svc "$tmp/bench-watch-svc" 50 1024 0)
py=$(start python python3 "$here/churn.py")
pl=$(start perl perl "$here/churn.pl")
lk=$(start leak python3 "$here/churn.py" "$leak_kb")
t0=$(date +%s)
w_rss=$(watch rss "$svc" --private-bytes-above 100G --interval 0.1)
watch python "$py" --growth-above auto --interval 1 --max-triggers 1000 >/dev/null
watch perl "$pl" --growth-above auto --interval 1 --max-triggers 1000 >/dev/null
w_leak=$(watch leak "$lk" --growth-above auto --interval 1)

sleep 2
rec=$("$ltr" status --instance "watch-$w_rss" | sed -n "s/.*recorder pid \([0-9]*\).*/\1/p")
echo "seconds  watch VmRSS KiB  recorder VmRSS KiB" >"$tmp/rss"
for ((s = 0; s <= duration; s += 10)); do
  echo "$s $(rss_kb "$w_rss") $(rss_kb "$rec")" >>"$tmp/rss"
  [ $s -lt "$duration" ] && sleep 10
done
fired_at=$(stat -c %Y "$tmp/leak.ltr" 2>/dev/null || echo "")

echo "ltr watch, $(nproc) CPUs, $duration s:"
echo "1. watch's own memory, polling every 0.1 s ($(grep -c '  pid ' "$tmp/rss.watch") polls):"
awk 'NR > 1 { if (!first) first = $2; last = $2; if ($2 > max) max = $2; rfirst = rfirst ? rfirst : $3; rlast = $3; if ($3 > rmax) rmax = $3 }
     END { printf "   watch VmRSS: %d KiB at 0 s, %d KiB at the end, %d KiB at most\n", first, last, max
           printf "   its recorder VmRSS: %d KiB at 0 s, %d KiB at the end, %d KiB at most\n", rfirst, rlast, rmax }' "$tmp/rss"
for p in python perl; do
  polls=$(grep -c '  pid ' "$tmp/$p.watch" || true)
  trig=$(grep -c 'trace saved to' "$tmp/$p.watch" || true)
  swing=$(grep '  pid ' "$tmp/$p.watch" | awk '{ for (i = 1; i <= NF; i++) if ($i == "private") { print $(i+1), $(i+2); break } }' |
          awk '{ v = $1 + 0; if ($2 == "KiB") v /= 1024; if ($2 == "GiB") v *= 1024; if (!lo || v < lo) lo = v; if (v > hi) hi = v } END { printf "%.0f-%.0f MiB", lo, hi }')
  echo "2. auto on $p with heavy churn, no leak: $trig false triggers in $polls polls (private bytes $swing)"
done
if [ -n "$fired_at" ]; then
  secs=$((fired_at - t0))
  echo "3. auto on python churn + a leak of $leak_kb KiB/s: fired after $secs s, with about $((secs * leak_kb / 1024)) MiB leaked"
  grep 'trigger 1' "$tmp/leak.watch" | sed 's/^/   /'
  top=$("$ltr" analyze "$tmp/leak.ltr" --top 3 2>/dev/null | sed -n '/stacks holding memory/,/stacks with the most/p' | grep -m1 -o 'churn.py[^ ]*\|PyBytes[A-Za-z_]*\|bytes_repeat[A-Za-z_]*' || true)
  echo "   the saved trace's top outstanding stack names: ${top:-(not found)}"
else
  echo "3. auto on python churn + a leak of $leak_kb KiB/s: did not fire in $duration s"
fi
