"""seqfeed from Python: packed files as numpy arrays, and the input pipeline
of `seqfeed train` as an iterable of (x, y) batches.

    import seqfeed
    p = seqfeed.Pack("data.sfpack")          # columns, statistics, series, times
    a = p.read(["temp"], 0, 100)             # float32 (rows, columns)
    ds = seqfeed.Dataset("data.sfpack", window=24, batch_size=64, targets="temp")
    for x, y in ds: ...                      # x (batch, window, inputs), y (batch, targets)
    ck = seqfeed.load_checkpoint("ck/latest.safetensors")
    seqfeed.pack(table, "out.sfpack", series_column="site")  # anything with __arrow_c_stream__, Parquet, CSV

The C library (libseqfeed.so, built by meson and installed in the package
by `pip install .`) does the work; $SEQFEED_LIB names another one.
numpy is the only dependency; packing Parquet files needs pyarrow.

Every argument is checked before the C library sees it: a value outside its
range is a ValueError naming the argument, the `seqfeed train` option it
mirrors and that option's range. A closed Pack or Dataset raises ValueError
from any thread; close() waits for the calls in flight on other threads.
"""
import collections
import ctypes
import json
import math
import numbers
import os
import re
import signal
import stat
import struct
import sys
import threading
import weakref

import numpy as np

__all__ = ["Pack", "Dataset", "load_checkpoint", "pack", "parquet_reader", "SeqfeedError"]


class SeqfeedError(Exception):
    """An error of the C library, with its message (file, chunk, line, option)."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


class _Err(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("msg", ctypes.c_char * 1024)]


def _load():
    """$SEQFEED_LIB when set (only it), else the package's own copy (pip install . at the top of the source
    tree puts libseqfeed.so and its modules there), else the loader's libseqfeed.so (LD_LIBRARY_PATH, an
    installed seqfeed)."""
    given = os.environ.get("SEQFEED_LIB")
    if given:
        try:
            return ctypes.CDLL(given)
        except OSError as e:
            raise ImportError("cannot load SEQFEED_LIB=%s: %s" % (given, e)) from None
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "libseqfeed.so")
    last = None
    for name in (here, "libseqfeed.so"):
        try:
            return ctypes.CDLL(name)
        except OSError as e:
            last = e
    raise ImportError("cannot load libseqfeed.so: it is not in the package (%s) nor found by the loader: %s. "
                      "Install the package with `pip install .` at the top of seqfeed's source tree, which builds "
                      "it, or build seqfeed with meson and set SEQFEED_LIB to build/libseqfeed.so" % (here, last))


_lib = _load()
_lib.sf_api_module_path.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(_Err)]


def module_path(name):
    """The file the module `name` ("keras": Keras export, "onednn": bf16 products on CPU, "gpu": the CUDA
    backend) is loaded from, beside libseqfeed.so (or at $SEQFEED_KERAS_MODULE, $SEQFEED_ONEDNN_MODULE,
    $SEQFEED_GPU_MODULE); SeqfeedError with the reason when it cannot be (not built, not found)."""
    err, buf = _Err(), ctypes.create_string_buffer(4096)
    _check(_lib.sf_api_module_path(str(name).encode(), buf, len(buf), ctypes.byref(err)), err)
    return buf.value.decode()


_vp, _cp, _u32, _u64, _sz = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_size_t
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
                ("decoders", _u32), ("horizon_steps", _u32), ("norm_scope", _cp), ("future_features", _cp),
                ("series_features", _cp)]


class _DatasetInfo(ctypes.Structure):
    _fields_ = [("window", _u32), ("nfeatures", _u32), ("ntargets", _u32), ("batch", _u32),
                ("batches_per_epoch", _u64), ("epochs", _u64), ("steps", _u32), ("nfuture", _u32),
                ("nonehot", _u32)]


def _model_x(flat, info):
    """A batch's x as libseqfeed writes it, (count, window x inputs + steps x future inputs + series inputs),
    as the model takes it: (count, window, inputs), or with covariates the dict of the exported model's named
    inputs: window, future (count, steps, future inputs) with future features, series (count, series) one-hot
    with series features: views, no copy."""
    tc, fl = info.window * info.nfeatures, info.steps * info.nfuture
    x = flat[:, :tc].reshape(len(flat), info.window, info.nfeatures)
    if not info.nfuture and not info.nonehot:
        return x
    x = {"window": x}
    if info.nfuture:
        x["future"] = flat[:, tc:tc + fl].reshape(len(flat), info.steps, info.nfuture)
    if info.nonehot:
        x["series"] = flat[:, tc + fl:]
    return x


_lib.sf_dataset_open.argtypes = [ctypes.POINTER(_vp), ctypes.POINTER(_DatasetOpts), ctypes.POINTER(_Err)]
_lib.sf_dataset_shape.argtypes = [_vp, ctypes.POINTER(_DatasetInfo)]
_lib.sf_dataset_next.argtypes = [_vp, _vp, _sz, _vp, _sz, ctypes.POINTER(_Err)]
_lib.sf_dataset_close.argtypes = [_vp]
_free = _lib.sf_api_free
# sf_dataset_next_buffer without argtypes, given only ctypes objects made
# once (c_void_p, byref): ctypes converts each by a C function instead of
# calling an argtype's from_param, which was most of a call's cost.
_next_buffer = _lib["sf_dataset_next_buffer"]


class _Taken(ctypes.Structure):
    _fields_ = [("x", _vp), ("y", _vp), ("err", _Err)]


_TAKEN_X, _TAKEN_Y, _TAKEN_ERR = _Taken.x.offset, _Taken.y.offset, _Taken.err.offset
_refs = sys.getrefcount


class _Home:
    """Where a batch buffer's lease gives its memory back once the last
    array of it is gone: a few raw buffers the next calls hand the pipeline
    as spares; freed once the iterator is closed. Lock-free (list.pop and
    append are atomic): a lease goes from whichever thread drops it."""

    keep = 4  # free buffers kept for the next batches; more are freed

    def __init__(self):
        self.free, self.closed = [], False

    def give(self, ptr):
        if self.closed or len(self.free) >= self.keep:
            _free(ptr)
            return
        self.free.append(ptr)
        if self.closed:  # close() ran meanwhile: what it emptied this came after
            self.drain()

    def drain(self):
        while True:
            try:
                ptr = self.free.pop()
            except IndexError:
                return
            _free(ptr)


def _lease_type(nbytes):
    class _Lease(ctypes.c_char * nbytes):
        """One batch buffer's memory while arrays of it live: given back
        to home when the last goes, unless home is None (the buffer was in
        the pipeline's slots when sf_dataset_close freed them)."""
        __slots__ = ("home",)

        def __del__(self):
            try:
                if self.home is not None:
                    self.home.give(ctypes.addressof(self))
            except Exception:  # interpreter shutdown: the process frees it
                pass
    return _Lease


def _held(rec):
    """The references to a buffer record's lease and master arrays, which
    are at the record's own count (rec[2]) exactly when no array of the
    buffer is held outside it: each view of a master, however derived,
    holds that master (numpy's base), and the masters hold the lease.
    Measured, not assumed, as interpreters count references differently."""
    return _refs(rec[1]) + _refs(rec[3]) + _refs(rec[4])


class _PackOpts(ctypes.Structure):
    _fields_ = [("columns", _cp), ("drop_columns", _cp), ("series_column", _cp), ("time_column", _cp),
                ("categorical", _cp), ("missing", _cp), ("chunk_rows", _u32), ("threads", _u32),
                ("memory_budget", _u64)]


_lib.sf_api_pack_arrow.argtypes = [_vp, _cp, ctypes.POINTER(_PackOpts), _cp, ctypes.POINTER(_vp), ctypes.POINTER(_Err)]
_lib.sf_api_pack_csv.argtypes = [_cp, _cp, ctypes.POINTER(_PackOpts), ctypes.POINTER(_vp), ctypes.POINTER(_Err)]
# progress(arg, rows, total or bytes): a CSV's and an Arrow stream's packing
_PROGRESS = ctypes.CFUNCTYPE(ctypes.c_int, _vp, _u64, _u64)
_lib.sf_api_pack_csv_progress.argtypes = [_cp, _cp, ctypes.POINTER(_PackOpts), _PROGRESS, _vp, ctypes.POINTER(_vp),
                                          ctypes.POINTER(_Err)]


class _Interrupt:
    """Ctrl-C during a pack (a with block, on the main thread, where Python's own SIGINT handler is in place):
    kept in hit rather than raised wherever it lands, since in a ctypes callback ctypes prints and drops the
    KeyboardInterrupt; the progress callback (_call) then stops the pack, its output removed, and the caller
    raises what raised holds once the C call has returned: a KeyboardInterrupt, also for a SIGINT after the
    callback's last call (the file is complete then)."""

    def __init__(self, raised):
        self.hit, self._old, self.raised = False, None, raised

    def _on(self, sig, frame):
        self.hit = True

    def __enter__(self):
        if threading.current_thread() is threading.main_thread() and \
                signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            self._old = signal.signal(signal.SIGINT, self._on)
        return self

    def __exit__(self, *exc):
        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)
        if self.hit and not self.raised:
            self.raised.append(KeyboardInterrupt())
        return False


