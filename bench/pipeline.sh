#!/usr/bin/env bash
# The input pipeline against its ceilings, side by side in one run:
#   1. the reader alone (seqfeed bench read) against fio with io_uring,
#      O_DIRECT, 1 MiB blocks and the same depth, on the same file, caches
#      dropped before each run when possible, interleaved, best of N;
#   2. seqfeed bench pipeline (T=60, 4 features, batch 256, shuffled), which
#      measures the in-memory random window-copy ceiling in the same run;
#   3. a consumer asking for 80% of the measured throughput: its stall;
#   4. PyTorch's DataLoader serving the same windows (bench/peers/torch_loader.py).
# usage: bench/pipeline.sh [--build DIR] [--rows N] [--reps N]
#   --rows N  rows of the synthetic file (default 270000000: 4.3 GB of
#             float32, about 2.3 GB on disk), cached in $BENCH_DIR
# environment: BENCH_DIR (default /tmp/seqfeed-bench). Needs fio for step 1.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=${SEQFEED_BUILD:-$(dirname "$here")/build}
rows=270000000 reps=3
while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$2; shift 2 ;;
    --rows) rows=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    -h | --help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "pipeline.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
sf=$build/seqfeed
[ -x "$sf" ] || { echo "pipeline.sh: $sf not found: build first" >&2; exit 1; }
dir=${BENCH_DIR:-/tmp/seqfeed-bench}
mkdir -p "$dir"
file=$dir/synth-$rows.sfpack
[ -f "$file" ] || "$sf" synth -o "$file" --rows "$rows" --feature-count 4 --series-count 8
size=$(stat -c %s "$file")
echo "file: $file, $((size / 1000000)) MB on disk, $rows rows x 4 float32"

drop() { sync; echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true; }
best_sf=0 best_fio=0
for i in $(seq "$reps"); do
    drop
    gbs=$("$sf" bench read --data "$file" --depth 8 --block-chunks 2 --json | sed 's/.*"GB_per_s": \([0-9.]*\).*/\1/')
    best_sf=$(python3 -c "print(max($best_sf, $gbs))")
    if command -v fio >/dev/null; then
        drop
        fgbs=$(fio --readonly --name=r --filename="$file" --ioengine=io_uring --direct=1 --bs=1M --iodepth=8 --rw=read \
            --size="$size" --output-format=json | python3 -c "import json,sys; print(json.load(sys.stdin)['jobs'][0]['read']['bw_bytes']/1e9)")
        best_fio=$(python3 -c "print(max($best_fio, $fgbs))")
    fi
    echo "  round $i: seqfeed read $gbs GB/s, fio ${fgbs:-n/a} GB/s"
done
echo "reader: seqfeed $best_sf GB/s, fio $best_fio GB/s, ratio $(python3 -c "print(round($best_sf / $best_fio, 3) if $best_fio else 'n/a')")"

drop
# Every core windowing (one lane each): the pipeline's best on this machine.
"$sf" bench pipeline --data "$file" --window 60 --batch-size 256 --pool 16384 --block-chunks 2 --lanes "$(nproc)" |
    tee "$dir/pipeline.txt"
# 3. The stall: one windower (the consumer needs a core of its own on 2
#    cores), its throughput measured, then a consumer asking for 80% of it,
#    with a ring of 16 batches.
"$sf" bench pipeline --data "$file" --window 60 --batch-size 256 --pool 16384 --block-chunks 2 --lanes 1 >"$dir/lane1.txt"
wps=$(sed -n 's/^delivered .*: \([0-9.]*\) M windows\/s/\1/p' "$dir/lane1.txt")
rate=$(python3 -c "print(int($wps * 1e6 * 0.8 / 256))")
echo
echo "one windower: $wps M windows/s; a consumer asking for 80% of that ($rate batches/s of 256):"
"$sf" bench pipeline --data "$file" --window 60 --batch-size 256 --pool 16384 --block-chunks 2 --lanes 1 \
    --consume-rate "$rate" --slots 16 | grep -E 'delivered|consumers'

# 4. PyTorch's DataLoader on the same windows from RAM (bench/peers), side
#    by side with seqfeed on a 20M-row file (320 MB of float32: RAM for the
#    peer). Skipped when torch, numpy or zstandard is not importable.
if python3 -c "import torch, numpy, zstandard" 2>/dev/null; then
    small=$dir/synth-20000000.sfpack
    [ -f "$small" ] || "$sf" synth -o "$small" --rows 20000000 --feature-count 4 --series-count 8 -q
    echo
    out=$(python3 "$here/peers/torch_loader.py" "$small" --window 60 --batch 256)
    echo "$out"
    peer=$(sed -n 's/^best \([0-9.]*\) M.*/\1/p' <<<"$out")
    ours=$("$sf" bench pipeline --data "$small" --window 60 --batch-size 256 --pool 16384 --block-chunks 2 \
        --lanes "$(nproc)" |
        sed -n 's/^delivered .*: \([0-9.]*\) M windows\/s/\1/p')
    echo "seqfeed $ours M windows/s, PyTorch DataLoader $peer M windows/s: $(python3 -c "print(round($ours / $peer, 1))")x"
else
    echo "(PyTorch DataLoader peer skipped: needs torch, numpy and zstandard)"
fi
