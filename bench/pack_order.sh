#!/usr/bin/env bash
# `seqfeed pack` of rows whose series interleave (time,site,value: a row per
# site per hour, the sites in turn) against the same rows grouped by site:
# MB/s, peak RSS (/usr/bin/time -v), what regrouping spilled, and that no
# temporary file is left; optionally pandas read_csv + groupby(sort=False)
# on the interleaved bytes, the peer that regroups the same way.
#
# usage: bench/pack_order.sh [--build DIR] [--mb N] [--sites N] [--budget MB]
#                            [--reps N] [--check] [--json]
#   --build DIR   meson build directory holding seqfeed (default:
#                 $SEQFEED_BUILD, else build/ at the top of the source tree)
#   --mb N        size of each CSV in MB, about (default 1000)
#   --sites N     series (default 1000)
#   --budget MB   pack's --memory-budget (default: pack's own, 64)
#   --reps N      rounds (default 1), the two orders alternating; best of N
#   --check       also unpack both files and compare them (the same rows,
#                 series by series, must come back; slow for big files)
#   --json        also print one JSON object with every figure, last
# environment:
#   BENCH_DIR     where the CSVs are cached (reused when present) and where
#                 the .sfpack outputs go (default /tmp/seqfeed-bench)
#   PYTHON        the interpreter for the pandas peer (default python3; it
#                 runs only when pandas imports)
# Nothing here is part of `meson test`.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
build=${SEQFEED_BUILD:-$root/build}
mb=1000 sites=1000 budget="" reps=1 check=0 json=0
while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$2; shift 2 ;;
    --mb) mb=$2; shift 2 ;;
    --sites) sites=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --check) check=1; shift ;;
    --json) json=1; shift ;;
    -h | --help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "pack_order.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
BENCH_DIR=${BENCH_DIR:-/tmp/seqfeed-bench}
PYTHON=${PYTHON:-python3}
seqfeed=$build/seqfeed
[ -x "$seqfeed" ] || { echo "pack_order.sh: $seqfeed not found: build first or pass --build DIR" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "pack_order.sh: needs /usr/bin/time (GNU time) for the peak RSS" >&2; exit 1; }
mkdir -p "$BENCH_DIR"
log() { echo "$@" >&2; }

# A line is "2020-01-01T00:00:00,site0001,-12.34" and about 36 bytes: the
# hours that make --mb MB with a row per site per hour.
steps=$(awk -v mb="$mb" -v s="$sites" 'BEGIN { printf "%d", mb * 1e6 / 36 / s + 1 }')
# gen ORDER OUT: the rows of `steps` hours x `sites` sites, hour by hour
# (ORDER interleaved) or site by site (grouped): the same lines either way,
# each site's value a random walk of steps that depend on (site, hour) only.
gen() {
    awk -v steps="$steps" -v sites="$sites" -v order="$1" '
    function date(day,   y, m, n) {  # days since 2020-01-01
        y = 2020
        while (day >= (n = (y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)) ? 366 : 365)) { day -= n; y++ }
        split("31 28 31 30 31 30 31 31 30 31 30 31", ml, " ")
        if (n == 366) ml[2] = 29
        for (m = 1; day >= ml[m]; m++) day -= ml[m]
        return sprintf("%04d-%02d-%02d", y, m, day + 1)
    }
    function step(s, t) { return ((s * 7919 + t * 104729) % 2001 - 1000) / 100 }
    function row(s, t) {
        if (!(t in stamp)) stamp[t] = date(int(t / 24)) sprintf("T%02d:00:00", t % 24)
        v[s] += step(s, t)
        printf "%s,site%04d,%.2f\n", stamp[t], s, v[s]
    }
    BEGIN {
        print "time,site,value"
        if (order == "interleaved") { for (t = 0; t < steps; t++) { for (s = 0; s < sites; s++) row(s, t); delete stamp[t] } }
        else for (s = 0; s < sites; s++) for (t = 0; t < steps; t++) row(s, t)
    }'
}
declare -A csv bytes
for order in interleaved grouped; do
    csv[$order]=$BENCH_DIR/order-$order-${sites}x${steps}.csv
    if [ ! -s "${csv[$order]}" ]; then
        log "generating ${csv[$order]} ($sites sites x $steps hours, $order) ..."
        gen "$order" >"${csv[$order]}.tmp"
        mv "${csv[$order]}.tmp" "${csv[$order]}"
    fi
    bytes[$order]=$(stat -c %s "${csv[$order]}")
done
[ "${bytes[interleaved]}" = "${bytes[grouped]}" ] || { log "the two CSVs differ in size"; exit 1; }

