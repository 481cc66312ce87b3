#!/usr/bin/env bash
# seqfeed export --format keras: the .keras file is a zip of metadata.json,
# config.json and model.weights.h5 whose tensors are the checkpoint's; with
# Keras 3 installed (SEQFEED_PYTHON names a Python that has it; skipped
# with 77 otherwise) keras.models.load_model opens it with no custom
# objects and predicts from raw data what seqfeed predict does, also for a
# categorical input, for --target change and for GRUs (Keras 3's GRU,
# reset_after) beside an LSTM.
set -uo pipefail
. "$SRCDIR/tests/lib.sh"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
if ! "$SEQFEED" export --help | grep -q keras-weights; then echo "no export" >&2; exit 1; fi
python3 - <<'PY'
import random
random.seed(2)
with open("d.csv", "w") as f:
    f.write("id,a,sky,b\n")
    for s in ("x", "y"):
        a = 10.0
        for i in range(160):
            a += random.gauss(0, 1)
            f.write("%s,%.3f,%s,%.3f\n" % (s, a, random.choice(["sun", "rain", "fog"]), 100 + 20 * random.random()))
PY
run 0 pack d.csv -o d.sfpack --series-column id --categorical sky -q
run 0 train --data d.sfpack --targets a,b --model lstm:5,dropout:0.1,lstm:4,dense:3,dense --window 6 --epochs 1 \
    --batch-size 8 --checkpoint-dir v -q
run 0 train --data d.sfpack --targets a --model lstm:4,dense --window 5 --epochs 1 --batch-size 8 --target change \
    --norm minmax --checkpoint-dir c -q
run 0 train --data d.sfpack --targets a,b --model gru:5,dropout:0.1,lstm:4,gru:3,dense --window 6 --epochs 1 \
    --batch-size 8 --checkpoint-dir g -q
run 0 export --checkpoint v/latest.safetensors --format keras -o v.keras
expect err "exported v/latest.safetensors \(lstm:5,dropout:0.1,lstm:4,dense:3,dense:2, window 6, 5 inputs: a,sky,b\)"
run 0 export --checkpoint c/latest.safetensors --format keras -o c.keras -q
run 0 export --checkpoint g/latest.safetensors --format keras -o g.keras
expect err "exported g/latest.safetensors \(gru:5,dropout:0.1,lstm:4,gru:3,dense:2, window 6"
run 0 export --checkpoint v/latest.safetensors --format keras-weights -o v.weights.h5 -q
run 2 export --checkpoint v/latest.safetensors -o x.keras
expect err "missing --format keras\|keras-weights"
run 2 export --checkpoint v/latest.safetensors --format keras -o v/latest.safetensors
expect err "is the same file as --checkpoint"
run 2 export --checkpoint v/latest.safetensors --format keras -o m.h5
expect err "Keras loads --format keras only from a file named \*.keras"
run 2 export --checkpoint v/latest.safetensors --format keras-weights -o w.h5
expect err "only from a file named \*.weights.h5"
run 2 export --checkpoint d.csv --format keras -o x.keras
expect err "d.csv: a text file \(a CSV\?\), not a checkpoint"
[ -e x.keras ] && fail "a failed export left x.keras"
# The container, with the standard library alone: the three files, the
# layers in order, and the weights file an HDF5 file.
python3 - <<'PY' || fail "the .keras container: $(unzip -l v.keras 2>&1)"
import json, zipfile
z = zipfile.ZipFile("v.keras")
assert z.namelist() == ["metadata.json", "config.json", "model.weights.h5"], z.namelist()
cfg = json.loads(z.read("config.json"))
names = [(l["class_name"], l["config"]["name"]) for l in cfg["config"]["layers"]]
assert names == [("InputLayer", "input_layer"), ("Normalization", "normalization"), ("LSTM", "lstm"),
                 ("Dropout", "dropout"), ("LSTM", "lstm_1"), ("Dense", "dense"), ("Dense", "dense_1"),
                 ("Normalization", "normalization_1")], names
assert cfg["config"]["layers"][0]["config"]["batch_shape"] == [None, 6, 5]
assert z.read("model.weights.h5")[:8] == b"\x89HDF\r\n\x1a\n"
assert open("v.weights.h5", "rb").read() == z.read("model.weights.h5")
g = json.loads(zipfile.ZipFile("g.keras").read("config.json"))["config"]["layers"]
assert [(l["class_name"], l["config"]["name"]) for l in g[2:7]] == [("GRU", "gru"), ("Dropout", "dropout"),
    ("LSTM", "lstm"), ("GRU", "gru_1"), ("Dense", "dense")], g
assert g[2]["config"]["reset_after"] is True and g[5]["config"]["return_sequences"] is False, g
PY
py=${SEQFEED_PYTHON:-python3}
if ! KERAS_BACKEND=${KERAS_BACKEND:-jax} "$py" -c "import keras" 2>/dev/null &&
   ! "$py" -c "import keras" 2>/dev/null; then
    finish
    echo "Keras 3 is not installed (SEQFEED_PYTHON=$py): load_model not checked" >&2
    [ "$fails" -eq 0 ] && exit 77
fi
"$py" -c "import keras" 2>/dev/null || export KERAS_BACKEND=${KERAS_BACKEND:-jax}
run 0 predict --checkpoint v/latest.safetensors --data d.sfpack -o v.csv -q
run 0 predict --checkpoint c/latest.safetensors --data d.sfpack -o c.csv -q
run 0 predict --checkpoint g/latest.safetensors --data d.sfpack -o g.csv -q
"$py" - <<'PY' || fail "Keras' predictions differ from seqfeed predict's"
import csv
import keras, numpy as np
rows = list(csv.DictReader(open("d.csv")))
sky = ["sun", "rain", "fog"]  # codes in order of first appearance, as pack gives them
def inputs(r):
    first = [v for v in dict.fromkeys(x["sky"] for x in rows)]
    return [float(r["a"])] + [1.0 if r["sky"] == v else 0.0 for v in first] + [float(r["b"])]
X = np.array([inputs(r) for r in rows], dtype=np.float32)
for name, window, targets, change in (("v", 6, ["a", "b"], False), ("c", 5, ["a"], True), ("g", 6, ["a", "b"], False)):
    model = keras.models.load_model(name + ".keras")
    pred = list(csv.DictReader(open(name + ".csv")))
    lines = [int(p["line"]) for p in pred]  # the predicted row: the header is line 1
    x = np.stack([X[l - 2 - window:l - 2] for l in lines])
    y = model.predict(x, verbose=0)
    if change:
        y = y + x[:, -1, :1]  # the change from the last row's value of a, the first input
    want = np.array([[float(p[t + "_pred"]) for t in targets] for p in pred])
    err = np.max(np.abs(y - want) / np.maximum(1, np.abs(want)))
    print(name, len(pred), "windows, largest relative difference", err)
    assert err <= 1e-5, err
PY
finish
