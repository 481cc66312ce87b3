"""Every argument of seqfeed's Python package at its edges, the C API's own
checks of the same fields, and closed or shared handles used from threads
(tests/python/args.sh makes d.sfpack, with times, and plain.sfpack, without;
argv[1] is the seqfeed program, whose messages give each option's range)."""
import ctypes
import math
import os
import re
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import seqfeed

SEQFEED = sys.argv[1]
failures = []


def fail(what):
    failures.append(what)
    print("FAIL:", what, file=sys.stderr)


def raises(exc, fn, msg, *args, **kw):
    """fn(*args, **kw) raises exc with exactly msg (a compiled regex: matching it)."""
    try:
        fn(*args, **kw)
    except exc as e:
        ok = msg.fullmatch(str(e)) if isinstance(msg, re.Pattern) else str(e) == msg
        if not ok:
            fail("%s%r: said %r, expected %r" % (getattr(fn, "__name__", fn), kw or args, str(e), msg))
        return
    except Exception as e:  # noqa: BLE001: any other exception is the failure reported
        fail("%s%r: raised %s %r, expected %s" % (getattr(fn, "__name__", fn), kw or args, type(e).__name__, e,
                                                  exc.__name__))
        return
    fail("%s%r: accepted, expected %s %r" % (getattr(fn, "__name__", fn), kw or args, exc.__name__, msg))


def dataset(**kw):
    args = dict(window=12, targets="a")
    args.update(kw)
    return seqfeed.Dataset(args.pop("path", "d.sfpack"), **args)


def cli_range(option, value):
    """What `seqfeed train --OPTION VALUE` says the option's range is."""
    r = subprocess.run([SEQFEED, "train", "--data", "d.sfpack", "--" + option, value], capture_output=True, text=True)
    m = re.search(r"--%s \S*: expected (.*)" % re.escape(option), r.stderr)
    if r.returncode != 2 or not m:
        fail("seqfeed train --%s %s: exit %d, %r" % (option, value, r.returncode, r.stderr))
        return "?"
    return m.group(1)


# ---- Dataset: every integer argument, as train's option says its range ----
U32, U64 = 2**32 - 1, 2**64 - 1
counts = [  # argument, option, low, high, what None means (None: not allowed)
    ("window", "window", 1, U32, None), ("stride", "stride", 1, U32, None),
    ("sampling_rate", "sampling-rate", 1, U32, None),
    ("batch_size", "batch-size", 1, 2**20, None), ("epochs", "epochs", 1, 2**63 - 1, None),
    ("seed", "seed", 0, U64, None), ("replicas", "replicas", 1, 256, None),
    ("pool", "pool", 0, 2**56 - 1, "16384 windows"), ("decoders", "decoders", 1, 256, "tuned, as --pipeline auto"),
]
for arg, option, lo, hi, none in counts:
    want = cli_range(option, str(hi + 1))
    if want != "an integer from %d to %d" % (lo, hi):
        fail("--%s: seqfeed says %r, the package %d to %d" % (option, want, lo, hi))
    bad = [lo - 1, hi + 1, hi + 2**32 + 1, -(2**64), 1.5, 2.0, float("nan"), float("inf"), True, False, "3", [3]]
    if none is None:
        bad.append(None)
    for v in bad:
        if v == lo and not isinstance(v, bool):
            continue
        tail = " (None: %s)" % none if none else ""
        raises(ValueError, dataset, "%s (--%s) must be %s%s, got %r" % (arg, option, want, tail, v), **{arg: v})
# horizon: N or A-B as --horizon takes them ("3", "1-24" or (1, 24) too), the CLI's range in its words
want = cli_range("horizon", "3-1")
if not want.startswith("an integer from 1 to %d, or a range A-B" % U32):
    fail("--horizon: seqfeed says %r" % want)
for v in [0, U32 + 1, -1, 1.5, True, "3-1", "0-2", "1-1025", "a-b", "-3", (3, 1), [1, 2], None, (1, 2, 3)]:
    raises(ValueError, dataset, "horizon (--horizon) must be an integer from 1 to %d, \"A-B\" or (A, B) with 1 <= A "
           "<= B and at most 1024 steps, got %r" % (U32, v), horizon=v)
