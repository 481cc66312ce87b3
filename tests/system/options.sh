#!/usr/bin/env bash
# One spelling and one meaning per option, kept so:
#   1. every flag a command's --help lists, its parser accepts, and every
#      option of the program that its --help does not list, it refuses as
#      unknown (help and parser read one table, cli/options.c);
#   2. every flag named in a hint or an error that a command prints (the
#      diagnosis of slow stages and of compute-bound runs, memory budgets,
#      too little data, resume, reads) is one the command accepts;
#   3. every flag spelled in a string of the sources is an option of some
#      command.
# meson sets SEQFEED and SRCDIR.
set -u
: "${SEQFEED:?}" "${SRCDIR:?}"
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../lib.sh"
tmp=$(mktemp -d /tmp/sfopts.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1

commands=(pack inspect verify unpack synth train predict evaluate export info "bench pipeline" "bench read" "bench train"
          "bench scaling")
flags_of() { grep -oE -- '(^|[ ,])--[a-z][a-z-]*' | grep -oE -- '--[a-z][a-z-]*' | sort -u; }
declare -A helps
for c in "${commands[@]}"; do
    # shellcheck disable=SC2086
    $SEQFEED $c --help >"help" 2>&1 || fail "seqfeed $c --help failed: $(cat help)"
    helps[$c]=$(flags_of <help)
    # A long help text is printed whole: every option's text ends a sentence
    # or a parenthesis, never cut mid-word.
    [ "$c" = pack ] && { grep -q 'looks like series ids)$' help || fail "seqfeed pack --help cuts --series-column's text"; }
done
all=$(printf '%s\n' "${helps[@]}" | sort -u)

# 1. Help and parser agree.
for c in "${commands[@]}"; do
    for f in $all; do
        # shellcheck disable=SC2086
        $SEQFEED $c "$f" x >/dev/null 2>err
        if grep -qx -- "$f" <<<"${helps[$c]}"; then
            grep -q "unknown option '$f'" err && fail "seqfeed $c --help lists $f, but $c refuses it"
        else
            grep -q "unknown option '$f'" err || fail "seqfeed $c takes $f, which its --help does not list: $(cat err)"
        fi
    done
done

# 2. The flags in what each command says are its own.
accepts() {  # accepts CMD FILE: every flag FILE names is in CMD's help
    local f
    for f in $(flags_of <"$2"); do
        grep -qx -- "$f" <<<"${helps[$1]}" || fail "seqfeed $1 names $f, which it does not take: $(grep -- "$f" "$2")"
    done
}
"$SEQFEED" synth -o s.sfpack --rows 20000 --feature-count 3 --series-count 2 --chunk-rows 512 -q || exit 1
common=(--data s.sfpack --features f0,f1 --targets f0 --model lstm:8,dense --window 16 --batch-size 16 --epochs 1
        --gpus none --max-steps 30)
bench=(--data s.sfpack --features f0,f1 --targets f0 --model lstm:8,dense --window 16 --batch-size 16 --gpus none
       --steps 20 --warmup 1)
# A stage slowed on purpose, behind an emulated 2 ms step, for a run long
# enough to judge: the hint, and the flags it names, are train's. A reader
# and decoders that wait off the CPU are told what to raise; a windower
# short of a core gets a hint that may name none (other processes' cores).
# The pipeline fixed: autotuned, it would work around the fault. The
# decoder waits 0.5 s a chunk: at 0.2 s it asked 1.2x what a step takes,
# and under TSan, with the suite's other tests on the cores, the step grew
# and decode fell to 0.69x, below the 0.8x a stage limits from. A small
# pool: the fill waits for a few chunks, not 32.
for fault in io:200000 decode-wait:500000 window:3000; do
    over common --max-steps 450 --depth 1 --decoders 1 --val-split 0 --pipeline fixed --pool 1024
    SEQFEED_TEST_DELAY=$fault,step:2000 "$SEQFEED" train "${args[@]}" >/dev/null 2>out
    grep -q "Hint: " out || fail "no hint for a slow ${fault%%:*} stage: $(grep diagnosis out)"
    [ "$fault" = window:3000 ] || grep -q "Hint: .*--" out ||
        fail "no hint naming a flag for a slow ${fault%%:*} stage: $(grep diagnosis out)"
    accepts train out
done
# bench train's diagnosis (its short runs are too short to judge) and its lines.
SEQFEED_TEST_DELAY=window:3000 "$SEQFEED" bench train "${bench[@]}" >out 2>&1
accepts "bench train" out
# bench scaling's answer to a target no run reaches, and its usage errors.
"$SEQFEED" bench scaling --data s.sfpack --model lstm:8,dense --window 16 --batch-size 16 --gpus none --replicas 1,2 \
    --target-loss 1e-9 --max-steps 20 >out 2>&1
grep -q "^answer: .*hint: " out || fail "bench scaling gave no hint for an unreachable target: $(cat out)"
accepts "bench scaling" out
for bad in "--target-loss 0.1 --val-split 0" "--target-loss 0.1 --steps 5" "--lr 0.1" "--target-loss 0.1 --replicas 1,3"; do
    # shellcheck disable=SC2086
    "$SEQFEED" bench scaling --data s.sfpack --model lstm:8,dense --window 16 --batch-size 16 $bad >out 2>&1
    accepts "bench scaling" out
done
over common --model lstm:64,lstm:64,dense
"$SEQFEED" train "${args[@]}" >/dev/null 2>out  # compute bound
accepts train out
# Budgets too small for the replicas, and for the pipeline (on 1 MiB chunks).
"$SEQFEED" synth -o big.sfpack --rows 200000 --feature-count 3 -q || exit 1
for budget in 0.01 2; do
    "$SEQFEED" train "${common[@]/s.sfpack/big.sfpack}" --memory-budget $budget >/dev/null 2>out &&
        fail "a budget of $budget MB fit"
    grep -q "hint: .*--" out || fail "a budget of $budget MB: no hint: $(cat out)"
    accepts train out
done
"$SEQFEED" bench pipeline --data big.sfpack --memory-budget 2 >/dev/null 2>out && fail "bench pipeline fit in 2 MB"
accepts "bench pipeline" out
over common --window 20000
"$SEQFEED" train "${args[@]}" >/dev/null 2>out && fail "a window longer than the data trained"
grep -q -- "--val-split" out || fail "too little data: no --val-split in the hint: $(cat out)"
accepts train out
"$SEQFEED" train "${common[@]}" --checkpoint-dir ck -q || fail "a run for resuming"
"$SEQFEED" train "${common[@]}" --checkpoint-dir ck --resume --pool 7 >/dev/null 2>out && fail "resumed with another pool"
accepts train out
"$SEQFEED" train "${common[@]}" --resume >/dev/null 2>out
accepts train out
"$SEQFEED" bench read --data s.sfpack --direct on >/dev/null 2>out  # tmpfs may refuse O_DIRECT: the hint
accepts "bench read" out
printf 'a,b\n1,x\n' >text.csv
"$SEQFEED" pack text.csv -o text.sfpack >/dev/null 2>out && fail "a text column packed"
accepts pack out
"$SEQFEED" bench pipeline --data s.sfpack --window 100000 >/dev/null 2>out && fail "bench pipeline measured no windows"
grep -q "no window of 100000 rows" out || fail "bench pipeline without windows: $(cat out)"
accepts "bench pipeline" out
# More memory than the machine has, refused before allocating (memory-limits).
for c in train "bench pipeline" "bench train" "bench scaling"; do
    # shellcheck disable=SC2086
    "$SEQFEED" $c --data big.sfpack --window 100000 --batch-size 65536 >/dev/null 2>out && fail "$c: 300 GB fit"
    grep -q "this machine has (hint: .*--" out || fail "$c: more memory than the machine has: $(cat out)"
    accepts "$c" out
done

# Where the options go: after the command (and the bench subcommand);
# seqfeed help CMD is CMD's help.
"$SEQFEED" --batch-size 8 train >/dev/null 2>out && fail "an option before the command was taken"
grep -q "options go after it" out || fail "an option before the command: $(cat out)"
"$SEQFEED" bench --steps 3 train >/dev/null 2>out && fail "an option before bench's subcommand was taken"
grep -q "options go after it" out || fail "an option before bench's subcommand: $(cat out)"
"$SEQFEED" help predict >out 2>&1 || fail "seqfeed help predict failed"
"$SEQFEED" predict --help >help.txt
cmp -s out help.txt || fail "seqfeed help predict is not predict --help"
"$SEQFEED" help nothing >/dev/null 2>&1 && fail "help for an unknown command succeeded"

# 3. Every flag the sources spell in a string is some command's option.
python3 - "$SRCDIR" "$all" <<'PY' || fail "the sources name flags no command takes"
import pathlib, re, sys
root, known = pathlib.Path(sys.argv[1]), set(sys.argv[2].split())
known |= {"--version"}  # seqfeed --version
bad = []
for path in sorted(root.glob("**/*.c")) + sorted(root.glob("**/*.cu")):
    rel = path.relative_to(root)
    if rel.parts[0] in ("tests", "bench") or rel.parts[0].startswith("build"): continue  # their own programs
    text = re.sub(r"/\*.*?\*/|//[^\n]*", "", path.read_text(), flags=re.S)  # code, not comments
    for literal in re.findall(r'"((?:[^"\\\n]|\\.)*)"', text):
        for flag in re.findall(r"(?<![\w-])--[a-z][a-z-]*", literal):
            if flag not in known: bad.append(f"{path.relative_to(root)}: {flag}")
print("\n".join(bad), file=sys.stderr)
sys.exit(1 if bad else 0)
PY
finish
