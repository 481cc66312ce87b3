#!/usr/bin/env bash
# libseqfeed finds the modules it loads (seqfeed-keras.so, seqfeed-onednn.so)
# beside itself, wherever it is (the Python package installs them there), not
# beside the program that loaded it (python3): seqfeed.module_path names the
# file each was loaded from; $SEQFEED_*_MODULE still wins; a copy of the
# library without them says where it looked; a SEQFEED_LIB that cannot load
# is an error naming it. Skipped (77) without numpy.
set -uo pipefail
. "$SRCDIR/tests/lib.sh"
LIBSEQFEED=${1:?libseqfeed.so}
KERAS=${2:?true or false: the build has the Keras module}
ONEDNN=${3:?true or false: the build has the oneDNN module}
. "$SRCDIR/tests/python/env.sh"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
build=$(dirname "$LIBSEQFEED")
unset SEQFEED_KERAS_MODULE SEQFEED_ONEDNN_MODULE SEQFEED_GPU_MODULE

# path NAME: what module_path(NAME) says on stdout, or the error on stderr (exit 1).
path() {
    pyrun -c '
import sys, seqfeed
try:
    print(seqfeed.module_path(sys.argv[1]))
except seqfeed.SeqfeedError as e:
    sys.exit("SeqfeedError: %s" % e)' "$1"
}

for m in keras onednn; do
    built=$KERAS
    [ "$m" = onednn ] && built=$ONEDNN
    out=$(path "$m" 2>&1)
    if [ "$built" = true ]; then
        [ "$out" = "$build/seqfeed-$m.so" ] || fail "module_path('$m') with $LIBSEQFEED: '$out', expected $build/seqfeed-$m.so"
    else
        grep -q 'built without' <<<"$out" || fail "module_path('$m') in a build without it: '$out'"
    fi
done
if [ "$ONEDNN" = true ]; then
    mkdir other
    cp "$build/seqfeed-onednn.so" other/
    out=$(SEQFEED_ONEDNN_MODULE=$dir/other/seqfeed-onednn.so path onednn 2>&1)
    [ "$out" = "$dir/other/seqfeed-onednn.so" ] || fail "SEQFEED_ONEDNN_MODULE not followed: '$out'"
fi
out=$(path nonesuch 2>&1) && fail "module_path('nonesuch') succeeded: $out"
grep -q "unknown module 'nonesuch' (expected keras, onednn or gpu)" <<<"$out" || fail "module_path('nonesuch'): $out"

# A copy of the library alone: the modules beside the original are not found
# (nor, unless installed, anywhere else), and the message says where it looked.
if [ "$KERAS" = true ]; then
    mkdir lone
    cp "$LIBSEQFEED" lone/
    out=$(SEQFEED_LIB=$dir/lone/libseqfeed.so path keras 2>&1)
    case $out in
    "$build"/*) fail "a copy of libseqfeed.so loaded the build's module: $out" ;;
    /*) ;;  # an installed seqfeed's
    *) grep -q "the Keras module (seqfeed-keras.so) is neither next to $dir/lone/libseqfeed.so nor at /" <<<"$out" ||
           fail "module_path('keras') with a lone libseqfeed.so: $out" ;;
    esac
fi
# SEQFEED_LIB, when set, is the only library tried: one that cannot load is
# an ImportError naming it, never another libseqfeed found elsewhere.
out=$(SEQFEED_LIB=$dir/nonexistent/libseqfeed.so pyrun -c 'import seqfeed' 2>&1) &&
    fail "import with SEQFEED_LIB naming no file succeeded"
grep -q "ImportError: cannot load SEQFEED_LIB=$dir/nonexistent/libseqfeed.so: " <<<"$out" ||
    fail "import with SEQFEED_LIB naming no file: $out"
finish
