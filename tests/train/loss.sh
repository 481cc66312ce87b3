#!/usr/bin/env bash
# --loss: its errors (exit 2, the option and what is wrong named), the
# checkpoint keeping it (metadata "loss"), a resume with another refused,
# predict's NAME_q10, NAME_q50, NAME_q90 columns (sorted: they never cross)
# beside the step column of a --horizon A-B model, and evaluate's report: each
# quantile's pinball loss and the interval's coverage, recomputed here from
# predict's own numbers; mae and huber reported in their own metric next to
# persistence, the same numbers as recomputed from predict's and the file's.
set -uo pipefail
. "$SRCDIR/tests/lib.sh"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
python3 - <<'PY'
import math, random
random.seed(7)
with open("d.csv", "w") as f:
    f.write("id,a,b\n")
    for s in ("x", "y"):
        a = 10.0
        for i in range(150):
            a += random.gauss(0, 1)
            f.write("%s,%.3f,%.3f\n" % (s, a, 5 * math.sin(i / 4) + random.gauss(0, 1)))
PY
run 0 pack d.csv -o d.sfpack --series-column id -q
base=(train --data d.sfpack --targets a,b --model lstm:6,dense --window 6 --epochs 2 --batch-size 8 -q)

# Bad lists and words: a usage error naming --loss and what is wrong.
for bad in "quantile:0.1,1.5|outside \(0, 1\)" "quantile:0,0.5|outside \(0, 1\)" \
           "quantile:0.5,0.1|ascending order" "quantile:0.1,0.5,0.5|given twice" "quantile:|expected mse, mae" \
           "quantile:0.1,x|'x' is no number" "huber:0|delta must be a finite number above 0" "huber:x|delta must be" \
           "mse:2|expected mse, mae, huber" "l1|expected mse, mae, huber"; do
    run 2 "${base[@]}" --loss "${bad%%|*}" --checkpoint-dir bad
    expect err "^seqfeed train: error: --loss ${bad%%|*}: .*${bad#*|}"
    [ -e bad ] && fail "--loss ${bad%%|*}: a refused run left its directory"
done
run 0 train --help
expect out "^ +--loss mse\|mae\|huber\[:D\]\|quantile:Q,\.\.$"
expect out "^ +what training minimises, on scaled values"
expect out "\(default mse\)"

# A quantile model of three steps: the checkpoint keeps the loss, the Dense has 3 x 3 x 2 units.
run 0 "${base[@]}" --horizon 1-3 --loss quantile:0.9,0.95 --checkpoint-dir bad
run 0 "${base[@]}" --horizon 1-3 --loss quantile:0.1,0.5,0.9 --checkpoint-dir q
[ "$(meta q/latest.safetensors loss)" = "quantile:0.1,0.5,0.9" ] || fail "loss metadata: $(meta q/latest.safetensors loss)"
[ "$(meta q/latest.safetensors model)" = "lstm:6,dense:18" ] || fail "model metadata: $(meta q/latest.safetensors model)"
# A resume with another loss is another run: refused, naming both; the same one (respelled) goes on.
run 2 train --checkpoint-dir q --resume --loss mae -q
expect err "--loss mae differs from the checkpoint's quantile:0.1,0.5,0.9 in q/latest.safetensors"
run 2 train --checkpoint-dir q --resume --loss quantile:0.1,0.5 -q
expect err "--loss quantile:0.1,0.5 differs from the checkpoint's quantile:0.1,0.5,0.9"
run 0 train --checkpoint-dir q --resume --loss quantile:.1,0.50,0.9 --epochs 3 -q