for v, steps in ((3, 1), ("3", 1), ("2-4", 3), ((1, 24), 24), ("5-5", 1)):
    ds = dataset(horizon=v, val_split=0)
    x, y = next(iter(ds))
    if ds.steps != steps or y.shape != ((ds.batch, steps, ds.targets) if steps > 1 else (ds.batch, ds.targets)):
        fail("horizon=%r: %d steps, y %s" % (v, ds.steps, y.shape))
    ds.close()
# their values, by a naive windowing of the CSV (unscaled): every window of each series by its start s, x
# rows s .. s + 11, y rows s + 13 .. s + 15; each batch's windows found among them by their x
csv_rows = [line.split(",") for line in open("d.csv").read().split("\n")[1:] if line]
naive = {}
for site in ("north", "south"):
    a_col = np.array([float(r[2]) for r in csv_rows if r[0] == site], dtype=np.float32)
    for s0 in range(len(a_col) - 15):
        naive[a_col[s0:s0 + 12].tobytes()] = a_col[s0 + 13:s0 + 16]
ds = dataset(horizon="2-4", val_split=0, norm="none", features="a")
seen = 0
for x, y in ds:
    for xi, yi in zip(x, y):
        want = naive.get(np.ascontiguousarray(xi[:, 0]).tobytes())
        if want is None or not np.array_equal(yi[:, 0], want):
            fail("horizon 2-4: a window's y %s, the CSV's rows %s" % (yi[:, 0], want))
            break
        seen += 1
if seen != ds.batches_per_epoch * ds.batch or seen < len(naive) - ds.batch:
    fail("horizon 2-4: %d windows drawn of the CSV's %d" % (seen, len(naive)))
ds.close()
# batch 2^32 + 1 once wrapped to 1 in ctypes; 10^7 once gave nothing at all
raises(ValueError, dataset, "batch_size (--batch-size) must be an integer from 1 to 1048576, got 4294967297",
       batch_size=2**32 + 1)
# the range holds yet no batch fits: said, not an empty iterable
raises(seqfeed.SeqfeedError, dataset, re.compile(r"d\.sfpack: \d+ training windows, fewer than one global batch of "
                                                 r"1048576; .* \(hint: .*--batch-size.*"), batch_size=2**20)
raises(seqfeed.SeqfeedError, dataset, re.compile(r"d\.sfpack: 0 training windows, .*--window.*"), window=400)
# the hint names what can still go lower, stride included, and never an argument at its least
raises(seqfeed.SeqfeedError, dataset, re.compile(r"d\.sfpack: 2 training windows, fewer than one global batch of 32; "
                                                 r"a window spans 13 rows, the longest series' training part has \d+ "
                                                 r"rows \(hint: a smaller batch \(--batch-size\), window \(--window\), "
                                                 r"stride \(--stride\), or a smaller val_split \(--val-split\)\)"),
       stride=2**32 - 1)
raises(seqfeed.SeqfeedError, dataset, re.compile(r"d\.sfpack: 0 training windows, fewer than one global batch of 1; "
                                                 r"a window spans 1000001 rows, the longest series' training part has "
                                                 r"\d+ rows \(hint: a smaller horizon \(--horizon\)\)"),
       window=1, batch_size=1, horizon=10**6, val_split=0)
# a pool beyond the file's windows holds only those (sized before anything is
# allocated): the batches of any larger pool, not a multi-PB allocation
huge = [x.copy() for x, _ in dataset(pool=2**50)]
if len(huge) == 0 or any((a != b).any() for a, b in zip(huge, [x.copy() for x, _ in dataset(pool=2**40)])):
    fail("pool=2**50 does not give the batches of pool=2**40")
# as --pool: the largest pool the CLI takes is capped the same way, not refused by a memory check
most = [x.copy() for x, _ in dataset(pool=2**56 - 1)]
if len(most) != len(huge) or any((a != b).any() for a, b in zip(huge, most)):
    fail("pool=2**56-1 does not give the batches of pool=2**50")

# reals, flags, texts
want = cli_range("val-split", "1.5")
assert want == "a number from 0 to below 1", want
for v in (-0.1, 1, 1.0, 1.5, float("nan"), float("inf"), -float("inf"), True, "0.1", None):
    raises(ValueError, dataset, "val_split (--val-split) must be %s, got %r" % (want, v), val_split=v)
