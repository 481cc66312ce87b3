#!/usr/bin/env python3
"""bench/time_to_loss.sh's Keras 3 peer (TensorFlow backend): the CSV read
with pandas into the windows seqfeed trains on (ttl_data.py), the same
stacked LSTM + Dense as seqfeed's --model (Keras' own initialisers, which
seqfeed copies), Adam (lr, epsilon 1e-7), MSE, model.fit on the arrays with
shuffling, validation_data, and EarlyStopping(patience,
restore_best_weights=True).

Prints to stdout, one line each as it happens (the driver stamps them):
"ready,KERAS_VERSION,TF_VERSION" once the model is built and the data in
memory, "epoch,N,loss,val_loss" after each epoch, and "final,LOSS": the
restored best model's loss on the validation windows (model.evaluate).
usage: ttl_keras.py --csv FILE --columns a,b [--series-column S] [--window T] [--batch-size B]
                    [--lr F] [--val-split F] [--model lstm:U,...,dense] [--epochs N] [--patience N] [--seed N]
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import ttl_data  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ttl_data.add_args(ap)
    a = ap.parse_args()
    import keras
    import tensorflow as tf

    if a.threads:
        tf.config.threading.set_intra_op_parallelism_threads(a.threads)
        tf.config.threading.set_inter_op_parallelism_threads(a.threads)
    keras.utils.set_random_seed(a.seed)
    cols = a.columns.split(",")
    x, y, xv, yv = ttl_data.load(a.csv, cols, a.series_column, a.window, a.val_split,
                                 val_by_rows=a.val_by_rows)
    layers = [keras.Input((a.window, len(cols)))]
    units = ttl_data.model_units(a.model)
    for i, u in enumerate(units):
        layers.append(keras.layers.LSTM(u, return_sequences=i < len(units) - 1))
    layers.append(keras.layers.Dense(y.shape[1]))
    model = keras.Sequential(layers)
    model.compile(keras.optimizers.Adam(a.lr, epsilon=1e-7), "mse")
    ttl_data.say("ready", keras.__version__, tf.__version__)

    class Say(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            ttl_data.say("epoch", epoch + 1, logs["loss"], logs["val_loss"])

    stop = keras.callbacks.EarlyStopping(monitor="val_loss", patience=a.patience, restore_best_weights=True)
    model.fit(x, y, batch_size=a.batch_size, epochs=a.epochs, validation_data=(xv, yv), shuffle=True,
              callbacks=[Say(), stop], verbose=0)
    ttl_data.say("final", model.evaluate(xv, yv, batch_size=256, verbose=0))


if __name__ == "__main__":
    main()
