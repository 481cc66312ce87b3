#!/usr/bin/env bash
# A user's files are sacred: no output replaces an input of the same
# command, a device, a FIFO or a symbolic link itself; outputs appear whole
# or not at all; a failed write to stdout is an error.
set -uo pipefail
. "$SRCDIR/tests/lib.sh"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"

run 0 synth -o s.sfpack --rows 3000 --feature-count 2 -q
cp s.sfpack keep.sfpack

# An output that is an input (by another name too) is refused before any work.
run 2 unpack s.sfpack -o s.sfpack
expect err "--output s.sfpack is the same file as --data s.sfpack"
ln -s s.sfpack link.sfpack
run 2 unpack link.sfpack -o s.sfpack
expect err "is the same file as --data link.sfpack"
ln s.sfpack hard.sfpack
run 2 train --data s.sfpack --model lstm:8,dense --window 10 --epochs 1 --log hard.sfpack
expect err "--log hard.sfpack is the same file as --data s.sfpack"
run 2 train --data s.sfpack --model lstm:8,dense --window 10 --epochs 1 --log x.csv --report x.csv
expect err "--report x.csv is the same file as --log x.csv"
cmp -s s.sfpack keep.sfpack || fail "a refused command changed its input"
run 0 train --data s.sfpack --model lstm:8,dense --window 10 --epochs 1 -q --checkpoint-dir ck
cp ck/latest.safetensors ck.keep
run 2 predict --checkpoint ck/latest.safetensors --data s.sfpack -o ck/latest.safetensors
expect err "--output ck/latest.safetensors is the same file as --checkpoint"
cmp -s ck/latest.safetensors ck.keep || fail "predict changed its checkpoint"
printf 'a,b\n1,2\n3,4\n' >in.csv
run 2 pack in.csv -o in.csv
expect err "is the same file as --data in.csv"
[ "$(cat in.csv)" = "$(printf 'a,b\n1,2\n3,4')" ] || fail "pack changed its CSV"

# Outputs that cannot be written are refused before any work.
run 2 unpack s.sfpack -o .
expect err "--output \. is a directory"
run 2 train --data s.sfpack --model lstm:8,dense --window 10 --epochs 1 --trace nowhere/t.json
expect err "--trace nowhere/t.json: cannot create a file in nowhere"
run 2 train --data s.sfpack --model lstm:8,dense --window 10 --epochs 1 --checkpoint-dir s.sfpack
expect err "--checkpoint-dir s.sfpack is not a directory"

# Inputs are what they claim to be: regular files of the right kind.
mkfifo data.fifo
timeout 10 "$SEQFEED" train --data data.fifo -q >out 2>err
rc=$?
[ "$rc" -eq 2 ] || fail "train --data FIFO: exit $rc, expected 2 (124: it hung)"
expect err "data.fifo is a FIFO or pipe .*: expected an .sfpack file"
run 2 inspect .
expect err "\. is a directory: expected an .sfpack file"
run 2 train --data in.csv -q
expect err "in.csv: a text file \(CSV\?\), not an .sfpack file: pack it first \(seqfeed pack in.csv"
run 2 predict --checkpoint s.sfpack --data s.sfpack
expect err "s.sfpack: an .sfpack data file, not a checkpoint"
run 2 predict --checkpoint in.csv --data s.sfpack
expect err "in.csv: a text file \(a CSV\?\), not a checkpoint"
printf '\357\273\277t,v\r\n1,2\r\n' >bom.csv  # Excel's: a BOM, CRLF
run 2 predict --checkpoint bom.csv --data s.sfpack
expect err "bom.csv: a text file \(a CSV\?\), not a checkpoint"
printf 'PK\003\004 an exported model, as far as its first bytes go' >model.keras
run 2 evaluate --checkpoint model.keras --data s.sfpack
expect err "model.keras: a zip file \(an exported .keras model\?\), not a checkpoint"
# A run's directory stands for its checkpoint (test early-stop); one without any is refused.
mkdir -p nock
run 2 predict --checkpoint nock --data s.sfpack
expect err "--checkpoint nock is a directory without best.safetensors or latest.safetensors: expected a checkpoint file"
run 2 inspect ck/latest.safetensors
expect err "a checkpoint \(safetensors\), not an .sfpack data file"

