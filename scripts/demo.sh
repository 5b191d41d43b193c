#!/usr/bin/env bash
# Builds ltr and runs the demo: records a small program with four known leaks
# (demo/leaky.c: in a thread, through realloc, in a dlopen'd library, in C++)
# with `ltr record`, then shows what `ltr analyze` makes of the trace, and
# writes its page with `ltr report`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh build
ltr=build/bin/ltr
export LTR_RUNTIME_DIR=$(mktemp -d /tmp/ltr-demo-XXXXXX)
trap 'rm -rf "$LTR_RUNTIME_DIR"' EXIT
trace=$LTR_RUNTIME_DIR/leaky.ltr
echo "\$ ltr record -o $trace -- build/demo/leaky"
$ltr record -o "$trace" -- build/demo/leaky
echo
echo "\$ ltr analyze $trace --top 5"
$ltr analyze "$trace" --top 5
page=build/demo/leaky.html
rm -f "$page"
echo
echo "\$ ltr report $trace -o $page"
$ltr report "$trace" -o "$page"
echo "open $page in a browser: memory over time, the stacks, a flame graph"
