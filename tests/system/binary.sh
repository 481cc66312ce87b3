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
# Without a driver, or with every GPU hidden, one line in words says why
# and that the work runs on CPU: never CUDA's code for it.
if grep -q 'gpu: cuDNN' <<<"$out"; then
    out=$(CUDA_VISIBLE_DEVICES= "$SEQFEED" info)
    grep -Eq '^gpus +none: (no NVIDIA driver|no GPU: the NVIDIA driver finds none that CUDA_VISIBLE_DEVICES lets it see); using CPU$' <<<"$out" ||
        { echo "FAIL: info with no GPU: $(grep gpus <<<"$out")" >&2; exit 1; }
    dir=$(mktemp -d)
    trap 'rm -rf "$dir"' EXIT
    "$SEQFEED" synth -o "$dir/s.sfpack" --rows 400 --feature-count 1 -q
    err=$(CUDA_VISIBLE_DEVICES= "$SEQFEED" train --data "$dir/s.sfpack" --model lstm:2,dense --window 4 --epochs 1 \
          --max-steps 1 --checkpoint-dir "$dir/ck" 2>&1 >/dev/null)
    grep -Eq '^gpus: none \((no NVIDIA driver|no GPU: [^()]*)\); training on CPU$' <<<"$err" ||
        { echo "FAIL: train with no GPU: $err" >&2; exit 1; }
    grep -q 'CUDA error' <<<"$err" && { echo "FAIL: train names CUDA's code: $err" >&2; exit 1; }
fi
# A copy without the modules beside it says which is missing, in words.
if [ -e "$(dirname "$SEQFEED")/seqfeed-onednn.so" ]; then
    lone=$(mktemp -d)
    cp "$SEQFEED" "$lone/"
    out=$(SEQFEED_ONEDNN_MODULE= "$lone/seqfeed" info 2>&1)
    rm -rf "$lone"
    grep -q 'no the ' <<<"$out" && { echo "FAIL: info: $out" >&2; exit 1; }
    if grep -q 'seqfeed-onednn.so' <<<"$out"; then
        grep -q 'the oneDNN module (seqfeed-onednn.so) is neither next to the program nor at ' <<<"$out" ||
            { echo "FAIL: info without the oneDNN module: $out" >&2; exit 1; }
    fi
fi
# OpenBLAS on a CPU it does not know runs kernels of the SSE era: seqfeed
# runs itself again with OPENBLAS_CORETYPE naming the CPU's kind (Debian 12's
# 0.3.21 on Emerald Rapids: Prescott), and keeps a kind the user chose.
generic='(Katmai|Coppermine|Northwood|Prescott|Banias|Atom|Core2|Penryn|Dunnington|Nehalem|Athlon|Opteron|Opteron_SSE3|Barcelona) MAX_THREADS'
if grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo; then
    out=$(env -u OPENBLAS_CORETYPE "$SEQFEED" info)
    grep -Eq "^fp32 +cpu: OpenBLAS .* $generic" <<<"$out" &&
        { echo "FAIL: OpenBLAS runs an SSE-era core on a CPU with AVX2: $(grep ^fp32 <<<"$out")" >&2; exit 1; }
fi
out=$(OPENBLAS_CORETYPE=Core2 "$SEQFEED" info)
grep -Eq '^fp32 +cpu: OpenBLAS .* Core2 MAX_THREADS' <<<"$out" ||
    { echo "FAIL: OPENBLAS_CORETYPE=Core2 was not kept: $(grep ^fp32 <<<"$out")" >&2; exit 1; }
# How it parses CSV: the vector parser wherever the CPU has AVX2.
out=$("$SEQFEED" info)
want='field by field \(no AVX2\)'
grep -qw avx2 /proc/cpuinfo && grep -qw bmi2 /proc/cpuinfo && want='8 at a time in AVX2'
grep -qw avx512bw /proc/cpuinfo && grep -qw avx512dq /proc/cpuinfo && want='8 at a time in AVX-512'
grep -Eq "^csv +records of numbers $want\$|^csv +$want\$" <<<"$out" ||
    { echo "FAIL: info's csv line is not '$want': $(grep ^csv <<<"$out")" >&2; exit 1; }
SEQFEED_TEST_SCALAR_PARSE=1 "$SEQFEED" info | grep -q '^csv *field by field (SEQFEED_TEST_SCALAR_PARSE)$' ||
    { echo "FAIL: info's csv line under SEQFEED_TEST_SCALAR_PARSE=1" >&2; exit 1; }
"$SEQFEED" --version | grep -q '^seqfeed [0-9]'
