#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine (as root) for memplan: installs the Debian packages the build
# needs when they are missing, then configures and builds one CMake preset (default: "default").
# Usage: tools/bootstrap.sh [PRESET] [--with-torch] [--target TARGET] [-DVAR=VALUE ...]
#        tools/bootstrap.sh --install-only build|rest|all [--with-torch]
#        tools/bootstrap.sh [PRESET] --no-install ...
#   TARGET: build only that, e.g. memplan_cli; -D: cache variables on top of the preset's.
#   --install-only SET: install that set of packages and stop. `build`: what a g++ preset needs to
#     configure and build; `rest`: clang 14 (the sanitize, clang, tsan and fuzz presets), the allocators
#     bench/allocator dlopens, and with --with-torch PyTorch (tests labelled torch); `all`: both.
#     tools/test.sh installs `rest` in the background while the default preset builds.
#   --no-install: configure and build only (the packages are there, or another process installs them).
# Progress goes to standard error: what is installed (apt's "Setting up" lines) and the build's [n/N] lines.
set -euo pipefail
cd "$(dirname "$0")/.."
preset=default
with_torch=0
install_set=all
build=1
targets=()
defines=()
while [ $# -gt 0 ]; do
  case "$1" in
    --with-torch) with_torch=1 ;;
    --target) targets+=(--target "$2"); shift ;;
    --install-only) install_set="$2"; build=0; shift ;;
    --no-install) install_set=none ;;
    -D*) defines+=("$1") ;;
    *) preset="$1" ;;
  esac
  shift
done

build_pkgs=(cmake ninja-build g++ pkg-config zlib1g-dev libeigen3-dev libboost-graph-dev
            coinor-libcbc-dev doctest-dev nlohmann-json3-dev libcli11-dev python3)
rest_pkgs=(clang-14 libclang-rt-14-dev
           libjemalloc2 libtcmalloc-minimal4 libmimalloc2.0)  # allocators bench/allocator compares against (dlopen'ed, optional)
[ "$with_torch" = 1 ] && rest_pkgs+=(python3-torch python3-torchvision)
case "$install_set" in
  build) pkgs=("${build_pkgs[@]}") ;;
  rest) pkgs=("${rest_pkgs[@]}") ;;
  all) pkgs=("${build_pkgs[@]}" "${rest_pkgs[@]}") ;;
  none) pkgs=() ;;
  *) echo "memplan bootstrap: --install-only takes build, rest or all, not '$install_set'" >&2; exit 2 ;;
esac
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
[ "$build" = 1 ] || exit 0

jobs=$(nproc 2>/dev/null || echo 2)
echo "memplan bootstrap: configure preset '$preset'${defines[*]:+ with ${defines[*]}}" >&2
cmake --preset "$preset" "${defines[@]}" >/dev/null
echo "memplan bootstrap: build ${targets[*]:-everything} with $jobs jobs" >&2
cmake --build --preset "$preset" -j "$jobs" "${targets[@]}" >&2
