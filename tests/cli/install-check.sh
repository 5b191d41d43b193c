#!/usr/bin/env bash
# Installs the build into a fresh prefix and checks that the installed ltr runs
# with no environment help: finds its library (RPATH) and its built-in profiles.
set -euo pipefail
build=$1
prefix=$(mktemp -d /tmp/ltr-install-XXXXXX)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
for f in bin/ltr include/ltr/provider.h include/ltr/trace.h share/ltr/profiles/heap.wprp; do
  [ -e "$prefix/$f" ] || { echo "FAIL: $f was not installed"; exit 1; }
done
ls "$prefix"/lib*/libltr.so* >/dev/null || { echo "FAIL: libltr was not installed"; exit 1; }
out=$(env -i PATH=/usr/bin:/bin LTR_RUNTIME_DIR="$prefix/run" "$prefix/bin/ltr" profiles)
echo "$out" | grep -q "heap" || { echo "FAIL: the installed ltr does not list its built-in profiles"; exit 1; }
env -i PATH=/usr/bin:/bin "$prefix/bin/ltr" --version | grep -q "^ltr " || { echo "FAIL: --version"; exit 1; }
echo "installed ltr runs from $prefix"
