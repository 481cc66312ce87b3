#!/usr/bin/env bash
# How fast each tool gets from the CSV to a good model: seqfeed (pack, then
# train), Keras 3 on TensorFlow (model.fit with EarlyStopping(
# restore_best_weights=True)) and PyTorch (a plain loop, the same early
# stopping) on the bundled hourly temperatures (--series-column site, window
# 24) and treasury yields (the 4 yields, window 30), with the same model
# (default lstm:64,lstm:64,dense), batch, learning rate, validation split
# (the last rows of every series) and z-score scaling. Each epoch's row is
# stamped as it arrives: wall and CPU seconds from the tool's start to its
# best val_loss, and to the best val_loss Keras (and PyTorch) reached in the
# same round; rounds interleaved, the order rotating. Then checks that the
# losses compare: each best model's loss, and seqfeed's best model run in
# numpy on the peers' validation windows against `seqfeed evaluate`.
# The peers need keras, tensorflow, torch, pandas and numpy from PyPI: this
# script installs nothing unless given --install, and skips a peer it cannot
# import. Not part of the tests (it takes minutes).
# usage: bench/time_to_loss.sh [--install] [--build DIR] [--python PY] [--rounds N] [--epochs N]
#            [--patience N] [--model SPEC] [--batch-size N] [--lr F] [--val-split F]
#            [--data temps,yields] [--tools seqfeed,keras,torch] [--torch-threads N] [--torch-one-bias] [--json] [--save FILE]
#            [--runs-log FILE] [--from-log FILE]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
py=python3 install=0 args=()
while [ $# -gt 0 ]; do
    case $1 in
    --install) install=1; shift ;;
    --python) py=$2; shift 2 ;;
    -h | --help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) args+=("$1"); shift ;;
    esac
done
if [ "$install" = 1 ]; then
    "$py" -m pip install numpy pandas tensorflow-cpu keras torch
fi
"$py" -c "import numpy, pandas" 2>/dev/null ||
    { echo "time_to_loss.sh: $py needs numpy and pandas (--install, or pip install numpy pandas)" >&2; exit 1; }
exec "$py" "$here/peers/ttl_run.py" --python "$py" ${args[@]+"${args[@]}"}
