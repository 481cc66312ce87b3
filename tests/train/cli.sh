#!/usr/bin/env bash
# seqfeed train, predict and evaluate from the command line: a run killed
# with SIGKILL and resumed ends bit-identical to an uninterrupted one;
# --lr-scaling linear is lr x replicas; predict writes one row per window;
# clear errors for bad settings. meson sets SEQFEED.
set -u
: "${SEQFEED:?SEQFEED must name the seqfeed binary}" "${SRCDIR:?}"
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../lib.sh"
tmp=$(mktemp -d /tmp/sftrain.XXXXXX)
trap 'kill -9 $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
"$SEQFEED" synth -o s.sfpack --rows 24000 --feature-count 3 --series-count 2 -q || exit 1
common=(--data s.sfpack --features f0,f1,f2 --targets f0,f2 --model lstm:24,dropout:0.2,lstm:16,dense
        --window 24 --batch-size 16 --epochs 2 --val-split 0.2 --seed 3 -q)

# An uninterrupted run.
run 0 train "${common[@]}" --checkpoint-dir a --log a.csv
[ -f a/latest.safetensors ] && [ -f a/epoch-0001.safetensors ] && [ -f a/epoch-0002.safetensors ] ||
    fail "checkpoints missing: $(ls a)"
[ "$(wc -l <a.csv)" -eq 3 ] || fail "a.csv: $(cat a.csv)"

# The same run killed (SIGKILL) soon after its first mid-epoch checkpoint,
# then resumed from its checkpoint alone: the final checkpoint must be the
# same file, byte for byte.
"$SEQFEED" train "${common[@]}" --checkpoint-dir b --checkpoint-every 40 --log b.csv &
pid=$!
for _ in $(seq 1000); do [ -f b/latest.safetensors ] && break; sleep 0.01; done
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
[ -f b/latest.safetensors ] || fail "no checkpoint before the kill"
[ -f b/epoch-0002.safetensors ] && fail "the run ended before it could be killed: make it longer"
# The checkpoint carries the run: --checkpoint-dir alone resumes it. The
# kill may land inside a checkpoint's write; the resumed run removes what
# that left.
run 0 train --checkpoint-dir b --checkpoint-every 40 --resume --log b.csv -q
ls b | grep -q tmp && fail "a temporary checkpoint outlived the resume: $(ls b)"
same_bytes a/latest.safetensors b/latest.safetensors || fail "resumed run ends with other weights than the uninterrupted one"
same_bytes a/epoch-0002.safetensors b/epoch-0002.safetensors || fail "epoch 2 checkpoints differ"
# The resumed epoch's log row counts the steps before the kill too.
python3 - <<'PY' || fail "the resumed run's epoch losses differ from the uninterrupted run's: $(cat a.csv b.csv)"
import csv, sys
a = list(csv.DictReader(open("a.csv"))); b = list(csv.DictReader(open("b.csv")))
ok = len(a) == len(b) == 2 and all(abs(float(x["loss"]) - float(y["loss"])) <= 1e-9 * float(x["loss"]) and
                                   x["val_loss"] == y["val_loss"] for x, y in zip(a, b))
sys.exit(0 if ok else 1)
PY
# Resuming a finished run does nothing.
cp b/latest.safetensors done.safetensors
run 0 train "${common[@]}" --checkpoint-dir b --resume
cmp -s b/latest.safetensors done.safetensors || fail "resuming a finished run changed its checkpoint"

# --lr-scaling linear with 2 replicas is lr 2e-3: the same weights, so the
# same predictions.
over common --epochs 1 --replicas 2 --lr-scaling linear --checkpoint-dir l1
run 0 train "${args[@]}"
over common --epochs 1 --replicas 2 --lr 0.002 --checkpoint-dir l2
run 0 train "${args[@]}"
run 0 predict --checkpoint l1/latest.safetensors --data s.sfpack -o p1.csv
run 0 predict --checkpoint l2/latest.safetensors --data s.sfpack -o p2.csv
cmp -s p1.csv p2.csv || fail "--lr-scaling linear is not lr x replicas"
# One row per window: 2 series of 12000 rows, span 25: 11976 windows each.
[ "$(wc -l <p1.csv)" -eq $((2 * 11976 + 1)) ] || fail "predict wrote $(wc -l <p1.csv) lines"
head -1 p1.csv | grep -qx 'series,row,f0_pred,f2_pred' || fail "predict header: $(head -1 p1.csv)"
sed -n 2p p1.csv | grep -Eq '^s0,24,-?[0-9]' || fail "first prediction row: $(sed -n 2p p1.csv)"
run 0 evaluate --checkpoint a/latest.safetensors --data s.sfpack
expect out "validation part"
expect out "baseline mean"
run 0 evaluate --checkpoint a/latest.safetensors --data s.sfpack --split train --json
expect out '"split": "train"'
# predict and evaluate choose a GPU as train does, and say where they run.
run 0 predict --checkpoint l1/latest.safetensors --data s.sfpack --gpus none -o p3.csv
expect err "gpus: none asked for; predicting on CPU"
[ "$(wc -l <p3.csv)" -eq "$(wc -l <p1.csv)" ] || fail "predict --gpus none wrote $(wc -l <p3.csv) lines"
run 0 evaluate --checkpoint a/latest.safetensors --data s.sfpack --gpus none
expect err "evaluating on CPU"
run 2 predict --checkpoint l1/latest.safetensors --data s.sfpack --gpus 0,0
expect err "--gpus 0,0: expected all, none or distinct GPU indices"

