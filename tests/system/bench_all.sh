#!/usr/bin/env bash
# bench/all.sh without measuring anything: its syntax, --help, --list and
# usage errors; its tables' medians, ranges and per-round ratios
# (bench/all_report.py); and that --update-doc rewrites only the marked
# blocks of a doc (a fake one here), the rest byte for byte, and leaves no
# temporary file. Runs the header alone (a second) and no benchmark.
set -u
. "$SRCDIR/tests/lib.sh"
all=$SRCDIR/bench/all.sh
build=$(dirname "$SEQFEED")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1

bash -n "$all" || fail "bench/all.sh: syntax"
"$all" --help >out 2>err || fail "--help exited $?"
grep -q -- '--update-doc' out || fail "--help does not describe --update-doc: $(cat out)"
"$all" --list >out || fail "--list exited $?"
for s in header pack train time_to_loss; do grep -qx "$s" out || fail "--list lacks $s: $(cat out)"; done
for case in "--out $SRCDIR/docs/BENCHMARKS.md:2" "--nope:2" "--rounds 0:2" "--rounds x:2" "--only nosuch:2" "--rounds:2" "--from gen.md:2" \
    "--update-doc --from nofile.md:1"; do
    # shellcheck disable=SC2086
    "$all" --build "$build" ${case%:*} >out 2>err
    rc=$?
    [ $rc = "${case##*:}" ] || fail "all.sh ${case%:*} exited $rc, expected ${case##*:}: $(cat err)"
done

# The tables: three rounds of two tools; ratios round by round.
printf '%s\t\t%s\t%s\t%s\n' 1 A mbs 100 1 B mbs 50 2 A mbs 300 2 B mbs 100 3 A mbs 200 3 B mbs 200 \
    1 A rss 10 >recs.tsv
python3 "$SRCDIR/bench/all_report.py" table recs.tsv --row-label tool --cols "mbs:MB/s:.0f,rss:RSS:.0f" \
    --ratio "A / this:mbs:A:ref/this" --ratio "this / A:mbs:A|B:this/ref" >table.md || fail "all_report.py table"
grep -qxF '| A | 200 [100-300] | 10 | - | - |' table.md || fail "row A: $(cat table.md)"
# B's per-round ratios A/B: 2, 3, 1 -> median 2 [1-3] (not 200/100); B/A: 0.5, 0.33, 1.
grep -qxF '| B | 100 [50-200] | - | 2.00x [1.00-3.00] | 0.50x [0.33-1.00] |' table.md || fail "row B: $(cat table.md)"

# --update-doc: only the marked blocks change.
cat >doc.md <<'EOF'
# A doc
text before, <!-- not a marker -->

<!-- all.sh:header begin -->
old header
<!-- all.sh:header end -->
middle text
<!-- all.sh:pack begin -->
old pack figures
<!-- all.sh:pack end -->
the end, no newline
EOF
printf '%s' "$(cat doc.md)" >doc.md
cp doc.md before.md
"$all" --build "$build" --only header --out gen.md --update-doc --doc doc.md >out 2>err ||
    fail "--only header --update-doc exited $?: $(cat err)"
grep -q '^- \*\*Machine\*\*: .*cores' doc.md || fail "header block not written: $(cat doc.md)"
grep -q '^- \*\*Load\*\*: load average' doc.md || fail "no load line: $(cat doc.md)"
grep -qx 'old header' doc.md && fail "old header still there"
grep -qx 'old pack figures' doc.md || fail "the pack block, not run, changed: $(cat doc.md)"
strip() { python3 -c 'import re, sys; print(re.sub(r"(all\.sh:header begin -->\n).*?(<!-- all\.sh:header end)", r"\1\2", open(sys.argv[1]).read(), flags=re.S), end="")' "$1"; }
[ "$(strip doc.md)" = "$(strip before.md)" ] || fail "text outside the header block changed: $(diff <(strip before.md) <(strip doc.md))"
cmp -s <(tail -c 19 doc.md) <(printf 'the end, no newline') || fail "the doc's last bytes changed"

# --from: blocks of an earlier run; one the doc has no marker for is named and left out.
cp doc.md before.md
cat >gen2.md <<'EOF'
<!-- all.sh:pack begin -->
| new | pack |
<!-- all.sh:pack end -->
<!-- all.sh:nosuch begin -->
stray
<!-- all.sh:nosuch end -->
EOF
"$all" --update-doc --from gen2.md --doc doc.md >out 2>err || fail "--from exited $?: $(cat err)"
grep -q 'nosuch' err || fail "the block without a marker not named: $(cat err)"
grep -q stray doc.md && fail "a block without a marker was inserted"
expected=$(python3 -c 'import sys; t = open(sys.argv[1]).read(); print(t.replace("old pack figures\n", "| new | pack |\n"), end="")' before.md)
[ "$(cat doc.md)" = "$expected" ] || fail "--from changed more than the pack block: $(diff before.md doc.md)"
! compgen -G '*.tmp*' >/dev/null || fail "temporary file left: $(ls -A)"
finish
