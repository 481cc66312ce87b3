#!/usr/bin/env python3
"""bench/all.sh's tables and its update of docs/BENCHMARKS.md (standard library only).

  all_report.py table RECORDS --cols KEY:LABEL:FMT,... [--ratio LABEL:KEY:REF[|REF2]:DIR ...]
                [--row-label L] [--group-label L]
      RECORDS: one measurement a line, tab-separated: round, group, row, key, value.
      Prints a markdown table: a line per (group, row) in the order they first
      appear (a group's rows together), a column per KEY with the median over the rounds and [min-max];
      each --ratio column is the ratio of KEY in this row and in row REF of the
      same group (the first of REF|REF2 present), taken round by round (only
      rounds that measured both), then median [min-max]. DIR this/ref or
      ref/this. A measure missing in every round prints as "-".
  all_report.py doc DOC GENERATED
      Replaces, in DOC, the text between each "<!-- all.sh:NAME begin -->" and
      "<!-- all.sh:NAME end -->" by the block of that NAME in GENERATED; other
      text and blocks GENERATED lacks are kept byte for byte. The new DOC is
      written beside it, synced and renamed over it. Blocks of GENERATED that
      DOC has no markers for are named on stderr and left out.
"""
import os
import re
import statistics
import sys

BLOCK = re.compile(r"<!-- all\.sh:([A-Za-z0-9_-]+) begin -->\n(.*?)<!-- all\.sh:\1 end -->", re.S)


def cell(values, fmt, suffix=""):
    if not values:
        return "-"
    med = format(statistics.median(values), fmt) + suffix
    if len(values) == 1:
        return med
    return f"{med} [{format(min(values), fmt)}-{format(max(values), fmt)}]"


def table(argv):
    import argparse
    ap = argparse.ArgumentParser(prog="all_report.py table")
    ap.add_argument("records")
    ap.add_argument("--cols", required=True)
    ap.add_argument("--ratio", action="append", default=[])
    ap.add_argument("--row-label", default="")
    ap.add_argument("--group-label", default="")
    a = ap.parse_args(argv)
    data, order = {}, []  # (group, row) -> key -> round -> value
    with open(a.records) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 5:
                continue
            rnd, group, row, key, value = parts
            try:
                v = float(value)
            except ValueError:
                continue
            if (group, row) not in data:
                data[(group, row)] = {}
                order.append((group, row))
            data[(group, row)].setdefault(key, {})[rnd] = v
    if not order:
        print("(no measurement came back: see the log)")
        return
    groups = list(dict.fromkeys(g for g, _ in order))  # a group's rows together, in the order first seen
    order.sort(key=lambda gr: groups.index(gr[0]))
    cols = [c.split(":", 2) for c in a.cols.split(",")]
    ratios = [r.split(":", 3) for r in a.ratio]
    grouped = any(g for g, _ in order)
    head = ([a.group_label] if grouped else []) + [a.row_label] + [c[1] for c in cols] + [r[0] for r in ratios]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * (1 if grouped else 0) + "---|" + "---:|" * (len(cols) + len(ratios)))
    for group, row in order:
        d = data[(group, row)]
        out = ([group] if grouped else []) + [row]
        for key, _, fmt in cols:
            out.append(cell(list(d.get(key, {}).values()), fmt))
        for _, key, refs, direction in ratios:
            ref = next((r for r in refs.split("|") if (group, r) in data), None)
            if ref is None or ref == row:
                out.append("-")
                continue
            mine, theirs = d.get(key, {}), data[(group, ref)].get(key, {})
            rs = []
            for rnd in mine:
                if rnd in theirs and mine[rnd] > 0 and theirs[rnd] > 0:
                    rs.append(mine[rnd] / theirs[rnd] if direction == "this/ref" else theirs[rnd] / mine[rnd])
            out.append(cell(rs, ".2f", "x"))
        print("| " + " | ".join(out) + " |")


def doc(argv):
    if len(argv) != 2:
        sys.exit("usage: all_report.py doc DOC GENERATED")
    path, generated = argv
    text = open(path).read()
    new = {m.group(1): m.group(2) for m in BLOCK.finditer(open(generated).read())}
    present = {m.group(1) for m in BLOCK.finditer(text)}
    for name in sorted(set(new) - present):
        print(f"all_report.py: {path} has no <!-- all.sh:{name} begin --> marker: block left out", file=sys.stderr)
    replaced = BLOCK.sub(lambda m: m.group(0) if m.group(1) not in new else
                         f"<!-- all.sh:{m.group(1)} begin -->\n{new[m.group(1)]}<!-- all.sh:{m.group(1)} end -->",
                         text)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(replaced)
        f.flush()
        os.fsync(f.fileno())
    os.rename(tmp, path)
    fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)
    print(f"{path}: replaced {', '.join(sorted(set(new) & present)) or 'no block'}")


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in ("table", "doc"):
        sys.exit(__doc__)
    (table if sys.argv[1] == "table" else doc)(sys.argv[2:])
