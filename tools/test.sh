#!/usr/bin/env bash
# The whole test suite: set up (packages incl. Debian's PyTorch for the exporter test, configure,
# build), then run ctest for the g++ Release build and for the ASan+UBSan build.
# Slow and GPU tests are excluded by label (run them with: ctest --preset all). The libFuzzer smoke run
# (clang 14, 10 s per target) is `tools/test.sh --fuzz` or `tools/bootstrap.sh fuzz && ctest --preset fuzz`;
# it is left out of the default run to keep CI within its 40 minutes on 2 cores (test_fuzz_replay,
# in the unit tests, replays every seed and crash input in both builds).
set -euo pipefail
cd "$(dirname "$0")/.."
presets=(default sanitize)
[ "${1:-}" = "--fuzz" ] && presets+=(fuzz)
start=$(date +%s)
for preset in "${presets[@]}"; do
  echo "== memplan: build and test preset '$preset' ($(( $(date +%s) - start )) s so far)"
  tools/bootstrap.sh "$preset" --with-torch
  ctest --preset "$preset"
done
echo "== memplan: ${presets[*]} passed in $(( $(date +%s) - start )) s"
