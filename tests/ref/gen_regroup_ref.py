#!/usr/bin/env python3
# Writes tests/csv/regroup_in.csv, rows of sites whose rows interleave (the
# way sensor feeds and long-format exports come: a row per site per hour,
# some sites missing some hours, a site that starts late, one whose name
# holds a comma, some empty values), and tests/csv/regroup_want.csv, what
# `seqfeed pack --series-column site --missing ffill` then `seqfeed unpack`
# must give back: pandas' groupby(sort=False) of the same CSV, each site's
# rows in file order, the sites in the order they first appear (unpack
# writes the values ffill filled as the CSV had them: empty). The first
# rows come grouped, as if the file started sorted: pack writes those
# before it sees a site come back. Needs pandas (run it with the venv that
# has it); the outputs are committed, so the test needs nothing of this.
import datetime as dt
import os
import random

import pandas as pd

here = os.path.dirname(os.path.abspath(__file__))
out_dir = os.path.join(here, "..", "csv")
random.seed(26)
sites = ["north", "south, coast", "east", "west", "hill"] + ["s%02d" % i for i in range(10)]
t0 = dt.datetime(2021, 3, 27, 20, 0)
rows = []


def value():
    return "" if random.random() < 0.03 else "%g" % (random.randrange(-4000, 40000) / 4)


# Grouped first: north's first 4 hours, then south's 3.
for s, hours in [("north", 4), ("south, coast", 3)]:
    for h in range(hours):
        v = value() or "1.5"  # a series' first value cannot be filled
        rows.append(((t0 + dt.timedelta(hours=h)).isoformat(), s, v))
seen = {"north", "south, coast"}
for h in range(4, 130):
    active = [s for s in sites if not (s == "hill" and h < 60)]  # hill starts late
    random.shuffle(active)
    for s in active:
        if random.random() < 0.1:
            continue  # that site missed that hour
        v = value()
        if s not in seen:
            v = v or "2"
            seen.add(s)
        rows.append(((t0 + dt.timedelta(hours=h)).isoformat(), s, v))

df = pd.DataFrame(rows, columns=["time", "site", "value"])
df.to_csv(os.path.join(out_dir, "regroup_in.csv"), index=False)
back = pd.read_csv(os.path.join(out_dir, "regroup_in.csv"), dtype=str, keep_default_na=False)
want = pd.concat([g for _, g in back.groupby("site", sort=False)])[["site", "time", "value"]]
want.to_csv(os.path.join(out_dir, "regroup_want.csv"), index=False)
print(len(back), "rows,", back["site"].nunique(), "sites")
