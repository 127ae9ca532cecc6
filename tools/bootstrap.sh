#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine (as root) for memplan: installs the Debian packages the build
# needs when they are missing, then configures and builds one CMake preset (default: "default").
# Usage: tools/bootstrap.sh [PRESET] [--with-torch]
set -euo pipefail
cd "$(dirname "$0")/.."
preset=default
with_torch=0
for a in "$@"; do
  case "$a" in
    --with-torch) with_torch=1 ;;
    *) preset="$a" ;;
  esac
done

pkgs=(cmake ninja-build g++ clang-14 pkg-config zlib1g-dev libeigen3-dev libboost-graph-dev
      coinor-libcbc-dev doctest-dev nlohmann-json3-dev libcli11-dev python3
      libjemalloc2 libtcmalloc-minimal4 libmimalloc2.0)  # allocators bench/allocator compares against (dlopen'ed, optional)
[ "$with_torch" = 1 ] && pkgs+=(python3-torch python3-torchvision)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "memplan bootstrap: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" != 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

jobs=$(nproc 2>/dev/null || echo 2)
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$jobs"