for v in (0, 0.0, -1, -1e-9, float("nan"), float("inf"), True, "2h"):
    raises(ValueError, dataset, "max_gap (--max-gap) must be a number of seconds above 0 and finite (None: no "
           "limit), got %r" % (v,), max_gap=v)
for arg, option in (("shuffle", None), ("target_change", "target")):
    for v in (1, 0, "no", None, np.float32(1)):
        raises(ValueError, dataset, "%s%s must be True or False, got %r" % (arg, " (--%s)" % option if option else "",
                                                                             v), **{arg: v})
names = "a list of names or one comma-separated str, not empty and without a NUL character (None: %s)"
for arg, option, none in (("features", "features", "every column"), ("targets", "targets", "every numeric column"),
                          ("time_features", "time-features", "none")):
    for v in (5, "", [], [""], ["a", 3], "a\0b", b"a"):
        raises(ValueError, dataset, "%s (--%s) must be %s, got %r" % (arg, option, names % none, v), **{arg: v})
want = cli_range("norm", "log")
for v in ("log", None, 1, "ZSCORE"):
    raises(ValueError, dataset, "norm (--norm) must be %s, got %r" % (want, v), norm=v)
for v in (-1, 2, 1.0, True, None):
    raises(ValueError, dataset, "replica must be an integer from 0 to 1, got %r" % (v,), batch_size=32, replicas=2,
           replica=v)
raises(ValueError, dataset, "batch_size (--batch-size) must be a multiple of replicas (--replicas): each replica takes "
       "batch_size / replicas windows; got 10 and 3", batch_size=10, replicas=3)
raises(ValueError, dataset, "shuffle=False and pool=5 contradict each other: a pool of more than 1 window shuffles",
       shuffle=False, pool=5)
for v in (5, "", "d.sfpack\0x", None):
    what = "a path (str, bytes or os.PathLike)" if not isinstance(v, str) else \
        "a path, not empty and without a NUL character"
    raises(ValueError, dataset, "path must be %s, got %r" % (what, v), path=v)
raises(seqfeed.SeqfeedError, dataset, re.compile(r"plain\.sfpack: --max-gap needs times.*"), path="plain.sfpack",
       max_gap=3600)

# values at the edges that work, and what they mean
ref = [x.copy() for x, _ in dataset(shuffle=False, epochs=1)]
for kw in (dict(pool=0), dict(pool=1), dict(shuffle=False, pool=1)):  # --pool's 0 or 1: no shuffle
    got = [x.copy() for x, _ in dataset(**kw)]
    if len(got) != len(ref) or any((a != b).any() for a, b in zip(got, ref)):
        fail("%r does not give the batches in plan order" % kw)
big = [x.copy() for x, _ in dataset(max_gap=1e300)]  # beyond int64 ticks: no limit, not an overflow
if len(big) != len([1 for _ in dataset()]):
    fail("max_gap=1e300 changed the batches")
ds = dataset(epochs=2, window=np.int64(12), val_split=0, seed=U64, horizon=1, decoders=1)
n = sum(1 for _ in ds)
if n != len(ds) or n != 2 * ds.batches_per_epoch or n == 0:
    fail("epochs=2: %d batches, len() %d, %d per epoch" % (n, len(ds), ds.batches_per_epoch))
x, y = next(iter(dataset(window=1, batch_size=1)))
if x.shape != (1, 1, 2) or y.shape != (1, 1):
    fail("window=1, batch_size=1: shapes %s %s" % (x.shape, y.shape))

# ---- Pack ----
raises(ValueError, seqfeed.Pack, "path must be a path (str, bytes or os.PathLike), got 5", 5)
raises(ValueError, seqfeed.Pack, "path must be a path, not empty and without a NUL character, got 'd.sfpack\\x00'",
       "d.sfpack\0")
raises(seqfeed.SeqfeedError, seqfeed.Pack, re.compile(r"missing\.sfpack.*"), "missing.sfpack")
p = seqfeed.Pack("d.sfpack")
assert p.rows == 500 and p.columns == ["a", "b"], (p.rows, p.columns)
raises(ValueError, p.read, "columns must be a list of column names (None: all), got 'a'", "a")
raises(ValueError, p.read, "columns must be a list of column names (None: all), got 5", 5)
for c in ("zz", 0, None):
    raises(ValueError, p.read, "columns: %r is not a column of d.sfpack (its columns: a, b)" % (c,), [c])
