#!/usr/bin/env bash
# train --tensorboard DIR: event files in DIR/train and DIR/validation hold
# the --log rows (tb_events.py decodes them: TFRecord framing, both masked
# CRC-32Cs, the Event and Summary fields), also across a resume after a
# crash that left rows past the checkpoint and a record cut short; and
# DIR's files are safe: no file or link in the way is written through, no
# event file replaced. With TensorBoard installed (python3, or TB_PYTHON,
# importing tensorboard) its EventAccumulator reads the same values; the
# rest runs without it. meson sets SEQFEED.
set -u
: "${SEQFEED:?SEQFEED must name the seqfeed binary}" "${SRCDIR:?}"
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../lib.sh"
tmp=$(mktemp -d /tmp/sftb.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
tb_py=${TB_PYTHON:-python3}
too=()
if "$tb_py" -c "import tensorboard" 2>/dev/null; then
    too=(--tensorboard-too)
else
    echo "note: tensorboard is not importable by $tb_py: its EventAccumulator's read-back is skipped (TB_PYTHON names a python that has it)"
fi
check() { "$tb_py" "$SRCDIR/tests/train/tb_events.py" check "$@" "${too[@]}" >out 2>err; }

"$SEQFEED" synth -o s.sfpack --rows 2000 --feature-count 2 --series-count 2 -q || exit 1
# 99 steps an epoch, a row every 10 steps.
base=(--data s.sfpack --model lstm:8,dense --window 8 --batch-size 16 --val-split 0.2 --log-every 10 --seed 5)
common=("${base[@]}" --epochs 2 -q)

# A run: every log row is in the events, as Keras' callback lays them out.
run 0 train "${common[@]}" --checkpoint-dir a --log a.csv --tensorboard tb/a
check tb/a a.csv || fail "a run's events: $(cat err)"
expect out "^92 train and 4 validation values"
ls tb/a/train | grep -Eq '^events\.out\.tfevents\.[0-9]{10}\.[A-Za-z0-9._-]+\.[0-9]+\.0$' ||
    fail "event file name: $(ls tb/a/train)"
# The decoder fails on a broken CRC, and on a value the log does not have.
cp -r tb/a bad
f=$(ls bad/train/*)
python3 -c 'import sys; b = bytearray(open(sys.argv[1], "rb").read()); b[200] ^= 0xff; open(sys.argv[1], "wb").write(b)' "$f"
check bad a.csv && fail "a flipped byte passed the check"
expect err "CRC"
sed '3s/,0\.001$/,0.002/' a.csv >b.csv
check tb/a b.csv && fail "another lr passed the check"
expect err "learning_rate"

# A crash: rows logged past the checkpoint, the last record cut short. The
# resume (--checkpoint-dir alone: the checkpoint keeps DIR) starts a new
# file whose START drops them, as the log's rows past the checkpoint are
# cut: TensorBoard shows the uninterrupted run's rows.
run 0 train "${common[@]}" --checkpoint-dir b --log b.csv --tensorboard tb/b --max-steps 40
cp b/latest.safetensors at40
run 0 train --checkpoint-dir b --resume --max-steps 30 -q
[ "$(ls tb/b/train | wc -l)" -eq 2 ] || fail "a resume did not start a new event file: $(ls tb/b/train)"
cp at40 b/latest.safetensors                      # as if killed at step 70 with the checkpoint of 40
last=$(ls tb/b/train/* | tail -n 1)
truncate -s -7 "$last"                            # and in the middle of a record
run 0 train --checkpoint-dir b --resume -q
[ "$(ls tb/b/train | wc -l)" -eq 3 ] && [ "$(ls tb/b/validation | wc -l)" -eq 3 ] ||
    fail "resumes' event files: $(ls tb/b/*)"
check tb/b b.csv --truncated 1 || fail "the resumed run's events: $(cat err)"
expect out "^92 train and 4 validation values"
cut -d, -f1-3,6 a.csv >a.rows
cut -d, -f1-3,6 b.csv | cmp -s - a.rows || fail "the resumed run's log differs from the uninterrupted one's"

# Another run into a DIR that holds events: it says so, and its START at 0
# puts it in their place (their files stay).
before=$(cat tb/a/train/* | cksum)
run 0 train "${base[@]}" --checkpoint-dir c --log c.csv --tensorboard tb/a --epochs 1 --max-steps 30 --lr 0.01
expect err "tensorboard: tb/a holds another run's event files: TensorBoard shows this run in their place"
[ "$(ls tb/a/train/* | head -n 1 | xargs cat | cksum)" = "$before" ] || fail "an earlier event file changed"
check tb/a c.csv || fail "a second run in one DIR: $(cat err)"

# No validation: the validation run holds no scalar; epochs of 25 steps.
over common --checkpoint-dir d --log d.csv --tensorboard tb/d --val-split 0 --steps-per-epoch 25 --log-every 7
run 0 train "${args[@]}"
check tb/d d.csv --epoch-steps 25 || fail "a run without validation: $(cat err)"
expect out "^44 train and 0 validation values"

# DIR's safety: nothing in the way is written through or replaced.
echo keep >file
run 2 train "${common[@]}" --checkpoint-dir e1 --tensorboard file
expect err "--tensorboard file is not a directory"
run 2 train "${common[@]}" --checkpoint-dir e2 --tensorboard file/sub
expect err "file is not a directory"
run 2 train "${common[@]}" --checkpoint-dir e3 --log same --tensorboard same
expect err "--tensorboard same is the same path as --log same"
[ "$(cat file)" = keep ] && [ ! -e same ] || fail "a refused --tensorboard wrote something"
mkdir -p other tl && ln -s ../other tl/train
run 2 train "${common[@]}" --checkpoint-dir e4 --tensorboard tl
expect err "tl/train is not a directory \(a file or a symbolic link"
[ -z "$(ls other)" ] || fail "events written through a link: $(ls other)"
mkdir -p tf && echo keep >tf/validation
run 2 train "${common[@]}" --checkpoint-dir e5 --tensorboard tf
expect err "tf/validation is not a directory"
# An event file already there (another writer's, a clock set back) is never
# replaced, and the new one sorts after it: TensorBoard reads names in order.
mkdir -p tn/train
future=events.out.tfevents.$(( $(date +%s) + 1000 )).$(hostname).$$.0
echo theirs >"tn/train/$future"
over common --checkpoint-dir e6 --tensorboard tn --epochs 1 --max-steps 10
run 0 train "${args[@]}"
[ "$(cat "tn/train/$future")" = theirs ] || fail "an existing event file was replaced"
[ "$(ls tn/train | wc -l)" -eq 2 ] && [ "$(ls tn/train | tail -n 1)" != "$future" ] ||
    fail "the new event file does not sort last: $(ls tn/train)"

run 0 train --help
expect out "--tensorboard DIR"
finish
