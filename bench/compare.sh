#!/usr/bin/env bash
# Issue 17's figures side by side with heaptrack, in one run, for each
# benchmark workload:
#   heap  bench/heap's workload, 2 threads, chains of 5..40 frames
#   deep  the same, 1 thread, every chain 12 frames deep
#   real  GCC's cc1plus compiling bench/real/compile.cpp (-O0)
#   leak  perl filling a hash of 1 M strings it never frees: a growing
#         live set (PRODUCT.md's scenario), 2 M blocks outstanding at the end
#   jit   node (V8) keeping 200 000 Buffers (bench/real/buffers.js): stacks
#         through JIT frames; not run unless named (needs node)
# For each: the tracers' overhead (ltr's over heaptrack's), trace bytes per
# heap event (both divided by ltr's event count: the workloads are
# deterministic, and heaptrack_print counts no frees), and the analysis of
# those traces (`ltr analyze --format json` against heaptrack_print), wall
# and CPU time (user + system, children included). Run time and analysis
# are the best of RUNS runs (default 3); the heap and deep workloads time
# themselves (their "ops" line: start-up and the tracers' post-processing do
# not count, as in bench/heap/run.sh), cc1plus is timed from outside.
# heaptrack 1.4's heaptrack_interpret dies of std::bad_alloc on the deep
# workload past about 40 000 operations (bisected on its raw input to an
# ordinary allocation line; its recording library is fine): there heaptrack
# runs with --raw for the run time (its interpreter's work deferred: the
# figure favours heaptrack) and both tracers' sizes and analysis are
# measured on a 20 000-operation run, marked "*".
# Not a test. Usage: [RUNS=N] bench/compare.sh [BUILD_DIR] [WORKLOAD...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-build}" && pwd); shift || true
workloads=("$@"); [ ${#workloads[@]} -gt 0 ] || workloads=(heap deep real leak)
ltr=$build/bin/ltr
runs=${RUNS:-3}
command -v heaptrack >/dev/null || { echo "heaptrack is not installed (scripts/install-deps.sh)"; exit 1; }
tmp=$(mktemp -d /tmp/ltr-bench-compare-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export LTR_RUNTIME_DIR=$tmp/rt
cd "$tmp"

cmd_of() { # the workload's command lines, into the arrays cmd and small (traces measured), and ht_opts
  ht_opts=()
  case $1 in
    heap) cmd=("$build/bench/heap-workload" 2 100000) ;;
    deep) cmd=("$build/bench/heap-workload" 1 200000 12); small=("$build/bench/heap-workload" 1 20000 12)
          ht_opts=(--raw) ;;
    leak) cmd=(perl -e '$h{$_} = "x" x 100 for 1..1000000') ;;
    jit)  command -v node >/dev/null || { echo "the jit workload needs node (apt install nodejs)" >&2; exit 2; }
          cmd=(node "$here/real/buffers.js") ;;
    real) cp "$here/real/compile.cpp" "$tmp/"
          read -r -a cmd < <(g++ -O0 -S compile.cpp -o compile.s -### 2>&1 | grep -m1 'cc1plus' | tr -d '"') ;;
    *) echo "unknown workload '$1' (heap, deep, real, leak or jit)" >&2; exit 2 ;;
  esac
  [ "$1" = deep ] || small=("${cmd[@]}")
}

