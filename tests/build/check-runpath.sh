#!/usr/bin/env bash
# tests/build/check-runpath.sh BUILD_DIR — no program or library of the build
# tree has an empty entry in its RPATH or RUNPATH: the loader takes an empty
# entry for the current directory, so root running build/bin/ltr from a
# directory another user can write would load that user's libz.so.1 (an
# attacker review found CMake's install padding, "::::::::::::::", there).
set -euo pipefail
build=$1
checked=0 bad=0
while IFS= read -r -d '' f; do
  head -c 4 "$f" 2>/dev/null | grep -q $'\x7fELF' || continue
  checked=$((checked + 1))
  path=$(readelf -d "$f" 2>/dev/null | sed -n 's/.*(R\(UN\)\?PATH).*\[\(.*\)\]$/\2/p')
  [ -n "$path" ] || continue
  case ":$path:" in
    *::*) echo "$f: empty entry (the current directory) in its run path [$path]"; bad=$((bad + 1)) ;;
  esac
done < <(find "$build/bin" "$build/lib" "$build/tests" "$build/bench" "$build/examples" "$build/demo" \
              -type f \( -perm -u+x -o -name '*.so*' \) -print0 2>/dev/null)
[ "$checked" -gt 10 ] || { echo "only $checked ELF files under $build: not a build tree"; exit 1; }
[ "$bad" -eq 0 ] || exit 1
echo "$checked ELF files, no empty run path entry"
