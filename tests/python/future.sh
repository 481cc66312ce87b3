#!/usr/bin/env bash
# Dataset(future_features=...): x is the exported model's two named inputs,
# window (batch, window, inputs) and future (batch, steps, future inputs),
# the future features' values at each window's target rows scaled as the
# window's own inputs are; on the validation split, row for row against
# the CSV through the scaler; unscale takes the dict for --target change;
# a future feature that is a target is refused by name. Needs numpy: 77
# without it.
set -uo pipefail
. "$SRCDIR/tests/lib.sh"
LIBSEQFEED=${1:?libseqfeed.so}
. "$SRCDIR/tests/python/env.sh"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
pyrun - <<'PY'
import random
random.seed(3)
with open("d.csv", "w") as f:
    f.write("id,promo,sales\n")
    for s in ("a", "b"):
        for i in range(80):
            p = int(random.random() < 0.4)
            f.write("%s,%d,%.3f\n" % (s, p, 10 + 2 * p + random.random()))
PY
run 0 pack d.csv -o d.sfpack --series-column id -q
pyrun - <<'PY' || fail "Dataset(future_features=...)"
import csv
import numpy as np
import seqfeed
rows = list(csv.DictReader(open("d.csv")))
promo = np.array([float(r["promo"]) for r in rows], dtype=np.float32)
kw = dict(window=5, batch_size=4, targets="sales", horizon="2-3", val_split=0.25, future_features="promo")
ds = seqfeed.Dataset("d.sfpack", **kw)
x, y = next(iter(ds))
assert set(x) == {"window", "future"}, x.keys()
assert x["window"].shape == (4, 5, 2) and x["future"].shape == (4, 2, 1) and y.shape == (4, 2, 1), \
    (x["window"].shape, x["future"].shape, y.shape)
val = seqfeed.Dataset("d.sfpack", split="validation", **kw)
s = val.scaler
j = s.inputs.index("promo")
n = 0
for b in range(val.batches_per_epoch):
    (x, y, last) = val._val.read(b, rows=True)  # each window's last target row
    for i, r in enumerate(last):
        want = promo[[r - 1, r]] * s.input_scale[j] + s.input_offset[j]  # steps 2 and 3: rows r - 1 and r
        assert np.array_equal(x["future"][i, :, 0], want), (r, x["future"][i, :, 0], want)
        # the window's rows end 2 rows before the first target
        assert np.array_equal(x["window"][i, -1, j], promo[r - 3] * s.input_scale[j] + s.input_offset[j])
        n += 1
print("validation windows checked:", n)
# --target change: unscale finds the last values in x["window"]
ch = seqfeed.Dataset("d.sfpack", split="validation", target_change=True, **kw)
x, y = ch._val.read(0)
assert ch.unscale(y, x).shape == y.shape
try:
    seqfeed.Dataset("d.sfpack", window=5, batch_size=4, targets="sales", future_features="sales")
    raise SystemExit("a target as a future feature was taken")
except seqfeed.SeqfeedError as e:
    assert "--future-features sales" in str(e) and "is a target" in str(e), e
PY
finish
