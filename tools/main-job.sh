#!/usr/bin/env bash
# The main job: set up (packages, configure, build), then plan a bundled real training graph
# (ResNet-18, batch 32, exported from PyTorch) and print the report; writes heap.svg and report.json.
# Usage: tools/main-job.sh [GRAPH.json.gz] [extra `memplan plan` flags]
set -euo pipefail
cd "$(dirname "$0")/.."
tools/bootstrap.sh default >/dev/null
graph=${1:-data/models/resnet18-train-b32.json.gz}
shift || true
exec build/default/apps/memplan/memplan plan "$graph" --svg heap.svg --report-json report.json "$@"
