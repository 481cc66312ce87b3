"""Writes d.csv for the Keras export tests: id,a,b, two series (x, y) of
120 rows, a a random walk from 10 and b uniform in [100, 120).
usage: walk_data.py SEED"""
import random, sys

random.seed(int(sys.argv[1]))
with open("d.csv", "w") as f:
    f.write("id,a,b\n")
    for s in ("x", "y"):
        a = 10.0
        for i in range(120):
            a += random.gauss(0, 1)
            f.write("%s,%.3f,%.3f\n" % (s, a, 100 + 20 * random.random()))
