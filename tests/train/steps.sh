#!/usr/bin/env bash
# Bounded epochs and validations, and the log as the run goes:
# --steps-per-epoch shorter and longer than a pass over the training
# windows (epochs, checkpoints, the passes continuing one another, a resume
# mid-epoch ending byte for byte as the run never stopped), --validation-steps
# scoring the first windows only, --log-every and the row a --max-steps stop
# logs, the log's header, and the usage errors. meson sets SEQFEED.
set -u
: "${SEQFEED:?SEQFEED must name the seqfeed binary}"
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../lib.sh"
tmp=$(mktemp -d /tmp/sfsteps.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
"$SEQFEED" synth -o s.sfpack --rows 4000 --feature-count 3 --series-count 2 -q || exit 1
common=(--data s.sfpack --features f0,f1,f2 --targets f0,f2 --model lstm:8,dropout:0.2,dense --window 12
        --batch-size 16 --val-split 0.2 --seed 5)

# The steps in a pass (the default epoch), as train says them.
run 0 train "${common[@]}" --epochs 1 --checkpoint-dir pass --log pass.csv
pass=$(sed -En 's/.* ([0-9]+) steps per epoch.*/\1/p' err)
[ -n "$pass" ] && [ "$pass" -gt 20 ] || fail "no steps per epoch in: $(cat err)"
head -1 pass.csv | grep -qx 'epoch,loss,val_loss,samples_per_s,input_wait,step,seconds,lr' ||
    fail "the log's header: $(head -1 pass.csv)"
[ "$(wc -l <pass.csv)" -eq 2 ] || fail "a one-epoch run of $pass steps logs one row: $(cat pass.csv)"

# rows LOG: "epoch step val_loss-or-- " for each row.
rows() { awk -F, 'NR > 1 { printf "%s %s %s\n", $1, $6, $3 == "" ? "-" : "v" }' "$1"; }

# --- Shorter than a pass: 3 epochs of 2/3 of a pass are two passes, the
# second continuing the first's last epoch: the run ends where a 2-epoch
# run of whole passes does, weights and Adam state bit for bit.
short=$((pass * 2 / 3))
[ $((short * 3)) -eq $((pass * 2)) ] || fail "test setup: make 2 x the $pass steps of a pass divisible by 3"
run 0 train "${common[@]}" --epochs 2 --checkpoint-dir two-passes --log two.csv
over common --epochs $((2 * pass / short)) --steps-per-epoch $short
short_run=("${args[@]}")
run 0 train "${short_run[@]}" --checkpoint-dir short --log short.csv
expect err " $short steps per epoch \(--steps-per-epoch; a pass over the training windows is $pass\)"
expect err "epoch 1/$((2 * pass / short)) - $short steps - "
n=$((2 * pass / short))
[ -f short/epoch-$(printf %04d $n).safetensors ] && [ ! -f short/epoch-$(printf %04d $((n + 1))).safetensors ] ||
    fail "--steps-per-epoch $short: not $n epoch files: $(ls short)"
[ "$(meta short/latest.safetensors step)" -eq $((n * short)) ] || fail "not $((n * short)) steps in all"
[ "$(meta short/latest.safetensors steps_per_epoch)" -eq "$short" ] || fail "the checkpoint lacks steps_per_epoch"
[ "$(rows short.csv | grep -c ' v$')" -eq "$n" ] || fail "not one val_loss per epoch: $(cat short.csv)"
rows short.csv | grep ' v$' | awk -v s=$short '$2 != $1 * s { bad = 1 } END { exit bad }' ||
    fail "epoch rows not every $short steps: $(cat short.csv)"
same two-passes/latest.safetensors short/latest.safetensors 0 ||
    fail "epochs of $short steps over 2 passes of $pass end with other weights than 2 epochs of a pass"

# Stopped by --max-steps inside epoch 2 (inside the first pass), resumed:
# the same checkpoints as the run never stopped.
stop=$((short + short / 2))
over short_run --max-steps $stop
run 0 train "${args[@]}" --checkpoint-dir short-stop --log short-stop.csv
[ "$(meta short-stop/latest.safetensors epoch_step)" -eq $((short / 2)) ] || fail "the stop is not mid-epoch 2"
run 0 train --checkpoint-dir short-stop --resume -q
same_bytes short/latest.safetensors short-stop/latest.safetensors ||
    fail "--steps-per-epoch $short: the resumed run differs from the uninterrupted one"
same_bytes short/epoch-0002.safetensors short-stop/epoch-0002.safetensors ||
    fail "--steps-per-epoch $short: epoch 2 differs after the resume"
# The resumed log goes on: the same epoch rows, seconds never going back.
diff <(rows short.csv | grep ' v$' | cut -d' ' -f1,2) <(rows short-stop.csv | grep ' v$' | cut -d' ' -f1,2) >/dev/null ||
    fail "the resumed run's epoch rows: $(cat short-stop.csv)"
awk -F, 'NR > 2 && $7 + 0 < last { bad = 1 } NR > 1 { last = $7 + 0 } END { exit bad }' short-stop.csv ||
    fail "seconds go back across the resume: $(cat short-stop.csv)"

# --- Longer than a pass: an epoch spans passes; stopped in the second
# pass, inside epoch 1, and resumed: the same run.
long=$((pass + pass / 2))
over common --epochs 2 --steps-per-epoch $long
long_run=("${args[@]}")
run 0 train "${long_run[@]}" --checkpoint-dir long --log long.csv
expect err "epoch 2/2 - $long steps - "
[ -f long/epoch-0002.safetensors ] && [ ! -f long/epoch-0003.safetensors ] || fail "--steps-per-epoch $long: $(ls long)"
[ "$(rows long.csv | grep -c ' v$')" -eq 2 ] || fail "--steps-per-epoch $long: not 2 epoch rows: $(cat long.csv)"
over long_run --max-steps $((pass + 7))
run 0 train "${args[@]}" --checkpoint-dir long-stop
run 0 train --checkpoint-dir long-stop --resume --max-steps $((long - pass - 7)) -q
[ "$(meta long-stop/latest.safetensors epoch)" -eq 1 ] && [ "$(meta long-stop/latest.safetensors epoch_step)" -eq 0 ] ||
    fail "the second stop is not at epoch 1's end"
run 0 train --checkpoint-dir long-stop --resume -q
same_bytes long/latest.safetensors long-stop/latest.safetensors ||
    fail "--steps-per-epoch $long: the resumed run differs from the uninterrupted one"
same_bytes long/epoch-0001.safetensors long-stop/epoch-0001.safetensors ||
    fail "--steps-per-epoch $long: epoch 1 differs after the resume"

# A resume keeps the run's epochs: another value is refused, naming both.
run 0 train "${common[@]}" --epochs 2 --max-steps 5 --checkpoint-dir plain -q
run 2 train --checkpoint-dir plain --resume --steps-per-epoch 7
expect err "^seqfeed train: error: --steps-per-epoch 7 differs from the checkpoint's \(none\) in plain/latest.safetensors"
run 2 train --checkpoint-dir short-stop --resume --steps-per-epoch $((short + 1)) --epochs 9
expect err "^seqfeed train: error: --steps-per-epoch $((short + 1)) differs from the checkpoint's $short in short-stop/latest"
run 2 train --checkpoint-dir short-stop --resume --validation-steps 2 --epochs 9
expect err "^seqfeed train: error: --validation-steps 2 differs from the checkpoint's \(none\)"
# The same value given again is no change.
run 0 train --checkpoint-dir short-stop --resume --steps-per-epoch $short --epochs $((n + 1)) -q
[ -f short-stop/epoch-$(printf %04d $((n + 1))).safetensors ] || fail "the resume with the same value did not train"

# --- --validation-steps: the first N batches of validation windows, in
# order. Epoch 2's val_loss is the loss of the final weights on the first
# 3 x 16 validation windows (predict's rows, in the same order), not on all.
over common --epochs 2 --validation-steps 3
run 0 train "${args[@]}" --checkpoint-dir val --log val.csv
expect err "^validation: the first 48 of the [0-9]+ validation windows, in order, the same each time \(--validation-steps 3 x --batch-size 16\)"
# The run's end scores the same 48 windows (a large file's validation part
# would take hours), and says so.
expect err "^validation part's first 48 of [0-9]+ windows \(--validation-steps\), per target, with the final weights"
expect err "^ +does not beat persistence: .*\(48 values\)|^ +beats persistence: .*\(48 values\)"
run 0 predict --checkpoint val/latest.safetensors --data s.sfpack --split validation --with-actual -o v.csv -q
python3 - <<'PY' || fail "--validation-steps 3: val_loss is not the first 48 windows' loss: $(cat val.csv)"
import csv, json, struct, sys
b = open("val/latest.safetensors", "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
t = h["scaling/target_scale"]["data_offsets"]
scale = struct.unpack("<%df" % ((t[1] - t[0]) // 4), b[8 + n + t[0]:8 + n + t[1]])
names = h["__metadata__"]["targets"].split(",")
rows = list(csv.DictReader(open("v.csv")))
def loss(rs):
    d = [((float(r[k + "_pred"]) - float(r[k])) * scale[j]) ** 2 for r in rs for j, k in enumerate(names)]
    return sum(d) / len(d)
logged = float([r for r in csv.DictReader(open("val.csv")) if r["val_loss"]][-1]["val_loss"])
first, every = loss(rows[:48]), loss(rows)
print(logged, first, every, file=sys.stderr)
sys.exit(0 if abs(logged - first) <= 1e-4 * first and abs(logged - every) > 1e-3 * every else 1)
PY
# More batches than there are: every window, and it says so.
over common --epochs 1 --validation-steps 100000
run 0 train "${args[@]}" --checkpoint-dir val-all --log val-all.csv
expect err "^validation: all [0-9]+ validation windows \(--validation-steps 100000 x --batch-size 16 reaches past them\)"
[ "$(cut -d, -f3 val-all.csv | tail -1)" = "$(cut -d, -f3 pass.csv | tail -1)" ] ||
    fail "--validation-steps past the windows: val_loss differs from a full validation: $(cat val-all.csv pass.csv)"

# --- A --max-steps run inside an epoch logs its loss there, and says it
# on stderr off a terminal.
over common --epochs 2 --max-steps 9
run 0 train "${args[@]}" --checkpoint-dir ms --log ms.csv
[ "$(wc -l <ms.csv)" -eq 2 ] || fail "--max-steps 9: not one row: $(cat ms.csv)"
python3 - <<'PY' || fail "--max-steps 9: its row: $(cat ms.csv)"
import csv, math, sys
r = list(csv.DictReader(open("ms.csv")))[0]
sys.exit(0 if r["epoch"] == "1" and r["step"] == "9" and r["val_loss"] == "" and math.isfinite(float(r["loss"]))
         and float(r["seconds"]) > 0 and float(r["lr"]) == 0.001 else 1)
PY
expect err "^epoch 1/2 - step 9/$pass - .* - loss [0-9.]+ - "
# No run's wall time ('seconds') in a checkpoint: the log's seconds go on
# from its last row, and the checkpoints of one run match however resumed.
! meta ms/latest.safetensors seconds >/dev/null || fail "the checkpoint keeps the run's wall time (seconds)"

# --log-every: a row at every multiple of N steps, val_loss only at epoch
# ends; -q says nothing.
over common --epochs 2 --log-every 10 -q
run 0 train "${args[@]}" --checkpoint-dir every --log every.csv
[ ! -s err ] || fail "-q with --log-every printed: $(cat err)"
want=$(python3 -c "print(len({s for s in range(1, 2 * $pass + 1) if s % 10 == 0} | {$pass, 2 * $pass}))")
[ "$(rows every.csv | wc -l)" -eq "$want" ] || fail "--log-every 10 over 2 x $pass steps: not $want rows: $(cat every.csv)"
rows every.csv | awk -v p=$pass '($3 == "v") != ($2 % p == 0) || ($3 == "-" && $2 % 10) { bad = 1 } END { exit bad }' ||
    fail "--log-every 10: rows off the multiples, or val_loss between epoch ends: $(cat every.csv)"

# A resume goes on with the run's --log-every.
over common --epochs 1 --log-every 7 --max-steps 10
run 0 train "${args[@]}" --checkpoint-dir le --log le.csv
run 0 train --checkpoint-dir le --resume --max-steps 15 -q
[ "$(rows le.csv | cut -d' ' -f2 | tr '\n' ' ')" = "7 10 14 21 25 " ] ||
    fail "--log-every 7 stopped at 10, resumed to 25: rows $(cat le.csv)"

# Another file given as the log on resume is neither cut nor appended to
# (this one's sixth column would read as steps past the checkpoint's).
printf 'a,b,c,d,e,f\n1,2,3,4,5,999\n' >mine.csv
cp mine.csv mine.before
run 2 train --checkpoint-dir le --resume --max-steps 15 --log mine.csv -q
expect err "^seqfeed train: error: --log mine.csv is not a train log \(its first line is 'a,b,c,d,e,f'"
cmp -s mine.csv mine.before || fail "--resume cut or appended to a file that is not a log: $(cat mine.csv)"
# A log whose header a kill cut short is the run's own: written anew.
printf 'epoch,loss,val_lo' >short.csv
run 0 train --checkpoint-dir le --resume --max-steps 1 --log short.csv -q
[ "$(head -n 1 short.csv)" = "epoch,loss,val_loss,samples_per_s,input_wait,step,seconds,lr" ] ||
    fail "a log with its header cut short, resumed: $(cat short.csv)"

# ... and with its --checkpoint-every, which a kill would otherwise cost
# the steps since the last epoch's end.
over common --epochs 1 --checkpoint-every 6 --max-steps 8
run 0 train "${args[@]}" --checkpoint-dir ce
run 0 train --checkpoint-dir ce --resume --max-steps 4 -q
[ "$(meta ce/latest.safetensors checkpoint_every)" = 6 ] && [ "$(meta ce/latest.safetensors step)" = 12 ] ||
    fail "--checkpoint-every 6, resumed: the checkpoint says $(meta ce/latest.safetensors checkpoint_every) at step \
$(meta ce/latest.safetensors step)"

# A run killed (kill -9) after logging rows past its checkpoint, the last
# cut short: the resume cuts them off and logs those steps again, so the
# log is the uninterrupted run's (row for row but for the timings).
over common --epochs 1 --log-every 7 --max-steps 10
run 0 train "${args[@]}" --checkpoint-dir kl --log kl.csv
printf '1,0.5,,100.0,0.0100,14,9.000,0.001\n1,0.4,,100.0,0.0100,21,9.500,0.001\n1,0.3,,10' >>kl.csv
run 0 train --checkpoint-dir kl --resume --max-steps 15 -q
over common --epochs 1 --log-every 7 --max-steps 25
run 0 train "${args[@]}" --checkpoint-dir kl1 --log kl1.csv
[ "$(cut -d, -f6 kl.csv | tr '\n' ' ')" = "step 7 10 14 21 25 " ] &&
    [ "$(grep -v '^1,[^,]*,,[^,]*,[^,]*,10,' kl.csv | cut -d, -f1-3,6,8)" = "$(cut -d, -f1-3,6,8 kl1.csv)" ] ||
    fail "a log with rows past the checkpoint, resumed: $(cat kl.csv); in one go: $(cat kl1.csv)"
awk -F, 'NR > 2 && $7 < s { bad = 1 } { s = $7 } END { exit bad }' kl.csv || fail "seconds go back: $(cat kl.csv)"

# The lr column is the lr of the steps as the schedule goes: rising in
# --warmup-steps.
over common --epochs 1 --lr-schedule cosine --warmup-steps 20 --log-every 10 --max-steps 30
run 0 train "${args[@]}" --checkpoint-dir warm --log warm.csv
python3 - <<'PY' || fail "--warmup-steps 20: the lr column does not rise: $(cat warm.csv)"
import csv, sys
lr = {int(r["step"]): float(r["lr"]) for r in csv.DictReader(open("warm.csv"))}
sys.exit(0 if sorted(lr) == [10, 20, 30] and lr[10] < lr[20] and lr[10] < 0.001 else 1)
PY

# By default an epoch longer than 10000 steps gets a row every 1000 (and
# the stop's); shorter ones a row at their end only (the runs above).
over common --epochs 1 --steps-per-epoch 12000 --max-steps 2500
run 0 train "${args[@]}" --checkpoint-dir auto --log auto.csv
[ "$(rows auto.csv | tr '\n' ' ')" = "1 1000 - 1 2000 - 1 2500 - " ] ||
    fail "an epoch of 12000 steps stopped at 2500: rows $(cat auto.csv)"

# A log an older seqfeed began (five columns) goes on with its five.
over common --epochs 1 --max-steps 5
run 0 train "${args[@]}" --checkpoint-dir old --log old.csv
cut -d, -f1-5 old.csv >old5.csv && mv old5.csv old.csv
run 0 train --checkpoint-dir old --resume -q
[ "$(wc -l <old.csv)" -eq 3 ] && [ "$(awk -F, '{ print NF }' old.csv | sort -u)" = 5 ] ||
    fail "the resumed older log: $(cat old.csv)"

# An edited checkpoint whose epoch has run more steps than --steps-per-epoch
# is named, not resumed into an epoch no run has.
cp -r short-stop edited && rm -f edited/seqfeed.lock
python3 - edited/latest.safetensors "$short" <<'PY' || fail "cannot edit the checkpoint"
import json, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
h["__metadata__"]["epoch_step"] = sys.argv[2]
t = json.dumps(h, separators=(",", ":")).encode()
t += b" " * (-(8 + len(t)) % 8)
open(sys.argv[1], "wb").write(struct.pack("<Q", len(t)) + t + b[8 + n:])
PY
run 1 train --checkpoint-dir edited --resume --epochs 99
expect err "edited/latest.safetensors: metadata 'epoch_step' is $short, with 'epoch' [0-9]+ and 'steps_per_epoch' $short: a count no run leaves"

# --- Usage errors.
for opt in steps-per-epoch validation-steps log-every; do
    over common --$opt 0
    run 2 train "${args[@]}"
    expect err "^seqfeed train: error: --$opt 0: expected an integer from 1 to 1099511627776$"
done
over common --val-split 0 --validation-steps 4
run 2 train "${args[@]}"
expect err "^seqfeed train: error: --validation-steps 4 bounds validation, and --val-split 0 leaves none \(hint: a --val-split above 0, or leave --validation-steps out\)"
over common --val-split 0 --season 7
run 2 train "${args[@]}"
expect err "^seqfeed train: error: --season 7 sets the seasonal forecast the validation part is scored against, and --val-split 0 leaves none \(hint: a --val-split above 0, or leave --season out\)"
run 0 train --help
expect out "--steps-per-epoch N"
expect out "--validation-steps N"
expect out "--log-every N"

finish
