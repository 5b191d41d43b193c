#!/usr/bin/env bash
# Installs, with apt-get, the Debian packages ltr needs to build and test.
# Idempotent and silent when everything is already present.
set -euo pipefail
packages=(build-essential cmake ninja-build pkg-config libzstd-dev zlib1g-dev libxml2-dev
          libdw-dev libelf-dev libcmocka-dev zstd libarchive-dev libunwind-dev libiberty-dev rustc
          golang-go heaptrack binutils libdevel-nytprof-perl
          python3 git procps  # real programs the tests run beside ltr; pgrep
          strace  # holds a process's open() of the by-name shim (test_heaptracingconfig)
          systemd  # systemd-analyze verify: the ltr-watch@ and ltr boottrace units
          chromium  # opens ltr report's page in the tests (test_report)
          clang-14 libclang-rt-14-dev)  # the last two: the fuzz build (docs/fuzzing.md)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "install-deps: installing ${missing[*]}" >&2
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >/dev/null
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
