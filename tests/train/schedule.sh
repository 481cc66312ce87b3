#!/usr/bin/env bash
# --lr-schedule: runs split with --max-steps and --resume (mid-warmup, then
# mid-plateau after a reduction) and a cosine run killed mid-warmup end with
# the same latest.safetensors, byte for byte, and the same log losses as the
# runs uninterrupted; the options of one schedule are refused with another,
# plateau without validation, a --resume with another schedule. meson sets
# SEQFEED.
set -u
: "${SEQFEED:?SEQFEED must name the seqfeed binary}"
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../lib.sh"
tmp=$(mktemp -d /tmp/sfsched.XXXXXX)
trap 'kill -9 $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
"$SEQFEED" synth -o s.sfpack --rows 6000 --feature-count 2 --series-count 1 -q || exit 1
# Each run in a folder of its own, with the same relative paths: the
# checkpoints' metadata (the data's and the log's paths) is the same text.
common=(--data ../s.sfpack --model lstm:8,dense --window 8 --batch-size 32 --seed 2 --gpus none
        --checkpoint-dir ck --log log.csv -q)
# same_run A B: A's and B's runs ended alike: the checkpoint (same_bytes),
# and the log's losses at the steps A logged (B's stops add rows).
same_run() {
    same_bytes "$1/ck/latest.safetensors" "$2/ck/latest.safetensors" ||
        fail "$2: latest.safetensors differs from the uninterrupted run's ($1)"
    [ "$(cut -d, -f1-3 "$1/log.csv")" = "$(awk -F, 'NR == FNR { at[$6]; next } $6 in at' "$1/log.csv" "$2/log.csv" |
                                           cut -d, -f1-3)" ] ||
        fail "$2: the log's losses differ from $1's: $(paste -d' ' "$1/log.csv" "$2/log.csv")"
}

# --- plateau with a warmup: lr 0.02 over 8 epochs of 168 steps stalls at
# patience 1 (measured: reductions at the ends of epochs 6 and 8).
plateau=("${common[@]}" --epochs 8 --lr 0.02 --lr-schedule plateau --lr-patience 1 --warmup-steps 200)
mkdir p1 p2
(cd p1 && run 0 train "${plateau[@]}")
[ "$(meta p1/ck/latest.safetensors lr_scale)" = 0.01 ] ||
    fail "plateau did not reduce twice: lr_scale $(meta p1/ck/latest.safetensors lr_scale)"
# The same run in three parts: to step 100, within the warmup; to step
# 1050, in epoch 7 after the first reduction; then to its end. (--log
# given again: a resume names the log as seen from the checkpoint's
# directory, "ck/../log.csv", in the checkpoint.)
cd p2 || exit 1
run 0 train "${plateau[@]}" --max-steps 100
[ "$(meta ck/latest.safetensors step)" = 100 ] || fail "the first part ended at step $(meta ck/latest.safetensors step)"
run 0 train --checkpoint-dir ck --resume --max-steps 950 --log log.csv -q
[ "$(meta ck/latest.safetensors step)" = 1050 ] && [ "$(meta ck/latest.safetensors lr_scale)" = 0.10000000000000001 ] ||
    fail "the second part should end at step 1050 after one reduction: step $(meta ck/latest.safetensors step), lr_scale \
$(meta ck/latest.safetensors lr_scale)"
run 0 train --checkpoint-dir ck --resume --log log.csv -q
cd .. || exit 1
same_run p1 p2

# --- cosine with a warmup, killed (SIGKILL) mid-warmup and resumed from its
# checkpoint alone. The window stage slowed to 3 ms a batch leaves the kill
# time to land.
cosine=("${common[@]}" --epochs 3 --lr-schedule cosine --warmup-steps 120 --lr-min 1e-5 --checkpoint-every 40)
mkdir c1 c2
(cd c1 && run 0 train "${cosine[@]}")
cd c2 || exit 1
SEQFEED_TEST_DELAY=window:3000 "$SEQFEED" train "${cosine[@]}" &
pid=$!
for _ in $(seq 1000); do [ -f ck/latest.safetensors ] && break; sleep 0.01; done
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
step=$(meta ck/latest.safetensors step 2>/dev/null)
[ -n "$step" ] && [ "$step" -lt 120 ] || fail "the kill should land in the warmup (120 steps): step ${step:-none}"
run 0 train --checkpoint-dir ck --resume --log log.csv -q
cd .. || exit 1
same_run c1 c2
# The plan (3 epochs x 168 steps) is kept: a resume follows it.
[ "$(meta c1/ck/latest.safetensors lr_total_steps)" = 504 ] ||
    fail "cosine's planned steps: $(meta c1/ck/latest.safetensors lr_total_steps), expected 504"