# Errors.
run 2 train "${common[@]}" --replicas 3
expect err "batch-size 16 is cut into 2 part\(s\) of at least 8 windows, and each of the 3 replicas takes whole parts \(hint: a --batch-size of at least 24, or fewer --replicas\)"
expect err "see 'seqfeed train --help'"
over common --model lstm:8,rnn:4,dense
run 2 train "${args[@]}"
expect err "item 2 'rnn:4': expected lstm:UNITS, gru:UNITS, dropout:RATE"
over common --model gru:0,dense
run 2 train "${args[@]}"
expect err "--model: item 1 'gru:0': the units of gru must be an integer from 1 to 65536"
over common --model lstm:0,dense
run 2 train "${args[@]}"
expect err "--model: item 1 'lstm:0'"
over common --features f0,nope
run 2 train "${args[@]}"
expect err 'feature "nope" is not a column'
# A value out of range names the option and the range; an unknown option
# says so in one line.
over common --window 0
run 2 train "${args[@]}"
expect err "^seqfeed train: error: --window 0: expected an integer from 1 to 4294967295$"
run 2 train "${common[@]}" --depht 4
[ "$(grep -c . err)" -eq 2 ] && expect err "^seqfeed train: error: unknown option '--depht'$" ||
    fail "an unknown option: $(cat err)"
run 2 train "${common[@]}" --batch 16
expect err "unknown option '--batch'"
over common --batch-size 16,32
run 2 train "${args[@]}"
expect err "--batch-size 16,32: expected one value"
# The pipeline's knobs, as bench pipeline spells them.
run 0 train "${common[@]}" --max-steps 3 --decoders 1 --lanes 1 --depth 2 --prefetch 1 --slots 2 --io pread \
    --direct off --block-chunks 1
over common --batch-size 32 --checkpoint-dir b --resume
run 2 train "${args[@]}"
expect err "^seqfeed train: error: --batch-size 32 differs from the checkpoint's 16 in b/latest.safetensors \(hint: --resume continues the run as it was: leave --batch-size out"
over common --window 20000
run 2 train "${args[@]}"
expect err "fewer than one global batch"

