"""Writes the covariate tests' CSVs into the current directory: two series
of hourly rows, id,time,promo,noise,sales, where sales = a daily cycle + 2 x
promo, promo a random flag known in advance and noise random and unrelated.
f.csv the rows; f2.csv noise and sales changed from south's row CHANGE on;
f3.csv promo flipped from there; south.csv south's rows alone.
usage: promo_data.py NORTH_ROWS SOUTH_ROWS CHANGE"""
import datetime, math, random, sys

north, south, change = map(int, sys.argv[1:4])
random.seed(4)
rows = []
for s, n in (("north", north), ("south", south)):
    for i in range(n):
        t = datetime.datetime(2021, 3, 1) + datetime.timedelta(hours=i)
        promo = 1 if random.random() < 0.3 else 0
        rows.append((s, t.isoformat(), promo, round(random.random(), 4),
                     round(math.sin(2 * math.pi * i / 24) + 2 * promo + 0.05 * random.random(), 4)))


def write(name, rows):
    with open(name, "w") as f:
        f.write("id,time,promo,noise,sales\n")
        for r in rows:
            f.write("%s,%s,%d,%.4f,%.4f\n" % r)


write("f.csv", rows)
k = north + change
write("f2.csv", rows[:k] + [(s, t, p, 1 - n, y + 5) for s, t, p, n, y in rows[k:]])
write("f3.csv", rows[:k] + [(s, t, 1 - p, n, y) for s, t, p, n, y in rows[k:]])
write("south.csv", [r for r in rows if r[0] == "south"])
