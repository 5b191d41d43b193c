#!/usr/bin/env bash
# Builds ltr and runs the demo: a recording session, a program writing events
# into it, and what the trace holds.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh build
ltr=build/bin/ltr
export LTR_RUNTIME_DIR=$(mktemp -d /tmp/ltr-demo-XXXXXX)
trace=$LTR_RUNTIME_DIR/demo.ltr
trap '$ltr cancel --instance demo >/dev/null 2>&1 || true' EXIT
echo "\$ ltr start --instance demo --provider Example.Hello"
$ltr start --instance demo --provider Example.Hello
echo "\$ build/examples/hello-provider; ltr marker 'after the requests'"
build/examples/hello-provider
$ltr marker --instance demo "after the requests"
echo "\$ ltr stop --instance demo $trace 'demo run'"
$ltr stop --instance demo "$trace" "demo run"
echo "\$ ltr info $trace"
$ltr info "$trace"
echo "\$ ltr dump $trace"
$ltr dump "$trace"
