# Sourced by the Python tests: py, a Python with numpy (or exit 77), and
# pyrun, which runs it with a sanitized libseqfeed's runtime. Needs
# LIBSEQFEED.
py=""
for p in ${SEQFEED_PYTHON:-} python3 /usr/bin/python3; do
    if "$p" -c "import numpy" 2>/dev/null; then py=$p; break; fi
done
[ -n "$py" ] || { echo "numpy is not installed (Debian python3-numpy): the Python package not checked" >&2; exit 77; }
# A sanitized libseqfeed in an unsanitized Python: ASan's runtime must come
# first (and Python's own allocations are not ours to report); TSan's
# cannot be preloaded into it usefully: the pipeline's threads are checked
# by the C tests there.
runtime=$(ldd "$LIBSEQFEED" | grep -o '/[^ ]*lib[at]san\.so[^ ]*' | head -1)
preload=()
case $runtime in
*libtsan*) echo "a TSan build: the Python package is checked in the other builds" >&2; exit 77 ;;
*libasan*) preload=(LD_PRELOAD="$runtime" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0") ;;
esac
pyrun() { env "${preload[@]}" "$py" "$@"; }  # only Python gets the runtime first
export SEQFEED_LIB=$LIBSEQFEED PYTHONPATH=$SRCDIR/python
