#!/usr/bin/env bash
# seqfeed runs under valgrind: its start-up runs itself again with
# OpenBLAS's settings (cli/main.c), and under valgrind /proc/self/exe is
# valgrind's tool, which refuses to run alone. Skipped without valgrind, or
# in a sanitized build (the two do not mix). meson sets SEQFEED.
set -uo pipefail
: "${SEQFEED:?}"
command -v valgrind >/dev/null || { echo "skip: valgrind not installed"; exit 77; }
[ -z "${SEQFEED_SANITIZED:-}" ] || { echo "skip: a sanitized build"; exit 77; }
out=$(valgrind --tool=none -q "$SEQFEED" --version 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] && grep -q '^seqfeed [0-9]' <<<"$out" || { echo "FAIL: seqfeed --version under valgrind (exit $rc)" >&2; exit 1; }
