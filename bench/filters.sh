#!/usr/bin/env bash
# The measurement behind the format's default filter and zstd level: every
# filter at every level on three data sets, reporting compression ratio,
# pack speed and decode speed.
#
# usage: bench/filters.sh [--build DIR] [--rows N] [--reps N] [--levels "L ..."]
#                         [--datasets "D ..."] [--json]
#   --build DIR   meson build directory (default: $SEQFEED_BUILD, else build/)
#   --rows N      rows of the generated random walks (default 4000000; 7 columns)
#   --reps N      rounds (default 3): each round packs every configuration once
#                 and runs decode_bench on it, configurations interleaved; the
#                 best round is reported
#   --levels      zstd levels (default "-1 1 3 9")
#   --datasets    any of treasury rw6g rw9g (default all three):
#                   treasury  data/treasury-yields-daily.csv, real, 9574 x 5
#                   rw6g      random walks printed with %.6g (gen_csv)
#                   rw9g      float32 random walks printed with %.9g, every
#                             mantissa bit significant (gen_csv --full)
#   --json        also print one JSON object with every figure, as the last line
# environment: BENCH_DIR (cache of the generated CSVs and scratch space for the
# .sfpack files, default /tmp/seqfeed-bench).
#
# ratio      raw float32 bytes / stored chunk bytes (chunks.compression_ratio)
# pack MB/s  CSV bytes / wall time of `seqfeed pack --threads 1` (parse +
#            filter + compress + write + fsync on one core; the parse part is
#            the same for every configuration), best round. On the tiny
#            treasury file it is dominated by process start and means little.
# pack MB/cpu-s  the same per CPU-second (user + system) of the process:
#            what to compare when other work shares the machine
# dec GB/s   bench/decode_bench, one thread, chunks in memory: GB/s of float32
#            produced, wall clock, best round
# dec GB/cpu-s  the same by the thread's CPU time
# dec/memcpy  decode against memcpy of the same bytes, both by CPU time (on
#            the treasury file memcpy runs in cache: the fraction means little)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
build=${SEQFEED_BUILD:-$root/build}
rows=4000000 cols=7 reps=3 json=0 levels="-1 1 3 9" datasets="treasury rw6g rw9g"
while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$2; shift 2 ;;
    --rows) rows=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --levels) levels=$2; shift 2 ;;
    --datasets) datasets=$2; shift 2 ;;
    --json) json=1; shift ;;
    -h | --help) sed -n '2,34p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "filters.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
BENCH_DIR=${BENCH_DIR:-/tmp/seqfeed-bench}
seqfeed=$build/seqfeed gen_csv=$build/bench/gen_csv decode_bench=$build/bench/decode_bench
for x in "$seqfeed" "$gen_csv" "$decode_bench"; do
    [ -x "$x" ] || { echo "filters.sh: $x not found: build first (ninja -C $build) or pass --build DIR" >&2; exit 1; }
done
mkdir -p "$BENCH_DIR"
scratch=$(mktemp -d "$BENCH_DIR/filters.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
filters="none shuffle delta-shuffle"

TIMEFORMAT='%R %U %S'
log() { echo "$@" >&2; }
jlist() { echo "$1" | tr -s ' ' '\n' | grep . | paste -sd, -; }  # " 1 2" -> "1,2"
jnum() { echo "$2" | sed -n "s/.*\"$1\": \([0-9.eE+-]*\).*/\1/p" | head -1; }
min() { echo "$1" | tr ' ' '\n' | grep . | sort -g | head -1; }
max() { echo "$1" | tr ' ' '\n' | grep . | sort -g | tail -1; }

dataset_csv() { # prints the CSV path, generating it when needed
    local f
    case $1 in
    treasury) echo "$root/data/treasury-yields-daily.csv"; return ;;
    rw6g) f=$BENCH_DIR/randwalk-${rows}x${cols}-6g.csv ;;
    rw9g) f=$BENCH_DIR/randwalk-${rows}x${cols}-9g.csv ;;
    *) echo "filters.sh: unknown data set '$1'" >&2; exit 2 ;;
    esac
    if [ ! -s "$f" ]; then
        log "generating $f ..."
        if [ "$1" = rw9g ]; then "$gen_csv" --full "$rows" "$cols" >"$f.tmp"; else "$gen_csv" "$rows" "$cols" >"$f.tmp"; fi
        mv "$f.tmp" "$f"
    fi
    echo "$f"
}

