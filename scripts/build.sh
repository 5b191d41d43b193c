#!/usr/bin/env bash
# Configures and builds ltr into DIR (default build/); extra arguments go to cmake.
# A new DIR is made for Ninja when it is installed (scripts/install-deps.sh
# installs it): CMake's Makefiles run make and `cmake -E` a few times for each
# of the ~230 targets, even when nothing changed (a build with nothing to do
# took 25 s of CPU with them, 0.2 s with Ninja; a whole build 206 s of CPU
# against 177 s). A DIR configured before keeps its generator.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}; shift || true
generator=()
if [ ! -f "$dir/CMakeCache.txt" ] && command -v ninja >/dev/null; then
  generator=(-G Ninja)
fi
cmake -S . -B "$dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
if grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' "$dir/CMakeCache.txt"; then
  # Ninja prints a failing command's output on stdout: kept, its progress not
  cmake --build "$dir" -j"$(nproc)" -- --quiet
else
  cmake --build "$dir" -j"$(nproc)" >/dev/null
fi
