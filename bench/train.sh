#!/usr/bin/env bash
# seqfeed's CPU trainer beside PyTorch's (bench/peers/torch_lstm.py) on the
# default model: 3 x LSTM(180) + dropout, Dense(3), windows of 60 x 3, Adam,
# at global batch 32 and 256, same thread count, in fp32 and bf16 (PyTorch:
# torch.autocast bf16), interleaved rounds, best and median of N. The peer
# trains on random tensors already in RAM; seqfeed reads its windows from a
# synthetic .sfpack through the pipeline. Prints samples/s, the ratios, and
# seqfeed's GFLOP/s as a share of the GEMM ceiling of its precision (SGEMM,
# oneDNN's bf16 GEMM) measured in the same run.
# Both run in the environment as it is (OPENBLAS_* variables reach seqfeed's
# OpenBLAS; PyTorch's wheel brings its own math libraries).
# usage: bench/train.sh [--build DIR] [--reps N] [--steps N] [--python PY]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$(dirname "$here")/build reps=3 steps=20 py=python3
while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --python) py=$2; shift 2 ;;
    -h | --help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "train.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
sf=$build/seqfeed
[ -x "$sf" ] || { echo "train.sh: $sf not found: build first" >&2; exit 1; }
"$py" -c "import torch" 2>/dev/null || { echo "train.sh: the peer needs torch (pip install torch; or --python)" >&2; exit 1; }
precisions=fp32
"$sf" info | grep -q '^bf16 *cpu: none' || precisions="fp32 bf16"
dir=${BENCH_DIR:-/tmp/seqfeed-bench}
mkdir -p "$dir"
data=$dir/synth-train-2000000x3.sfpack
[ -f "$data" ] || "$sf" synth -o "$data" --rows 2000000 --feature-count 3 --series-count 4 -q
threads=$(nproc)
results=$(mktemp)
trap 'rm -f "$results"' EXIT
# One line per measurement: who precision batch samples/s share-of-ceiling.
for i in $(seq "$reps"); do
    for p in $precisions; do
        "$sf" bench train --data "$data" --batch-size 32,256 --steps "$steps" --precision "$p" --json |
            "$py" -c '
import json, sys
for line in sys.stdin:
    r = json.loads(line)
    share = r["share_of_bf16_gemm"] if r["precision"] == "bf16" else r["share_of_sgemm"]
    print("seqfeed", r["precision"], r["batch_per_replica"], r["samples_per_s"], share)' >>"$results"
        "$py" "$here/peers/torch_lstm.py" --batch 32,256 --threads "$threads" --steps "$steps" --reps 1 \
            --precision "$p" | sed -n "s/^batch \([0-9]*\): \([0-9.]*\) samples\/s/PyTorch $p \1 \2 0/p" >>"$results"
    done
done
"$py" - "$results" "$reps" "$threads" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
def runs(who, p, b):
    return [(float(r[3]), float(r[4])) for r in rows if r[0] == who and r[1] == p and r[2] == str(b)]
def best(who, p, b):
    v = runs(who, p, b)
    return max(s for s, _ in v) if v else float("nan")
def median(who, p, b):
    v = runs(who, p, b)
    return statistics.median(s for s, _ in v) if v else float("nan")
print(f"default model, window 60 x 3, {sys.argv[3]} threads, {sys.argv[2]} interleaved rounds: best (median) samples/s")
precisions = sorted({r[1] for r in rows if r[0] == "seqfeed"}, reverse=True)
print(f"{'batch':<6} {'precision':<10} {'seqfeed':>16} {'PyTorch':>16} {'ratio':>6} {'of ceiling':>11}")
for b in (32, 256):
    for p in precisions:
        share = statistics.median(s for _, s in runs("seqfeed", p, b))
        print(f"{b:<6} {p:<10} {best('seqfeed', p, b):8.1f} ({median('seqfeed', p, b):6.1f}) "
              f"{best('PyTorch', p, b):8.1f} ({median('PyTorch', p, b):6.1f}) "
              f"{best('seqfeed', p, b) / best('PyTorch', p, b):6.2f} {100 * share:10.1f}%")
    if "bf16" in precisions:
        o16, o32 = best("seqfeed", "bf16", b), best("seqfeed", "fp32", b)
        m16, m32 = median("seqfeed", "bf16", b), median("seqfeed", "fp32", b)
        print(f"{b:<6} seqfeed bf16: {o16 / o32:.2f}x its fp32 (median {m16 / m32:.2f}x), "
              f"{o16 / best('PyTorch', 'fp32', b):.2f}x PyTorch fp32, {o16 / best('PyTorch', 'bf16', b):.2f}x "
              f"PyTorch bf16 autocast")
PY
