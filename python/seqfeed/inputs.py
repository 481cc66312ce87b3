"""Inputs for the model `seqfeed export` writes, and its outputs as `seqfeed predict` writes them.

    model = keras.models.load_model("model.keras")
    x, index = seqfeed.model_inputs("run/", "data.sfpack")
    y = seqfeed.forecasts(model.predict(x), index)   # == seqfeed predict's NAME_pred columns
    # index["series"], index["time"], index["line"] (and index["step"]): the row each forecast is for

The windows are cut by libseqfeed, by the code `seqfeed predict` runs
(sf_api_inputs_*), so the two cannot drift apart.
"""
import ctypes
import os

import numpy as np

from . import Pack, _Err, _bad, _check, _described, _lib, _path

_vp, _u64 = ctypes.c_void_p, ctypes.c_uint64


class _InputsOut(ctypes.Structure):
    _fields_ = [("x", _vp), ("base", _vp), ("series", _vp), ("row", _vp), ("time", _vp), ("line", _vp),
                ("source", _vp), ("windows", _u64), ("future", _vp), ("onehot", _vp)]


_lib.sf_api_inputs_open.argtypes = [ctypes.POINTER(_vp), ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                    ctypes.POINTER(_Err)]
_lib.sf_api_inputs_describe.argtypes = [_vp]
_lib.sf_api_inputs_describe.restype = _vp
_lib.sf_api_inputs_read.argtypes = [_vp, ctypes.POINTER(_InputsOut), ctypes.POINTER(_Err)]
_lib.sf_api_inputs_close.argtypes = [_vp]

# The unit of a time column's integers, as numpy's datetime64 spells it (ISO-8601 texts: microseconds).
_TIME_UNITS = {"iso-8601": "us", "epoch-s": "s", "epoch-ms": "ms", "epoch-us": "us", "epoch-ns": "ns"}


class WindowIndex(dict):
    """What model_inputs says of each forecast row, as a dict of numpy arrays, one entry per row that
    `seqfeed predict` writes, in its order: one per window of x, or for a model of several steps
    (--horizon A-B) one per window and step, window by window (x's window i, step k: entry
    i * len(steps) + k), as forecasts() gives the rows. pandas.DataFrame(index.columns()) makes a table
    of it:

      series  the series' name (str)
      time    the target row's time (datetime64; the file's unit for epoch integers), when the file has
              a time column
      file    the file the target row was packed from, when the pack was made from several
      line    the target row's line in that file (a CSV's: the header is line 1; an Arrow source's row,
              from 1), when the pack keeps lines
      row     the target row's row in the .sfpack file
      step    the rows the target row is ahead of the window's last row (A to B), for a model of
              several steps only, as predict's step column
      base    (rows, targets) float32: what forecasts() adds to the model's output, each target's
              value at the window's last row for a model trained with --target change, else 0

    and as attributes: steps (the step numbers, A to B; (N,) for --horizon N), checkpoint (the file
    read), inputs (x's last axis, named: a column, COLUMN=VALUE for a category's input, FEATURE_sin and
    FEATURE_cos for a time feature's), future (those also taken at the target rows, --future-features: x["future"]'s last axis; [] for none), targets (the model's
    outputs, named), target_change and quantiles (a model trained with --loss quantile: its quantiles,
    ascending, the last axis of its output; else empty)."""

    def columns(self):
        """The one-dimensional entries (all but base), in predict's column order."""
        return {k: v for k, v in self.items() if k != "base"}


