#!/usr/bin/env bash
# seqfeed.model_inputs and seqfeed.forecasts: the exported Keras model's
# inputs for the windows seqfeed predict predicts, on a pack of two CSV
# files, three series of different lengths, a categorical column, an ISO
# time column across a leap day with hour, weekday and yearday features,
# and a model trained with --target change.
#   numpy: x equals the inputs a Keras user builds by hand from the CSVs
#          (the one-hot order of the checkpoint, docs/TRAINING.md's time
#          features' formula, windows cut per series, the validation split
#          as docs/TRAINING.md states it); the index's series, time, file
#          and line equal predict's (and --split's) rows; base is the
#          window's last value; bad arguments are refused by name.
#   steps: models of --horizon 1-3 (change), 2-4 (quantiles) and 1-3 with a
#          future feature: the index has predict's rows, one per window and
#          step (time, file, line, step); checked first by ctypes alone
#          (without numpy), then by numpy, and in keras mode every value of
#          forecasts and of keras_predict.py against predict's CSV.
#   keras: keras.models.load_model of the export, fed model_inputs' x,
#          through forecasts equals seqfeed predict's CSV (all and the
#          validation split) within 1e-5 relative, and so does
#          docs/examples/keras_predict.py. SEQFEED_PYTHON names a Python
#          with Keras 3 (and torch, jax or tensorflow); 77 without one.
set -uo pipefail
. "$SRCDIR/tests/lib.sh"
LIBSEQFEED=${1:?libseqfeed.so} MODE=${2:?numpy or keras}
if [ "$MODE" = keras ]; then
    py=${SEQFEED_PYTHON:-python3}
    backend=""  # KERAS_BACKEND when set, else Keras' default (tensorflow), else one that is installed
    candidates=("" torch jax)
    [ -z "${KERAS_BACKEND:-}" ] || candidates=("$KERAS_BACKEND")
    for b in "${candidates[@]}"; do
        if KERAS_BACKEND=$b "$py" -c "import keras, numpy" 2>/dev/null; then backend=${b:-default}; break; fi
    done
    [ -n "$backend" ] || { echo "no Keras 3 with a backend at SEQFEED_PYTHON=$py: the export not checked" >&2; exit 77; }
    [ "$backend" = default ] || export KERAS_BACKEND=$backend
    case $(ldd "$LIBSEQFEED" | grep -o 'lib[at]san' | head -1) in
    lib*) echo "a sanitized build: Keras is checked in the plain one" >&2; exit 77 ;;
    esac
    pyrun() { "$py" "$@"; }
    export SEQFEED_LIB=$LIBSEQFEED PYTHONPATH=$SRCDIR/python OMP_NUM_THREADS=1
else
    pyrun() { python3 "$@"; }  # the checks of ctypes alone first; env.sh's Python with numpy after them
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
pyrun - <<'PY' || exit 1
import datetime, random
random.seed(3)
t0 = datetime.datetime(2024, 2, 27, 5, 0)  # a leap year's February 29 among the rows
for name, sites in (("north.csv", (("n1", 70), ("n2", 45))), ("south.csv", (("s1", 60),))):
    with open(name, "w") as f:
        f.write("site,time,temp,sky,wind\n")
        for s, n in sites:
            a = 15.0 + 5 * random.random()
            for i in range(n):
                a += random.gauss(0, 0.5)
                t = t0 + datetime.timedelta(hours=5 * i + random.choice([0, 1]))
                f.write("%s,%s,%.3f,%s,%.2f\n" % (s, t.strftime("%Y-%m-%dT%H:%M"), a,
                                                  random.choice(["sun", "rain", "fog"]), 3 + 2 * random.random()))
PY
run 0 pack north.csv south.csv -o w.sfpack --series-column site --categorical sky --chunk-rows 16 -q
run 0 train --data w.sfpack --targets temp,wind --model lstm:6,dense:4,dense --window 8 --epochs 1 --batch-size 8 \
    --target change --time-features hour,weekday,yearday --val-split 0.25 --checkpoint-dir run -q
run 0 predict --checkpoint run --data w.sfpack -o all.csv -q
run 0 predict --checkpoint run --data w.sfpack --split validation -o validation.csv -q
run 0 predict --checkpoint run --data w.sfpack --split train -o train.csv -q
# Three steps ahead (each its own row of predict's): changes, quantiles, and a future feature.
run 0 train --data w.sfpack --targets temp,wind --model lstm:5,dense --window 6 --horizon 1-3 --epochs 1 \
    --batch-size 8 --target change --time-features hour --val-split 0.25 --checkpoint-dir h -q
