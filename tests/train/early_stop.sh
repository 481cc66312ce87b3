#!/usr/bin/env bash
# Early stopping and the best checkpoint: a run whose val_loss rises stops
# after --early-stop evaluations without an improvement (by more than
# --min-delta), and DIR/best.safetensors holds the epoch of the log's lowest
# val_loss, which evaluate reproduces; a run in parts (--max-steps, then
# --resume), or killed between best's rename and latest's, ends byte for
# byte as the run in one go, best included; predict, evaluate and export
# given a run's directory take its best and say so, and refuse an output
# that is one of its files, by name or through a link; --early-stop without
# validation and a directory without checkpoints are refused, naming them.
set -u
: "${SEQFEED:?SEQFEED must name the seqfeed binary}"
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../lib.sh"
tmp=$(mktemp -d /tmp/sfstop.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
"$SEQFEED" synth -o s.sfpack --rows 3000 --feature-count 2 --series-count 1 -q || exit 1
# A high learning rate: val_loss is lowest early and then rises (checked below).
run_opts=(--data s.sfpack --window 8 --batch-size 16 --model lstm:16,dense --seed 5 --lr 0.05 --epochs 20)

# --- A run whose val_loss rises: stopped by --early-stop 3 before --epochs 20.
run 0 train "${run_opts[@]}" --early-stop 3 --checkpoint-dir u --log u.csv
# The log: its val_loss rises after its lowest, the run stopped 3 evaluations
# after the last improvement, and before --epochs.
read -r rows best_epoch best_val < <(python3 - u.csv <<'PY'
import csv, sys
v = [float(r["val_loss"]) for r in csv.DictReader(open(sys.argv[1]))]
k = min(range(len(v)), key=v.__getitem__)
rises = any(v[i + 1] > v[i] for i in range(len(v) - 1))
print(len(v) if rises and len(v) - 1 - k == 3 and all(x > v[k] for x in v[k + 1:]) else -len(v), k + 1, repr(v[k]))
PY
)
[ "$rows" -gt 0 ] && [ "$rows" -lt 20 ] || fail "the log does not show val_loss rising to an early stop (3 after its lowest, before epoch 20): $(cat u.csv)"
expect err "^early stop: after epoch $rows val_loss had not improved for 3 evaluations \(--early-stop 3, --min-delta 0\)$"
expect err "^best: epoch $best_epoch, val_loss [0-9.e-]+: u/best.safetensors"
[ ! -e "u/epoch-$(printf %04d $((rows + 1))).safetensors" ] || fail "epochs after the early stop were trained: $(ls u)"
cmp -s u/best.safetensors "u/epoch-$(printf %04d "$best_epoch").safetensors" ||
    fail "best.safetensors is not the checkpoint of epoch $best_epoch, the log's lowest val_loss"
[ "$(meta u/best.safetensors best_epoch)" = "$best_epoch" ] || fail "best.safetensors' best_epoch: $(meta u/best.safetensors best_epoch)"
[ "$(meta u/latest.safetensors since_improved)" = 3 ] || fail "latest's since_improved: $(meta u/latest.safetensors since_improved)"
# The run's per-target table is the best epoch's, as evaluate on the directory's.
expect err "^validation part, per target, with the best epoch's weights \(epoch $best_epoch\)"
grep -A8 "^validation part, per target" err | grep "RMSE" | head -1 > end_rmse
run 0 evaluate --checkpoint u --data s.sfpack
grep "RMSE" out | head -1 > eval_rmse
cmp -s end_rmse eval_rmse || fail "train's end table ($(cat end_rmse)) is not evaluate's on its directory ($(cat eval_rmse))"
# evaluate on the best gives the log's val_loss (the same windows and targets).
run 0 evaluate --checkpoint u/best.safetensors --data s.sfpack --json
python3 -c 'import json,sys; l=json.load(open("out"))["loss"]; sys.exit(abs(l-float(sys.argv[1]))>1e-6*float(sys.argv[1]))' "$best_val" ||
    fail "evaluate on best.safetensors: $(cat out); the log's lowest val_loss is $best_val"

# --- --min-delta: an improvement by less is none. Every val_loss after the
# first is within 1 of it, so the run stops 2 evaluations after epoch 1,
# and the best is still the lowest val_loss of those epochs.
run 0 train "${run_opts[@]}" --early-stop 2 --min-delta 1 --checkpoint-dir md --log md.csv -q
[ "$(tail -n +2 md.csv | wc -l)" -eq 3 ] || fail "--early-stop 2 --min-delta 1 did not stop after epoch 3: $(cat md.csv)"
low=$(tail -n +2 md.csv | sort -t, -k3 -g | head -1 | cut -d, -f1)
cmp -s md/best.safetensors "md/epoch-$(printf %04d "$low").safetensors" ||
    fail "with --min-delta best.safetensors is not epoch $low, the lowest val_loss: $(cat md.csv)"

# --- In parts: --max-steps mid-epoch twice, then --resume to the end, ends
# as the run in one go: latest, best and every epoch's file byte for byte.
one=(--data s.sfpack --window 8 --batch-size 16 --model lstm:16,dense --seed 5 --lr 0.05 --epochs 20 --early-stop 3 -q)
run 0 train "${one[@]}" --checkpoint-dir full
run 0 train "${one[@]}" --checkpoint-dir parts --max-steps 300
run 0 train --checkpoint-dir parts --resume --max-steps 250 -q
[ "$(meta parts/latest.safetensors epoch_step)" != 0 ] || fail "the second part did not stop mid-epoch"
run 0 train --checkpoint-dir parts --resume -q
for f in full/*.safetensors; do
    same_bytes "$f" "parts/${f#full/}" || fail "the run in parts differs from the run in one go: ${f#full/}"
done
[ "$(ls full | tr '\n' ' ')" = "$(ls parts | tr '\n' ' ')" ] || fail "the runs' files differ: $(ls full) vs $(ls parts)"
# Resumed after its early stop: nothing to do, unless --early-stop grows.
run 0 train --checkpoint-dir parts --resume
expect err "^resume: early stopping ended the run after epoch $rows: val_loss had not improved for 3 evaluations \(--early-stop 3\): nothing to do \(hint: a larger --early-stop trains further\)"
# Said as the run's end says it: an improvement is one by more than --min-delta (Keras').
run 0 train --checkpoint-dir parts --resume --min-delta 0.0001
expect err "^resume: early stopping ended the run after epoch $rows: val_loss had not improved by more than --min-delta for 3 evaluations"
same_bytes full/latest.safetensors parts/latest.safetensors || fail "a resume with nothing to do changed latest"

# --- A kill between best's rename and latest's, at the best epoch's end:
# best stands at that epoch, latest at the one before (and temporaries are
# left). best is already the best of every epoch recorded; the resume
# removes the temporaries, trains the epoch again, and ends as the run in
# one go.
steps=$(meta full/epoch-0001.safetensors step)  # Adam's steps after one epoch: the steps of one
run 0 train "${one[@]}" --checkpoint-dir killed --max-steps $((steps * (best_epoch - 1)))
[ "$(meta killed/latest.safetensors epoch)" = $((best_epoch - 1)) ] || fail "the run did not stop at epoch $((best_epoch - 1))'s end"
cp full/best.safetensors killed/best.safetensors
cp full/latest.safetensors "killed/latest.safetensors.tmp.999999.abcdef"
head -c 1000 full/best.safetensors >"killed/best.safetensors.tmp.999999.ghijkl"
run 0 predict --checkpoint killed --data s.sfpack -o k.csv
expect err "^checkpoint: killed/best.safetensors, epoch $best_epoch, the best val_loss"
run 0 train --checkpoint-dir killed --resume -q
ls killed | grep -q '\.tmp\.' && fail "a temporary outlived the resume: $(ls killed)"
for f in full/*.safetensors; do
    same_bytes "$f" "killed/${f#full/}" || fail "the run killed between best and latest differs: ${f#full/}"
done

# A directory with a best alone names no latest; a damaged best is named by
# the read alone (no line of '?' before it).
mkdir lone && cp full/best.safetensors lone/
run 0 evaluate --checkpoint lone --data s.sfpack
expect err "^checkpoint: lone/best.safetensors, epoch $best_epoch, the best val_loss [0-9.e-]+ \(a run's directory gives its best epoch\)$"
mkdir cut && cp full/latest.safetensors cut/ && head -c 500 full/best.safetensors >cut/best.safetensors
run 1 predict --checkpoint cut --data s.sfpack -o cut.csv
expect err "^seqfeed predict: error: cut/best.safetensors: "
grep -q '?' err && fail "a damaged best gave a line of '?': $(cat err)"

# --- Every validation target imputed (pack --missing ffill): no val_loss,
# so no evaluation: nothing counts toward --early-stop or plateau's wait,
# and the run trains its epochs (it was stopped after one, or failed to
# write a checkpoint with plateau_best nan).
python3 -c '
import math
print("time,a,b")
for i in range(200):
    print("%d,%s,%.4f" % (1577836800 + 3600 * i, "" if i >= 175 else "%.4f" % math.sin(i / 3), math.cos(i / 5)))' >ff.csv
run 0 pack ff.csv -o ff.sfpack --time-column time --time-unit s --missing ffill -q
run 0 train --data ff.sfpack --targets a --window 8 --batch-size 4 --model lstm:4,dense --epochs 3 --early-stop 1 \
    --lr-schedule plateau --lr-patience 1 --checkpoint-dir ff --report ff.html
expect err "^validation: 20 of 20 target values were imputed by pack --missing ffill and are not scored: no val_loss"
grep -q "^early stop" err && fail "a run without a val_loss was early-stopped: $(cat err)"
[ -f ff/epoch-0003.safetensors ] && [ ! -e ff/best.safetensors ] || fail "the run without a val_loss: $(ls ff)"
[ "$(meta ff/latest.safetensors since_improved)" = 0 ] || fail "since_improved counted no evaluation"
# The report's verdict says no target was scored (not "all 0 scored targets beat persistence").
grep -q "no target scored: every value of the part was imputed by pack --missing ffill" ff.html &&
    ! grep -q "all 0 scored" ff.html || fail "the report's verdict on a part with nothing scored: $(grep -o 'Verdict.\{0,200\}' ff.html)"

# --- A new run beside a best alone (another run's) is refused.
mkdir bestonly && cp full/best.safetensors bestonly/
run 2 train "${one[@]}" --checkpoint-dir bestonly
expect err "--checkpoint-dir bestonly holds another run's checkpoints \(best.safetensors\)"
# ... and with --resume (no latest: it started afresh and overwrote that best).
[ "$best_epoch" -gt 1 ] || fail "the test needs a best after epoch 1"
run 2 train "${one[@]}" --checkpoint-dir bestonly --resume
expect err "^seqfeed train: error: --checkpoint-dir bestonly holds best.safetensors \(epoch $best_epoch\) but no latest.safetensors"
cmp -s full/best.safetensors bestonly/best.safetensors || fail "--resume beside a best alone changed it"

# --- A checkpoint from before the validation record was kept resumes (none
# recorded: the best starts again); a damaged record is named.
run 0 train "${one[@]}" --checkpoint-dir old --max-steps 300
edmeta old/latest.safetensors early_stop= min_delta= since_improved= best_epoch= best_val_loss= improved_val_loss=
run 0 train --checkpoint-dir old --resume --epochs 3 -q
[ "$(meta old/latest.safetensors best_epoch)" -ge 2 ] || fail "a run resumed from an older checkpoint keeps no best"
cp -r full bad && rm bad/seqfeed.lock
edmeta bad/latest.safetensors best_val_loss=nan
run 1 train --checkpoint-dir bad --resume --early-stop 9
expect err "bad/latest.safetensors: metadata 'best_val_loss' nan and 'improved_val_loss' .*\(a damaged or edited checkpoint\)"
# A record against the run's counters (a best after the epochs done, more
# evaluations since one than epochs, a negative loss) is named too.
for kv in best_epoch=$((rows + 1)) since_improved=$((rows + 1)); do
    cp full/latest.safetensors bad/latest.safetensors && edmeta bad/latest.safetensors "$kv"
    run 1 train --checkpoint-dir bad --resume --early-stop 9
    expect err "^seqfeed train: error: bad/latest.safetensors: metadata '${kv%=*}' is $((rows + 1)), with 'epoch' $rows .*a count no run leaves \(a damaged or edited checkpoint\)"
done
cp full/latest.safetensors bad/latest.safetensors && edmeta bad/latest.safetensors best_val_loss=-1 improved_val_loss=-1
run 1 evaluate --checkpoint bad/latest.safetensors --data s.sfpack
expect err "bad/latest.safetensors: metadata 'best_val_loss' is -1, expected a loss of 0 or more \(a damaged or edited checkpoint\)"

# --- predict, evaluate and export given the run's directory take its best.
run 0 predict --checkpoint full --data s.sfpack -o dir.csv
expect err "^checkpoint: full/best.safetensors, epoch $best_epoch, the best val_loss [0-9.e-]+ "
run 0 predict --checkpoint full/best.safetensors --data s.sfpack -o file.csv
cmp -s dir.csv file.csv || fail "predict on the directory is not predict on its best.safetensors"
run 0 evaluate --checkpoint full/ --data s.sfpack --json -q
grep -q checkpoint: err && fail "-q still names the checkpoint: $(cat err)"
python3 -c 'import json,sys; l=json.load(open("out"))["loss"]; sys.exit(abs(l-float(sys.argv[1]))>1e-6*float(sys.argv[1]))' "$best_val" ||
    fail "evaluate on the directory: $(cat out); the log's lowest val_loss is $best_val"
"$SEQFEED" export --checkpoint full --format keras -o m.keras >out 2>err
if ! grep -q "built without" err; then
    [ -s m.keras ] || fail "export on the directory: $(cat err)"
    expect err "^checkpoint: full/best.safetensors, epoch $best_epoch"
    expect err "^exported full/best.safetensors "
fi
# Without best (a run without validation): latest, saying why.
run 0 train --data s.sfpack --window 8 --batch-size 16 --model lstm:4,dense --epochs 1 --val-split 0 --checkpoint-dir nv -q
[ ! -e nv/best.safetensors ] || fail "a run without validation wrote best.safetensors"
run 0 evaluate --checkpoint nv --data s.sfpack
expect err "^checkpoint: nv/latest.safetensors, epoch 1 \(the run has no best.safetensors: no epoch with a val_loss has ended\)"

# --- Refused: --early-stop without validation; a directory without a checkpoint.
run 2 train "${one[@]}" --val-split 0 --checkpoint-dir nov
expect err "^seqfeed train: error: --early-stop 3 watches val_loss, and --val-split 0 leaves no validation \(hint: --val-split 0.1, or leave --early-stop out\)"
[ ! -e nov/latest.safetensors ] || fail "the refused run trained"
run 2 train "${one[@]}" --val-split 0.0003 --checkpoint-dir nov
expect err "--early-stop 3 watches val_loss, and --val-split 0.0003 leaves no validation target: the validation part of every series \(its last 0.0003 of rows, rounded down\) is empty \(hint: a larger --val-split, or leave --early-stop out\)"
# A resume keeps its run's --val-split: the hint names only what it accepts.
run 2 train --checkpoint-dir nv --resume --epochs 2 --early-stop 3 -q
expect err "^seqfeed train: error: --early-stop 3 watches val_loss, and --val-split 0 leaves no validation \(hint: leave --early-stop out\)"
mkdir empty
for cmd in predict evaluate; do
    run 2 $cmd --checkpoint empty --data s.sfpack
    expect err "^seqfeed $cmd: error: --checkpoint empty is a directory without best.safetensors or latest.safetensors: expected a checkpoint file, or a run's directory that holds one \(hint: seqfeed train --data FILE.sfpack --checkpoint-dir empty writes them\)"
done
run 2 export --checkpoint empty --format keras -o e.keras
expect err "(--checkpoint empty is a directory without best.safetensors or latest.safetensors|built without)"
# The directory's checkpoints are what is read: none is an output.
cp full/best.safetensors best.before
run 2 predict --checkpoint full --data s.sfpack -o full/best.safetensors
expect err "^seqfeed predict: error: --output full/best.safetensors is a checkpoint of the run's directory --checkpoint full: write to another file"
cmp -s best.before full/best.safetensors || fail "predict wrote over the run's best.safetensors"
# ... nor reached through a symbolic link of another name, beside it or
# elsewhere, to a run file that exists or to the name of one to come.
ln -s best.safetensors full/sym.keras
run 2 predict --checkpoint full --data s.sfpack -o full/sym.keras
expect err "^seqfeed predict: error: --output full/sym.keras is a checkpoint of the run's directory --checkpoint full"
ln -s full/epoch-0001.safetensors log.csv
run 2 train --checkpoint-dir full --resume --epochs 30 --log log.csv
expect err "^seqfeed train: error: --log log.csv is a file train writes in --checkpoint-dir full"
ln -s full/epoch-0099.safetensors later.html
run 2 train --checkpoint-dir full --resume --epochs 30 --report later.html
expect err "^seqfeed train: error: --report later.html is a file train writes in --checkpoint-dir full"
ln -s full/epoch-0098.safetensors hop.csv && ln -s hop.csv hops.csv
run 2 train --checkpoint-dir full --resume --epochs 30 --log hops.csv
expect err "^seqfeed train: error: --log hops.csv is a file train writes in --checkpoint-dir full"
cmp -s best.before full/best.safetensors || fail "a link wrote over the run's best.safetensors"
mkdir epochs && cp full/epoch-0001.safetensors epochs/
run 2 evaluate --checkpoint epochs --data s.sfpack
expect err "\(hint: --checkpoint epochs/epoch-0001.safetensors names the last epoch's\)"
finish
