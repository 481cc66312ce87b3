#!/usr/bin/env bash
# `seqfeed pack` with one parse thread against two, on time-series CSV with
# a series column named, next to pandas' and pyarrow's read_csv on the same
# bytes:
#   ts-grouped      time,site,value, each site's hours together
#   ts-interleaved  the same rows, an hour of every site then the next hour
#                   (pack regroups them)
#   wide-grouped    site,time,a,b,c, grouped
#   wide-8-files    wide-grouped cut into 8 files, each with the header
#   plain           time,a,b,c,d without a series column (the path that
#                   writes the helper's rows at once)
# Each round runs every tool of a shape in turn, the order rotating; the
# table gives the median wall and CPU of the rounds (and the wall's
# min-max), the ratios the median of each round's ratio. seqfeed's figures
# are the whole process (parse, compress, fsync); a peer's are timed inside
# Python around its read_csv calls (concatenated for the files), after one
# read of a two-line CSV, so that imports and first-call set-up (pandas
# loads pyarrow for its strings) are not counted. "two at once" runs two
# --threads 1 packs of the shape side by side and gives each one's mean:
# what one thread's work costs while the other core works too (shared
# caches, memory, clocks), the baseline for --threads 2's CPU. Prints one
# markdown table and the ratios.
#
# usage: bench/pack_threads.sh [--build DIR] [--base DIR] [--mb N] [--reps N] [--keep] [--rt]
#   --build DIR  meson build dir (default: $SEQFEED_BUILD, else build/)
#   --base DIR   another build dir, packed with --threads 2 as "base"
#                (the code before a change); none by default
#   --mb N       size of each CSV, about (default 200)
#   --reps N     rounds (default 5)
#   --keep       keep the CSVs (default: deleted at the end)
#   --rt         (root) each pack at real-time priority (chrt -f 10): on
#                cores shared with other sessions its threads then run side
#                by side as on a quiet machine, holding the others off for
#                the second or so each pack takes. Without it, on a loaded
#                machine a short-lived second thread starts on the first
#                one's core and waits there (nice -20, even per autogroup,
#                does not change that)
# environment: PEER_PYTHON (default /tmp/venv-peers/bin/python; pandas and
# pyarrow each skipped when it does not import), BENCH_DIR (default
# /tmp/seqfeed-bench-threads). Nothing here is part of `meson test`.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
build=${SEQFEED_BUILD:-$root/build}
base="" mb=200 reps=5 keep=0 rt=0
while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$2; shift 2 ;;
    --base) base=$2; shift 2 ;;
    --mb) mb=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    --rt) rt=1; shift ;;
    -h | --help) sed -n '2,38p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "pack_threads.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
seqfeed=$(cd "$build" && pwd)/seqfeed
[ -x "$seqfeed" ] || { echo "pack_threads.sh: $seqfeed not found: build first" >&2; exit 1; }
[ -z "$base" ] || base=$(cd "$base" && pwd)/seqfeed
py=${PEER_PYTHON:-/tmp/venv-peers/bin/python}
peers=()
! "$py" -c 'import pandas' 2>/dev/null || peers+=(pandas)
! "$py" -c 'import pyarrow.csv' 2>/dev/null || peers+=(pyarrow)
dir=${BENCH_DIR:-/tmp/seqfeed-bench-threads}
mkdir -p "$dir"
[ "$keep" -eq 1 ] || trap 'rm -rf "$dir"' EXIT
out=$dir/out.sfpack tf=$dir/time.txt

