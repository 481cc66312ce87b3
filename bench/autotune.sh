#!/usr/bin/env bash
# --pipeline auto against a grid search over the knobs it tunes (issue 30),
# on 1 core and on 2 (taskset), for three data shapes: small windows of few
# features, long windows, many features. For each: auto's windows/s as a
# share of the grid's best setting (bench pipeline --grid, unpaced
# consumer: the grid swept once, then the best setting and auto three
# rounds each, interleaved, compared by medians) and when it settled, then the input wait of auto alone with the
# consumer paced at an emulated 2 ms and 1 ms step (--consume-rate 500 and
# 1000). Targets: >= 95% of the best, settled within 2 s, a wait under 0.5%
# at 2 ms and under 1% at 1 ms.
#
# usage: bench/autotune.sh [--build DIR] [--seconds S] [--steps N]
#   --seconds S  each grid setting's run (default 2)
#   --steps N    batches of each paced run (default 3000)
# Files go to $BENCH_DIR (default /tmp/seqfeed-bench), made once.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=${SEQFEED_BUILD:-$(dirname "$here")/build}
seconds=2 steps=3000
while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    -h | --help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "autotune.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
sf=$build/seqfeed
[ -x "$sf" ] || { echo "autotune.sh: $sf not found: build first" >&2; exit 1; }
dir=${BENCH_DIR:-/tmp/seqfeed-bench}
mkdir -p "$dir"
narrow=$dir/autotune-4x4M.sfpack wide=$dir/autotune-64x1M.sfpack
[ -f "$narrow" ] || "$sf" synth -o "$narrow" --rows 4000000 --feature-count 4 --series-count 8 -q
[ -f "$wide" ] || "$sf" synth -o "$wide" --rows 1000000 --feature-count 64 --series-count 8 -q
# name, file, options
shapes=("small windows|$narrow|--window 16 --batch-size 256"
        "long windows|$narrow|--window 256 --batch-size 64"
        "64 features|$wide|--window 60 --batch-size 128")
field() { python3 -c "import json,sys; d=json.load(sys.stdin); print(d$1)"; }
printf '%-14s %-5s %24s %24s %7s %16s %10s %10s\n' shape cores "best setting/s (3 runs)" "auto/s (3 runs)" share \
    "settled (s)" "wait 2 ms" "wait 1 ms"
runs() { python3 -c "import sys; print('/'.join('%.2fM' % (x / 1e6) for x in $1))"; }
for shape in "${shapes[@]}"; do
    IFS='|' read -r name file opts <<<"$shape"
    for cpus in 0 0,1; do
        # shellcheck disable=SC2086
        g=$(taskset -c "$cpus" "$sf" bench pipeline --data "$file" $opts --grid "$seconds" --json)
        best=$(field '["best_windows_per_s"]' <<<"$g")
        auto=$(field '["auto_windows_per_s"]' <<<"$g")
        share=$(field '["auto_share_of_best"]' <<<"$g")
        settled=$(field '["auto_settled_s"]' <<<"$g")
        waits=()
        for rate in 500 1000; do
            # shellcheck disable=SC2086
            w=$(taskset -c "$cpus" "$sf" bench pipeline --data "$file" $opts --consume-rate "$rate" --steps "$steps" --json)
            waits+=("$(field '["consumer_stall"]*100' <<<"$w")")
        done
        printf '%-14s %-5s %24s %24s %6.1f%% %16s %9.2f%% %9.2f%%\n' "$name" "$cpus" "$(runs "$best")" "$(runs "$auto")" \
            "$(python3 -c "print(100 * $share)")" "$(python3 -c "print('/'.join('%.2f' % x for x in $settled))")" \
            "${waits[0]}" "${waits[1]}"
        echo "    best of the grid: $(field '["grid_best"]' <<<"$g"); auto: $(field '["auto"]' <<<"$g")"
    done
done