# One run owns a checkpoint directory: a second stops at once, naming the first.
"$SEQFEED" train --data s.sfpack --model lstm:8,dense --window 10 --epochs 100000 --checkpoint-dir owned -q &
first=$!
for _ in $(seq 500); do [ -s owned/seqfeed.lock ] && break; sleep 0.02; done
run 2 train --data s.sfpack --model lstm:8,dense --window 10 --epochs 1 --checkpoint-dir owned -q
expect err "--checkpoint-dir owned is in use by another run \(PID $first\)"
kill -9 $first; wait $first 2>/dev/null
# A run in its first epoch has no latest yet: --resume names the run, not
# a missing checkpoint (a lock held here by the shell, which writes no PID).
if command -v flock >/dev/null; then
    mkdir young
    exec 9>young/seqfeed.lock
    flock 9
    run 2 train --checkpoint-dir young --resume -q
    expect err "--checkpoint-dir young is in use by another run \(PID unknown\), which has written no checkpoint yet"
    exec 9>&-
    mkdir -p cv/fold-1  # a cross-validation's: its first fold's directory
    exec 9>cv/fold-1/seqfeed.lock
    flock 9
    run 2 train --checkpoint-dir cv --resume -q
    expect err "--checkpoint-dir cv is in use by another run \(PID unknown\)"
    exec 9>&-
fi
# The lock went with it (--resume: the killed run may have left a checkpoint).
run 0 train --data s.sfpack --model lstm:8,dense --window 10 --epochs 1 --checkpoint-dir owned -q --resume

# A symbolic link is followed: its target gets the output, the link stays.
ln -s target.csv out.csv
run 0 unpack s.sfpack -o out.csv
[ -L out.csv ] || fail "the output replaced the symbolic link"
[ "$(head -c 5 target.csv)" = "$(head -c 5 out.csv)" ] && [ -s target.csv ] || fail "the link's target was not written"
# Devices and FIFOs are written as they are, never replaced.
run 0 unpack s.sfpack -o /dev/null
[ -c /dev/null ] || fail "/dev/null is no longer a device"
mkfifo fifo
cat fifo >from-fifo &
reader=$!
run 0 unpack s.sfpack -o fifo
wait $reader
[ -p fifo ] || fail "the FIFO was replaced"
cmp -s from-fifo target.csv || fail "the FIFO did not carry the CSV"
run 2 pack in.csv -o fifo
expect err "fifo is a FIFO: an .sfpack is written at offsets"
# '-' is stdout, for every output.
"$SEQFEED" synth -o - --rows 500 -q >piped.sfpack || fail "synth -o - to a file failed"
run 0 verify piped.sfpack
# An .sfpack goes to stdout at offsets from byte 0: a file that holds data
# (another program's before it, or >>) is refused untouched; a pack that
# fails leaves the file empty, as it was.
{ echo hi; "$SEQFEED" pack in.csv -o - 2>err; } >before.sfpack
[ $? -eq 2 ] || fail "pack -o - after another program's output: not a usage error"
expect err "stdout is a file that holds data already"
[ "$(cat before.sfpack)" = hi ] || fail "pack -o - wrote over another program's output: $(head -c 20 before.sfpack)"
echo keep >appended.sfpack
"$SEQFEED" pack in.csv -o - 2>err >>appended.sfpack && fail "pack -o - >> FILE was accepted"
expect err "stdout is a file that holds data already"
: >appended.sfpack
"$SEQFEED" pack in.csv -o - 2>err >>appended.sfpack && fail "pack -o - >> an empty FILE was accepted"
expect err "opened for appending"
printf 'a,b\n1,2\n3,x\n' >late-text.csv
"$SEQFEED" pack late-text.csv -o - 2>err >failed.sfpack && fail "pack of text packed"
[ -s failed.sfpack ] && fail "a failed pack -o - left $(wc -c <failed.sfpack) bytes on stdout"
run 0 train --data s.sfpack --model lstm:8,dense --window 10 --epochs 1 -q --log -
expect out "^epoch,loss,val_loss"
[ -e ./- ] && fail "--log - wrote a file named '-'"

# A killed run's temporary files are removed by the next run on that
# output; a running one's are left alone.
sleep 60 &
alive=$!
touch "s.csv.tmp.999999999.abcdef" "s.csv.tmp.$alive.abcdef"
run 0 unpack s.sfpack -o s.csv
[ -e "s.csv.tmp.999999999.abcdef" ] && fail "a dead run's temporary file was left"
[ -e "s.csv.tmp.$alive.abcdef" ] || fail "a live run's temporary file was removed"
kill $alive

