#!/usr/bin/env bash
# Rows of series that interleave (a row per site per hour): pack regroups
# them, each series' rows in file order and the series in order of first
# appearance, as pandas' groupby(sort=False) does (tests/csv/regroup_want.csv,
# from tests/ref/gen_regroup_ref.py) and as a stable sort says for a larger
# file spilled in many runs at the least --memory-budget; a time going back
# within an interleaved series is named by its line; nothing of the
# temporary files is left after success, an error, Ctrl-C or kill -9 (and a
# killed run's temporary output goes with the next run); predict
# --with-actual still joins back to the CSV by line.
set -u
: "${SEQFEED:?SEQFEED must name the seqfeed binary}"
: "${SRCDIR:?SRCDIR must name the source tree}"
. "$SRCDIR/tests/lib.sh"
tmp=$(mktemp -d /tmp/sfregroup.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1

# only FILES...: the folder holds exactly these (the inputs a step made).
only() {
    local want have
    want=$(printf '%s\n' "$@" | sort | tr '\n' ' ')
    have=$(ls -A | sort | tr '\n' ' ')
    [ "$have" = "$want" ] || fail "the folder holds: $have; expected: $want"
}

# ---- against pandas: the committed fixture, with the first rows grouped
# (written before a site comes back, then read back) and empty values ----
fixture=$SRCDIR/tests/csv/regroup_in.csv
run 0 pack "$fixture" -o fx.sfpack --series-column site --missing ffill
expect err 'note: the rows of series interleave: pack regrouped them, each series. rows in the order of the file, the series in the order they first appear \(in memory'
expect out 'packed 1667 rows \(15 series, 60 values filled\)'
run 0 verify fx.sfpack
run 0 unpack fx.sfpack -o fx.csv -q
cmp -s fx.csv "$SRCDIR/tests/csv/regroup_want.csv" || fail "unpack differs from pandas' groupby(sort=False): $(diff fx.csv "$SRCDIR/tests/csv/regroup_want.csv" | head -5)"
# The same at the least budget, in runs: the same file.
run 0 pack "$fixture" -o fx2.sfpack --series-column site --missing ffill --memory-budget 0.25 -q
cmp -s fx.sfpack fx2.sfpack || fail "the least --memory-budget packs another file"

# ---- many runs, merged in passes: 300 sites x 600 hours at the least
# budget, against a stable sort by each site's first appearance ----
awk 'BEGIN { print "time,site,value"
             for (t = 0; t < 600; t++) for (s = 0; s < 300; s++) {
                 if ((s * 7 + t) % 11 == 3) continue  # sites miss some hours
                 printf "%d,site%03d,%d\n", 1600000000 + 3600 * t, (s * 37) % 300, t * 1000 + s } }' >big.csv
awk -F, 'NR > 1 { if (!($2 in first)) first[$2] = n++; print first[$2] "," $2 "," $1 "," $3 }' big.csv |
    sort -s -t, -k1,1n | cut -d, -f2- | { echo site,time,value; cat; } >big-want.csv
run 0 pack big.csv -o big.sfpack --series-column site --time-column time --time-unit s --memory-budget 0.25
expect err '\([0-9]+ sorted runs merged in [2-9] pass\(es\), [0-9.]+ MB written to temporary files beside big.sfpack'
runs=$(grep -Eo '[0-9]+ sorted runs' err | cut -d' ' -f1)
[ "${runs:-0}" -ge 13 ] || fail "the least budget spilled ${runs:-no} runs, expected more than the 13 a pass merges"
run 0 verify big.sfpack
run 0 unpack big.sfpack -o big-back.csv -q
cmp -s big-back.csv big-want.csv || fail "the regrouped rows differ from a stable sort by first appearance: $(diff big-back.csv big-want.csv | head -5)"
only big.csv big-want.csv big.sfpack big-back.csv fx.sfpack fx2.sfpack fx.csv out err
# Within the default budget, in memory: the same file, nothing written.
run 0 pack big.csv -o big2.sfpack --series-column site --time-column time --time-unit s
expect err '\(in memory, within --memory-budget\)'
cmp -s big.sfpack big2.sfpack || fail "regrouped in memory and through runs: different files"
rm -f big2.sfpack big-back.csv fx2.sfpack

