"""TensorBoard event files, read without TensorBoard: a decoder of its own
(the standard library alone) for train --tensorboard's files, to check
them against the run's CSV log; and, given --tensorboard-too, the same
check through TensorBoard's EventAccumulator.

    tb_events.py check DIR LOG.csv [--truncated N] [--epoch-steps N] [--tensorboard-too]

DIR's runs (train, validation) are read file by file in name order, as
TensorBoard reads them: every record's length and data CRC-32C (masked, as
TFRecord masks them) must hold, each file must begin with file_version
"brain.Event:2" and a SessionLog START, and only the last record of a file
may be cut short, in the N files of the train run (--truncated, default
0; the validation run's none) that a crash left, never in the newest. A START drops the events of earlier files at
its step and after, as TensorBoard does. What is left must be the log's
rows: batch_* at each row's step, epoch_* at each epoch end's epoch - 1,
the validation run's epoch_loss and evaluation_loss_vs_iterations.
"""
import csv
import math
import os
import struct
import sys

POLY = 0x82F63B78  # CRC-32C (Castagnoli), reflected
TABLE = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ (POLY if c & 1 else 0)
    TABLE.append(c)


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = (c >> 8) ^ TABLE[(c ^ b) & 0xFF]
    return c ^ 0xFFFFFFFF


