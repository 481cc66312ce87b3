#!/usr/bin/env bash
# --loss with the covariates and with cross-validation, over several steps
# (--horizon 1-3): a quantile model with --future-features (its head's
# kernel takes the LSTM's units plus steps x future inputs, its width steps
# x targets x quantiles; the future values at the target rows move exactly
# the forecasts whose targets reach a changed flag; predict's quantile
# columns sorted; evaluate's coverage is predict's), with --series-features
# onehot and embedding:D (one series alone predicts as among both), a resume
# refusing another loss or other future features; mae with future features;
# and --folds K with a quantile loss: the summary names the loss, each fold's
# entry of folds.json is evaluate --json of that fold (loss, baselines,
# quantile losses, coverage), the summary's spreads are those of the folds,
# and a resume with another loss is refused. meson sets SEQFEED and SRCDIR.
set -uo pipefail
. "$SRCDIR/tests/lib.sh"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
# Two series of hourly rows (promo_data.py): sales = a daily cycle + 2 x promo, promo a
# random flag known in advance; f3: promo flipped from south's row 200 on.
python3 "$SRCDIR/tests/train/promo_data.py" 300 260 200 || exit 1
for f in f f3 south; do run 0 pack $f.csv -o $f.sfpack --series-column id -q; done
common=(--data f.sfpack --targets sales --model lstm:8,dense --window 8 --batch-size 32 --seed 3 --lr 0.01
        --horizon 1-3 --time-features hour --gpus none)
q=quantile:0.1,0.5,0.9
# A safetensors file's tensor shape.
shape() {
    python3 -c 'import json, struct, sys
b = open(sys.argv[1], "rb").read()
h = json.loads(b[8:8 + struct.unpack("<Q", b[:8])[0]])
print(",".join(map(str, h[sys.argv[2]]["shape"])) if sys.argv[2] in h else "none")' "$1" "$2"
}

# --- A quantile loss with future features: 8 LSTM units + 3 steps x 3 future
# inputs (promo, hour's sine and cosine) into a Dense of 3 steps x 3 quantiles.
run 0 train "${common[@]}" --val-split 0.25 --epochs 3 --future-features promo,hour --loss $q --checkpoint-dir qf
[ "$(meta qf/latest.safetensors loss)" = $q ] || fail "loss: $(meta qf/latest.safetensors loss)"
[ "$(meta qf/latest.safetensors model)" = "lstm:8,dense:9" ] || fail "model: $(meta qf/latest.safetensors model)"
[ "$(meta qf/latest.safetensors future_inputs)" = "0,3,4" ] || fail "future_inputs: $(meta qf/latest.safetensors future_inputs)"
[ "$(shape qf/latest.safetensors dense/kernel)" = "17,9" ] || fail "dense/kernel: $(shape qf/latest.safetensors dense/kernel)"
run 0 predict --checkpoint qf --data f.sfpack --split validation --with-actual -o qf.csv -q
head -1 qf.csv | grep -qx "id,time,line,step,sales_q10,sales_q50,sales_q90,sales" || fail "predict's header: $(head -1 qf.csv)"
run 0 evaluate --checkpoint qf --data f.sfpack --json -q
cp out qf.json
python3 - <<'PY' || fail "evaluate's coverage of the future-features quantile model is not predict's"
import csv, json
rows = list(csv.DictReader(open("qf.csv")))
ev = json.load(open("qf.json"))
assert ev["loss_function"] == "quantile:0.1,0.5,0.9" and ev["steps"] == [1, 3], ev
assert len(rows) == 3 * ev["windows"] and [r["step"] for r in rows[:3]] == ["1", "2", "3"]
q = [[float(r["sales_" + s]) for s in ("q10", "q50", "q90")] for r in rows]
assert all(v[0] <= v[1] <= v[2] for v in q), "quantiles cross"
inside = [v[0] <= float(r["sales"]) <= v[2] for v, r in zip(q, rows)]
assert abs(ev["coverage"] - sum(inside) / len(inside)) < 1e-9, (ev["coverage"], sum(inside) / len(inside))
for k in (1, 2, 3):
    step = [c for c, r in zip(inside, rows) if r["step"] == str(k)]
    got = [p for p in ev["per_step"] if p["step"] == k][0]["coverage"]
    assert abs(got - sum(step) / len(step)) < 1e-9, (k, got)
