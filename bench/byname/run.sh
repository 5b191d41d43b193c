#!/usr/bin/env bash
# The start-up cost of the by-name setting (ltr heaptracingconfig) for
# programs of other names (the shim alone) and of an enabled name (the
# dormant agent loaded too): the median and mean wall-clock time of N runs
# of python3, perl, git, bash and a C program, in microseconds. The setting
# is made in a private mount namespace with an overlay over /etc, so the
# machine's /etc/ld.so.preload never changes. Root only.
# Usage: bench/byname/run.sh [BUILD_DIR] [N] (default build, 100)
set -euo pipefail
cd "$(dirname "$0")/../.."
b=$(realpath "${1:-build}")
n=${2:-100}
[ "$(id -u)" = 0 ] || { echo "run it as root (it mounts a private /etc)" >&2; exit 1; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir "$scratch/u" "$scratch/w"
export LTR_RUNTIME_DIR=$scratch # no session: the agent stays dormant
unshare -m bash -s "$b" "$n" "$scratch" <<'INNER'
set -euo pipefail
b=$1 n=$2 s=$3
mount --make-rprivate /
mount -t overlay overlay -o "lowerdir=/etc,upperdir=$s/u,workdir=$s/w" /etc
# heaptracingconfig copies the shim and the agent only from where root alone
# can write, the whole way from / (docs/design.md, "What root runs or
# copies"): a copy of the build's in this private /etc, wherever the build is
inst=/etc/bench-install
(umask 022; mkdir -p $inst/bin $inst/lib; cp "$b/bin/ltr" $inst/bin/; cp -P "$b"/lib/*.so* $inst/lib/; chmod -R go-w $inst)
progs=("/usr/bin/python3 -c pass" "perl -e 1" "git --version" "bash -c :" "$b/bench/startup 0 true")
names="python3.11 perl git bash startup"
mode() { # off | shim (another name enabled) | agent (their own names enabled too)
  for x in no-such-program $names; do $inst/bin/ltr heaptracingconfig $x disable >/dev/null 2>&1 || true; done
  [ "$1" = off ] || $inst/bin/ltr heaptracingconfig no-such-program enable >/dev/null
  [ "$1" != agent ] || for x in $names; do $inst/bin/ltr heaptracingconfig $x enable >/dev/null; done
}
# Rounds alternate the three modes, so that a machine whose load drifts
# weighs on each alike; each figure is the median of the rounds' medians.
for r in 1 2 3 4 5; do
  for m in off shim agent; do
    mode $m
    for i in "${!progs[@]}"; do
      # shellcheck disable=SC2086
      echo "$m $i $("$b/bench/startup" "$n" ${progs[$i]})" >> "$s/results"
    done
  done
done
mode off
echo "median start-up, us (5 rounds of $n runs; shim: another name enabled; agent: its own name enabled, dormant)"
printf "  %-18s %8s %8s %8s %10s %10s\n" program off shim agent "shim-off" "agent-off"
for i in "${!progs[@]}"; do
  med() { awk -v m="$1" -v i="$i" '$1 == m && $2 == i { print $3 }' "$s/results" | sort -n | sed -n 3p; }
  off=$(med off) shim=$(med shim) agent=$(med agent)
  p=${progs[$i]}
  printf "  %-18s %8s %8s %8s %+10d %+10d\n" "${p##*/}" "$off" "$shim" "$agent" $((shim - off)) $((agent - off))
done
INNER
