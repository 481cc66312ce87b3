#!/usr/bin/env bash
# seqfeed pack on a Parquet file (its first bytes PAR1: no pyarrow needed to
# make one) names the Python command that packs it, instead of taking the
# file's bytes for a header row; nothing is written.
set -uo pipefail
. "$SRCDIR/tests/lib.sh"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
printf 'PAR1\025\004\025\020\000\000\000\000\000\000PAR1' >'data 1.parquet'
run 1 pack 'data 1.parquet' -o out.sfpack
grep -qx "seqfeed pack: error: data 1.parquet is a Parquet file, which seqfeed pack (CSV) does not read: pack it with \
the Python package (it needs pyarrow): python -m seqfeed pack 'data 1.parquet' -o out.sfpack" err ||
    fail "pack on a Parquet file: $(cat err)"
[ ! -e out.sfpack ] || fail "pack on a Parquet file wrote out.sfpack"
# Its bytes may hold a lone carriage return or a NUL before any line feed:
# the magic is looked at before a header row is.
printf 'PAR1\025\r\000\025\020PAR1' >cr.parquet
run 1 pack cr.parquet -o out.sfpack
grep -q "cr.parquet is a Parquet file.*python -m seqfeed pack cr.parquet -o out.sfpack" err ||
    fail "pack on a Parquet file with a CR: $(cat err)"
# A directory of Parquet files names the same command.
mkdir days && cp cr.parquet days/day1.parquet
run 2 pack days -o out.sfpack
grep -q "days: the directory has no \*.csv file to pack (its Parquet files pack with the Python package: python -m \
seqfeed pack days -o OUT.sfpack)" err || fail "pack on a directory of Parquet files: $(cat err)"
finish
