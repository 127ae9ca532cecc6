#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine (as root) for memplan: installs the Debian packages the build
# needs when they are missing, then configures and builds one CMake preset (default: "default").
# Usage: tools/bootstrap.sh [PRESET] [--with-torch] [--target TARGET] [-DVAR=VALUE ...]
#   (TARGET: build only that, e.g. memplan_cli; -D: cache variables on top of the preset's)
# Progress goes to standard error: what is installed (apt's "Setting up" lines) and the build's [n/N] lines.
set -euo pipefail
cd "$(dirname "$0")/.."
preset=default
with_torch=0
targets=()
defines=()
while [ $# -gt 0 ]; do
  case "$1" in
    --with-torch) with_torch=1 ;;
    --target) targets+=(--target "$2"); shift ;;
    -D*) defines+=("$1") ;;
    *) preset="$1" ;;
  esac
  shift
done

pkgs=(cmake ninja-build g++ clang-14 libclang-rt-14-dev pkg-config zlib1g-dev libeigen3-dev libboost-graph-dev
      coinor-libcbc-dev doctest-dev nlohmann-json3-dev libcli11-dev python3
      libjemalloc2 libtcmalloc-minimal4 libmimalloc2.0)  # allocators bench/allocator compares against (dlopen'ed, optional)
[ "$with_torch" = 1 ] && pkgs+=(python3-torch python3-torchvision)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "memplan bootstrap: installing ${#missing[@]} Debian packages: ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" != 0 ] && SUDO=sudo
  echo "memplan bootstrap: apt-get update" >&2
  $SUDO apt-get update -qq
  # One line per package as it is set up (the full apt output is long).
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${missing[@]}" |
    { grep --line-buffered -E '^(Setting up|E:)' || true; } | sed -u 's/^/memplan bootstrap:   /' >&2
fi

jobs=$(nproc 2>/dev/null || echo 2)
echo "memplan bootstrap: configure preset '$preset'${defines[*]:+ with ${defines[*]}}" >&2
cmake --preset "$preset" "${defines[@]}" >/dev/null
echo "memplan bootstrap: build ${targets[*]:-everything} with $jobs jobs" >&2
cmake --build --preset "$preset" -j "$jobs" "${targets[@]}" >&2
