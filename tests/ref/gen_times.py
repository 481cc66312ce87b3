#!/usr/bin/env python3
# Writes tests/format/times.txt: ISO-8601 texts and the microseconds since
# 1970-01-01T00:00Z that Python's datetime (an independent implementation
# of the proleptic Gregorian calendar) gives for them, or "error" for texts
# that are not valid times. One case per line: TEXT<TAB>MICROSECONDS|error.
# Year-first dates with slashes (2012/01/01, as many exports write them)
# are read as the same dates with dashes. Needs Python 3.11 or later, whose
# fromisoformat reads the basic form (20100101) and drops fraction digits
# below a microsecond, as sf_time_parse does.
import datetime as dt
import random

UTC = dt.timezone.utc
EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)


def micros(t):
    if t.tzinfo is None:
        t = t.replace(tzinfo=UTC)
    d = t - EPOCH
    return (d.days * 86400 + d.seconds) * 1000000 + d.microseconds


cases = []
fixed = ["1970-01-01", "1969-12-31", "2000-02-29", "1900-03-01", "0001-01-01", "9999-12-31", "2012-01-01T00:00",
         "2010-01-01T01:00:00", "2010-01-01 01:00:00", "2010-01-01T01:00:00Z", "2010-01-01T01:00:00.5",
         "2010-01-01T01:00:00,25", "2010-01-01T01:00:00.123456", "2010-01-01T01:00:00.123456000",
         "2010-01-01T01:00:00+02:00", "2010-01-01T01:00:00-0530", "2010-01-01T01:00+01", "1969-12-31T23:59:59.999999Z",
         "1600-02-29", "2024-02-29T12:00", "1583-10-15", "2012/01/01", "2010/01/01 00:00", "2000/02/29T12:30:00Z",
         "20100101", "20240229T12:00", "2010-01-01T01:00:00.1234567", "1969-12-31T23:59:59.999999999Z"]
cases += [(s, None) for s in fixed]
bad = ["2019-02-29", "2100-02-29", "2010-13-01", "2010-00-10", "2010-01-32", "2010-01-01T24:00", "2010-01-01T10:60",
       "2010-01-01T10:00:60", "2010-1-01", "2010-01-01T1:00", "2010-01-01T01:00:00.", "2016-12-31T23:59:60",
       "2010-01-01X", "20100230", "2010010", "201001011", "2010-01-01T01:00:00+2", "2010-01-01T01:00:00+24:00", "2010-01-01T",
       "2010/01-01", "2010-01/01", "2019/02/29", "01/02/2010", "2010/1/01", " 2010-01-01", "2010-01-01+01:00"]
rnd = random.Random(7)
random_cases = []
for _ in range(2000):
    y = rnd.choice([rnd.randint(1, 9999), rnd.randint(1900, 2100)])
    base = dt.datetime(y, 1, 1) + dt.timedelta(seconds=rnd.randint(0, 365 * 86400 - 1),
                                               microseconds=rnd.randint(0, 999999))
    if base.year != y:
        continue
    date = "%04d-%02d-%02d" % (base.year, base.month, base.day)
    clock = "%02d:%02d" % (base.hour, base.minute)
    form = rnd.randint(0, 4)
    off = 0
    if form == 0:
        base = base.replace(hour=0, minute=0, second=0, microsecond=0)
        s = date
    elif form == 1:
        base = base.replace(second=0, microsecond=0)
        s = date + "T" + clock
    elif form == 2:
        base = base.replace(microsecond=0)
        s = date + " " + clock + ":%02d" % base.second
    elif form == 3:
        s = date + "T" + clock + ":%02d.%06d" % (base.second, base.microsecond)
    else:
        base = base.replace(microsecond=0)
        off = rnd.randint(-14 * 60, 14 * 60)
        s = date + "T" + clock + ":%02d" % base.second + ("+" if off >= 0 else "-") + "%02d:%02d" % divmod(abs(off), 60)
    random_cases.append((s, micros(base) - off * 60 * 1000000))
with open("tests/format/times.txt", "w") as f:
    for s in fixed:
        iso = s.replace(",", ".").replace("/", "-")
        t = dt.datetime.fromisoformat(iso.replace("+01", "+01:00") if iso.endswith("+01") else iso)
        f.write("%s\t%d\n" % (s, micros(t)))
    for s, us in random_cases:
        f.write("%s\t%d\n" % (s, us))
    for s in bad:
        f.write("%s\terror\n" % s)
