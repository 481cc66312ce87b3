#!/usr/bin/env bash
# Runs the unit and integration suites under the sanitizers, each in its own build directory:
#   asan: AddressSanitizer + UndefinedBehaviorSanitizer (build-asan), leaks
#         included; any report fails the test that triggered it.
#   tsan: ThreadSanitizer (build-tsan): the packer's compression, parse, spill and sync threads,
#         the pipeline's reader, decoders and windowers, the trainer's
#         replica threads and the CPU backend's part threads.
# usage: tools/sanitize.sh [asan|tsan]...   (default: both)
# Exits non-zero when a configuration fails to build or any test fails. Works
# with gcc (libasan, libubsan and libtsan ship with it); with CC=clang the
# runtimes come from libclang-rt-14-dev.
set -u
cd "$(dirname "$0")/.."

# Configures dir with the given options, or reconfigures it when it exists, so
# that a rerun picks up changed options.
setup() {
    local dir=$1
    shift
    if [ -d "$dir/meson-private" ]; then
        meson setup --reconfigure "$dir" "$@" >/dev/null
    else
        meson setup "$dir" "$@" >/dev/null
    fi
}

# Builds everything first: some tests run the seqfeed binary, which meson
# test alone would not build. Sanitized code runs several times slower than
# the tests' timeouts assume.
run_tests() {
    meson compile -C "$1" &&
        meson test -C "$1" --suite unit --suite integration --print-errorlogs --timeout-multiplier 4
}

asan() {
    echo "== asan+ubsan (build-asan)"
    # b_lundef=false: clang's sanitizer runtimes leave symbols undefined at link time.
    setup build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dcuda=disabled -Dbuildtype=debugoptimized &&
        # Full stacks at every allocation, so that the suppressions of what
        # Open MPI keeps until exit (tools/lsan.supp) match whatever frame.
        # use_tls=0: gcc 12's LeakSanitizer reads a bogus dynamic-TLS range
        # of the OpenMP threads that oneDNN (the GEMM ceiling of bench train)
        # leaves at exit, and crashes; without TLS as roots it reports more,
        # never less (glibc's per-thread dlerror buffer: tools/lsan.supp).
        # print_suppressions=0: the table of suppressions used would be
        # lines on stderr that tests counting a message's lines see.
        ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:fast_unwind_on_malloc=0 \
            LSAN_OPTIONS=suppressions=$PWD/tools/lsan.supp:use_tls=0:print_suppressions=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
            run_tests build-asan
}

tsan() {
    echo "== tsan (build-tsan)"
    # debugoptimized: line numbers in the race reports.
    setup build-tsan -Db_sanitize=thread -Dcuda=disabled -Dbuildtype=debugoptimized &&
        # OpenBLAS is not instrumented: TSan cannot see how its own worker
        # threads synchronise, and reports their work as races. One BLAS
        # thread (the trainer's parallelism is its own threads, checked).
        # atexit_sleep_ms: TSan sleeps 1 s at every exit by default (to
        # catch threads racing the exit), which made the option test's
        # 1400 short runs take over 20 minutes; 50 ms still lets such
        # threads run, since ours are joined or blocked by then.
        TSAN_OPTIONS=halt_on_error=1:atexit_sleep_ms=50:suppressions=$PWD/tools/tsan.supp OPENBLAS_NUM_THREADS=1 run_tests build-tsan
}

[ $# -eq 0 ] && set -- asan tsan
failed=()
for what in "$@"; do
    case $what in
    asan | tsan) "$what" || failed+=("$what") ;;
    *)
        echo "usage: $0 [asan|tsan]..." >&2
        exit 2
        ;;
    esac
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "sanitize: FAILED: ${failed[*]}" >&2
    exit 1
fi
echo "sanitize: all passed"
