#!/usr/bin/env bash
# A second parse thread changes nothing: every shape of CSV packed with
# --threads 1 and --threads 2 gives the same exit status, the same messages
# and a byte-identical file. Each input is over 256 KiB, so that the helper
# thread parses part of each buffer: series named (grouped and
# interleaved, ISO and epoch times), categories, --missing drop and ffill,
# integers beyond 2^24, times below a microsecond, several files, and
# errors in the helper's part (a time going back, text, a blank line, a
# padded or invalid series id) named at the same line and column.
set -u
: "${SEQFEED:?SEQFEED must name the seqfeed binary}"
: "${SRCDIR:?SRCDIR must name the source tree}"
. "$SRCDIR/tests/lib.sh"
tmp=$(mktemp -d /tmp/sfthreads.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1

# same WHAT RC ARGS...: pack ARGS with one and with two threads; both exit
# RC, say the same on stderr, and (RC 0) write the same bytes.
same() {
    local what=$1 want=$2 r1 r2
    shift 2
    "$SEQFEED" pack "$@" -o one.sfpack --threads 1 -q >/dev/null 2>e1
    r1=$?
    "$SEQFEED" pack "$@" -o two.sfpack --threads 2 -q >/dev/null 2>e2
    r2=$?
    sed -i 's/one\.sfpack/two.sfpack/g' e1
    [ "$r1" -eq "$want" ] || fail "$what: one thread exited $r1, expected $want: $(head -c 600 e1)"
    [ "$r2" -eq "$want" ] || fail "$what: two threads exited $r2, expected $want: $(head -c 600 e2)"
    cmp -s e1 e2 || fail "$what: messages differ: $(diff e1 e2 | head -c 1200)"
    if [ "$want" -eq 0 ] && [ "$r1" -eq 0 ] && [ "$r2" -eq 0 ]; then
        cmp -s one.sfpack two.sfpack || fail "$what: the file packed with two threads differs from one thread's"
    fi
    [ "$want" -eq 0 ] || [ ! -e two.sfpack ] || fail "$what: a failed pack left two.sfpack"
    rm -f one.sfpack two.sfpack
}

# gen SITES STEPS ORDER [AWK]: time,site,value with SITES sites and STEPS
# hours each, grouped (each site's hours together) or interleaved (an hour
# of every site, then the next hour); AWK may rewrite $0 (a row) with n,
# the row's index, s, t at hand.
gen() {
    awk -v S="$1" -v T="$2" -v order="$3" 'BEGIN {
        print "time,site,value,load"
        for (i = 0; i < S * T; i++) {
            if (order == "grouped") { s = int(i / T); t = i % T } else { s = i % S; t = int(i / S) }
            d = 1 + int(t / 24); h = t % 24
            $0 = sprintf("2024-%02d-%02dT%02d:00:00,site%d,%.2f,%d", 1 + int((d - 1) / 28), 1 + (d - 1) % 28, h, s,
                         (s * 7 + t * 13) % 1000 / 10, t % 17)
            n = i
            '"${4:-}"'
            print
        }
    }'
}

ts="--time-column time --series-column site"
gen 40 1000 grouped >grouped.csv
same "grouped series" 0 grouped.csv $ts
gen 40 1000 interleaved >inter.csv
same "interleaved series" 0 inter.csv $ts
# Interleaved and regrouped through spilled runs at the least budget.
same "interleaved series, spilled" 0 inter.csv $ts --memory-budget 1
# Held rows of series first seen buffers after the regrouping began: the
# parse finds the ids seen so far (a copy taken at each buffer), and a new
# one's first rows take the commit's own path.
gen 40 1000 interleaved 'if (t >= 600 && s % 2) sub(/,site/, ",late")' >late_ids.csv
same "interleaved series, some first seen later" 0 late_ids.csv $ts
# CRLF lines, and a categorical column beside the series.
gen 40 1000 grouped 'sub(/$/, "\r"); sub(/,site/, ",c" (n % 3) ",site")' | sed '1s/time,/time,kind,/' >crlf.csv
same "CRLF and a categorical column" 0 crlf.csv $ts --categorical kind
# Missing values: dropped, or filled from the row before in the series.
gen 40 1000 grouped 'if (n % 97 == 5) sub(/,[0-9.]+,/, ",,"); if (n % 89 == 3) sub(/,[0-9]+$/, ",NA")' >missing.csv
same "missing values, drop" 0 missing.csv $ts --missing drop
same "missing values, ffill" 0 missing.csv $ts --missing ffill
same "missing values, error" 1 missing.csv $ts
# A series whose first row misses a value: nothing to fill it from.
gen 40 1000 grouped 'if (n == 30000) sub(/,[0-9.]+,/, ",,")' >first_missing.csv
same "ffill with no earlier row" 1 first_missing.csv $ts --missing ffill
# Integers beyond 2^24 (a warning with the first changed value's line) and
# times with nanoseconds (a note): counted from both threads' parts.
gen 40 1000 grouped 'sub(/,[0-9]+$/, "," (20000001 + n * 3)); if (n > 20000) sub(/:00,/, ":00.123456789,")' >big.csv
same "big integers and cut times" 0 big.csv $ts
# Integers beyond 2^24 that go back within a series (not epoch times), and
# times repeated within a series (a note naming the first): both inside
# the runs of rows the main thread takes from the helper at once.
gen 40 1000 grouped 'sub(/,[0-9]+$/, "," (90000000 - n * 3)); if (t == 700) sub(/T[0-9][0-9]/, "T" sprintf("%02d", (t - 1) % 24))' >repeat.csv
same "big integers going back, repeated times" 0 repeat.csv $ts
# Category values first seen in the helper's part of a buffer: codes in
# order of first appearance, from either thread.
gen 40 1000 grouped 'sub(/,site/, ",v" int(n / 3001) % 7 "_" int(n / 7) % 3 ",site")' | sed '1s/time,/time,kind,/' >cats.csv
same "category values first seen anywhere" 0 cats.csv $ts --categorical kind
same "category values, no series column" 0 cats.csv --time-column none --drop-columns time,site --categorical kind
# A category value's error (a 1025th value, one not UTF-8) in a run of rows
# the main thread takes from the helper's arrays: named as one thread names
# it, the run not written.
awk 'BEGIN { print "kind,v"; for (i = 0; i < 500000; i++) printf "k%d,%d\n", (i == 400000 ? 5000 : i % 1024), i % 7 }' >cat_over.csv
same "a 1025th category value in a run" 1 cat_over.csv --categorical kind
for row in 100000 333333 450000; do
    awk -v r=$row 'BEGIN { print "kind,v"
                           for (i = 0; i < 500000; i++) if (i == r) printf "k\377,1\n"; else printf "k%d,%d\n", i % 3, i % 7 }' >cat_utf8.csv
    same "a category value not UTF-8 at row $row" 1 cat_utf8.csv --categorical kind
