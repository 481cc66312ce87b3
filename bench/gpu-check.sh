#!/usr/bin/env bash
# The one script to run on a machine with GPUs: builds with CUDA, prints what
# the binary sees, runs every GPU test (suite gpu) and the GPU benchmarks.
# Finishes in well under 5 minutes. Tests in suite gpu skip (exit 77)
# without a device, so a skip here means the GPU was not usable: the script
# then fails.
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/deps.sh
sf_install_deps
command -v nvcc >/dev/null || { echo "gpu-check: nvcc not found (CUDA toolkit under ${CUDA_ROOT:-/usr/local/cuda}?)" >&2; exit 1; }
dir=${BUILD:-build-gpu}
sf_build "$dir" -Dcuda=enabled
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || true
"$dir/seqfeed" info
meson test -C "$dir" --suite gpu --print-errorlogs
if grep -q 'SKIP' "$dir/meson-logs/testlog.txt"; then
    echo "gpu-check: GPU tests were skipped: no usable GPU" >&2
    exit 1
fi
# GPU benchmarks join here with the GPU backend (seqfeed bench train).