def _call(progress, raised, done, total, intr=None):
    """progress(done, total) for the C packer (None: nothing to call): 1 (stop) once it raised, or once intr
    (an _Interrupt) was hit, the exception kept for the caller (a ctypes callback's exception would be printed
    and lost, the pack going on)."""
    if intr is not None and intr.hit:
        raised.append(KeyboardInterrupt())
        return 1
    if progress is None:
        return 0
    try:
        progress(done, total)
        return 0
    except BaseException as e:  # KeyboardInterrupt too: Ctrl-C in a callback stops the pack
        raised.append(e)
        return 1


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = _vp
_capsule_pointer.argtypes = [ctypes.py_object, _cp]

_U32, _U64 = 2**32 - 1, 2**64 - 1


def _series_features(v):
    """--series-features: None, "onehot" or "embedding:D" (x["series"] is the one-hot for both: the embedding
    is the model's)."""
    if v is None:
        return None
    if not isinstance(v, str) or not (v == "onehot" or re.fullmatch(r"embedding:[1-9][0-9]{0,3}", v)):
        raise _bad("series_features", "series-features", 'None, "onehot" or "embedding:D" (D from 1 to 4096)', v)
    return v.encode()


def _check(rc, err):
    if rc < 0:
        raise SeqfeedError(err.code, err.msg.decode("utf-8", "replace"))
    return rc


# ---- arguments: each checked as `seqfeed train` checks its option ----

def _bad(name, option, want, v):
    flag = " (--%s)" % option if option else ""
    return ValueError("%s%s must be %s, got %r" % (name, flag, want, v))


def _int(name, option, v, lo, hi, none=None):
    """An int in [lo, hi] (not a bool, not a float), or None where none says what None means."""
    if v is None and none:
        return None
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral) or not lo <= v <= hi:
        want = "an integer from %d to %d" % (lo, hi)
        raise _bad(name, option, want + (" (None: %s)" % none if none else ""), v)
    return int(v)


def _horizon(v):
    """--horizon N or A-B: (A, B), from an int N, a string "N" or "A-B", or a pair (A, B)."""
    want = "an integer from 1 to %d, \"A-B\" or (A, B) with 1 <= A <= B and at most 1024 steps" % _U32
    r = v
    if isinstance(r, str):
        parts = r.split("-")
        if len(parts) in (1, 2) and all(p.isdigit() for p in parts):
            r = tuple(int(p) for p in parts)
    if isinstance(r, numbers.Integral) and not isinstance(r, (bool, np.bool_)):
        r = (r, r)
    if (isinstance(r, tuple) and len(r) in (1, 2) and
            all(isinstance(p, numbers.Integral) and not isinstance(p, (bool, np.bool_)) for p in r)):
        a, b = r[0], r[-1]
        if 1 <= a <= b <= _U32 and b - a < 1024:
            return int(a), int(b)
    raise _bad("horizon", "horizon", want, v)


