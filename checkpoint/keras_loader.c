// Finds and loads the Keras module (keras.c, built as seqfeed-keras.so)
// the first time export needs it: next to libseqfeed.so or the program
// (sf_module_entry), or where it is installed, or at $SEQFEED_KERAS_MODULE.
#include <pthread.h>

#include "checkpoint.h"

typedef int (*export_fn)(const char *, const sf_checkpoint *, const sf_model *, enum sf_keras_format, sf_err *);

static pthread_once_t once = PTHREAD_ONCE_INIT;
static export_fn entry;
static sf_err why;

static void load(void) {
    if (!SF_KERAS_BUILT) {
        sf_err_set(&why, SF_EUSAGE, "this seqfeed was built without libhdf5 and libzip, which Keras files need "
                   "(hint: apt-get install libhdf5-dev libzip-dev, configure the build again and rebuild)");
        return;
    }
    entry = (export_fn)sf_module_entry("seqfeed-keras.so", "SEQFEED_KERAS_MODULE", SF_KERAS_MODULE_INSTALLED,
                                       "the Keras module", "sf_keras_module_export", &why);
}

bool sf_keras_available(sf_err *e) {
    pthread_once(&once, load);
    if (!entry && e) *e = why;
    return entry != NULL;
}

int sf_keras_export(const char *path, const sf_checkpoint *c, const sf_model *m, enum sf_keras_format format,
                    sf_err *e) {
    if (format == SF_KERAS_MODEL && c->nscoped)
        return sf_err_set(e, SF_EUSAGE, "the checkpoint scales each of its %llu series by its own statistics "
                          "(--norm-scope series), and the Keras model's Normalization layers have one scaling for "
                          "all: the model would take and give the wrong units (hint: --format keras-weights, with "
                          "the scaling left to the caller: the checkpoint's scaling/series_* tensors, by the "
                          "metadata norm_series; or train with --norm-scope global)", (unsigned long long)c->nscoped);
    if (!sf_keras_available(e)) return e ? e->code : SF_EUSAGE;
    return entry(path, c, m, format, e);
}
