#!/usr/bin/env bash
# Builds the CUDA build here and packs what bench/gpu-check.sh needs on a
# GPU machine that cannot install anything (the device machines: no network,
# and no liburing, zstd or OpenBLAS): the program, the GPU module, the GPU
# tests, and the libraries they need beyond glibc and CUDA's own, into
# gpu-kit.tar.gz (about 15 MB; ignored by git). cuDNN, cuBLAS and NCCL come
# from the GPU machine (its CUDA toolkit or its Python nvidia-* packages).
# usage: bench/gpu-kit.sh    then carry gpu-kit.tar.gz and run bench/gpu-check.sh there
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/deps.sh
sf_install_deps
dir=${BUILD:-build-gpu}
# The GPU checks run in one process: without MPI, whose libraries would
# only add to the kit.
if [ -f "$dir/build.ninja" ]; then meson setup --reconfigure "$dir" -Dmpi=disabled >/dev/null; fi
sf_build "$dir" -Dcuda=enabled -Dbuildtype=release -Dmpi=disabled
kit=$(mktemp -d /tmp/gpu-kit.XXXXXX)
trap 'rm -rf "$kit"' EXIT
mkdir -p "$kit/gpu-kit/bin" "$kit/gpu-kit/lib"
cp "$dir/seqfeed" "$dir/seqfeed-gpu.so" "$kit/gpu-kit/bin/"
for t in system/test_gpu_probe gpu/test_stage_gpu gpu/test_kernels_gpu gpu/test_backend_gpu gpu/test_train_gpu \
    gpu/test_module; do
    cp "$dir/tests/$t" "$kit/gpu-kit/bin/"
done
# Every library the binaries load, but glibc's and CUDA's.
for f in "$kit"/gpu-kit/bin/*; do ldd "$f" | awk '/=> \// {print $3}'; done | sort -u |
    grep -vE '/(libc|libm|libdl|libpthread|librt|libgcc_s|libstdc\+\+|ld-linux[^/]*)\.so' |
    grep -vE 'libcud|libcublas|libnccl|libnvrtc' | while read -r lib; do cp -L "$lib" "$kit/gpu-kit/lib/"; done
tar -C "$kit" -czf gpu-kit.tar.gz gpu-kit
grep -qx 'gpu-kit.tar.gz' .git/info/exclude 2>/dev/null || echo 'gpu-kit.tar.gz' >>.git/info/exclude
echo "gpu-kit.tar.gz: $(du -h gpu-kit.tar.gz | cut -f1) ($(ls "$kit/gpu-kit/lib" | tr '\n' ' '))"