run 0 train --data w.sfpack --targets temp --model lstm:4,dense --window 5 --horizon 2-4 --epochs 1 --batch-size 8 \
    --loss quantile:0.1,0.5,0.9 --checkpoint-dir hq -q
run 0 train --data w.sfpack --features temp,wind --targets temp --future-features wind --model lstm:4,dense \
    --window 5 --horizon 1-3 --epochs 1 --batch-size 8 --checkpoint-dir hf -q
for m in h hq hf; do run 0 predict --checkpoint $m --data w.sfpack -o $m.csv -q; done
run 0 predict --checkpoint h --data w.sfpack --split validation -o h-validation.csv -q

if [ "$MODE" = numpy ]; then
    # Without numpy (ctypes alone, libseqfeed's C API): each step's row, time, line and file are
    # predict's rows, in its order.
    case $(ldd "$LIBSEQFEED" | grep -o 'lib[at]san' | head -1) in
    lib*) ;;  # a sanitized libseqfeed needs env.sh's preload: the numpy checks below read the same rows
    *) SEQFEED_LIB=$LIBSEQFEED python3 - <<'PY' || fail "sf_api_inputs_read's rows of each step differ from predict's"
import csv, ctypes, json, os
lib = ctypes.CDLL(os.environ["SEQFEED_LIB"])
vp = ctypes.c_void_p
class Err(ctypes.Structure):  # sf_err: a code and a message
    _fields_ = [("code", ctypes.c_int), ("msg", ctypes.c_char * 1024)]
class Out(ctypes.Structure):
    _fields_ = [("x", vp), ("base", vp), ("series", vp), ("row", vp), ("time", vp), ("line", vp),
                ("source", vp), ("windows", ctypes.c_uint64), ("future", vp), ("onehot", vp)]
lib.sf_api_inputs_open.argtypes = [ctypes.POINTER(vp), ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                   ctypes.POINTER(Err)]
lib.sf_api_inputs_describe.argtypes, lib.sf_api_inputs_describe.restype = [vp], vp
lib.sf_api_inputs_read.argtypes = [vp, ctypes.POINTER(Out), ctypes.POINTER(Err)]
lib.sf_api_inputs_close.argtypes, lib.sf_api_free.argtypes = [vp], [vp]
for name, first, steps in (("h", 1, 3), ("hq", 2, 3), ("hf", 1, 3)):
    h, err = vp(), Err()
    assert lib.sf_api_inputs_open(ctypes.byref(h), name.encode(), b"w.sfpack", None, ctypes.byref(err)) == 0, err.msg
    p = lib.sf_api_inputs_describe(h)
    info = json.loads(ctypes.string_at(p).decode())
    lib.sf_api_free(p)
    assert (info["first_step"], info["steps"]) == (first, steps), info
    n, sources = info["windows"], info["sources"]
    x = (ctypes.c_float * (n * info["window"] * len(info["inputs"])))()
    future = (ctypes.c_float * (n * steps * len(info["future"]) + 1))()
    base = (ctypes.c_float * (n * len(info["targets"])))()
    series, row = (ctypes.c_uint64 * n)(), (ctypes.c_uint64 * (n * steps))()
    time, line, source = (ctypes.c_int64 * (n * steps))(), (ctypes.c_int64 * (n * steps))(), (ctypes.c_uint32 * (n * steps))()
    out = Out(x=ctypes.addressof(x), base=ctypes.addressof(base), series=ctypes.addressof(series),
              row=ctypes.addressof(row), time=ctypes.addressof(time), line=ctypes.addressof(line),
              source=ctypes.addressof(source), windows=n, future=ctypes.addressof(future))
    assert lib.sf_api_inputs_read(h, ctypes.byref(out), ctypes.byref(err)) == 0, err.msg
    lib.sf_api_inputs_close(h)
    rows = list(csv.DictReader(open(name + ".csv")))
    assert len(rows) == n * steps, (name, len(rows), n, steps)
    got = [(sources[source[r]], line[r], first + r % steps) for r in range(n * steps)]
    assert got == [(p["file"], int(p["line"]), int(p["step"])) for p in rows], (name, got[:4], rows[:4])
    # rows of the .sfpack are consecutive within a window: a step's row is the window's first step's plus it
    assert all(row[r] == row[r - r % steps] + r % steps for r in range(n * steps)), name
    print(name, n, "windows x", steps, "steps: each step's file and line as predict's")
