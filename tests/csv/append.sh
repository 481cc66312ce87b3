#!/usr/bin/env bash
# seqfeed pack NEW.csv --append-to FILE.sfpack: the rows land where a pack
# of the concatenation (rows grouped by series) puts them, with the same
# statistics; times that go back, other columns, conflicting layout options
# and the file itself as input are refused with the file unchanged; a run
# killed with SIGKILL (while reading a FIFO, and while writing) leaves the
# old file verified, and the next run leaves no temporary file; a
# checkpoint trained on the old file refuses to resume on the new one.
set -u
: "${SEQFEED:?SEQFEED must name the seqfeed binary}"
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../lib.sh"
tmp=$(mktemp -d /tmp/sfappend.XXXXXX)
trap 'exec 3>&- 2>/dev/null; kill -9 $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1

no_temp() {
    if compgen -G "$1.tmp.*" >/dev/null; then fail "temporary file left: $(compgen -G "$1.tmp.*")"; fi
}

# same_as A.sfpack B.sfpack: the same rows (unpack) and the same inspect
# --json but for the file's name and size.
same_as() {
    "$SEQFEED" unpack "$1" -o "$1.csv" && "$SEQFEED" unpack "$2" -o "$2.csv" || { fail "unpack failed"; return; }
    cmp -s "$1.csv" "$2.csv" || fail "$1 and $2 hold other rows: $(diff "$1.csv" "$2.csv" | head -5)"
    local f
    for f in "$1" "$2"; do
        # The stored sizes differ: the appended rows keep other lines.
        "$SEQFEED" inspect --json --all-series "$f" | python3 -c '
import json, sys
j = json.load(sys.stdin)
for k in ("file", "file_bytes", "compression_ratio", "file_ratio"): del j[k]
j.pop("sources", None)  # an append lists the CSV as a source
for k in ("stored_bytes", "min_stored", "max_stored"): del j["chunks"][k]
print(json.dumps(j, indent=1))' >"$f.json"
    done
    cmp -s "$1.json" "$2.json" || fail "$1 and $2 differ in statistics or layout: $(diff "$1.json" "$2.json")"
}