# The data: 1000 sites, hours enough for --mb MB (a ts row is ~36 bytes, a
# wide row ~52).
gen() {  # gen SHAPE > FILE
    awk -v shape="$1" -v mb="$mb" 'BEGIN {
        srand(7); S = 1000
        wide = shape != "ts-grouped" && shape != "ts-interleaved"
        T = int(mb * 1e6 / (wide ? 52 : 36) / S) + 1
        print shape == "plain" ? "time,a,b,c,d" : wide ? "site,time,a,b,c" : "time,site,value"
        for (i = 0; i < S * T; i++) {
            if (shape == "ts-interleaved") { s = i % S; t = int(i / S) } else { s = int(i / T); t = i % T }
            if (shape == "plain") t = i
            sec = t * 3600; d = int(sec / 86400); h = int(sec % 86400 / 3600)
            y = 2000 + int(d / 336); m = 1 + int(d % 336 / 28); dd = 1 + d % 28
            ts = sprintf("%04d-%02d-%02dT%02d:00:00", y, m, dd, h)
            v = sprintf("%.2f", (s * 37 + t * 11) % 2000 / 10 - 100)
            if (shape == "plain") printf "%s,%s,%d,%.3f,%s\n", ts, v, t % 97, rand(), v
            else if (wide) printf "site%04d,%s,%s,%d,%.3f\n", s, ts, v, t % 97, rand()
            else printf "%s,site%04d,%s\n", ts, s, v
        }
    }'
}
shapes=(ts-grouped ts-interleaved wide-grouped wide-8-files plain)
for s in ts-grouped ts-interleaved wide-grouped plain; do
    [ -s "$dir/$s.csv" ] || { echo "making $dir/$s.csv" >&2; gen "$s" >"$dir/$s.csv"; }
done
if ! ls "$dir"/part-*.csv >/dev/null 2>&1; then
    lines=$(($(wc -l <"$dir/wide-grouped.csv") - 1))
    tail -n +2 "$dir/wide-grouped.csv" | split -d -a 1 -l $(((lines + 7) / 8)) - "$dir/body-"
    for b in "$dir"/body-?; do
        { head -n 1 "$dir/wide-grouped.csv"; cat "$b"; } >"$dir/part-${b##*-}.csv"
        rm -f "$b"
    done
fi
files() {  # files SHAPE: the inputs
    case $1 in
    wide-8-files) ls "$dir"/part-*.csv ;;
    *) echo "$dir/$1.csv" ;;
    esac
}
opts() {  # opts SHAPE: pack's options
    case $1 in
    ts-*) echo "--time-column time --series-column site" ;;
    wide-*) echo "--time-column time --series-column site" ;;
    plain) echo "--time-column time" ;;
    esac
}
PEER='import io, sys, time
tool, files = sys.argv[1], sys.argv[2:]
if tool == "pandas":
    import pandas as pd
    read, join = pd.read_csv, lambda xs: pd.concat(xs, ignore_index=True)
else:
    import pyarrow as pa, pyarrow.csv as pc
    read, join = pc.read_csv, pa.concat_tables
read(io.BytesIO(b"time,site,value\n2000-01-01T00:00:00,site0000,-1.5\n"))
w, c = time.perf_counter(), time.process_time()
t = [read(f) for f in files]
t = t[0] if len(t) == 1 else join(t)
print(time.perf_counter() - w, time.process_time() - c, len(t))'

