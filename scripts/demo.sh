#!/usr/bin/env bash
# Builds ltr and runs the demo: records a small program and shows the trace.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh build
exec build/demo/demo.sh