def model_inputs(checkpoint, data, split=None):
    """The inputs `seqfeed export`'s model takes for the windows `seqfeed predict` predicts: (x, index).

    checkpoint is a checkpoint file or a run's directory (best.safetensors there, else
    latest.safetensors), as predict's --checkpoint; data the .sfpack file. split as predict's --split:
    None for every window of the file (predict's default), "train" or "validation" for the windows of
    that part of each series (the checkpoint's --val-split, as train cut them).

    x is float32 (windows, window, inputs): each window's rows in data units (the exported model scales
    them itself), the inputs in the order train printed them: the numeric features, one input of 0 or 1
    per value of a categorical feature in the checkpoint's order (a value the training data lacked gets
    0 in every one), then sin and cos of each time feature (docs/TRAINING.md gives the formula); windows
    cut per series (none spans two), in predict's order. index is a WindowIndex: the series, time, line
    (and file) of each row predict writes: each window's target row, or each step's for a model of
    several steps (and the step). forecasts(model.predict(x), index) is what predict writes, each
    target's NAME_pred, row by row.

    For a model trained with --future-features, x is a dict of the exported model's two named inputs:
    "window" as above, and "future" float32 (windows, steps, future inputs), the future features' values
    at each of the window's target rows (data units), named in index.future; with --series-features
    onehot, also "series" float32 (windows, series): 1 for the window's series among index.series_inputs
    (the checkpoint's, by name; a series of data it has not seen is refused); model.predict(x) takes it
    as it is."""
    if split not in (None, "train", "validation"):
        raise _bad("split", "split", 'None (every window), "train" or "validation"', split)
    h, err = _vp(), _Err()
    _check(_lib.sf_api_inputs_open(ctypes.byref(h), _path("checkpoint", checkpoint), _path("data", data),
                                   split.encode() if split else None, ctypes.byref(err)), err)
    try:
        info = _described(_lib.sf_api_inputs_describe, h)
        n, window, inputs, targets = info["windows"], info["window"], info["inputs"], info["targets"]
        x = np.empty((n, window, len(inputs)), dtype=np.float32)
        future = np.empty((n, info["steps"], len(info["future"])), dtype=np.float32) if info["future"] else None
        onehot = np.empty((n, len(info["series_inputs"])), dtype=np.float32) if info["series_inputs"] else None
        base = np.empty((n, len(targets)), dtype=np.float32)
        rows = n * info["steps"]  # each step's own row
        series, row = np.empty(n, dtype=np.uint64), np.empty(rows, dtype=np.uint64)
        time = np.empty(rows, dtype=np.int64) if info["time_kind"] != "none" else None
        line = np.empty(rows, dtype=np.int64) if info["has_lines"] else None
        source = np.empty(rows, dtype=np.uint32) if info["sources"] else None
        out = _InputsOut(x=x.ctypes.data, base=base.ctypes.data, series=series.ctypes.data, row=row.ctypes.data,
                         time=None if time is None else time.ctypes.data,
                         line=None if line is None else line.ctypes.data,
                         source=None if source is None else source.ctypes.data, windows=n,
                         future=None if future is None else future.ctypes.data,
                         onehot=None if onehot is None else onehot.ctypes.data)
        _check(_lib.sf_api_inputs_read(h, ctypes.byref(out), ctypes.byref(err)), err)
    finally:
        _lib.sf_api_inputs_close(h)
    if info["unseen"]:  # as predict notes it
        import warnings
        warnings.warn("%s: %d value(s) of categorical column \"%s\"%s are not in the training data: their rows get 0 "
                      "for every input of the column" % (os.fsdecode(data), info["unseen"], info["unseen_column"],
                                                         " (or others)" if info["unseen"] > 1 else ""), stacklevel=2)
    with Pack(data) as p:  # the series' names, as the file's series table has them
        names = np.array([s[0] for s in p.series])
    steps = tuple(range(info["first_step"], info["first_step"] + info["steps"]))
    index = WindowIndex(series=np.repeat(names[series.astype(np.intp)], len(steps)))
    if time is not None:
        index["time"] = time.astype("datetime64[%s]" % _TIME_UNITS[info["time_kind"]])
    if source is not None:
        index["file"] = np.array(info["sources"])[source.astype(np.intp)]
    if line is not None:
        index["line"] = line
    index["row"] = row
    if len(steps) > 1:
        index["step"] = np.tile(np.array(steps, dtype=np.int64), n)
    index["base"] = np.repeat(base, len(steps), axis=0)
    index.steps = steps
    index.checkpoint, index.inputs, index.targets = info["checkpoint"], inputs, targets
    index.target_change, index.future = info["target_change"], info["future"]
    index.series_inputs = info["series_inputs"]
    index.quantiles = tuple(info["quantiles"])
    if future is None and onehot is None:
        return x, index
    x = {"window": x}  # the exported functional model's named inputs
    if future is not None:
        x["future"] = future
    if onehot is not None:
        x["series"] = onehot
    return x, index


def forecasts(y, index):
    """The exported model's outputs y for model_inputs' x as `seqfeed predict` writes them (NAME_pred,
    data units), one row per entry of index: y plus index["base"], in float32. y is (windows, targets),
    or (windows, steps, targets) for a --horizon A-B model, whose forecasts come back one row per window
    and step, window by window, (windows * steps, targets): row r is the step index["step"][r], at the
    time and line index names, as predict's rows. For a model trained with --target change the export
    outputs each target's change from the window's last row (in data units), and base is that row's
    value; for others base is 0 and y is already the forecast. The export's last layer un-scales, so
    nothing else is left to do.

    A model trained with --loss quantile (index.quantiles) gives each target's quantiles on a last axis,
    (windows, targets, quantiles) or (windows, steps, targets, quantiles), and they come back as
    (rows, targets, quantiles), the base added to each and sorted along that axis, as predict writes
    NAME_q10, NAME_q50, ... (so that they never cross)."""
    if not isinstance(index, WindowIndex):
        raise TypeError("index must be the WindowIndex model_inputs returned, got %s" % type(index).__name__)
    y = np.asarray(y, dtype=np.float32)
    base = index["base"]
    nq, steps = len(getattr(index, "quantiles", ())), len(getattr(index, "steps", (1,)))
    want = (len(base) // steps,) + ((steps,) if steps > 1 else ()) + base.shape[1:] + ((nq,) if nq else ())
    if y.shape != want:
        axes = "windows" + (", steps" if steps > 1 else "") + ", targets" + (", quantiles" if nq else "")
        raise ValueError("y must be (%s) = %s, as the model gives for model_inputs' x; got %s" % (axes, want, y.shape))
    out = y.reshape(base.shape + ((nq,) if nq else ())) + (base[..., None] if nq else base)
    return np.sort(out, axis=-1) if nq else out