for fn, pre in ((p.read, (None,)), (p.read_times, ())):
    for v in (-1, 501, 1.0, True, None, "0", 2**64):
        raises(ValueError, fn, "start must be an integer from 0 to 500, got %r" % (v,), *pre, v)
    for v in (9, 501, -1, 10.5, True, 2**64 + 20):
        raises(ValueError, fn, "stop must be an integer from 10 to 500 (None: the last row), got %r" % (v,), *pre, 10, v)
    raises(ValueError, fn, "stop must be an integer from 500 to 500 (None: the last row), got 0", *pre, 500, 0)
assert p.read([], 0, 10).shape == (10, 0) and p.read(None, 7, 7).shape == (0, 2)
assert p.read(["b", "a"], 499).shape == (1, 2) and p.read_times(500).shape == (0,)
with seqfeed.Pack("plain.sfpack") as q:
    raises(seqfeed.SeqfeedError, q.read_times, "plain.sfpack has no time column")
raises(ValueError, q.read, "Pack plain.sfpack is closed")
p.close()
p.close()  # twice is nothing
for fn, args in ((p.read, ()), (p.read_times, ()), (p.read, (["a"], 0, 1))):
    raises(ValueError, fn, "Pack d.sfpack is closed", *args)
assert p.closed

# close in one thread while others read: each read completes or says closed
for rnd in range(20):
    p = seqfeed.Pack("d.sfpack")
    seen, lock = [], threading.Lock()

    def reader():
        try:
            while True:
                a = p.read()
                assert a.shape == (500, 2)
                p.read_times(0, 100)
        except Exception as e:  # noqa: BLE001: recorded, checked below
            with lock:
                seen.append(e)

    ts = [threading.Thread(target=reader) for _ in range(6)]
    for t in ts:
        t.start()
    time.sleep(0.002 * (rnd % 5))
    p.close()
    for t in ts:
        t.join()
    odd = [e for e in seen if not (isinstance(e, ValueError) and str(e) == "Pack d.sfpack is closed")]
    if odd or len(seen) != 6:
        fail("reads racing close: %r" % (odd or seen))
        break

# ---- Dataset iterators: after the end, after close, closed during next ----
ds = dataset(epochs=1)
it = iter(ds)
n = sum(1 for _ in it)
raises(StopIteration, next, "", it)
for rnd in range(10):
    ds = dataset(epochs=10**6)
    its = [iter(ds), iter(ds)]
    seen = []

    def consumer(it):
        try:
            while True:
                x, y = next(it)
                assert x.shape == (32, 12, 2) and y.shape == (32, 1)
        except Exception as e:  # noqa: BLE001: recorded, checked below
            seen.append(e)

    ts = [threading.Thread(target=consumer, args=(its[k % 2],)) for k in range(4)]
    for t in ts:
        t.start()
    time.sleep(0.01 * (rnd % 3))
    ds.close()
    for t in ts:
        t.join()
    odd = [e for e in seen if not (isinstance(e, ValueError) and str(e) == "the Dataset's iterator is closed")]
    if odd or len(seen) != 4:
        fail("next racing close: %r" % (odd or seen))
        break
raises(ValueError, iter, "Dataset d.sfpack is closed", ds)
raises(ValueError, next, "the Dataset's iterator is closed", its[0])

# a file replaced under a Dataset: said, not batches of another shape
import shutil
shutil.copy("plain.sfpack", "swap.sfpack")
ds = dataset(path="swap.sfpack", val_split=0)
shutil.copy("wide.sfpack", "swap.sfpack")
raises(seqfeed.SeqfeedError, iter, "swap.sfpack changed since the Dataset was made: batches of 3 inputs, 1 targets, "
       "not 2 and 1 (make a new Dataset)", ds)

# ---- the C API on its own: every field, NULL handles, short buffers ----
lib, Err, Opts = seqfeed._lib, seqfeed._Err, seqfeed._DatasetOpts


