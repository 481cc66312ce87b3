#!/usr/bin/env bash
# Builds the CUDA build here and packs what bench/gpu-check.sh needs on a
# GPU machine that cannot install anything (the device machines: no
# network, and no liburing, zstd or OpenBLAS): the program, the GPU module,
# the GPU tests, and every library they load beyond glibc's and the driver's,
# the CUDA runtime (libcudart) included, into gpu-kit.tar.gz (about 25 MB with
# oneDNN's module for the bf16 comparison).
# cuDNN, cuBLAS and NCCL come from the GPU machine: its CUDA toolkit, or its
# Python nvidia-* packages (gpu-check.sh looks in both, and stops before
# anything runs when a library is missing, naming it).
# gpu-kit.tar.gz is ignored by git: send it along explicitly (the device
# tool's carry: ["gpu-kit.tar.gz"]).
# usage: bench/gpu-kit.sh    then on the GPU machine: bash bench/gpu-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/deps.sh
sf_install_deps
dir=${BUILD:-build-gpu}
# The GPU checks run in one process: without MPI, whose libraries would
# only add to the kit.
if [ -f "$dir/build.ninja" ]; then meson setup --reconfigure "$dir" -Dcuda=enabled -Dmpi=disabled >/dev/null; fi
sf_build "$dir" -Dcuda=enabled -Dbuildtype=release -Dmpi=disabled
kit=$(mktemp -d /tmp/gpu-kit.XXXXXX)
trap 'rm -rf "$kit"' EXIT
mkdir -p "$kit/gpu-kit/bin" "$kit/gpu-kit/lib"
cp "$dir/seqfeed" "$dir/seqfeed-gpu.so" "$kit/gpu-kit/bin/"
# oneDNN's module (and libdnnl): the CPU's bf16 that backend-gpu-bf16 compares the GPU's with.
[ -f "$dir/seqfeed-onednn.so" ] && cp "$dir/seqfeed-onednn.so" "$kit/gpu-kit/bin/"
for t in system/test_gpu_probe gpu/test_stage_gpu gpu/test_kernels_gpu gpu/test_backend_gpu gpu/test_train_gpu \
    gpu/test_module; do
    cp "$dir/tests/$t" "$kit/gpu-kit/bin/"
done
# Every library the binaries load, but glibc's, the compiler's runtime
# (newer on the GPU machine) and those the GPU machine brings: the driver
# (libcuda, libnvidia-*), cuDNN, cuBLAS, NCCL.
for f in "$kit"/gpu-kit/bin/*; do ldd "$f" | awk '/=> \// {print $3}'; done | sort -u |
    grep -vE '/(libc|libm|libdl|libpthread|librt|libgcc_s|libstdc\+\+|ld-linux[^/]*)\.so' |
    grep -vE '/(libcuda|libnvidia-[a-z-]*|libcudnn[a-z_]*|libcublas(Lt)?|libnccl)\.so' |
    while read -r lib; do cp -L "$lib" "$kit/gpu-kit/lib/"; done
ls "$kit/gpu-kit/lib" | grep -q '^libcudart\.so' || { echo "gpu-kit: libcudart is not in the kit" >&2; exit 1; }
tar -C "$kit" -czf gpu-kit.tar.gz gpu-kit
echo "gpu-kit.tar.gz: $(du -h gpu-kit.tar.gz | cut -f1) ($(ls "$kit/gpu-kit/lib" | tr '\n' ' '))"