def _real(name, option, v, want, ok):
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real) or not ok(float(v)):
        raise _bad(name, option, want, v)
    return float(v)


def _flag(name, option, v):
    if not isinstance(v, (bool, np.bool_)):
        raise _bad(name, option, "True or False", v)
    return bool(v)


def _path(name, v):
    try:
        b = os.fsencode(v)
    except TypeError:
        raise _bad(name, None, "a path (str, bytes or os.PathLike)", v) from None
    if not b or b"\0" in b:
        raise _bad(name, None, "a path, not empty and without a NUL character", v)
    return b


def _names(name, option, v, none):
    """A list of names as seqfeed spells it (a name with a comma in quotes), encoded; None stays None."""
    if v is None:
        return None
    want = "a list of names or one comma-separated str, not empty and without a NUL character (None: %s)" % none
    if isinstance(v, str):
        text = v
    else:
        try:
            items = list(v) if not isinstance(v, (bytes, bytearray)) else None
        except TypeError:
            items = None
        if not items or not all(isinstance(n, str) and n for n in items):
            raise _bad(name, option, want, v)
        text = ",".join('"%s"' % n.replace('"', '""') if ("," in n or '"' in n or n != n.strip()) else n
                        for n in items)
    if not text or "\0" in text:
        raise _bad(name, option, want, v)
    return text.encode("utf-8")


class _Handle:
    """A C handle shared by threads: calls take it (`with h as p`), close()
    waits for those in flight, then closes; a call after close raises
    ValueError instead of handing C a freed pointer."""

    def __init__(self, ptr, close, what):
        self._ptr, self._close, self._what = ptr, close, what
        self._cond, self._busy = threading.Condition(), 0

    def __enter__(self):
        with self._cond:
            if self._ptr is None:
                raise ValueError("%s is closed" % self._what)
            self._busy += 1
            return self._ptr

    def __exit__(self, *exc):
        with self._cond:
            self._busy -= 1
            if not self._busy:
                self._cond.notify_all()

    @property
    def closed(self):
        return self._ptr is None

    def close(self):
        with self._cond:
            ptr, self._ptr = self._ptr, None
            while self._busy:
                self._cond.wait()
        if ptr is not None:
            self._close(ptr)


def _described(fn, handle):
    """The JSON a describe function of libseqfeed writes for handle (malloc'd, freed here), parsed."""
    raw = fn(handle)
    if not raw:
        raise MemoryError
    try:
        return json.loads(ctypes.string_at(raw).decode("utf-8"))
    finally:
        _lib.sf_api_free(raw)


class Pack:
    """An .sfpack file: its columns, statistics, series and time column.
    Reads may run in several threads at once; close() (or leaving a with
    block) waits for them, and any call after it raises ValueError."""

    def __init__(self, path):
        self._h = None
        p, err = _vp(), _Err()
        _check(_lib.sf_api_pack_open(ctypes.byref(p), _path("path", path), ctypes.byref(err)), err)
        self._h = _Handle(p.value, _lib.sf_api_pack_close, "Pack %s" % os.fsdecode(path))
        with self._h as ptr:
            info = _described(_lib.sf_api_pack_describe, ptr)
        self.path, self.rows, self.version = path, info["rows"], info["version"]
        self.columns = [c["name"] for c in info["columns"]]
        self.stats = {c["name"]: {k: c[k] for k in ("min", "max", "mean", "std")} for c in info["columns"]}
        self.categories = {c["name"]: c["categories"] for c in info["columns"] if "categories" in c}
        # Values pack --missing ffill filled in, per column: read() gives them as filled.
        self.imputed = {c["name"]: c["imputed"] for c in info["columns"]}
        self.series_column = info["series_column"] or None
        self.series = [(s["name"], s["first_row"], s["rows"]) for s in info["series"]]
        self.time_column, self.time_kind = info["time_column"], info["time_kind"]

    def _rows(self, start, stop):
        start = _int("start", None, start, 0, self.rows)
        stop = self.rows if stop is None else _int("stop", None, stop, start, self.rows, none="the last row")
        return start, stop

    def read(self, columns=None, start=0, stop=None):
        """Rows [start, stop) of the columns (names; None: all) as float32 (rows, columns); values pack
        imputed (--missing ffill, counted in self.imputed) come as filled in."""
        if columns is None:
            columns = self.columns
        elif isinstance(columns, (str, bytes)) or not hasattr(columns, "__iter__"):
            raise _bad("columns", None, "a list of column names (None: all)", columns)
        idx = []
        for c in columns:
            if not isinstance(c, str) or c not in self.columns:
                raise ValueError("columns: %r is not a column of %s (its columns: %s)" %
                                 (c, os.fsdecode(self.path), ", ".join(self.columns)))
            idx.append(self.columns.index(c))
        idx = np.array(idx, dtype=np.uint32)
        start, stop = self._rows(start, stop)
        out = np.empty((stop - start, len(idx)), dtype=np.float32)
        err = _Err()
        with self._h as p:
            rc = _lib.sf_api_pack_read(p, idx.ctypes.data, len(idx), start, stop, out.ctypes.data, ctypes.byref(err))
        _check(rc, err)
        return out

    def read_times(self, start=0, stop=None):
        """Rows' times as int64 (ISO-8601 files: microseconds since 1970-01-01T00:00Z)."""
        start, stop = self._rows(start, stop)
        out = np.empty(stop - start, dtype=np.int64)
        err = _Err()
        with self._h as p:
            rc = _lib.sf_api_pack_read_times(p, start, stop, out.ctypes.data, ctypes.byref(err))
        _check(rc, err)
        return out

    @property
    def closed(self):
        return self._h is None or self._h.closed

    def close(self):
        if self._h is not None:
            self._h.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()


