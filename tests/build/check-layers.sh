#!/usr/bin/env bash
# The layers of src/ hold in the build: for every folder, a file that includes
# the interface header of each other part is compiled with exactly the include
# directories the build gives that folder (layers.txt, tests/build/CMakeLists.txt).
# An include of a part it declares must compile; an include of a part it can
# reach by no declared path must fail, as must analyze's include of the
# reader's private header. The graph printed at the top of docs/design.md
# must be this declared graph, and it must have no cycle.
# Usage: check-layers.sh CC layers.txt docs/design.md
set -euo pipefail
cc=$1 layers=$2 design=$3
tmp=$(mktemp -d /tmp/ltr-layers-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0
declare -A pub priv header incs
parts=()
while IFS='|' read -r p pu pr h inc; do
  parts+=("$p"); pub[$p]=$pu; priv[$p]=$pr; header[$p]=$h; incs[$p]=$inc
done <"$layers"

# Parts reachable from p by declared edges (public or private), p included.
reach() {
  local todo=("$1") seen=" $1 " q d
  while [ ${#todo[@]} -gt 0 ]; do
    q=${todo[0]}; todo=("${todo[@]:1}")
    for d in ${pub[$q]:-} ${priv[$q]:-}; do
      [[ $seen == *" $d "* ]] && continue
      seen+="$d "; todo+=("$d")
    done
  done
  echo "$seen"
}

# Fails only when the header is not there for that part (not for any other error).
hidden() { # part, include line
  if compiles "$1" "$2"; then return 1; fi
  grep -q 'No such file or directory' "$tmp/err"
}

# The part's -I flags, in flags.
part_flags() {
  local d
  flags=()
  IFS=';' read -ra dirs <<<"${incs[$1]}"
  for d in "${dirs[@]}"; do [ -n "$d" ] && flags+=("-I$d"); done
}

compiles() { # part, include line
  local flags
  part_flags "$1"
  printf '#include %s\n' "$2" >"$tmp/probe.c"
  "$cc" -fsyntax-only -D_GNU_SOURCE "${flags[@]}" "$tmp/probe.c" 2>"$tmp/err"
}

# Prints those of the include lines the part can include (not hidden from
# it), all looked up by one run of the preprocessor: with -M -MG a header
# it does not find is listed as written ("q/h.h"), one it finds with its
# directory. One compiler run for each include took 98 s at load 15 (~340
# runs); should the run fail for another reason, each is tried alone.
not_hidden() { # part, include lines...
  local p=$1 flags inc
  shift
  part_flags "$p"
  printf '#include %s\n' "$@" >"$tmp/probe.c"
  if ! "$cc" -M -MG -D_GNU_SOURCE "${flags[@]}" "$tmp/probe.c" >"$tmp/deps" 2>"$tmp/err"; then
    for inc in "$@"; do hidden "$p" "$inc" || echo "$inc"; done
    return
  fi
  tr -s ' \\' '\n\n' <"$tmp/deps" >"$tmp/deplist"
  for inc in "$@"; do
    inc=${inc//\"/}
    grep -qxF "$inc" "$tmp/deplist" || echo "\"$inc\""
  done
}

for p in "${parts[@]}"; do
  r=$(reach "$p")
  [[ " ${pub[$p]} ${priv[$p]} " =~ " $p " ]] && { echo "FAIL: $p depends on itself"; fail=1; }
  unreachable=()
  for q in "${parts[@]}"; do
    [ "${header[$q]}" = - ] && continue
    [ "$q" = "$p" ] && continue
    inc="\"$q/${header[$q]}\""
    if [[ " ${pub[$p]} ${priv[$p]} " == *" $q "* ]]; then
      compiles "$p" "$inc" || { echo "FAIL: $p declares $q but cannot include $inc: $(head -1 "$tmp/err")"; fail=1; }
    elif [[ $r != *" $q "* ]]; then
      unreachable+=("$inc")
    fi
  done
  if [ ${#unreachable[@]} -gt 0 ]; then
    while IFS= read -r inc; do
      q=${inc#\"}
      [ -n "$inc" ] && { echo "FAIL: $p includes $inc without declaring ${q%%/*}"; fail=1; }
    done < <(not_hidden "$p" "${unreachable[@]}")
  fi
  # A cycle: p reachable from one of its own dependencies.
  for d in ${pub[$p]} ${priv[$p]}; do
    [[ $(reach "$d") == *" $p "* ]] && { echo "FAIL: cycle between $p and $d"; fail=1; }
  done
done
# Private headers stay private even to a part that declares their folder.
hidden analyze '"format/reader.h"' || { echo "FAIL: analyze can include format/reader.h"; fail=1; }
compiles analyze '"format/blocks.h"' || { echo "FAIL: analyze cannot include format/blocks.h"; fail=1; }
hidden event '"format/writer.h"' || { echo "FAIL: event can include the format's writer"; fail=1; }
hidden symbols '"analyze/analyze.h"' || { echo "FAIL: symbols can include analyze"; fail=1; }

# docs/design.md shows this graph: the lines between its two markers.
want=$(for p in "${parts[@]}"; do
  deps=$(echo ${pub[$p]} ${priv[$p]} | tr ' ' '\n' | sort | tr '\n' ' ' | sed 's/ $//')
  printf '%-9s->%s\n' "$p" "${deps:+ $deps}"
done)
have=$(sed -n '/^<!-- layers: begin/,/^<!-- layers: end/p' "$design" | grep -E '^[a-z]+ +->' || true)
if [ "$want" != "$have" ]; then
  echo "FAIL: the dependency list of docs/design.md is not the build's; it should read:"
  echo "$want"
  fail=1
fi
[ $fail = 0 ] && echo "layers hold: ${#parts[@]} folders, each includes only what it declares, no cycle"
exit $fail
