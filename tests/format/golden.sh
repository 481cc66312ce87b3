#!/usr/bin/env bash
# .sfpack files of each format version committed with the CSV they were
# packed from and the CSV they must unpack to (tests/format/golden), so that
# a change to the writer or the reader cannot pass by the two agreeing with
# each other: each committed file unpacks to its committed CSV, verifies and
# inspects as written; packing v2.csv again gives v2.sfpack's bytes. A
# deliberate format change makes a new golden file and keeps the old ones,
# which every later reader must still read. v1.sfpack was written by the
# version-1 writer (a CSV now packs as version 2: rows keep their lines).
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

# Version 2: a time column with zones and a daylight-saving change, before
# and after 1970, a series name with a comma, CSV lines.
run 0 unpack "$golden/v2.sfpack" -o back2.csv
cmp -s back2.csv "$golden/v2.unpacked.csv" || fail "v2.sfpack unpacks to other CSV: $(diff back2.csv "$golden/v2.unpacked.csv")"
run 0 verify "$golden/v2.sfpack"
run 0 inspect --json "$golden/v2.sfpack"
python3 - <<'PY' || fail "inspect --json of v2.sfpack: $(cat out)"
import json
d = json.load(open("out"))
assert d["format_version"] == 2 and d["rows"] == 10 and d["lines"] is True, d
assert d["time"] == {"column": "time", "kind": "iso-8601", "step_seconds": 3600, "gaps": 3}, d["time"]
assert [(s["name"], s["first_time"], s["last_time"]) for s in d["series"]] == [
    ("north", "2021-03-27T21:00:00.00Z", "2021-03-28T06:00:00.00Z"),
    ("south, coast", "1969-12-31T23:00:00.00Z", "1970-01-01T02:00:00.25Z")], d["series"]
PY
# The writer, byte for byte; and the unpacked CSV packs to the same instants.
run 0 pack "$golden/v2.csv" -o again.sfpack --series-column station --chunk-rows 4 --level 3 -q
cmp -s again.sfpack "$golden/v2.sfpack" || fail "packing v2.csv again gives other bytes than v2.sfpack"
run 0 pack back2.csv -o again2.sfpack --series-column station --chunk-rows 4 --level 3 -q
run 0 unpack again2.sfpack -o back3.csv
cmp -s back3.csv back2.csv || fail "the unpacked CSV does not pack to the same rows and times"

# Version 2 with categorical columns (a value with a comma, missing values
# filled) after the time column in the header, their texts in the trailer.
g=v2-categories
run 0 unpack "$golden/$g.sfpack" -o back4.csv
cmp -s back4.csv "$golden/$g.unpacked.csv" || fail "$g.sfpack unpacks to other CSV: $(diff back4.csv "$golden/$g.unpacked.csv")"
run 0 verify "$golden/$g.sfpack"
run 0 inspect --json "$golden/$g.sfpack"
python3 - <<'PY' || fail "inspect --json of v2-categories.sfpack: $(cat out)"
import json
d = json.load(open("out"))
assert d["format_version"] == 2 and d["rows"] == 7, d
assert [(c["name"], c.get("categories")) for c in d["columns"]] == [
    ("temp", None), ("sky", ["sun", "rain", "fog, thick", "snow"]), ("wind", ["N", "NW", "E"])], d["columns"]
PY

# The same CSV packed since pack records what --missing ffill filled in
# (flag bit 3, a bitmap per chunk, counts in the trailer): the older file
# above, without the record, still reads as "nothing imputed"; this one
# unpacks the two filled values empty again, i.e. to the CSV itself.
i=v2-imputed
run 0 unpack "$golden/$i.sfpack" -o back5.csv
cmp -s back5.csv "$golden/$i.unpacked.csv" || fail "$i.sfpack unpacks to other CSV: $(diff back5.csv "$golden/$i.unpacked.csv")"
cmp -s back5.csv "$golden/$g.csv" || fail "$i.sfpack does not unpack to the CSV it was packed from: $(diff back5.csv "$golden/$g.csv")"
run 0 verify "$golden/$i.sfpack"
run 0 inspect --json "$golden/$i.sfpack"
python3 - <<'PY' || fail "inspect --json of v2-imputed.sfpack: $(cat out)"
import json
d = json.load(open("out"))
assert d["format_version"] == 2 and d["rows"] == 7, d
assert [(c["name"], c["imputed"]) for c in d["columns"]] == [("temp", 1), ("sky", 0), ("wind", 1)], d["columns"]
PY
run 0 inspect --json "$golden/$g.sfpack"
python3 -c 'import json; assert all(c["imputed"] == 0 for c in json.load(open("out"))["columns"])' ||
    fail "the older $g.sfpack should say nothing was imputed: $(cat out)"
run 0 pack "$golden/$g.csv" -o again4.sfpack --series-column site --categorical sky,wind --missing ffill --chunk-rows 3 \
    --level 3 -q
cmp -s again4.sfpack "$golden/$i.sfpack" || fail "packing $g.csv again gives other bytes than $i.sfpack"
run 0 pack back5.csv -o again5.sfpack --series-column site --categorical sky,wind --missing ffill --chunk-rows 3 \
    --level 3 -q
cmp -s again5.sfpack "$golden/$i.sfpack" || fail "the unpacked $i CSV packs to other bytes than $i.sfpack"
finish
