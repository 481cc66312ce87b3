#!/usr/bin/env bash
# The one script to run on a machine with a GPU: every GPU test, the GPU
# benchmarks and a short real run, in under 5 minutes (each step's time
# limit is cut to what is left of 280 s), results streamed into $OUT
# (default /tmp/gpu-check) as they come: summary.txt, info.txt, tests.txt,
# bench-train.txt, train.txt, report.html, trace.json, torch.txt.
#
# Where the binaries come from:
#   - gpu-kit.tar.gz in the repository root (made here by bench/gpu-kit.sh).
#     It is ignored by git, so it reaches a device machine only when it is
#     sent along explicitly (the device tool's carry: ["gpu-kit.tar.gz"]).
#     The device machines cannot install anything: there, without the kit,
#     the script stops in its first second and says so.
#   - else, where apt-get and the toolkit are: built here with CUDA.
#
# Exit status: 0 when every step passed; 77 (within seconds, one line) on a
# machine without a usable GPU; 1 when anything failed or did not run, every
# step's result in summary.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/gpu-check}
mkdir -p "$out"
start=$(date +%s)
budget=280
failed=()
say() { echo "$*" | tee -a "$out/summary.txt"; }

if ! nvidia-smi -L >/dev/null 2>&1; then
    echo "gpu-check: no usable GPU (nvidia-smi lists none): nothing to check here"
    exit 77
fi

if [ -f gpu-kit.tar.gz ]; then
    rm -rf /tmp/gpu-kit && tar -xzf gpu-kit.tar.gz -C /tmp || { echo "gpu-check: gpu-kit.tar.gz does not unpack" >&2; exit 1; }
    bin=/tmp/gpu-kit/bin
    # The kit's libraries first (liburing, zstd, OpenBLAS, the CUDA
    # runtime), then cuDNN, cuBLAS and NCCL wherever this machine has them:
    # the CUDA toolkit, or Python's nvidia-* packages.
    libs=/tmp/gpu-kit/lib
    [ -d /usr/local/cuda/lib64 ] && libs=$libs:/usr/local/cuda/lib64
    py=$(python3 -c 'import glob, nvidia, os
print(":".join(d for p in nvidia.__path__ for d in glob.glob(os.path.join(p, "*", "lib")) +
               glob.glob(os.path.join(p, "*", "*", "lib"))))' 2>/dev/null)
    [ -n "$py" ] && libs=$libs:$py
    export LD_LIBRARY_PATH=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    tests=("$bin"/test_gpu_probe "$bin"/test_module "$bin"/test_kernels_gpu "$bin"/test_stage_gpu
           "$bin"/test_backend_gpu "$bin"/test_train_gpu)
    seqfeed=$bin/seqfeed
    module=$bin/seqfeed-gpu.so
    onednn=$bin/seqfeed-onednn.so
elif ! command -v apt-get >/dev/null; then
    echo "gpu-check: gpu-kit.tar.gz is missing, and this machine cannot build (no apt-get): run bench/gpu-kit.sh" \
         "where the toolkit is and send gpu-kit.tar.gz along (it is ignored by git)" >&2
    exit 1
else
    . tools/deps.sh
    sf_install_deps || exit 1
    command -v nvcc >/dev/null || { echo "gpu-check: nvcc not found (CUDA toolkit under ${CUDA_ROOT:-/usr/local/cuda}?)" >&2; exit 1; }
    dir=$(pwd)/${BUILD:-build-gpu}
    sf_build "$dir" -Dcuda=enabled -Dbuildtype=release || exit 1
    tests=("$dir"/tests/system/test_gpu_probe "$dir"/tests/gpu/test_module "$dir"/tests/gpu/test_kernels_gpu
           "$dir"/tests/gpu/test_stage_gpu "$dir"/tests/gpu/test_backend_gpu "$dir"/tests/gpu/test_train_gpu)
    seqfeed=$dir/seqfeed
    module=$dir/seqfeed-gpu.so
    onednn=$dir/seqfeed-onednn.so
fi
export SEQFEED_GPU_MODULE=$module
[ -f "$onednn" ] && export SEQFEED_ONEDNN_MODULE=$onednn || onednn=""

# Every library the binaries load must be found before anything runs.
missing=$(for f in "$seqfeed" "$module" $onednn "${tests[@]}"; do ldd "$f" 2>&1 | sed -n "s|^\t*\([^ ]*\) => not found|\1|p"; done |
          sort -u | tr '\n' ' ')
if [ -n "$missing" ]; then
    say "gpu-check: libraries not found: $missing(LD_LIBRARY_PATH=$LD_LIBRARY_PATH)"
    exit 1
fi

# step NAME LOG SECONDS CMD...: runs CMD with at most SECONDS (fewer when
# less of the budget is left), its output into $out/LOG.txt as it comes (at
# most 8 files come back from a device machine's $OUT).
step() {
    local name=$1 log=$2 limit=$3 left rc
    shift 3
    left=$((budget - ($(date +%s) - start)))
    if [ "$left" -lt 5 ]; then
        say "$name: NOT RUN (the 280 s budget is spent)"
        failed+=("$name")
        return
    fi
    [ "$limit" -gt "$left" ] && limit=$left
    echo "== $name: $*" >>"$out/$log.txt"
    timeout "$limit" "$@" 2>&1 | tee -a "$out/$log.txt" >/tmp/gpu-check-step.txt
    rc=${PIPESTATUS[0]}
    case $rc in
    0) say "$name: ok ($(($(date +%s) - start)) s in)" ;;
    77) say "$name: SKIPPED (exit 77: its last lines say why)"; failed+=("$name") ;;
    124) say "$name: TIMED OUT after $limit s"; failed+=("$name") ;;
    *) say "$name: FAILED (exit $rc)"; failed+=("$name") ;;
    esac
    tail -3 /tmp/gpu-check-step.txt
}

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv >"$out/info.txt" 2>&1
"$seqfeed" info >>"$out/info.txt" 2>&1
cat "$out/info.txt"

