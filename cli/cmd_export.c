// seqfeed export: a checkpoint as files other tools load (Keras 3).
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const cli_use export_uses[] = {
    {.opt = OPT_CHECKPOINT, .help = "a checkpoint written by seqfeed train, or its run's directory: best.safetensors "
                                    "there, else latest.safetensors"},
    {.opt = OPT_FORMAT},
    {.opt = OPT_OUTPUT, .help = "the file to write (required): model.keras, or model.weights.h5 for --format "
                                "keras-weights; it appears only when complete"},
    {.opt = OPT_QUIET}, {.opt = OPT_HELP}, {.opt = OPT_COUNT}};

static const cli_command export_command = {
    .name = "export",
    .usage = "--checkpoint CK.safetensors --format keras -o model.keras",
    .about =
        "Writes a checkpoint as a Keras 3 model that keras.models.load_model opens\n"
        "with no custom objects and that predicts what seqfeed predict does: a\n"
        "Sequential of Normalization (the training data's scaling: it takes data\n"
        "units), the LSTM, Dropout and Dense layers, and an inverted Normalization\n"
        "(forecasts in data units). Its input is (batch, window, inputs), the inputs\n"
        "in the order train printed them: numeric columns in data units, one input\n"
        "of 0 or 1 per value of a categorical column, then sin and cos of each time\n"
        "feature. A model trained to predict changes outputs each target's change\n"
        "from the window's last row, in data units: add it to that row's value.\n"
        "Trained for several steps ahead (horizon A-B), the last Dense's output\n"
        "is reshaped to (steps, targets); with a quantile loss to (steps, targets,\n"
        "quantiles), or (targets, quantiles) for one step, the quantiles unsorted\n"
        "(predict sorts them). A model with covariates (future features, series\n"
        "features) is a functional model of named inputs: window as above, future\n"
        "(batch, steps, future inputs) in data units, series (batch, series)\n"
        "one-hot (docs/TRAINING.md, \"Covariates\").\n"
        "The keras-weights format is model.weights.h5 alone, for the same model\n"
        "built in code (model.load_weights).\n",
    .uses = export_uses,
};

int cmd_export(int argc, char **argv) {
    cli_args a;
    int rc = cli_parse(&export_command, argc, argv, &a);
    if (rc) return rc < 0 ? EXIT_OK : rc;
    if (!a.v[OPT_CHECKPOINT].set) return cli_usage_error("export", "missing --checkpoint FILE");
    if (!a.v[OPT_FORMAT].set) return cli_usage_error("export", "missing --format keras|keras-weights");
    if (!a.v[OPT_OUTPUT].set) return cli_usage_error("export", "missing -o FILE");
    sf_err why = {0};
    if (!sf_keras_available(&why)) return cli_usage_error("export", "%s", why.msg);
    const char *ckpt = NULL, *out = a.v[OPT_OUTPUT].text;
    char in_dir[PATH_MAX];  // a run directory's checkpoint
    if ((rc = cli_checkpoint_path("export", a.v[OPT_CHECKPOINT].text, a.v[OPT_QUIET].set, in_dir, sizeof in_dir,
                                  &ckpt)))
        return rc;
    enum sf_keras_format format = a.v[OPT_FORMAT].choice == 1 ? SF_KERAS_WEIGHTS : SF_KERAS_MODEL;
    // Keras opens a model only from NAME.keras, and weights only from NAME.weights.h5.
    const char *suffix = format == SF_KERAS_MODEL ? ".keras" : ".weights.h5";
    size_t ol = strlen(out), sl = strlen(suffix);
    if (ol <= sl || strcmp(out + ol - sl, suffix))
        return cli_usage_error("export", "-o %s: Keras loads --format %s only from a file named *%s", out,
                               format == SF_KERAS_MODEL ? "keras" : "keras-weights", suffix);
    sf_checkpoint ck;
    sf_model m;
    sf_err e = {0};
    if (sf_checkpoint_read(ckpt, &ck, &m, &e)) return cli_fail("export", &e, NULL);
    rc = sf_keras_export(out, &ck, &m, format, &e);
    if (!rc && !a.v[OPT_QUIET].set)
        fprintf(stderr, "exported %s (%s, window %u, %u inputs: %s%s%s%s%s) to %s\n", ckpt, ck.model, ck.window.length,
                ck.inputs, ck.features, ck.time_features[0] ? ", time features " : "", ck.time_features,
                ck.future_inputs ? "; a second input, future: at every target step " : "", ck.future_features, out);
    sf_checkpoint_free(&ck);
    return rc ? cli_fail("export", &e, NULL) : EXIT_OK;
}
