# Sourced by the command-line tests: run seqfeed, check what it said, count
# failures. Each script sets up its own temporary directory and SEQFEED.
fails=0

fail() {
    echo "FAIL: $*" >&2
    fails=$((fails + 1))
}

# run RC ARGS...: runs seqfeed ARGS with stdout in out and stderr in err and
# expects exit status RC exactly.
run() {
    local want=$1 rc
    shift
    "$SEQFEED" "$@" >out 2>err
    rc=$?
    [ "$rc" -eq "$want" ] || fail "seqfeed $* exited $rc, expected $want; stderr: $(cat err)"
}

# expect FILE REGEX: the last command's out or err matches the extended regex.
expect() {
    grep -Eq -- "$2" "$1" || fail "$1 of the last command does not match /$2/: $(cat "$1")"
}

# finish: the script's exit status, 1 when any check failed.
finish() {
    [ "$fails" -eq 0 ] || { echo "$fails check(s) failed" >&2; exit 1; }
}