cd /tmp || exit 1  # the tests write their scratch files where they run
for t in "${tests[@]}"; do step "$(basename "$t")" tests 45 "$t"; done
# cuDNN's persistent recurrence (--rnn-algo persistent), and the bf16 path,
# against the CPU too.
for t in "${tests[@]}"; do
    [ "$(basename "$t")" = test_backend_gpu ] || continue
    # cuDNN's log names the condition a persistent algorithm's
    # CUDNN_STATUS_NOT_SUPPORTED comes from (levels: 1 errors, 2 warnings).
    step test_backend_gpu-persistent tests 45 env CUDNN_LOGLEVEL_DBG=2 CUDNN_LOGDEST_DBG=stderr "$t" persistent
    step test_backend_gpu-bf16 tests 45 "$t" bf16
done
cd - >/dev/null || exit 1

# The default model on the GPU(s), one replica each, at global batches of
# 32, 256 and 1024: samples/s, input wait, and the ratio to the same run
# with a resident batch (no input: the pipeline's cost; target >= 0.99).
data=/tmp/seqfeed-gpu-2000000x3.sfpack
small=/tmp/seqfeed-gpu-100000x3.sfpack
[ -f "$data" ] || "$seqfeed" synth -o "$data" --rows 2000000 --feature-count 3 --series-count 4 -q
[ -f "$small" ] || "$seqfeed" synth -o "$small" --rows 100000 --feature-count 3 --series-count 4 -q
step bench-train bench-train 60 "$seqfeed" bench train --data "$data" --gpus all --batch-size 32,256,1024 --steps 30 --warmup 5
# fp32 (FMA math, no TF32), PyTorch's precision below.
step bench-train-fp32 bench-train 60 "$seqfeed" bench train --data "$data" --gpus all --batch-size 32,256,1024 \
    --steps 30 --warmup 5 --precision fp32
