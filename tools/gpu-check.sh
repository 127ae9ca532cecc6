#!/usr/bin/env bash
# The GPU run in one command (issue: CUDA backend proven on a GPU). On a machine with an NVIDIA GPU
# and the CUDA toolkit: builds the default preset's GPU-labelled tests (the CUDA arena backend and
# the replaying allocator's CUDA slab), runs them, and writes a report with the device named.
#   tools/gpu-check.sh [REPORT_DIR]        (default: gpu-report/; $OUT when set, as on the device tool)
# What it covers today: the arena on one cudaMalloc (round trip, NaN poisoning, host staging for
# offload/prefetch, a planned copy graph on device memory with high-water == plan arena) and the
# replay slab. Not yet written: CUDA kernels for the autodiff engine's ops (docs/cuda.md), so
# planned *training* on the GPU is not part of this run.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-${OUT:-gpu-report}}
mkdir -p "$out"
report="$out/report.txt"
{
  echo "memplan GPU check, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  else
    echo "nvidia-smi not found: no NVIDIA driver on this machine"
  fi
  command -v nvcc >/dev/null && nvcc --version | tail -1 || echo "nvcc: $(ls /usr/local/cuda/bin/nvcc 2>/dev/null || echo not found)"
} | tee "$report"
export PATH="/usr/local/cuda/bin:$PATH"
tools/bootstrap.sh default --target test_runtime_cuda 2>&1 | tail -3
# Every gpu-labelled test that was built (others, e.g. the allocator's, when their targets exist).
targets=$(cmake --build --preset default --target help 2>/dev/null | grep -oE '^[a-z_]*cuda[a-z_]*' | sort -u || true)
[ -n "$targets" ] && cmake --build --preset default -j "$(nproc)" --target $targets 2>&1 | tail -2
set +e
ctest --test-dir build/default -L gpu --output-on-failure 2>&1 | tee -a "$report"
rc=${PIPESTATUS[0]}
set -e
echo "ctest -L gpu exit code $rc" | tee -a "$report"
exit "$rc"