# A CSV that grows while it is packed is refused, and no pack appears. The
# append must land while pack runs (about half a second): tried up to 3
# times, each time on a fresh file.
changed=0
for attempt in 1 2 3; do
    { echo a,b; seq 1 2000000 | awk '{print $1 "," $1 * 2}'; } >grow.csv
    "$SEQFEED" pack grow.csv -o grow.sfpack --threads 1 -q 2>err &
    pid=$!
    for _ in $(seq 400); do ls grow.sfpack.tmp.* >/dev/null 2>&1 && break; sleep 0.005; done
    echo 7,14 >>grow.csv
    wait $pid
    rc=$?
    [ "$rc" -eq 0 ] && { rm -f grow.sfpack; continue; }  # it ended before the append
    [ "$rc" -eq 1 ] || fail "pack of a growing CSV: exit $rc"
    expect err "grow.csv changed while it was packed"
    [ -e grow.sfpack ] && fail "a pack of a changed CSV appeared"
    changed=1
    break
done
[ "$changed" -eq 1 ] || fail "pack never saw its CSV change in 3 tries"

# Stdout appended to an input (>> input) is refused before anything is
# written: every command may write stdout.
cp s.sfpack app.sfpack
for cmd in "unpack app.sfpack -o -" "inspect app.sfpack" "verify app.sfpack"; do
    "$SEQFEED" $cmd >>app.sfpack 2>err && fail "$cmd >> its input exited 0"
    expect err "standard output is the file --data app.sfpack: writing would destroy it"
done
cmp -s s.sfpack app.sfpack || fail "a command appended to its input"

# A trailer that says 7 digits of a second's fraction (no pack writes more
# than 6; times would print 10x off) is refused as corrupt.
printf 'time,v\n2020-01-01T00:00:00.123456,1\n2020-01-01T00:00:01.5,2\n' >frac.csv
run 0 pack frac.csv -o frac.sfpack -q
python3 - frac.sfpack frac7.sfpack <<'PY'
import struct, sys
def crc32c(b, c=0xffffffff):
    for x in b:
        c ^= x
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    return c ^ 0xffffffff
b = bytearray(open(sys.argv[1], "rb").read())
toff, tsize = struct.unpack_from("<QQ", b, len(b) - 32)
i = b.rfind(struct.pack("<I", 3 | 6 << 3), toff, toff + tsize - 4)  # clock, seconds, 6 digits
assert i > 0
struct.pack_into("<I", b, i, 3 | 7 << 3)
struct.pack_into("<I", b, toff + tsize - 4, crc32c(b[toff:toff + tsize - 4]))
open(sys.argv[2], "wb").write(b)
PY
run 1 verify frac7.sfpack
expect err "frac7.sfpack: trailer \(byte [0-9]+\): the time column's parts are 0x3b, beyond what a pack writes"

# stdout that cannot be written is an error, not a silent success.
if [ -w /dev/full ]; then
    "$SEQFEED" inspect s.sfpack >/dev/full 2>err && fail "inspect to a full stdout exited 0"
    expect err "stdout"
    "$SEQFEED" train --help >/dev/full 2>err && fail "train --help to a full stdout exited 0"
    "$SEQFEED" unpack s.sfpack -o - >/dev/full 2>err && fail "unpack -o - to a full stdout exited 0"
fi

# SIGTERM stops a run after its step, with a checkpoint, and exit 143.
"$SEQFEED" train --data s.sfpack --model lstm:8,dense --window 10 --epochs 100000 --checkpoint-dir term >out 2>err &
pid=$!
for _ in $(seq 500); do grep -q "^train:" err 2>/dev/null && break; sleep 0.02; done
sleep 0.5
kill -TERM $pid
wait $pid
rc=$?
[ "$rc" -eq 143 ] || fail "SIGTERM: exit $rc, expected 143: $(tail -3 err)"
[ -f term/latest.safetensors ] || fail "SIGTERM left no checkpoint"

# predict's write errors name the file, and say it once.
if [ -w /dev/full ]; then
    "$SEQFEED" predict --checkpoint term --data s.sfpack -q -o /dev/full 2>err && fail "predict -o /dev/full exited 0"
    expect err "^seqfeed predict: error: /dev/full: write failed"
    "$SEQFEED" predict --checkpoint term --data s.sfpack -q >/dev/full 2>err && fail "predict to a full stdout exited 0"
    expect err "^seqfeed predict: error: <stdout>: write failed"
    [ "$(grep -c error: err)" -eq 1 ] || fail "predict to a full stdout: not one error: $(cat err)"
fi
finish