# ---- errors: a time going back in an interleaved series, named by its line
# and its series' row before; a budget too small; output to a device ----
awk -F, 'NR == 150002 { $1 = $1 - 7200 } { print }' OFS=, big.csv >back.csv
line=150002
site=$(sed -n "${line}p" back.csv | cut -d, -f2)
prev=$(head -n $((line - 1)) back.csv | grep -n ",$site," | tail -1 | cut -d: -f1)
run 1 pack back.csv -o back.sfpack --series-column site --time-column time --time-unit s --memory-budget 0.25
expect err "^seqfeed pack: error: back\\.csv:$line: time [0-9]+ is before [0-9]+ \\(line $prev\\), the row before it in this series"
run 2 pack big.csv -o x.sfpack --series-column site --time-column time --time-unit s --memory-budget 0.1
expect err 'error: --memory-budget 0.1 MB is too small for pack to regroup rows of 1 value\(s\) and a time: at least 0.25 MB'
run 2 pack big.csv -o /dev/null --series-column site
expect err 'big\.csv:[0-9]+:[0-9]+: series "site[0-9]+" \(column "site"\) reappears .*needs -o FILE\.sfpack, not stdout or a device'
only big.csv big-want.csv big.sfpack back.csv fx.sfpack fx.csv out err

# ---- Ctrl-C and kill -9 while rows are held and runs spilled: pack reads a
# FIFO that stops half way; its spill files exist (open, no name), nothing
# of them is in the folder, and nothing is left once it dies ----
defaults='import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execv(sys.argv[1], sys.argv[1:])'
# held SIGNAL: packs the first 2 MB of big.csv from a FIFO and sends SIGNAL
# once pack has spilled runs.
held() {
    local sig=$1 pid rc i spills=0
    rm -f in.fifo && mkfifo in.fifo
    python3 -c "$defaults" "$SEQFEED" pack in.fifo -o held.sfpack --series-column site --time-column time \
        --time-unit s --memory-budget 0.25 -q 2>held-err &
    pid=$!
    exec 3>in.fifo
    head -c 2000000 big.csv >&3
    for i in $(seq 200); do
        # The head (its temporary file, unlinked) and a spill file (no name ever)
        spills=$(find /proc/$pid/fd -lname "$tmp/*(deleted)" 2>/dev/null | wc -l)
        [ "$spills" -ge 2 ] && break
        sleep 0.05
    done
    [ "$spills" -ge 2 ] || fail "SIG$sig: pack has no unlinked spill file open: $(ls -l /proc/$pid/fd)"
    compgen -G "held.sfpack*" >/dev/null && fail "SIG$sig: a named file while regrouping: $(compgen -G 'held.sfpack*')"
    kill -s "$sig" "$pid"
    wait "$pid"
    rc=$?
    exec 3>&-
    [ "$rc" -eq $((128 + $(kill -l "$sig"))) ] || fail "SIG$sig: pack exited $rc: $(cat held-err)"
    compgen -G "held.sfpack*" >/dev/null && fail "SIG$sig: left behind: $(compgen -G 'held.sfpack*')"
    rm -f in.fifo held-err
}
held INT
held KILL
held TERM
# A run killed while it still wrote series as they came (before any came
# back) leaves its temporary output, which the next pack to it removes.
rm -f in.fifo && mkfifo in.fifo
"$SEQFEED" pack in.fifo -o held.sfpack --series-column site -q 2>/dev/null &
pid=$!
exec 3>in.fifo
sort -s -t, -k2,2 big.csv | head -c 1500000 >&3
for i in $(seq 200); do compgen -G "held.sfpack.tmp.$pid.*" >/dev/null && break; sleep 0.05; done
compgen -G "held.sfpack.tmp.$pid.*" >/dev/null || fail "pack of a FIFO never created its temporary file"
kill -9 "$pid"
wait "$pid"
exec 3>&-
compgen -G "held.sfpack.tmp.$pid.*" >/dev/null || fail "kill -9 left no temporary file to clean up"
run 0 pack big.csv -o held.sfpack --series-column site -q
compgen -G "held.sfpack.tmp.*" >/dev/null && fail "the next pack left the killed run's file: $(compgen -G 'held.sfpack.tmp.*')"
rm -f in.fifo held.sfpack

# ---- forecasts of a regrouped file join back to the CSV by line ----
run 0 train --data fx.sfpack --model lstm:4,dense --window 6 --epochs 1 --batch-size 16 --checkpoint-dir ck -q
run 0 predict --checkpoint ck/latest.safetensors --data fx.sfpack --with-actual -o pred.csv -q
python3 - "$fixture" <<'PY' || fail "the forecasts of a regrouped file do not join back: $(head -3 pred.csv)"
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline="")))
by_line = {i + 2: dict(zip(rows[0], r)) for i, r in enumerate(rows[1:])}
pred = list(csv.DictReader(open("pred.csv", newline="")))
assert len(pred) > 1000, len(pred)
lines = [int(p["line"]) for p in pred]
assert lines != sorted(lines), "the forecasts' lines rise: nothing was regrouped"
for p in pred:
    src = by_line[int(p["line"])]
    assert p["site"] == src["site"] and p["time"] == src["time"], (p, src)
    assert (p["value"] == src["value"] == "") or float(p["value"]) == float(src["value"]), (p, src)
print(len(pred), "forecasts joined on line")
PY
finish
