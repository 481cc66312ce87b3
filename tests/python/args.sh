#!/usr/bin/env bash
# Every argument of the Python package at its edges (args.py): each bad value
# a ValueError naming the argument and the range `seqfeed train` gives its
# option, checked against what seqfeed itself says; the C API refusing the
# same fields on its own and NULL handles; closed and shared Packs and
# Datasets called from several threads (an error, never a crash). Under a
# sanitized build ASan's runtime is preloaded (env.sh), so an overflow in
# libseqfeed fails the test. Skipped (77) without numpy.
set -uo pipefail
. "$SRCDIR/tests/lib.sh"
LIBSEQFEED=${1:?libseqfeed.so}
. "$SRCDIR/tests/python/env.sh"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
python3 - <<'PY'
import datetime as dt, random
random.seed(5)
with open("d.csv", "w") as f, open("plain.csv", "w") as g, open("wide.csv", "w") as h:
    f.write("site,time,a,b\n")
    g.write("a,b\n")
    h.write("a,b,c\n")
    for s, n in (("north", 300), ("south", 200)):
        for i in range(n):
            t = dt.datetime(2020, 1, 1) + dt.timedelta(hours=i)
            a, b = random.gauss(0, 1), random.random()
            f.write("%s,%s,%.3f,%.4f\n" % (s, t.strftime("%Y-%m-%dT%H:%M"), a, b))
            g.write("%.3f,%.4f\n" % (a, b))
            h.write("%.3f,%.4f,%d\n" % (a, b, i % 7))
PY
run 0 pack d.csv -o d.sfpack --series-column site --chunk-rows 64 -q
run 0 pack plain.csv -o plain.sfpack -q
run 0 pack wide.csv -o wide.sfpack -q
run 0 train --data d.sfpack --targets a --window 8 --epochs 1 --max-steps 2 --checkpoint-dir ck -q
pyrun "$SRCDIR/tests/python/args.py" "$SEQFEED" || fail "args.py"
finish
