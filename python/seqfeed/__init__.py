"""seqfeed from Python: packed files as numpy arrays, and the input pipeline
of `seqfeed train` as an iterable of (x, y) batches.

    import seqfeed
    p = seqfeed.Pack("data.sfpack")          # columns, statistics, series, times
    a = p.read(["temp"], 0, 100)             # float32 (rows, columns)
    ds = seqfeed.Dataset("data.sfpack", window=24, batch_size=64, targets="temp")
    for x, y in ds: ...                      # x (batch, window, inputs), y (batch, targets)
    ck = seqfeed.load_checkpoint("ck/latest.safetensors")

The C library (libseqfeed.so, built by meson next to the seqfeed program)
does the work; $SEQFEED_LIB names it when it is not found by the loader.
numpy is the only dependency.
"""
import ctypes
import json
import os
import struct

import numpy as np

__all__ = ["Pack", "Dataset", "load_checkpoint", "SeqfeedError"]


class SeqfeedError(Exception):
    """An error of the C library, with its message (file, chunk, line, option)."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


class _Err(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("msg", ctypes.c_char * 1024)]


def _load():
    names = [os.environ.get("SEQFEED_LIB"), "libseqfeed.so"]
    here = os.path.dirname(os.path.abspath(__file__))
    names += [os.path.join(here, "libseqfeed.so")]
    last = None
    for name in filter(None, names):
        try:
            return ctypes.CDLL(name)
        except OSError as e:
            last = e
    raise ImportError("cannot load libseqfeed.so (build seqfeed with meson and set SEQFEED_LIB to it): %s" % last)


_lib = _load()
_vp, _cp, _u32, _u64 = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint32, ctypes.c_uint64
_lib.sf_api_pack_open.argtypes = [ctypes.POINTER(_vp), _cp, ctypes.POINTER(_Err)]
_lib.sf_api_pack_close.argtypes = [_vp]
_lib.sf_api_pack_describe.argtypes = [_vp]
_lib.sf_api_pack_describe.restype = _vp
_lib.sf_api_free.argtypes = [_vp]
_lib.sf_api_pack_read.argtypes = [_vp, _vp, _u32, _u64, _u64, _vp, ctypes.POINTER(_Err)]
_lib.sf_api_pack_read_times.argtypes = [_vp, _u64, _u64, _vp, ctypes.POINTER(_Err)]


class _DatasetOpts(ctypes.Structure):
    _fields_ = [("data", _cp), ("features", _cp), ("targets", _cp), ("time_features", _cp), ("norm", _cp),
                ("target_change", ctypes.c_bool), ("window", _u32), ("stride", _u32), ("sampling_rate", _u32),
                ("horizon", _u32), ("batch", _u32), ("pool", _u64), ("seed", _u64), ("epochs", _u64),
                ("val_split", ctypes.c_double), ("max_gap", ctypes.c_double), ("replicas", _u32), ("replica", _u32),
                ("decoders", _u32)]


_lib.sf_dataset_open.argtypes = [ctypes.POINTER(_vp), ctypes.POINTER(_DatasetOpts), ctypes.POINTER(_Err)]
_lib.sf_dataset_shape.argtypes = [_vp, ctypes.POINTER(_u32), ctypes.POINTER(_u32), ctypes.POINTER(_u64),
                                  ctypes.POINTER(_u32)]
_lib.sf_dataset_next.argtypes = [_vp, _vp, _vp, ctypes.POINTER(_Err)]
_lib.sf_dataset_close.argtypes = [_vp]


def _check(rc, err):
    if rc < 0:
        raise SeqfeedError(err.code, err.msg.decode("utf-8", "replace"))
    return rc


def _names(v):
    """A list of names as seqfeed spells it (a name with a comma in quotes)."""
    if v is None or isinstance(v, str):
        return v
    return ",".join('"%s"' % n.replace('"', '""') if ("," in n or '"' in n or n != n.strip()) else n for n in v)


class Pack:
    """An .sfpack file: its columns, statistics, series and time column."""

    def __init__(self, path):
        self._p = _vp()
        err = _Err()
        _check(_lib.sf_api_pack_open(ctypes.byref(self._p), os.fsencode(path), ctypes.byref(err)), err)
        raw = _lib.sf_api_pack_describe(self._p)
        if not raw:
            raise MemoryError
        try:
            info = json.loads(ctypes.string_at(raw).decode("utf-8"))
        finally:
            _lib.sf_api_free(raw)
        self.path, self.rows, self.version = path, info["rows"], info["version"]
        self.columns = [c["name"] for c in info["columns"]]
        self.stats = {c["name"]: {k: c[k] for k in ("min", "max", "mean", "std")} for c in info["columns"]}
        self.categories = {c["name"]: c["categories"] for c in info["columns"] if "categories" in c}
        # Values pack --missing ffill filled in, per column: read() gives them as filled.
        self.imputed = {c["name"]: c["imputed"] for c in info["columns"]}
        self.series_column = info["series_column"] or None
        self.series = [(s["name"], s["first_row"], s["rows"]) for s in info["series"]]
        self.time_column, self.time_kind = info["time_column"], info["time_kind"]

    def read(self, columns=None, start=0, stop=None):
        """Rows [start, stop) of the columns (names; None: all) as float32 (rows, columns); values pack
        imputed (--missing ffill, counted in self.imputed) come as filled in."""
        columns = self.columns if columns is None else list(columns)
        idx = np.array([self.columns.index(c) for c in columns], dtype=np.uint32)
        stop = self.rows if stop is None else stop
        out = np.empty((max(stop - start, 0), len(idx)), dtype=np.float32)
        err = _Err()
        _check(_lib.sf_api_pack_read(self._p, idx.ctypes.data, len(idx), start, stop, out.ctypes.data,
                                     ctypes.byref(err)), err)
        return out

    def read_times(self, start=0, stop=None):
        """Rows' times as int64 (ISO-8601 files: microseconds since 1970-01-01T00:00Z)."""
        stop = self.rows if stop is None else stop
        out = np.empty(max(stop - start, 0), dtype=np.int64)
        err = _Err()
        _check(_lib.sf_api_pack_read_times(self._p, start, stop, out.ctypes.data, ctypes.byref(err)), err)
        return out

    def close(self):
        if self._p:
            _lib.sf_api_pack_close(self._p)
            self._p = _vp()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()


