#!/usr/bin/env python3
# Writes tests/format/time_phases.txt: instants (microseconds since
# 1970-01-01T00:00Z) and their phase in the day, the week (from Monday) and
# the year (in [0, 1)), as Python's datetime computes them independently of
# seqfeed's calendar arithmetic. One case per line: US<TAB>HOUR<TAB>WEEKDAY<TAB>YEARDAY.
import datetime as dt
import random

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
rnd = random.Random(11)
fixed = [0, -1, 86400 * 10**6 - 1, 951782400 * 10**6, 951868799999999, -62135596800 * 10**6, 253402300799999999]
cases = fixed + [rnd.randint(-62135596800, 253402300799) * 10**6 + rnd.randint(0, 999999) for _ in range(3000)]
with open("tests/format/time_phases.txt", "w") as f:
    for us in cases:
        t = EPOCH + dt.timedelta(microseconds=us)
        day = (t.hour * 3600 + t.minute * 60 + t.second + t.microsecond / 1e6) / 86400
        week = (t.weekday() + day) / 7
        start = dt.datetime(t.year, 1, 1, tzinfo=dt.timezone.utc)
        length = (dt.datetime(t.year + 1, 1, 1, tzinfo=dt.timezone.utc) - start).days if t.year < 9999 else 365
        year = ((t - start).days + day) / length
        f.write("%d\t%.17g\t%.17g\t%.17g\n" % (us, day, week, year))