# Each new path against its switch back, so that a failure names its path:
# the host waiting for every step's end before the update (the plain stream
# path, no graph), the step on streams without its CUDA graph, and the
# persistent recurrence at the small batches it is for.
step bench-train-sync bench-train 45 "$seqfeed" bench train --data "$data" --gpus all --batch-size 32,256,1024 \
    --steps 30 --warmup 5 --deferred-loss off
step bench-train-streams bench-train 45 "$seqfeed" bench train --data "$data" --gpus all --batch-size 32,256,1024 \
    --steps 30 --warmup 5 --cuda-graph off
step bench-train-persistent bench-train 45 "$seqfeed" bench train --data "$data" --gpus all --batch-size 32,256 \
    --steps 30 --warmup 5 --rnn-algo persistent
step bench-train-bf16 bench-train 45 "$seqfeed" bench train --data "$data" --gpus all --batch-size 32,256,1024 \
    --steps 30 --warmup 5 --precision bf16
# A short real run end to end: pipeline, pinned ring, cuDNN, checkpoint,
# with its report and trace; then evaluate on the GPU, and predict on the
# GPU and on the CPU (a file small enough for the CPU), which must agree
# within fp32's tolerance (1e-4 of the predictions' scale).
ck=/tmp/gpu-ckpt/latest.safetensors
step train train 45 "$seqfeed" train --data "$data" --gpus all --batch-size 256 --epochs 1 --max-steps 300 \
    --checkpoint-dir /tmp/gpu-ckpt --report "$out/report.html" --trace "$out/trace.json"
step evaluate train 30 "$seqfeed" evaluate --checkpoint "$ck" --data "$small" --gpus all
step predict-gpu train 30 "$seqfeed" predict --checkpoint "$ck" --data "$small" --gpus all -o /tmp/gpu-pred.csv
step predict-cpu train 60 "$seqfeed" predict --checkpoint "$ck" --data "$small" --gpus none -o /tmp/cpu-pred.csv
step predict-agree train 10 python3 -c '
import csv, sys
g = list(csv.reader(open("/tmp/gpu-pred.csv"))); c = list(csv.reader(open("/tmp/cpu-pred.csv")))
cols = [i for i, n in enumerate(c[0]) if n.endswith("_pred")]
a = [float(r[i]) for r in g[1:] for i in cols]; b = [float(r[i]) for r in c[1:] for i in cols]
scale = max(abs(v) for v in b); worst = max(abs(x - y) for x, y in zip(a, b))
print(f"predict: {len(a)} values, GPU within {worst:.3g} of CPU (scale {scale:.3g})")
sys.exit(len(a) != len(b) or worst > 1e-4 * scale)'
# With one GPU the NCCL all-reduce does not run: NCCL takes one replica per
# GPU, so two replicas cannot share this one. With more, the layers' sums
# overlapped with the backward pass against one sum after it.
if [ "$(nvidia-smi -L | wc -l)" -lt 2 ]; then
    say "nccl: one GPU: the NCCL all-reduce is not exercised here"
else
    step bench-train-one-sum bench-train 45 "$seqfeed" bench train --data "$data" --gpus all \
        --batch-size 256,1024 --steps 30 --warmup 5 --overlap-reduce off
fi
# PyTorch's cuDNN LSTM on one GPU, same model and batches (target: seqfeed's
# samples/s per GPU at least this), when torch with CUDA is there.
if python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
    step torch torch 60 python3 bench/peers/torch_lstm.py --device cuda --batch 32,256,1024 --steps 30 --reps 1
else
    say "torch: PyTorch with CUDA not installed: no peer numbers"
fi

if [ ${#failed[@]} -gt 0 ]; then
    say "gpu-check: FAILED: ${failed[*]} ($(($(date +%s) - start)) s)"
    exit 1
fi
say "gpu-check: all passed ($(($(date +%s) - start)) s)"
