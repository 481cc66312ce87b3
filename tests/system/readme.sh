#!/usr/bin/env bash
# The README's examples, run as written on data of their shape (the bundled
# hourly temperatures, and tests/system/readme_data.py's CO2-like, sites and
# weather CSVs): every command succeeds, and every model they train beats
# persistence on every target of its validation part (evaluate given the
# run's directory, as the README does). The 'slow' suite: the README's runs
# are full-size (minutes on 2 cores).
set -u
. "$SRCDIR/tests/lib.sh"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
ln -s "$SRCDIR/data" data
python3 "$SRCDIR/tests/system/readme_data.py" "$SRCDIR" . || exit 1

# The README's shell blocks' seqfeed commands, continuation lines joined and
# comments dropped; those for data not here (synth's 20M rows, a cluster)
# or with placeholders ([--json], ...) left out.
mapfile -t commands < <(python3 - "$SRCDIR/README.md" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
for block in re.findall(r"```sh\n(.*?)```", text, re.S):
    for line in block.replace("\\\n", " ").splitlines():
        line = re.sub(r"\s+#.*$", "", line).strip()
        if not line.startswith("seqfeed ") or re.search(r"\[|\.\.\.|big\.sfpack|synth", line):
            continue
        print(line)
PY
)
[ "${#commands[@]}" -ge 10 ] || fail "found ${#commands[@]} README commands, expected at least 10"
trained=0
for c in "${commands[@]}"; do
    read -ra words <<<"$c"
    echo "+ $c" >&2
    run 0 "${words[@]:1}"
    [ "${words[1]}" = train ] || continue
    data= ckdir=
    for ((k = 2; k < ${#words[@]} - 1; k++)); do
        case ${words[k]} in --data) data=${words[k + 1]} ;; --checkpoint-dir) ckdir=${words[k + 1]} ;; esac
    done
    run 0 evaluate --checkpoint "$ckdir" --data "$data" --json
    python3 - out "$c" <<'PY' || fail "the README's run does not beat persistence on every target: $c: $(cat out)"
import json, sys
r = json.load(open(sys.argv[1]))
for t in r["per_target"]:
    print("%s: %s RMSE %.4g, persistence %.4g" % (sys.argv[2].split()[3], t["name"], t["rmse"]["model"],
                                                 t["rmse"]["persistence"]), file=sys.stderr)
sys.exit(0 if r["per_target"] and all(t["beats_persistence"] for t in r["per_target"]) else 1)
PY
    trained=$((trained + 1))
done
[ "$trained" -eq 3 ] || fail "ran $trained of the README's train commands, expected 3"
finish
