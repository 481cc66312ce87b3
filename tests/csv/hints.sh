#!/usr/bin/env bash
# What `seqfeed pack` says about times, integers float32 changes, ids and
# empty columns, and that every command it suggests works: each case feeds
# the bad input, checks the message (file:line:column, what is wrong), then
# runs the suggested command (after the fix the message names, when it
# names one). meson runs it with SEQFEED set to the binary.
set -u
: "${SEQFEED:?SEQFEED must name the seqfeed binary}"
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../lib.sh"
tmp=$(mktemp -d /tmp/sfhints.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1

# ---- epochs: any int64 of nanoseconds, the range of each unit checked ----
printf 't,v\n1700000000000000,1\n1700000001000000,2\n1700000002000000,3\n' >us.csv
run 1 pack us.csv -o us.sfpack --time-column t --time-unit s
expect err '^seqfeed pack: error: us\.csv:2:1: time 1700000000000000 in the time column "t" is out of range for --time-unit s: expected -62167219200 to 253402300799 \(0000-01-01T00:00Z to 9999-12-31T23:59:59Z\); as a count of microseconds since 1970 it is 2023-11-14T22:13:20Z'
[ ! -e us.sfpack ] || fail "an out-of-range time left us.sfpack"
run_suggested "microseconds as seconds"
[ ! -s err ] || fail "microseconds packed with a message: $(cat err)"
run 0 inspect us.sfpack
expect out 'column "t" \(epoch-us\), typical step 1s'
printf 't,v\n1700000000000,1\n' >ms.csv
run 1 pack ms.csv -o ms.sfpack --time-column t --time-unit s
expect err 'ms\.csv:2:1: .*as a count of milliseconds since 1970 it is 2023-11-14T22:13:20Z'
run_suggested "milliseconds as seconds"
printf 't,v\n1700000000000000000,1\n' >ns-as-ms.csv
run 1 pack ns-as-ms.csv -o ns-as-ms.sfpack --time-column t --time-unit ms
expect err 'out of range for --time-unit ms: expected -62167219200000 to 253402300799999 .*as a count of nanoseconds'
run_suggested "nanoseconds as milliseconds"
# A time out of range behind rows that fit (a sentinel): no other unit is
# offered, under which those rows would move to 1970; the line is named.
printf 't,v\n1700000000,1\n1700000060,2\n1700000120,3\n99999999999999,4\n' >sent.csv
run 1 pack sent.csv -o sent.sfpack --time-column t --time-unit s
expect err 'sent\.csv:5:1: time 99999999999999 .* out of range for --time-unit s: .*; the 3 row\(s\) before it fit --time-unit s \(line 4: 1700000120\), so this one looks like an outlier \(a sentinel or a typo\): correct line 5 or leave that row out$'
if grep -q 'ack it with' err; then fail "a unit suggested for a sentinel: $(cat err)"; fi
printf 't,v\n253402300799,1\n253402300800,2\n' >smax.csv
run 1 pack smax.csv -o smax.sfpack --time-column t --time-unit s
expect err 'smax\.csv:3:1: .*looks like an outlier'
# A first row whose other units all land outside 1900-2199 (as nanoseconds
# this is 2223): no unit offered
printf 't,v\n8000000000000000000,1\n' >far.csv
run 1 pack far.csv -o far.sfpack --time-column t --time-unit us
expect err 'far\.csv:2:1: time 8000000000000000000 .* out of range for --time-unit us: expected [-0-9]+ to [0-9]+ \([^)]*\)$'
printf 't,v\n1,1\n-62167219201,2\n' >early.csv
run 1 pack early.csv -o early.sfpack --time-column t --time-unit s
expect err 'early\.csv:3:1: time -62167219201 .* out of range for --time-unit s'
# 19 digits of nanoseconds (every instant after 2001-09-09), the ends of
# int64, and one past them.
printf 't,v\n1700000000000000000,1\n1700000001000000000,2\n' >ns.csv
run 0 pack ns.csv -o ns.sfpack --time-column t --time-unit ns
run 0 unpack ns.sfpack -o -
cmp -s out ns.csv || fail "19-digit nanoseconds came back as $(cat out)"
printf 't,v\n-9223372036854775808,1\n9223372036854775807,2\n' >ns-ends.csv
run 0 pack ns-ends.csv -o ns-ends.sfpack --time-column t --time-unit ns
run 0 verify ns-ends.sfpack
run 0 unpack ns-ends.sfpack -o -
cmp -s out ns-ends.csv || fail "int64's ends came back as $(cat out)"
printf 't,v\n9223372036854775808,1\n' >ns-past.csv
run 1 pack ns-past.csv -o ns-past.sfpack --time-column t --time-unit ns
expect err 'ns-past\.csv:2:1: time 9223372036854775808 .* out of range for --time-unit ns'

# ---- integers float32 changes ----
printf 'date,v\n20200101,1\n20200102,2\n20200103,3\n' >ymd.csv
run 0 pack ymd.csv -o ymd.sfpack -q
expect err '^seqfeed pack: warning: column "date": float32 holds integers exactly only up to 16777216 \(2\^24\), and packing changed 2 of its values, by up to 1 \(line 2: 20200101 is stored as 20200100\)\. Its values look like dates \(yyyymmdd\)'
[ "$(wc -l <err)" -eq 1 ] || fail "more than the warning: $(cat err)"
run_suggested "dates as integers"
run 0 unpack ymd.sfpack -o -
printf 'date,v\n2020-01-01,1\n2020-01-02,2\n2020-01-03,3\n' >ymd-back.csv
cmp -s out ymd-back.csv || fail "the dates' time column came back as $(cat out)"
# Not dates, or not rising: no time column suggested.
printf 'id,v\n123456789012,1\n-99999999,2\n16777217,3\n16777216,4\n' >ids.csv
run 0 pack ids.csv -o ids.sfpack
expect err 'warning: column "id": .* changed 3 of its values, by up to 1516 \(line 2: 123456789012 is stored as 123456790528\)$'
# A change too large for its digits in 10 (4.94...e+25, not 17 digits), and
# a value's text too long for the message, cut where it says so.
printf 'id,v\n123456789012345678901234567890123456,1\n2,2\n' >huge.csv
run 0 pack huge.csv -o huge.sfpack
expect err 'by up to 4\.949101101e\+25 \(line 2: 12345678901234567890\.\.\. is stored as 123456789061836689903029900961382400\)$'
printf 'date,v\n20200102,1\n20200101,2\n' >back.csv
run 0 pack back.csv -o back.sfpack
expect err 'warning: column "date": .*changed 1 of its values'
grep -q -- '--time-column' err && fail "dates going back were suggested as the time column: $(cat err)"
# Integers written as floats, not dates for --time-column; past 8 columns, a count.
printf 'd,v\n20200101.0,1\n20200103.00,2\n' >float-ints.csv
run 0 pack float-ints.csv -o fi.sfpack
expect err 'warning: column "d": .*changed 2 of its values, by up to 1 \(line 2: 20200101\.0 is stored as 20200100\)$'
awk 'BEGIN { for (c = 0; c < 10; c++) printf "%sc%d", c ? "," : "", c; print ""; for (r = 0; r < 3; r++) { for (c = 0; c < 10; c++) printf "%s%d", c ? "," : "", 16777217 + 2 * c; print "" } }' >wide.csv
run 0 pack wide.csv -o wide.sfpack
[ "$(grep -c 'warning: column' err)" -eq 8 ] || fail "not 8 column warnings: $(cat err)"
expect err '^seqfeed pack: warning: and 2 more columns: packing changed 6 of their integers beyond 2\^24$'
# The helper thread's half (files over 256 KiB) counts alike.
awk 'BEGIN { print "date,n,v"; for (i = 0; i < 40000; i++) printf "%d,%d,%d\n", 20000101 + i % 28, 16777217 + 2 * i, i }' >big.csv
run 0 pack big.csv -o big1.sfpack --threads 1
mv err err1
run 0 pack big.csv -o big2.sfpack --threads 2
cmp -s err err1 || fail "one thread and two warn differently: $(cat err1) / $(cat err)"
expect err 'column "n": .*changed 40000 of its values'
expect err 'column "date": .*changed 20000 of its values'

# ---- ISO-8601 times the time column refuses, and those it takes ----
printf 'v,time\n1,2016-12-31T23:59:60\n2,2017-01-01T00:00:00\n' >leap.csv
run 1 pack leap.csv -o leap.sfpack
expect err 'leap\.csv:2:3: expected a number in column "time", found "2016-12-31T23:59:60"; .*"2016-12-31T23:59:60" at line 2 column 3 is not one: a leap second \(23:59:60\).*\. Correct line 2 column 3 first; then pack it with: '
sed -i 's/23:59:60/23:59:59/' leap.csv
run_suggested "a leap second, corrected"
printf 'time,v\n2016-12-31T23:59:59,1\n2016-12-31T23:59:60,2\n' >leap-later.csv
run 1 pack leap-later.csv -o leap.sfpack
expect err '^seqfeed pack: error: leap-later\.csv:3:1: "2016-12-31T23:59:60" in the time column "time" is not an ISO-8601 date or time: a leap second'
printf 'v,time\n1,2016-02-30\n2,2016-03-01\n' >feb.csv
run 1 pack feb.csv -o feb.sfpack
expect err 'feb\.csv:2:3: .*"2016-02-30" at line 2 column 3 is not one: day 30: February 2016 has 29 days'
sed -i 's/02-30/02-29/' feb.csv
run_suggested "February 30, corrected"
# A text column beside a time column that would fail: the command waits for the fix.
printf 'time,v,w\n2016-12-31T23:59:59,1,x\n2016-12-31T23:59:60,2,y\n' >leap-text.csv
run 1 pack leap-text.csv -o lt.sfpack
expect err 'Correct "2016-12-31T23:59:60" in the time column "time" first \(line 3 column 1: a leap second'
sed -i 's/23:59:60/23:59:59/' leap-text.csv
run_suggested "a category beside a leap second, corrected"
# 7 to 9 fraction digits: kept to the microsecond, and said.
printf 'v,time\n1,2016-12-31T23:59:59.1234567\n2,2016-12-31T23:59:59.123456789\n3,2016-12-31T23:59:59.5\n' >frac.csv
run 0 pack frac.csv -o frac.sfpack -q
expect err '^seqfeed pack: note: 2 time\(s\) in the time column "time" had digits below a microsecond \(the first at line 2\)'
run 0 unpack frac.sfpack -o -
expect out '^2016-12-31T23:59:59\.123456,1$'
expect out '^2016-12-31T23:59:59\.500000,3$'

# ---- ids of series whose rows interleave ----
printf 'time,id,v\n2020-01-01,A,1\n2020-01-01,B,2\n2020-01-02,A,3\n2020-01-02,B,4\n2020-01-03,A,5\n2020-01-03,B,6\n' >inter.csv
run 1 pack inter.csv -o inter.sfpack
expect err 'inter\.csv:2:12: .*"id" \(ids of 2 series whose rows interleave'
grep -q -- '--categorical' err && fail "interleaved ids suggested as --categorical: $(cat err)"
if grep -qi 'sort' err; then fail "interleaved ids told to sort what pack regroups: $(cat err)"; fi
run_suggested "interleaved ids, regrouped"
run 0 inspect inter.sfpack
expect out '^rows +6 in 2 series \(series column "id"\)'
run 0 pack inter.csv -o cat.sfpack --categorical id
expect err '^seqfeed pack: warning: at line 3 the time repeats within a series while categorical column "id" changes'
run_suggested "--categorical on interleaved ids"
expect out 'packed 6 rows \(2 series\)'
printf 'time,id,v\n2020-01-01,A,1\n2020-01-01,B,2\n2020-01-02,A,3\n2020-01-01,B,4\n' >inter-back.csv
run 1 pack inter-back.csv -o ib.sfpack --categorical id
expect err 'inter-back\.csv:5:1: time 2020-01-01 is before 2020-01-02 \(line 4\).*categorical column "id" changes there too'
# With a series column given, the hint does not ask for one "instead".
printf 'time,site,kind,v\n1,a,x,1\n2,a,y,2\n1,a,x,3\n' >two-ids.csv
run 1 pack two-ids.csv -o ti.sfpack --time-column time --time-unit s --series-column site --categorical kind
expect err 'categorical column "kind" changes there too: if it, not "site", is the id of series whose rows interleave, make it the --series-column and leave it out of --categorical; if each pair of the two is a series, join them into one column$'

# ---- spaces around series ids ----
printf 'id,time,v\nA,2020-01-01,1\nA,2020-01-02,2\n" A",2020-01-01,3\n" A",2020-01-02,4\n' >quoted.csv
run 0 pack quoted.csv -o quoted.sfpack --series-column id
expect out 'packed 4 rows \(2 series\)'
run 0 unpack quoted.sfpack -o -
cmp -s out quoted.csv || fail "a quoted id with a space came back as $(cat out)"
printf 'id,time,v\nA,2020-01-01,1\nA,2020-01-02,2\n A,2020-01-01,3\n A,2020-01-02,4\n' >padded.csv
run 1 pack padded.csv -o padded.sfpack --series-column id
expect err 'padded\.csv:4:4: time 2020-01-01 is before 2020-01-02 \(line 3\).*the series id "A" had spaces around it at line 4, which pack drops as padding outside quotes'

# ---- --missing ffill on a column without values ----
printf 'v,w\n1,\n2,\n3,\n' >empty.csv
run 1 pack empty.csv -o empty.sfpack --missing ffill
expect err 'empty\.csv:2:3: missing value in column "w" with no earlier row in this series to fill it from; it has no value in the rest of the file \(3 rows\): leave it out'
grep -q -- '--missing drop' err && fail "suggested --missing drop, which drops every row: $(cat err)"
run_suggested "an empty column"
run 0 inspect empty.sfpack
expect out '^columns +1$'
printf 'v,w,x\n1,,3\n2,,4\n' >empty-columns.csv
run 1 pack empty-columns.csv -o ec.sfpack --missing ffill --columns v,w,x
run_suggested "an empty column with --columns"
printf 'v,w\n1,\n2,5\n' >late.csv
run 1 pack late.csv -o late.sfpack --missing ffill
expect err 'late\.csv:2:3: .*its first value is at line 3: --missing drop'

# ---- inspect: the version, and names that hold control characters ----
run 0 synth -o synth.sfpack --rows 100 -q
run 0 inspect synth.sfpack
expect out '^format +sfpack version 1 \(no times, CSV lines or categories; pack writes version 2 for those\)'
printf 'id,"a\nb",v\n"x\ny",1,2\n"x\ny",2,3\n"z\tq",1,2\n' >nl.csv
run 0 pack nl.csv -o nl.sfpack --series-column id -q
run 0 inspect nl.sfpack
expect out '^ +1  a\\nb +1 +2 '
expect out '^ +1  x\\ny +0 +2$'
expect out '^ +2  z\\tq +2 +1$'
[ "$(grep -c '^ ' out)" -eq 6 ] || fail "inspect's table has broken lines: $(cat out)"
printf 'id,v\n"x\ny",1\n"z",2\n"x\ny",3\n"w\nq",\n' >nl-back.csv
run 1 pack nl-back.csv -o nl.sfpack --series-column id --missing ffill
[ "$(wc -l <err)" -eq 1 ] || fail "an error with a newline in an id takes lines: $(cat err)"
expect err 'nl-back\.csv:7: missing value in column "v" with no earlier row in series "w\\x0aq"'

# Names too long for a message's command (under ASan: no overrun).
long=$(printf 'x%.0s' $(seq 700))
printf '%s,v\nA,1\nB,2\nA,3\n' "$long" >long-category.csv
run 1 pack long-category.csv -o lc.sfpack
expect err '^seqfeed pack: error: long-category\.csv:2:1: expected a number in column "x'
printf '%s,v\n,1\n,2\n' "$long" >long-empty.csv
run 1 pack long-empty.csv -o le.sfpack --missing ffill
expect err '^seqfeed pack: error: long-empty\.csv:2:1: missing value in column "x'

# ---- big integers: each value counted once, also in a record the buffer's
# end cuts (parsed again after the refill): 60000 rows of 4 columns ----
awk 'BEGIN { print "c0,c1,c2,c3"; for (i = 0; i < 60000; i++) { v = 16777217 + 2 * i; print v "," v "," v "," v } }' >bm.csv
for th in 1 2; do
    run 0 pack bm.csv -o bm.sfpack --threads $th --chunk-rows 1000
    [ "$(grep -c 'packing changed 60000 of its values' err)" -eq 4 ] || fail "threads $th: big integers miscounted: $(cut -c1-140 err)"
done
awk 'BEGIN { print "t,v,w"; for (i = 0; i < 60000; i++) print "2020-01-01T00:00:00." sprintf("%06d", i) "123," (i % 3 == 1 ? "" : i) "," i }' >cut.csv
run 0 pack cut.csv -o cut.sfpack --missing ffill --threads 1
expect err 'note: 60000 time\(s\) in the time column "t" had digits below a microsecond \(the first at line 2\)'

# ---- numeric series ids whose rows interleave: a time repeats ----
printf 'id,t,v\n1,2020-01-01,1\n2,2020-01-01,1\n1,2020-01-02,2\n2,2020-01-02,2\n' >iso3.csv
run 0 pack iso3.csv -o iso3.sfpack
expect err '^seqfeed pack: warning: at line 3 the time repeats within a series while column "id" changes: it looks like the id of series whose rows interleave'
expect err 'Pack it with: seqfeed pack iso3\.csv -o iso3\.sfpack --series-column id$'
run_suggested "numeric ids, regrouped"
run 0 inspect iso3.sfpack
expect out '^rows +4 in 2 series'
# yyyymmdd dates that repeat: no --time-column suggestion; with it, the warning
printf 'id,date,v\n1,20200101,1\n2,20200101,1\n1,20200102,2\n2,20200102,2\n' >ymd3.csv
run 0 pack ymd3.csv -o ymd3.sfpack
if grep -q 'look like dates' err; then fail "repeating dates offered as the time column: $(cat err)"; fi
run 0 pack ymd3.csv -o ymd3.sfpack --time-column date --columns v,id
expect err 'Pack it with: seqfeed pack ymd3\.csv -o ymd3\.sfpack --columns v --series-column id --time-column date$'
run_suggested "yyyymmdd ids, regrouped"
# A repeat in the half a helper thread parses is seen too; a repeat where
# nothing changes is named as one
awk 'BEGIN { print "t,v,w"; for (i = 0; i < 40000; i++) print 1700000000 + i - (i == 30000) "," i % 7 ".5," i % 5 ".5" }' >rep.csv
run 0 pack rep.csv -o rep.sfpack --time-column t --time-unit s --threads 2
expect err '^seqfeed pack: warning: at line 30002 the time repeats within a series \(the row before it has the same time\)'

# ---- the instant (UTC) is range-checked, not the local date; both edges
# round-trip through unpack ----
printf 't,v\n9999-12-31T23:30:00-01:00,0\n9999-12-31T23:40:00-01:00,1\n' >off-hi.csv
run 1 pack off-hi.csv -o off.sfpack --time-column t
expect err 'off-hi\.csv:2:1: "9999-12-31T23:30:00-01:00" in the time column "t" .*its offset puts it in year 10000 in UTC: seqfeed keeps 0000-01-01T00:00Z to 9999-12-31T23:59:59Z'
printf 't,v\n0000-01-01T00:30:00+01:00,0\n0000-01-01T00:40:00+01:00,1\n' >off-lo.csv
run 1 pack off-lo.csv -o off.sfpack --time-column t
expect err 'off-lo\.csv:2:1: .*its offset puts it in year -0001 in UTC'
[ ! -e off.sfpack ] || fail "a time outside 0000-9999 left off.sfpack"
printf 't,v\n9999-12-31T21:59:59-02:00,0\n9999-12-31T22:59:59-01:00,1\n' >edge-hi.csv
printf 't,v\n0000-01-01T01:00:00+01:00,0\n0000-01-01T02:00:00+01:00,1\n' >edge-lo.csv
for e in hi lo; do
    run 0 pack edge-$e.csv -o edge-$e.sfpack -q
    run 0 unpack edge-$e.sfpack -o edge-$e-back.csv -q
    run 0 pack edge-$e-back.csv -o edge-$e-back.sfpack -q
    run 0 unpack edge-$e-back.sfpack -o edge-$e-back2.csv -q
    cmp -s edge-$e-back.csv edge-$e-back2.csv || fail "edge $e: unpack, pack, unpack differs"
done
expect_file() { grep -q -- "$2" "$1" || fail "$1 lacks $2: $(cat "$1")"; }
expect_file edge-hi-back.csv '^9999-12-31T23:59:59Z,0$'
expect_file edge-lo-back.csv '^0000-01-01T00:00:00Z,0$'

# ---- no command that leaves no column; decimal commas; ragged rows; blank
# lines behind the data do not break the suggested command ----
printf 'time;id;v\n2020-01-01;A;1,5\n2020-01-01;B;2\n2020-01-02;A;3\n2020-01-02;B;4\n' >semi.csv
run 1 pack semi.csv -o semi.sfpack
expect err '"v" \(numbers with a decimal comma, such as "1,5" at line 2: pack reads a decimal point\)\. Write the numbers with a decimal point first: sed '
if grep -q -- '--drop-columns' err; then fail "the value column dropped: $(cat err)"; fi
eval "$(sed -n 's/.*decimal point first: \(sed .* > semi-point\.csv\); then.*/\1/p' err)" || fail "the sed command failed"
run 1 pack semi-point.csv -o semi.sfpack
run_suggested "decimal commas, then regrouped"
run 0 unpack semi.sfpack -o -
expect out '^A,2020-01-01,1\.5$'
printf 't,v\n2020-01-01T00:00:00,5Z,0\n2020-01-01T00:00:01,5Z,1\n' >comma.csv
run 1 pack comma.csv -o comma.sfpack --time-column t
expect err '^seqfeed pack: error: comma\.csv:2:1: this row has 3 fields, the header 2 \(ragged row\): a value holds the delimiter .,. \(at column 21 a number seems cut at a decimal comma\)\?'
printf 't,name\n2020-01-01,a\n2020-01-02,a\n' >only.csv
run 1 pack only.csv -o only.sfpack
expect err 'No command is offered: without it no column would be left to pack'
printf 'time,id,v\n2020-01-01,A,1\n2020-01-01,B,2\n2020-01-02,A,3\n2020-01-02,B,4\n\n' >blank.csv
run 1 pack blank.csv -o blank.sfpack
run_suggested "a blank line at the end, regrouped"

# ---- epoch counts: without --time-unit, and as a value column ----
printf 'timestamp,v\n1700000000,1\n1700000060,2\n' >ep.csv
run 1 pack ep.csv -o ep.sfpack --time-column timestamp
expect err 'ep\.csv:2:1: "1700000000" in the time column "timestamp" is not an ISO-8601 date or time: .*As a count of seconds since 1970 it is 2023-11-14T22:13:20Z\. Pack it with: seqfeed pack ep\.csv -o ep\.sfpack --time-column timestamp --time-unit s$'
run_suggested "epoch seconds without --time-unit"
{ echo timestamp,v; for i in $(seq 0 99); do echo "$((1700000000000 + 60000 * i + 7)),$((i % 5))"; done; } >msc.csv
run 0 pack msc.csv -o msc.sfpack
expect err 'warning: column "timestamp": .*Its values look like epoch times in ms \(2023-11-14T22:13:20\.007Z to 2023-11-14T23:52:20\.007Z\): to make it the time column, exact, pack it with: seqfeed pack msc\.csv -o msc\.sfpack --time-column timestamp --time-unit ms$'
run_suggested "epoch milliseconds as a value column"
run 0 unpack msc.sfpack -o -
cmp -s out msc.csv || fail "epoch milliseconds came back as $(head -3 out)"
# Daily yyyymmdd dates, two of which are one float32: still offered, as
# the comparison is exact
awk 'BEGIN { print "date,v"; for (m = 1; m <= 9; m++) for (d = 1; d <= 28; d++) printf "2020%02d%02d,%d\n", m, d, d % 7 }' >daily.csv
run 0 pack daily.csv -o daily.sfpack --threads 1
expect err 'Its values look like dates \(yyyymmdd\): to make it the time column, exact, pack it with: seqfeed pack daily\.csv -o daily\.sfpack --time-column date$'

# ---- times with a zone beside times of day without one: a warning; the same
# times all with Z, or all without, none (every parse path: one thread, two,
# the scalar parser) ----
awk 'BEGIN { print "time,v"; for (i = 0; i < 30000; i++)
    printf "2020-01-%02dT%02d:%02d:00%s,%d\n", 1 + int(i / 1440), int(i % 1440 / 60), i % 60, i == 20000 ? "" : "Z", i % 7 }' >mixz.csv
tr -d Z <mixz.csv >noz.csv
awk '{ sub(/:00,/, ":00Z,") } 1' noz.csv >allz.csv
for scalar in 0 1; do
    for threads in 1 2; do
        export SEQFEED_TEST_SCALAR_PARSE=$scalar
        run 0 pack mixz.csv -o mixz.sfpack --threads $threads
        expect err 'warning: time column "time" mixes times with a zone \(Z or an offset\) and times of day without one'
        for f in noz allz; do
            run 0 pack $f.csv -o $f.sfpack --threads $threads
            grep -q "mixes times" err && fail "$f.csv (scalar $scalar, --threads $threads): warned of mixed zones"
        done
    done
done
unset SEQFEED_TEST_SCALAR_PARSE

# ---- inspect: a quoted id with spaces is shown in quotes ----
printf 'id,v\nA,1\nA,2\n"A ",3\n"A ",4\n" B",5\n' >qid.csv
run 0 pack qid.csv -o qid.sfpack --series-column id -q
run 0 inspect qid.sfpack
expect out '^ +1  A +0 +2$'
expect out '^ +2  "A " +2 +2$'
expect out '^ +3  " B" +4 +1$'

finish
