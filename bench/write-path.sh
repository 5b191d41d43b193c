#!/usr/bin/env bash
# Benchmark of the producer write path: starts a memory-mode session (the
# ring overwrites itself, so nothing waits on the disk), runs bench/write_path
# with 1, 2 and 4 threads, and prints events per second and ns per event.
# Usage: bench/write-path.sh [EVENTS_PER_THREAD]   (after scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build}
export LTR_RUNTIME_DIR=$(mktemp -d /tmp/ltr-bench-XXXXXX)
trap '"$build/bin/ltr" cancel --instance bench >/dev/null 2>&1 || true; rm -rf "$LTR_RUNTIME_DIR"' EXIT
"$build/bin/ltr" start --instance bench --buffer-size 1024 --buffers 64 --provider Ltr.Bench >/dev/null
echo "== ltr write path ($(nproc) CPUs, $(uname -r)), events of 12 payload bytes"
"$build/bench/write_path" "${1:-2000000}"
