#!/usr/bin/env bash
# Regenerates docs/results.md and docs/plots/*.svg from scratch: builds memplan_olla_tables (Release,
# its own build folder) and runs it over every data/models/*.json.gz plus the zoo graphs.
# Extra arguments go to the program (e.g. --schedule-time 10 --place-time 5, --only resnet).
# About 11 s for the 46 graphs on 2 cores after a 2-minute build (stop 69; docs/benchmarks.md).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${MEMPLAN_HARNESS_BUILD:-$root/build/harness}"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMEMPLAN_BUILD_TESTS=OFF \
  -DMEMPLAN_BUILD_EXAMPLES=OFF -DMEMPLAN_BUILD_APPS=OFF >/dev/null
cmake --build "$build" --target memplan_olla_tables -j"${MEMPLAN_JOBS:-2}"
rm -f "$root"/docs/plots/fig*.svg
exec "$build/bench/harness/memplan_olla_tables" --out "$root/docs/results.md" --plots "$root/docs/plots" \
  --command "bench/harness/regenerate.sh${*:+ $*}" "$@"