# Each part of the batch is a shard of its own: an epoch is what the parts'
# smallest shards give (200 rows, window 5: 175 training windows; 4 parts of
# 43 give 5 batches of 8, so 5 global batches of 32), and every epoch is
# logged. Lanes cut the parts on more threads and change nothing.
"$SEQFEED" synth -o tiny.sfpack --rows 200 --feature-count 2 -q || exit 1
lanes=(--data tiny.sfpack --window 5 --batch-size 32 --epochs 3 --model lstm:4,dense --pool 0)
run 0 train "${lanes[@]}" --lanes 2 --log lanes.csv --checkpoint-dir lanes
expect err " 5 steps per epoch"
expect err "epoch 3/3 - 5 steps"
[ "$(wc -l <lanes.csv)" -eq 4 ] || fail "--lanes 2: not every epoch logged: $(cat lanes.csv)"
[ -f lanes/epoch-0003.safetensors ] || fail "--lanes 2: no checkpoint of epoch 3: $(ls lanes)"
run 0 train "${lanes[@]}" --lanes 1 --checkpoint-dir lane1
same lanes/latest.safetensors lane1/latest.safetensors 0 || fail "--lanes 2 trained other weights than --lanes 1"
run 2 train "${common[@]}" --memory-budget 2
expect err "memory-budget 2.0 MB: the replicas take [0-9.]+ MB, and for the pipeline a memory budget of [0-9.]+ MB is too small"
over common --model lstm:512,dense --batch-size 1024 --memory-budget 20
run 2 train "${args[@]}"
expect err "the replicas' weights and activations alone take"
run 0 train "${common[@]}" --memory-budget 30 --max-steps 3
run 2 train "${common[@]}" --pool 64 --checkpoint-dir b --resume
expect err "--pool 64 differs from the checkpoint's 16384"
run 2 train "${common[@]}" --lr-scaling linear --checkpoint-dir b --resume
expect err "--lr-scaling linear differs from the checkpoint's none"
# A resume on other data of the same shape, or the same data packed again
# in other chunks, or with a budget that shrinks the pool, would train
# another run: refused, naming what differs.
"$SEQFEED" unpack s.sfpack -o s.csv && "$SEQFEED" pack s.csv -o rechunked.sfpack --series-column series --chunk-rows 1000 -q || exit 1
over common --data rechunked.sfpack --checkpoint-dir b --resume
run 2 train "${args[@]}"
expect err "the data \(its content or layout: another file, or the CSV packed again\) differs"
"$SEQFEED" synth -o other.sfpack --rows 24000 --feature-count 3 --series-count 2 --seed 9 -q || exit 1
over common --data other.sfpack --checkpoint-dir b --resume
run 2 train "${args[@]}"
expect err "the data .* differs"
# A budget just above the least the run needs (as its error for 2 MB says)
# leaves a smaller pool than the checkpoint's.
"$SEQFEED" train "${common[@]}" --memory-budget 2 2>err
least=$(sed -n 's/.*the replicas take \([0-9.]*\) MB.* alone take \([0-9.]*\) MB.*/\1 \2/p' err |
        awk '{print $1 + $2 + 0.3}')
