#!/usr/bin/env bash
# seqfeed.pack and python -m seqfeed pack over pyarrow (arrow.py): tables of
# every column type pack accepts, many small batches, pandas, a directory of
# Parquet files partitioned by series, each compared value for value (and
# statistics, series, times, categories) with packing the same data written
# as CSV; nulls, text columns and a missing pyarrow said as pack says them;
# a Parquet directory's rows keeping their file and row through predict
# --with-actual; the integer series-id hint.
# Needs numpy and pyarrow (pip install pyarrow; SEQFEED_PYTHON may name a
# Python that has them): skipped with 77 without them.
set -uo pipefail
. "$SRCDIR/tests/lib.sh"
LIBSEQFEED=${1:?libseqfeed.so}
for p in ${SEQFEED_PYTHON:-} python3 /usr/bin/python3; do
    if "$p" -c "import numpy, pyarrow, pyarrow.dataset" 2>/dev/null; then export SEQFEED_PYTHON=$p; break; fi
done
[ -n "${SEQFEED_PYTHON:-}" ] && "$SEQFEED_PYTHON" -c "import pyarrow" 2>/dev/null ||
    { echo "pyarrow is not installed (pip install pyarrow; SEQFEED_PYTHON names a Python with it): skipped" >&2; exit 77; }
. "$SRCDIR/tests/python/env.sh"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
pyrun "$SRCDIR/tests/python/arrow.py" "$SEQFEED" || fail "seqfeed.pack over pyarrow"
finish
