#!/usr/bin/env bash
# --pipeline auto against a grid search over the knobs it tunes (issue 30),
# on 1 core and on 2 (taskset), for three data shapes: small windows of few
# features, long windows, many features. For each: auto's windows/s as a
# share of the grid's best setting, by `bench pipeline --grid` with an
# unpaced consumer: the grid swept once, then auto and the sweep's leaders
# (up to 3, within 10% of its best) in 5 interleaved rounds, the order
# rotating; the best setting is the leader with the best median, and the
# share is the median of the rounds' ratios (auto's run over the best's in
# the same round), [least-most], so that neither a loaded machine's drift
# nor a lucky sweep run decides it. Every run lasts its --seconds (enough
# epochs that none ends first), and auto's settling time counts from the
# pipe's open. Then the input wait of auto alone with the consumer paced at
# an emulated 2 ms and 1 ms step (--consume-rate 500 and 1000). Targets:
# >= 95% of the best, settled within 2 s, a wait under 0.5% at 2 ms and
# under 1% at 1 ms. Prints a markdown table (bench/all.sh's section
# `autotune` puts it into docs/BENCHMARKS.md); knobs are decoders/prefetch/
# slots/depth.
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
    -h | --help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
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
# name, file, options (epochs enough that every run lasts its seconds)
shapes=("small windows|$narrow|--window 16 --batch-size 256 --epochs 1000"
        "long windows|$narrow|--window 256 --batch-size 64 --epochs 1000"
        "64 features|$wide|--window 60 --batch-size 128 --epochs 1000")
echo "| shape | cores | best of the grid | its windows/s | auto, last run | auto windows/s | auto / best | settled (s) | wait 2 ms | wait 1 ms |"
echo "|---|---|---|---:|---|---:|---:|---:|---:|---:|"
for shape in "${shapes[@]}"; do
    IFS='|' read -r name file opts <<<"$shape"
    for cpus in 0 0,1; do
        # shellcheck disable=SC2086
        g=$(taskset -c "$cpus" "$sf" bench pipeline --data "$file" $opts --grid "$seconds" --json)
        waits=()
        for rate in 500 1000; do
            # shellcheck disable=SC2086
            w=$(taskset -c "$cpus" "$sf" bench pipeline --data "$file" $opts --consume-rate "$rate" --steps "$steps" --json)
            waits+=("$(python3 -c 'import json,sys; print("%.2f%%" % (100 * json.load(sys.stdin)["consumer_stall"]))' <<<"$w")")
        done
        GRID=$g python3 - "$name" "$(tr , ' ' <<<"$cpus" | wc -w)" "${waits[@]}" <<'PY'
import json, os, re, statistics, sys
name, cores, w2, w1 = sys.argv[1:5]
d = json.loads(os.environ["GRID"])
knobs = lambda t: "/".join(re.findall(r"(?:decoders|prefetch|slots|depth) (\d+)", t)[:4])
def spread(v, f):
    return f"{f(statistics.median(v))} [{f(min(v))}-{f(max(v))}]"
mw = lambda x: "%.3gM" % (x / 1e6)
pct = lambda x: "%.1f%%" % (100 * x)
print(f"| {name} | {cores} | {knobs(d['grid_best'])} | {spread(d['best_windows_per_s'], mw)} | "
      f"{knobs(d['auto'])} | {spread(d['auto_windows_per_s'], mw)} | "
      f"{pct(d['auto_share_of_best'])} [{pct(d['auto_share_min'])}-{pct(d['auto_share_max'])}] | "
      f"{statistics.median(d['auto_settled_s']):.2f} [max {max(d['auto_settled_s']):.2f}] | {w2} | {w1} |")
PY
    done
done
echo
echo "Rounds: 5 per row, --seconds $seconds each run; windows/s and auto / best: median [least-most]; settled: auto's last change."
