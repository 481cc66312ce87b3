#!/usr/bin/env bash
# The binary must start on machines without a GPU driver: it may need
# libcudart (which loads the driver at run time) but never libcuda itself,
# and `seqfeed info` must say how it runs.
set -euo pipefail
needed=$(readelf -d "$SEQFEED" | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p')
if grep -q '^libcuda\.so' <<<"$needed"; then
    echo "FAIL: seqfeed links the driver library: $needed" >&2
    exit 1
fi
out=$("$SEQFEED" info)
echo "$out"
grep -Eq '^gpus +none: .*; using CPU$|^gpu 0 ' <<<"$out" || { echo "FAIL: info says nothing about GPUs" >&2; exit 1; }
"$SEQFEED" --version | grep -q '^seqfeed [0-9]'
