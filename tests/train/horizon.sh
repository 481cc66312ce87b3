#!/usr/bin/env bash
# --horizon A-B, several steps ahead at once, against a naive windowing of
# the CSV in Python (horizon_check.py): which windows exist (none whose
# steps leave its series or cross a --max-gap gap), predict's row per window
# and step with that step's own time, line, step number and actual value,
# evaluate's per-step MSE of the model (from predict's values), persistence
# and the seasonal forecast and their mean over steps; training with 1-3
# steps converging; the checkpoint's horizon (a fifth count, none for one
# step), resume's check of the range, and the ranges --horizon refuses.
set -uo pipefail
. "$SRCDIR/tests/lib.sh"
check="$SRCDIR/tests/train/horizon_check.py"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
# Hourly rows of two series; a's rows skip 5 hours after its 70th row,
# which --max-gap 2h cuts.
python3 - <<'PY'
import datetime, math
with open("h.csv", "w") as f:
    f.write("id,time,v\n")
    for s, n, phase in (("a", 150, 0.0), ("b", 120, 1.3)):
        for i in range(n):
            hour = i + (5 if s == "a" and i >= 70 else 0)
            t = datetime.datetime(2021, 3, 1) + datetime.timedelta(hours=hour)
            f.write("%s,%s,%.4f\n" % (s, t.isoformat(), 10 + 3 * math.sin(hour / 3.0 + phase) + 0.01 * hour))
PY
run 0 pack h.csv -o h.sfpack --series-column id -q
common=(--data h.sfpack --targets v --model lstm:16,dense --window 6 --batch-size 16 --seed 3 --norm none
        --val-split 0.25 --max-gap 2h --gpus none -q)

# Refused ranges, with the range in words.
for bad in 3-1 0-2 2- -3 1-1025 a-b; do
    run 2 train "${common[@]}" --horizon "$bad" --epochs 1 --checkpoint-dir bad
    expect err "--horizon $bad: expected an integer from 1 to [0-9]+, or a range A-B of them with A <= B and at most 1024 steps"
done

# 1-3 steps, z-scored: the loss over every step and target falls, and the
# model beats persistence at every step of the validation part.
over common --norm zscore
run 0 train "${args[@]}" --horizon 1-3 --epochs 20 --lr 0.01 --checkpoint-dir z --log z.csv
run 0 evaluate --checkpoint z/latest.safetensors --data h.sfpack --json -q
python3 - <<'PY' || fail "the 1-3 step model did not converge: $(cat z.csv out)"
import csv, json
rows = list(csv.DictReader(open("z.csv")))
first, last = float(rows[0]["loss"]), float(rows[-1]["loss"])
assert last < 0.2 * first, (first, last)
e = json.load(open("out"))
assert [x["step"] for x in e["per_step"]] == [1, 2, 3], e
assert all(x["model"] < 0.5 * x["persistence"] for x in e["per_step"]), e["per_step"]
PY

# In data units (--norm none), so that the scores are the CSV's own.
run 0 train "${common[@]}" --horizon 1-3 --epochs 3 --lr 0.01 --checkpoint-dir m
[ "$(meta m/latest.safetensors window)" = "6,1,1,3,3" ] ||
    fail "the checkpoint's window is $(meta m/latest.safetensors window), expected 6,1,1,3,3"
[ "$(meta m/latest.safetensors outputs)" = "1" ] || fail "outputs counts targets: $(meta m/latest.safetensors outputs)"
# One step writes the four counts older versions read.
run 0 train "${common[@]}" --horizon 3 --epochs 1 --checkpoint-dir one
[ "$(meta one/latest.safetensors window)" = "6,1,1,3" ] || fail "one step: window $(meta one/latest.safetensors window)"
# Resume names the range the run has.
run 2 train "${common[@]}" --horizon 2-3 --epochs 4 --checkpoint-dir m --resume
expect err "--horizon 2-3.*1-3"
# A range whose last step differs is named whole too, not by its last step.
run 2 train "${common[@]}" --horizon 1-4 --epochs 4 --checkpoint-dir m --resume
expect err "^seqfeed train: error: --horizon 1-4 differs from the checkpoint's 1-3 in"

# predict: a row per window and step, as the CSV's windows say.
run 0 predict --checkpoint m/latest.safetensors --data h.sfpack --with-actual -o p.csv -q
head -1 p.csv | grep -qx "id,time,line,step,v_pred,v" || fail "predict's header: $(head -1 p.csv)"
run 0 evaluate --checkpoint m/latest.safetensors --data h.sfpack --split all --season 4 --json -q
cp out e.json
run 0 evaluate --checkpoint m/latest.safetensors --data h.sfpack --split all --season 4 -q
expect out "^per step, MSE on scaled values"
expect out "^  v +1 "
expect out "^ +3 "
expect out "^ +mean "
python3 "$check" h.csv p.csv e.json --window 6 --first 1 --last 3 --max-gap-hours 2 --season 4 ||
    fail "predict's rows or evaluate's per-step scores differ from the CSV's windows"
# The validation part: every step of every window is a validation row.
run 0 predict --checkpoint m/latest.safetensors --data h.sfpack --split validation -o pv.csv -q
python3 "$check" h.csv pv.csv "" --window 6 --first 1 --last 3 --max-gap-hours 2 --val-split 0.25 ||
    fail "the validation part's windows differ"
finish
