#!/usr/bin/env bash
# The whole test suite, the command CI runs: set up (Debian packages incl. PyTorch for the exporter
# tests), configure, build, and run ctest for two builds:
#   default   g++ 12 Release (-O2): every test not labelled slow or gpu, the examples and header
#             self-containment checks compiled; here only the benchmarks that a smoke test runs, at -O0
#             (MEMPLAN_BENCH_SMOKE_ONLY, MEMPLAN_BENCH_OPTIMIZE: they say so when run), the CLI at the
#             tests' -O1 (MEMPLAN_APPS_OPTIMIZE);
#   sanitize  clang++ 14 with ASan + UBSan at -O1, asserts on: the unit tests, a 10 s libFuzzer smoke run
#             per fuzz target (label fuzz), and determinism.cross_build (this build's CLI against the
#             default build's, byte for byte).
# Both build the CLI's code and its policy registries as one translation unit (MEMPLAN_CLI_ONE_UNIT: less
# compiling in all than the two units side by side that a plain configure builds).
# Slow and GPU tests are excluded by label (the `all` preset builds and runs the slow ones). `tools/test.sh --fuzz`
# adds the `fuzz` preset (clang Release, MEMPLAN_FUZZ_SECONDS per target). The CI budget is 40 minutes
# on 2 cores; the figures of the last measured run are in docs/reliability.md.
set -euo pipefail
cd "$(dirname "$0")/.."
presets=(default sanitize)
[ "${1:-}" = "--fuzz" ] && presets+=(fuzz)
start=$(date +%s)
# Packages: what the default build needs first; the rest (clang 14, PyTorch, the allocators) installs in
# the background while the default preset compiles, and is waited for before its tests run. On a
# fresh machine that overlaps most of the installation with the build; where everything is installed
# both steps return at once.
tools/bootstrap.sh --install-only build
rest_log=$(mktemp)
tools/bootstrap.sh --install-only rest --with-torch >"$rest_log" 2>&1 &
rest_pid=$!
rest_done=0
for preset in "${presets[@]}"; do
  echo "== memplan: build and test preset '$preset' ($(( $(date +%s) - start )) s so far)"
  t0=$(date +%s)
  extra=(-DMEMPLAN_CLI_ONE_UNIT=ON)
  [ "$preset" = default ] && extra+=(-DMEMPLAN_BENCH_OPTIMIZE=-O0 -DMEMPLAN_BENCH_SMOKE_ONLY=ON -DMEMPLAN_APPS_OPTIMIZE=-O1)
  tools/bootstrap.sh "$preset" --no-install "${extra[@]}"
  if [ "$rest_done" = 0 ]; then
    status=0
    wait "$rest_pid" || status=$?
    cat "$rest_log" >&2
    rm -f "$rest_log"
    [ "$status" = 0 ] || { echo "== memplan: installing clang, PyTorch and the allocators failed ($status)" >&2; exit "$status"; }
    rest_done=1
    echo "== memplan: packages installed in the background ready at $(( $(date +%s) - start )) s"
  fi
  t1=$(date +%s)
  ctest --preset "$preset"
  echo "== memplan: preset '$preset': set up and build $(( t1 - t0 )) s, tests $(( $(date +%s) - t1 )) s"
done
echo "== memplan: ${presets[*]} passed in $(( $(date +%s) - start )) s"
