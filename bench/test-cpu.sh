#!/usr/bin/env bash
# The CPU of each ctest test (or of each case of the named tests): every
# test runs in a cpuacct cgroup of its own (cgroup v1,
# /sys/fs/cgroup/cpuacct/NAME), so that every process it starts is counted,
# the daemonized recorders and the traced programs included, which
# /usr/bin/time and accounting by parent lose. The ASan stage of
# scripts/test.sh is bound by CPU (docs/benchmarks.md, "The test suite's
# time (session 37)"): this says where it goes. Prints one line a test,
# "CPU-seconds wall-seconds status name", then the sum; a test's processes
# still running when it ends are waited for (60 s at most) before its
# cgroup is read.
# Usage: bench/test-cpu.sh BUILD_DIR [REGEX]        each ctest test matching
#        bench/test-cpu.sh BUILD_DIR TEST CASE...   cases of one test program
#                                                   (LTR_TEST_ONLY, unsharded)
# JOBS (default 3) tests run at once; as root, cgroup v1 mounted.
# For the ASan build, ASAN_OPTIONS and UBSAN_OPTIONS as scripts/test.sh sets them.
set -euo pipefail
cd "$(dirname "$0")/.."
build=$1; shift
regex=${1:-.}; [ $# -gt 0 ] && shift
cases=("$@")
root=/sys/fs/cgroup/cpuacct
[ -w "$root" ] || { echo "test-cpu.sh: $root is not writable (root, cgroup v1)" >&2; exit 1; }
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
work=$(mktemp -d /tmp/ltr-test-cpu-XXXXXX)

# ctest's tests as "name^_env;...^_command" (^_: the unit separator, not
# whitespace, which read would merge when the env is empty), the env list
# ;-separated,
# the dearest first (their COST, tests/CMakeLists.txt) as ctest starts them.
ctest --test-dir "$build" --show-only=json-v1 -R "$regex" | jq -r '.tests |
  sort_by(-([.properties[]? | select(.name == "COST") | .value][0] // 0)) | .[] |
  [.name, ([.properties[]? | select(.name == "ENVIRONMENT") | .value[]] | join(";")),
   (.command | map(@sh) | join(" "))] | join("\u001f")' >"$work/tests"

# Runs one test (name, env list, command, label) in the cgroup named by its
# label; prints its line.
run_one() {
  local name=$1 envs=$2 cmd=$3 label=$4 group
  group=$root/ltr-cpu-$$-${label//[^A-Za-z0-9_.-]/_}
  mkdir "$group"
  local env_args=() e start=$SECONDS status=0
  IFS=';' read -r -a env_args <<<"$envs"
  [ -n "${LTR_TEST_ONLY:-}" ] && env_args=("${env_args[@]/#LTR_TEST_SHARD=*/LTR_TEST_SHARD=}")
  sh -c 'echo $$ >"$1/cgroup.procs"; shift; exec "$@"' sh "$group" env "${env_args[@]}" \
    sh -c "exec $cmd" >"$work/$label.log" 2>&1 || status=$?
  for e in $(seq 600); do [ -s "$group/cgroup.procs" ] || break; sleep 0.1; done
  local ns; ns=$(cat "$group/cpuacct.usage")
  [ -s "$group/cgroup.procs" ] && echo "test-cpu.sh: $label left processes running" >&2
  for e in $(seq 50); do rmdir "$group" 2>/dev/null && break; sleep 0.1; done # a process still leaving it
  printf '%7.1f %5d %3d %s\n' "$(awk -v ns="$ns" 'BEGIN { print ns / 1e9 }')" $((SECONDS - start)) "$status" "$label"
}

jobs=${JOBS:-3}
results=$work/results
if [ ${#cases[@]} -gt 0 ]; then
  line=$(head -1 "$work/tests") # the program's first shard, run whole with LTR_TEST_ONLY
  IFS=$'\x1f' read -r name envs cmd <<<"$line"
  for c in "${cases[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
    LTR_TEST_ONLY=$c run_one "$name" "$envs;LTR_TEST_ONLY=$c" "$cmd" "${name%.*}:$c" >>"$results" &
  done
else
  while IFS=$'\x1f' read -r name envs cmd; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
    run_one "$name" "$envs" "$cmd" "$name" >>"$results" &
  done <"$work/tests"
fi
wait
sort -rn "$results"
awk '{ cpu += $1 } END { printf "%7.1f s of CPU in all, load %s\n", cpu, load }' \
  load="$(cut -d' ' -f1-3 /proc/loadavg)" "$results"
echo "(logs in $work)"
