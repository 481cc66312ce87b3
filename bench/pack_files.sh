#!/usr/bin/env bash
# Several inputs against one: `seqfeed pack` of one CSV, and of the same rows
# cut into N files (each with the header), given as files, as a directory,
# and with --series-per-file. Prints MB/s of CSV (best of the rounds) and
# the CPU seconds (user + system) it took, as MB per CPU second: on a busy
# machine the steadier figure. With --json, one JSON object as the last line.
#
# usage: bench/pack_files.sh [--build DIR] [--rows N] [--cols N] [--files N] [--reps N] [--json]
#   --build DIR  meson build directory holding seqfeed and bench/gen_csv
#                (default: $SEQFEED_BUILD, else build/)
#   --rows/--cols  the random-walk CSV (default 2000000 x 7, %.6g: about 120 MB)
#   --files N    files to cut it into (default 8)
#   --reps N     rounds, the ways interleaved (default 3)
# environment: BENCH_DIR (default /tmp/seqfeed-bench-files) holds the CSVs
# (reused when present) and the outputs. Nothing here is part of `meson test`.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=${SEQFEED_BUILD:-$(dirname "$here")/build}
rows=2000000 cols=7 nfiles=8 reps=3 json=0
while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$2; shift 2 ;;
    --rows) rows=$2; shift 2 ;;
    --cols) cols=$2; shift 2 ;;
    --files) nfiles=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --json) json=1; shift ;;
    -h | --help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "pack_files.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
seqfeed=$build/seqfeed gen_csv=$build/bench/gen_csv
for x in "$seqfeed" "$gen_csv"; do
    [ -x "$x" ] || { echo "pack_files.sh: $x not found: build first or pass --build DIR" >&2; exit 1; }
done
dir=${BENCH_DIR:-/tmp/seqfeed-bench-files}/r${rows}c${cols}f${nfiles}
mkdir -p "$dir/parts"
one=$dir/one.csv
if [ ! -s "$one" ]; then
    "$gen_csv" "$rows" "$cols" >"$one.tmp" && mv "$one.tmp" "$one"
    rm -f "$dir"/parts/*.csv
fi
if ! ls "$dir"/parts/*.csv >/dev/null 2>&1; then
    per=$(((rows + nfiles - 1) / nfiles))
    tail -n +2 "$one" | split -d -a 3 -l "$per" --additional-suffix=.body - "$dir/parts/part"
    for b in "$dir"/parts/part*.body; do
        { head -n 1 "$one"; cat "$b"; } >"${b%.body}.csv" && rm "$b"
    done
fi
bytes=$(stat -c %s "$one")
mapfile -t parts < <(ls "$dir"/parts/*.csv)
declare -A best cpu
ways=(one files directory per-file)
run_way() {
    case $1 in
    one) "$seqfeed" pack "$one" -o "$dir/out.sfpack" -q ;;
    files) "$seqfeed" pack "${parts[@]}" -o "$dir/out.sfpack" -q ;;
    directory) "$seqfeed" pack "$dir/parts" -o "$dir/out.sfpack" -q ;;
    per-file) "$seqfeed" pack "${parts[@]}" --series-per-file -o "$dir/out.sfpack" -q ;;
    esac
}
less() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }
TIMEFORMAT='%R %U %S'
for ((r = 0; r < reps; r++)); do
    for ((k = 0; k < ${#ways[@]}; k++)); do
        w=${ways[(k + r) % ${#ways[@]}]}
        read -r wall user sys < <({ time run_way "$w"; } 2>&1)
        c=$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')
        if [ -z "${best[$w]:-}" ] || less "$wall" "${best[$w]}"; then best[$w]=$wall; fi
        if [ -z "${cpu[$w]:-}" ] || less "$c" "${cpu[$w]}"; then cpu[$w]=$c; fi
    done
done
rm -f "$dir/out.sfpack"
printf '%d rows x %d columns, %.1f MB of CSV; %d files of %.1f MB; best of %d, %s threads\n' "$rows" "$cols" \
    "$(awk -v b="$bytes" 'BEGIN { print b / 1e6 }')" "${#parts[@]}" \
    "$(awk -v b="$bytes" -v n="${#parts[@]}" 'BEGIN { print b / n / 1e6 }')" "$reps" "$(nproc)"
printf '%-10s %10s %10s %10s %12s\n' way seconds MB/s cpu-s "MB/cpu-s"
js=""
for w in "${ways[@]}"; do
    mbs=$(awk -v b="$bytes" -v t="${best[$w]}" 'BEGIN { printf "%.1f", b / 1e6 / t }')
    mbc=$(awk -v b="$bytes" -v t="${cpu[$w]}" 'BEGIN { printf "%.1f", b / 1e6 / t }')
    printf '%-10s %10.2f %10s %10.2f %12s\n' "$w" "${best[$w]}" "$mbs" "${cpu[$w]}" "$mbc"
    js+="${js:+, }\"$w\": {\"seconds\": ${best[$w]}, \"mb_per_s\": $mbs, \"cpu_seconds\": ${cpu[$w]}, \"mb_per_cpu_s\": $mbc}"
done
[ "$json" = 1 ] && echo "{\"rows\": $rows, \"cols\": $cols, \"files\": ${#parts[@]}, \"csv_bytes\": $bytes, $js}"
exit 0
