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

# keras_python [LIBSEQFEED]: py = SEQFEED_PYTHON (default python3), checked
# to import Keras 3 as it is, else with KERAS_BACKEND torch or jax (then
# exported); lib = LIBSEQFEED for the Python part, but none in a sanitized
# build: a sanitized libseqfeed aborts in a Python without its runtime first
# (tests/python/env.sh preloads it for the Python tests), and the plain
# build checks that part. Without Keras the checks so far decide: exit 1
# on a failure, else 77.
keras_python() {
    py=${SEQFEED_PYTHON:-python3} lib=${1:-}
    [ -z "${SEQFEED_SANITIZED:-}" ] || lib=""
    "$py" -c "import keras" 2>/dev/null && return 0
    local backend
    for backend in torch jax; do
        KERAS_BACKEND=$backend "$py" -c "import keras" 2>/dev/null && { export KERAS_BACKEND=$backend; return 0; }
    done
    finish
    echo "Keras 3 is not installed (SEQFEED_PYTHON=$py): load_model not checked" >&2
    exit 77
}

# over ARRAY ARGS...: sets the array args to the words of the array named
# ARRAY followed by ARGS, without the options ARGS gives again (and their
# values): a command line like another but for some settings (an option
# given twice is an error).
over() {
    local -n over_base=$1
    shift
    local given=" " k w next
    for w in "$@"; do [[ $w == -* ]] && given+="$w "; done
    args=()
    for ((k = 0; k < ${#over_base[@]}; k++)); do
        w=${over_base[k]} next=${over_base[k + 1]:-}
        if [[ $given == *" $w "* ]]; then
            [[ -n $next && $next != --* && ! $next =~ ^-[a-zA-Z]$ ]] && k=$((k + 1))
            continue
        fi
        args+=("$w")
    done
    args+=("$@")
}

# meta FILE KEY: checkpoint FILE's metadata value of KEY (nothing printed,
# exit 1, when it has none).
meta() {
    python3 - "$@" <<'PY'
import json, struct, sys
b = open(sys.argv[1], "rb").read()
m = json.loads(b[8:8 + struct.unpack("<Q", b[:8])[0]])["__metadata__"]
if sys.argv[2] not in m:
    sys.exit(1)
print(m[sys.argv[2]])
PY
}

# edmeta FILE KEY=VALUE...: FILE's metadata with each KEY set to VALUE (an
# empty VALUE: KEY removed), as an older or tampered checkpoint has it.
edmeta() {
    python3 - "$@" <<'PY' || exit 1
import json, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
for kv in sys.argv[2:]:
    k, _, v = kv.partition("=")
    if v:
        h["__metadata__"][k] = v
    else:
        del h["__metadata__"][k]
t = json.dumps(h, separators=(",", ":")).encode()
t += b" " * (-(8 + len(t)) % 8)
open(sys.argv[1], "wb").write(struct.pack("<Q", len(t)) + t + b[8 + n:])
PY
}

# same_bytes A B: checkpoints A and B are the same bytes but for the
# metadata that two runs of one setting may differ in: the names of its log
# and TensorBoard directory (log, log_from_checkpoint_dir, tensorboard,
# tensorboard_from_checkpoint_dir), what --pipeline auto chose (pipeline:
# it follows the machine's timing, and changes no batch), and how often it
# saves (checkpoint_every: a kill's cost, not the weights).
same_bytes() {
    python3 - "$@" <<'PY'
import json, struct, sys
def load(p):
    b = open(p, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    for k in ("log", "log_from_checkpoint_dir", "tensorboard", "tensorboard_from_checkpoint_dir", "pipeline",
              "checkpoint_every"):
        h["__metadata__"].pop(k, None)
    return h, b[8 + n:]
sys.exit(load(sys.argv[1]) != load(sys.argv[2]))
PY
}

# same A B TOL: every tensor of checkpoint A equals B's within TOL x the
# largest magnitude of that tensor (TOL 0: bit for bit).
same() {
    python3 - "$@" <<'PY'
import json, struct, sys
from array import array
def load(p):
    b = open(p, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    h.pop("__metadata__", None)
    return {k: array("f", b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]]) for k, v in h.items()}
a, b, tol = load(sys.argv[1]), load(sys.argv[2]), float(sys.argv[3])
bad = [k for k in a if k not in b or len(a[k]) != len(b[k]) or
       max((abs(x - y) for x, y in zip(a[k], b[k])), default=0) > tol * max((abs(x) for x in a[k]), default=0)]
if bad or a.keys() != b.keys():
    print("differ:", ", ".join(bad) or "names", file=sys.stderr)
    sys.exit(1)
PY
}

# suggested [FILE]: the command after the last "pack it with: seqfeed " in
# FILE (default err), without "seqfeed".
suggested() { sed -n 's/.*[Pp]ack it with: seqfeed \(.*\)$/\1/p' "${1:-err}" | tail -n 1; }

# run_suggested WHAT: runs the command a pack message suggested in err; it
# must exit 0.
# Its stdout and stderr are left in out and err.
run_suggested() {
    local cmd
    cmd=$(suggested)
    if [ -z "$cmd" ]; then
        fail "$1: no command suggested: $(cat err)"
        return
    fi
    eval "\"\$SEQFEED\" $cmd" >out 2>err.suggested || fail "$1: the suggested 'seqfeed $cmd' failed: $(cat err.suggested)"
    mv err.suggested err
}
