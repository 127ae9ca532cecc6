#!/usr/bin/env bash
# The whole test suite: set up (packages incl. Debian's PyTorch for the exporter test, configure,
# build), then run ctest for the g++ Release build, the ASan+UBSan build, and a short libFuzzer run
# of every fuzz target (clang 14; 10 s each here, hours by hand: docs/reliability.md).
# Slow and GPU tests are excluded by label (run them with: ctest --preset all).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
for preset in default sanitize fuzz; do
  echo "== memplan: build and test preset '$preset' ($(( $(date +%s) - start )) s so far)"
  tools/bootstrap.sh "$preset" --with-torch
  ctest --preset "$preset"
done
echo "== memplan: all presets passed in $(( $(date +%s) - start )) s"
