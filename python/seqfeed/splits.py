"""The validation part of a Dataset and the training part's scaling.

Dataset(..., split="validation") reads the windows `seqfeed train` validates
on for the same options (sf_valset in libseqfeed): every window whose
target row lies in the last val_split of each series' rows, in order, the
same every pass: the windows `seqfeed evaluate` scores and `seqfeed predict
--split validation` writes for a checkpoint of such a run. Dataset.scaler
says how its inputs and targets are scaled (the training part's statistics),
and Dataset.unscale maps a model's outputs back to the data's units as
`seqfeed predict` does.
"""
import ctypes
import os

import numpy as np

from . import _DatasetInfo, _DatasetOpts, _Err, _Handle, _check, _described, _lib, _model_x, _vp

_u32, _u64, _sz = ctypes.c_uint32, ctypes.c_uint64, ctypes.c_size_t
_lib.sf_valset_open.argtypes = [ctypes.POINTER(_vp), ctypes.POINTER(_DatasetOpts), ctypes.POINTER(_Err)]
_lib.sf_valset_shape.argtypes = [_vp, ctypes.POINTER(_u64), ctypes.POINTER(_DatasetInfo)]
_lib.sf_valset_read.argtypes = [_vp, _u64, _u32, _vp, _sz, _vp, _sz, _vp, ctypes.POINTER(_Err)]
_lib.sf_valset_close.argtypes = [_vp]
_lib.sf_valset_describe.argtypes = [_vp]
_lib.sf_valset_describe.restype = _vp
_lib.sf_dataset_describe.argtypes = [_vp]
_lib.sf_dataset_describe.restype = _vp

SPLITS = ("train", "validation")


def check_split(split, replicas):
    if split not in SPLITS:
        raise ValueError("split must be one of %s, got %r" % (", ".join(map(repr, SPLITS)), split))
    if split == "validation" and replicas != 1:
        raise ValueError("split='validation' is read whole, in order, as train scores it on one replica; got "
                         "replicas=%d (leave replicas and replica out)" % replicas)
    return split


def describe(fn, handle):
    """The scaling JSON of an open handle (sf_dataset_describe or sf_valset_describe) as a Scaler."""
    return Scaler(_described(fn, handle))


