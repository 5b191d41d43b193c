#!/usr/bin/env bash
# A public library exports exactly its public API: the names that its headers
# declare with LTR_API (public-api.py), no more (no internal symbol leaks into
# a program's namespace) and no less (every declared function is there). With
# --light, the library also needs none of the heavy libraries, so a program
# that only writes events loads no XML parser, DWARF reader or compressor.
# Usage: check-exports.sh LIB [--light] HEADER...
set -euo pipefail
lib=$1; shift
light=0
if [ "${1:-}" = --light ]; then light=1; shift; fi
here=$(dirname "$0")
want=$(python3 "$here/public-api.py" "$@")
# nm -D lists defined dynamic symbols with their version (name@@LTR_0).
have=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDRBVWuiG]$/ {print $3}' | sed 's/@.*//' | grep -v '^LTR_0$' | sort -u)
if [ "$want" != "$have" ]; then
  echo "FAIL: $lib exports other names than its headers' LTR_API ones ($*)"
  diff <(echo "$want") <(echo "$have") | sed -n 's/^< /  declared, not exported: /p; s/^> /  exported, not declared: /p'
  exit 1
fi
echo "$lib exports its $(echo "$want" | wc -l) public names and nothing else"
if [ $light = 1 ]; then
  needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  heavy=$(echo "$needed" | grep -E '^lib(xml2|dw|elf|zstd|stdc\+\+|z|nettle|unwind|iberty)\.so' || true)
  if [ -n "$heavy" ]; then
    echo "FAIL: $lib needs $(echo $heavy)"
    exit 1
  fi
  echo "$lib needs only: $(echo $needed)"
fi
