#!/usr/bin/env bash
# Every figure docs/BENCHMARKS.md publishes, measured in one run: each
# section runs its tools side by side in interleaved rounds and prints the
# command and a markdown table of medians [min-max] over the rounds, ratios
# taken round by round. A header records the machine (CPU, cores, AVX-512 /
# AMX flags), the date, the load (load average before and after, the CPU
# other processes took meanwhile) and the peers' versions. Peers (PyTorch,
# Keras, pandas, pyarrow) run where --python imports them; a section whose
# peer or tool is missing says "skipped: ... not installed".
#
# usage: bench/all.sh [--build DIR] [--python PY] [--rounds N] [--quick]
#                     [--only NAME,...] [--out FILE] [--update-doc] [--doc FILE]
#                     [--from FILE] [--list]
#   --build DIR   meson build directory (default: $SEQFEED_BUILD, else build/)
#   --python PY   the interpreter with the peers (default python3)
#   --rounds N    rounds of each section (default 5; 2 with --quick)
#   --quick       smaller data, fewer steps and rounds: every table, in about
#                 ten minutes on 2 cores (figures to check the script, not to quote)
#   --only A,B    these sections only (--list names them); their header is
#                 written but not marked, so --update-doc keeps the doc's
#                 (the full run's) unless A,B names header too
#   --out FILE    the markdown written (default BUILD/bench-all.md); its
#                 blocks sit between <!-- all.sh:NAME begin --> and end markers
#   --update-doc  then replace those blocks in the doc (each one the run
#                 produced; the rest of the doc untouched), atomically
#   --doc FILE    the doc --update-doc rewrites (default docs/BENCHMARKS.md)
#   --from FILE   measure nothing: take the blocks from FILE, an earlier --out
#   --list        the sections, one a line, and exit
# environment: BENCH_DIR (default /tmp/seqfeed-bench): data cached under
# BENCH_DIR/all. Never part of `meson test`. Exit status 0 when every section
# ran or was skipped, 1 when one failed (its block says so), 2 on usage errors.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
build=${SEQFEED_BUILD:-$root/build} py=python3 rounds="" quick=0 only="" out="" update=0
doc=$root/docs/BENCHMARKS.md from=""
sections=(pack filters pack_peers pack_threads append pipeline pipeline_peers train gru gemm lstm scaling
    keras_fit keras_epoch time_to_loss autotune)
usage() { echo "all.sh: $1 (see bench/all.sh --help)" >&2; exit 2; }
while [ $# -gt 0 ]; do
    case $1 in
    --build | --python | --rounds | --only | --out | --doc | --from) [ $# -ge 2 ] || usage "$1 needs a value" ;;&
    --build) build=$2; shift 2 ;;
    --python) py=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    --only) only=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --update-doc) update=1; shift ;;
    --doc) doc=$2; shift 2 ;;
    --from) from=$2; shift 2 ;;
    --list) printf '%s\n' header "${sections[@]}"; exit 0 ;;
    -h | --help) sed -n '2,32p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) usage "unknown argument '$1'" ;;
    esac
done
[ -n "$rounds" ] || rounds=$((quick ? 2 : 5))
[[ $rounds =~ ^[1-9][0-9]*$ ]] || usage "--rounds takes a positive integer, not '$rounds'"
report=$here/all_report.py
if [ -n "$from" ]; then
    [ $update = 1 ] || usage "--from is for --update-doc"
    [ -f "$from" ] || { echo "all.sh: --from $from: no such file" >&2; exit 1; }
    exec python3 "$report" doc "$doc" "$from"
