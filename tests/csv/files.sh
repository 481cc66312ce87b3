#!/usr/bin/env bash
# Several inputs: files given in order, a directory, a quoted glob; every
# file with the first one's header (a file that differs is named, and how);
# --series-per-file; each row's origin kept, so that predict --with-actual
# writes the file and line each forecast joins back to; errors naming the
# real file and line.
set -uo pipefail
. "$SRCDIR/tests/lib.sh"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
mkdir logs other empty
# Three days of hourly readings, a file a day; a blank line ends one, a
# quoted field spans two lines in another (its lines count as the file's).
for d in 1 2 3; do
    {
        echo "time,temp,load"
        for h in $(seq -w 0 23); do echo "2024-01-0${d}T$h:00,$((d * 10 + 10#$h % 7)).5,$((10#$h * d))"; done
    } >logs/day$d.csv
done
echo >>logs/day2.csv
printf 'not,a,csv\n' >logs/notes.txt
head -n 1 logs/day1.csv >all.csv
for d in 1 2 3; do tail -n +2 logs/day$d.csv | grep -v '^$' >>all.csv; done

# Files in the order given: one series, the concatenation's rows.
run 0 pack logs/day1.csv logs/day2.csv logs/day3.csv -o three.sfpack
expect out "packed 72 rows \(1 series, 3 files\)"
run 0 verify three.sfpack
run 0 unpack three.sfpack -o back.csv
cmp -s back.csv all.csv || fail "unpack of three files differs from their concatenation: $(diff back.csv all.csv | head -5)"
run 0 inspect three.sfpack
expect out "sources +3 files"
expect out "^ +2 +logs/day2.csv$"
run 0 inspect --json three.sfpack
expect out '"sources": \["logs/day1.csv", "logs/day2.csv", "logs/day3.csv"\]'
# One file as ever: no source table, plain lines.
run 0 pack logs/day1.csv -o one.sfpack -q
run 0 inspect --json one.sfpack
expect out '"sources": \[\]'
# A time that goes back across files: both files named, the order explained.
run 1 pack logs/day2.csv logs/day1.csv -o x.sfpack
expect err "logs/day1.csv:2:1: time 2024-01-01T00:00 is before 2024-01-02T23:00 \(line 25 of logs/day2.csv\)"
expect err "read in the order given"
[ -e x.sfpack ] && fail "a failed pack left x.sfpack"

# Files of over 256 KiB each: the second parse thread works across files
# and gives the same file, origins included, as one thread.
mkdir big
for k in 1 2 3; do
    awk -v k="$k" 'BEGIN { print "a,b,c"; for (i = 0; i < 30000; i++) printf "%d.25,%d,%.3f\n", i % 97, k * i, i / 7 }' \
        >big/part$k.csv
done
run 0 pack big -o big1.sfpack --threads 1 -q
run 0 pack big -o big2.sfpack --threads 2 -q
cmp -s big1.sfpack big2.sfpack || fail "several big files packed with two threads differ from one thread"
run 0 verify big2.sfpack

# A directory: its *.csv files sorted by name; a glob the same.
run 0 pack logs -o d.sfpack -q
run 0 pack 'logs/day*.csv' -o g.sfpack -q
cmp -s d.sfpack three.sfpack || fail "packing the directory differs from packing its files in order"
cmp -s g.sfpack three.sfpack || fail "packing the glob differs from packing its files in order"
run 2 pack empty -o x.sfpack
expect err "empty: the directory has no \*.csv file"
run 2 pack 'logs/*.tsv' -o x.sfpack
expect err "logs/\*.tsv: the pattern matches no file"
run 2 pack logs/day1.csv logs -o x.sfpack
expect err "logs/day1.csv and logs/day1.csv are the same file"
run 2 pack logs/day1.csv - -o x.sfpack
expect err "'-' \(stdin\) is one input alone"
run 2 pack logs/day2.csv logs/day1.csv -o logs/day1.csv
expect err "is the input logs/day1.csv"
run 0 pack --help
expect out "a directory \(its \*.csv files\) or a quoted glob"
expect out "--series-per-file"

