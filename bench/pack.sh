#!/usr/bin/env bash
# CSV -> float32 throughput of `seqfeed pack` against the Python CSV readers,
# then the compression and decode speed of the result.
#
# usage: bench/pack.sh [--build DIR] [--rows N] [--cols N] [--reps N] [--json]
#   --build DIR  meson build directory holding seqfeed and bench/ (default:
#                $SEQFEED_BUILD, else build/ at the top of the source tree)
#   --rows/--cols  size of the random-walk CSV (default 17000000 x 7, %.6g:
#                about 1 GB)
#   --reps N     rounds (default 3); every tool runs once per round, the
#                tools interleaved (the order rotates each round); best of N
#   --json       also print one JSON object with every figure, as the last line
# environment:
#   BENCH_DIR    where the CSV is cached (reused when present) and where the
#                .sfpack outputs go (default /tmp/seqfeed-bench)
#   PYTHON       the interpreter for the peers (default python3)
#   NUMPY_HEAD_MB  numpy.loadtxt is slow: it reads only the first this many MB
#                of the CSV (whole rows; default 100; 0 = the whole file)
#
# Peers run only when they import: pandas' C parser on one thread
# (mode.max_threads=1; the reference of the project's target) and with its
# defaults (pandas >= 3 parses big files on up to 6 threads), pyarrow
# (multi-threaded), numpy.loadtxt. This script installs nothing. Peers are
# timed inside Python around the read call alone (imports not counted);
# seqfeed is timed from outside, process start and the fsync of the output
# included (into a new file: the round before's is removed untimed).
# "seqfeed pack --threads 1, two at once" runs two one-thread packs of the
# CSV side by side and gives each one's mean: what a thread's work costs
# while the other core works too (shared caches, memory, clocks), the
# baseline against which --threads 2's CPU per MB shows what its threads
# themselves add. Nothing here is part of `meson test`.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
build=${SEQFEED_BUILD:-$root/build}
rows=17000000 cols=7 reps=3 json=0
while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$2; shift 2 ;;
    --rows) rows=$2; shift 2 ;;
    --cols) cols=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --json) json=1; shift ;;
    -h | --help) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "pack.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
BENCH_DIR=${BENCH_DIR:-/tmp/seqfeed-bench}
PYTHON=${PYTHON:-python3}
NUMPY_HEAD_MB=${NUMPY_HEAD_MB:-100}
seqfeed=$build/seqfeed gen_csv=$build/bench/gen_csv decode_bench=$build/bench/decode_bench
for x in "$seqfeed" "$gen_csv" "$decode_bench"; do
    [ -x "$x" ] || { echo "pack.sh: $x not found: build first (ninja -C $build) or pass --build DIR" >&2; exit 1; }
done
peer=$here/peers/read_csv.py
mkdir -p "$BENCH_DIR"

now() { date +%s.%N; }
calc() { awk "BEGIN { printf \"%.6g\", $* }"; }
r2() { awk "BEGIN { printf \"%.2f\", $* }"; }
log() { echo "$@" >&2; }
jlist() { echo "$1" | tr -s ' ' '\n' | grep . | paste -sd, -; }  # " 1 2" -> "1,2"

# ---- the CSV (cached) ----
csv=$BENCH_DIR/randwalk-${rows}x${cols}-6g.csv
if [ ! -s "$csv" ]; then
    log "generating $csv ($rows rows x $cols columns, %.6g) ..."
    "$gen_csv" "$rows" "$cols" >"$csv.tmp"
    mv "$csv.tmp" "$csv"
fi
csv_bytes=$(stat -c %s "$csv")
csv_mb=$(awk "BEGIN { printf \"%.1f\", $csv_bytes / 1e6 }")
raw_bytes=$((rows * cols * 4))
cat "$csv" >/dev/null # into the page cache: every tool reads from memory

# whole rows of the first NUMPY_HEAD_MB MB, for numpy.loadtxt
head_csv=$csv head_rows=$rows
if [ "$NUMPY_HEAD_MB" -gt 0 ] && [ "$csv_bytes" -gt $((NUMPY_HEAD_MB * 1000000)) ]; then
    head_rows=$(awk "BEGIN { printf \"%d\", $rows * $NUMPY_HEAD_MB * 1e6 / $csv_bytes }")
    head_csv=$BENCH_DIR/head-${head_rows}x${cols}.csv
    head -n $((head_rows + 1)) "$csv" >"$head_csv"
fi

# ---- which tools ----
tools=(seqfeed-t1 seqfeed-t2)
[ "$(nproc)" -lt 2 ] || tools+=(seqfeed-t1x2)
have() { "$PYTHON" -c "import $1" >/dev/null 2>&1; }
have_np=0
if have numpy; then have_np=1; fi
if [ $have_np = 1 ] && have pandas; then tools+=(pandas-1t pandas); fi
if [ $have_np = 1 ] && have pyarrow; then tools+=(pyarrow); fi
if [ $have_np = 1 ]; then tools+=(numpy); fi
versions="python=none"
if command -v "$PYTHON" >/dev/null; then
    versions="python=$("$PYTHON" -c 'import platform; print(platform.python_version())') $("$PYTHON" "$peer" version)"