PY
    esac
    [ "$fails" -eq 0 ] || finish
    . "$SRCDIR/tests/python/env.sh"
    # A model of values (no change) on a pack of one file: no file in the index, base 0.
    run 0 pack south.csv -o s.sfpack --series-column site --categorical sky -q
    run 0 train --data s.sfpack --targets wind --model lstm:3,dense --window 4 --epochs 1 --batch-size 8 \
        --checkpoint-dir one -q
    run 0 pack north.csv -o nt.sfpack --series-column site --categorical sky --drop-columns time -q
    # A sky the model never saw (snow), and a series too short for the train part's windows.
    pyrun - <<'PY' || exit 1
import csv
rows = list(csv.DictReader(open("south.csv")))
rows[20]["sky"] = "snow"
with open("snow.csv", "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0]))
    w.writeheader()
    w.writerows(rows)
with open("short.csv", "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0]))
    w.writeheader()
    w.writerows(rows[:10])
PY
    run 0 pack snow.csv -o snow.sfpack --series-column site --categorical sky -q
    run 0 pack short.csv -o short.sfpack --series-column site --categorical sky -q
    # Inputs of terabytes: a checkpoint of windows of 500000 rows on a file of a million.
    run 0 synth -o big.sfpack --rows 1000000 --feature-count 3 -q
    run 0 train --data big.sfpack --model lstm:2,dense --window 4 --epochs 1 --batch-size 8 --max-steps 1 \
        --checkpoint-dir b -q
    edmeta b/latest.safetensors window=500000,1,1,1
    pyrun - <<'PY' || fail "model_inputs differs from the inputs built by hand, or from predict's windows"
import csv
import numpy as np
import seqfeed

# ---- what a Keras user wrote by hand before model_inputs (the closing note counts these lines) ----
def by_hand(csv_files, checkpoint, split=None):
    _, meta = seqfeed.load_checkpoint(checkpoint)
    feats, targets = meta["features"].split(","), meta["targets"].split(",")
    times = [t for t in meta["time_features"].split(",") if t]
    cats = {g.split(",")[0]: g.split(",")[1:] for g in next(csv.reader([meta["categories"]]))}  # the checkpoint's order
    window, fraction = int(meta["window"].split(",")[0]), float(meta["val_split"])
    series = {}  # each series' rows, in order of first appearance over the files
    for path in csv_files:
        for line, r in enumerate(csv.DictReader(open(path)), start=2):
            series.setdefault(r["site"], []).append((r, path, line))
    def inputs(r):  # numeric features, one-hot categories, then sin and cos of each time feature
        v = [x for c in feats for x in ([float(r[c] == k) for k in cats[c]] if c in cats else [float(r[c])])]
        us = np.datetime64(r["time"], "us").astype(np.int64)
        day, f = us // 86400_000000, (us % 86400_000000) / 86400e6
        year = np.datetime64(r["time"], "Y")
        jan1, next_jan1 = (year.astype("datetime64[D]").astype(np.int64) for year in (year, year + 1))
        phase = {"hour": f, "weekday": ((day + 3) % 7 + f) / 7, "yearday": (day - jan1 + f) / (next_jan1 - jan1)}
        return v + [g(2 * np.pi * phase[t]) for t in times for g in (np.sin, np.cos)]
    x, last, index = [], [], []
    last_of = [sum(len(cats.get(c, [c])) for c in feats[:feats.index(t)]) for t in targets]
    for name, rows in series.items():
        a = np.array([inputs(r) for r, _, _ in rows], dtype=np.float32)
        train_rows = len(rows) - int(len(rows) * fraction)
        for target in range(window, len(rows)):  # horizon 1: the row after the window
            if (split == "train" and target >= train_rows) or (split == "validation" and target < train_rows):
                continue
            x.append(a[target - window:target])
            last.append(a[target - 1, last_of])  # --target change: the model's output is added to these
            index.append((name, rows[target][0]["time"], rows[target][1], rows[target][2]))
    return np.array(x), np.array(last), index
# ---- end of what a Keras user wrote by hand ----

for split in (None, "train", "validation"):
    x, index = seqfeed.model_inputs("run", "w.sfpack", split=split)
    want_x, want_last, want_index = by_hand(["north.csv", "south.csv"], "run/best.safetensors", split)
    assert x.shape == want_x.shape and x.dtype == np.float32, (split, x.shape, want_x.shape)
    err = np.max(np.abs(x - want_x))
    assert err <= 1e-6, (split, err, np.argwhere(np.abs(x - want_x) > 1e-6)[:5])
    assert np.array_equal(index["base"], want_last), split
    assert np.array_equal(seqfeed.forecasts(np.zeros_like(want_last), index), want_last), split  # persistence
    got = [(s, str(t)[:16], f, int(l)) for s, t, f, l in zip(index["series"], index["time"], index["file"],
                                                            index["line"])]
    assert got == want_index, (split, got[:3], want_index[:3])
    rows = list(csv.DictReader(open("%s.csv" % (split or "all"))))
    assert [(r["site"], r["time"], r["file"], int(r["line"])) for r in rows] == got, split
    assert index.targets == ["temp", "wind"] and index.target_change, (index.targets, index.target_change)
    assert index.inputs[:5] == ["temp", "sky=fog", "sky=rain", "sky=sun", "wind"], index.inputs
    assert index.inputs[5:] == ["hour_sin", "hour_cos", "weekday_sin", "weekday_cos", "yearday_sin", "yearday_cos"]
    print(split, len(x), "windows: as by hand, largest difference", err)
# the run's directory is its best checkpoint; a file name gives the same
x1, i1 = seqfeed.model_inputs("run", "w.sfpack")
x2, i2 = seqfeed.model_inputs("run/best.safetensors", "w.sfpack")
assert np.array_equal(x1, x2) and i1.checkpoint == "run/best.safetensors", i1.checkpoint
# A model of values on a pack of one file: no file column, base 0, rows as predict numbers them.
x, index = seqfeed.model_inputs("one", "s.sfpack")
assert "file" not in index and not index.target_change and not index["base"].any(), sorted(index)
assert x.shape == (60 - 4, 4, 5) and list(index["line"]) == list(range(6, 62)), (x.shape, index["line"][:3])
want_x, _, _ = by_hand(["south.csv"], "one/latest.safetensors")
assert np.max(np.abs(x - want_x)) <= 1e-6

# Bad arguments, each named.
def refused(exc, text, f, *a, **k):
    try:
        f(*a, **k)
    except exc as e:
        assert text in str(e), (text, str(e))
        return
    raise AssertionError("%s(%s) was not refused" % (f.__name__, a))
refused(ValueError, "split (--split) must be None (every window)", seqfeed.model_inputs, "run", "w.sfpack", split="all")
refused(ValueError, "split (--split)", seqfeed.model_inputs, "run", "w.sfpack", split=1)
import os
os.mkdir("empty")
refused(seqfeed.SeqfeedError, "checkpoint empty is a directory without best.safetensors or latest.safetensors",
        seqfeed.model_inputs, "empty", "w.sfpack")
refused(seqfeed.SeqfeedError, "north.csv", seqfeed.model_inputs, "run", "north.csv")
refused(seqfeed.SeqfeedError, "time features hour,weekday,yearday need times", seqfeed.model_inputs, "run", "nt.sfpack")
x, index = seqfeed.model_inputs("run", "w.sfpack", split="validation")
refused(ValueError, "y must be (windows, targets) = (%d, 2)" % len(x), seqfeed.forecasts, np.zeros((len(x), 1)), index)
refused(TypeError, "index must be the WindowIndex", seqfeed.forecasts, np.zeros((len(x), 2)), dict(index))
refused(seqfeed.SeqfeedError, "big.sfpack: the inputs of its 500000 windows would take 3000.0 GB, more than the",
        seqfeed.model_inputs, "b", "big.sfpack")
# A value the training data lacked: noted as predict notes it, 0 in every input of the column.
import warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    xs, _ = seqfeed.model_inputs("run", "snow.sfpack")
assert [str(w.message) for w in caught] == ['snow.sfpack: 1 value(s) of categorical column "sky" are not in the '
                                            'training data: their rows get 0 for every input of the column'], caught
assert not xs[13, 7, 1:4].any() and not xs[14, 6, 1:4].any() and xs[12, 7, 1:4].sum() == 1, xs[12:15, :, 1:4]  # row 20
# No window in the train part of 10 rows (8 of them training rows; a window spans 9): the hint is Python's.
refused(seqfeed.SeqfeedError, "no window fits in the train part (the first 75% of each series' rows, the longest 8 "
        "rows; the checkpoint's windows span 9) (hint: split NULL or \"all\"; in Python split=None)",
        seqfeed.model_inputs, "run", "short.sfpack", split="train")
assert len(seqfeed.model_inputs("run", "short.sfpack")[0]) == 2
# The C API refuses outputs too small, writing nothing.
import ctypes
from seqfeed import inputs as si
h, err = ctypes.c_void_p(), seqfeed._Err()
assert si._lib.sf_api_inputs_open(ctypes.byref(h), b"run", b"w.sfpack", b"validation", ctypes.byref(err)) == 0
n = len(x)
x0, base, series, row = (np.full(a, 7, t) for a, t in (((n, 8, 11), np.float32), ((n, 2), np.float32),
                                                         (n, np.uint64), (n, np.uint64)))
out = si._InputsOut(x=x0.ctypes.data, base=base.ctypes.data, series=series.ctypes.data, row=row.ctypes.data,
                    windows=n - 1)
rc = si._lib.sf_api_inputs_read(h, ctypes.byref(out), ctypes.byref(err))
assert rc == -3 and b"must hold %d windows (given %d)" % (n, n - 1) in err.msg and (x0 == 7).all(), (rc, err.msg)
out.windows, out.base = n, None
assert si._lib.sf_api_inputs_read(h, ctypes.byref(out), ctypes.byref(err)) == -3 and b"and a NULL" in err.msg
out.base = base.ctypes.data  # no time, line or source asked for: the rest is written
assert si._lib.sf_api_inputs_read(h, ctypes.byref(out), ctypes.byref(err)) == 0 and np.array_equal(x0, x)
assert list(row) == list(index["row"]) and np.array_equal(base, index["base"])
for split in (b"all", b"bogus"):
    h2 = ctypes.c_void_p()
    rc = si._lib.sf_api_inputs_open(ctypes.byref(h2), b"run", b"w.sfpack", split, ctypes.byref(err))
    assert (rc, h2.value) == ((0, h2.value) if split == b"all" else (-6, None)), (split, rc, err.msg)
    si._lib.sf_api_inputs_close(h2)
si._lib.sf_api_inputs_close(h)
PY
    pyrun - <<'PY' || fail "model_inputs' index of a model of several steps differs from predict's rows"
import csv
import numpy as np
import seqfeed

for name, split, targets, qs in (("h", None, 2, 0), ("h", "validation", 2, 0), ("hq", None, 1, 3), ("hf", None, 1, 0)):
    x, index = seqfeed.model_inputs(name, "w.sfpack", split=split)
    steps = len(index.steps)
    assert steps == 3 and index.steps[0] == (2 if name == "hq" else 1), index.steps
    rows = list(csv.DictReader(open(name + ("-validation" if split else "") + ".csv")))
    n = len(x["window"] if isinstance(x, dict) else x)
    assert len(rows) == n * steps and list(index.columns()) == ["series", "time", "file", "line", "row", "step"]
    got = [(s, str(t)[:16], f, int(l), int(k)) for s, t, f, l, k in zip(*(index[c] for c in
                                                                       ("series", "time", "file", "line", "step")))]
    assert got == [(r["site"], r["time"], r["file"], int(r["line"]), int(r["step"])) for r in rows], (got[:4], rows[:4])
    # every step of a window has the window's base: its last row's value for --target change, else 0
    assert index["base"].shape == (n * steps, targets) and (index["base"] == np.repeat(index["base"][::steps], steps, 0)).all()
    assert index.target_change == (name == "h") and index["base"].any() == (name == "h")
    shape = (n, steps, targets) + ((qs,) if qs else ())
    y = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    got = seqfeed.forecasts(y, index)
    assert got.shape == (n * steps, targets) + ((qs,) if qs else ()), got.shape
    assert np.array_equal(got, y.reshape(got.shape) + (index["base"][..., None] if qs else index["base"]))
    try:
        seqfeed.forecasts(y[:, 0], index)
        raise AssertionError("one step's outputs taken for three")
    except ValueError as e:
        want = "y must be (windows, steps, targets%s) = %s" % (", quantiles" if qs else "", shape)
        assert want in str(e), (want, str(e))
    print(name, split, n, "windows x", steps, "steps: rows as predict's")
PY
else
    "$SEQFEED" export --checkpoint run --format keras -o m.keras -q 2>err
    case $? in
    0) ;;
    2) echo "this seqfeed cannot write Keras files: $(cat err)" >&2; exit 77 ;;
    *) fail "seqfeed export: $(cat err)"; finish ;;
    esac
    for m in h hq hf; do run 0 export --checkpoint $m --format keras -o $m.keras -q; done
    pyrun - <<'PY' || fail "the exported model fed model_inputs' x does not forecast what seqfeed predict does"