def opts(**kw):
    base = dict(data=b"d.sfpack", targets=b"a", window=12, stride=1, sampling_rate=1, horizon=1, batch=32, pool=0,
                seed=1, epochs=1, val_split=0.1, max_gap=0.0, replicas=1, replica=0, decoders=0)
    base.update(kw)
    return Opts(**base)


def c_open(o, code, msg):
    d, err = ctypes.c_void_p(), Err()
    rc = lib.sf_dataset_open(ctypes.byref(d), ctypes.byref(o), ctypes.byref(err))
    said = err.msg.decode()
    if rc != code or (msg and not (msg.fullmatch(said) if isinstance(msg, re.Pattern) else said == msg)):
        fail("sf_dataset_open: %d %r, expected %d %r" % (rc, said, code, msg))
    if d.value:
        lib.sf_dataset_close(d)
    return rc


EUSAGE, EINVAL = -6, -3
for field, option, v, lo, hi in (("window", "window", 0, 1, U32), ("stride", "stride", 0, 1, U32),
                                 ("sampling_rate", "sampling-rate", 0, 1, U32), ("batch", "batch-size", 0, 1, 2**20),
                                 ("batch", "batch-size", 2**20 + 1, 1, 2**20), ("pool", "pool", 2**56, 1, 2**56 - 1),
                                 ("epochs", "epochs", 0, 1, 2**63 - 1), ("epochs", "epochs", 2**63, 1, 2**63 - 1),
                                 ("replicas", "replicas", 0, 1, 256), ("replicas", "replicas", 257, 1, 256),
                                 ("decoders", "decoders", 257, 1, 256)):
    c_open(opts(**{field: v}), EUSAGE, "%s %d (--%s): expected an integer from %d to %d" % (field, v, option, lo, hi))
for h, steps in ((3, 4), (2000, 1025)):
    c_open(opts(horizon=h, horizon_steps=steps), EUSAGE, "horizon_steps %d (--horizon A-B): expected 1 to 1024 and "
           "at most horizon %d, so that the first step is at least 1 row ahead" % (steps, h))
c_open(opts(replica=1), EUSAGE, "replica 1: expected 0 to 0, one of the 1 replicas")
c_open(opts(batch=10, replicas=3), EUSAGE, "batch 10 (--batch-size) is not a multiple of replicas 3 (--replicas): "
       "each replica takes batch / replicas windows")
for v in (1.0, -0.5, float("nan")):
    c_open(opts(val_split=v), EUSAGE, "val_split %g (--val-split): expected a number from 0 to below 1" % v)
for v in (-1.0, float("nan"), float("inf")):
    c_open(opts(max_gap=v), EUSAGE, "max_gap %g (--max-gap): expected seconds above 0 and finite (0: no limit)" % v)
c_open(opts(data=None), EUSAGE, "data: expected an .sfpack file, got NULL")
c_open(opts(data=b""), EUSAGE, 'data: expected an .sfpack file, got ""')
c_open(opts(features=b""), EUSAGE, 'features (--features): expected a list of names (NULL: the default), got ""')
c_open(opts(norm=b"log"), EUSAGE, "norm 'log' (--norm): expected one of zscore, minmax, none")
c_open(opts(pool=2**55), 0, None)
if lib.sf_dataset_open(None, ctypes.byref(opts()), None) != EINVAL or lib.sf_dataset_open(None, None, None) != EINVAL:
    fail("sf_dataset_open with NULL")
d = ctypes.c_void_p()
if lib.sf_dataset_open(ctypes.byref(d), None, None) != EINVAL or d.value:
    fail("sf_dataset_open with NULL options")
info = seqfeed._DatasetInfo()
if lib.sf_dataset_shape(None, ctypes.byref(info)) != EINVAL:
    fail("sf_dataset_shape(NULL)")
err = Err()
if lib.sf_dataset_next(None, None, 0, None, 0, ctypes.byref(err)) != EINVAL or "NULL" not in err.msg.decode():
    fail("sf_dataset_next(NULL): %r" % err.msg)
lib.sf_dataset_close(None)
assert lib.sf_dataset_open(ctypes.byref(d), ctypes.byref(opts()), ctypes.byref(err)) == 0, err.msg
if lib.sf_dataset_shape(d, None) != EINVAL or lib.sf_dataset_shape(d, ctypes.byref(info)) != 0:
    fail("sf_dataset_shape")