run() {  # run SHAPE TOOL: "WALL CPU"
    local -a in
    mapfile -t in < <(files "$1")
    cat "${in[@]}" >/dev/null  # from the page cache, for every tool alike
    case $2 in
    pandas | pyarrow) "$py" -c "$PEER" "$2" "${in[@]}" | awk '{ printf "%.3f %.3f\n", $1, $2 }' ;;
    pair)
        (out=$dir/pair.sfpack tf=$dir/pair-time.txt; run "$1" t1) >"$dir/pair.txt" &
        local mine
        mine=$(run "$1" t1)
        wait $!
        echo "$mine $(cat "$dir/pair.txt")" | awk '{ printf "%.3f %.3f\n", ($1 + $3) / 2, ($2 + $4) / 2 }'
        ;;
    *)
        local bin=$seqfeed threads=${2#t}
        [ "$2" != base ] || bin=$base threads=2
        rm -f "$out"
        local -a pre=()
        [ "$rt" -eq 0 ] || pre=(chrt -f 10)
        # bash's time: milliseconds (/usr/bin/time gives hundredths)
        local TIMEFORMAT='%3R %3U %3S'
        # shellcheck disable=SC2046
        { time "${pre[@]}" "$bin" pack "${in[@]}" $(opts "$1") --threads "$threads" -o "$out" -q 2>"$tf.err" || cat "$tf.err" >&2; } 2>"$tf"
        awk '{ printf "%s %.3f\n", $1, $2 + $3 }' "$tf"
        ;;
    esac
}
tools=(t1 t2)
[ "$(nproc)" -lt 2 ] || tools+=(pair)
[ -z "$base" ] || tools+=(base)
tools+=("${peers[@]}")
results=$dir/results.txt
: >"$results"
echo "start $(date -u +%H:%M:%S) UTC, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
for ((r = 0; r < reps; r++)); do
    for s in "${shapes[@]}"; do
        for ((k = 0; k < ${#tools[@]}; k++)); do
            t=${tools[(k + r) % ${#tools[@]}]}
            read -r w c < <(run "$s" "$t")
            echo "  round $((r + 1)) $s $t: $w s, $c CPU s" >&2
            echo "$r $s $t $w $c" >>"$results"
        done
    done
done
rm -f "$out" "$dir/pair.sfpack"
sizes=()
for s in "${shapes[@]}"; do
    mapfile -t in < <(files "$s")
    sizes+=("$s=$(cat "${in[@]}" | wc -c)")
done
echo
echo "seqfeed pack --threads 1 / 2 and its peers' read_csv, medians of $reps interleaved rounds; $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'); $(date -u '+%Y-%m-%d %H:%M') UTC; load average $load_start at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end$([ "$rt" -eq 0 ] || echo "; packs at real-time priority (--rt)")"
echo
python3 - "$results" "${sizes[@]}" <<'PY'
import collections, statistics as st, sys
rows = [l.split() for l in open(sys.argv[1])]
size = dict(a.split("=") for a in sys.argv[2:])
runs = collections.defaultdict(dict)  # (shape, tool) -> round -> (wall, cpu)
for r, s, t, w, c in rows:
    runs[s, t][r] = (float(w), float(c))
shapes = list(dict.fromkeys(r[1] for r in rows))
tools = list(dict.fromkeys(r[2] for r in rows))
name = {"t1": "seqfeed --threads 1", "t2": "seqfeed --threads 2", "base": "before (--threads 2)",
        "pair": "seqfeed --threads 1, two at once (each)",
        "pandas": "pandas read_csv", "pyarrow": "pyarrow read_csv"}
print("| shape | MB | tool | wall s (min-max) | CPU s | MB/s wall | MB per CPU s |")
print("|---|---:|---|---:|---:|---:|---:|")
for s in shapes:
    mb = int(size[s]) / 1e6
    for t in tools:
        v = list(runs[s, t].values())
        w, c = st.median(x[0] for x in v), st.median(x[1] for x in v)
        lo, hi = min(x[0] for x in v), max(x[0] for x in v)
        print(f"| {s} | {mb:.0f} | {name[t]} | {w:.2f} ({lo:.2f}-{hi:.2f}) | {c:.2f} | {mb / w:.0f} | {mb / c:.0f} |")
print()
print("ratios, the median of the rounds' (min-max): above 1, --threads 2 is faster (wall) or cheaper (CPU)")
def ratio(s, a, b, k):
    rs = [runs[s, a][r][k] / runs[s, b][r][k] for r in runs[s, b] if r in runs[s, a]]
    return f"{st.median(rs):.2f}x ({min(rs):.2f}-{max(rs):.2f})"
for s in shapes:
    parts = [f"wall vs --threads 1 {ratio(s, 't1', 't2', 0)}", f"CPU vs --threads 1 {ratio(s, 't1', 't2', 1)}"]
    if "pair" in tools: parts.append(f"CPU vs two --threads 1 at once {ratio(s, 'pair', 't2', 1)}")
    for t in ("base", "pandas", "pyarrow"):
        if t in tools: parts.append(f"wall vs {t} {ratio(s, t, 't2', 0)}")
    print(f"- {s}: " + ", ".join(parts))
PY
