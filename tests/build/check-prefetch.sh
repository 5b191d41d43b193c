#!/usr/bin/env bash
# tests/build/check-prefetch.sh BINARY FUNCTION... — each FUNCTION of BINARY
# holds a prefetch instruction. The analysis's batch loop prefetches the live
# table's slot of an event a few events ahead; GCC once dropped every one of
# those prefetches without a word: its IPA analysis took the small function
# holding __builtin_prefetch for one without side effects and removed the
# calls (perl's leak of 2 M blocks then missed the cache at 77 % of the
# model's time, and its analysis took 1.27 times as long).
set -euo pipefail
bin=$1; shift
command -v objdump >/dev/null || { echo "objdump is not installed (binutils)"; exit 1; }
bad=0
for fn in "$@"; do
  n=$(objdump -d --no-show-raw-insn "$bin" | awk -v f="<$fn>:" '$2 == f { on = 1; next } on && /^$/ { on = 0 } on' |
      grep -c 'prefetch' || true)
  if [ "$n" -eq 0 ]; then
    echo "$bin: no prefetch instruction in $fn (the compiler dropped __builtin_prefetch)"
    bad=1
  else
    echo "$fn: $n prefetch instructions"
  fi
done
exit $bad
