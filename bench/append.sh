#!/usr/bin/env bash
# The cost of `seqfeed pack DAY.csv --append-to BIG.sfpack`: a day (24 rows)
# added to a big file in three shapes, against packing everything again.
#
# usage: bench/append.sh [--build DIR] [--rows N] [--series N] [--json]
#   --build DIR   meson build directory (default: $SEQFEED_BUILD, else build/)
#   --rows N      rows of the big file (default 20000000; 4 float columns,
#                 seqfeed synth: 320 MB of float32)
#   --series N    its series (default 100)
#   --json        also print one JSON object with every figure, as the last line
# environment: BENCH_DIR (scratch space, default /tmp/seqfeed-bench-append).
#
# shapes:
#   every     a day for every series: the first series grows, so every row
#             after its end moves: decoded and compressed again
#   last      a day for the last series only: the chunks before it are kept
#             as stored (copied, or reflinked where the filesystem can)
#   new       a new series only: every chunk but the last kept
# MB/s is the big file's bytes / wall time; RSS is the peak (GNU time).
set -eu
build=${SEQFEED_BUILD:-build} rows=20000000 series=100 json=
while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$2; shift 2 ;;
    --rows) rows=$2; shift 2 ;;
    --series) series=$2; shift 2 ;;
    --json) json=1; shift ;;
    *) echo "usage: $0 [--build DIR] [--rows N] [--series N] [--json]" >&2; exit 2 ;;
    esac
done
S=$(cd "$build" && pwd)/seqfeed
dir=${BENCH_DIR:-/tmp/seqfeed-bench-append}
mkdir -p "$dir" && cd "$dir"
[ -f big.sfpack ] && [ "$(cat big.rows 2>/dev/null)" = "$rows x $series" ] ||
    { "$S" synth -o big.sfpack --rows "$rows" --feature-count 4 --series-count "$series" -q && echo "$rows x $series" >big.rows; }
python3 - "$series" <<'PY'
import sys
n = int(sys.argv[1])
day = lambda s: "".join("s%d,%d.25,%d.5,%d,%d\n" % (s, h, h, h % 3, s) for h in range(24))
open("every.csv", "w").write("series,f0,f1,f2,f3\n" + "".join(day(s) for s in range(n)))
open("last.csv", "w").write("series,f0,f1,f2,f3\n" + day(n - 1))
open("new.csv", "w").write("series,f0,f1,f2,f3\n" + day(n).replace("s%d," % n, "new,"))
PY
size=$(stat -c %s big.sfpack)
printf '%-6s %10s %8s %9s %9s  %s\n' shape seconds MB/s cpu-s "RSS MB" "chunks kept (copy)"
out=
for shape in every last new; do
    cp big.sfpack work.sfpack
    sync
    /usr/bin/time -f '%e %U %S %M' -o time.txt "$S" pack $shape.csv --append-to work.sfpack >say.txt
    read -r wall user sys rss <time.txt
    kept=$(sed -n 's/.*kept \([0-9]* of [0-9]* chunks\) as stored ([0-9.]* MB, \(.*\)), in.*/\1 (\2)/p' say.txt)
    mbs=$(python3 -c "print('%.0f' % ($size / 1e6 / max($wall, 1e-3)))")
    cpu=$(python3 -c "print('%.2f' % ($user + $sys))")
    printf '%-6s %10s %8s %9s %9.0f  %s\n' $shape "$wall" "$mbs" "$cpu" "$((rss / 1024))" "$kept"
    out="$out\"$shape\": {\"seconds\": $wall, \"mb_per_s\": $mbs, \"cpu_s\": $cpu, \"rss_kb\": $rss},"
done
# Packing the grown data again from CSV, for comparison: its CSV alone.
"$S" unpack work.sfpack -o all.csv
/usr/bin/time -f '%e %U %S %M' -o time.txt "$S" pack all.csv -o again.sfpack --series-column series -q
read -r wall user sys rss <time.txt
printf '%-6s %10s %8s %9s %9.0f  %s\n' repack "$wall" "$(python3 -c "print('%.0f' % ($size / 1e6 / max($wall, 1e-3)))")" \
    "$(python3 -c "print('%.2f' % ($user + $sys))")" "$((rss / 1024))" "(pack of the unpacked CSV, $(stat -c %s all.csv) bytes)"
echo "file: $size bytes, $rows rows x 4 columns, $series series; $(nproc) cores; $(df -T . | awk 'NR == 2 {print $2}')"
[ -z "$json" ] || echo "{${out}\"repack_seconds\": $wall, \"file_bytes\": $size}"
rm -f work.sfpack again.sfpack all.csv
