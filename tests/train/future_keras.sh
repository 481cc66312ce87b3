#!/usr/bin/env bash
# The Keras export of a --future-features model: a functional model of two
# named inputs, window (window, inputs) and future (steps, future inputs),
# each normalized, future flattened and concatenated before the first Dense;
# with --series-features onehot a third, series (one-hot), concatenated
# after it; with embedding:D the one-hot through a bias-free Dense, the
# table (Keras' Embedding of the series' index).
# With Keras 3 (SEQFEED_PYTHON names a Python that has it; skipped with 77
# otherwise) load_model predicts, from the CSV's raw rows, what seqfeed
# predict writes for every window and step; and so does the package
# (seqfeed.model_inputs gives both inputs, with a time feature and a
# categorical column among the future features; libseqfeed: $1).
set -uo pipefail
. "$SRCDIR/tests/lib.sh"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
python3 - <<'PY'
import datetime, math, random
random.seed(5)
with open("d.csv", "w") as f:
    f.write("id,time,promo,weather,sales\n")
    for s in ("x", "y"):
        for i in range(90):
            t = datetime.datetime(2021, 3, 1) + datetime.timedelta(hours=i)
            p = int(random.random() < 0.3)
            w = random.choice(["sun", "rain"])
            f.write("%s,%s,%d,%s,%.3f\n" % (s, t.isoformat(), p, w, 20 + 3 * p + math.sin(i / 4) + random.random()))
PY
run 0 pack d.csv -o d.sfpack --series-column id --categorical weather -q
run 0 train --data d.sfpack --features promo,sales --targets sales --future-features promo --model lstm:5,dense:4,dense \
    --window 6 --horizon 2-4 --epochs 1 --batch-size 8 --checkpoint-dir v -q
run 0 train --data d.sfpack --targets sales --time-features hour --future-features weather,hour,promo \
    --series-features onehot --model lstm:4,dropout:0.1,dense --window 5 --horizon 1-2 --epochs 1 --batch-size 8 \
    --target change --checkpoint-dir c -q
# Only series features: a functional model of window and series.
run 0 train --data d.sfpack --targets sales --series-features onehot --model lstm:4,dense --window 5 --epochs 1 \
    --batch-size 8 --checkpoint-dir s -q
# A learned embedding: a bias-free Dense on the one-hot, ahead of the model's two Dense layers.
run 0 train --data d.sfpack --targets sales --future-features promo --series-features embedding:3 \
    --model lstm:4,dense:5,dense --window 5 --epochs 1 --batch-size 8 --checkpoint-dir e -q
run 0 export --checkpoint v/latest.safetensors --format keras -o v.keras
expect err "future: at every target step promo"
run 0 export --checkpoint c/latest.safetensors --format keras -o c.keras -q
run 0 export --checkpoint s/latest.safetensors --format keras -o s.keras -q
run 0 export --checkpoint e/latest.safetensors --format keras -o e.keras -q
python3 - <<'PY' || fail "the .keras config: $(unzip -p v.keras config.json 2>&1)"
import json, zipfile
cfg = json.loads(zipfile.ZipFile("v.keras").read("config.json"))
assert cfg["class_name"] == "Functional", cfg["class_name"]
c = cfg["config"]
assert c["input_layers"] == [["window", 0, 0], ["future", 0, 0]], c["input_layers"]
layers = {l["name"]: l for l in c["layers"]}
assert layers["window"]["config"]["batch_shape"] == [None, 6, 2] and layers["future"]["config"]["batch_shape"] == [None, 3, 1]
# the head's kernel: the LSTM's 5 outputs and the 3 steps' promo
assert layers["dense"]["build_config"]["input_shape"] == [None, 8], layers["dense"]
assert [h["config"]["keras_history"][0] for h in layers["concatenate"]["inbound_nodes"][0]["args"][0]] == ["lstm", "flatten"]
PY
keras_python "${1:-}"
run 0 predict --checkpoint v/latest.safetensors --data d.sfpack -o v.csv -q
run 0 predict --checkpoint c/latest.safetensors --data d.sfpack -o c.csv -q
run 0 predict --checkpoint s/latest.safetensors --data d.sfpack -o s.csv -q
run 0 predict --checkpoint e/latest.safetensors --data d.sfpack -o e.csv -q
SEQFEED_LIB=$lib PYTHONPATH="$SRCDIR/python" "$py" - <<'PY' || fail "Keras' predictions differ from seqfeed predict's"
import csv, os
import keras, numpy as np
rows = list(csv.DictReader(open("d.csv")))
X = np.array([[float(r["promo"]), float(r["sales"])] for r in rows], dtype=np.float32)
model = keras.models.load_model("v.keras")
pred = list(csv.DictReader(open("v.csv")))
window, first, steps = 6, 2, 3
# A window's rows: its first step's line (the header is line 1) less the step is its last input row.
last = [int(p["line"]) - 2 - first for p in pred[::steps]]
x = np.stack([X[l + 1 - window:l + 1] for l in last])
future = np.stack([X[l + first:l + first + steps, :1] for l in last])  # promo at each target row
y = np.asarray(model.predict({"window": x, "future": future}, verbose=0))
want = np.array([float(p["sales_pred"]) for p in pred]).reshape(len(last), steps, 1)
err = np.max(np.abs(y - want) / np.maximum(1, np.abs(want)))
print("v: %d windows, %d steps, raw rows: largest relative difference %.3g" % (len(last), steps, err))
assert err <= 1e-5, err
if os.environ.get("SEQFEED_LIB"):  # libseqfeed given (meson passes it)
    import seqfeed
    for name, steps in (("v", 3), ("c", 2), ("s", 1), ("e", 1)):
        model = keras.models.load_model(name + ".keras")
        xs, index = seqfeed.model_inputs(name, "d.sfpack")
        if name == "v":
            assert np.array_equal(xs["window"], x) and np.array_equal(xs["future"], future)
        elif name == "c":
            # in the inputs' order whatever --future-features' order
            assert index.future[0] == "promo" and sorted(index.future[1:3]) == ["weather=rain", "weather=sun"] and \
                index.future[3:] == ["hour_sin", "hour_cos"], index.future
            assert xs["future"].shape[1:] == (2, 5), xs["future"].shape
        elif name == "s":
            assert set(xs) == {"window", "series"} and index.future == [], (xs.keys(), index.future)
        else:
            assert model.get_layer("embedding").get_weights()[0].shape == (2, 3)
        if name != "v":  # the series one-hot, x first, by name
            assert index.series_inputs == ["x", "y"], index.series_inputs
            series = index["series"][::len(index.steps)]  # each window's: its first step's row's
            want = np.stack([series == "x", series == "y"], axis=1).astype(np.float32)
            assert np.array_equal(xs["series"], want)
        got = seqfeed.forecasts(model.predict(xs, verbose=0), index)
        want = np.array([[float(p["sales_pred"])] for p in csv.DictReader(open(name + ".csv"))])
        assert got.shape == want.shape, (got.shape, want.shape)  # one row per window and step, as predict's
        err = np.max(np.abs(got - want) / np.maximum(1, np.abs(want)))
        print(name, "model_inputs and forecasts: largest relative difference %.3g" % err)
        assert err <= 1e-5, err
PY
finish
