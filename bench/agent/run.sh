#!/usr/bin/env bash
# The dormant agent's cost per malloc+free pair: without the agent, preloaded,
# and dlopen'ed late; and what a late agent adds to each dlopen (python3
# importing 29 C extension modules, median of 11 runs).
# Usage: bench/agent/run.sh [BUILD_DIR] (default build).
set -euo pipefail
cd "$(dirname "$0")/../.."
b=${1:-build}
agent=$(realpath "$b/lib/libltr-heap.so")
export LTR_RUNTIME_DIR=$(mktemp -d) # no session anywhere: dormant
trap 'rm -rf "$LTR_RUNTIME_DIR"' EXIT
echo "no agent:     $("$b/bench/dormant")"
echo "preloaded:    $(LD_PRELOAD="$agent" "$b/bench/dormant")"
echo "late (dlopen): $("$b/bench/dormant" "$agent")"
median() { sort -n | sed -n 6p; }
none=$(for i in $(seq 11); do python3 bench/agent/imports.py; done | median)
late=$(for i in $(seq 11); do python3 bench/agent/imports.py "$agent"; done | median)
echo "python3 import of a C extension (ms, median of 11): no agent $none, late agent $late"
