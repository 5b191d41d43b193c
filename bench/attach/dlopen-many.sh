#!/usr/bin/env bash
# What a program's dlopen costs once ltr has attached to it, beside many
# libraries: a late agent sweeps the modules' relocation entries after each
# dlopen, so that the new one is redirected too (src/agent/redirect.c).
# tests/programs' inject-target dlopens N copies of a small library (800
# here) in a round, calling into each, then closes them all; it prints the
# mean ns per dlopen over the round and over its last tenth (the most
# modules loaded); then the same for the call into each new copy (its
# first heap event, a new stack: the agent looks for new modules there,
# preloaded or late, modules.c), the mean ns per dlclose (the agent looks
# for unloaded ones) and the whole round in ms. Rounds: before `ltr start
# heap --pid`, after it, and the same program under `ltr record` (the agent
# preloaded: no sweep). Twice: libheapchain.so bound lazily, and
# libheapchain-now.so (-z now: its slots are in RELRO, which the agent must
# find read-only before it opens them, as in a distribution built so);
# LIBS=lazy or LIBS=now for one. Not a test: it prints.
# Usage: bench/attach/dlopen-many.sh [BUILD_DIR] [N]
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
n=${2:-800}
ltr=$build/bin/ltr
target=$build/tests/inject-target
tmp=$(mktemp -d /tmp/ltr-bench-dlopen-XXXXXX)
export TMPDIR=$tmp LTR_RUNTIME_DIR=$tmp/rt
pid=""
trap '[ -z "$pid" ] || kill $pid 2>/dev/null || true; "$ltr" cancel >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT

# one library: a round before the attach, one after, one preloaded
rounds() {
    local lib=$1 line="" before after pre
    coproc T { exec "$target" dlopen-many "$n" "$lib" 2>"$tmp/target.err"; }
    pid=$T_PID
    read -r line <&"${T[0]}" || true
    [ "$line" = ready ] || { cat "$tmp/target.err" >&2; echo "inject-target did not start (a build without its dlopen-many mode?)" >&2; exit 1; }
    echo go >&"${T[1]}"; read -r _ before <&"${T[0]}"
    "$ltr" start heap --filemode --pid "$pid" >/dev/null
    echo go >&"${T[1]}"; read -r _ after <&"${T[0]}"
    "$ltr" stop "$tmp/attached-$(basename "$lib").ltr" >/dev/null 2>&1
    eval "exec ${T[1]}>&-"; wait "$pid" 2>/dev/null || true; pid=""
    pre=$(printf 'go\n' | "$ltr" record -o "$tmp/preloaded-$(basename "$lib").ltr" -- "$target" dlopen-many "$n" "$lib" 2>/dev/null | grep '^cost ')
    echo "$(basename "$lib"), $n in a round (ns: mean of the round / of its last tenth):"
    echo "  before the attach:  $(costs $before)"
    echo "  after the attach:   $(costs $after)"
    echo "  preloaded:          $(costs ${pre#cost })"
}
# inject-target's figures: dlopen mean, last; event mean, last; dlclose mean; round ms
costs() { echo "dlopen $1 / $2, first event $3 / $4, dlclose $5, round ${6} ms"; }
case ${LIBS:-both} in lazy | both) rounds "$build/tests/libheapchain.so" ;; esac
case ${LIBS:-both} in now | both) rounds "$build/tests/libheapchain-now.so" ;; esac
