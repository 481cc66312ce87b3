#!/usr/bin/env bash
# The Python package (python/seqfeed) over libseqfeed: Pack reads columns
# equal to what unpack writes, with the series, times and categories; the
# Dataset yields the batches train's replicas draw (dump_batches, the fit's
# own pipeline), for shuffled and plan-order pools, 1 and 3 replicas, and
# validation splits; errors are SeqfeedError with seqfeed's message (each
# argument's edges: python-args). Needs
# numpy (Debian python3-numpy): skipped with 77 without it.
set -uo pipefail
. "$SRCDIR/tests/lib.sh"
LIBSEQFEED=${1:?libseqfeed.so} DUMP_BATCHES=${2:?dump_batches}
. "$SRCDIR/tests/python/env.sh"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
python3 - <<'PY'
import datetime as dt, random
random.seed(4)
with open("d.csv", "w") as f:
    f.write("site,time,a,sky,b\n")
    for s, n in (("north", 900), ("south, coast", 700)):
        for i in range(n):
            t = dt.datetime(2020, 1, 1) + dt.timedelta(hours=i)
            f.write('"%s",%s,%.3f,%s,%.4f\n' % (s, t.strftime("%Y-%m-%dT%H:%M"), random.gauss(0, 1),
                                               random.choice(["sun", "rain"]), random.random()))
PY
run 0 pack d.csv -o d.sfpack --series-column site --categorical sky --chunk-rows 100 -q
run 0 unpack d.sfpack -o back.csv -q
pyrun - <<'PY' || fail "Pack does not read what unpack writes"
import csv, datetime as dt
import numpy as np
import seqfeed
p = seqfeed.Pack("d.sfpack")
assert p.columns == ["a", "sky", "b"] and p.rows == 1600 and p.series_column == "site", (p.columns, p.rows)
assert p.series == [("north", 0, 900), ("south, coast", 900, 700)], p.series
assert p.time_column == "time" and p.categories["sky"] in (["sun", "rain"], ["rain", "sun"]), p.categories
assert p.imputed == {"a": 0, "sky": 0, "b": 0}, p.imputed
rows = list(csv.DictReader(open("back.csv")))
got = p.read(None, 0, p.rows)
for i, r in enumerate(rows):
    assert got[i, 0] == np.float32(r["a"]) and got[i, 2] == np.float32(r["b"]), (i, got[i], r)
    assert p.categories["sky"][int(got[i, 1])] == r["sky"], (i, r)
part = p.read(["b", "a"], 850, 950)
assert (part == got[850:950][:, [2, 0]]).all()
t = p.read_times(0, 3)
want = [int(dt.datetime(2020, 1, 1, h, tzinfo=dt.timezone.utc).timestamp()) * 1000000 for h in range(3)]
assert list(t) == want, (t, want)
try:
    p.read(["a"], 10, 2000)
    raise SystemExit("rows past the end were read")
except ValueError as e:
    assert str(e) == "stop must be an integer from 10 to 1600 (None: the last row), got 2000", e
PY
# Values pack --missing ffill filled in are counted per column (Pack.imputed).
printf 'a,b\n1,2\n,3\n4,\n,\n5,6\n' > gaps.csv
run 0 pack gaps.csv -o gaps.sfpack --missing ffill -q
pyrun - <<'PY' || fail "Pack.imputed after --missing ffill"
import seqfeed
p = seqfeed.Pack("gaps.sfpack")
assert p.imputed == {"a": 2, "b": 2}, p.imputed
assert p.read().tolist() == [[1, 2], [1, 3], [4, 3], [4, 3], [5, 6]], p.read()
PY
# Batches: the fit's pipeline (dump_batches) against Dataset, replica by replica.
check() {  # WINDOW BATCH REPLICAS VAL_SPLIT POOL SEED EPOCHS
    "$DUMP_BATCHES" d.sfpack ref.bin "$@" a,b || { fail "dump_batches $*"; return; }
    pyrun - "$@" <<'PY' || fail "Dataset differs from train's batches for $*"
import sys
import numpy as np
import seqfeed
window, batch, replicas, val, pool, seed, epochs = (float(v) if "." in v else int(v) for v in sys.argv[1:])
ref = np.fromfile("ref.bin", dtype=np.float32)
per = batch // replicas
streams = []
for r in range(replicas):
    ds = seqfeed.Dataset("d.sfpack", window=window, batch_size=batch, targets="a,b", seed=seed, epochs=epochs,
                         val_split=val, replicas=replicas, replica=r, shuffle=pool != 1, pool=pool or None)
    assert ds.batch == per and ds.inputs == 4 and ds.targets == 2, (ds.batch, ds.inputs, ds.targets)
    streams.append(list(ds))
    assert len(streams[-1]) == len(ds), (len(streams[-1]), len(ds))
xl, yl = per * window * 4, per * 2
at = 0
for k in range(len(streams[0])):
    for r in range(replicas):
        x, y = streams[r][k]
        assert (ref[at:at + xl] == x.ravel()).all() and (ref[at + xl:at + xl + yl] == y.ravel()).all(), (k, r)
        at += xl + yl
assert at == ref.size, (at, ref.size)
print(len(streams[0]), "batches per replica equal")
PY
}
check 12 32 1 0.1 0 1 2
check 12 32 1 0.25 1 3 1
check 8 48 3 0.1 0 7 2
check 20 30 3 0 64 2 1
pyrun - <<'PY' || fail "Dataset errors"
import seqfeed
for kw, msg in ((dict(targets="nope"), 'target "nope" is not a column'),
                (dict(features=["a", "a"]), 'feature "a" is named twice'), (dict(targets="sky"), 'target "sky" is categorical'),
                (dict(batch_size=2**20), "training windows, fewer than one global batch of 1048576")):
    try:
        seqfeed.Dataset("d.sfpack", **kw)
        raise SystemExit("accepted %s" % kw)
    except seqfeed.SeqfeedError as e:
        assert msg in str(e), (kw, str(e))
try:
    seqfeed.Pack("missing.sfpack")
    raise SystemExit("opened a missing file")
except seqfeed.SeqfeedError as e:
    assert "missing.sfpack" in str(e)
PY
finish
