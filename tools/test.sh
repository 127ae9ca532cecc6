#!/usr/bin/env bash
# The whole test suite: set up (packages incl. Debian's PyTorch for the exporter test, configure,
# build), then run ctest for the g++ Release build and for the ASan+UBSan build.
# Slow and GPU tests are excluded by label (run them with: ctest --preset all).
set -euo pipefail
cd "$(dirname "$0")/.."
for preset in default sanitize; do
  echo "== memplan: build and test preset '$preset'"
  tools/bootstrap.sh "$preset" --with-torch
  ctest --preset "$preset"
done