class _Batches:
    """One pass over a Dataset's epochs: its own pipeline, closed at the end,
    by close(), or by the Dataset's close().

    A batch's arrays are views of the pipeline's own slot buffer, which the
    C library hands over in exchange for a spare one (no copy). Each buffer
    gets a record once, [pointer, lease, free count, y, x memory, x parts
    (None without covariates), pointer as a c_void_p],
    whose master arrays each batch in it is a fresh view of: a buffer the
    caller let go (_held back at the record's count) is the spare of a later
    call, and a held one is never written, as it never goes back. A record
    held for long is dropped: its lease gives the memory back (_Home) when
    the last array of it goes. Every call holds the lock, which close()
    takes to end the pipeline."""

    held = 4  # batches handed out (and maybe held) before the oldest held one's record is dropped

    def __init__(self, ds, opts):
        d, err = _vp(), _Err()
        _check(_lib.sf_dataset_open(ctypes.byref(d), ctypes.byref(opts), ctypes.byref(err)), err)
        self._cd, self._lock, self._ended = d, threading.Lock(), False
        # The batches' shape as this pipeline says, which is the Dataset's
        # unless the file was replaced since.
        info = _DatasetInfo()
        _lib.sf_dataset_shape(d, ctypes.byref(info))
        y = (info.batch, info.steps, info.ntargets) if info.steps > 1 else (info.batch, info.ntargets)
        self._info = info
        self._shape = (info.batch, info.window * info.nfeatures + info.steps * info.nfuture + info.nonehot), y
        # x as the model takes it straight from the memory, without covariates
        self._plain = not info.nfuture and not info.nonehot
        self._home, self._lease, self._out, self._ring = _Home(), None, collections.deque(), {}
        self._t = _Taken()
        self._args = (ctypes.byref(self._t, _TAKEN_X), ctypes.byref(self._t, _TAKEN_Y),
                      ctypes.byref(self._t, _TAKEN_ERR))
        # The pointers as ints through a memoryview: cheaper than the field's getter
        self._taken = memoryview(self._t).cast("B")[:_TAKEN_Y + ctypes.sizeof(_vp)].cast("P")
        if (info.batch, info.window, info.nfeatures, info.nfuture, info.nonehot, y) != (
                ds.batch, ds.window, ds.inputs, ds.nfuture, ds.nonehot, ds._y_shape):
            self.close()
            raise SeqfeedError(-3, "%s changed since the Dataset was made: batches of %s inputs, %s targets, not %s "
                               "and %s (make a new Dataset)" % (os.fsdecode(ds.path), info.nfeatures, info.ntargets,
                                                               ds.inputs, ds.targets))

    def __iter__(self):
        return self

    def _record(self, x, y):
        """The record of the buffer at x (y its targets), new to this iterator."""
        flat, ys = self._shape
        if self._lease is None:
            self._lease = _lease_type(y - x + 4 * math.prod(ys))
        lease = self._lease.from_address(x)
        lease.home = self._home
        # Each master straight on the lease: a view of one has it as its base.
        my = np.ndarray(ys, np.float32, lease, y - x)
        if self._plain:
            i = self._info
            rec = [x, lease, 0, my, np.ndarray((i.batch, i.window, i.nfeatures), np.float32, lease), None, _vp(x)]
        else:
            mflat = np.ndarray(flat, np.float32, lease)  # the parts' base
            rec = [x, lease, 0, my, mflat, _model_x(mflat, self._info), _vp(x)]
            del mflat
        del lease, my  # the count is the record's own references only
        rec[2] = _held(rec)
        return rec

    def __next__(self):
        # `with`, not acquire() and try: a KeyboardInterrupt raised as
        # acquire() returns would leave the lock held and close() hanging.
        with self._lock:
            d = self._cd
            if d is None:
                if self._ended:
                    raise StopIteration
                raise ValueError("the Dataset's iterator is closed")
            out, spare, raw = self._out, None, None
            while out:  # the oldest batch handed out, when let go, is this call's spare
                rec = out[0]
                if _refs(rec[1]) + _refs(rec[3]) + _refs(rec[4]) == rec[2]:  # _held(rec), inline
                    spare = out.popleft()
                    break
                if len(out) < self.held:
                    break
                out.popleft()  # its lease gives the memory back when it goes
            if spare is None and self._home.free:
                try:
                    raw = _vp(self._home.free.pop())
                except IndexError:
                    pass
            a = self._args
            if spare:
                # The pipeline's from the call on, so in the ring before it:
                # an exception after the call (Ctrl-C that came while it
                # waited) must not drop the record, whose lease would give
                # the pipeline's slot to home, and both would hand it out.
                self._ring[spare[0]] = spare
            rc = _next_buffer(d, spare[6] if spare else raw, a[0], a[1], a[2])
            if rc == 1:
                x = self._taken[0]
                rec = self._ring.pop(x, None) or self._record(x, self._taken[1])
                out.append(rec)
                if rec[5] is None:
                    return rec[4].view(), rec[3].view()
                return {k: v.view() for k, v in rec[5].items()}, rec[3].view()
            if spare:
                out.appendleft(self._ring.pop(spare[0]))
            elif raw is not None:
                self._home.give(raw.value)
            _check(rc, self._t.err)
            self._ended = True
        self.close()
        raise StopIteration

    def close(self):
        with self._lock:
            d, self._cd = self._cd, None
            if d is not None:
                _lib.sf_dataset_close(d)  # frees the buffers in its slots, the spares given it
            for rec in self._ring.values():
                rec[1].home = None  # sf_dataset_close freed its memory
            self._ring.clear()
            self._home.closed = True
            self._out.clear()  # buffers no array of is left: their leases free them now
            self._home.drain()

    def __del__(self):
        if hasattr(self, "_home"):
            self.close()