alljson=""
for ds in $datasets; do
    csv=$(dataset_csv "$ds")
    csv_bytes=$(stat -c %s "$csv")
    cat "$csv" >/dev/null
    declare -A ptimes=() pcpu=() dgbps=() dcpu=() dratio=() info=()
    log "$ds: $csv ($csv_bytes bytes)"
    load0=$(cut -d' ' -f1-3 /proc/loadavg)
    for ((r = 1; r <= reps; r++)); do
        for f in $filters; do
            for l in $levels; do
                k="$f/$l" out="$scratch/$ds-$f-$l.sfpack"
                tm=$( { time "$seqfeed" pack -q "$csv" -o "$out" --threads 1 --filter "$f" --level "$l" >&2; } 2>&1 | tail -1)
                ptimes[$k]="${ptimes[$k]:-} $(echo "$tm" | awk '{ print $1 }')"
                pcpu[$k]="${pcpu[$k]:-} $(echo "$tm" | awk '{ print $2 + $3 }')"
                d=$("$decode_bench" "$out" --json --seconds 0.3)
                dgbps[$k]="${dgbps[$k]:-} $(jnum decode_gbps "$d")"
                dcpu[$k]="${dcpu[$k]:-} $(jnum decode_gbps_cpu "$d")"
                dratio[$k]="${dratio[$k]:-} $(jnum decode_vs_memcpy_cpu "$d")"
                info[$k]=$d
            done
        done
        log "  round $r done"
    done

    first_level=${levels%% *}
    raw=$(jnum raw_bytes "${info[none/$first_level]}")
    echo
    echo "## $ds: $(basename "$csv"), $csv_bytes CSV bytes, $raw raw float32 bytes; best of $reps rounds"
    printf '%-14s %6s %7s %10s %10s %12s %10s %12s %11s\n' filter level ratio "stored MB" "pack MB/s" "pack MB/cpu-s" \
        "dec GB/s" "dec GB/cpu-s" "dec/memcpy"
    rows_json=""
    for f in $filters; do
        for l in $levels; do
            k="$f/$l"
            stored=$(jnum stored_bytes "${info[$k]}")
            ratio=$(jnum compression_ratio "${info[$k]}")
            pmbs=$(awk "BEGIN { printf \"%.1f\", $csv_bytes / 1e6 / $(min "${ptimes[$k]}") }")
            pcmbs=$(awk "BEGIN { m = $(min "${pcpu[$k]}"); printf \"%.1f\", (m > 0 ? $csv_bytes / 1e6 / m : 0) }")
            dg=$(max "${dgbps[$k]}")
            dc=$(max "${dcpu[$k]}")
            dr=$(max "${dratio[$k]}")
            printf '%-14s %6s %7.3f %10.2f %10s %12s %10.2f %12.2f %11.3f\n' "$f" "$l" "$ratio" \
                "$(awk "BEGIN { print $stored / 1e6 }")" "$pmbs" "$pcmbs" "$dg" "$dc" "$dr"
            rows_json="$rows_json${rows_json:+, }{\"filter\": \"$f\", \"level\": $l, \"stored_bytes\": $stored, \"ratio\": $ratio, \"pack_mbps_t1\": $pmbs, \"pack_mb_per_cpu_s\": $pcmbs, \"pack_seconds\": [$(jlist "${ptimes[$k]}")], \"pack_cpu_seconds\": [$(jlist "${pcpu[$k]}")], \"decode_gbps\": $dg, \"decode_gb_per_cpu_s\": $dc, \"decode_vs_memcpy_cpu\": $dr}"
        done
    done
    alljson="$alljson${alljson:+, }\"$ds\": {\"csv\": \"$csv\", \"csv_bytes\": $csv_bytes, \"raw_bytes\": $raw, \"results\": [$rows_json]}"
    echo "(load average at start $load0, end $(cut -d' ' -f1-3 /proc/loadavg), on $(nproc) CPUs)"
    rm -f "$scratch"/*.sfpack
    unset ptimes pcpu dgbps dcpu dratio info
done
[ $json = 0 ] || echo "{\"reps\": $reps, \"datasets\": {$alljson}}"
