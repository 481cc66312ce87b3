#!/usr/bin/env python3
"""Forecasts with a `seqfeed export` model in Keras 3: what `seqfeed predict` writes.

usage: seqfeed export --checkpoint run --format keras -o model.keras
       keras_predict.py model.keras run DATA.sfpack > forecasts.csv

Any pack works: categories, time features, several series (windows never
span two), several source files, a model trained with --target change or
--loss quantile:... (NAME_q10, NAME_q50, ... as predict writes them).
seqfeed.model_inputs builds the inputs with the code predict runs.
"""
import csv
import sys

import keras
import seqfeed

model_path, checkpoint, data = sys.argv[1:4]
x, index = seqfeed.model_inputs(checkpoint, data)  # split="validation": that part's windows only
pred = seqfeed.forecasts(keras.models.load_model(model_path).predict(x, verbose=0), index)
nq = len(index.quantiles)  # a --loss quantile model: each target's quantiles on a last axis, sorted
if pred.ndim == (4 if nq else 3):  # the index names each window's last step's row only
    sys.exit("keras_predict.py: %s forecasts %d steps per window (--horizon A-B): pred[:, k] is step k; "
             "seqfeed predict writes each step's own row" % (model_path, pred.shape[1]))
suffixes = ["q%.6g" % (100 * q) for q in index.quantiles] if nq else ["pred"]
out, cols = csv.writer(sys.stdout), index.columns()  # series, time, file, line, row: the row predicted
out.writerow(list(cols) + [t + "_" + s for t in index.targets for s in suffixes])
out.writerows(zip(*cols.values(), *pred.reshape(len(pred), -1).T))
