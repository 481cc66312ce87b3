#!/usr/bin/env bash
# `seqfeed pack` next to its peers on the same bytes, for each shape of issue
# 26: (a) one CSV, (b) the same rows in N files, (c) 1,000 series interleaved
# (a row per series per hour) and the same rows grouped, (d) a Parquet file
# (python -m seqfeed pack against pyarrow.parquet.read_table). The peers of
# (a)-(c): pandas read_csv and pyarrow.csv.read_csv (for (b), every file read
# and concatenated into one frame/table). Each round runs every tool of a
# shape in turn, the order rotating; best wall and best CPU of the rounds,
# largest peak RSS. Prints one markdown table and the ratios seqfeed/peer.
#
# usage: bench/pack_peers.sh [--build DIR] [--mb N] [--files N] [--parquet-rows N] [--reps N]
#   --build DIR       meson build dir (default: $SEQFEED_BUILD, else build/)
#   --mb N            CSV size of (a)-(c), about (default 250)
#   --files N         files of (b) (default 8)
#   --parquet-rows N  rows of (d) (default 3000000; bench/arrow_pack.py's data)
#   --reps N          rounds (default 3)
# environment: PEER_PYTHON, the interpreter with pandas, pyarrow and numpy
# (default /tmp/venv-arrow/bin/python; never part of the build or the tests);
# BENCH_DIR (default /tmp/seqfeed-bench-peers) caches the CSVs.
# The data of (a)/(b) is bench/pack_files.sh's, of (c) bench/pack_order.sh's
# (each run once, with its own output on stderr, to make it when missing);
# (d) is bench/arrow_pack.py --json. seqfeed's figures are the whole process
# (parse, compress, fsync of the output); a CSV peer's wall and CPU are
# timed inside Python around the read (interpreter start and imports left
# out), its peak RSS is the whole process's (/usr/bin/time). Peers write
# nothing. Nothing here is part of `meson test`.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
build=${SEQFEED_BUILD:-$root/build}
mb=250 nfiles=8 prows=3000000 reps=3
while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$2; shift 2 ;;
    --mb) mb=$2; shift 2 ;;
    --files) nfiles=$2; shift 2 ;;
    --parquet-rows) prows=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    -h | --help) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "pack_peers.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
build=$(cd "$build" && pwd)
export BENCH_DIR=${BENCH_DIR:-/tmp/seqfeed-bench-peers}
py=${PEER_PYTHON:-/tmp/venv-arrow/bin/python}
seqfeed=$build/seqfeed
[ -x "$seqfeed" ] || { echo "pack_peers.sh: $seqfeed not found: build first" >&2; exit 1; }
"$py" -c 'import pandas, pyarrow.csv, numpy' || { echo "pack_peers.sh: $py lacks pandas/pyarrow/numpy" >&2; exit 1; }
mkdir -p "$BENCH_DIR"
out=$BENCH_DIR/peers.sfpack tf=$BENCH_DIR/time.txt