class Dataset:
    """The batches `seqfeed train` draws, as an iterable of (x, y) float32
    arrays: x (batch, window, inputs), y (batch, targets), scaled as train
    scales them; horizon="A-B" (or (A, B)) gives y (batch, steps, targets),
    the rows A to B ahead, as the exported model outputs them. replicas and replica give replica `replica`'s share (each
    batch batch_size / replicas windows), as train's replica of that number
    sees it. shuffle=False keeps the windows of each block in order (pool:
    the shuffle pool in windows as --pool, None: 16384). max_gap is in
    seconds (None: no limit). norm_scope="series" scales each series by its
    own training rows' statistics (--norm-scope series). future_features
    (--future-features) makes x a dict of the exported model's two named
    inputs: "window" as above and "future" (batch, steps, nfuture), the
    future features at each window's target rows; series_features="onehot"
    or "embedding:D" (--series-features) adds "series" (batch, series),
    each window's series one-hot (an embedding is the model's). Its len() is the batches of all epochs;
    iterating again starts the epochs again. Each argument is in the range of
    the train option it mirrors (ValueError otherwise). close() ends every
    iteration in progress (waiting for a batch being taken) and any later.
    A training batch is no copy: its arrays are views of the pipeline's
    memory, which is written again only once no array of the batch is
    left, so a batch held (whole, a view, a tensor of it) never changes.

    split="validation" gives instead the windows train validates on (its
    val_split part, which `seqfeed evaluate` scores): in order, the same
    every pass, the last batch shorter; shuffle, pool, seed and epochs do
    not apply. scaler holds the training part's statistics and scaling
    (splits.Scaler); unscale(y, x) maps a model's outputs to data units.

    In Keras 3 (keras imported before the Dataset is made, which makes it a
    keras.utils.PyDataset too): model.fit(ds, validation_data=val, epochs=E)
    on any backend, each window once per epoch, Keras' epoch k train's
    epoch k (frameworks.py says how). In PyTorch: torch.from_numpy(x) is a
    view of each batch, or DataLoader(ds.to_torch(), batch_size=None);
    tf.data: ds.to_tf()."""

    def __new__(cls, *args, **kwargs):
        if cls is Dataset and "keras" in sys.modules:  # never imported here: Keras is optional, and slow to load
            from .frameworks import dataset_class
            cls = dataset_class(cls)
        return super().__new__(cls)

    def __init__(self, path, window=60, batch_size=32, features=None, targets=None, shuffle=True, seed=1, epochs=1,
                 val_split=0.1, stride=1, sampling_rate=1, horizon=1, time_features=None, norm="zscore",
                 target_change=False, max_gap=None, replicas=1, replica=0, pool=None, decoders=None, split="train",
                 norm_scope="global", future_features=None, series_features=None):
        self._closed, self._open_iters, self._lock = False, weakref.WeakSet(), threading.Lock()
        self._val = self._feed = None
        replicas = _int("replicas", "replicas", replicas, 1, 256)
        self.split = splits.check_split(split, replicas)
        batch_size = _int("batch_size", "batch-size", batch_size, 1, 2**20)
        if batch_size % replicas:
            raise ValueError("batch_size (--batch-size) must be a multiple of replicas (--replicas): each replica "
                             "takes batch_size / replicas windows; got %d and %d" % (batch_size, replicas))
        shuffle = _flag("shuffle", None, shuffle)
        pool = _int("pool", "pool", pool, 0, 2**56 - 1, none="16384 windows")
        if not shuffle and pool is not None and pool > 1:
            raise ValueError("shuffle=False and pool=%d contradict each other: a pool of more than 1 window shuffles"
                             % pool)
        if norm not in ("zscore", "minmax", "none"):
            raise _bad("norm", "norm", "one of zscore, minmax, none", norm)
        if norm_scope not in ("global", "series"):
            raise _bad("norm_scope", "norm-scope", "global or series", norm_scope)
        self._opts = _DatasetOpts(
            data=_path("path", path),
            features=_names("features", "features", features, "every column"),
            targets=_names("targets", "targets", targets, "every numeric column"),
            time_features=_names("time_features", "time-features", time_features, "none"),
            norm=norm.encode(),
            target_change=_flag("target_change", "target", target_change),
            window=_int("window", "window", window, 1, _U32),
            stride=_int("stride", "stride", stride, 1, _U32),
            sampling_rate=_int("sampling_rate", "sampling-rate", sampling_rate, 1, _U32),
            horizon=_horizon(horizon)[1],
            horizon_steps=_horizon(horizon)[1] - _horizon(horizon)[0] + 1,
            batch=batch_size,
            # --pool's 0 or 1 is no shuffle, where the C API's 0 is its default
            pool=(0 if pool is None else max(pool, 1)) if shuffle else 1,
            seed=_int("seed", "seed", seed, 0, _U64),
            epochs=_int("epochs", "epochs", epochs, 1, 2**63 - 1),
            val_split=_real("val_split", "val-split", val_split, "a number from 0 to below 1",
                            lambda v: 0 <= v < 1),
            max_gap=0.0 if max_gap is None else _real(
                "max_gap", "max-gap", max_gap, "a number of seconds above 0 and finite (None: no limit)",
                lambda v: v > 0 and math.isfinite(v)),
            replicas=replicas,
            replica=_int("replica", None, replica, 0, replicas - 1),
            decoders=_int("decoders", "decoders", decoders, 1, 256, none="tuned, as --pipeline auto") or 0,
            norm_scope=norm_scope.encode(),
            future_features=_names("future_features", "future-features", future_features, "none"),
            series_features=_series_features(series_features))
        self.path = path
        if self.split == "validation":  # open for the Dataset's life: batches are read by index
            self._val = splits.Validation(self, self._opts)
            info, self.scaler = self._val.info, self._val.scaler
            self.window, self.inputs, self.targets, self.batch = info.window, info.nfeatures, info.ntargets, info.batch
            self.steps, self.nfuture, self.nonehot = info.steps, info.nfuture, info.nonehot
            self._y_shape = (self.batch, self.steps, self.targets) if self.steps > 1 else (self.batch, self.targets)
            self.batches_per_epoch, self.epochs, self.windows = info.batches_per_epoch, 1, self._val.windows
            return
        d, err = _vp(), _Err()  # opened once now to say what is wrong, not at the first batch
        _check(_lib.sf_dataset_open(ctypes.byref(d), ctypes.byref(self._opts), ctypes.byref(err)), err)
        info = _DatasetInfo()
        rc = _lib.sf_dataset_shape(d, ctypes.byref(info))
        try:
            self.scaler = splits.describe(_lib.sf_dataset_describe, d)
        finally:
            _lib.sf_dataset_close(d)
        if rc:
            raise SeqfeedError(rc, "sf_dataset_shape refused an open dataset")
        self.window, self.inputs, self.targets, self.batch = info.window, info.nfeatures, info.ntargets, info.batch
        self.steps = info.steps  # y is (batch, steps, targets) when above 1, as the exported model's output
        self.nfuture = info.nfuture  # future inputs a step: x is then {"window": ..., "future": ...}
        self.nonehot = info.nonehot  # the series' one-hot inputs: x["series"]
        self._y_shape = (self.batch, self.steps, self.targets) if self.steps > 1 else (self.batch, self.targets)
        self.batches_per_epoch, self.epochs = info.batches_per_epoch, info.epochs
        self.windows = None  # of the validation split

    def __repr__(self):
        return ("<seqfeed.Dataset %r split=%s: %d batches of %d windows an epoch (model.fit(ds) takes it when keras "
                "is imported before it is made)>" % (os.fsdecode(self.path), self.split, self.batches_per_epoch,
                                                     self.batch))

    def __len__(self):
        n = self.batches_per_epoch * self.epochs
        if n > sys.maxsize:  # else Python's own "cannot fit 'int' into an index-sized integer"
            raise OverflowError("len(): %d epochs of %d batches is more than len() can return (sys.maxsize); "
                                "iterate over the Dataset instead" % (self.epochs, self.batches_per_epoch))
        return n

    def __iter__(self):
        return self._open(self._opts)

    def _open(self, opts):
        with self._lock:  # a close() meanwhile sees this iterator
            if self._closed:
                raise ValueError("Dataset %s is closed" % os.fsdecode(self.path))
            it = splits.ValidationBatches(self._val) if self._val else _Batches(self, opts)
            self._open_iters.add(it)
        return it

    def _endless(self):
        """The training batches of every epoch train would run, with no end (Keras asks for its epochs)."""
        opts = _DatasetOpts.from_buffer_copy(self._opts)
        opts.epochs = 2**63 - 1
        return self._open(opts)

    @property
    def num_batches(self):
        """Batches an epoch: Keras' PyDataset.num_batches."""
        return self.batches_per_epoch

    def __getitem__(self, index):
        """Keras' PyDataset access: the validation split's batch index; the training split's next batch
        for an index new in this epoch's round, or the one it got for an index asked again
        (frameworks.py)."""
        if isinstance(index, (bool, np.bool_)) or not isinstance(index, numbers.Integral):
            raise TypeError("a batch index is an integer, got %r" % (index,))
        given, index = int(index), int(index) + (self.batches_per_epoch if index < 0 else 0)
        if not 0 <= index < self.batches_per_epoch:
            raise IndexError("batch %d of %d an epoch (-%d to %d)" % (given, self.batches_per_epoch,
                                                                      self.batches_per_epoch, self.batches_per_epoch - 1))
        if self._val:
            return self._val.read(index)
        with self._lock:
            if self._feed is None:
                from .frameworks import Feed
                self._feed = Feed(self)
        return self._feed.get(index)

    def unscale(self, y, x=None, quantiles=False):
        """A model's outputs (windows, targets) in data units, as `seqfeed predict` writes them; x, the
        windows' inputs, is needed with target_change; quantiles=True: y has a last axis more, each
        target's quantiles (splits.Scaler.unscale)."""
        if self._opts.norm_scope == b"series":  # scaler holds the global scaling, not each series' own
            raise ValueError("norm_scope='series' scales each series by its own statistics, which unscale does not "
                             "know per window (scaler is the global scaling): seqfeed predict writes forecasts in "
                             "data units (docs/TRAINING.md, Per-series scaling)")
        y = np.asarray(y)
        core = y.shape[:-1] if quantiles else y.shape  # without the quantiles' axis
        if len(core) >= 2 and core[1:] != self._y_shape[1:]:
            raise ValueError("y must be (windows,) + %s as the Dataset's y (%s)%s, got shape %s" %
                             (self._y_shape[1:], "steps, targets" if self.steps > 1 else "targets",
                              ", and a last axis of quantiles" if quantiles else "", y.shape))
        if x is not None and np.ndim(x) == 3 and np.shape(x)[1] != self.window:
            raise ValueError("x must be the windows' inputs, (windows, %d, inputs), got shape %s" %
                             (self.window, np.shape(x)))
        return self.scaler.unscale(y, x, quantiles)

    def to_tf(self):
        """A tf.data.Dataset of its batches (TensorFlow needed)."""
        from .frameworks import to_tf
        return to_tf(self)

    def to_torch(self):
        """A torch IterableDataset of its batches as tensors (PyTorch needed)."""
        from .frameworks import to_torch
        return to_torch(self)

    def close(self):
        """Ends every iteration over it (a next() then raises ValueError), and any later one."""
        with self._lock:
            self._closed = True
            its = list(self._open_iters)
        for it in its:
            it.close()
        if self._val:
            self._val.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# ---- packing ----

