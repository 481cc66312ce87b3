#!/usr/bin/env bash
# Numeric series ids packed without --series-column (issue 26): a column of
# few integers in long runs where the time goes back (refused, before
# anything is written) or, without a time column, a counter restarts (a
# warning before packing), each with the command that packs the column as
# series; --series-column none packs the rows as one series on purpose; no
# hint for calendar integers beside a rising time, nor for the bundled data.
# meson runs it with SEQFEED and SRCDIR set (tests/meson.build).
set -u
: "${SEQFEED:?SEQFEED must name the seqfeed binary}"
: "${SRCDIR:?SRCDIR must name the source tree}"
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../lib.sh"
tmp=$(mktemp -d /tmp/sfserieshint.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1

# series_count FILE N: FILE.sfpack holds N series.
series_count() {
    run 0 inspect "$1"
    expect out "^rows +[0-9]+ in $2 series"
}

# no_hint WHAT: the last pack said nothing on stderr.
no_hint() { [ ! -s err ] || fail "$1: pack said: $(cat err)"; }

# The issue's file: 4 motes, each 50 readings, a reading counter restarting
# per mote, the same minutes for every mote (the time goes back where the
# mote changes); and the same without the time column.
awk 'BEGIN { print "time,mote_id,reading,temp,humidity"
             for (m = 1; m <= 4; m++) for (r = 1; r <= 50; r++)
                 printf "2004-02-28T00:%02d:00,%d,%d,%.2f,%.1f\n", r - 1, m, r, 19 + m + r / 100, 40 + r % 7 }' >motes.csv
cut -d, -f2- motes.csv >motes-notime.csv

# ---- the time goes back where the id changes: refused, nothing written ----
run 1 pack motes.csv -o motes.sfpack
expect err '^seqfeed pack: error: motes\.csv:52:1: time 2004-02-28T00:00:00 goes back from 2004-02-28T00:49:00 \(line 51\) where column "mote_id" changes from 1 to 2, and nowhere else in the first 200 rows: "mote_id" looks like the id of series \(4 values, each in one run of rows\)'
expect err 'If the rows are one series, --series-column none says so, and they pack only without the time column \(--time-column none, and --drop-columns or --columns without "time"\)\. If "mote_id" is the series id, pack it with: seqfeed pack motes\.csv -o motes\.sfpack --series-column mote_id$'
[ "$(wc -l <err)" -eq 1 ] || fail "the refusal takes more than a line: $(cat err)"
[ ! -e motes.sfpack ] || fail "a refused pack left motes.sfpack"
if compgen -G 'motes.sfpack.tmp*' >/dev/null; then fail "a refused pack left a temporary file"; fi
run_suggested "mote ids and a time"
series_count motes.sfpack 4
run 0 verify motes.sfpack
# One series on purpose, as the message says: the flags it names work.
run 0 pack motes.csv -o one.sfpack --series-column none --time-column none --drop-columns time
no_hint "one series without times"
series_count one.sfpack 1
# --series-column none alone: no hint, and the times going back are refused as before
run 1 pack motes.csv -o one.sfpack --series-column none
expect err 'motes\.csv:52:1: time 2004-02-28T00:00:00 is before 2004-02-28T00:49:00 \(line 51\), the row before it in this series'
# --columns: the suggested command leaves the id out of the list
run 1 pack motes.csv -o cols.sfpack --columns time,temp,mote_id,reading
expect err 'pack it with: seqfeed pack motes\.csv -o cols\.sfpack --columns time,temp,reading --series-column mote_id$'
run_suggested "mote ids with --columns"
series_count cols.sfpack 4
# Epoch times named with a unit: kept in the command; stdin is "-"
awk -F, 'NR == 1 { print "t," $2 "," $3 "," $4; next } { print 1077926400 + 60 * ($3 - 1) "," $2 "," $3 "," $4 }' motes.csv >epoch.csv
"$SEQFEED" pack - -o epoch.sfpack --time-column t --time-unit s <epoch.csv >out 2>err && fail "ids in epoch rows packed: $(cat err)"
expect err '^seqfeed pack: error: <stdin>:52:1: time 1077926400 goes back from 1077929340 \(line 51\) where column "mote_id"'
expect err 'pack it with: seqfeed pack - -o epoch\.sfpack --series-column mote_id --time-column t --time-unit s$'
cmd=$(suggested)
eval "\"\$SEQFEED\" $cmd" <epoch.csv >out 2>err || fail "the suggested 'seqfeed $cmd' failed: $(cat err)"
series_count epoch.sfpack 4

# A control character in the id's name is escaped: the message stays one line
{ printf 'time,"mote\nid",reading,temp\n'; tail -n +2 motes.csv | cut -d, -f1-4; } >nl.csv
run 1 pack nl.csv -o nl.sfpack
expect err 'where column "mote\\nid" changes from 1 to 2'
[ "$(wc -l <err)" -eq 1 ] || fail "a newline in the id's name broke the message: $(cat err)"
{ printf '"mote\nid",reading,temp\n'; tail -n +2 motes.csv | cut -d, -f2-4; } >nl-notime.csv
run 0 pack nl-notime.csv -o nl.sfpack
expect err '^seqfeed pack: warning: column "mote\\nid" looks like the id of series'
[ "$(wc -l <err)" -eq 1 ] || fail "a newline in the id's name broke the warning: $(cat err)"

