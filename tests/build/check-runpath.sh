#!/usr/bin/env bash
# tests/build/check-runpath.sh BUILD_DIR — no program or library of the build
# tree has an empty entry in its RPATH or RUNPATH: the loader takes an empty
# entry for the current directory, so root running build/bin/ltr from a
# directory another user can write would load that user's libz.so.1 (an
# attacker review found CMake's install padding, "::::::::::::::", there).
# The ELF files are told by their first bytes, read by the shell, and one
# readelf reads them all: head, grep, readelf and sed for each of ~170 files
# took 24 s (10 of them CPU) at load 13, process starts being dear here.
# The two libraries ltr puts into other programs, the agent and the by-name
# shim, have no run path at all: the shim's copy in /etc/ltr carried
# $ORIGIN/../lib, /etc/lib, into every process's library search.
set -euo pipefail
build=$1
elves=()
while IFS= read -r -d '' f; do
  magic=
  IFS= read -r -d '' -n 4 magic <"$f" 2>/dev/null || true
  [ "$magic" = $'\x7fELF' ] && elves+=("$f")
done < <(find "$build/bin" "$build/lib" "$build/tests" "$build/bench" "$build/examples" "$build/demo" \
              -type f \( -perm -u+x -o -name '*.so*' \) -print0 2>/dev/null)
checked=${#elves[@]}
[ "$checked" -gt 10 ] || { echo "only $checked ELF files under $build: not a build tree"; exit 1; }
# readelf heads each file's part "File: NAME" when given more than one
bad=$(readelf -d "${elves[@]}" 2>/dev/null | awk '
  /^File: / { f = substr($0, 7) }
  /\(R(UN)?PATH\)/ { p = $0; sub(/.*\[/, "", p); sub(/\]$/, "", p)
                     if (index(":" p ":", "::")) { printf "%s: empty entry (the current directory) in its run path [%s]\n", f, p; n++ } }
  END { exit n > 0 }') || { echo "$bad"; exit 1; }
for lib in libltr-heap.so libltr-byname.so; do
  if readelf -d "$build/lib/$lib" | grep -E '\(R(UN)?PATH\)'; then
    echo "$lib has a run path: it is loaded into other programs, whose search it must not change"; exit 1
  fi
done
echo "$checked ELF files, no empty run path entry; the agent and the shim have none"