done
# A time going back after a run written from the helper's arrays: the hint
# reads the rows before it in the batch, which must be those one thread
# leaves there (else it takes the counter for the series id).
for row in 120000 140000 180000; do
    awk -v r=$row 'BEGIN { print "time,cnt,id,v"
                           for (i = 0; i < 200000; i++) { b = i == r; printf "%d,%d,%d,%d\n", b ? 0 : 1600000000 + i, i, b ? 2 : 1, i % 7 } }' >hint_id.csv
    same "a time going back after a long run, row $row" 1 hint_id.csv --time-column time --time-unit s
done
# Numeric series ids packed as one series: the time goes back where the
# id changes, in the helper's part of a buffer, after runs of rows it
# handed over; the hint names the id column from the rows before it in
# the batch, which must be one thread's.
awk 'BEGIN { print "t,reading,mote_id,v"
             for (m = 1; m <= 2; m++) for (r = 0; r < 70000; r++) printf "%d,%d,%d,%d.5\n", 1700000000 + r, r, m, r % 9 }' >late.csv
same "numeric ids taken for one series" 1 late.csv --time-column t --time-unit s
# Epoch seconds as the time.
gen 40 1000 grouped '$0 = (1700000000 + (n % 1000) * 3600) substr($0, index($0, ","))' >epoch.csv
same "epoch times" 0 epoch.csv $ts --time-unit s
# Blank lines at the end, more than the helper has room for records.
{ cat grouped.csv; yes '' | head -n 400000; } >trailing.csv
same "many blank lines at the end" 0 trailing.csv $ts
# The helper's arrays are sized by the first 64 KiB of its part: blocks of
# long records then of short ones leave the lines it has no room for to
# the main thread, in order.
gen 40 1000 grouped 'if (int(n / 1500) % 4 == 0) sub(/,site/, ",site" sprintf("%090d", s) "_")' >blocks.csv
same "long records, then short" 0 blocks.csv $ts
# The next buffer is read, split and parsed while this one is committed:
# one too short to split (1.1 MB: 36 kB behind the first), one with a
# quote, and an error (a blank line inside the data) in the second of
# three buffers while the third is parsed.
gen 31 1000 grouped >short_tail.csv
same "a last buffer too short to split" 0 short_tail.csv $ts
gen 60 1000 grouped 'if (n == 35000) sub(/,[0-9.]+,/, ",\"1.5\",")' >quote2.csv
same "a quote in the second buffer" 0 quote2.csv $ts
# Quotes, looked for only once one is seen: before that a buffer is split
# unread, and a quoted field may go over the split or over the buffer's last
# line end (the bytes are then joined again). The first quote at rows that
# fall in either thread's part of a buffer: a quoted value, a quoted dropped
# text over lines (some of which look like records), over 600 kB and over
# 2 MB (longer than a buffer: it goes over a split or a buffer's end
# wherever it starts), after spaces, a quote inside a text (not a quote to
# CSV), and one never closed.
for row in 1 16000 35000 41234 65432 80001 99999 120000 133333 149990; do
    for form in value lines records long longer spaced inside; do
        case $form in
        value) edit='sub(/,[0-9.]+,/, ",\"1.5\",")' ;;
        lines) edit='sub(/,[0-9]+$/, ",\"a\nb,c\n\"")' ;;
        records) edit='sub(/,[0-9]+$/, ",\"\n2024-01-01T00:00:00,site1,1.5,3\n2024-01-01T01:00:00,site1,1.5,3\"")' ;;
        long | longer)
            lines=$([ $form = long ] && echo 300000 || echo 1000000)
            edit='x = "\n,"; while (length(x) < 2 * '$lines') x = x x; sub(/,[0-9]+$/, ",\"x" substr(x, 1, 2 * '$lines') "\"")' ;;
        spaced) edit='sub(/,[0-9]+$/, ",  \"x,y\"")' ;;
        inside) edit='sub(/,[0-9]+$/, ",a\"b")' ;;
        esac
        gen 150 1000 grouped "if (n == $row) { $edit }" >quoted.csv
        same "a quote ($form) first at row $row" 0 quoted.csv $ts --drop-columns load
    done
    gen 150 1000 grouped "if (n == $row) sub(/,[0-9]+\$/, \",\\\"never closed\")" >unclosed.csv
    same "a quote never closed at row $row" 1 unclosed.csv $ts --drop-columns load
