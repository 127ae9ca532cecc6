#!/usr/bin/env bash
# The main job: set up (packages, configure, build), then plan a bundled real training graph
# (ResNet-18, batch 32, exported from PyTorch) and print the report; writes heap.svg and report.json.
# Usage: tools/main-job.sh [GRAPH.json.gz] [extra `memplan plan` flags]
set -euo pipefail
cd "$(dirname "$0")/.."
# Only the CLI is built here (tools/test.sh builds everything); progress goes to standard error.
start=$(date +%s)
# Only the packages the g++ build needs (not clang or the allocators the tests and benchmarks use).
tools/bootstrap.sh --install-only build
tools/bootstrap.sh default --no-install --target memplan_cli
echo "memplan main job: set up in $(( $(date +%s) - start )) s; planning" >&2
graph=${1:-data/models/resnet18-train-b32.json.gz}
shift || true
exec build/default/apps/memplan/memplan plan "$graph" --svg heap.svg --report-json report.json "$@"