def _name(name, option, v, none, empty=False):
    """One column name (it may hold a comma), encoded; None stays None; "" only where empty allows it."""
    if v is None:
        return None
    if not isinstance(v, str) or "\0" in v or (not v and not empty):
        raise _bad(name, option, "a column name (None: %s)" % none, v)
    return v.encode("utf-8")


def _is_parquet(path):
    """A directory (of Parquet files), or a file that starts with Parquet's magic PAR1."""
    try:
        st = os.stat(path)
        if stat.S_ISDIR(st.st_mode):
            return True
        if not stat.S_ISREG(st.st_mode):
            return False  # a FIFO or a device: not opened here, where it would lose its first bytes
        with open(path, "rb") as f:
            return f.read(4) == b"PAR1"
    except OSError:
        return False  # the CSV packer says what is wrong with it


def parquet_reader(path):
    """A Parquet file, or a directory of them (file names sorted; the hive partitions of their folders,
    such as site=north/, as dictionary columns of text after the file's own), as a pyarrow
    RecordBatchReader of batches of 65536 rows read a row group at a time: memory stays bounded whatever
    the size of the data. Every file must have the same columns (the error names the first that differs)."""
    from . import parquet
    return parquet.ParquetSource([os.fsdecode(path)]).reader()


def pack(source, out, series_column=None, time_column=None, columns=None, drop_columns=None, categorical=None,
         missing="error", chunk_rows=None, threads=None, memory_budget=None, series_per_file=False, progress=None):
    """Packs source into the .sfpack file out, as `seqfeed pack` packs a CSV, and returns what it did: a dict
    of rows, rows_dropped, values_filled, series, bytes, regrouped (whether the rows of series interleaved)
    and notes (pack's warnings and notes; the warnings also issued as Python warnings). source is any object with __arrow_c_stream__ (the Arrow PyCapsule interface: a pyarrow
    Table or RecordBatchReader, a Polars DataFrame, a DuckDB result...), a pandas DataFrame (through
    pyarrow), a Parquet file, a directory of them or a list of either (parquet_reader: batch by batch), or a
    CSV file.
    Arrow columns: bool, integers and floats are values; timestamps and dates times (the first kept one is
    the time column unless time_column names another, or "" for none); string, large_string, string_view
    (Polars') and dictionary columns, and integers, can be series_column or categorical. Each row keeps its index in the source,
    1-based, as a CSV row keeps its line; a row of Parquet files keeps its file and its row there (counted
    from 1: a file's first row is row 1), which predict --with-actual writes as file and line. series_column
    None looks at the first batch for a column of integer series ids (an error where the time goes back
    where it changes, else a warning); "" says the rows are one series. series_per_file (Parquet files
    only, --series-per-file): each file one series, named after the file without its extension. progress:
    None, or a callable(rows, total) called after each batch (a CSV's: each buffer read) with the rows read and
    (Parquet) the files' rows in all, else 0; an exception it raises stops the pack (no output) and is raised. The options mirror
    pack's: series_column (--series-column),
    time_column (--time-column), columns and drop_columns (--columns, --drop-columns), categorical
    (--categorical), missing (--missing: "error", "drop" or "ffill"; nulls, NaN and infinities are missing;
    "drop" also leaves out rows whose series id is null),
    chunk_rows (--chunk-rows), threads (--threads, None: one per core), memory_budget (--memory-budget, in
    MB, None: 64). The rows of a series need not be contiguous: rows whose series come back after another
    started (long format sorted by time, one row per series per step) are regrouped, each series' rows in
    the source's order and the series in order of first appearance, holding at most memory_budget MB and
    spilling sorted runs to temporary files beside out (unlinked at once) beyond it."""
    if missing not in ("error", "drop", "ffill"):
        raise _bad("missing", "missing", "one of error, drop, ffill", missing)
    if columns is not None and drop_columns is not None:
        raise ValueError("columns (--columns) and drop_columns (--drop-columns) exclude each other")
    opts = _PackOpts(
        columns=_names("columns", "columns", columns, "every column"),
        drop_columns=_names("drop_columns", "drop-columns", drop_columns, "none"),
        series_column=_name("series_column", "series-column", series_column,
                            '"" for one series; None looks for numeric ids', empty=True),
        time_column=_name("time_column", "time-column", time_column, '"" for none; None finds the first time',
                          empty=True),
        categorical=_names("categorical", "categorical", categorical, "none"),
        missing=missing.encode(),
        chunk_rows=_int("chunk_rows", "chunk-rows", chunk_rows, 1, _U32, none="1 MiB of values a chunk") or 0,
        threads=_int("threads", "threads", threads, 1, 256, none="one per core") or 0,
        memory_budget=0 if memory_budget is None else
        int(_real("memory_budget", "memory-budget", memory_budget, "a number of MB from 0.001 to 1e9 (None: 64)",
                    lambda v: 0.001 <= v <= 1e9) * 1e6))
    out_b = _path("out", out)
    series_per_file = _flag("series_per_file", "series-per-file", series_per_file)
    if progress is not None and not callable(progress):
        raise _bad("progress", None, "None or a callable(rows, total)", progress)
    report, err = _vp(), _Err()
    from . import parquet
    paths = [source] if isinstance(source, (str, bytes, os.PathLike)) else None
    if paths is None and isinstance(source, (list, tuple)) and source and \
            all(isinstance(p, (str, bytes, os.PathLike)) for p in source):
        paths = list(source)
    if paths is not None:
        paths = [_path("source", p) for p in paths]
        if len(paths) == 1 and not _is_parquet(paths[0]):
            if series_per_file:
                raise ValueError("series_per_file (--series-per-file) is for Parquet files here (seqfeed pack "
                                 "A.csv B.csv --series-per-file packs CSV files)")
            raised = []
            with _Interrupt(raised) as intr:
                # Called with the rows and the CSV's bytes so far: progress(rows, 0), no total known; always
                # there, to stop the pack on Ctrl-C.
                cb = _PROGRESS(lambda arg, done, nbytes: _call(progress, raised, done, 0, intr))
                rc = _lib.sf_api_pack_csv_progress(paths[0], out_b, ctypes.byref(opts), cb, None,
                                                   ctypes.byref(report), ctypes.byref(err))
            return _pack_report(rc, err, report, raised)
        for p in paths:
            if not os.path.exists(p):
                raise SeqfeedError(-1, "%s: cannot open (no such file or directory)" % os.fsdecode(p))
            if not _is_parquet(p):
                raise ValueError("%s is not a Parquet file (nor a directory): a list of sources is of Parquet files "
                                 "(seqfeed pack A.csv B.csv packs CSV files)" % os.fsdecode(p))
        src = parquet.ParquetSource([os.fsdecode(p) for p in paths])
        name = ", ".join(os.fsdecode(p) for p in paths)
        return parquet.pack(src.reader(), out_b, opts, name, src.files, src.rows, series_per_file, progress)
    if series_per_file:
        raise ValueError("series_per_file (--series-per-file) needs Parquet files: an Arrow stream has no files")
    # A stream's files are not known here (parquet_reader's, a dataset's): an output that is a Parquet file,
    # or a link to one, is one of them more often than not, and would be replaced by the .sfpack.
    if os.path.isfile(out_b) and _is_parquet(out_b):
        raise ValueError("out %s is a Parquet file%s: the .sfpack would replace it (give another path)" % (
            os.fsdecode(out_b), " (through a symbolic link)" if os.path.islink(out_b) else ""))
    if hasattr(source, "__arrow_c_stream__"):
        name = "the %s's Arrow stream" % type(source).__name__
    elif type(source).__module__.split(".")[0] == "pandas":
        try:
            import pyarrow as pa
        except ImportError:
            raise ImportError("packing a pandas DataFrame needs pyarrow, which is not installed: pip install "
                              "pyarrow") from None
        name, source = "the DataFrame's Arrow stream", pa.Table.from_pandas(source, preserve_index=False)
    else:
        raise TypeError("source must have __arrow_c_stream__ (the Arrow PyCapsule interface: a pyarrow Table, "
                        "a Polars DataFrame...), be a pandas DataFrame, a path to a CSV or Parquet file, or a list "
                        "of Parquet paths; got %s" % type(source).__name__)
    return parquet.pack(source, out_b, opts, name, progress=progress)