fi
if [ -n "$only" ]; then
    for s in ${only//,/ }; do
        [ "$s" = header ] || [[ " ${sections[*]} " == *" $s "* ]] || usage "--only: no section '$s' (--list)"
    done
    picked=()
    for s in "${sections[@]}"; do [[ ",$only," == *",$s,"* ]] && picked+=("$s"); done
    sections=(${picked[@]+"${picked[@]}"})
fi
sf=$build/seqfeed
[ ${#sections[@]} = 0 ] || [ -x "$sf" ] || { echo "all.sh: $sf not found: build first (ninja -C $build) or pass --build DIR" >&2; exit 1; }
[ -n "$out" ] || out=$build/bench-all.md
[ "$(realpath -m "$out")" != "$(realpath -m "$doc")" ] ||
    usage "--out is the doc itself: it would lose the text between the blocks (--update-doc rewrites the blocks)"
work=${BENCH_DIR:-/tmp/seqfeed-bench}/all
mkdir -p "$work" "$(dirname "$out")"
raw=$(mktemp -d "$work/run.XXXXXX")
cores=$(nproc)
q() { [ $quick = 1 ] && echo "$1" || echo "$2"; } # q QUICK FULL
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
cpu_model() { lscpu | sed -n 's/^Model name: *//p' | head -1; }
# The CPU, for each section's last line: sections of the doc come from runs on different machines.
cpu_name() {
    local vec="no AVX2"
    grep -qw avx2 /proc/cpuinfo && vec=AVX2
    grep -qw avx512f /proc/cpuinfo && vec=AVX-512
    echo "$(cpu_model) ($vec)"
}
has_py() { "$py" -c "import $1" >/dev/null 2>&1; }
drop() { sync; echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true; } # the page cache, when root
# The command a section ran, as a reader would type it from the top of the
# tree, its data files named without the cache directory.
show() {
    local w s=""
    for w in "$@"; do
        w=${w//$root\//}
        w=${w#"$work"/}
        [[ $w =~ ^[A-Za-z0-9_./=:,+-]+$ ]] || w="'$w'"
        s+="${s:+ }$w"
    done
    printf '```sh\n%s\n```\n\n' "$s"
}
# Shows a command and runs it: what is shown is what ran. A section that
# runs one several times shows an array of it once and runs that.
shown() { show "$@"; "$@"; }
rec() { printf '%s\t%s\t%s\t%s\t%s\n' "$@" >>"$recs"; } # round group row key value
table() { python3 "$report" table "$recs" "$@"; echo; }
skip() { echo "skipped: $*"; echo; }

# The JSON lines of bench train, gemm_bench and lstm_bench as records (python3 -c "$PY_..." ARGS < JSON).
read -r -d '' PY_TRAIN <<'PY'
import json, sys
r, p, name, recs, detail = sys.argv[1:]
with open(recs, "a") as f, open(detail, "a") as g:
    for line in sys.stdin:
        j = json.loads(line)
        b = "batch %d" % j["batch_size"]
        f.write(f"{r}\t{b}\t{name} {p}\tsps\t{j['samples_per_s']}\n")
        for k, v in j.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 and (
                    k.startswith("share_of_") or k.endswith("_gflops") or k == "gflops" or
                    k in ("real_over_resident", "input_wait")):
                pct = k.startswith("share_of_") or k == "input_wait"
                g.write(f"{r}\t{b}\t{name} {p}\t{k}\t{100 * v if pct else v}\n")
PY
read -r -d '' PY_GEMM <<'PY'
import json, sys
r, recs = sys.argv[1:]
with open(recs, "a") as f:
    for s in json.load(sys.stdin)["shapes"]:
        row = "%s (%d x %d x %d)" % (s["name"], s["M"], s["N"], s["K"])
        for k in ("openblas_f32", "onednn_f32", "onednn_bf16"):
            if s[k] is not None:  # null: no bf16 matmul on this CPU
                f.write(f"{r}\t\t{row}\t{k}\t{s[k]}\n")
        if s["onednn_bf16"] is not None:
            f.write(f"{r}\t\t{row}\tx\t{s['onednn_bf16'] / max(s['openblas_f32'], s['onednn_f32'])}\n")
PY
read -r -d '' PY_LSTM <<'PY'
import json, sys
r, recs = sys.argv[1:]
with open(recs, "a") as f:
    for line in sys.stdin:
        j = json.loads(line)
        m = {k: v for k, v in j["ms_per_pass"].items() if v > 0}
        row = "%d rows" % j["batch"]
        for k, v in m.items():
            f.write(f"{r}\t\t{row}\t{k}\t{v}\n")
        for p, q in (("fp32", "f32"), ("bf16", "bf16")):
            if f"seqfeed_{p}" in m and f"onednn_lstm_{q}" in m:
                f.write(f"{r}\t\t{row}\tx_{p}\t{m['onednn_lstm_' + q] / m['seqfeed_' + p]}\n")
PY

# ---- the sections: each prints its block's markdown on stdout, its log on stderr ----

fig_pack() {
    local rows nh j cmd
    rows=$(q 1000000 17000000) nh=$(q 10 100)
    cmd=(env PYTHON="$py" NUMPY_HEAD_MB="$nh" "$here/pack.sh" --build "$build" --rows "$rows" --reps "$rounds" --json)
    show "${cmd[@]}"
    j=$(BENCH_DIR=$work "${cmd[@]}" | tee /dev/stderr | tail -1)
    J=$j python3 - "$recs" <<'PY'
import json, os, sys
j = json.loads(os.environ["J"])
names = {"seqfeed-t1": "seqfeed pack --threads 1", "seqfeed-t2": "seqfeed pack --threads 2",
         "seqfeed-t1x2": "seqfeed pack --threads 1, two at once (each)",
         "pandas-1t": "pandas.read_csv, 1 thread", "pandas": "pandas.read_csv, defaults",
         "pyarrow": "pyarrow.csv.read_csv", "numpy": "numpy.loadtxt (the first MB only)"}
with open(sys.argv[1], "a") as f:
    for t, d in j["tools"].items():
        for i, (s, c) in enumerate(zip(d["seconds"], d["cpu_seconds"])):
            mb = d["input_bytes"] / 1e6
            f.write(f"{i + 1}\t\t{names.get(t, t)}\tmbs\t{mb / s}\n{i + 1}\t\t{names.get(t, t)}\tmbc\t{mb / c}\n")
PY
    echo "$(jq_get "$j" csv_bytes) bytes of CSV ($rows rows x 7 columns of \`%.6g\` random walks, page cache), $rounds interleaved rounds, the order rotating:"
    echo
    local t1="seqfeed pack --threads 1" t2="seqfeed pack --threads 2" pair="seqfeed pack --threads 1, two at once (each)"
    table --row-label tool --cols "mbs:MB/s (wall):.0f,mbc:MB per CPU s:.0f" \
        --ratio "$t1 / this:mbs:$t1:ref/this" --ratio "$t2 / this:mbs:$t2:ref/this" \
        --ratio "$t1 / this, CPU:mbc:$t1:ref/this" --ratio "two at once / this, CPU:mbc:$pair:ref/this"
    J=$j python3 - <<'PY'
import json, os, sys
j = json.loads(os.environ["J"])
b, d = j["sfpack_bytes"], j["decode"]
z = f", `zstd -3 -T1` of the CSV {j['zstd3_csv_bytes'] / b:.2f}x" if j.get("zstd3_csv_bytes") else ""
print(f"Size ({j['filter']}, zstd level {j['zstd_level']}): {b:,} bytes; the CSV is {j['csv_bytes'] / b:.2f}x that, "
      f"raw float32 {j['raw_float32_bytes'] / b:.2f}x{z}.\n")
print(f"Decode (`bench/decode_bench`, 1 thread, chunks in memory, its best pass): {d['decode_gbps']:.2f} GB/s of "
      f"float32 ({d['decode_gbps_cpu']:.2f} per CPU s); memcpy of the same bytes {d['memcpy_gbps']:.1f} GB/s; "
      f"decode / memcpy {d['decode_vs_memcpy']:.3f}.\n")
PY
    local skipped
    skipped=$(for m in pandas pyarrow numpy; do has_py $m || printf ' %s' $m; done)
    [ -z "$skipped" ] || skip "$skipped not installed for $py"
}

jq_get() { python3 -c 'import json, sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }

fig_filters() {
    local rows levels sets j cmd
    rows=$(q 500000 4000000) levels=$(q "1 3" "-1 1 3 9") sets=$(q "treasury rw6g" "treasury rw6g rw9g")
    cmd=("$here/filters.sh" --build "$build" --rows "$rows" --reps "$rounds" --levels "$levels" --datasets "$sets" --json)
    show "${cmd[@]}"
    j=$(BENCH_DIR=$work "${cmd[@]}" | tee /dev/stderr | tail -1)
    J=$j python3 - "$recs" <<'PY'
import json, os, sys
j = json.loads(os.environ["J"])
names = {"treasury": "treasury (real)", "rw6g": "walks %.6g", "rw9g": "walks %.9g"}
with open(sys.argv[1], "a") as f:
    for ds, d in j["datasets"].items():
        for r in d["results"]:
            row = f"{r['filter']}, level {r['level']}"
            f.write(f"1\t{names.get(ds, ds)}\t{row}\tratio\t{r['ratio']}\n")
            f.write(f"1\t{names.get(ds, ds)}\t{row}\tdec\t{r['decode_gb_per_cpu_s']}\n")
            for i, c in enumerate(r["pack_cpu_seconds"]):
                f.write(f"{i + 1}\t{names.get(ds, ds)}\t{row}\tmbc\t{d['csv_bytes'] / 1e6 / c}\n")
PY
    echo "Ratio: raw float32 bytes / stored chunk bytes (deterministic). Pack: \`seqfeed pack --threads 1\`, CSV MB per CPU s. Decode: \`decode_bench\`, 1 thread, the best of the rounds. The default is delta-shuffle (zigzag delta) at level 1."
    echo
    table --group-label data --row-label "filter, zstd level" \
        --cols "ratio:ratio:.3f,mbc:pack MB per CPU s:.0f,dec:decode GB per CPU s:.2f" \
        --ratio "pack CPU, default / this:mbc:delta-shuffle, level 1:this/ref"
}

# Rows of a markdown table a sub-script printed, as records: round, the cells named.
md_rows() { # ROUND SPEC < text; SPEC: the column index of group, row, then key=index pairs
    local text
    text=$(cat)
    T=$text python3 - "$recs" "$@" <<'PY'
import os, sys
recs, rnd, g, r, *keys = sys.argv[1:]
with open(recs, "a") as f:
    for line in os.environ["T"].splitlines():
        c = [x.strip() for x in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(c) < 3 or c[0] in ("shape", "") or set(c[0]) <= set("-:"):
            continue
        for kv in keys:
            k, i = kv.split("=")
            v = c[int(i)]
            try:
                float(v)
            except ValueError:
                continue
            f.write(f"{rnd}\t{c[int(g)] if g != '-' else ''}\t{c[int(r)]}\t{k}\t{v}\n")
PY
}

fig_pack_peers() {
    local mb prows r cmd
    mb=$(q 20 250) prows=$(q 200000 3000000)
    has_py pandas || has_py pyarrow || { skip "pandas and pyarrow not installed for $py"; return; }
    cmd=(env PEER_PYTHON="$py" "$here/pack_peers.sh" --build "$build" --mb "$mb" --parquet-rows "$prows" --reps 1)
    show "${cmd[@]}"
    echo "run once per round, $rounds rounds. seqfeed's figures are the whole process (parse, compress, fsync of the output); a CSV peer's are timed inside Python around the read (imports left out), its peak RSS is the whole process's; (d) compares whole processes."
    echo
    for r in $(seq "$rounds"); do
        BENCH_DIR=$work/peers "${cmd[@]}" | tee /dev/stderr | md_rows "$r" 0 1 cpu=4 mbs=5 mbc=6 rss=7
    done
    local ref="seqfeed|python -m seqfeed pack"
    table --group-label shape --row-label tool \
        --cols "cpu:CPU s:.2f,mbs:MB/s wall:.0f,mbc:MB per CPU s:.0f,rss:peak RSS MB:.0f" \
        --ratio "seqfeed / this, wall:mbs:$ref:ref/this" --ratio "seqfeed / this, CPU:mbc:$ref:ref/this" \
        --ratio "peak RSS, seqfeed / this:rss:$ref:ref/this"
}

fig_pack_threads() {
    local mb r cmd
    mb=$(q 10 100)
    cmd=(env PEER_PYTHON="$py" "$here/pack_threads.sh" --build "$build" --mb "$mb" --reps 1 --keep)
    show "${cmd[@]}"
    echo "run once per round, $rounds rounds; without \`--rt\`: on a loaded machine a second thread may wait for the first one's core."
    echo
    for r in $(seq "$rounds"); do
        BENCH_DIR=$work/threads "${cmd[@]}" | tee /dev/stderr | md_rows "$r" 0 2 mbs=5 mbc=6
    done
    local t1="seqfeed --threads 1" t2="seqfeed --threads 2" pair="seqfeed --threads 1, two at once (each)"
    table --group-label shape --row-label tool --cols "mbs:MB/s wall:.0f,mbc:MB per CPU s:.0f" \
        --ratio "this / $t1, wall:mbs:$t1:this/ref" --ratio "this / $t1, CPU:mbc:$t1:this/ref" \
        --ratio "this / two at once, CPU:mbc:$pair:this/ref" --ratio "$t2 / this, wall:mbs:$t2:ref/this"
}

fig_append() {
    local rows r cmd
    rows=$(q 2000000 20000000)
    cmd=("$here/append.sh" --build "$build" --rows "$rows" --series 100)
    show "${cmd[@]}"
    for r in $(seq "$rounds"); do
        BENCH_DIR=$work/append "${cmd[@]}" | tee /dev/stderr |
            awk -v r="$r" '$1 ~ /^(every|last|new|repack)$/ {
                n = $1 == "every" ? "a day for every series" : $1 == "last" ? "a day for the last series" : \
                    $1 == "new" ? "a new series" : "pack everything again from its CSV"
                printf "%s\t\t%s\twall\t%s\n%s\t\t%s\tcpu\t%s\n%s\t\t%s\trss\t%s\n", r, n, $2, r, n, $4, r, n, $5 }' >>"$recs"
    done
    echo "\`seqfeed pack DAY.csv --append-to BIG.sfpack\` on a synth file of $rows rows x 4 columns, 100 series, $rounds rounds:"
    echo
    table --row-label shape --cols "wall:wall s:.2f,cpu:CPU s:.2f,rss:peak RSS MB:.0f" \
        --ratio "CPU, packing again / this:cpu:pack everything again from its CSV:ref/this"
}

fig_pipeline() {
    local rows file r j wps rate args many one reader
    rows=$(q 4000000 40000000)
    file=$work/synth-pipeline-$rows.sfpack
    [ -f "$file" ] || "$sf" synth -o "$file" --rows "$rows" --feature-count 4 --series-count 8 -q >&2
    args=(--window 60 --batch-size 256 --pool 16384 --block-chunks 2)
    many=("$sf" bench pipeline --data "$file" "${args[@]}" --lanes "$cores" --json)
    one=("$sf" bench pipeline --data "$file" "${args[@]}" --lanes 1 --json)
    reader=("$sf" bench read --data "$file" --depth 8 --block-chunks 2 --json)
    show "${many[@]}"
    show "${one[@]}"
    echo "and again with \`--consume-rate\` (80% of that one lane's batches/s) \`--slots 16\`:"
    echo
    show "${reader[@]}"
    for r in $(seq "$rounds"); do
        drop
        j=$("${many[@]}")
        echo "$j" >&2
        rec "$r" "" "pipeline, $cores lanes" wps "$(jq_get "$j" windows_per_s)"
        rec "$r" "" "pipeline, $cores lanes" rof "$(jq_get "$j" read_over_file)"
        rec "$r" "" "random window copy from RAM, 1 thread (ceiling)" wps "$(jq_get "$j" memory_ceiling_windows_per_s)"
        j=$("${one[@]}")
        echo "$j" >&2
        wps=$(jq_get "$j" windows_per_s)
        rec "$r" "" "pipeline, 1 lane" wps "$wps"
        rate=$(python3 -c "print(max(1, int($wps * 0.8 / 256)))")
        j=$("$sf" bench pipeline --data "$file" "${args[@]}" --lanes 1 --consume-rate "$rate" --slots 16 --json)
        echo "$j" >&2
        rec "$r" "" "pipeline, 1 lane, a consumer asking 80% of it, 16 slots" wps "$(jq_get "$j" windows_per_s)"
        rec "$r" "" "pipeline, 1 lane, a consumer asking 80% of it, 16 slots" stall \
            "$(python3 -c "import json, sys; print(100 * json.loads(sys.argv[1])['consumer_stall'])" "$j")"
        drop
        j=$("${reader[@]}")
        echo "$j" >&2
        rec "$r" "" "reader alone (seqfeed bench read), GB/s" gbs "$(jq_get "$j" GB_per_s)"
        if command -v fio >/dev/null; then
            drop
            rec "$r" "" "fio, io_uring, O_DIRECT, 1 MiB, depth 8, GB/s" gbs "$(fio --readonly --name=r --filename="$file" \
                --ioengine=io_uring --direct=1 --bs=1M --iodepth=8 --rw=read --size="$(stat -c %s "$file")" \
                --output-format=json | python3 -c "import json,sys; print(json.load(sys.stdin)['jobs'][0]['read']['bw_bytes']/1e9)")"
        fi
    done
    echo "\`seqfeed synth --rows $rows --feature-count 4 --series-count 8\` ($(($(stat -c %s "$file") / 1000000)) MB on disk), window 60, batch 256, pool 16384, 2 chunks per block, caches dropped before each run (when root), $rounds rounds:"
    echo
    local ceil="random window copy from RAM, 1 thread (ceiling)"
    python3 - "$recs" <<'PY'
import sys
lines = [l.split("\t") for l in open(sys.argv[1])]
with open(sys.argv[1], "w") as f:  # windows/s in millions
    for l in lines:
        if l[3] == "wps":
            l[4] = f"{float(l[4]) / 1e6}\n"
        f.write("\t".join(l))
PY
    grep -v 'GB/s' "$recs" >"$recs.w"
    grep 'GB/s' "$recs" >"$recs.r"
    recs=$recs.w table --row-label "what" --cols "wps:M windows/s:.2f,rof:bytes read / file:.2f,stall:consumer stall %:.2f" \
        --ratio "this / ceiling:wps:$ceil:this/ref"
    recs=$recs.r table --row-label "reader" --cols "gbs:GB/s:.2f" --ratio "this / fio:gbs:fio, io_uring, O_DIRECT, 1 MiB, depth 8, GB/s:this/ref"
    command -v fio >/dev/null || skip "fio not installed (the reader's ceiling)"
}

fig_pipeline_peers() {
    [ -x "$here/pipeline_peers.sh" ] || { skip "bench/pipeline_peers.sh not present (tf.data and DataLoader stalls, issue 30)"; return; }
    # Its own table and medians (--json would print the object instead of the table).
    # shellcheck disable=SC2046 # --quick's options are two words each
    shown "$here/pipeline_peers.sh" --build "$build" --python "$py" --rounds "$rounds" $(q "--steps 150 --cap 1.5" "")
}

# A training peer's run in train_rounds' round r at precision p (bench/peers/train_peer.py's
# options and lines): records rows "NAME p".
peer_round() {
    "$py" "$here/peers/$1" --batch 32,256 --threads "$cores" --window "$window" --steps "$steps" \
        --warmup "$warmup" --reps 1 --precision "$p" | tee /dev/stderr |
        sed -n "s/^batch \([0-9]*\): \([0-9.]*\) samples\/s/$r\tbatch \1\t$2 $p\tsps\t\2/p" >>"$recs"
}

# seqfeed bench train (and the PyTorch and Keras peers) in both precisions: records rows "seqfeed P", "PyTorch P", "Keras 3 P",
# and every share/ceiling key bench train's JSON has into $recs.detail; $1: extra models "NAME=SPEC ...".
train_rounds() {
    local data=$1 window=$2 steps=$3 warmup=$4 precisions=$5 models=$6 r p m torch=$7 keras=${8:-0} order
    for r in $(seq "$rounds"); do
        order="seqfeed torch keras"
        [ $((r % 2)) = 0 ] && order="keras torch seqfeed"
        for p in $precisions; do
            for who in $order; do
                if [ "$who" = seqfeed ]; then
                    for m in $models; do
                        "$sf" bench train --data "$data" --batch-size 32,256 --window "$window" --steps "$steps" \
                            --warmup "$warmup" --precision "$p" --model "${m#*=}" --json | tee /dev/stderr |
                            python3 -c "$PY_TRAIN" "$r" "$p" "${m%%=*}" "$recs" "$recs.detail"
                    done
                elif [ "$who" = torch ] && [ "$torch" = 1 ]; then
                    peer_round torch_lstm.py PyTorch
                elif [ "$who" = keras ] && [ "$keras" = 1 ]; then
                    peer_round keras_lstm.py "Keras 3"
                fi
            done
        done
    done
}

train_setup() { # sets data window steps warmup precisions torch keras
    window=$(q 30 60) steps=$(q 3 20) warmup=$(q 1 3)
    data=$work/synth-train-$(q 300000 2000000)x3.sfpack
    [ -f "$data" ] || "$sf" synth -o "$data" --rows "$(q 300000 2000000)" --feature-count 3 --series-count 4 -q >&2
    precisions=fp32
    "$sf" info | grep -q '^bf16 *cpu: none' || precisions="fp32 bf16"
    torch=0 keras=0
    if has_py torch; then torch=1; fi
    if has_py keras && has_py tensorflow; then keras=1; fi
}

fig_train() {
    local data window steps warmup precisions torch keras
    train_setup
    local lstm="lstm:180,dropout:0.2,lstm:180,dropout:0.2,lstm:180,dropout:0.2,dense"
    show "$sf" bench train --data "synth-train.sfpack" --batch-size 32,256 --window "$window" --steps "$steps" \
        --warmup "$warmup" --precision "${precisions// /|}" --json
    local peer
    for peer in torch_lstm.py keras_lstm.py; do
        show "$py" "bench/peers/$peer" --batch 32,256 --threads "$cores" --window "$window" --steps "$steps" \
            --warmup "$warmup" --reps 1 --precision "${precisions// /|}"
    done
    echo "The default model (3 x LSTM(180) + Dropout(0.2), Dense(3)), windows of $window x 3, Adam; $cores threads each; $steps timed steps after $warmup; $rounds rounds, each running every precision of every tool, the tools' order reversed every other round. seqfeed reads a synthetic .sfpack through the pipeline; the peers train on random tensors in RAM (PyTorch bf16: \`torch.autocast\`; Keras 3 on TensorFlow, \`train_on_batch\`, bf16: the \`mixed_bfloat16\` policy). Samples/s:"
    echo
    train_rounds "$data" "$window" "$steps" "$warmup" "$precisions" "seqfeed=$lstm" "$torch" "$keras"
    local ratios=(--ratio "seqfeed fp32 / this:sps:seqfeed fp32:ref/this")
    [[ $precisions == *bf16* ]] && ratios+=(--ratio "seqfeed bf16 / this:sps:seqfeed bf16:ref/this")
    table --group-label "global batch" --row-label run --cols "sps:samples/s:.1f" "${ratios[@]}"
    [ $torch = 1 ] || skip "PyTorch: torch not installed for $py"
    [ $keras = 1 ] || skip "Keras 3: keras and tensorflow not both installed for $py"
    echo "seqfeed's own figures from the same runs (\`bench train --json\`): GFLOP/s of the model (3 x the forward pass's operations per sample), the GEMM ceilings it measured in the same run and its share of each (%), the from-file run over the resident one (the pipeline's whole cost), the input wait (%):"
    echo
    local keys
    keys=$(cut -f4 "$recs.detail" | awk '!seen[$0]++' | awk '{ printf "%s%s:%s:%s", (NR > 1 ? "," : ""), $0, $0, \
        ($0 == "real_over_resident" ? ".3f" : ".1f") }')
    [ -z "$keys" ] || recs=$recs.detail table --group-label "global batch" --row-label run --cols "$keys"
}

fig_gru() {
    local data window steps warmup precisions torch
    train_setup
    local rounds=$rounds
    [ $quick = 1 ] && precisions=fp32 rounds=1
    local gru="gru:180,dropout:0.2,gru:180,dropout:0.2,gru:180,dropout:0.2,dense"
    local lstm="lstm:180,dropout:0.2,lstm:180,dropout:0.2,lstm:180,dropout:0.2,dense"
    show "$sf" bench train --data "synth-train.sfpack" --batch-size 32,256 --window "$window" --steps "$steps" \
        --warmup "$warmup" --precision "${precisions// /|}" --model "$lstm|$gru" --json
    train_rounds "$data" "$window" "$steps" "$warmup" "$precisions" "lstm=$lstm gru=$gru" 0
    echo "The default model and its GRU twin (3/4 of the LSTM's products: 1.33x expected), windows of $window x 3, $rounds interleaved rounds, samples/s:"
    echo
    python3 - "$recs" <<'PY'
import sys
lines = [l.split("\t") for l in open(sys.argv[1])]
with open(sys.argv[1], "w") as f:  # group by batch and precision, rows by model
    for r, g, row, k, v in lines:
        model, p = row.split()
        f.write(f"{r}\t{g}, {p}\t{model}\t{k}\t{v}")
PY
    table --group-label "batch, precision" --row-label model --cols "sps:samples/s:.1f" \
        --ratio "this / lstm:sps:lstm:this/ref"
}

fig_gemm() {
    local g=$build/bench/gemm_bench secs r cmd
    [ -x "$g" ] || { skip "bench/gemm_bench not built (needs oneDNN, Debian libdnnl-dev)"; return; }
    secs=$(q 0.3 1)
    cmd=("$g" --threads "$cores" --seconds "$secs")
    show "${cmd[@]}"
    for r in $(seq "$rounds"); do
        "${cmd[@]}" | tee /dev/stderr | tail -1 | python3 -c "$PY_GEMM" "$r" "$recs"
    done
    echo "The trainer's GEMMs on the default model's shapes, $cores threads, GFLOP/s, each library's best of 3 passes of ${secs} s per round, $rounds rounds:"
    echo
    table --row-label GEMM --cols "openblas_f32:OpenBLAS f32:.0f,onednn_f32:oneDNN f32:.0f,onednn_bf16:oneDNN bf16:.0f,x:bf16 / best f32:.2f"
}

fig_lstm() {
    local l=$build/bench/lstm_bench reps r cmd
    [ -x "$l" ] || { skip "bench/lstm_bench not built (needs oneDNN)"; return; }
    reps=$(q 3 10)
    cmd=(env SEQFEED_ONEDNN_MODULE="$build/seqfeed-onednn.so" "$l" --batch 8,22 --reps "$reps")
    show "${cmd[@]}"
    for r in $(seq "$rounds"); do
        "${cmd[@]}" | tee /dev/stderr | grep '^{' | python3 -c "$PY_LSTM" "$r" "$recs"
    done
    echo "One LSTM layer's training pass (180 inputs, 180 units, 60 steps, forward and backward), 1 thread, ms per pass, $rounds rounds:"
    echo
    table --row-label "rows per part" --cols "seqfeed_fp32:seqfeed fp32:.1f,onednn_lstm_f32:oneDNN LSTM f32:.1f,seqfeed_bf16:seqfeed bf16:.1f,onednn_lstm_bf16:oneDNN LSTM bf16:.1f,x_fp32:fp32 oneDNN / seqfeed:.2f,x_bf16:bf16 oneDNN / seqfeed:.2f"
}

fig_scaling() {
    local data steps r args cmd
    steps=$(q 10 30)
    data=$work/synth-scaling-20000x4.sfpack
    [ -f "$data" ] || "$sf" synth -o "$data" --rows 20000 --feature-count 4 --series-count 2 -q >&2
    # shellcheck disable=SC2054 # the commas are the model's
    args=(--model lstm:64,lstm:64,dense --window 30 --batch-size 64 --replicas 1,2 --steps "$steps")
    cmd=("$sf" bench scaling --data "$data" "${args[@]}")
    show "${cmd[@]}"
    for r in $(seq "$rounds"); do
        "${cmd[@]}" | tee /dev/stderr |
            awk -v r="$r" '$1 ~ /^[0-9]+$/ && $3 ~ /^[0-9.]+$/ {
                printf "%s\t\t%s replica(s), %s each\tsps\t%s\n", r, $1, $2, $3 }' >>"$recs"
    done
    echo "A 64-64 LSTM, window 30, global batch 64, CPU replicas sharing the $cores cores (they cannot scale here: the table shows the tool), $rounds rounds, samples/s:"
    echo
    table --row-label replicas --cols "sps:samples/s:.1f" --ratio "speed-up:sps:1 replica(s), 64 each:this/ref"
    # Time to the same model (docs/WHY-GPUS-WAIT.md quotes this block): the bundled temperatures, the target 10%
    # above one replica's best val_loss; then the same at 2 MPI ranks where mpirun is installed.
    local temps=$work/temps.sfpack tl
    [ -f "$temps" ] || "$sf" pack "$root/data/hourly-temperatures-2010.csv" -o "$temps" --series-column site -q >&2
    # shellcheck disable=SC2054 # the commas are the model's
    args=(--model lstm:64,lstm:64,dense --window 24 --batch-size 128 --max-steps 1000 --steps-per-epoch 25)
    # shellcheck disable=SC2054 # the commas are the counts
    cmd=("$sf" bench scaling --data "$temps" "${args[@]}" --replicas 1,2,4 --target-loss best+10%)
    show "${cmd[@]}"
    echo '```text'
    "${cmd[@]}" 2>&1 | tee "$raw/scaling-target.txt"
    echo '```'
    echo
    tl=$(sed -n 's/^time to val_loss <= \([0-9.e+-]*\) .*/\1/p' "$raw/scaling-target.txt" | head -1)
    if ! command -v mpirun >/dev/null; then
        skip "2 MPI ranks: mpirun not installed"
    elif [ -z "$tl" ]; then
        skip "2 MPI ranks: no target val_loss in the report above"
    else
        # shellcheck disable=SC2054 # the commas are the counts
        cmd=(mpirun --allow-run-as-root --oversubscribe -np 2 "$sf" bench scaling --data "$temps" "${args[@]}" --replicas 1,2
            --target-loss "$tl")
        show "${cmd[@]}"
        echo '```text'
        "${cmd[@]}" 2>&1
        echo '```'
        echo
    fi
}

# Keras 3 on TensorFlow, as the peers run it: says what is missing (PREFIX) and succeeds when something is.
keras_missing() {
    local m missing=""
    for m in keras tensorflow; do # found, not imported: keras alone fails to import without its backend
        "$py" -c "import importlib.util as u, sys; sys.exit(u.find_spec('$m') is None)" 2>/dev/null ||
            missing+="${missing:+ and }$m"
    done
    [ -n "$missing" ] || return 1
    skip "${1:-}$missing not installed for $py"
}

keras_file() { # a synth file for the Keras peers
    local f=$work/synth-keras-$1.sfpack
    [ -f "$f" ] || "$sf" synth -o "$f" --rows "$1" --feature-count 4 --series-count "$2" -q >&2
    echo "$f"
}

fig_keras_fit() {
    keras_missing && return
    local f steps cmd
    f=$(keras_file "$(q 2000000 100000000)" 8) steps=$(q 20 60)
    cmd=(env SEQFEED_LIB="$build/libseqfeed.so" PYTHONPATH="$root/python" "$py" "$here/peers/keras_fit.py" "$f"
        --steps "$steps" --warmup 10 --rounds "$rounds")
    show "${cmd[@]}"
    echo '```text'
    "${cmd[@]}" | grep -v '^{'
    echo '```'
    echo
}

fig_keras_epoch() {
    keras_missing && return
    local f cmd
    f=$(keras_file 8000 2)
    cmd=(env KERAS_BACKEND=torch SEQFEED_LIB="$build/libseqfeed.so" PYTHONPATH="$root/python" "$py"
        "$here/peers/keras_epoch.py" "$f" --epochs "$(q 2 3)" --rounds "$rounds")
    show "${cmd[@]}"
    echo '```text'
    "${cmd[@]}" | grep -v '^{'
    echo '```'
    echo
}

fig_time_to_loss() {
    local epochs r=$rounds j cmd
    epochs=$(q 3 12)
    [ $quick = 1 ] && r=1
    cmd=("$here/time_to_loss.sh" --build "$build" --python "$py" --rounds "$r" --epochs "$epochs" --patience 3 --json)
    show "${cmd[@]}"
    j=$("${cmd[@]}" | tee /dev/stderr | grep '^{' | tail -1)
    [ -n "$j" ] || { echo "failed: no JSON came back (its log)"; return 1; }
    J=$j python3 - "$recs" <<'PY'
import json, os, sys
j = json.loads(os.environ["J"])
names = {"seqfeed": "seqfeed", "keras": "Keras", "torch": "PyTorch"}
with open(sys.argv[1], "a") as f:
    for data, d in j["data"].items():
        for i, run in enumerate(d["runs"]):
            for tool, t in run.items():
                for k in ("best_val_loss", "best_epoch", "seconds_to_best", "cpu_seconds_to_best", "ready_seconds",
                          "seconds_per_epoch", "cpu_seconds_per_epoch"):
                    if t.get(k) is not None:
                        f.write(f"{i + 1}\t{data}\t{names[tool]}\t{k}\t{t[k]}\n")
PY
    echo "From the CSV to the best model (\`lstm:64,lstm:64,dense\`, batch 64, lr 1e-3, at most $epochs epochs, patience 3), seconds from each tool's process start (wall, CPU), $r round(s):"
    echo
    table --group-label data --row-label tool \
        --cols "best_val_loss:best val_loss:.6f,best_epoch:epoch:.0f,seconds_to_best:wall s to best:.1f,cpu_seconds_to_best:CPU s to best:.1f,ready_seconds:start s:.1f,seconds_per_epoch:s per epoch:.1f,cpu_seconds_per_epoch:CPU s per epoch:.1f" \
        --ratio "this / seqfeed, CPU s to best:cpu_seconds_to_best:seqfeed:this/ref"
    J=$j python3 - <<'PY'
import json, os, statistics, sys
j = json.loads(os.environ["J"])
for data, d in j["data"].items():
    for k, r in d["ratios"].items():
        rs = r["rounds"]
        spread = f" [{min(rs):.2f}-{max(rs):.2f}]" if len(rs) > 1 else ""
        print(f"- {data}: {k.replace('_', ' ')}: {statistics.median(rs):.2f}{spread} (target "
              f"{'<=' if k.startswith('seqfeed_best') else '>='} {r['target']:g})")
print("\n(A time ratio of 0: seqfeed did not reach the peer's best loss in that round.)\n")
PY
    keras_missing "Keras: " || true
}

fig_autotune() {
    [ -x "$here/autotune.sh" ] || { skip "bench/autotune.sh not present (the autotuner against a grid, issue 30)"; return; }
    # Its own rounds: the grid swept once, then auto and the sweep's leaders in 5 interleaved rounds;
    # a markdown table, the share as the median of the rounds' ratios [least-most].
    local cmd=("$here/autotune.sh" --build "$build" --seconds "$(q 1 2)")
    show "${cmd[@]}"
    "${cmd[@]}" | tee /dev/stderr | grep -v '^{'
}

# ---- the run ----

commit="seqfeed $(git -C "$root" describe --always --dirty 2>/dev/null || echo "(not a git tree)")"
cpu_busy() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat; } # user nice system irq softirq steal
tick=$(getconf CLK_TCK)
start=$(date -u '+%Y-%m-%d %H:%M') load0=$(loadavg) busy0=$(cpu_busy) t0=$(date +%s)
status=0
for s in "${sections[@]}"; do
    recs=$raw/$s.tsv
    : >"$recs"
    : >"$recs.detail"
    echo "all.sh: $s ..." >&2
    s0=$(date +%s) l0=$(loadavg)
    (
        echo "<!-- all.sh:$s begin -->"
        # -e in a subshell of its own: a section fails at its first failing
        # command, and this block still says so.
        (
            set -e
            "fig_$s"
        ) 2>"$raw/$s.log"
        rc=$?
        if [ $rc != 0 ]; then
            echo "**failed** (exit $rc); the end of its log:"
            echo
            echo '```text'
            tail -15 "$raw/$s.log"
            echo '```'
            echo
        fi
        echo "<sub>bench/all.sh, section \`$s\`: $(date -u '+%Y-%m-%d %H:%M') UTC, $(($(date +%s) - s0)) s, load average $l0 before, $(loadavg) after; $commit on $(cpu_name)$([ $quick = 1 ] && echo "; --quick").</sub>"
        echo "<!-- all.sh:$s end -->"
        echo
        exit $rc
    ) >"$raw/$s.md"
    rc=$?
    [ $rc = 0 ] || { status=1; echo "all.sh: $s failed (exit $rc): $raw/$s.log" >&2; }
done
busy1=$(cpu_busy) t1=$(date +%s)
times >"$raw/times" # in this shell: a subshell's children's times start at zero
ours=$(tail -1 "$raw/times" | awk '{ n = 0; for (i = 1; i <= 2; i++) { split($i, a, "m"); n += a[1] * 60 + a[2] } print n }')

{
    # A run of some sections leaves the doc's header, the full run's, alone: their blocks' last lines
    # say when, at which load and on which commit they were measured.
    marked=1
    [ -z "$only" ] || [[ ",$only," == *",header,"* ]] || marked=0
    [ $marked = 0 ] || echo "<!-- all.sh:header begin -->"
    flags=$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx512|amx)' | sort | paste -sd' ')
    echo "- **Machine**: $(cpu_model), $cores cores (\`nproc\`), $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo) RAM, Linux $(uname -r)$(systemd-detect-virt -q 2>/dev/null && echo " ($(systemd-detect-virt) guest)")."
    echo "- **Flags**: ${flags:-no AVX-512}$([[ $flags == *amx* ]] || echo "; no AMX")."
    info=$("$sf" info 2>/dev/null)
    echo "- **seqfeed**: $(git -C "$root" describe --always --dirty 2>/dev/null || echo "not a git tree"), $("$sf" --version 2>/dev/null | head -1); $(sed -n 's/^fp32 *cpu: \(OpenBLAS [0-9.]*\).*/\1/p' <<<"$info")$(sed -n 's/^bf16 *cpu: \(oneDNN [0-9.]*\).*/, \1/p' <<<"$info"); CSV: $(sed -n 's/^csv *//p' <<<"$info")."
    echo "- **Peers** ($py): $("$py" -c '
import importlib.metadata as md, platform
out = ["Python " + platform.python_version()]
# tensorflow-cpu installs the module tensorflow under another name
for names in (("torch",), ("keras",), ("tensorflow", "tensorflow-cpu"), ("pandas",), ("pyarrow",), ("numpy",)):
    for m in names:
        try:
            out.append(f"{names[0]} {md.version(m)}")
            break
        except md.PackageNotFoundError:
            pass
    else:
        out.append(f"{names[0]}: not installed")
print(", ".join(out))' 2>/dev/null || echo "$py does not run")."
    echo "- **Run**: \`bench/all.sh --rounds $rounds$([ $quick = 1 ] && echo " --quick")${only:+ --only $only}\`, $start to $(date -u '+%H:%M') UTC ($(((t1 - t0) / 60)) min); sections: ${sections[*]:-none}."
    echo "- **Load**: load average $load0 before, $(loadavg) after; $(awk -v b="$((busy1 - busy0))" -v t="$tick" -v o="$ours" -v s="$((t1 - t0))" -v c="$cores" \
        'BEGIN { x = b / t - o; if (x < 0) x = 0; printf "other processes took %.0f CPU s in the %d s the run lasted on %d cores (%.0f%% of the machine; this run %.0f CPU s)", x, s, c, (s > 0 ? 100 * x / (s * c) : 0), o }')$([ $quick = 1 ] && echo "; **--quick**: smaller data and fewer rounds, to check the script, not figures to quote")."
    others=$(ps -eo pid=,ppid=,pcpu=,comm= --sort=-pcpu | awk -v me=$$ '$1 != me && $2 != me && $3 > 5 { printf "%s%s (%s%%)", n++ ? ", " : "", $4, $3 } n == 4 { exit }')
    [ -z "$others" ] || echo "- **Busiest other processes at the end** (ps, CPU over their lifetime): $others."
    [ $marked = 0 ] || echo "<!-- all.sh:header end -->"
    echo
    for s in "${sections[@]}"; do cat "$raw/$s.md"; done
} >"$out.tmp"
sync "$out.tmp" 2>/dev/null || true
mv "$out.tmp" "$out"
echo "all.sh: wrote $out (logs in $raw)" >&2
if [ $update = 1 ]; then
    python3 "$report" doc "$doc" "$out" || status=1
fi
exit $status
