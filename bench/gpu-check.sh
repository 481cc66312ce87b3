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
# The default model on every GPU, one replica each, at 32, 256 and 1024
# windows per GPU: samples/s, input wait, and the ratio to the same run with
# a resident batch (no input: the pipeline's cost; target >= 0.99).
data=${BENCH_DIR:-/tmp/seqfeed-bench}/synth-gpu-8000000x3.sfpack
mkdir -p "$(dirname "$data")"
[ -f "$data" ] || "$dir/seqfeed" synth -o "$data" --rows 8000000 --features 3 --series 4 -q
timeout 150 "$dir/seqfeed" bench train --data "$data" --gpus all --batch-size 32,256,1024 --steps 30 --warmup 5
# PyTorch's cuDNN LSTM on one GPU, same model and batches (target: seqfeed's
# samples/s per GPU at least this), when torch with CUDA is installed.
if python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
    timeout 90 python3 bench/peers/torch_lstm.py --device cuda --batch 32,256,1024 --steps 30 --reps 1
else
    echo "gpu-check: PyTorch with CUDA not installed: no peer numbers"
fi
