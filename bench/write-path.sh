#!/usr/bin/env bash
# Benchmark of the producer write path, side by side with LTTng-UST when it is
# installed (Debian: liblttng-ust-dev lttng-tools): the same event (a u64 and a
# u32) from 1, 2 and 4 threads into a flight-recorder ring (ltr memory mode,
# LTTng snapshot/overwrite channel) of 64 buffers of 1 MiB, so nothing waits
# on a disk. Prints events per second and ns per event for each.
# Usage: bench/write-path.sh [EVENTS_PER_THREAD]   (after scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build}
n=${1:-2000000}
export LTR_RUNTIME_DIR=$(mktemp -d /tmp/ltr-bench-XXXXXX)
export LTTNG_HOME=$LTR_RUNTIME_DIR
. bench/peers/lttng-session.sh # the cwd is the repository (above)
cleanup() {
  "$build/bin/ltr" cancel --instance bench >/dev/null 2>&1 || true
  lttng_snapshot_cleanup
  rm -rf "$LTR_RUNTIME_DIR"
}
trap cleanup EXIT
echo "== write path: $(nproc) CPUs, kernel $(uname -r), $n events per thread"
"$build/bin/ltr" start --instance bench --buffer-size 1024 --buffers 64 --provider Ltr.Bench >/dev/null
"$build/bench/write_path" "$n"
"$build/bin/ltr" cancel --instance bench >/dev/null
if [ -x "$build/bench/write_path_lttng" ] && command -v lttng-sessiond >/dev/null; then
  lttng_snapshot_start bench 'ltr_bench:*'
  "$build/bench/write_path_lttng" "$n"
  lttng stop >/dev/null
else
  echo "lttng-ust     not installed: apt-get install liblttng-ust-dev lttng-tools, then rebuild"
fi
