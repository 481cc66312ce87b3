#!/usr/bin/env bash
# --pipeline auto, the default: train prints one line at start (what it
# starts with, its caps, the knobs given) and a line per change; the choice
# is in the checkpoint's metadata ('pipeline') and on the report; a knob
# given explicitly stays as given; --pipeline fixed prints no tuning line;
# the caps fit --memory-budget; a checkpoint written before the key existed
# resumes; bench pipeline --grid prints auto's share of the grid's best,
# and under --memory-budget runs auto with the caps that fit it.
# meson sets SEQFEED.
set -u
: "${SEQFEED:?}"
tmp=$(mktemp -d /tmp/sfautotune.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
"$SEQFEED" synth -o s.sfpack --rows 20000 --feature-count 3 -q || fail "synth"
common=(--data s.sfpack --features f0,f1,f2 --targets f0 --window 16 --batch-size 32 --model lstm:8,dense --gpus none)

# The checkpoint's metadata value of key, or "" (safetensors: an 8-byte
# header length, then the JSON header).
meta() {
    python3 - "$1" "$2" <<'PY'
import json, struct, sys
with open(sys.argv[1], "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    print(json.loads(f.read(n)).get("__metadata__", {}).get(sys.argv[2], ""))
PY
}

"$SEQFEED" train "${common[@]}" --epochs 3 --checkpoint-dir ck --report r.html 2>log.txt ||
    fail "train: $(tail -3 log.txt)"
starts=$(grep -c '^pipeline auto: starts at decoders [0-9]*, prefetch [0-9]*, slots [0-9]*, depth [0-9]*; caps' log.txt)
[ "$starts" = 1 ] || fail "$starts start lines: $(grep pipeline log.txt)"
grep -q 'pool 16384, block-chunks 1 and lanes 1 are not tuned' log.txt || fail "the start line names no untuned knob"
grep -q '^pipeline auto at [0-9.]* s: ' log.txt || fail "no tuning line after the start"
chosen=$(meta ck/latest.safetensors pipeline)
[[ $chosen == "auto: decoders "*", prefetch "*", slots "*", depth "*" (settled at "* ]] ||
    fail "checkpoint's pipeline: '$chosen'"
grep -q "auto: decoders" r.html || fail "the report has no pipeline choice"

# Knobs given explicitly: as given, said so, recorded.
"$SEQFEED" train "${common[@]}" --epochs 1 --max-steps 100 --decoders 1 --slots 3 --checkpoint-dir ck2 \
    2>log2.txt || fail "train with knobs: $(tail -3 log2.txt)"
grep -q '; given: --decoders, --slots;' log2.txt || fail "the given knobs are not said: $(grep 'auto:' log2.txt)"
chosen=$(meta ck2/latest.safetensors pipeline)
[[ $chosen == "auto: decoders 1, prefetch "*", slots 3, depth "*"caps 1, "*", 3, "* ]] ||
    fail "given knobs moved: '$chosen'"

# fixed: no tuning at all.
"$SEQFEED" train "${common[@]}" --epochs 1 --max-steps 50 --pipeline fixed --checkpoint-dir ck3 2>log3.txt ||
    fail "train --pipeline fixed: $(tail -3 log3.txt)"
! grep -q 'pipeline auto' log3.txt || fail "--pipeline fixed tuned"
[[ $(meta ck3/latest.safetensors pipeline) == "fixed: decoders "* ]] || fail "fixed not recorded"

# The caps within --memory-budget (the replicas' share included).
"$SEQFEED" train "${common[@]}" --epochs 1 --max-steps 50 --memory-budget 40 --checkpoint-dir ck4 2>log4.txt ||
    fail "train --memory-budget: $(tail -3 log4.txt)"
mb=$(sed -n 's/^pipeline auto: starts at .*(\([0-9.]*\) MB at most).*/\1/p' log4.txt)
[ -n "$mb" ] && python3 -c "import sys; sys.exit(0 if float('$mb') <= 40 else 1)" ||
    fail "caps of '$mb' MB over a 40 MB budget"

# A checkpoint from before the key: resumes.
python3 - ck/latest.safetensors <<'PY'
import json, struct, sys
path = sys.argv[1]
with open(path, "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    head = json.loads(f.read(n))
    rest = f.read()
del head["__metadata__"]["pipeline"]
text = json.dumps(head, separators=(",", ":")).encode()
text += b" " * (-len(text) % 8)
with open(path, "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text + rest)
PY
[ -z "$(meta ck/latest.safetensors pipeline)" ] || fail "the key was not removed"
"$SEQFEED" train --checkpoint-dir ck --resume --epochs 4 --gpus none 2>log5.txt ||
    fail "resume of a checkpoint without 'pipeline': $(tail -3 log5.txt)"
[[ $(meta ck/latest.safetensors pipeline) == "auto: "* ]] || fail "the resumed run recorded no choice"

# bench pipeline --grid: auto against every setting.
"$SEQFEED" bench pipeline --data s.sfpack --window 16 --grid 0.2 >grid.txt 2>&1 || fail "grid: $(tail -3 grid.txt)"
grep -q '^grid  *[0-9]* settings x 0.2 s: best ' grid.txt || fail "no grid line: $(cat grid.txt)"
grep -q "^rematch  *5 rounds, interleaved, auto and [1-3] setting(s) of the grid's best: decoders " grid.txt ||
    fail "no rematch line: $(cat grid.txt)"
grep -q "^share  *auto [0-9.]* M windows/s (median): [0-9.]*% of the best \[[0-9.]*%-[0-9.]*%\], the median of the rounds' ratios" grid.txt ||
    fail "no share line: $(cat grid.txt)"
grep -q '^auto  *settled at ' grid.txt || fail "no auto line: $(cat grid.txt)"

# --grid under --memory-budget: auto with the caps one run under the same
# budget gets (within it), not the unbudgeted ones.
"$SEQFEED" bench pipeline --data s.sfpack --window 16 --memory-budget 5 --steps 3 --json >one.json 2>&1 ||
    fail "bench pipeline --memory-budget: $(tail -3 one.json)"
"$SEQFEED" bench pipeline --data s.sfpack --window 16 --memory-budget 5 --grid 0.1 --json >gridb.json 2>&1 ||
    fail "grid --memory-budget: $(tail -3 gridb.json)"
python3 - one.json gridb.json <<'PY' || fail "the grid's auto over the budget"
import json, re, sys
one, grid = (json.load(open(p)) for p in sys.argv[1:3])
caps = [re.search(r"caps [0-9, ]*", t).group(0) for t in (one["pipeline"], grid["auto"])]
print("one run:", one["pipeline"], one["memory_bytes"], "bytes; grid's auto:", grid["auto"])
sys.exit(0 if one["memory_bytes"] <= 5e6 and caps[0] == caps[1] else 1)
PY
echo ok