import csv
import keras
import numpy as np
import seqfeed

model = keras.models.load_model("m.keras")
for split in (None, "validation"):
    x, index = seqfeed.model_inputs("run", "w.sfpack", split=split)
    y = seqfeed.forecasts(model.predict(x, verbose=0), index)
    rows = list(csv.DictReader(open("%s.csv" % (split or "all"))))
    assert [int(r["line"]) for r in rows] == list(index["line"]), split
    want = np.array([[float(r[t + "_pred"]) for t in index.targets] for r in rows])
    err = np.max(np.abs(y - want) / np.abs(want))
    print(keras.backend.backend(), split, len(x), "windows: largest relative difference", err)
    assert err < 1e-5, err
# Three steps ahead: one row per window and step, each step's time, line and file, as predict's.
for name, split, cols in (("h", None, ["temp_pred", "wind_pred"]), ("h", "validation", ["temp_pred", "wind_pred"]),
                          ("hq", None, ["temp_q10", "temp_q50", "temp_q90"]), ("hf", None, ["temp_pred"])):
    x, index = seqfeed.model_inputs(name, "w.sfpack", split=split)
    y = seqfeed.forecasts(keras.models.load_model(name + ".keras").predict(x, verbose=0), index)
    rows = list(csv.DictReader(open(name + ("-validation" if split else "") + ".csv")))
    got = [(s, str(t)[:16], f, int(l), int(k)) for s, t, f, l, k in zip(*(index[c] for c in
                                                                       ("series", "time", "file", "line", "step")))]
    assert got == [(r["site"], r["time"], r["file"], int(r["line"]), int(r["step"])) for r in rows], name
    want = np.array([[float(r[c]) for c in cols] for r in rows])
    err = np.max(np.abs(y.reshape(want.shape) - want) / np.abs(want))
    print(keras.backend.backend(), name, split, len(rows), "rows (windows x steps): largest relative difference", err)
    assert y.shape[0] == len(rows) and err < 1e-5, (y.shape, err)
