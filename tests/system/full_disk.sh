#!/usr/bin/env bash
# Every write is checked: outputs on a full disk (a 256 KiB tmpfs, mounted
# when the test runs as root and may mount; else skipped) or to /dev/full
# exit 1 with a message naming the file, and leave nothing behind: no
# partial output, no temporary file, the previous version intact.
set -uo pipefail
. "$SRCDIR/tests/lib.sh"
dir=$(mktemp -d)
mnt="$dir/full"
trap 'umount "$mnt" 2>/dev/null; rm -rf "$dir"' EXIT
cd "$dir"
mkdir "$mnt"
if [ "$(id -u)" -ne 0 ] || ! mount -t tmpfs -o size=256k tmpfs "$mnt" 2>/dev/null; then
    echo "skipped: needs root and permission to mount a tmpfs"
    exit 77
fi
run 0 synth -o s.sfpack --rows 200000 --feature-count 4 -q   # about 3 MB: more than the disk holds

# pack, unpack, synth and predict outputs that do not fit.
run 0 unpack s.sfpack -o s.csv
run 1 pack s.csv -o "$mnt/p.sfpack" -q
expect err "$mnt/p.sfpack"
run 1 unpack s.sfpack -o "$mnt/u.csv" -q
expect err "$mnt/u.csv"
run 1 synth -o "$mnt/y.sfpack" --rows 200000 --feature-count 4 -q
expect err "$mnt/y.sfpack"
# Rows of interleaved series spilled to regroup them: the spill file's
# write fails (a thread writes each run while pack reads on).
awk 'BEGIN { print "time,site,value"; for (t = 0; t < 40; t++) for (s = 0; s < 1000; s++) printf "%d,s%d,%.2f\n", t * 3600, s, t }' >i.csv
run 1 pack i.csv -o "$mnt/i.sfpack" --series-column site --time-column time --time-unit s --memory-budget 0.25 -q
expect err "$mnt/i.sfpack: cannot write the rows held to regroup series in a temporary file beside it \([0-9.]+ MB written so far\): No space left on device"
[ -z "$(ls -A "$mnt")" ] || fail "failed writes left files: $(ls -A "$mnt")"

# A previous version survives a failed rewrite.
run 0 synth -o "$mnt/small.sfpack" --rows 100 --feature-count 2 -q
sum=$(cksum <"$mnt/small.sfpack")
run 1 synth -o "$mnt/small.sfpack" --rows 200000 --feature-count 4 -q
[ "$(cksum <"$mnt/small.sfpack")" = "$sum" ] || fail "a failed rewrite changed the previous file"
[ "$(ls -A "$mnt")" = small.sfpack ] || fail "a failed rewrite left files: $(ls -A "$mnt")"

# train: a log and checkpoints that do not fit stop the run with exit 1.
run 0 train --data s.sfpack --model lstm:8,dense --window 10 --epochs 1 --max-steps 20 --checkpoint-dir ck -q
fill() { head -c 10M /dev/zero >"$mnt/fill" 2>/dev/null; }
fill
run 1 train --data s.sfpack --model lstm:8,dense --window 10 --epochs 2 --max-steps 20 --log "$mnt/log.csv" -q
expect err "$mnt/log.csv"
rm -f "$mnt/fill" "$mnt/log.csv"
mkdir "$mnt/ck"
fill
run 1 train --data s.sfpack --model lstm:64,dense --window 10 --epochs 1 --max-steps 5 --checkpoint-dir "$mnt/ck" -q
expect err "$mnt/ck"
ls "$mnt/ck" | grep -q tmp && fail "a failed checkpoint left a temporary file: $(ls "$mnt/ck")"
rm -f "$mnt/fill"
# TensorBoard's events: created, then a write that does not fit.
fill
run 1 train --data s.sfpack --model lstm:8,dense --window 10 --epochs 2 --max-steps 20 --tensorboard "$mnt/tb" -q
expect err "$mnt/tb/(train|validation)/events.out.tfevents.*: cannot write TensorBoard's events"
rm -rf "$mnt/fill" "$mnt/tb"

# predict's CSV and evaluate's JSON to a full stdout.
if [ -w /dev/full ]; then
    "$SEQFEED" predict --checkpoint ck/latest.safetensors --data s.sfpack -q >/dev/full 2>err &&
        fail "predict to a full stdout exited 0"
    "$SEQFEED" evaluate --checkpoint ck/latest.safetensors --data s.sfpack --json >/dev/full 2>err &&
        fail "evaluate --json to a full stdout exited 0"
    "$SEQFEED" verify s.sfpack >/dev/full 2>err && fail "verify to a full stdout exited 0"
fi
finish