nx, ny = info.batch * info.window * info.nfeatures, info.batch * info.ntargets
x, y = np.full(nx, 7, np.float32), np.full(ny, 7, np.float32)
for xl, yl in ((nx - 1, ny), (nx, ny - 1), (0, 0)):  # short buffers: refused, nothing written
    if lib.sf_dataset_next(d, x.ctypes.data, xl, y.ctypes.data, yl, ctypes.byref(err)) != EINVAL or \
            (x != 7).any() or (y != 7).any():
        fail("sf_dataset_next with %d and %d floats: %r" % (xl, yl, err.msg))
if lib.sf_dataset_next(d, None, nx, y.ctypes.data, ny, ctypes.byref(err)) != EINVAL:
    fail("sf_dataset_next with x NULL")
if lib.sf_dataset_next(d, x.ctypes.data, nx, y.ctypes.data, ny, None) != 1 or (x == 7).all():
    fail("sf_dataset_next with room for a batch")
lib.sf_dataset_close(d)

p = ctypes.c_void_p()
if lib.sf_api_pack_open(None, b"d.sfpack", None) != EINVAL or lib.sf_api_pack_open(ctypes.byref(p), None, None) != \
        EINVAL or p.value:
    fail("sf_api_pack_open with NULL")
if lib.sf_api_pack_describe(None) is not None:
    fail("sf_api_pack_describe(NULL)")
lib.sf_api_pack_close(None)
out, cols = np.zeros(20, np.float32), np.array([0, 1], np.uint32)
if lib.sf_api_pack_read(None, cols.ctypes.data, 2, 0, 10, out.ctypes.data, None) != EINVAL or \
        lib.sf_api_pack_read_times(None, 0, 10, out.ctypes.data, None) != EINVAL:
    fail("sf_api_pack_read(NULL)")
assert lib.sf_api_pack_open(ctypes.byref(p), b"d.sfpack", None) == 0
for args, say in (((None, 2, 0, 10, out.ctypes.data), "cols is NULL"), ((cols.ctypes.data, 2, 0, 10, None), "out is NULL"),
                  ((cols.ctypes.data, 2, 10, 5, out.ctypes.data), "not within its 500 rows"),
                  ((cols.ctypes.data, 2, 0, 2**64 - 1, out.ctypes.data), "not within its 500 rows")):
    if lib.sf_api_pack_read(p, *args, ctypes.byref(err)) != EINVAL or say not in err.msg.decode():
        fail("sf_api_pack_read%r: %r" % (args, err.msg))
bad = np.array([2], np.uint32)
if lib.sf_api_pack_read(p, bad.ctypes.data, 1, 0, 1, out.ctypes.data, ctypes.byref(err)) != EINVAL:
    fail("sf_api_pack_read of column 2")
if lib.sf_api_pack_read_times(p, 0, 10, None, ctypes.byref(err)) != EINVAL:
    fail("sf_api_pack_read_times into NULL")
lib.sf_api_pack_close(p)

# ---- load_checkpoint: a hand-made one, then broken ----
import json
import struct


def ckpt(path, header, data):
    raw = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw + data)


t, m = seqfeed.load_checkpoint("ck/latest.safetensors")  # one train wrote
assert t and all(a.dtype == np.float32 for a in t.values()) and m["format"].startswith("seqfeed-checkpoint"), m
meta = {"format": "seqfeed-checkpoint 3"}
good = {"__metadata__": meta, "w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}}
ckpt("good.safetensors", good, np.arange(4, dtype=np.float32).tobytes())
t, m = seqfeed.load_checkpoint("good.safetensors")
assert (t["w"] == np.arange(4).reshape(2, 2)).all() and m == meta
tensor = "good.safetensors: tensor 'w': expected F32 with data_offsets inside the file's 16 data bytes matching its shape"
for w in ({"dtype": "F64", "shape": [2, 2], "data_offsets": [0, 16]}, {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 16]},
          {"dtype": "F32", "shape": [2, 2], "data_offsets": [8, 24]}, {"dtype": "F32", "shape": [-2, -2], "data_offsets": [0, 16]},
          {"dtype": "F32", "shape": [2, 2], "data_offsets": [16, 0]}, {"dtype": "F32", "shape": "22", "data_offsets": [0, 16]},
          {"dtype": "F32", "shape": [2, 2]}, {"dtype": "F32", "shape": [2, 2], "data_offsets": [0.0, 16]}, [1]):
    ckpt("good.safetensors", {"__metadata__": meta, "w": w}, np.arange(4, dtype=np.float32).tobytes())
    raises(seqfeed.SeqfeedError, seqfeed.load_checkpoint, tensor, "good.safetensors")
