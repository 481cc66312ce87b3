#!/usr/bin/env bash
# The one script to run on a machine with GPUs: every GPU test (suite gpu)
# and the GPU benchmarks, in well under 5 minutes. Two ways to get the
# binaries:
#   - with gpu-kit.tar.gz in the repository root (made here by
#     bench/gpu-kit.sh; for the device machines, which cannot install
#     anything): unpacked and run as they are;
#   - else: built here with CUDA (needs the build dependencies).
# It goes on after a failure and exits non-zero at the end if anything
# failed; a test that skips (77) means no usable GPU and counts as failed.
# Logs and the benchmark output go to $OUT (default /tmp/gpu-check).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/gpu-check}
mkdir -p "$out"
failed=()

if [ -f gpu-kit.tar.gz ]; then
    tar -xzf gpu-kit.tar.gz -C /tmp
    bin=/tmp/gpu-kit/bin
    # The kit's libraries, then cuDNN, cuBLAS and NCCL wherever this machine
    # has them: the CUDA toolkit, or Python's nvidia-* packages.
    libs=/tmp/gpu-kit/lib
    [ -d /usr/local/cuda/lib64 ] && libs=$libs:/usr/local/cuda/lib64
    py=$(python3 -c 'import glob, nvidia, os; print(":".join(d for p in nvidia.__path__ for d in glob.glob(os.path.join(p, "*", "lib"))))' 2>/dev/null)
    [ -n "$py" ] && libs=$libs:$py
    export LD_LIBRARY_PATH=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    seqfeed=$bin/seqfeed
    tests=("$bin/test_gpu_probe" "$bin/test_module" "$bin/test_kernels_gpu" "$bin/test_stage_gpu"
           "$bin/test_backend_gpu" "$bin/test_train_gpu")
    export SEQFEED_GPU_MODULE=$bin/seqfeed-gpu.so
else
    . tools/deps.sh
    sf_install_deps
    command -v nvcc >/dev/null || { echo "gpu-check: nvcc not found (CUDA toolkit under ${CUDA_ROOT:-/usr/local/cuda}?)" >&2; exit 1; }
    dir=${BUILD:-build-gpu}
    sf_build "$dir" -Dcuda=enabled -Dbuildtype=release || exit 1
    seqfeed=$dir/seqfeed
    tests=("$dir/tests/system/test_gpu_probe" "$dir/tests/gpu/test_module" "$dir/tests/gpu/test_kernels_gpu"
           "$dir/tests/gpu/test_stage_gpu" "$dir/tests/gpu/test_backend_gpu" "$dir/tests/gpu/test_train_gpu")
    export SEQFEED_GPU_MODULE=$dir/seqfeed-gpu.so
fi

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1 | tee "$out/nvidia-smi.txt"
"$seqfeed" info 2>&1 | tee "$out/info.txt"

# The tests, one by one, with a time limit each; their output into one log.
for t in "${tests[@]}"; do
    name=$(basename "$t")
    (cd /tmp && timeout 120 "$t") >/tmp/gpu-check-test.log 2>&1
    rc=$?
    { echo "== $name (exit $rc)"; cat /tmp/gpu-check-test.log; } >>"$out/tests.log"
    tail -5 /tmp/gpu-check-test.log
    case $rc in
    0) echo "$name: ok" ;;
    77) echo "$name: SKIPPED (no usable GPU)"; failed+=("$name") ;;
    *) echo "$name: FAILED ($rc)"; failed+=("$name") ;;
    esac
done

# The default model on every GPU, one replica each, at 32, 256 and 1024
# windows per GPU: samples/s, input wait, and the ratio to the same run with
# a resident batch (no input: the pipeline's cost; target >= 0.99).
data=/tmp/seqfeed-gpu-8000000x3.sfpack
[ -f "$data" ] || "$seqfeed" synth -o "$data" --rows 8000000 --feature-count 3 --series-count 4 -q
timeout 150 "$seqfeed" bench train --data "$data" --gpus all --batch-size 32,256,1024 --steps 30 \
    --warmup 5 2>&1 | tee "$out/bench-train.txt" || failed+=("bench train")
# A short real run end to end: pipeline, pinned ring, cuDNN, checkpoint,
# evaluate, with its report and trace.
timeout 90 "$seqfeed" train --data "$data" --gpus all --batch-size 256 --epochs 1 --max-steps 300 \
    --checkpoint-dir /tmp/gpu-ckpt --report "$out/report.html" --trace "$out/trace.json" 2>&1 |
    tee "$out/train.txt" || failed+=("train")
timeout 60 "$seqfeed" evaluate --checkpoint /tmp/gpu-ckpt/latest.safetensors --data "$data" 2>&1 |
    tee -a "$out/train.txt" || failed+=("evaluate")
# PyTorch's cuDNN LSTM on one GPU, same model and batches (target: seqfeed's
# samples/s per GPU at least this), when torch with CUDA is there.
if python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
    timeout 90 python3 bench/peers/torch_lstm.py --device cuda --batch 32,256,1024 --steps 30 --reps 1 2>&1 |
        tee "$out/torch.txt"
else
    echo "gpu-check: PyTorch with CUDA not installed: no peer numbers"
fi

if [ ${#failed[@]} -gt 0 ]; then
    echo "gpu-check: FAILED: ${failed[*]}" >&2
    exit 1
fi
echo "gpu-check: all passed"