# Three series over 3 days, then a day more for b and a (in that order) and
# a new series c; cat.csv: all rows grouped by series in the file's order.
python3 - <<'PY' || exit 1
import math
def rows(site, d0, d1, k):
    out = []
    for h in range(24 * d0, 24 * d1):
        t = "2024-03-%02dT%02d:00" % (1 + h // 24, h % 24)
        out.append("%s,%s,%.4f,%d,%s" % (t, site, math.sin(h * k) * 10 + k, h % 5, ["red", "blue", "green"][h % 3] if site != "c" else "violet"))
    return out
head = "time,site,a,b,kind\n"
old = {s: rows(s, 0, 3, k) for s, k in (("x", 0.3), ("a", 0.7), ("b", 1.1))}
new = {s: rows(s, 3, 4, k) for s, k in (("b", 1.1), ("a", 0.7), ("c", 1.9))}
open("old.csv", "w").write(head + "".join(r + "\n" for s in ("x", "a", "b") for r in old[s]))
open("new.csv", "w").write(head + "".join(r + "\n" for s in ("b", "a", "c") for r in new[s]))
open("cat.csv", "w").write(head + "".join(r + "\n" for r in old["x"] + old["a"] + new["a"] + old["b"] + new["b"] + new["c"]))
# c only: nothing of the file changes but its last chunk.
open("newc.csv", "w").write(head + "".join(r + "\n" for r in new["c"]))
open("catc.csv", "w").write(head + "".join(r + "\n" for s in ("x", "a", "b") for r in old[s]) + "".join(r + "\n" for r in new["c"]))
# new.csv's rows interleaved by time (as a feed writes them): the same rows.
open("newi.csv", "w").write(head + "".join(r + "\n" for t in zip(new["b"], new["a"], new["c"]) for r in t))
# 2 MB of a series z, slower to read than the parser's first buffer.
open("z.csv", "w").write(head + "".join("2024-03-04T00:00,z,%d.5,1,red\n" % i for i in range(80000)))
# A row of a that goes back an hour from its last time (line 3).
open("back.csv", "w").write(head + new["a"][0] + "\n" + "2024-03-03T22:00,a,1,1,red\n")
PY
layout=(--series-column site --categorical kind --chunk-rows 10)
"$SEQFEED" pack old.csv -o f.sfpack "${layout[@]}" -q || exit 1
cp f.sfpack orig.sfpack

# ---- rows of existing series and a new series, as a pack of the concatenation ----
run 0 pack new.csv --append-to f.sfpack
expect out "^appended 72 rows \(2 series added to, 1 new\) from .* to f\.sfpack: now 288 rows, 4 series"
run 0 verify f.sfpack
"$SEQFEED" pack cat.csv -o cat.sfpack "${layout[@]}" -q || exit 1
same_as f.sfpack cat.sfpack
no_temp f.sfpack
# The appended rows' origins: new.csv, a new source after the file's own
# rows (source 0, named after the file: the CSV it came from is not kept).
"$SEQFEED" unpack f.sfpack -o - | sed -n 146p | grep -q '^a,2024-03-04T00:00,' || fail "row 145 is not a's first new row"
run 0 inspect --json f.sfpack
expect out '"sources": \["f\.sfpack", "new\.csv"\]'
sed 's/,c,/,d,/' newc.csv >newd.csv
run 0 pack newd.csv --append-to f.sfpack -q
run 0 inspect --json f.sfpack
expect out '"sources": \["f\.sfpack", "new\.csv", "newd\.csv"\]'
run 0 verify f.sfpack

# The same day with the series' rows interleaved (regrouped, as pack does).
cp orig.sfpack fi.sfpack
run 0 pack newi.csv --append-to fi.sfpack -q
run 0 verify fi.sfpack
same_as fi.sfpack cat.sfpack

# ---- only a new series: the leading chunks are kept as stored, not recompressed ----
cp orig.sfpack g.sfpack
run 0 pack newc.csv --append-to g.sfpack
expect out "kept 21 of 24 chunks as stored"
run 0 verify g.sfpack
"$SEQFEED" pack catc.csv -o catc.sfpack "${layout[@]}" -q || exit 1
same_as g.sfpack catc.sfpack
# (The header differs: it gained the flag of a source table.)
cmp -s <(head -c 65536 g.sfpack | tail -c +4097) <(head -c 65536 orig.sfpack | tail -c +4097) ||
    fail "the kept chunks' bytes changed"

# Rows that fill whole chunks: every chunk kept, the new one after the last.
python3 -c "print('s,v'); [print('a,%d' % i) for i in range(20)]" >al.csv
printf 's,v\nb,1\nb,2\n' >al2.csv
cat al.csv <(tail -n +2 al2.csv) >alc.csv
"$SEQFEED" pack al.csv -o al.sfpack --series-column s --chunk-rows 10 -q || exit 1
run 0 pack al2.csv --append-to al.sfpack
expect out "kept 2 of 3 chunks as stored"
run 0 verify al.sfpack
"$SEQFEED" pack alc.csv -o alc.sfpack --series-column s --chunk-rows 10 -q || exit 1
same_as al.sfpack alc.sfpack

# The file replaced keeps its permissions.
cp orig.sfpack m.sfpack && chmod 640 m.sfpack
run 0 pack newc.csv --append-to m.sfpack -q
[ "$(stat -c %a m.sfpack)" = 640 ] || fail "the appended file's mode is $(stat -c %a m.sfpack), not 640"

# ---- --missing ffill fills a series' first new row from its last row in the file ----
printf 'site,a,b\nx,1,2\nx,,3\ny,5,6\n' >i1.csv
printf 'site,a,b\nx,7,\ny,,9\nz,1,1\n' >i2.csv
printf 'site,a,b\nx,1,2\nx,,3\nx,7,\ny,5,6\ny,,9\nz,1,1\n' >icat.csv
"$SEQFEED" pack i1.csv -o i.sfpack --series-column site --missing ffill --chunk-rows 2 -q || exit 1
run 0 pack i2.csv --append-to i.sfpack --missing ffill
expect out "2 values filled"
run 0 verify i.sfpack
"$SEQFEED" pack icat.csv -o icat.sfpack --series-column site --missing ffill --chunk-rows 2 -q || exit 1
same_as i.sfpack icat.sfpack
# A file without imputed values gets the record of them: every chunk is written again.
printf 'site,a,b\nx,1,2\nx,4,3\ny,5,6\n' >j.csv
"$SEQFEED" pack j.csv -o j.sfpack --series-column site --chunk-rows 2 -q || exit 1
run 0 pack i2.csv --append-to j.sfpack --missing ffill
expect out "kept 0 of 3 chunks"
run 0 verify j.sfpack
run 0 inspect --json j.sfpack
expect out '"name": "a", [^}]*"imputed": 1\}, \{"name": "b", [^}]*"imputed": 1\}'
run 1 pack i2.csv --append-to j.sfpack
expect err "i2\.csv:2:5: missing or non-finite value \"\" in column \"b\""

# ---- refused: the file stays as it was, no temporary file ----
cp orig.sfpack h.sfpack
# Within the CSV, as pack says it.
run 1 pack back.csv --append-to h.sfpack
expect err "back\.csv:3:[0-9]+: time 2024-03-03T22:00 is before 2024-03-04T00:00 \(line 2\)"
# Times continue each series: a first new time before the file's last one.
printf 'time,site,a,b,kind\n2024-03-03T23:00,x,1,1,red\n2024-03-03T22:00,b,1,1,red\n' >back2.csv
run 1 pack back2.csv --append-to h.sfpack
expect err "^seqfeed pack: error: back2\.csv:3: series \"b\" starts at 2024-03-03T22:00, before 2024-03-03T23:00, its last time in h\.sfpack"
cmp -s h.sfpack orig.sfpack || fail "a refused append changed the file"
no_temp h.sfpack

printf 'time,site,b,a,kind\n2024-03-04T00:00,x,1,1,red\n' >order.csv
run 1 pack order.csv --append-to h.sfpack
expect err "order\.csv:1: column 3 is \"b\" where h\.sfpack has \"a\" \(its column 1\)"
printf 'time,site,a,b,kind,extra\n2024-03-04T00:00,x,1,1,red,5\n' >extra.csv
run 1 pack extra.csv --append-to h.sfpack
expect err "column 6 \"extra\" is not a column of h\.sfpack.*--drop-columns extra"
run 0 pack extra.csv --append-to h.sfpack --drop-columns extra -q
run 0 verify h.sfpack
cp orig.sfpack h.sfpack
printf 'time,a,b,kind\n2024-03-04T00:00,1,1,red\n' >noseries.csv
run 1 pack noseries.csv --append-to h.sfpack
expect err "no column \"site\", the series column of h\.sfpack"
run 2 pack new.csv --append-to h.sfpack --chunk-rows 5
expect err "--chunk-rows 5 differs from h\.sfpack, which has chunks of 10 rows: an appended file keeps its layout"
run 2 pack new.csv --append-to h.sfpack --series-column kind
expect err "--series-column kind differs from h\.sfpack, which has series column \"site\""
run 2 pack new.csv --append-to h.sfpack --filter none
expect err "--filter none differs"
run 2 pack new.csv --append-to h.sfpack --categorical a
expect err "--categorical a differs from h\.sfpack, which has categorical columns kind"
run 0 pack new.csv --append-to h.sfpack --series-column site --categorical kind --chunk-rows 10 -q
cp orig.sfpack h.sfpack
run 2 pack new.csv newc.csv --append-to h.sfpack
expect err "--append-to adds one CSV file at a time"
run 2 pack new.csv --append-to h.sfpack -o other.sfpack
expect err "-o and --append-to exclude each other"
# The file as its own input, by its name or another link to it.
run 2 pack h.sfpack --append-to h.sfpack
expect err "h\.sfpack is h\.sfpack, the file to append to"
ln h.sfpack link.csv
run 2 pack link.csv --append-to h.sfpack
expect err "link\.csv is h\.sfpack, the file to append to"
"$SEQFEED" pack - --append-to h.sfpack <h.sfpack >out 2>err
[ $? -eq 2 ] && grep -q "stdin is h.sfpack" err || fail "stdin as the file itself: $(cat err)"
cmp -s h.sfpack orig.sfpack || fail "a refused append changed the file"
no_temp h.sfpack

# ---- kill -9 while reading a slow input (a FIFO) ----
mkfifo slow.csv
"$SEQFEED" pack slow.csv --append-to h.sfpack -q 2>kill.err &
pid=$!
exec 3>slow.csv
cat z.csv >&3
for _ in $(seq 1000); do compgen -G "h.sfpack.tmp.$pid.*" >/dev/null && break; sleep 0.01; done
compgen -G "h.sfpack.tmp.$pid.*" >/dev/null || fail "no temporary file while reading the FIFO: $(cat kill.err)"
kill -9 $pid
wait $pid 2>/dev/null
exec 3>&-
run 0 verify h.sfpack
cmp -s h.sfpack orig.sfpack || fail "the killed append changed the file"

# SIGTERM (Ctrl-C alike) removes the temporary file at once.
"$SEQFEED" pack slow.csv --append-to h.sfpack -q 2>term.err &
pid=$!
exec 3>slow.csv
cat z.csv >&3
for _ in $(seq 1000); do compgen -G "h.sfpack.tmp.$pid.*" >/dev/null && break; sleep 0.01; done
# Meanwhile a second append to the same file is refused, not interleaved.
run 1 pack new.csv --append-to h.sfpack
expect err "h\.sfpack: another seqfeed pack --append-to is adding to it"
kill -TERM $pid
wait $pid
rc=$?
exec 3>&-
[ $rc -eq 143 ] || fail "SIGTERM: exit status $rc: $(cat term.err)"
compgen -G "h.sfpack.tmp.$pid.*" >/dev/null && fail "SIGTERM left $(compgen -G "h.sfpack.tmp.$pid.*")"
cmp -s h.sfpack orig.sfpack || fail "the interrupted append changed the file"

# ---- kill -9 while the new file is written ----
"$SEQFEED" synth -o big.sfpack --rows 3000000 --feature-count 4 --series-count 2 -q || exit 1
cp big.sfpack bigorig.sfpack
printf 'series,f0,f1,f2,f3\ns0,1,2,3,4\ns0,5,6,7,8\ns1,1,1,1,1\n' >more.csv
"$SEQFEED" pack more.csv --append-to big.sfpack -q --threads 1 2>kill.err &
pid=$!
killed=
for _ in $(seq 3000); do
    for f in big.sfpack.tmp.$pid.??????; do
        [ -f "$f" ] && [ "$(stat -c %s "$f")" -gt 4000000 ] && { kill -9 $pid; killed=$f; break 2; }
    done
    sleep 0.005
done
wait $pid 2>/dev/null
[ -n "$killed" ] && [ -f "$killed" ] || fail "the append was not killed while writing: $(cat kill.err)"
run 0 verify big.sfpack
cmp -s big.sfpack bigorig.sfpack || fail "the killed append changed the file"
# The next run removes what the killed one left (its process is gone).
run 0 pack more.csv --append-to big.sfpack -q
no_temp big.sfpack
run 0 pack new.csv --append-to h.sfpack -q
no_temp h.sfpack
run 0 verify big.sfpack
expect out "3000003 rows"

# ---- a checkpoint trained on the old file does not resume on the new one ----
"$SEQFEED" synth -o t.sfpack --rows 2000 --feature-count 2 --series-count 2 -q || exit 1
train=(train --data t.sfpack --features f0,f1 --targets f0 --model lstm:4,dense --window 8 --batch-size 8
       --epochs 1 --max-steps 4 --seed 1 --checkpoint-dir ck -q)
run 0 "${train[@]}"
# One row more in the last series: the same chunks and series, one row
# more (and another fingerprint).
printf 'series,f0,f1\ns1,0.5,0.25\n' >t.csv
run 0 pack t.csv --append-to t.sfpack -q
run 2 "${train[@]}" --resume
expect err "ck/latest\.safetensors: the data \(its row count\) differs from the checkpoint's"

# Its hints name no spool file and no option append refuses.
printf 'site,time,temp\nseattle,2010-11-30T08:00,40\n' >iso.csv
run 0 pack iso.csv -o iso.sfpack --series-column site -q
printf 'site,time,temp\nseattle,1291161600,1\n' >secs.csv
run 1 pack secs.csv --append-to iso.sfpack --series-column site
expect err "the file appended to keeps ISO-8601 times, which the appended rows must match$"
printf 'site,time,temp\nportland,2010-11-30T09:00,\n' >gap.csv
run 1 pack gap.csv --append-to iso.sfpack --series-column site --missing ffill
expect err "rows appended to a file must fill its columns$"
grep -q "\.append\|--time-unit\|--drop-columns" err && fail "an append's hint: $(cat err)"

# Rows with a zone appended to times without one: the mix pack warns of in
# one file, warned of at the append too; rows like the file's, no warning.
printf 'site,time,temp\nseattle,2010-11-30T09:00,1\n' >naive.csv
run 0 pack naive.csv --append-to iso.sfpack --series-column site
grep -q "warning: time column" err && fail "rows without a zone, appended to such times: $(cat err)"
printf 'site,time,temp\nseattle,2010-11-30T10:00Z,1\n' >zoned.csv
run 0 pack zoned.csv --append-to iso.sfpack --series-column site
expect err 'warning: time column "time" of iso.sfpack has times of day without a zone, and the rows appended have one'
# A series whose appended rows start at its last time: the repeat pack
# warns of within one file.
printf 'site,time,temp\nseattle,2010-11-30T10:00Z,2\n' >again.csv
run 0 pack again.csv --append-to iso.sfpack --series-column site
expect err 'warning: again.csv:2: series "seattle" starts at 2010-11-30T10:00Z, its last time in iso.sfpack: the time repeats'
# A column that looks like epoch times: --time-column would be refused
# here (the file has none), so the hint says when it applies.
python3 -c "print('ts,v'); [print(f'{1700000000 + i * 60},{i}') for i in range(200)]" >ep.csv
python3 -c "print('ts,v'); [print(f'{1700000000 + i * 60},{i}') for i in range(200, 300)]" >ep2.csv
run 0 pack ep.csv -o ep.sfpack -q
run 0 pack ep2.csv --append-to ep.sfpack
expect err 'look like epoch times in s: --time-column and --time-unit s make it the time column, exact, when a file is first packed, not when rows are appended to it$'
finish