# what the C reader refuses, refused alike: tensors that overlap or leave a gap, NaN and infinities
two = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
ckpt("overlap.safetensors", {"__metadata__": meta, "a": two, "b": two}, np.zeros(2, np.float32).tobytes())
raises(seqfeed.SeqfeedError, seqfeed.load_checkpoint, re.compile(r"overlap\.safetensors: tensor '[ab]' starts at data "
       r"byte 0, expected 8 \(the tensors must cover the data without gaps or overlap\)"), "overlap.safetensors")
ckpt("gap.safetensors", {"__metadata__": meta, "a": two}, np.zeros(3, np.float32).tobytes())
raises(seqfeed.SeqfeedError, seqfeed.load_checkpoint, "gap.safetensors: the tensors cover 8 data bytes, the file has 12",
       "gap.safetensors")
for bad, what in ((np.nan, "NaN"), (np.inf, "an infinity")):
    ckpt("nan.safetensors", {"__metadata__": meta, "a": two}, np.array([1, bad], np.float32).tobytes())
    raises(seqfeed.SeqfeedError, seqfeed.load_checkpoint, "nan.safetensors: tensor 'a' holds %s at index 1: the weights "
           "or scaling are damaged (a run that diverged writes no checkpoint)" % what, "nan.safetensors")
ckpt("other.safetensors", {"__metadata__": {"format": "pt"}}, b"")
raises(seqfeed.SeqfeedError, seqfeed.load_checkpoint, "other.safetensors: not a seqfeed checkpoint", "other.safetensors")
with open("short.safetensors", "wb") as f:
    f.write(b"\1\2")
raises(seqfeed.SeqfeedError, seqfeed.load_checkpoint, "short.safetensors: 2 bytes: not a safetensors file (too short "
       "for its header's size)", "short.safetensors")
with open("huge.safetensors", "wb") as f:
    f.write(struct.pack("<Q", 2**63) + b"{}")
raises(seqfeed.SeqfeedError, seqfeed.load_checkpoint, "huge.safetensors: its header of 9223372036854775808 bytes runs "
       "past the file's 10 bytes", "huge.safetensors")
with open("notjson.safetensors", "wb") as f:
    f.write(struct.pack("<Q", 2) + b"{x")
raises(seqfeed.SeqfeedError, seqfeed.load_checkpoint, re.compile(r"notjson\.safetensors: its header is not JSON .*"),
       "notjson.safetensors")
raises(ValueError, seqfeed.load_checkpoint, "path must be a path (str, bytes or os.PathLike), got None", None)
# every broken or wrong file is a SeqfeedError naming it, never Python's or numpy's own error
deep = b"[" * 100000 + b"]" * 100000
with open("deep.safetensors", "wb") as f:  # once RecursionError
    f.write(struct.pack("<Q", len(deep)) + deep)
raises(seqfeed.SeqfeedError, seqfeed.load_checkpoint, re.compile(r"deep\.safetensors: its header is not JSON .*"),
       "deep.safetensors")
for shape in ([2**70, 0], [2**31, 2**31, 0], [2**62, 0], [1] * 40 + [0]):  # once numpy's ValueError
    w = {"dtype": "F32", "shape": shape, "data_offsets": [0, 0]}
    ckpt("empty.safetensors", {"__metadata__": meta, "w": w}, b"")
    raises(seqfeed.SeqfeedError, seqfeed.load_checkpoint, "empty.safetensors: tensor 'w': expected F32 with "
           "data_offsets inside the file's 0 data bytes matching its shape", "empty.safetensors")
fds = len(os.listdir("/proc/self/fd"))
for _ in range(3):  # and without a descriptor left open
    raises(seqfeed.SeqfeedError, seqfeed.load_checkpoint, "ck: cannot read the checkpoint (Is a directory)", "ck")
if len(os.listdir("/proc/self/fd")) != fds:
    fail("load_checkpoint of a directory left %d descriptors open" % (len(os.listdir("/proc/self/fd")) - fds))