# Seconds of one run of "$@": the program's own "ops N ns T" when it prints
# one, else the wall time from outside. Fails when the command fails.
run_s() {
  local t0 out; t0=$(date +%s.%N)
  out=$("$@" 2>/dev/null) || return 1
  local inside; inside=$(echo "$out" | awk '/^ops / { print $4 / 1e9 }')
  if [ -n "$inside" ]; then echo "$inside"; else echo "$(date +%s.%N) - $t0" | bc; fi
}
# The least of each command over $runs rounds, the commands taken in turn in
# each round (plain, ltr, heaptrack; then the two analyses): on this kind of
# cloud guest a neighbour's load comes and goes over seconds, and three runs
# of one command, then three of the next, put a busy spell on one of them
# (the deep workload's plain run 0.056 s in one run of this script, 0.075 in
# the next, its overhead 0.59 then 1.04; session 30).
# Takes the names of three arrays holding the commands; sets the globals
# best_a, best_b, best_c: seconds of one run (run_s), "fail" if one failed;
# the traces of each run removed after it.
best_runs() {
  local -n cmd_a=$1 cmd_b=$2 cmd_c=$3
  local d which
  best_a=""; best_b=""; best_c=""
  for _ in $(seq "$runs"); do
    for which in a b c; do
      local -n one=cmd_$which best=best_$which
      if ! d=$(run_s "${one[@]}"); then best=fail; continue; fi
      rm -f "$tmp"/run.ltr "$tmp"/run.ht.* "$tmp"/run.ht.raw.* 2>/dev/null || true
      if [ -z "$best" ] || { [ "$best" != fail ] && [ "$(echo "$d < $best" | bc)" = 1 ]; }; then best=$d; fi
    done
  done
}
# "WALL CPU" of the least-wall of $runs runs of each of two shell commands,
# taken in turn (bash's time): sets best_time_a and best_time_b
one_time() { { TIMEFORMAT='%R %U %S'; time sh -c "$1" >/dev/null 2>&1; } 2>&1 | awk '{ print $1, $2 + $3 }'; }
best_times() {
  local w c bw="" bwb="" ca="" cb=""
  for _ in $(seq "$runs"); do
    read -r w c < <(one_time "$1")
    if [ -z "$bw" ] || [ "$(echo "$w < $bw" | bc)" = 1 ]; then bw=$w; ca=$c; fi
    read -r w c < <(one_time "$2")
    if [ -z "$bwb" ] || [ "$(echo "$w < $bwb" | bc)" = 1 ]; then bwb=$w; cb=$c; fi
  done
  best_time_a="$bw $ca"; best_time_b="$bwb $cb"
}

printf '%-5s %9s %9s %9s %9s | %8s %8s | %8s %8s %6s | %8s %8s %6s\n' workload plain_s ltr_s ht_s \
  "overhead" "ltr_B/ev" "ht_B/ev" "ltr_an_s" "ht_pr_s" "wall_x" "ltr_cpu" "ht_cpu" "cpu_x"
for w in "${workloads[@]}"; do
  cmd_of "$w"
  traced_cmd=("$ltr" record --force -o "$tmp/run.ltr" -- "${cmd[@]}")
  ht_cmd=(heaptrack "${ht_opts[@]}" -o "$tmp/run.ht" "${cmd[@]}")
  best_runs cmd traced_cmd ht_cmd
  plain=$best_a traced=$best_b ht=$best_c
  # the traces the sizes and the analysis are measured on
  "$ltr" record --force -o "$tmp/$w.ltr" -- "${small[@]}" >/dev/null 2>&1
  heaptrack -o "$tmp/$w.ht" "${small[@]}" >/dev/null 2>&1 || { echo "$w: heaptrack failed on this workload"; continue; }
  htfile=$(ls "$tmp/$w.ht".*)
  "$ltr" analyze "$tmp/$w.ltr" --format json >"$tmp/a.json"
  events=$(grep -o '"heap_events":[0-9]*' "$tmp/a.json" | cut -d: -f2)
  best_times "'$ltr' analyze '$tmp/$w.ltr' --format json" "heaptrack_print '$htfile'"
  read -r aw ac <<<"$best_time_a"
  read -r hw hc <<<"$best_time_b"
  label=$w; [ "${small[*]}" = "${cmd[*]}" ] || label="$w*"
  awk -v w="$label" -v p="$plain" -v l="$traced" -v h="$ht" -v e="$events" \
      -v ls="$(stat -c %s "$tmp/$w.ltr")" -v hs="$(stat -c %s "$htfile")" \
      -v aw="$aw" -v ac="$ac" -v hw="$hw" -v hc="$hc" 'BEGIN {
    printf "%-8s %9.3f %9.3f %9.3f %9.3f | %8.3f %8.3f | %8.3f %8.3f %6.2f | %8.3f %8.3f %6.2f\n",
      w, p, l, h, (l - p) / (h - p), ls / e, hs / e, aw, hw, hw / aw, ac, hc, hc / ac }'
done
echo "overhead: ltr's added time over heaptrack's (goal at most 0.2 on deep; heap not above 0.12)."
echo "B/ev: trace bytes per heap event (goal: ltr at most heaptrack). wall_x, cpu_x: heaptrack_print's"
echo "time over ltr analyze's (goals: 5 and 3). $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)."