def masked(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


# The check of the checker: RFC 3720's vectors, and TFRecord's mask of one.
assert crc32c(b"123456789") == 0xE3069283
assert crc32c(bytes(32)) == 0x8A9136AA
assert crc32c(bytes([0xFF] * 32)) == 0x62A8AB43


def varint(b, i):
    v = shift = 0
    while True:
        x = b[i]
        i += 1
        v |= (x & 0x7F) << shift
        shift += 7
        if not x & 0x80:
            return v, i


def fields(b):
    """(field, wire, value) of a protocol buffer message."""
    i = 0
    while i < len(b):
        k, i = varint(b, i)
        f, w = k >> 3, k & 7
        if w == 0:
            v, i = varint(b, i)
        elif w == 1:
            v, i = b[i:i + 8], i + 8
        elif w == 5:
            v, i = b[i:i + 4], i + 4
        elif w == 2:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        else:
            raise ValueError("wire type %d" % w)
        if i > len(b):
            raise ValueError("a field runs past its message")
        yield f, w, v


def event(b):
    e = {"step": 0, "values": {}}
    for f, w, v in fields(b):
        if f == 1 and w == 1:
            e["wall_time"] = struct.unpack("<d", v)[0]
        elif f == 2 and w == 0:
            e["step"] = v
        elif f == 3 and w == 2:
            e["file_version"] = v.decode()
        elif f == 5 and w == 2:
            for sf, sw, sv in fields(v):
                assert sf == 1 and sw == 2, "Summary: field %d" % sf
                tag = val = None
                for vf, vw, vv in fields(sv):
                    if vf == 1 and vw == 2:
                        tag = vv.decode()
                    elif vf == 2 and vw == 5:
                        val = struct.unpack("<f", vv)[0]
                assert tag is not None and val is not None, "a Summary.Value without tag or simple_value"
                e["values"][tag] = val
        elif f == 7 and w == 2:
            e["session_log"] = dict((lf, lv) for lf, lw, lv in fields(v)).get(1, 0)
        else:
            raise AssertionError("Event: unexpected field %d" % f)
    return e


def records(path):
    """The events of one file, and whether its last record was cut short."""
    b = open(path, "rb").read()
    out, i = [], 0
    while i < len(b):
        if len(b) - i < 12:
            return out, True
        head = b[i:i + 8]
        n = struct.unpack("<Q", head)[0]
        assert struct.unpack("<I", b[i + 8:i + 12])[0] == masked(head), "%s@%d: length CRC" % (path, i)
        if len(b) - i < 16 + n:
            return out, True
        data = b[i + 12:i + 12 + n]
        assert struct.unpack("<I", b[i + 12 + n:i + 16 + n])[0] == masked(data), "%s@%d: data CRC" % (path, i)
        out.append(event(data))
        i += 16 + n
    return out, False


def load_run(run_dir, truncated_files):
    """tag -> {step: value} as TensorBoard sees the run; and the cut files."""
    names = sorted(n for n in os.listdir(run_dir) if "tfevents" in n)
    assert names, "%s: no event file" % run_dir
    seen, cut = {}, 0
    for k, name in enumerate(names):
        evs, short = records(os.path.join(run_dir, name))
        if short:
            cut += 1
            assert k < len(names) - 1, "%s: the newest file ends in a cut record" % name
        assert evs and evs[0].get("file_version") == "brain.Event:2", "%s: no file_version first" % name
        assert len(evs) > 1 and evs[1].get("session_log") == 1, "%s: no SessionLog START second" % name
        for e in evs[1:]:
            if e.get("session_log") == 1:  # TensorBoard's purge: every tag's steps from here on
                for tag in seen:
                    seen[tag] = dict((s, v) for s, v in seen[tag].items() if s < e["step"])
            for tag, v in e["values"].items():
                assert e["step"] not in seen.get(tag, {}), "%s: %s at step %d twice" % (name, tag, e["step"])
                seen.setdefault(tag, {})[e["step"]] = v
    assert cut == truncated_files, "%s: %d files end in a cut record, expected %d" % (run_dir, cut, truncated_files)
    return seen


def expected(log, epoch_steps):
    """What the runs must hold, from the CSV log: run -> tag -> {step: (value, tolerance)}.
    An epoch's end is a row with a val_loss, or given epoch_steps, a row at epoch x epoch_steps."""
    want = {"train": {}, "validation": {}}

    def put(run, tag, step, value, tol):
        want[run].setdefault(tag, {})[step] = (value, tol)

    for r in csv.DictReader(open(log)):
        step, epoch = int(r["step"]), int(r["epoch"])
        # Each with the log's rounding: 9 and 8 digits, 1 and 4 decimals.
        vals = {"loss": (float(r["loss"]), 0), "learning_rate": (float(r["lr"]), 0),
                "samples_per_s": (float(r["samples_per_s"]), 0.05), "input_wait": (float(r["input_wait"]), 5e-5)}
        end = step == epoch * epoch_steps if epoch_steps else r["val_loss"] != ""
        for name, (v, tol) in vals.items():
            put("train", "batch_" + name, step, v, tol)
        if r["val_loss"]:
            put("validation", "epoch_loss", epoch - 1, float(r["val_loss"]), 0)
            put("validation", "evaluation_loss_vs_iterations", step, float(r["val_loss"]), 0)
        if end:
            for name, (v, tol) in vals.items():
                put("train", "epoch_" + name, epoch - 1, v, tol)
    return want


def close(a, b, tol):
    """a (float32) is b (the log's text, rounded to within tol)."""
    return abs(a - b) <= tol * 1.001 + 1.2e-7 * abs(b) or (math.isnan(a) and math.isnan(b))


def compare(got, want, who):
    bad = []
    for run in want:
        tags = set(got[run]) | set(want[run])
        for tag in sorted(tags):
            g, w = got[run].get(tag, {}), want[run].get(tag, {})
            if sorted(g) != sorted(w):
                bad.append("%s %s/%s: steps %s, the log's %s" % (who, run, tag, sorted(g), sorted(w)))
                continue
            for s in w:
                if not close(g[s], w[s][0], w[s][1]):
                    bad.append("%s %s/%s step %d: %r, the log's %r" % (who, run, tag, s, g[s], w[s][0]))
    return bad


def with_tensorboard(d):
    from tensorboard.backend.event_processing import event_accumulator as ea
    got = {}
    for run in ("train", "validation"):
        acc = ea.EventAccumulator(os.path.join(d, run), size_guidance={ea.SCALARS: 0})
        acc.Reload()
        got[run] = dict((tag, dict((x.step, x.value) for x in acc.Scalars(tag))) for tag in acc.Tags()["scalars"])
        for tag in got[run]:  # a step twice would hide in the dict
            assert len(acc.Scalars(tag)) == len(got[run][tag]), "tensorboard: %s/%s repeats a step" % (run, tag)
    return got


def main():
    args = sys.argv[1:]
    assert args[0] == "check"
    d, log = args[1], args[2]
    cut = int(args[args.index("--truncated") + 1]) if "--truncated" in args else 0
    epoch_steps = int(args[args.index("--epoch-steps") + 1]) if "--epoch-steps" in args else 0
    want = expected(log, epoch_steps)
    got = dict((run, load_run(os.path.join(d, run), cut if run == "train" else 0)) for run in ("train", "validation"))
    bad = compare(got, want, "decoder")
    if "--tensorboard-too" in args:
        bad += compare(with_tensorboard(d), want, "tensorboard")
    if bad:
        print("\n".join(bad[:20]), file=sys.stderr)
        sys.exit(1)
    print("%d train and %d validation values match the log" %
          (sum(len(v) for v in got["train"].values()), sum(len(v) for v in got["validation"].values())))


if __name__ == "__main__":
    main()