done
# An id with spaces inside quotes (" a"), then unquoted ( a: padding,
# dropped), rows interleaved: the helper must not take the unquoted one
# for the quoted id that came round before.
awk 'BEGIN { print "time,site,value"
             for (i = 0; i < 300000; i++) { s = i % 10
                 id = s ? "site" s : i < 100000 ? "\" a\"" : " a"
                 printf "%d,%s,%d.5\n", 1700000000 + int(i / 10) * 60, id, i * 7 % 1000 } }' >padded_ids.csv
same "an id quoted with spaces, then padded" 0 padded_ids.csv --time-column time --time-unit s --series-column site
gen 60 1000 grouped 'if (n == 35000) $0 = ""' >blank2.csv
same "a blank line in the second buffer" 1 blank2.csv $ts
# Several files, each over 256 KiB, the series going on across them.
head -n 20001 grouped.csv >part1.csv
{ head -n 1 grouped.csv; tail -n +20002 grouped.csv; } >part2.csv
same "two files" 0 part1.csv part2.csv $ts
same "two files, a series per file" 0 part1.csv part2.csv --time-column none --drop-columns time,site --series-per-file

# Errors in the helper's part of a buffer and in the main thread's: the
# same line, column and message.
# 20,000 rows, 700 kB: one buffer, of which the helper parses the second half.
for row in 3 13377 19998; do
    gen 20 1000 grouped "if (n == $row) sub(/T[0-9][0-9]/, \"T99\")" >bad.csv
    same "a bad time at row $row" 1 bad.csv $ts
    gen 20 1000 grouped "if (n == $row) sub(/^2024/, \"2023\")" >back.csv
    same "a time going back at row $row" 1 back.csv $ts
    # Seconds from row 13000 on, in the helper's part: the message writes
    # times with the parts seen up to its row, from either thread.
    gen 20 1000 grouped "if (n < 13000) sub(/:00,/, \",\"); if (n == $row) sub(/^2024/, \"2023\")" >secs.csv
    same "seconds from row 13000, a time going back at row $row" 1 secs.csv $ts
    gen 20 1000 grouped "if (n == $row) sub(/,[0-9.]+,/, \",oops,\")" >text.csv
    same "text at row $row" 1 text.csv $ts
    gen 20 1000 grouped "if (n == $row) \$0 = \"\"" >blank.csv
    same "a blank line at row $row" 1 blank.csv $ts
    gen 20 1000 grouped "if (n == $row) sub(/,site/, \", site\")" >padded.csv
    same "a padded series id at row $row" 0 padded.csv $ts
    gen 20 1000 grouped "if (n == $row) sub(/,site/, \", site\"); if (n == $row + 1) sub(/^2024/, \"2023\")" >padded.csv
    same "a padded series id, then a time going back, at row $row" 1 padded.csv $ts
    gen 20 1000 grouped "if (n == $row) sub(/,site/, \",\\377site\")" >utf8.csv
    same "an invalid series id at row $row" 1 utf8.csv $ts
    gen 20 1000 grouped "if (n == $row) sub(/,[0-9]+\$/, \"\")" >ragged.csv
    same "a ragged row at row $row" 1 ragged.csv $ts
done
# A series that comes back where it cannot be regrouped (to stdout).
"$SEQFEED" pack inter.csv $ts -o - --threads 1 -q 2>e1 >/dev/null
r1=$?
"$SEQFEED" pack inter.csv $ts -o - --threads 2 -q 2>e2 >/dev/null
r2=$?
[ "$r1" -eq 2 ] && [ "$r2" -eq 2 ] || fail "interleaved to stdout exited $r1 and $r2, expected 2 and 2"
cmp -s e1 e2 || fail "interleaved to stdout: messages differ: $(diff e1 e2 | head -c 1200)"
finish