# At the epoch line, the lr.
(cd c1 && run 0 train --data ../s.sfpack --model lstm:8,dense --window 8 --batch-size 32 --epochs 1 --gpus none \
    --checkpoint-dir lr --lr-schedule cosine --lr-min 1e-5)
expect c1/err "^epoch 1/1 - .* - lr 1e-05 - "

# --- usage errors
tr=(--data s.sfpack --model lstm:8,dense --window 8 --batch-size 32 --epochs 1 --gpus none -q)
run 2 train "${tr[@]}" --lr-factor 0.5
expect err "^seqfeed train: error: --lr-factor belongs to --lr-schedule plateau, and this run's is constant \(the default\)"
run 2 train "${tr[@]}" --lr-schedule cosine --lr-patience 3
expect err "^seqfeed train: error: --lr-patience belongs to --lr-schedule plateau, and this run's is cosine \(hint: --lr-schedule plateau"
run 2 train "${tr[@]}" --lr-schedule cosine --min-delta 0.01
expect err "^seqfeed train: error: --min-delta says what counts as an improvement of val_loss for --early-stop and --lr-schedule plateau, and this run has neither \(hint: add --early-stop N, or leave --min-delta out\)"
run 2 train "${tr[@]}" --lr-min 1e-5
expect err "^seqfeed train: error: --lr-min belongs to --lr-schedule cosine or plateau, and this run's is constant"
run 2 train "${tr[@]}" --lr-schedule plateau --val-split 0
expect err "^seqfeed train: error: --lr-schedule plateau lowers the lr when val_loss stops improving, and --val-split 0 leaves no validation"
run 2 train "${tr[@]}" --lr-schedule cosine --lr-min 0.01
expect err "^seqfeed train: error: --lr-min 0.01 is not below --lr 0.001"
# --lr-min equal to --lr (as float32 keeps it) is not below it either.
run 2 train "${tr[@]}" --lr-schedule plateau --lr-min 0.001
expect err "^seqfeed train: error: --lr-min 0.001 is not below --lr 0.001: the lr would never be reduced \(hint: a smaller --lr-min\)$"
run 2 train "${tr[@]}" --lr-schedule fast
expect err "^seqfeed train: error: --lr-schedule fast: expected one of constant, cosine, plateau"
run 2 train "${tr[@]}" --lr-schedule plateau --lr-factor 1
expect err "^seqfeed train: error: --lr-factor 1: expected a number above 0 to below 1"
run 2 train "${tr[@]}" --lr-schedule cosine --warmup-steps 168
expect err "^seqfeed train: error: --warmup-steps 168 leaves no steps for the cosine decay: the run plans 168 steps.*or more --epochs\)$"
# A plan cut by --max-steps: the hint names it, not --epochs.
run 2 train "${tr[@]}" --lr-schedule cosine --warmup-steps 10 --max-steps 10
expect err "^seqfeed train: error: --warmup-steps 10 leaves no steps for the cosine decay: the run plans 10 steps.*or more --max-steps\)$"
# An empty validation part: plateau has nothing to decide on.
run 2 train "${tr[@]}" --lr-schedule plateau --val-split 0.0001
expect err "^seqfeed train: error: --lr-schedule plateau lowers the lr when val_loss stops improving, and this run has no validation windows"
# A resume takes the run's schedule; another one, or another setting of it, is refused.
run 2 train --checkpoint-dir p1/ck --resume --lr-schedule cosine -q
expect err "^seqfeed train: error: --lr-schedule cosine differs from the checkpoint's plateau in p1/ck/latest.safetensors"
run 2 train --checkpoint-dir p1/ck --resume --lr-patience 2 -q
expect err "^seqfeed train: error: --lr-patience 2 differs from the checkpoint's 1 in p1/ck/latest.safetensors"
# Values as given, in their fewest digits (not 0.29999999999999999).
run 2 train --checkpoint-dir p1/ck --resume --lr-factor 0.3 -q
expect err "^seqfeed train: error: --lr-factor 0.3 differs from the checkpoint's 0.1 in p1/ck/latest.safetensors"
run 2 train --checkpoint-dir p1/ck --resume --min-delta 0.1 -q
expect err "^seqfeed train: error: --min-delta 0.1 differs from the checkpoint's 0 in p1/ck/latest.safetensors"
run 2 train --checkpoint-dir c1/ck --resume --lr-factor 0.5 -q
expect err "^seqfeed train: error: --lr-factor belongs to --lr-schedule plateau, and this run's is cosine \(the checkpoint's\) \(hint: leave --lr-factor out\)"
finish
