#!/usr/bin/env bash
# Installs what is missing, builds, packs the bundled treasury-yields data
# set, trains the default model (3 x LSTM(180) with dropout, Dense) on CPU
# for four epochs, and prints the validation loss next to two baselines on
# the same windows: the column means, and the last observed value.
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/deps.sh
sf_install_deps
sf_build "${BUILD:-build}"
sf="${BUILD:-build}/seqfeed"
out="${BUILD:-build}/demo"
mkdir -p "$out"

echo
"$sf" info
echo
"$sf" pack data/treasury-yields-daily.csv -o "$out/treasury.sfpack"
"$sf" verify "$out/treasury.sfpack"
echo
"$sf" inspect "$out/treasury.sfpack"
echo
cols=tcm1yd,tcm3yd,tcm5yd,tcm10yd
rm -rf "$out/checkpoints"
"$sf" train --data "$out/treasury.sfpack" --features "$cols" --targets "$cols" --window 60 --batch-size 32 \
    --epochs "${EPOCHS:-4}" --val-split 0.1 --checkpoint-dir "$out/checkpoints" --log "$out/metrics.csv"
echo
"$sf" evaluate --checkpoint "$out/checkpoints/latest.safetensors" --data "$out/treasury.sfpack"
"$sf" evaluate --checkpoint "$out/checkpoints/latest.safetensors" --data "$out/treasury.sfpack" --json |
    python3 -c '
import json, sys
r = json.load(sys.stdin)
ratio = r["mean_baseline"] / r["loss"]
print(f"\nthe model'"'"'s validation loss is {ratio:.0f}x below the mean baseline'"'"'s")
sys.exit(0 if ratio > 2 else "demo: training did not clearly beat the mean baseline")'