fi
skipped=""
for t in pandas-1t pandas pyarrow numpy; do
    case " ${tools[*]} " in *" $t "*) ;; *) skipped="$skipped $t" ;; esac
done

declare -A times cpus bytes_in
out=$BENCH_DIR/bench-pack.sfpack
run_tool() { # prints "WALL_SECONDS CPU_SECONDS"
    local t=$1 TIMEFORMAT='%R %U %S' tm
    case $t in
    seqfeed-t1 | seqfeed-t2)
        # As in pack_peers.sh and pack_threads.sh: the round before's output
        # removed first, or replacing it (the kernel freeing a quarter of a
        # GB of blocks, 0.1-0.2 s in rename on ext4) would count as packing.
        rm -f "$out"
        tm=$( { time "$seqfeed" pack -q "$csv" -o "$out" --threads "${t#seqfeed-t}" >&2; } 2>&1 | tail -1)
        echo "$tm" | awk '{ print $1, $2 + $3 }' ;;
    seqfeed-t1x2)
        rm -f "$out" "$out.2"
        { time "$seqfeed" pack -q "$csv" -o "$out.2" --threads 1 >&2; } 2>"$BENCH_DIR/pair.time" &
        tm=$( { time "$seqfeed" pack -q "$csv" -o "$out" --threads 1 >&2; } 2>&1 | tail -1)
        wait $!
        rm -f "$out.2"
        { echo "$tm"; tail -1 "$BENCH_DIR/pair.time"; } | awk '{ w += $1; c += $2 + $3 } END { print w / 2, c / 2 }' ;;
    numpy) "$PYTHON" "$peer" numpy "$head_csv" | awk '{ print $1, $2 }' ;;
    *) "$PYTHON" "$peer" "$t" "$csv" | awk '{ print $1, $2 }' ;;
    esac
}
for t in "${tools[@]}"; do
    times[$t]="" cpus[$t]=""
    bytes_in[$t]=$csv_bytes
done
[ "$head_csv" = "$csv" ] || bytes_in[numpy]=$(stat -c %s "$head_csv")

log "CSV: $csv ($csv_mb MB, $rows rows x $cols columns); tools: ${tools[*]}${skipped:+; skipped (not importable):$skipped}"
n=${#tools[@]}
load0=$(cut -d' ' -f1-3 /proc/loadavg)
for ((r = 0; r < reps; r++)); do
    for ((k = 0; k < n; k++)); do
        t=${tools[$(((k + r) % n))]}
        read -r s c < <(run_tool "$t")
        times[$t]="${times[$t]} $s" cpus[$t]="${cpus[$t]} $c"
        log "  round $((r + 1)): $t $s s (cpu $c s)"
    done
done

best() { echo "$1" | tr ' ' '\n' | grep . | sort -g | head -1; }
median() { echo "$1" | tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

declare -A mbs mbs_med mbs_cpu
for t in "${tools[@]}"; do
    mbs[$t]=$(calc "${bytes_in[$t]} / 1e6 / $(best "${times[$t]}")")
    mbs_med[$t]=$(calc "${bytes_in[$t]} / 1e6 / $(median "${times[$t]}")")
    mbs_cpu[$t]=$(calc "${bytes_in[$t]} / 1e6 / $(best "${cpus[$t]}")")
done
pandas_mbs=${mbs[pandas-1t]:-} pandas2_mbs=${mbs[pandas]:-}

echo
echo "## CSV -> float32: $csv_mb MB, $rows rows x $cols columns (%.6g random walks), best of $reps, interleaved"
echo "versions: $versions"
printf '%-28s %8s %7s %7s %7s %9s %9s %7s %9s %9s\n' tool "input MB" "best s" "MB/s" median "vs pd-1t" "vs pd" "cpu s" "MB/cpu-s" "vs pd-1t"
for t in "${tools[@]}"; do
    case $t in
    seqfeed-t1) name="seqfeed pack --threads 1" ;;
    seqfeed-t2) name="seqfeed pack --threads 2" ;;
    seqfeed-t1x2) name="seqfeed --threads 1, 2 at once" ;;
    pandas-1t) name="pandas.read_csv, 1 thread" ;;
    pandas) name="pandas.read_csv (default)" ;;
    pyarrow) name="pyarrow.csv.read_csv" ;;
    numpy) name="numpy.loadtxt" ;;
    esac
    vs="n/a" vs2="n/a" vsc="n/a"
    [ -n "$pandas_mbs" ] && vs=$(awk "BEGIN { printf \"%.2fx\", ${mbs[$t]} / $pandas_mbs }")
    [ -n "$pandas2_mbs" ] && vs2=$(awk "BEGIN { printf \"%.2fx\", ${mbs[$t]} / $pandas2_mbs }")
    [ -n "$pandas_mbs" ] && vsc=$(awk "BEGIN { printf \"%.2fx\", ${mbs_cpu[$t]} / ${mbs_cpu[pandas-1t]} }")
    printf '%-28s %8.1f %7.3f %7.1f %7.1f %9s %9s %7.3f %9.1f %9s\n' "$name" "$(calc "${bytes_in[$t]} / 1e6")" \
        "$(best "${times[$t]}")" "${mbs[$t]}" "${mbs_med[$t]}" "$vs" "$vs2" "$(best "${cpus[$t]}")" "${mbs_cpu[$t]}" "$vsc"
