#!/usr/bin/env bash
# The seqfeed command line, `pack` above all: exit codes (0 ok, 1 data error
# naming file:line:column, 2 usage error), --help on every command, options
# reaching the packer, and no OUT or OUT.tmp.* after a failure, SIGINT or
# SIGTERM. meson runs it with SEQFEED set to the binary (tests/meson.build).
set -u
: "${SEQFEED:?SEQFEED must name the seqfeed binary}"
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../lib.sh"
tmp=$(mktemp -d /tmp/sfcli.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1

# no_temp OUT: no temporary OUT.tmp.* exists.
no_temp() {
    if compgen -G "$1.tmp.*" >/dev/null; then fail "temporary file left: $(compgen -G "$1.tmp.*")"; fi
}

# no_output OUT: neither OUT nor a temporary OUT.tmp.* exists.
no_output() {
    [ ! -e "$1" ] || fail "$1 exists"
    no_temp "$1"
}

printf 'id,x,y\nA,1,0.5\nA,2,1.5\nB,3,-2\n' >data.csv
printf 'a,b\n1,2\n3,x\n' >bad.csv

# ---- packing that works, and the commands that read the result ----
run 0 pack data.csv -o good.sfpack --series-column id
expect out '^packed 3 rows \(2 series\) from .* into good\.sfpack'
run 0 pack data.csv -o quiet.sfpack -q --series-column id
[ ! -s out ] || fail "pack -q printed: $(cat out)"
"$SEQFEED" pack - -o stdin.sfpack -q --series-column id <data.csv 2>err || fail "pack from stdin failed: $(cat err)"
[ -f stdin.sfpack ] || fail "pack from stdin wrote nothing"

run 0 inspect good.sfpack
expect out '^rows +3 in 2 series \(series column "id"\)'
run 0 verify good.sfpack
expect out '^good\.sfpack: ok'
run 0 inspect --json good.sfpack
python3 -m json.tool out >/dev/null || fail "inspect --json is not JSON: $(cat out)"
mv out good.json

run 0 unpack good.sfpack -o -
cmp -s out data.csv || fail "unpack -o - printed $(cat out)"
run 0 unpack good.sfpack -o back.csv
cmp -s back.csv data.csv || fail "unpack -o back.csv wrote $(cat back.csv)"

# Names holding a delimiter pack would detect, a quote or a comma come back
# quoted, so that the unpacked CSV packs again to the same columns.
printf '"x;y;z","q""uote","c,d"\n1,2,3\n' > names.csv
run 0 pack names.csv -o names.sfpack
run 0 unpack names.sfpack -o names-back.csv
run 0 pack names-back.csv -o names-back.sfpack
run 0 inspect --json names-back.sfpack
expect out '"name": "x;y;z"'
expect out '"name": "q\\"uote"'
expect out '"name": "c,d"'
no_temp back.csv

# Options reach the packer.
printf 'x\ty\tz\n1\t2\tskip\n3\t4\tskip\n5\t6\tskip\n' >tabs.csv
run 0 pack tabs.csv -o opts.sfpack -q --delimiter tab --columns y,x --chunk-rows 2 --level 3 --filter shuffle \
    --threads 2
run 0 inspect --json opts.sfpack
# One interpreter for both files: python3 takes a while to start.
python3 -c '
import json
d = json.load(open("good.json"))
assert d["rows"] == 3 and d["series_column"] == "id", d
assert [c["name"] for c in d["columns"]] == ["x", "y"], d["columns"]
assert [(s["name"], s["first_row"], s["rows"]) for s in d["series"]] == [("A", 0, 2), ("B", 2, 1)], d["series"]
d = json.load(open("out"))
assert [c["name"] for c in d["columns"]] == ["y", "x"], d["columns"]
assert d["chunks"]["rows_per_chunk"] == 2 and d["chunks"]["count"] == 2, d["chunks"]
assert d["zstd_level"] == 3 and d["filter"] == "shuffle", d
' || fail "inspect --json does not describe what was packed: $(cat good.json out)"
printf 'id,x\nA,1\nA,\nB,NA\nB,4\n' >holes.csv
run 0 pack holes.csv -o drop.sfpack --missing drop --series-column id
expect out '^packed 2 rows \(2 series, 2 rows dropped\)'
run 0 pack holes.csv -o ffill.sfpack --missing ffill --drop-columns id
expect out '^packed 4 rows \(1 series, 2 values filled\)'

# ---- data errors: exit 1, file:line:column, no output ----
run 1 pack bad.csv -o bad.sfpack
expect err '^seqfeed pack: error: bad\.csv:3:3: expected a number in column "b"'
no_output bad.sfpack
"$SEQFEED" pack - -o bad.sfpack <bad.csv 2>err
rc=$?
[ "$rc" -eq 1 ] || fail "pack of bad stdin exited $rc, expected 1"
expect err '<stdin>:3:3: expected a number'
no_output bad.sfpack
run 1 pack holes.csv -o bad.sfpack --series-column id
expect err 'holes\.csv:3:3: .*--missing'
no_output bad.sfpack
run 2 pack data.csv -o bad.sfpack --columns x,nope
expect err '"nope", which is not a column; the columns are: id, x, y'
no_output bad.sfpack
run 1 pack missing.csv -o bad.sfpack
no_output bad.sfpack
# A failed pack leaves an existing OUT as it was.
cp good.sfpack keep.sfpack
run 1 pack bad.csv -o keep.sfpack
cmp -s good.sfpack keep.sfpack || fail "a failed pack changed the existing keep.sfpack"
no_temp keep.sfpack

# ---- usage errors: exit 2 and a pointer to --help ----
usage() {
    run 2 "$@"
    expect err "see 'seqfeed $1 --help'"
    no_output use.sfpack
}
usage pack data.csv
usage pack data.csv -o use.sfpack --bogus
usage pack -o use.sfpack
usage pack data.csv data.csv -o use.sfpack
usage pack data.csv -o use.sfpack --level abc
usage pack data.csv -o use.sfpack --level 99999
usage pack data.csv -o use.sfpack --missing bogus
usage pack data.csv -o use.sfpack --columns x --drop-columns y
usage pack data.csv -o use.sfpack --chunk-rows 0
usage pack data.csv -o use.sfpack --threads 0
usage pack data.csv -o use.sfpack --delimiter ab
usage pack data.csv -o use.sfpack --filter bogus
usage inspect
usage inspect good.sfpack --bogus
usage verify
usage unpack good.sfpack
usage info extra
run 1 inspect nothing.sfpack
run 2 verify data.csv
run 1 unpack nothing.sfpack -o use.csv

run 2
expect err '^usage: seqfeed COMMAND'
run 2 frobnicate
expect err "^seqfeed: error: unknown command 'frobnicate'"
run 0 --help
expect out '^usage: seqfeed COMMAND'
for cmd in pack inspect verify unpack info synth "bench pipeline" "bench read"; do
    # shellcheck disable=SC2086  # "bench pipeline" is two words
    run 0 $cmd --help
    expect out "^usage: seqfeed $cmd"
    # shellcheck disable=SC2086
    run 0 $cmd -h
    expect out "^usage: seqfeed $cmd"
done

run 0 info
expect out '^(gpus +none: .*using CPU|gpu [0-9]+ )'

# ---- signals: a pack of endless stdin dies of the signal, leaving nothing ----
# Bash starts background jobs with SIGINT ignored; the wrapper restores the
# defaults a user's shell would give.
defaults='import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
signal.signal(signal.SIGQUIT, signal.SIG_DFL)
signal.signal(signal.SIGPIPE, signal.SIG_DFL)
os.execv(sys.argv[1], sys.argv[1:])'
signal_test() {
    local sig=$1 out=sig-$1.sfpack pid rc i
    { echo a,b; yes 1.5,2.25; } | python3 -c "$defaults" "$SEQFEED" pack - -o "$out" -q 2>err &
    pid=$!
    for i in $(seq 100); do
        compgen -G "$out.tmp.*" >/dev/null && break
        sleep 0.05
    done
    compgen -G "$out.tmp.*" >/dev/null || fail "SIG$sig: pack never created its temporary file"
    sleep 1
    kill -0 "$pid" 2>/dev/null || fail "SIG$sig: pack of an endless input ended by itself"
    kill -s "$sig" "$pid"
    # A pack that ignores the signal would run forever. (Bash reaps the
    # child as soon as it exits and keeps its status for wait.)
    for i in $(seq 200); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
    done
    if kill -0 "$pid" 2>/dev/null; then
        fail "SIG$sig: pack still runs 10 s after the signal"
        kill -9 "$pid"
    fi
    wait "$pid"
    rc=$?
    [ "$rc" -eq $((128 + $(kill -l "$sig"))) ] || fail "SIG$sig: pack exited $rc, expected $((128 + $(kill -l "$sig")))"
    expect err 'interrupted; partial output removed'
    no_output "$out"
}
# synth: deterministic for a seed, a valid file with the asked shape.
run 0 synth -o syn1.sfpack --rows 50000 --feature-count 3 --series-count 4 --seed 9 --chunk-rows 4096
run 0 synth -o syn2.sfpack --rows 50000 --feature-count 3 --series-count 4 --seed 9 --chunk-rows 4096 --threads 1
cmp -s syn1.sfpack syn2.sfpack || fail "synth with the same seed wrote different files"
run 0 verify syn1.sfpack
run 0 inspect syn1.sfpack
expect out '^rows +50000 in 4 series'
expect out '^columns +3$'
run 0 synth -o syn3.sfpack --rows 50000 --feature-count 3 --series-count 4 --seed 10 --chunk-rows 4096
cmp -s syn1.sfpack syn3.sfpack && fail "synth with another seed wrote the same file"
run 2 synth -o x.sfpack
run 2 synth -o x.sfpack --rows 10 --series-count 11
run 2 synth -o x.sfpack --rows 10 --feature-count 0

# bench: the pipeline delivers every window of the epoch; bad options are usage errors.
run 0 bench pipeline --data syn1.sfpack --window 10 --batch-size 64 --pool 100 --replicas 2 --json
python3 -m json.tool out >/dev/null || fail "bench pipeline --json is not JSON: $(cat out)"
expect out '"windows": 49960,'
expect out '"batch_size": 64, "batch_per_replica": 32'
run 0 bench read --data syn1.sfpack --io pread --direct off
expect out '^read [0-9]+ chunks'
run 2 bench pipeline --data syn1.sfpack --memory-budget 0.5
expect err 'too small'
run 2 bench pipeline --data syn1.sfpack --io nope
run 2 bench pipeline
run 2 bench nothing

signal_test INT
signal_test TERM
# SIGPIPE: a reader of stdout or stderr gone; SIGQUIT (Ctrl-backslash),
# without the core it would dump.
signal_test PIPE
ulimit -c 0
signal_test QUIT

# RFC 3339's lower-case t and z: found as the time column, and written back
# as T and Z.
printf 'time,v\n2010-01-01t00:00:00z,1\n2010-01-01t01:00:00z,2\n2010-01-01t02:30:00z,3\n' >lower.csv
run 0 pack lower.csv -o lower.sfpack -q
run 0 unpack lower.sfpack -o lower-back.csv
[ "$(cat lower-back.csv)" = "$(printf 'time,v\n2010-01-01T00:00:00Z,1\n2010-01-01T01:00:00Z,2\n2010-01-01T02:30:00Z,3')" ] ||
    fail "lower-case t and z: unpacked as $(cat lower-back.csv)"

finish
echo "all cli checks passed"