# The data, made by the scripts that own it (their caches, their layouts).
rows=$(awk -v mb="$mb" 'BEGIN { printf "%d", mb * 1e6 / 57 }')  # gen_csv's 7 columns: ~57 bytes a row
fdir=$BENCH_DIR/r${rows}c7f${nfiles}
if [ ! -s "$fdir/one.csv" ] || ! ls "$fdir"/parts/*.csv >/dev/null 2>&1; then
    "$here/pack_files.sh" --build "$build" --rows "$rows" --files "$nfiles" --reps 1 >&2
fi
steps=$(awk -v mb="$mb" 'BEGIN { printf "%d", mb * 1e6 / 36 / 1000 + 1 }')  # pack_order.sh's formula
ocsv() { echo "$BENCH_DIR/order-$1-1000x$steps.csv"; }  # ORDER: interleaved or grouped
if [ ! -s "$(ocsv interleaved)" ] || [ ! -s "$(ocsv grouped)" ]; then
    PYTHON=false "$here/pack_order.sh" --build "$build" --mb "$mb" --sites 1000 --reps 1 >&2
fi
mapfile -t parts < <(ls "$fdir"/parts/*.csv)

PEER='import sys, time
tool, files = sys.argv[1], sys.argv[2:]
if tool == "pandas":
    import pandas as pd
    read = pd.read_csv
    join = lambda xs: pd.concat(xs, ignore_index=True)
else:
    import pyarrow as pa, pyarrow.csv as pc
    read = pc.read_csv
    join = pa.concat_tables
w, c = time.perf_counter(), time.process_time()
t = [read(f) for f in files]
t = t[0] if len(t) == 1 else join(t)
print(time.perf_counter() - w, time.process_time() - c, len(t))'

# run SHAPE TOOL: prints "WALL CPU PEAK_KB" of one run.
run() {
    local shape=$1 tool=$2 files=() sf=()
    case $shape in
    a-one-file) files=("$fdir/one.csv") ;;
    b-*) files=("${parts[@]}") ;;
    c-interleaved) files=("$(ocsv interleaved)"); sf=(--series-column site) ;;
    c-grouped) files=("$(ocsv grouped)"); sf=(--series-column site) ;;
    esac
    cat "${files[@]}" >/dev/null  # from the page cache, for every tool alike
    if [ "$tool" = seqfeed ]; then
        rm -f "$out"
        /usr/bin/time -f '%e %U %S %M' -o "$tf" "$seqfeed" pack "${files[@]}" "${sf[@]}" -o "$out" -q
        awk '{ printf "%s %.2f %s\n", $1, $2 + $3, $4 }' "$tf"
    else
        local r
        r=$(/usr/bin/time -f '%M' -o "$tf" "$py" -c "$PEER" "$tool" "${files[@]}")
        echo "$(awk '{ printf "%.2f %.2f", $1, $2 }' <<<"$r") $(cat "$tf")"
    fi
}

shapes=(a-one-file "b-${nfiles}-files" c-interleaved c-grouped)
tools=(seqfeed pandas pyarrow)
declare -A wall cpu rss size
for s in "${shapes[@]}"; do
    case $s in
    a-*) size[$s]=$(stat -c %s "$fdir/one.csv") ;;
    b-*) size[$s]=$(cat "${parts[@]}" | wc -c) ;;
    c-*) size[$s]=$(stat -c %s "$(ocsv "${s#c-}")") ;;
    esac
done
lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }
start=$(date +%s)
echo "start $(date -u +%H:%M:%S) UTC, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for ((r = 0; r < reps; r++)); do
    for s in "${shapes[@]}"; do
        for ((k = 0; k < ${#tools[@]}; k++)); do
            t=${tools[(k + r) % ${#tools[@]}]}
            read -r w c m < <(run "$s" "$t")
            echo "  round $((r + 1)) $s $t: ${w} s, ${c} CPU s, $((m / 1024)) MB" >&2
            key=$s/$t
            if [ -z "${wall[$key]:-}" ] || lt "$w" "${wall[$key]}"; then wall[$key]=$w; fi
            if [ -z "${cpu[$key]:-}" ] || lt "$c" "${cpu[$key]}"; then cpu[$key]=$c; fi
            [ "${rss[$key]:-0}" -ge "$m" ] || rss[$key]=$m
        done
    done
    echo "  after round $((r + 1)): load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
done
rm -f "$out"
load_csv=$(cut -d' ' -f1-3 /proc/loadavg)
# (d): bench/arrow_pack.py as it is, its JSON turned into rows of the same table.
arrow=$(SEQFEED_LIB=$build/libseqfeed.so PYTHONPATH=$root/python "$py" "$here/arrow_pack.py" \
    --rows "$prows" --repeat "$reps" --json)
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

echo
echo "seqfeed pack and its peers, best of $reps rounds; $(nproc) cores; load average $load_csv after (a)-(c), $load_end after (d); $(($(date +%s) - start)) s in all"
echo
echo "| shape | tool | MB | wall s | CPU s | MB/s wall | MB per CPU s | peak RSS MB |"
echo "|---|---|---:|---:|---:|---:|---:|---:|"
for s in "${shapes[@]}"; do
    for t in "${tools[@]}"; do
        k=$s/$t
        awk -v s="$s" -v t="$t" -v b="${size[$s]}" -v w="${wall[$k]}" -v c="${cpu[$k]}" -v m="${rss[$k]}" 'BEGIN {
            printf "| %s | %s | %.0f | %.2f | %.2f | %.0f | %.0f | %.0f |\n", s, t, b / 1e6, w, c, b / 1e6 / w, b / 1e6 / c, m / 1024 }'
    done
done
"$py" -c '
import json, sys
a = json.load(sys.stdin)
mb = a["parquet_MB"]
for r in a["results"]:
    print("| d-parquet (%.0f MB as Arrow, %d rows) | %s | %.0f | %.2f | %.2f | %s | %s | %.0f |" % (
        a["arrow_MB"], a["rows"], r["command"], mb, r["seconds"], r["cpu_seconds"],
        "-" if "baseline" in r["command"] else "%.0f" % (mb / r["seconds"]),
        "-" if "baseline" in r["command"] else "%.0f" % (mb / r["cpu_seconds"]), r["peak_rss_MB"]))
' <<<"$arrow"
echo
echo "seqfeed / peer: wall and CPU as peer/seqfeed (above 1: seqfeed faster), peak RSS as seqfeed/peer (below 1: seqfeed smaller)"
for s in "${shapes[@]}"; do
    for t in pandas pyarrow; do
        awk -v s="$s" -v t="$t" -v w0="${wall[$s/seqfeed]}" -v w1="${wall[$s/$t]}" -v c0="${cpu[$s/seqfeed]}" \
            -v c1="${cpu[$s/$t]}" -v m0="${rss[$s/seqfeed]}" -v m1="${rss[$s/$t]}" 'BEGIN {
            printf "- %s vs %s: wall %.2fx, CPU %.2fx, peak RSS %.2f of the peer'"'"'s\n", s, t, w1 / w0, c1 / c0, m0 / m1 }'
    done
done
"$py" -c '
import json, sys
a = json.load(sys.stdin)
r = {x["command"]: x for x in a["results"]}
p, q = r["python -m seqfeed pack"], r["pyarrow.parquet.read_table"]
print("- d-parquet vs pyarrow.parquet.read_table: wall %.2fx, CPU %.2fx, peak RSS %.2f of the peer%s" % (
    q["seconds"] / p["seconds"], q["cpu_seconds"] / p["cpu_seconds"], p["peak_rss_MB"] / q["peak_rss_MB"],
    " (both whole processes, Python and pyarrow imported)"))
' <<<"$arrow"
awk -v a="${wall[c-interleaved/seqfeed]}" -v b="${wall[c-grouped/seqfeed]}" -v c="${cpu[c-interleaved/seqfeed]}" \
    -v d="${cpu[c-grouped/seqfeed]}" -v m="${rss[c-interleaved/seqfeed]}" 'BEGIN {
    printf "- seqfeed interleaved / grouped: wall %.2fx, CPU %.2fx; interleaved peak RSS %.0f MB\n", a / b, c / d, m / 1024 }'
awk -v a="${wall[b-${nfiles}-files/seqfeed]}" -v b="${wall[a-one-file/seqfeed]}" -v c="${cpu[b-${nfiles}-files/seqfeed]}" \
    -v d="${cpu[a-one-file/seqfeed]}" -v n="$nfiles" 'BEGIN {
    printf "- seqfeed %d files / one file: wall %.2fx, CPU %.2fx\n", n, a / b, c / d }'