run 0 predict --checkpoint q --data d.sfpack --split validation --with-actual -o q.csv -q
head -1 q.csv | grep -qx "id,line,step,a_q10,a_q50,a_q90,a,b_q10,b_q50,b_q90,b" || fail "predict's header: $(head -1 q.csv)"
run 0 evaluate --checkpoint q --data d.sfpack --json -q
cp out q.json
run 0 evaluate --checkpoint q --data d.sfpack
expect out "^loss  +[0-9.]+ +pinball loss, the mean over the 3 quantiles q10 to q90, of scaled values"
expect out "^coverage +[0-9.]+ +the share of true values inside \[q10, q90\] \(nominal 0.8\)"
expect out "^  a +q10 [0-9.e-]+ q50 [0-9.e-]+ q90 [0-9.e-]+  coverage [0-9.]+$"
expect out "^per step, pinball on scaled values as the loss"
python3 - <<'PY' || fail "evaluate's quantile scores differ from predict's numbers"
import csv, json
rows = list(csv.DictReader(open("q.csv")))
ev = json.load(open("q.json"))
assert ev["loss_function"] == "quantile:0.1,0.5,0.9" and abs(ev["nominal_coverage"] - 0.8) < 1e-12, ev
assert len(rows) == 3 * ev["windows"] and [r["step"] for r in rows[:3]] == ["1", "2", "3"]
for t in ("a", "b"):
    q = [[float(r[t + s]) for s in ("_q10", "_q50", "_q90")] for r in rows]
    assert all(v[0] <= v[1] <= v[2] for v in q), "quantiles cross"
    truth = [float(r[t]) for r in rows]
    inside = sum(v[0] <= y <= v[2] for v, y in zip(q, truth)) / len(truth)
    got = [p for p in ev["per_target"] if p["name"] == t][0]
    assert abs(got["coverage"] - inside) < 1e-9, (t, got["coverage"], inside)
    assert set(got["quantile_loss"]) == {"q10", "q50", "q90"} and got["beats_persistence"] in (True, False)
    print(t, "coverage", inside)
PY

# mae and huber: their loss next to persistence in the same metric.
for l in mae huber:0.5; do
    run 0 "${base[@]}" --loss $l --checkpoint-dir "${l%%:*}"
    [ "$(meta ${l%%:*}/latest.safetensors loss)" = "$l" ] || fail "$l: loss metadata"
    run 0 evaluate --checkpoint "${l%%:*}" --data d.sfpack
    [ $l = mae ] && expect out "^loss +[0-9.]+ +MAE of scaled values, as in training"
    [ $l = mae ] && expect out "persistence: (loss [0-9.]+% below|[0-9.]+x its loss)"
    [ $l != mae ] && expect out "^loss +[0-9.]+ +Huber loss \(delta 0.5\) of scaled values, as in training"
    run 0 evaluate --checkpoint "${l%%:*}" --data d.sfpack --json -q
    cp out "${l%%:*}.json"
    run 0 predict --checkpoint "${l%%:*}" --data d.sfpack --split validation --with-actual -o "${l%%:*}.csv" -q
    head -1 "${l%%:*}.csv" | grep -qx "id,line,a_pred,a,b_pred,b" || fail "$l: predict's header"
done
# The metric recomputed from predict's forecasts and the file's values,
# scaled as train scaled them (z-score by the training part's statistics,
# which the checkpoint keeps): the model's and persistence's.
python3 - <<'PY' || fail "evaluate's mae or huber scores differ from their definition"
import csv, json, struct
def scaling(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    head = json.loads(b[8:8 + n])
    def f32(name):
        lo, hi = head[name]["data_offsets"]
        return struct.unpack("<%df" % ((hi - lo) // 4), b[8 + n + lo:8 + n + hi])
    return f32("scaling/target_scale"), f32("scaling/target_offset")
def huber(d):
    return 0.5 * d * d if abs(d) <= 0.5 else 0.5 * abs(d) - 0.125
src = list(csv.DictReader(open("d.csv")))
for name, f in (("mae", abs), ("huber", huber)):
    scale, offset = scaling(name + "/latest.safetensors")
    ev = json.load(open(name + ".json"))
    rows = list(csv.DictReader(open(name + ".csv")))
    for j, t in enumerate(("a", "b")):
        s = lambda v: float(v) * scale[j] + offset[j]
        # persistence: the line before the target's (the header is line 1)
        want = {"model": sum(f(s(r[t + "_pred"]) - s(r[t])) for r in rows) / len(rows),
                "persistence": sum(f(s(src[int(r["line"]) - 3][t]) - s(r[t])) for r in rows) / len(rows)}
        got = [p for p in ev["per_target"] if p["name"] == t][0]
        for what, v in want.items():
            assert abs(got[what] - v) <= 1e-4 * max(1, abs(v)), (name, t, what, got[what], v)
        print(name, t, "model", got["model"], "persistence", got["persistence"])
PY
finish