raises(seqfeed.SeqfeedError, seqfeed.load_checkpoint, "gone.safetensors: cannot read the checkpoint (No such file or "
       "directory)", "gone.safetensors")

# len() of a Dataset too long for Python's len(): said, not Python's own error.
with dataset(epochs=2**63 - 1) as d:
    raises(OverflowError, len, re.compile(r"len\(\): 9223372036854775807 epochs of \d+ batches is more than len\(\) "
                                          r"can return \(sys.maxsize\); iterate over the Dataset instead"), d)

# A FIFO is not a checkpoint: refused at once, not waited on for a writer.
os.mkfifo("ck.fifo")
raises(seqfeed.SeqfeedError, seqfeed.load_checkpoint, "ck.fifo: cannot read the checkpoint (a FIFO)", "ck.fifo")

# ---- pack of a CSV: never over its input, by name or link; a FIFO read as it comes ----
with open("in.csv", "w") as f:
    f.write("time,v\n2010-01-01,1\n2010-01-02,2\n")
csv_bytes = open("in.csv", "rb").read()
os.symlink("in.csv", "link.csv")
for out in ("in.csv", "link.csv"):
    raises(seqfeed.SeqfeedError, seqfeed.pack, "the output %s is the same file as the input in.csv: one would destroy "
           "the other (hint: another output name, ending in .sfpack)" % out, "in.csv", out)
if open("in.csv", "rb").read() != csv_bytes:
    fail("pack wrote over its input CSV")
os.mkfifo("in.fifo")
# A daemon: were the FIFO never opened, its open() would wait forever.
writer = threading.Thread(target=lambda: open("in.fifo", "wb").write(csv_bytes), daemon=True)
writer.start()
r = seqfeed.pack("in.fifo", "fifo.sfpack")
writer.join(10)
if r["rows"] != 2:
    fail("a CSV through a FIFO: %r rows, expected 2 (its first bytes read and lost?)" % r["rows"])

# progress on a CSV: called with the rows so far (and 0: no total), rising; an exception it raises stops
# the pack, without output, and is the caller's.
with open("many.csv", "w") as f:
    f.write("time,v\n")
    t0 = 1262304000
    f.writelines("%d,%d\n" % (t0 + 60 * i, i % 13) for i in range(200000))
calls = []
r = seqfeed.pack("many.csv", "many.sfpack", time_column="", progress=lambda done, total: calls.append((done, total)))
if not calls or any(t != 0 for _, t in calls) or [d for d, _ in calls] != sorted(d for d, _ in calls) or \
        calls[-1][0] > r["rows"]:
    fail("progress on a CSV of %d rows: calls %r" % (r["rows"], calls[:5] + calls[-3:]))


class Stop(Exception):
    pass


def stop(done, total):
    raise Stop("at %d rows" % done)


raises(Stop, seqfeed.pack, re.compile(r"at \d+ rows"), "many.csv", "stopped.sfpack", progress=stop)
if os.path.exists("stopped.sfpack"):
    fail("a pack its progress stopped left stopped.sfpack")

# Ctrl-C while the C packer runs, no progress given: the pack stops at its next buffer, its output removed,
# and KeyboardInterrupt is raised (it had run to the end and committed the file). A FIFO orders it: half the
# CSV, the SIGINT, then the rest.
many = open("many.csv", "rb").read()
os.mkfifo("ctrl-c.fifo")


def feed():
    with open("ctrl-c.fifo", "wb") as f:
        f.write(many[:len(many) // 2])
        f.flush()
        time.sleep(0.2)
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.2)
        f.write(many[len(many) // 2:] * 3)  # more than a buffer: the progress callback runs again


writer = threading.Thread(target=feed, daemon=True)
writer.start()
try:
    seqfeed.pack("ctrl-c.fifo", "ctrl-c.sfpack", time_column="")
    fail("Ctrl-C during a pack: no KeyboardInterrupt")
except KeyboardInterrupt:
    pass
writer.join(10)
if os.path.exists("ctrl-c.sfpack"):
    fail("Ctrl-C during a pack: its output was committed")

if failures:
    sys.exit("%d check(s) failed" % len(failures))
print("all argument edges checked")