# A file that differs: named, with how and where.
sed '1s/load/power/' logs/day3.csv >other/renamed.csv
run 1 pack logs/day1.csv other/renamed.csv -o x.sfpack
expect err "other/renamed.csv:1: the header differs from logs/day1.csv's: column 3 is \"power\" here, \"load\" in logs/day1.csv \(renamed\?\)"
cut -d, -f1,2 logs/day3.csv >other/short.csv
run 1 pack logs/day1.csv logs/day2.csv other/short.csv -o x.sfpack
expect err "other/short.csv:1: .*column 3 \"load\" of logs/day1.csv is missing"
sed '1s/$/,extra/; 2,$s/$/,1/' logs/day3.csv >other/wide.csv
run 1 pack logs/day1.csv other/wide.csv -o x.sfpack
expect err "other/wide.csv:1: .*column 4 \"extra\" is extra"
tr , ';' <logs/day3.csv >other/semi.csv
run 1 pack logs/day1.csv other/semi.csv -o x.sfpack
expect err "other/semi.csv:1: the header is separated by ';', logs/day1.csv's by ','"
printf 'time,temp,load\000\n' >other/binary.csv
run 1 pack logs/day1.csv other/binary.csv -o x.sfpack
expect err "other/binary.csv:1:15: a NUL byte in the header row"
[ -e x.sfpack ] && fail "a failed pack left x.sfpack"
# A bad value in a later file: that file's own line and column.
sed '4s/,[0-9]*\.5,/,warm,/' logs/day2.csv >other/bad.csv
run 1 pack logs/day1.csv other/bad.csv -o x.sfpack
expect err "other/bad.csv:4:18: expected a number in column \"temp\", found \"warm\""

# Notes after packing name the file too.
printf 't,v\n2020-01-01,1\n2020-01-02,2\n' >other/r1.csv
printf 't,v\n2020-01-03,1\n2020-01-03,2\n' >other/r2.csv
run 0 pack other/r1.csv other/r2.csv -o x.sfpack
expect err "warning: at line 3 of other/r2.csv the time repeats within a series"
rm -f x.sfpack

# --series-per-file: a series per file, named after it; the rows as the files had them.
run 0 pack logs --series-per-file -o per.sfpack
expect out "packed 72 rows \(3 series, 3 files\)"
run 0 verify per.sfpack
run 0 inspect --json per.sfpack
expect out '"series": \[\{"name": "day1", "first_row": 0, "rows": 24'
expect out '\{"name": "day3", "first_row": 48, "rows": 24'
run 0 unpack per.sfpack -o back.csv
cmp -s back.csv all.csv || fail "unpack of --series-per-file differs from the concatenation"
# Each series' times start again: the files need not be in time order.
run 0 pack logs/day3.csv logs/day1.csv --series-per-file -o x.sfpack -q
rm -f x.sfpack
cp logs/day1.csv other/day1.csv
run 2 pack logs/day1.csv other/day1.csv --series-per-file -o x.sfpack
expect err "logs/day1.csv and other/day1.csv: .*both would be \"day1\""
run 2 pack logs --series-per-file --series-column temp -o x.sfpack
expect err "--series-per-file and --series-column exclude each other"
run 2 pack - --series-per-file -o x.sfpack
expect err "stdin has no name"

# --series-column across files: a series may go on into the next file; one
# that comes back later is regrouped, its rows keeping their files and lines.
printf 'site,v\na,1\na,2\nb,3\n' >other/s1.csv
printf 'site,v\nb,4\nc,5\n' >other/s2.csv
printf 'site,v\nd,6\na,7\n' >other/s3.csv
run 0 pack other/s1.csv other/s2.csv --series-column site -o s.sfpack
expect out "packed 5 rows \(3 series, 2 files\)"
run 0 pack other/s1.csv other/s2.csv other/s3.csv --series-column site -o r.sfpack
expect err "the rows of series interleave: pack regrouped them"
run 0 unpack r.sfpack -o r.csv
same r.csv <(printf 'site,v\na,1\na,2\na,7\nb,3\nb,4\nc,5\nd,6\n')
run 0 verify r.sfpack

# predict --with-actual: each forecast's file and line hold its time and
# actual value (checked with awk on the user's own files).
run 0 pack logs/day1.csv logs/day2.csv logs/day3.csv --series-per-file -o p.sfpack -q
run 0 train --data p.sfpack --model lstm:4,dense --window 4 --epochs 1 --batch-size 8 --targets load -q \
    --checkpoint-dir ck
run 0 predict --checkpoint ck/latest.safetensors --data p.sfpack --with-actual -o pred.csv -q
head -n 1 pred.csv | grep -qx "series,time,file,line,load_pred,load" || fail "predict's header: $(head -n 1 pred.csv)"
rows=$(tail -n +2 pred.csv | wc -l)
[ "$rows" -gt 30 ] || fail "predict wrote $rows forecasts"
bad=$(tail -n +2 pred.csv | while IFS=, read -r series time file line pred actual; do
    src=$(awk -v n="$line" 'NR == n' "$file")
    [ "logs/$series.csv" = "$file" ] && [ "$src" = "$time,${src#*,}" ] && [ "${src##*,}" = "$actual" ] ||
        echo "$series $time $file:$line ($src) $actual"
done)
[ -z "$bad" ] || fail "forecasts that do not join back to their file and line: $(echo "$bad" | head -3)"
finish
