#!/usr/bin/env bash
# `seqfeed pack` with one parse thread against two, on time-series CSV with
# a series column named, next to pandas read_csv on the same bytes:
#   ts-grouped      time,site,value, each site's hours together
#   ts-interleaved  the same rows, an hour of every site then the next hour
#                   (pack regroups them)
#   wide-grouped    site,time,a,b,c, grouped
#   wide-8-files    wide-grouped cut into 8 files, each with the header
#   plain           time,a,b,c,d without a series column (the path that
#                   writes the helper's rows at once)
# Each round runs every tool of a shape in turn, the order rotating; best
# wall and best CPU of the rounds. seqfeed's figures are the whole process
# (parse, compress, fsync); pandas' are timed inside Python around read_csv
# (concatenated for the files). Prints one markdown table and the ratios.
#
# usage: bench/pack_threads.sh [--build DIR] [--base DIR] [--mb N] [--reps N] [--keep] [--rt]
#   --build DIR  meson build dir (default: $SEQFEED_BUILD, else build/)
#   --base DIR   another build dir, packed with --threads 2 as "base"
#                (the code before a change); none by default
#   --mb N       size of each CSV, about (default 200)
#   --reps N     rounds (default 2)
#   --keep       keep the CSVs (default: deleted at the end)
#   --rt         (root) each pack at real-time priority (chrt -f 10): on
#                cores shared with other sessions its threads then run side
#                by side as on a quiet machine, holding the others off for
#                the second or so each pack takes. Without it, on a loaded
#                machine a short-lived second thread starts on the first
#                one's core and waits there (nice -20, even per autogroup,
#                does not change that)
# environment: PEER_PYTHON (default /tmp/venv-arrow/bin/python; pandas is
# skipped when it does not import), BENCH_DIR (default
# /tmp/seqfeed-bench-threads). Nothing here is part of `meson test`.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
build=${SEQFEED_BUILD:-$root/build}
base="" mb=200 reps=2 keep=0 rt=0
while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$2; shift 2 ;;
    --base) base=$2; shift 2 ;;
    --mb) mb=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    --rt) rt=1; shift ;;
    -h | --help) sed -n '2,32p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "pack_threads.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
seqfeed=$(cd "$build" && pwd)/seqfeed
[ -x "$seqfeed" ] || { echo "pack_threads.sh: $seqfeed not found: build first" >&2; exit 1; }
[ -z "$base" ] || base=$(cd "$base" && pwd)/seqfeed
py=${PEER_PYTHON:-/tmp/venv-arrow/bin/python}
"$py" -c 'import pandas' 2>/dev/null || py=""
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
PEER='import sys, time
import pandas as pd
w, c = time.perf_counter(), time.process_time()
t = [pd.read_csv(f) for f in sys.argv[1:]]
t = t[0] if len(t) == 1 else pd.concat(t, ignore_index=True)
print(time.perf_counter() - w, time.process_time() - c, len(t))'

run() {  # run SHAPE TOOL: "WALL CPU"
    local -a in
    mapfile -t in < <(files "$1")
    cat "${in[@]}" >/dev/null  # from the page cache, for every tool alike
    case $2 in
    pandas) "$py" -c "$PEER" "${in[@]}" | awk '{ printf "%.2f %.2f\n", $1, $2 }' ;;
    *)
        local bin=$seqfeed threads=${2#t}
        [ "$2" != base ] || bin=$base threads=2
        rm -f "$out"
        local -a pre=()
        [ "$rt" -eq 0 ] || pre=(chrt -f 10)
        # shellcheck disable=SC2046
        "${pre[@]}" /usr/bin/time -f '%e %U %S' -o "$tf" "$bin" pack "${in[@]}" $(opts "$1") --threads "$threads" -o "$out" -q
        awk '{ printf "%s %.2f\n", $1, $2 + $3 }' "$tf"
        ;;
    esac
}
tools=(t1 t2)
[ -z "$base" ] || tools+=(base)
[ -z "$py" ] || tools+=(pandas)
declare -A wall cpu
lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }
echo "start $(date -u +%H:%M:%S) UTC, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for ((r = 0; r < reps; r++)); do
    for s in "${shapes[@]}"; do
        for ((k = 0; k < ${#tools[@]}; k++)); do
            t=${tools[(k + r) % ${#tools[@]}]}
            read -r w c < <(run "$s" "$t")
            echo "  round $((r + 1)) $s $t: $w s, $c CPU s" >&2
            if [ -z "${wall[$s/$t]:-}" ] || lt "$w" "${wall[$s/$t]}"; then wall[$s/$t]=$w; fi
            if [ -z "${cpu[$s/$t]:-}" ] || lt "$c" "${cpu[$s/$t]}"; then cpu[$s/$t]=$c; fi
        done
    done
done
rm -f "$out"
echo
echo "seqfeed pack --threads 1 / 2 and pandas read_csv, best of $reps rounds; $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg) at the end$([ "$rt" -eq 0 ] || echo "; packs at real-time priority (--rt)")"
echo
echo "| shape | MB | tool | wall s | CPU s | MB/s wall | MB per CPU s |"
echo "|---|---:|---|---:|---:|---:|---:|"
declare -A size
for s in "${shapes[@]}"; do
    mapfile -t in < <(files "$s")
    size[$s]=$(cat "${in[@]}" | wc -c)
    for t in "${tools[@]}"; do
        name=$t
        case $t in t1) name="seqfeed --threads 1" ;; t2) name="seqfeed --threads 2" ;; base) name="before (--threads 2)" ;; pandas) name="pandas read_csv" ;; esac
        awk -v s="$s" -v t="$name" -v b="${size[$s]}" -v w="${wall[$s/$t]}" -v c="${cpu[$s/$t]}" 'BEGIN {
            printf "| %s | %.0f | %s | %.2f | %.2f | %.0f | %.0f |\n", s, b / 1e6, t, w, c, b / 1e6 / w, b / 1e6 / c }'
    done
done
echo
echo "ratios (wall): above 1, the first is faster"
for s in "${shapes[@]}"; do
    line="- $s: threads 2 vs 1 $(awk -v a="${wall[$s/t1]}" -v b="${wall[$s/t2]}" 'BEGIN { printf "%.2fx", a / b }')"
    [ -z "$base" ] || line+=", threads 2 vs before $(awk -v a="${wall[$s/base]}" -v b="${wall[$s/t2]}" 'BEGIN { printf "%.2fx", a / b }')"
    [ -z "$py" ] || line+=", threads 2 vs pandas $(awk -v a="${wall[$s/pandas]}" -v b="${wall[$s/t2]}" 'BEGIN { printf "%.2fx", a / b }')"
    echo "$line"
done
awk -v a="${wall[wide-8-files/t2]}" -v b="${wall[wide-grouped/t2]}" -v c="${cpu[wide-8-files/t2]}" \
    -v d="${cpu[wide-grouped/t2]}" -v x="${size[wide-8-files]}" -v y="${size[wide-grouped]}" 'BEGIN {
    printf "- 8 files / one file, per byte, --threads 2: wall %.2fx, CPU %.2fx\n", a / x * y / b, c / x * y / d }'