def _pack_report(rc, err, report, raised, stacklevel=3):
    """The report of a pack, its warnings issued; or the exception in raised (a callback's, the source's),
    which stopped the pack, its output not written: the caller's."""
    if raised:
        _lib.sf_api_free(report)
        raise raised[0]
    _check(rc, err)
    try:
        r = json.loads(ctypes.string_at(report.value).decode("utf-8"))
    finally:
        _lib.sf_api_free(report)
    import warnings
    for note in r["notes"]:
        if note.startswith("warning: "):
            warnings.warn(note[len("warning: "):], stacklevel=stacklevel)
    return r


def load_checkpoint(path):
    """A seqfeed checkpoint: (tensors by Keras name as float32 arrays, metadata dict)."""
    name = os.fsdecode(_path("path", path))

    def corrupt(why):
        return SeqfeedError(-5, "%s: %s" % (name, why))

    try:
        # O_NONBLOCK: a FIFO opens at once (and is refused) instead of
        # waiting for a writer.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        try:
            st = os.fstat(fd)
            f = os.fdopen(fd, "rb") if stat.S_ISREG(st.st_mode) else None
        except BaseException:
            os.close(fd)
            raise
        if f is None:
            os.close(fd)
            what = "Is a directory" if stat.S_ISDIR(st.st_mode) else "a FIFO" if stat.S_ISFIFO(st.st_mode) \
                else "not a regular file"
            raise SeqfeedError(-1, "%s: cannot read the checkpoint (%s)" % (name, what))
        with f:
            size = st.st_size
            head = f.read(8)
            if len(head) < 8:
                raise corrupt("%d bytes: not a safetensors file (too short for its header's size)" % len(head))
            n = struct.unpack("<Q", head)[0]
            if n > size - 8:
                raise corrupt("its header of %d bytes runs past the file's %d bytes" % (n, size))
            raw = f.read(n)
            data = f.read()
    except OSError as e:  # a missing or unreadable file: said as the C library says it
        raise SeqfeedError(-1, "%s: cannot read the checkpoint (%s)" % (name, e.strerror or e)) from None
    try:
        header = json.loads(raw)
    except (ValueError, RecursionError) as e:  # RecursionError: brackets nested deeper than json parses
        raise corrupt("its header is not JSON (%s)" % e) from None
    if not isinstance(header, dict):
        raise corrupt("its header is not a JSON object")
    meta = header.pop("__metadata__", {})
    if not isinstance(meta, dict) or str(meta.get("format", "")).split(" ")[0] != "seqfeed-checkpoint":
        raise corrupt("not a seqfeed checkpoint")
    tensors, spans = {}, []
    for key, t in header.items():
        try:
            lo, hi = t["data_offsets"]
            shape, dtype = list(t["shape"]), t["dtype"]
            ok = all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in [lo, hi] + shape)
        except (TypeError, KeyError, ValueError):
            ok = False
        # Each dimension below 2^63 and at most 8 of them: numpy refuses more
        # (as ValueError) even for an empty tensor, and more than 2^63 bytes as if
        # it held them; seqfeed writes 1 or 2 dimensions.
        ok = ok and len(shape) <= 8 and all(v < 2**63 for v in shape)
        ok = ok and 4 * math.prod(v for v in shape if v) < 2**63
        if not ok or dtype != "F32" or not lo <= hi <= len(data) or hi - lo != 4 * math.prod(shape):
            raise corrupt("tensor %r: expected F32 with data_offsets inside the file's %d data bytes matching its "
                          "shape" % (key, len(data)))
        tensors[key] = np.frombuffer(data[lo:hi], dtype=np.float32).reshape(shape).copy()
        spans.append((lo, hi, key))
        bad = np.flatnonzero(~np.isfinite(tensors[key]))
        if len(bad):  # as the C reader refuses them
            v = tensors[key].flat[bad[0]]
            raise corrupt("tensor %r holds %s at index %d: the weights or scaling are damaged (a run that diverged "
                          "writes no checkpoint)" % (key, "NaN" if np.isnan(v) else "an infinity", bad[0]))
    at = 0
    for lo, hi, key in sorted(spans):
        if lo != at:
            raise corrupt("tensor %r starts at data byte %d, expected %d (the tensors must cover the data without "
                          "gaps or overlap)" % (key, lo, at))
        at = hi
    if at != len(data):
        raise corrupt("the tensors cover %d data bytes, the file has %d" % (at, len(data)))
    return tensors, meta


# The exported Keras model's inputs and outputs (inputs.py).
from .inputs import WindowIndex, forecasts, model_inputs  # noqa: E402

__all__ += ["model_inputs", "forecasts", "WindowIndex"]

from . import splits  # noqa: E402 (it reads the names above)