PY
    # the rewritten example, run as a user runs it
    for m in m:run h:h hq:hq hf:hf; do  # the export and its checkpoint
        IFS=: read -r model ck <<<"$m"
        pyrun "$SRCDIR/docs/examples/keras_predict.py" $model.keras $ck w.sfpack >example-$model.csv ||
            fail "keras_predict.py $model.keras failed"
    done
    pyrun - <<'PY' || fail "docs/examples/keras_predict.py does not write what seqfeed predict does"
import csv
import numpy as np
for model, want in (("m", "all"), ("h", "h"), ("hq", "hq"), ("hf", "hf")):
    got, want = list(csv.DictReader(open("example-%s.csv" % model))), list(csv.DictReader(open(want + ".csv")))
    keys = ["file", "line"] + (["step"] if "step" in want[0] else [])  # and the time, as numpy writes it
    assert [[r["series"], np.datetime64(r["time"])] + [r[k] for k in keys] for r in got] == \
        [[r["site"], np.datetime64(r["time"])] + [r[k] for k in keys] for r in want], model
    values = [k for k in want[0] if k.endswith(("_pred", "_q10", "_q50", "_q90"))]
    assert [k for k in got[0] if k in values] == values, (list(got[0]), values)
    g, w = (np.array([[float(r[k]) for k in values] for r in rows]) for rows in (got, want))
    err = np.max(np.abs(g - w) / np.abs(w))
    print("keras_predict.py", model, len(got), "rows, largest relative difference", err)
    assert err < 1e-5, err
PY
fi
finish
