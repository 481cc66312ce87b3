#!/usr/bin/env bash
# A version-1 .sfpack committed with the CSV it was packed from and the CSV
# it must unpack to (tests/format/golden), so that a change to the writer
# or the reader cannot pass by the two agreeing with each other: the
# committed file unpacks to the committed CSV, verifies and inspects as
# written, and packing the CSV again gives the same bytes. The file was made
# with the command below; a deliberate format change makes a new golden file
# and keeps this one, which every later reader must still read.
set -u
: "${SEQFEED:?}" "${SRCDIR:?}"
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../lib.sh"
golden=$SRCDIR/tests/format/golden
tmp=$(mktemp -d /tmp/sfgolden.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1

run 0 unpack "$golden/v1.sfpack" -o back.csv
cmp -s back.csv "$golden/v1.unpacked.csv" || fail "v1.sfpack unpacks to other CSV: $(diff back.csv "$golden/v1.unpacked.csv")"
run 0 verify "$golden/v1.sfpack"
run 0 inspect --json "$golden/v1.sfpack"
python3 - <<'PY' || fail "inspect --json of v1.sfpack: $(cat out)"
import json
d = json.load(open("out"))
assert d["format_version"] == 1 and d["rows"] == 21 and d["zstd_level"] == 3, d
assert d["filter"] == "delta-shuffle" and d["series_column"] == "id", d
assert [c["name"] for c in d["columns"]] == ["temp", "pressure", "flow"], d["columns"]
assert [(s["name"], s["first_row"], s["rows"]) for s in d["series"]] == \
    [("north", 0, 9), ("south", 9, 4), ("east", 13, 1), ("west", 14, 7)], d["series"]
assert d["chunks"]["count"] == 5 and d["chunks"]["rows_per_chunk"] == 5, d["chunks"]
PY
# The writer, byte for byte.
run 0 pack "$golden/v1.csv" -o again.sfpack --series-column id --chunk-rows 5 --level 3 -q
cmp -s again.sfpack "$golden/v1.sfpack" || fail "packing v1.csv again gives other bytes than v1.sfpack"
finish
