#!/usr/bin/env bash
# The Keras export of a --horizon A-B model: its last Dense has steps x
# targets units and a Reshape makes them (steps, targets) before the
# inverted Normalization; with Keras 3 (SEQFEED_PYTHON names a Python that
# has it; skipped with 77 otherwise) load_model predicts from raw data what
# seqfeed predict writes for every window and step, values and changes,
# and so do seqfeed.model_inputs and seqfeed.forecasts (libseqfeed: $1).
set -uo pipefail
. "$SRCDIR/tests/lib.sh"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
python3 "$SRCDIR/tests/train/walk_data.py" 4 || exit 1
run 0 pack d.csv -o d.sfpack --series-column id -q
run 0 train --data d.sfpack --targets a,b --model lstm:5,dense:3,dense --window 6 --horizon 2-4 --epochs 1 \
    --batch-size 8 --checkpoint-dir v -q
run 0 train --data d.sfpack --targets a --model lstm:4,dense --window 5 --horizon 1-2 --epochs 1 --batch-size 8 \
    --target change --norm minmax --checkpoint-dir c -q
run 0 export --checkpoint v/latest.safetensors --format keras -o v.keras
expect err "dense:3,dense:6, window 6"
run 0 export --checkpoint c/latest.safetensors --format keras -o c.keras -q
python3 - <<'PY' || fail "the .keras config: $(unzip -p v.keras config.json 2>&1)"
import json, zipfile
cfg = json.loads(zipfile.ZipFile("v.keras").read("config.json"))["config"]["layers"]
assert [l["class_name"] for l in cfg][-3:] == ["Dense", "Reshape", "Normalization"], cfg
assert cfg[-3]["config"]["units"] == 6 and cfg[-2]["config"]["target_shape"] == [3, 2], cfg
assert len(cfg[-1]["config"]["mean"]) == 2 and cfg[-1]["build_config"]["input_shape"] == [None, 3, 2], cfg
PY
keras_python "${1:-}"
run 0 predict --checkpoint v/latest.safetensors --data d.sfpack -o v.csv -q
run 0 predict --checkpoint c/latest.safetensors --data d.sfpack -o c.csv -q
SEQFEED_LIB=$lib PYTHONPATH="$SRCDIR/python" "$py" - <<'PY' || fail "Keras' predictions differ from seqfeed predict's"
import csv, os
import keras, numpy as np
rows = list(csv.DictReader(open("d.csv")))
X = np.array([[float(r["a"]), float(r["b"])] for r in rows], dtype=np.float32)
for name, window, first, steps, targets, change in (("v", 6, 2, 3, ["a", "b"], False), ("c", 5, 1, 2, ["a"], True)):
    model = keras.models.load_model(name + ".keras")
    pred = list(csv.DictReader(open(name + ".csv")))
    assert len(pred) % steps == 0 and [int(p["step"]) for p in pred[:steps]] == list(range(first, first + steps))
    # A window's rows: its first step's line (the header is line 1) less the step is its last input row.
    last = [int(p["line"]) - 2 - first for p in pred[::steps]]
    x = np.stack([X[l + 1 - window:l + 1] for l in last])
    y = np.asarray(model.predict(x, verbose=0))
    assert y.shape == (len(last), steps, len(targets)), y.shape
    if change:
        y = y + x[:, -1:, :1]  # the change from the last row's value of a, for every step
    want = np.array([[float(p[t + "_pred"]) for t in targets] for p in pred]).reshape(len(last), steps, len(targets))
    err = np.max(np.abs(y - want) / np.maximum(1, np.abs(want)))
    print(name, len(last), "windows,", steps, "steps, largest relative difference", err)
    assert err <= 1e-5, err
    # The same through the package: model_inputs' x and forecasts' change added back to every step.
    if os.environ.get("SEQFEED_LIB"):  # libseqfeed given (meson passes it)
        import seqfeed
        xs, index = seqfeed.model_inputs(name, "d.sfpack")
        got = seqfeed.forecasts(model.predict(xs, verbose=0), index)  # one row per window and step, as pred
        assert got.shape == (len(pred), len(targets)), got.shape
        assert [(int(l), int(k)) for l, k in zip(index["line"], index["step"])] == \
            [(int(p["line"]), int(p["step"])) for p in pred], name
        err = np.max(np.abs(got - want.reshape(got.shape)) / np.maximum(1, np.abs(want.reshape(got.shape))))
        print(name, "model_inputs and forecasts: largest relative difference", err)
        assert err <= 1e-5, err
PY
finish