[ -n "$least" ] || fail "no least budget in: $(cat err)"
run 2 train "${common[@]}" --checkpoint-dir b --resume --memory-budget "$least"
expect err "--pool \(or what --memory-budget left of it\) differs"
run 2 train "${common[@]}" --checkpoint-every 5
expect err "--checkpoint-every needs --checkpoint-dir"
# A log where the run writes its checkpoints would be replaced by one.
run 2 train "${common[@]}" --checkpoint-dir a --log a/latest.safetensors
expect err "--log a/latest.safetensors is a file train writes in --checkpoint-dir a"
run 2 train "${common[@]}" --checkpoint-dir a --report ./a/../a/epoch-0001.safetensors
expect err "is a file train writes in --checkpoint-dir a"
run 2 evaluate --checkpoint a/latest.safetensors --data s.sfpack --output x.csv
expect err "unknown option '--output'$"
# predict's own options are not the model's settings.
run 2 evaluate --checkpoint a/latest.safetensors --data s.sfpack --with-actual
expect err "unknown option '--with-actual'$"
# train's settings repeated to predict: the message says where they come from.
run 2 predict --checkpoint a/latest.safetensors --data s.sfpack --window 8 -o pw.csv
expect err "unknown option '--window' \(predict takes the model's settings from the checkpoint train wrote\)"
[ ! -e pw.csv ] || fail "a refused predict wrote its output"
run 0 evaluate --checkpoint a/latest.safetensors --data s.sfpack -q --batch-size 64
run 0 predict --checkpoint a/latest.safetensors --data s.sfpack -q --batch-size 64 -o p64.csv
cmp -s p64.csv p1.csv && fail "predictions of two different checkpoints are the same"
# Series names with a comma, a quote and a line break, and a column name
# with a comma: predict's CSV quotes them (RFC 4180), so a CSV reader gets
# them back whole.
python3 - <<'PY'
import csv
with open("odd.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["id", "rate,1y"])
    for name in ['a,b', 'say "hi"', 'two\nlines']:
        for i in range(40): w.writerow([name, i % 7])
PY
run 0 pack odd.csv -o odd.sfpack --series-column id -q
run 0 train --data odd.sfpack --features '"rate,1y"' --targets ' "rate,1y" ' --model lstm:4,dense --window 5 \
    --epochs 1 --val-split 0 --checkpoint-dir odd -q
run 0 predict --checkpoint odd/latest.safetensors --data odd.sfpack -o odd-pred.csv -q
python3 - <<'PY' || fail "predict's CSV does not read back: $(head -3 odd-pred.csv)"
import csv, sys
rows = list(csv.reader(open("odd-pred.csv", newline="")))
names = {r[0] for r in rows[1:]}
sys.exit(0 if rows[0] == ["id", "line", "rate,1y_pred"] and names == {'a,b', 'say "hi"', 'two\nlines'} and
         all(len(r) == 3 for r in rows) else 1)
PY
# A column whose spread is below float32's normal range (0 and 1e-45) would
# scale by infinity and turn the loss to NaN at step 1: it is scaled as a
# constant, and train says so.
{ echo a,b; for i in $(seq 40); do echo "$(( i % 2 ))e-45,$i"; done; } >flat.csv
run 0 pack flat.csv -o flat.sfpack -q
run 0 train --data flat.sfpack --model lstm:4,dense --window 3 --batch-size 4 --epochs 1 --val-split 0
expect err "scaling: constant target a: its spread over the training rows is below float32's smallest normal number, so it is scaled as a constant"
expect err "epoch 1/1 .* loss [0-9]"
# A target that is not a feature: its persistence baseline too, from the file.
run 0 train --data s.sfpack --features f0,f1 --targets f2 --model lstm:8,dense --window 8 --epochs 1 --max-steps 5 \
    --checkpoint-dir nf -q
run 0 evaluate --checkpoint nf/latest.safetensors --data s.sfpack --json
python3 -c "import json,sys; d = json.load(open('out')); t = d['per_target'][0]
sys.exit(0 if d['persistence_baseline'] > 0 and t['name'] == 'f2' and t['rmse']['persistence'] > 0 else 1)" ||
    fail "evaluate --json without persistence: $(cat out)"
# A checkpoint whose column names disagree with its counts is refused.
python3 - <<'PY'
import json, struct
data = open("nf/latest.safetensors", "rb").read()
n = struct.unpack("<Q", data[:8])[0]
h = json.loads(data[8:8 + n]); h["__metadata__"]["features"] += ",f2"
raw = json.dumps(h).encode(); raw += b" " * ((8 - (8 + len(raw)) % 8) % 8)
open("bad.safetensors", "wb").write(struct.pack("<Q", len(raw)) + raw + data[8 + n:])
PY
run 1 predict --checkpoint bad.safetensors --data s.sfpack
expect err "2 inputs and 1 outputs, but features 'f0,f1,f2'"
run 2 train "${common[@]}" --precision tf32 --gpus none
expect err "--precision tf32 needs GPUs"
run 2 train "${common[@]}" --precision fp64
expect err "--precision fp64: expected one of fp32, tf32, bf16"
# The GPU step's switches: their words only (accepted, and unused, on CPU).
for opt in rnn-algo deferred-loss cuda-graph overlap-reduce; do
    run 2 train "${common[@]}" --$opt maybe
    expect err "--$opt maybe: expected one of"
done
run 0 train "${common[@]}" --rnn-algo persistent --deferred-loss off --cuda-graph off --overlap-reduce off -q \
    --max-steps 2 --checkpoint-dir switches
run 2 train "${common[@]}" --memory-budget lots
expect err "--memory-budget lots: expected a number from 0.001"
run 1 predict --checkpoint "$SRCDIR/tests/ref/ref_small.safetensors" --data s.sfpack
expect err "not a seqfeed checkpoint"
run 2 predict --checkpoint a/latest.safetensors --data s.sfpack --split tail
expect err "--split tail: expected one of all, train, validation"
run 2 predict --data s.sfpack
expect err "missing --checkpoint"
run 2 bench train --data s.sfpack --batch-size 0
expect err "--batch-size 0: expected integers from 1 to 1048576"
run 2 bench scaling --data s.sfpack --replicas 1,x
expect err "--replicas 1,x: expected integers from 1 to 256"
run 2 bench scaling --data s.sfpack --replicas 1,5 --batch-size 32
expect err "--batch-size 32 is cut into 4 part\(s\) of at least 8 windows, and each of the 5 replicas"
run 2 bench frobnicate
expect err "expected 'bench pipeline'"
run 2 train --data s.sfpack --val-split 1
run 2 train --data s.sfpack --resume
expect err "--resume needs --checkpoint-dir"
run 2 predict --checkpoint s.sfpack --data s.sfpack
expect err "s.sfpack: an .sfpack data file, not a checkpoint"
run 2 train "${common[@]}" --collective-timeout 0
expect err "--collective-timeout 0: expected a number from 1"
# Under a launcher (its variables alone, no MPI needed): bench refuses to
# run as N competing copies.
OMPI_COMM_WORLD_SIZE=2 run 2 bench train --data s.sfpack
expect err "not under mpirun or srun"
run 0 train --help
expect out "--checkpoint-dir"
expect out "--collective-timeout"
finish
