#!/usr/bin/env bash
# Dataset batches come without a copy, in the pipeline's own memory, which
# is written again only once no array of a batch is left: a batch held
# whole, as a view, as y alone, by another thread, after close() or after
# the Dataset is gone, or after an exception interrupted a call, keeps its
# values; the values are sf_dataset_next's (the copying call); memory is
# reused when batches are dropped (a few buffers, not one a batch), also
# with covariates (x a dict). Needs numpy: 77 without it.
set -uo pipefail
. "$SRCDIR/tests/lib.sh"
LIBSEQFEED=${1:?libseqfeed.so}
. "$SRCDIR/tests/python/env.sh"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
pyrun - <<'PY'
import random
random.seed(5)
with open("d.csv", "w") as f:
    f.write("id,promo,a,b\n")
    for s in ("s1", "s2"):
        for i in range(3000):
            f.write("%s,%d,%.4f,%.4f\n" % (s, random.random() < 0.3, random.gauss(0, 1), random.random()))
PY
run 0 pack d.csv -o d.sfpack --series-column id -q
pyrun - <<'PY' || fail "held batches changed, or differ from sf_dataset_next's"
import ctypes, gc, threading
import numpy as np
import seqfeed

kw = dict(window=24, batch_size=32, seed=9, epochs=2, features=["promo", "a", "b"], targets="a")


def copied(**more):
    """The batches through sf_dataset_next, which copies each into arrays of ours."""
    o = seqfeed.Dataset("d.sfpack", **kw, **more)._opts
    d, err = seqfeed._vp(), seqfeed._Err()
    seqfeed._check(seqfeed._lib.sf_dataset_open(ctypes.byref(d), ctypes.byref(o), ctypes.byref(err)), err)
    it = seqfeed._Batches(seqfeed.Dataset("d.sfpack", **kw, **more), o)
    fx, fy = it._shape
    it.close()
    out = []
    while True:
        x, y = np.empty(fx, np.float32), np.empty(fy, np.float32)
        rc = seqfeed._check(seqfeed._lib.sf_dataset_next(d, x.ctypes.data, x.size, y.ctypes.data, y.size,
                                                         ctypes.byref(err)), err)
        if not rc:
            break
        out.append((x, y))
    seqfeed._lib.sf_dataset_close(d)
    return out


def flat(x):
    """x as the C library lays it out: window, then future, then series."""
    if not isinstance(x, dict):
        return x.reshape(len(x), -1)
    return np.concatenate([x[k].reshape(len(x[k]), -1) for k in ("window", "future", "series") if k in x], axis=1)


want = copied()
ds = seqfeed.Dataset("d.sfpack", **kw)
assert len(want) == len(ds) > 40, (len(want), len(ds))

# Held in every way a framework holds a batch: whole, a view, y alone, a
# memoryview; the rest dropped at once.
held, ptrs = [], set()
for i, (x, y) in enumerate(ds):
    assert np.array_equal(flat(x), want[i][0]) and np.array_equal(y, want[i][1]), i
    ptrs.add(x.__array_interface__["data"][0])
    kind = i % 5
    if kind == 0:
        held.append((i, x, y))
    elif kind == 1:
        held.append((i, x[3:, 2:], None))
    elif kind == 2:
        held.append((i, None, y))
    elif kind == 3:
        held.append((i, memoryview(x), None))
for i, x, y in held:
    whole = want[i][0].reshape(-1, 24, 3)
    if x is not None:
        x = np.asarray(x)
        assert np.array_equal(x, whole[3:, 2:] if i % 5 == 1 else whole), "batch %d changed while held" % i
    if y is not None:
        assert np.array_equal(y, want[i][1]), "batch %d's y changed while held" % i
# Dropped batches' memory is reused: a few buffers, not one a batch.
n_held = len(held)
assert len(ptrs) <= n_held + 12, (len(ptrs), len(want), n_held)
ptrs.clear()
for x, y in ds:
    ptrs.add(x.__array_interface__["data"][0])
assert len(ptrs) <= 12, "%d buffers for %d batches none of which was held" % (len(ptrs), len(want))

# Held past close() and past the Dataset itself.
it = iter(ds)
first = next(it)
ds.close()
del ds, it
gc.collect()
assert np.array_equal(flat(first[0]), want[0][0]) and np.array_equal(first[1], want[0][1])

# An exception after the C call returned (Ctrl-C that came while it waited
# for its batch, raised as it returns): the buffer given as the spare is
# the pipeline's, and must not come back as another batch's memory while
# the pipeline writes it (two held batches in one buffer, then a double
# free at close).
ds = seqfeed.Dataset("d.sfpack", **kw)
it, real, calls = iter(ds), seqfeed._next_buffer, [0]


def interrupted(*args):
    rc = real(*args)
    calls[0] += 1
    if calls[0] == 6:
        raise KeyboardInterrupt
    return rc


seqfeed._next_buffer = interrupted
try:
    for i in range(10):
        x, y = next(it)
        del x, y
    raise AssertionError("no KeyboardInterrupt")
except KeyboardInterrupt:
    pass
finally:
    seqfeed._next_buffer = real
gc.collect()
held = [(x, y, x.copy(), y.copy()) for x, y in it]
assert len({x.__array_interface__["data"][0] for x, _, _, _ in held}) == len(held), "held batches share a buffer"
assert all(np.array_equal(x, cx) and np.array_equal(y, cy) for x, y, cx, cy in held), "a held batch changed"
ds.close()
del held, it, ds
gc.collect()

# Two threads drawing from one iterator, each keeping what it got: every batch once, none changed.
ds = seqfeed.Dataset("d.sfpack", **kw)
it, got = iter(ds), [[], []]


def draw(k):
    for x, y in it:
        got[k].append((x, y))


ts = [threading.Thread(target=draw, args=(k,)) for k in range(2)]
[t.start() for t in ts]
[t.join() for t in ts]
mine = sorted((flat(x).tobytes(), y.tobytes()) for x, y in got[0] + got[1])
assert mine == sorted((x.tobytes(), y.tobytes()) for x, y in want), "threads' batches differ"

# With covariates, x is a dict of views of the same memory.
want = copied(future_features="promo", horizon="1-3")
ds = seqfeed.Dataset("d.sfpack", **kw, future_features="promo", horizon="1-3")
held = []
for i, (x, y) in enumerate(ds):
    assert isinstance(x, dict) and np.array_equal(flat(x), want[i][0]) and np.array_equal(y, want[i][1]), i
    if i % 3 == 0:
        held.append((i, x["future"], y))
for i, f, y in held:
    assert np.array_equal(f.reshape(len(f), -1), want[i][0][:, 24 * 3:]) and np.array_equal(y, want[i][1]), i
print("ok: %d batches, held ones unchanged" % len(want))
PY
finish
