#!/usr/bin/env bash
# seqfeed's Python Dataset next to its peers from PyPI on the same windows
# of the same rows (issue 30): tf.data (timeseries_dataset_from_array +
# prefetch(AUTOTUNE)), the PyTorch DataLoader (a map-style Dataset slicing
# windows, num_workers=2, pin_memory off) and Grain (workers 2), each
# consumed unpaced and at an emulated 2 ms and 1 ms step (a sleep per
# batch): windows/s, stall % (the time in next() over the wall time) and
# the wait per step at p50 and p99; first a check that every tool serves
# the same windows (an epoch's window hashes against the array's). Data:
# random walks of 4M rows x 4 columns (window 60) and 1M rows x 32
# (window 256), batch 256, cached in $BENCH_DIR (default
# /tmp/seqfeed-bench-pipepeers, ~300 MB). Rounds interleaved, the tool order
# rotating; median, least and most. bench/peers/pipe_peers.py and
# pipe_tools.py say more. About 4 minutes with the defaults on a quiet 2-core
# machine (8.5 at load 13-16).
# The peers need numpy, tensorflow (or tensorflow-cpu), torch and grain from
# PyPI: this script installs nothing unless given --install, and skips a peer
# it cannot import. Not part of the tests, nor of CI.
# usage: bench/pipeline_peers.sh [--install] [--python PY] [--build DIR] [--rounds N] [--json]
#            [--steps N] [--warmup N] [--settle S] [--cap S] [--batch N] [--shapes ROWSxCOLS:WINDOW,...]
#            [--paces MS,...] [--tools seqfeed,tf,torch,grain] [--seed N] [--check-batches N] [--no-check]
#            [--bench-dir DIR] [--save FILE]
#   --python PY   the interpreter with the peers (default: $PEER_PYTHON, else python3)
#   --build DIR   meson build dir (default: $SEQFEED_BUILD, else build/): its seqfeed, libseqfeed.so
#                 and bench/gen_csv; the package is python/ of this tree
#   --rounds N    rounds (default 3); --json: one JSON object instead of the table (the
#                 rest of the options: bench/peers/pipe_peers.py --help)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
export PIPELINE_PEERS_COMMAND="$0 $*"  # for the JSON's meta
py=${PEER_PYTHON:-python3} build=${SEQFEED_BUILD:-$root/build} install=0 args=()
while [ $# -gt 0 ]; do
    case $1 in
    --install) install=1; shift ;;
    --python) py=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    -h | --help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) args+=("$1"); shift ;;
    esac
done
build=$(cd "$build" && pwd)
for f in seqfeed libseqfeed.so bench/gen_csv; do
    [ -e "$build/$f" ] || { echo "pipeline_peers.sh: $build/$f not found: build first (ninja -C $build)" >&2; exit 1; }
done
if [ "$install" = 1 ]; then
    "$py" -m pip install numpy tensorflow-cpu torch grain
fi
"$py" -c "import numpy" 2>/dev/null ||
    { echo "pipeline_peers.sh: $py needs numpy (--install, or pip install numpy)" >&2; exit 1; }
export SEQFEED_LIB=$build/libseqfeed.so PYTHONPATH=$root/python${PYTHONPATH:+:$PYTHONPATH}
exec "$py" "$here/peers/pipe_peers.py" --build "$build" ${args[@]+"${args[@]}"}
