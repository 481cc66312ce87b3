#!/usr/bin/env python3
"""Forecasts with a `seqfeed export` model in Keras 3: what `seqfeed predict` writes.

usage: seqfeed export --checkpoint run --format keras -o model.keras
       keras_predict.py model.keras run DATA.sfpack > forecasts.csv

Any pack works: categories, time features, several series (windows never
span two), several source files, a model trained with --target change,
--loss quantile:... (NAME_q10, NAME_q50, ... as predict writes them),
--future-features, or --horizon A-B (one row per window and step, with a
step column, each step's own time and line, as predict writes them).
seqfeed.model_inputs builds the inputs with the code predict runs.
"""
import csv
import sys

import keras
import seqfeed

model_path, checkpoint, data = sys.argv[1:4]
x, index = seqfeed.model_inputs(checkpoint, data)  # split="validation": that part's windows only
# One row per window (and step): each row's quantiles (a --loss quantile model's) on a last axis, sorted
pred = seqfeed.forecasts(keras.models.load_model(model_path).predict(x, verbose=0), index)
suffixes = ["q%.6g" % (100 * q) for q in index.quantiles] if index.quantiles else ["pred"]
out, cols = csv.writer(sys.stdout), index.columns()  # series, time, file, line, row, step: the row predicted
out.writerow(list(cols) + [t + "_" + s for t in index.targets for s in suffixes])
out.writerows(zip(*cols.values(), *pred.reshape(len(pred), -1).T))