print("coverage", ev["coverage"], "loss", ev["loss"], "persistence", ev["persistence_baseline"])
PY
# The future values reach the quantile head: promo flipped from south's row
# 200 on moves the forecasts of exactly the windows whose targets reach it.
run 0 predict --checkpoint qf --data f.sfpack -o all.csv -q
run 0 predict --checkpoint qf --data f3.sfpack -o flip.csv -q
python3 - <<'PY' || fail "the future flag did not move exactly the forecasts whose targets reach it"
import csv, datetime
def load(name):
    out = {}
    for r in csv.DictReader(open(name)):
        t = datetime.datetime.fromisoformat(r["time"]) - datetime.timedelta(hours=int(r["step"]))
        out[(r["id"], t, int(r["step"]))] = tuple(r["sales_" + s] for s in ("q10", "q50", "q90"))
    return out
base, flip = load("all.csv"), load("flip.csv")
cut = datetime.datetime(2021, 3, 1) + datetime.timedelta(hours=200)
assert base.keys() == flip.keys()
before = [k for k in base if k[0] == "south" and k[1] < cut]
reach = [k for k in before if k[1] >= cut - datetime.timedelta(hours=3)]
assert len(reach) == 9 and all(base[k] != flip[k] for k in reach), reach
assert all(base[k] == flip[k] for k in before if k not in reach)
assert all(base[k] == flip[k] for k in base if k[0] == "north")
PY
# A resume: another loss or other future features refused, the same goes on.
run 2 train --checkpoint-dir qf --resume --loss mae --epochs 4 -q
expect err "--loss mae differs from the checkpoint's quantile:0.1,0.5,0.9"
run 2 train --checkpoint-dir qf --resume --future-features promo --epochs 4 -q
expect err "--future-features"
run 0 train --checkpoint-dir qf --resume --epochs 4 -q
[ "$(meta qf/latest.safetensors epoch)" = 4 ] || fail "the resumed run did not go on to epoch 4"

# --- With the series too: one-hot (2 series) and an embedding of 3 values.
run 0 train "${common[@]}" --val-split 0.25 --epochs 2 --future-features promo --series-features onehot --loss $q \
    --checkpoint-dir qs
[ "$(shape qs/latest.safetensors dense/kernel)" = "13,9" ] || fail "one-hot: dense/kernel $(shape qs/latest.safetensors dense/kernel)"
run 0 train "${common[@]}" --val-split 0.25 --epochs 2 --series-features embedding:3 --loss $q --checkpoint-dir qe
[ "$(shape qe/latest.safetensors dense/kernel)" = "11,9" ] && [ "$(shape qe/latest.safetensors embedding/embeddings)" = "2,3" ] ||
    fail "embedding: dense/kernel $(shape qe/latest.safetensors dense/kernel), table $(shape qe/latest.safetensors embedding/embeddings)"
for m in qs qe; do
    run 0 predict --checkpoint $m --data f.sfpack -o $m.csv -q
    run 0 predict --checkpoint $m --data south.sfpack -o $m.south.csv -q
    python3 - $m <<'PY' || fail "$m: south alone predicts otherwise than among both"
import csv, sys
m = sys.argv[1]
cols = ("sales_q10", "sales_q50", "sales_q90")
both = [tuple(float(r[c]) for c in cols) for r in csv.DictReader(open(m + ".csv")) if r["id"] == "south"]
alone = [tuple(float(r[c]) for c in cols) for r in csv.DictReader(open(m + ".south.csv"))]
# To float32's last digits: the batch around a window can block its products otherwise.
assert len(both) == len(alone) > 100, (len(both), len(alone))
assert all(abs(a - b) <= 1e-5 * max(1, abs(a)) for u, v in zip(both, alone) for a, b in zip(u, v)), "apart"
assert all(a <= b <= c for a, b, c in both), "quantiles cross"
PY
    run 0 evaluate --checkpoint $m --data f.sfpack
    expect out "^coverage +[0-9.]+ +the share of true values inside \[q10, q90\] \(nominal 0.8\)"
done

# --- A point loss other than MSE with future features.
run 0 train "${common[@]}" --val-split 0.25 --epochs 2 --future-features promo --loss mae --checkpoint-dir mf
[ "$(meta mf/latest.safetensors model)" = "lstm:8,dense:3" ] || fail "mae: model $(meta mf/latest.safetensors model)"
run 0 evaluate --checkpoint mf --data f.sfpack
expect out "^loss +[0-9.]+ +MAE of scaled values, as in training"

