#!/usr/bin/env bash
# The dormant agent's cost per malloc+free pair: without the agent, preloaded,
# and dlopen'ed late. Usage: bench/agent/run.sh [BUILD_DIR] (default build).
set -euo pipefail
cd "$(dirname "$0")/../.."
b=${1:-build}
agent=$(realpath "$b/lib/libltr-heap.so")
export LTR_RUNTIME_DIR=$(mktemp -d) # no session anywhere: dormant
trap 'rm -rf "$LTR_RUNTIME_DIR"' EXIT
echo "no agent:     $("$b/bench/dormant")"
echo "preloaded:    $(LD_PRELOAD="$agent" "$b/bench/dormant")"
echo "late (dlopen): $("$b/bench/dormant" "$agent")"