# ---- no time column, a counter restarting: a warning before packing ----
run 0 pack motes-notime.csv -o notime.sfpack
expect err '^seqfeed pack: warning: column "mote_id" looks like the id of series: its 4 values each come in one run of rows, and column "reading" restarts where it changes \(line 52: 50 then 1\), in the first 200 rows; without --series-column they are packed as one series, the id a feature\. If they are one series, --series-column none says so\. If "mote_id" is the series id, pack it with: seqfeed pack motes-notime\.csv -o notime\.sfpack --series-column mote_id$'
[ "$(wc -l <err)" -eq 1 ] || fail "more than the warning: $(cat err)"
expect out 'packed 200 rows \(1 series\)'
run_suggested "mote ids and a counter"
no_hint "the suggested command"
series_count notime.sfpack 4
run 0 pack motes-notime.csv -o notime1.sfpack --series-column none
no_hint "--series-column none"
series_count notime1.sfpack 1
# Said before packing: also when a bad row further on stops it.
{ cat motes-notime.csv; echo '5,1,x,2'; } >motes-bad.csv
run 1 pack motes-bad.csv -o bad.sfpack
expect err '^seqfeed pack: warning: column "mote_id" looks like the id of series'
expect err 'motes-bad\.csv:202:5: expected a number in column "temp"'

# ---- no hint: calendar integers in runs beside a rising time; a counter
# restarting while the time rises; ids whose rows interleave (noted as before) ----
awk 'BEGIN { print "time,hour,temp"
             for (i = 0; i < 24 * 31; i++) printf "2020-01-%02dT%02d:00,%d,%d\n", 1 + int(i / 24), i % 24, i % 24, 10 + i % 7 }' >hourly.csv
run 0 pack hourly.csv -o hourly.sfpack
no_hint "an hour column"
awk 'BEGIN { print "date,month,day,v"; split("31 29 31 30 31 30 31 31 30 31 30 31", len, " ")
             for (m = 1; m <= 12; m++) for (d = 1; d <= len[m]; d++) printf "2020-%02d-%02d,%d,%d,%d\n", m, d, m, d, d % 5 }' >daily.csv
run 0 pack daily.csv -o daily.sfpack
no_hint "month and day columns beside dates"
awk -F, 'NR == 1 { print; next } { printf "2004-02-28T%02d:%02d:00,%s,%s,%s,%s\n", int((NR - 2) / 60), (NR - 2) % 60, $2, $3, $4, $5 }' \
    motes.csv >rising.csv
run 0 pack rising.csv -o rising.sfpack
no_hint "a counter restarting under a rising time"
printf 'id,t,v\n1,2020-01-01,1\n2,2020-01-01,1\n1,2020-01-02,2\n2,2020-01-02,2\n' >inter.csv
run 0 pack inter.csv -o inter.sfpack
expect err '^seqfeed pack: warning: at line 3 the time repeats within a series while column "id" changes'
if grep -q 'looks like the id of series:' err; then fail "interleaved ids taken for runs: $(cat err)"; fi

# ---- the bundled data, packed as the README and the tests pack it ----
run 0 pack "$SRCDIR/data/hourly-temperatures-2010.csv" -o temps.sfpack --series-column site
no_hint "hourly temperatures"
run 0 pack "$SRCDIR/data/treasury-yields-daily.csv" -o yields.sfpack
no_hint "treasury yields"
run 0 pack "$SRCDIR/data/treasury-yields-daily.csv" -o yields2.sfpack --drop-columns time
no_hint "treasury yields without time"

# ---- evidence beyond the first buffer (1 MiB): not seen before packing;
# the time going back is refused there, naming the column that changes ----
# (the counter comes first: the id is the column that did not change just before)
awk 'BEGIN { print "t,reading,mote_id,v"
             for (m = 1; m <= 2; m++) for (r = 0; r < 70000; r++) printf "%d,%d,%d,%d.5\n", 1700000000 + r, r, m, r % 9 }' >late.csv
run 1 pack late.csv -o late.sfpack --time-column t --time-unit s
expect err 'late\.csv:70002:1: time 1700000000 is before 1700069999 \(line 70001\), the row before it in this series; times must not go back within a series \(sort the CSV by time\); column "mote_id" changes there too \(1 to 2\): if it is the id of series, each in one run of rows, pack it with: seqfeed pack late\.csv -o late\.sfpack --series-column mote_id --time-column t --time-unit s$'
[ ! -e late.sfpack ] || fail "a refused pack left late.sfpack"
run_suggested "ids past the first buffer"
series_count late.sfpack 2

finish
