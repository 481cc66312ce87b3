#!/usr/bin/env bash
# seqfeed's CPU trainer beside PyTorch's (bench/peers/torch_lstm.py) on the
# default model: 3 x LSTM(180) + dropout, Dense(3), windows of 60 x 3, Adam,
# at global batch 32 and 256, same thread count, interleaved, best of N. The
# peer trains on random tensors already in RAM; seqfeed reads its windows
# from a synthetic .sfpack through the pipeline. Prints samples/s, the
# ratio, and seqfeed's GFLOP/s against the SGEMM rate measured in its run.
# Both run in the environment as it is (OPENBLAS_* variables reach seqfeed's
# OpenBLAS; PyTorch's wheel brings its own math libraries).
# usage: bench/train.sh [--build DIR] [--reps N] [--steps N]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$(dirname "$here")/build reps=2 steps=20
while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    -h | --help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "train.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
sf=$build/seqfeed
[ -x "$sf" ] || { echo "train.sh: $sf not found: build first" >&2; exit 1; }
python3 -c "import torch" 2>/dev/null || { echo "train.sh: the peer needs torch (pip install torch)" >&2; exit 1; }
dir=${BENCH_DIR:-/tmp/seqfeed-bench}
mkdir -p "$dir"
data=$dir/synth-train-2000000x3.sfpack
[ -f "$data" ] || "$sf" synth -o "$data" --rows 2000000 --feature-count 3 --series-count 4 -q
threads=$(nproc)
declare -A ours theirs shares
for i in $(seq "$reps"); do
    while read -r line; do
        b=$(sed 's/.*"batch_per_replica": \([0-9]*\).*/\1/' <<<"$line")
        s=$(sed 's/.*"samples_per_s": \([0-9.]*\).*/\1/' <<<"$line")
        share=$(sed 's/.*"share_of_sgemm": \([0-9.]*\).*/\1/' <<<"$line")
        if python3 -c "import sys; sys.exit(0 if $s > ${ours[$b]:-0} else 1)"; then ours[$b]=$s; shares[$b]=$share; fi
    done < <("$sf" bench train --data "$data" --batch-size 32,256 --steps "$steps" --json)
    while read -r b s; do
        if python3 -c "import sys; sys.exit(0 if $s > ${theirs[$b]:-0} else 1)"; then theirs[$b]=$s; fi
    done < <(python3 "$here/peers/torch_lstm.py" --batch 32,256 --threads "$threads" --steps "$steps" --reps 1 |
        sed -n 's/^batch \([0-9]*\): \([0-9.]*\) samples\/s/\1 \2/p')
done
echo "default model, window 60 x 3, $threads threads, best of $reps"
printf "%-6s %14s %14s %8s %16s\n" batch seqfeed PyTorch ratio "seqfeed/SGEMM"
for b in 32 256; do
    printf "%-6s %14.1f %14.1f %8.2f %15.1f%%\n" "$b" "${ours[$b]}" "${theirs[$b]}" \
        "$(python3 -c "print(${ours[$b]} / ${theirs[$b]})")" "$(python3 -c "print(100 * ${shares[$b]})")"
done