class Scaler:
    """How a Dataset's values are scaled, from the statistics of the training
    part's rows (the first 1 - val_split of each series' rows), as `seqfeed
    train` scales them and its checkpoint records them (scaling/*):

    - rows: the training part's rows the statistics are of;
    - stats: {column: {"min", "max", "mean", "std"}} over those rows, for
      each column that feeds an input or a target;
    - inputs: the names of x's last axis ("temp"; a category one-hot
      "sky=rain"; a time feature "hour_sin", "hour_cos"), input_scale and
      input_offset (float32: an input is value * scale + offset);
    - targets: y's names, target_scale and target_offset (y = value * scale
      + offset, or under target_change the change from the window's last
      value, scaled alike), target_mean (data units), change_from (the
      input index each target's change is from; None without target_change).

    unscale(y, x) maps a model's outputs back to data units."""

    def __init__(self, info):
        self.rows = info["stats_rows"]
        self.stats = info["columns"]
        self.inputs = [i["name"] for i in info["inputs"]]
        self.input_scale = np.array([i["scale"] for i in info["inputs"]], dtype=np.float32)
        self.input_offset = np.array([i["offset"] for i in info["inputs"]], dtype=np.float32)
        self.targets = [t["name"] for t in info["targets"]]
        self.target_scale = np.array([t["scale"] for t in info["targets"]], dtype=np.float32)
        self.target_offset = np.array([t["offset"] for t in info["targets"]], dtype=np.float32)
        self.target_mean = np.array([t["mean"] for t in info["targets"]], dtype=np.float32)
        change = [t["change_from"] for t in info["targets"]]
        self.change_from = None if any(c is None for c in change) else change

    def __repr__(self):
        return "<seqfeed.Scaler of %d training rows: inputs %s; targets %s%s>" % (
            self.rows, ", ".join(self.inputs), ", ".join(self.targets),
            " (changes from the window's last value)" if self.change_from else "")

    def unscale(self, y, x=None, quantiles=False):
        """A model's outputs y (windows, targets), or (windows, steps, targets) for horizon="A-B", scaled as
        the Dataset's y, in data units (float32), as `seqfeed predict` writes them: under target_change the
        window's last value of each target (from x, the windows' inputs as the Dataset gave them,
        (windows, window, inputs)) is added back first, to every step.

        quantiles=True: y has a last axis more, several forecasts of each target (a quantile model's, as
        `seqfeed train --loss quantile:...` lays them out: (windows, targets, quantiles) or (windows,
        steps, targets, quantiles)); each is unscaled as its target, in the order given (predict sorts
        its own)."""
        y = np.asarray(y, dtype=np.float32)
        if quantiles:
            if y.ndim < 2:
                raise ValueError("y must have a last axis of quantiles (quantiles=True), got shape %s" % (y.shape,))
            moved = np.moveaxis(y, -1, 0)  # each quantile's forecasts as a model's of one value per target
            return np.moveaxis(np.stack([self.unscale(v, x) for v in moved]), 0, -1)
        nt = len(self.targets)
        if y.ndim not in (1, 2, 3) or y.shape[-1] != nt:
            raise ValueError("y must be (windows, %d), (windows, steps, %d) or (%d,): one value per target (%s), "
                             "got shape %s" % (nt, nt, nt, ", ".join(self.targets), y.shape))
        base = np.float32(0)
        if self.change_from is not None:
            if x is None:
                raise ValueError("the targets are changes from each window's last value (target_change=True): "
                                 "unscale(y, x) needs the windows' inputs x to add them back")
            if isinstance(x, dict):  # with future features: the window's rows hold the last values
                x = x["window"]
            x = np.asarray(x, dtype=np.float32)
            windows = y.shape[:-2] if y.ndim == 3 else y.shape[:-1]
            want = windows + (None, len(self.inputs))
            if x.ndim != len(windows) + 2 or x.shape[:-2] != windows or x.shape[-1] != len(self.inputs):
                raise ValueError("x must be the windows' inputs, %s with one window per row of y, got shape %s" %
                                 (str(want).replace("None", "window"), x.shape))
            base = x[..., -1, self.change_from]
            if y.ndim == 3:  # every step's change is from the same last value
                base = base[:, None, :]
        # float32 throughout, in predict's order (train/score.c: sf_target_prediction): the same digits
        return ((y + base) - self.target_offset) / self.target_scale


class Validation:
    """The validation windows of a Dataset's options, open for the Dataset's life: read(i) is batch i
    (windows [i * batch, (i + 1) * batch), the last one shorter), from any thread."""

    def __init__(self, ds, opts):
        v, err = _vp(), _Err()
        _check(_lib.sf_valset_open(ctypes.byref(v), ctypes.byref(opts), ctypes.byref(err)), err)
        self._h = _Handle(v.value, _lib.sf_valset_close, "Dataset %s" % os.fsdecode(ds.path))
        n, info = _u64(), _DatasetInfo()
        with self._h as p:
            _lib.sf_valset_shape(p, ctypes.byref(n), ctypes.byref(info))
            self.scaler = describe(_lib.sf_valset_describe, p)
        self.windows, self.info = n.value, info

    def read(self, index, rows=False):
        i = self.info
        lo = index * i.batch
        if not 0 <= lo < self.windows:
            raise IndexError("batch %d of the %d validation batches" % (index, i.batches_per_epoch))
        count = min(i.batch, self.windows - lo)
        x = np.empty((count, i.window * i.nfeatures + i.steps * i.nfuture + i.nonehot), dtype=np.float32)
        y = np.empty((count, i.steps, i.ntargets) if i.steps > 1 else (count, i.ntargets), dtype=np.float32)
        r = np.empty(count, dtype=np.uint64) if rows else None
        err = _Err()
        with self._h as p:
            rc = _lib.sf_valset_read(p, lo, count, x.ctypes.data, x.size, y.ctypes.data, y.size,
                                     r.ctypes.data if rows else None, ctypes.byref(err))
        _check(rc, err)
        x = _model_x(x, i)
        return (x, y, r.astype(np.int64)) if rows else (x, y)

    def close(self):
        self._h.close()


class ValidationBatches:
    """One pass over the validation batches, in order."""

    def __init__(self, val):
        self._val, self._next = val, 0

    def __iter__(self):
        return self

    def __next__(self):
        if self._next >= self._val.info.batches_per_epoch:
            raise StopIteration
        self._next += 1
        return self._val.read(self._next - 1)

    def close(self):
        self._next = self._val.info.batches_per_epoch