done
[ "$head_csv" = "$csv" ] || echo "(numpy.loadtxt read only the first $head_rows rows, about $NUMPY_HEAD_MB MB: it is too slow for the whole file)"
[ -z "$skipped" ] || echo "(skipped, not importable by $PYTHON:$skipped)"
echo "(MB/s, median: wall clock, best and median of $reps. vs pd-1t / vs pd: against pandas.read_csv on one thread"
echo " (mode.max_threads=1) / with its defaults (pandas >= 3 parses large files on several threads). MB/cpu-s: CSV"
echo " MB per CPU-second (user + system, all threads), best of $reps: the cost per core, less sensitive to other"
echo " load on the machine. $(nproc) CPUs; load average at start $load0, end $(cut -d' ' -f1-3 /proc/loadavg))"

# ---- compression: the file of the last seqfeed run (default filter and level) ----
info=$("$seqfeed" inspect "$out" --json)
jget() { echo "$info" | sed -n "s/.*\"$1\": \"\{0,1\}\([^\",}]*\).*/\1/p" | head -1; }
file_bytes=$(jget file_bytes)
filter=$(jget filter)
level=$(jget zstd_level)
zstd_bytes="" zstd_mbs=""
if command -v zstd >/dev/null; then
    t0=$(now)
    zstd_bytes=$(zstd -3 -T1 -q -c "$csv" | wc -c)
    t1=$(now)
    zstd_mbs=$(calc "$csv_bytes / 1e6 / ($t1 - $t0)")
fi
echo
echo "## size (seqfeed defaults: filter $filter, zstd level $level)"
printf '%-34s %14s %16s\n' what bytes "/ .sfpack size"
printf '%-34s %14d %16s\n' "CSV" "$csv_bytes" "$(r2 "$csv_bytes / $file_bytes")x"
printf '%-34s %14d %16s\n' "raw float32 (rows*cols*4)" "$raw_bytes" "$(r2 "$raw_bytes / $file_bytes")x"
if [ -n "$zstd_bytes" ]; then
    printf '%-34s %14d %16s\n' "zstd -3 -T1 of the CSV" "$zstd_bytes" "$(r2 "$zstd_bytes / $file_bytes")x"
else
    echo "(zstd CLI not found: no zstd -3 of the CSV)"
fi
printf '%-34s %14d\n' ".sfpack file" "$file_bytes"
[ -z "$zstd_mbs" ] || echo "(zstd -3 -T1 compressed the CSV at $zstd_mbs MB/s)"

# ---- decode ----
dec=$("$decode_bench" "$out" --json)
dget() { echo "$dec" | sed -n "s/.*\"$1\": \([0-9.]*\).*/\1/p"; }
echo
echo "## decode, 1 thread, chunks in memory (bench/decode_bench)"
echo "wall clock:      decoded float32 $(dget decode_gbps) GB/s, stored bytes $(dget stored_gbps) GB/s; memcpy of the same bytes $(dget memcpy_gbps) GB/s; decode/memcpy $(dget decode_vs_memcpy)"
echo "thread CPU time: decoded float32 $(dget decode_gbps_cpu) GB/s; memcpy $(dget memcpy_gbps_cpu) GB/s; decode/memcpy $(dget decode_vs_memcpy_cpu)"

if [ $json = 1 ]; then
    tj=""
    for t in "${tools[@]}"; do
        vs=null
        [ -n "$pandas_mbs" ] && vs=$(calc "${mbs[$t]} / $pandas_mbs")
        tj="$tj${tj:+, }\"$t\": {\"input_bytes\": ${bytes_in[$t]}, \"seconds\": [$(jlist "${times[$t]}")], \"cpu_seconds\": [$(jlist "${cpus[$t]}")], \"mbps_best\": ${mbs[$t]}, \"mbps_median\": ${mbs_med[$t]}, \"mbps_per_cpu_second\": ${mbs_cpu[$t]}, \"vs_pandas_1t\": $vs}"
    done
    vj=$(echo "$versions" | tr ' ' '\n' | sed 's/\(.*\)=\(.*\)/"\1": "\2"/' | paste -sd, | sed 's/,/, /g')
    echo "{\"csv\": \"$csv\", \"csv_bytes\": $csv_bytes, \"rows\": $rows, \"cols\": $cols, \"reps\": $reps, \"nproc\": $(nproc), \"load_start\": \"$load0\", \"versions\": {$vj}, \"tools\": {$tj}, \"sfpack_bytes\": $file_bytes, \"filter\": \"$filter\", \"zstd_level\": $level, \"raw_float32_bytes\": $raw_bytes, \"zstd3_csv_bytes\": ${zstd_bytes:-null}, \"decode\": $dec}"
fi
rm -f "$out"
[ "$head_csv" = "$csv" ] || rm -f "$head_csv"