class Dataset:
    """The batches `seqfeed train` draws, as an iterable of (x, y) float32
    arrays: x (batch, window, inputs), y (batch, targets), scaled as train
    scales them. replicas and replica give replica `replica`'s share (each
    batch batch_size / replicas windows), as train's replica of that number
    sees it. shuffle=False keeps the windows of each block in order. Its len()
    is the batches of all epochs; iterating again starts the epochs again.

    In Keras 3: model.fit(iter(ds), steps_per_epoch=ds.batches_per_epoch,
    epochs=E) with E the dataset's epochs (a generator of known length; a
    keras.utils.PyDataset is asked for batches by index, in its own order,
    which a pipeline with its own order cannot serve). In PyTorch:
    torch.from_numpy(x) is a view of each batch."""

    def __init__(self, path, window=60, batch_size=32, features=None, targets=None, shuffle=True, seed=1, epochs=1,
                 val_split=0.1, stride=1, sampling_rate=1, horizon=1, time_features=None, norm="zscore",
                 target_change=False, max_gap=0.0, replicas=1, replica=0, pool=None, decoders=0):
        self._opts = dict(path=path, window=window, batch_size=batch_size, features=features, targets=targets,
                          shuffle=shuffle, seed=seed, epochs=epochs, val_split=val_split, stride=stride,
                          sampling_rate=sampling_rate, horizon=horizon, time_features=time_features, norm=norm,
                          target_change=target_change, max_gap=max_gap, replicas=replicas, replica=replica,
                          pool=pool, decoders=decoders)
        d = self._open()  # says now, not at the first batch, what is wrong
        self.inputs, self.targets, self.batches_per_epoch, self.batch = d[1:]
        _lib.sf_dataset_close(d[0])

    def _open(self):
        o = self._opts
        enc = lambda v: None if v is None else _names(v).encode("utf-8")
        opts = _DatasetOpts(data=os.fsencode(o["path"]), features=enc(o["features"]), targets=enc(o["targets"]),
                            time_features=enc(o["time_features"]), norm=o["norm"].encode(),
                            target_change=o["target_change"], window=o["window"], stride=o["stride"],
                            sampling_rate=o["sampling_rate"], horizon=o["horizon"], batch=o["batch_size"],
                            pool=(o["pool"] or 0) if o["shuffle"] else 1, seed=o["seed"], epochs=o["epochs"],
                            val_split=o["val_split"], max_gap=o["max_gap"], replicas=o["replicas"],
                            replica=o["replica"], decoders=o["decoders"])
        d, err = _vp(), _Err()
        _check(_lib.sf_dataset_open(ctypes.byref(d), ctypes.byref(opts), ctypes.byref(err)), err)
        nf, nt, nb, b = _u32(), _u32(), _u64(), _u32()
        _lib.sf_dataset_shape(d, ctypes.byref(nf), ctypes.byref(nt), ctypes.byref(nb), ctypes.byref(b))
        return d, nf.value, nt.value, nb.value, b.value

    def __len__(self):
        return self.batches_per_epoch * self._opts["epochs"]

    def __iter__(self):
        d = self._open()[0]
        window, err = self._opts["window"], _Err()
        try:
            while True:
                x = np.empty((self.batch, window, self.inputs), dtype=np.float32)
                y = np.empty((self.batch, self.targets), dtype=np.float32)
                if _check(_lib.sf_dataset_next(d, x.ctypes.data, y.ctypes.data, ctypes.byref(err)), err) == 0:
                    return
                yield x, y
        finally:
            _lib.sf_dataset_close(d)


def load_checkpoint(path):
    """A seqfeed checkpoint: (tensors by Keras name as float32 arrays, metadata dict)."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    meta = header.pop("__metadata__", {})
    if meta.get("format", "").split(" ")[0] != "seqfeed-checkpoint":
        raise SeqfeedError(-3, "%s: not a seqfeed checkpoint" % path)
    tensors = {}
    for name, t in header.items():
        lo, hi = t["data_offsets"]
        tensors[name] = np.frombuffer(data[lo:hi], dtype=np.float32).reshape(t["shape"]).copy()
    return tensors, meta
