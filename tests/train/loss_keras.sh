#!/usr/bin/env bash
# The Keras export of a --loss quantile model: its last Dense has steps x
# targets x quantiles units, a Reshape makes them (steps, targets,
# quantiles) (or (targets, quantiles) for one step) and the inverted
# Normalization unscales each target's quantiles (axis [-2, -1]); with
# Keras 3 (SEQFEED_PYTHON names a Python that has it; skipped with 77
# otherwise) load_model predicts from raw data what seqfeed predict writes
# in NAME_q10, NAME_q50, NAME_q90 once sorted (predict sorts them), values
# and changes, and so do seqfeed.model_inputs and seqfeed.forecasts, which
# sorts (libseqfeed: $1). With covariates the export is a functional
# model whose head takes them, its Reshape and Normalization as above: a
# quantile model of 3 steps with b as a future feature and the series'
# one-hot, and one of one step with a series embedding and --target change.
set -uo pipefail
. "$SRCDIR/tests/lib.sh"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
python3 "$SRCDIR/tests/train/walk_data.py" 5 || exit 1
run 0 pack d.csv -o d.sfpack --series-column id -q
run 0 train --data d.sfpack --targets a,b --model lstm:5,dense --window 6 --horizon 2-4 --epochs 1 \
    --batch-size 8 --loss quantile:0.1,0.5,0.9 --checkpoint-dir v -q
run 0 train --data d.sfpack --targets a --model lstm:4,dense --window 5 --epochs 1 --batch-size 8 \
    --target change --norm minmax --loss quantile:0.25,0.75 --checkpoint-dir c -q
run 0 train --data d.sfpack --targets a --future-features b --series-features onehot --model lstm:4,dense \
    --window 6 --horizon 1-3 --epochs 1 --batch-size 8 --loss quantile:0.1,0.5,0.9 --checkpoint-dir fv -q
run 0 train --data d.sfpack --targets a --series-features embedding:2 --model lstm:4,dense:3,dense --window 5 \
    --epochs 1 --batch-size 8 --target change --loss quantile:0.25,0.75 --checkpoint-dir fc -q
for m in v c fv fc; do run 0 export --checkpoint $m/latest.safetensors --format keras -o $m.keras -q; done
python3 - <<'PY' || fail "the .keras config: $(unzip -p v.keras config.json 2>&1)"
import json, zipfile
for name, units, shape, mean in (("v", 18, [3, 2, 3], 2), ("c", 2, [1, 2], 1)):
    cfg = json.loads(zipfile.ZipFile(name + ".keras").read("config.json"))["config"]["layers"]
    assert [l["class_name"] for l in cfg][-3:] == ["Dense", "Reshape", "Normalization"], cfg
    assert cfg[-3]["config"]["units"] == units and cfg[-2]["config"]["target_shape"] == shape, cfg
    norm = cfg[-1]["config"]
    assert norm["axis"] == [-2, -1] and len(norm["mean"]) == mean and len(norm["mean"][0]) == shape[-1], norm
    assert cfg[-1]["build_config"]["input_shape"] == [None] + shape, cfg
# The functional models: the head after the Concatenate, then Reshape and the inverted Normalization.
for name, inputs, head_in, units, shape, norm in (("fv", ["window", "future", "series"], 4 + 3 + 2, 9, [3, 1, 3],
                                                   "normalization_2"),
                                                  ("fc", ["window", "series"], 4 + 2, 2, [1, 2], "normalization_1")):
    cfg = json.loads(zipfile.ZipFile(name + ".keras").read("config.json"))
    assert cfg["class_name"] == "Functional", cfg["class_name"]
    c = cfg["config"]
    assert [i[0] for i in c["input_layers"]] == inputs and c["output_layers"] == [[norm, 0, 0]], c
    layers = {l["name"]: l for l in c["layers"]}
    assert layers["dense"]["build_config"]["input_shape"] == [None, head_in], layers["dense"]
    last = [l for l in c["layers"] if l["class_name"] == "Dense"][-1]
    assert last["config"]["units"] == units and layers["reshape"]["config"]["target_shape"] == shape, c["layers"]
    n = layers[norm]
    assert n["config"]["axis"] == [-2, -1] and len(n["config"]["mean"][0]) == shape[-1], n
    assert n["inbound_nodes"][0]["args"][0]["config"]["keras_history"][0] == "reshape", n