# --- Cross-validation with a quantile loss (and future features).
run 0 train "${common[@]}" --epochs 2 --future-features promo --loss $q --folds 3 --checkpoint-dir cv --report cv.html
expect err "^cross-validation: 3 of 3 folds scored.*\(quantile:0.1,0.5,0.9 loss of scaled values, as the loss; baselines scored as every quantile\)"
expect err "^  fold  windows +model +persistence +mean +seasonal +coverage$"
expect err "^ +coverage of \[lowest, highest quantile\]: mean [0-9.]+, std [0-9.e-]+, min [0-9.]+, max [0-9.]+ \(nominal 0.8\)$"
expect err "^ +beats persistence in [0-3] of 3 folds; mean loss (below|not below) persistence's$"
grep -q "quantile:0.1,0.5,0.9 loss of scaled values" cv.html && grep -q "<th>coverage</th>" cv.html ||
    fail "the cross-validation page does not name the loss or lacks the coverage"
for k in 1 2 3; do
    [ "$(meta cv/fold-$k/latest.safetensors loss)" = $q ] || fail "fold $k: loss $(meta cv/fold-$k/latest.safetensors loss)"
    run 0 evaluate --checkpoint cv/fold-$k --data f.sfpack --json -q
    cp out e$k.json
done
python3 - <<'PY' || fail "folds.json does not hold each fold's evaluate --json, or its spreads"
import json, math
cv = json.load(open("cv/folds.json"))
bad = []
def close(a, b):
    return (a is None and b is None) or (a is not None and b is not None and abs(a - b) <= 1e-7 * max(abs(a), abs(b), 1e-30))
assert cv["loss_function"] == "quantile:0.1,0.5,0.9" and abs(cv["nominal_coverage"] - 0.8) < 1e-12, cv
for k, f in enumerate(cv["per_fold"], 1):
    e = json.load(open("e%d.json" % k))
    assert e["loss_function"] == cv["loss_function"]
    for key in ("loss", "mean_baseline", "persistence_baseline", "seasonal_baseline", "coverage"):
        if not close(f[key], e[key]):
            bad.append("fold %d %s: %r, evaluate %r" % (k, key, f[key], e[key]))
    for q in ("q10", "q50", "q90"):
        if not close(f["quantile_loss"][q], e["quantile_loss"][q]):
            bad.append("fold %d quantile_loss %s" % (k, q))
    for ft, et in zip(f["per_target"], e["per_target"]):
        for key in ("model", "persistence", "mean", "seasonal", "coverage"):
            if not close(ft[key], et[key]):
                bad.append("fold %d %s %s: %r, evaluate %r" % (k, ft["name"], key, ft[key], et[key]))
def spread(v):
    m = sum(v) / len(v)
    return {"mean": m, "std": math.sqrt(sum((x - m) ** 2 for x in v) / len(v)), "min": min(v), "max": max(v)}
for key, v in (("loss", [f["loss"] for f in cv["per_fold"]]), ("coverage", [f["coverage"] for f in cv["per_fold"]])):
    got = cv[key]["model"] if key == "loss" else cv[key]
    for s, w in spread(v).items():
        if not close(got[s], w):
            bad.append("%s %s: %r, from the folds %r" % (key, s, got[s], w))
t = cv["per_target"][0]
for s, w in spread([f["per_target"][0]["coverage"] for f in cv["per_fold"]]).items():
    if not close(t["coverage"][s], w):
        bad.append("sales coverage %s" % s)
print("\n".join(bad) or "folds: loss %s, coverage %s" % (cv["loss"]["model"], cv["coverage"]))
raise SystemExit(1 if bad else 0)
PY
run 2 train --checkpoint-dir cv --resume --loss mse -q
expect err "--loss mse differs from the checkpoint's quantile:0.1,0.5,0.9"
# And an MSE cross-validation still says MSE.
run 0 train "${common[@]}" --epochs 1 --folds 2 --checkpoint-dir cvm
expect err "^cross-validation: 2 of 2 folds scored.*\(MSE of scaled values, as the loss\)"
expect err "mean MSE (below|not below) persistence's$"
python3 -c 'import json, sys; c = json.load(open("cvm/folds.json")); sys.exit(c["loss_function"] != "mse" or "coverage" in c)' ||
    fail "an MSE cross-validation's folds.json: $(head -c 300 cvm/folds.json)"
finish
