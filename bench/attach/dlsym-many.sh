#!/usr/bin/env bash
# What a program's dlsym(RTLD_DEFAULT, "malloc") costs once ltr has attached
# to it, beside many libraries: a late agent answers such lookups with its
# hook where a preloaded one would be found (src/agent/lookup.c), and to
# know that, it looks at every module of the process once. tests/programs'
# inject-target loads N copies of a small library (800 here) and times 100
# lookups, best of 5 rounds, before `ltr start heap --pid` and after. Not
# a test: it prints.
# Usage: bench/attach/dlsym-many.sh [BUILD_DIR]
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
ltr=$build/bin/ltr
tmp=$(mktemp -d /tmp/ltr-bench-dlsym-XXXXXX)
export TMPDIR=$tmp LTR_RUNTIME_DIR=$tmp/rt
coproc T { exec "$build/tests/inject-target" dlsym-many; }
pid=$T_PID
trap 'kill $pid 2>/dev/null || true; "$ltr" cancel >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
line=""; read -r line <&"${T[0]}" || true
[ "$line" = ready ] || { echo "inject-target did not start (its stderr above; a build without its dlsym-many mode?)" >&2; exit 1; }
echo go >&"${T[1]}"; read -r _ before <&"${T[0]}"
"$ltr" start heap --filemode --pid "$pid" >/dev/null
echo go >&"${T[1]}"; read -r _ after <&"${T[0]}"
"$ltr" stop "$tmp/t.ltr" >/dev/null 2>&1
echo "dlsym(RTLD_DEFAULT, \"malloc\") beside 800 libraries: $before ns a call before the attach, $after ns after"