PY
keras_python "${1:-}"
run 0 predict --checkpoint v/latest.safetensors --data d.sfpack -o v.csv -q
run 0 predict --checkpoint c/latest.safetensors --data d.sfpack -o c.csv -q
run 0 predict --checkpoint fv/latest.safetensors --data d.sfpack -o fv.csv -q
run 0 predict --checkpoint fc/latest.safetensors --data d.sfpack -o fc.csv -q
SEQFEED_LIB=$lib PYTHONPATH="$SRCDIR/python" "$py" - <<'PY' || fail "Keras' predictions differ from seqfeed predict's"
import csv, os
import keras, numpy as np
rows = list(csv.DictReader(open("d.csv")))
X = np.array([[float(r["a"]), float(r["b"])] for r in rows], dtype=np.float32)
for name, window, first, steps, targets, qs, change in (
        ("v", 6, 2, 3, ["a", "b"], ["q10", "q50", "q90"], False), ("c", 5, 1, 1, ["a"], ["q25", "q75"], True)):
    model = keras.models.load_model(name + ".keras")
    pred = list(csv.DictReader(open(name + ".csv")))
    if steps > 1:
        assert [int(p["step"]) for p in pred[:steps]] == list(range(first, first + steps))
    # A window's rows: its first step's line (the header is line 1) less the step is its last input row.
    last = [int(p["line"]) - 2 - first for p in pred[::steps]]
    x = np.stack([X[l + 1 - window:l + 1] for l in last])
    y = np.asarray(model.predict(x, verbose=0))
    shape = (len(last), steps, len(targets), len(qs)) if steps > 1 else (len(last), len(targets), len(qs))
    assert y.shape == shape, y.shape
    if change:
        y = y + x[:, -1:, :1]  # the change from the last row's value of a, for every quantile
    y = np.sort(y, axis=-1)  # as predict writes them
    want = np.array([[[float(p[t + "_" + q]) for q in qs] for t in targets] for p in pred]).reshape(shape)
    err = np.max(np.abs(y - want) / np.maximum(1, np.abs(want)))
    print(name, len(last), "windows,", steps, "steps, largest relative difference", err)
    assert err <= 1e-5, err
    if os.environ.get("SEQFEED_LIB"):  # libseqfeed given (meson passes it)
        import seqfeed
        xs, index = seqfeed.model_inputs(name, "d.sfpack")
        assert len(index.quantiles) == len(qs), index.quantiles
        got = seqfeed.forecasts(model.predict(xs, verbose=0), index)  # one row per window and step, as pred
        assert got.shape == (len(pred), len(targets), len(qs)), got.shape
        err = np.max(np.abs(got - want.reshape(got.shape)) / np.maximum(1, np.abs(want.reshape(got.shape))))
        print(name, "model_inputs and forecasts: largest relative difference", err)
        assert err <= 1e-5, err
if os.environ.get("SEQFEED_LIB"):
    import seqfeed
    for name, qs, steps in (("fv", ["q10", "q50", "q90"], 3), ("fc", ["q25", "q75"], 1)):
        model = keras.models.load_model(name + ".keras")
        xs, index = seqfeed.model_inputs(name, "d.sfpack")
        assert isinstance(xs, dict) and len(index.quantiles) == len(qs), (type(xs), index.quantiles)
        got = seqfeed.forecasts(model.predict(xs, verbose=0), index)
        pred = list(csv.DictReader(open(name + ".csv")))
        want = np.array([[float(p["a_" + q]) for q in qs] for p in pred]).reshape(len(pred), 1, len(qs))
        assert got.shape == want.shape, (got.shape, want.shape)
        err = np.max(np.abs(got - want) / np.maximum(1, np.abs(want)))
        print(name, "covariates, model_inputs and forecasts: largest relative difference", err)
        assert err <= 1e-5, err
PY
finish
