#!/usr/bin/env python3
"""Loads a `seqfeed export` model in Keras 3 and forecasts from raw data.

usage: seqfeed export --checkpoint ck/latest.safetensors --format keras -o model.keras
       keras_predict.py model.keras DATA.csv COLUMN... > forecasts.csv

DATA.csv holds the feature columns in data units (as the CSV seqfeed packed,
or `seqfeed unpack` writes it); COLUMN... are the model's numeric inputs in
the order `seqfeed train` printed them (a model with categorical inputs or
time features needs those inputs built too: see `seqfeed export --help`).
The model carries the training data's scaling, so it takes raw values and
gives forecasts in data units. One series per file; each output row is the
forecast for the row after the window that ends there.
"""
import csv
import sys

import keras
import numpy as np

model_path, data_path, columns = sys.argv[1], sys.argv[2], sys.argv[3:]
model = keras.models.load_model(model_path)  # no custom objects
window, inputs = model.input_shape[1], model.input_shape[2]
if len(columns) != inputs:
    sys.exit(f"the model takes {inputs} inputs per row; {len(columns)} columns named")
rows = list(csv.DictReader(open(data_path, newline="")))
x = np.array([[float(r[c]) for c in columns] for r in rows], dtype=np.float32)
windows = np.lib.stride_tricks.sliding_window_view(x, (window, inputs))[:-1, 0]  # each but the last has a next row
forecasts = model.predict(windows, verbose=0)
out = csv.writer(sys.stdout)
out.writerow(["line"] + [f"output_{j}" for j in range(forecasts.shape[1])])
for i, f in enumerate(forecasts):
    out.writerow([i + window + 2] + [f"{v:.7g}" for v in f])  # the predicted row's CSV line (the header is line 1)