# pack ORDER: "SECONDS PEAK_KB NOTE" of one pack, after checking that
# nothing but the output is left beside it.
pack() {
    local order=$1 out=$BENCH_DIR/order-$1.sfpack t0 t1 rss note
    rm -f "$out"
    cat "${csv[$order]}" >/dev/null  # from the page cache, as the peer reads it
    t0=$(date +%s.%N)
    /usr/bin/time -v -o "$BENCH_DIR/time.txt" "$seqfeed" pack "${csv[$order]}" -o "$out" --series-column site \
        ${budget:+--memory-budget "$budget"} -q 2>"$BENCH_DIR/err.txt"
    t1=$(date +%s.%N)
    rss=$(awk -F: '/Maximum resident set size/ { print $2 + 0 }' "$BENCH_DIR/time.txt")
    note=$(grep -o 'regrouped them.*' "$BENCH_DIR/err.txt" | sed -E 's/.*first appear \(//; s/ sorted runs merged in / runs, /;
        s/ pass\(es\), / pass(es), /; s/ MB written to temporary files beside .*/ MB spilled/; s/, within --memory-budget\)$//' || true)
    if compgen -G "$out.*" >/dev/null || compgen -G "$BENCH_DIR/*.tmp.*" >/dev/null; then
        log "left behind: $(compgen -G "$out.*") $(compgen -G "$BENCH_DIR/*.tmp.*")"
        exit 1
    fi
    echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }') $rss ${note:-none}"
}
peer() {  # "SECONDS PEAK_KB" of pandas read_csv + groupby(sort=False) on the interleaved CSV
    /usr/bin/time -v -o "$BENCH_DIR/time.txt" "$PYTHON" - "${csv[interleaved]}" >"$BENCH_DIR/peer.txt" <<'PY'
import sys, time
import pandas as pd
t = time.perf_counter()
df = pd.read_csv(sys.argv[1])
g = pd.concat([x for _, x in df.groupby("site", sort=False)])
print("%.3f %d" % (time.perf_counter() - t, len(g)))
PY
    echo "$(cut -d' ' -f1 "$BENCH_DIR/peer.txt") $(awk -F: '/Maximum resident set size/ { print $2 + 0 }' "$BENCH_DIR/time.txt")"
}
have_pandas=0
"$PYTHON" -c "import pandas" >/dev/null 2>&1 && have_pandas=1

declare -A best rss notes
for ((r = 0; r < reps; r++)); do
    for order in interleaved grouped; do
        [ $((r % 2)) = 1 ] && order=$([ "$order" = interleaved ] && echo grouped || echo interleaved)
        read -r s k n < <(pack "$order")
        log "  round $((r + 1)): $order $s s, peak RSS $((k / 1024)) MB${n:+ ($n)}"
        if [ -z "${best[$order]:-}" ] || awk -v a="$s" -v b="${best[$order]}" 'BEGIN { exit !(a < b) }'; then
            best[$order]=$s
        fi
        [ "${rss[$order]:-0}" -ge "$k" ] || rss[$order]=$k
        notes[$order]=$n
    done
done
if [ $have_pandas = 1 ]; then
    read -r ps pk < <(peer)
    log "  pandas read_csv + groupby(sort=False): $ps s, peak RSS $((pk / 1024)) MB"
fi
if [ $check = 1 ]; then
    a=$("$seqfeed" unpack "$BENCH_DIR/order-interleaved.sfpack" -o - -q | md5sum)
    b=$("$seqfeed" unpack "$BENCH_DIR/order-grouped.sfpack" -o - -q | md5sum)
    [ "$a" = "$b" ] || { log "the interleaved and grouped packs hold different rows"; exit 1; }
    log "  check: both files unpack to the same rows"
fi

mbs() { awk -v b="$1" -v s="$2" 'BEGIN { printf "%.0f", b / 1e6 / s }'; }
mbsz=$(awk -v b="${bytes[grouped]}" 'BEGIN { printf "%.0f", b / 1e6 }')
ratio=$(awk -v a="${best[interleaved]}" -v b="${best[grouped]}" 'BEGIN { printf "%.2f", a / b }')
echo
echo "## pack, $mbsz MB CSV, $sites sites x $steps hours (time,site,value), best of $reps; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| rows | seconds | MB/s | peak RSS | regrouping |"
echo "|---|---:|---:|---:|---|"
for order in grouped interleaved; do
    echo "| $order | ${best[$order]} | $(mbs "${bytes[$order]}" "${best[$order]}") | $((rss[$order] / 1024)) MB | ${notes[$order]} |"
done
[ $have_pandas = 1 ] && echo "| interleaved, pandas read_csv + groupby(sort=False) | $ps | $(mbs "${bytes[interleaved]}" "$ps") | $((pk / 1024)) MB | in memory |"
echo
echo "interleaved / grouped time: $ratio (target: at most 2); temporary files left: none"
if [ $json = 1 ]; then
    printf '{"csv_bytes": %s, "sites": %s, "hours": %s, "reps": %s' "${bytes[grouped]}" "$sites" "$steps" "$reps"
    for order in grouped interleaved; do
        printf ', "%s": {"seconds": %s, "mb_per_s": %s, "peak_rss_kb": %s}' "$order" "${best[$order]}" \
            "$(mbs "${bytes[$order]}" "${best[$order]}")" "${rss[$order]}"
    done
    [ $have_pandas = 1 ] && printf ', "pandas": {"seconds": %s, "peak_rss_kb": %s}' "$ps" "$pk"
    printf ', "ratio": %s}\n' "$ratio"
fi
