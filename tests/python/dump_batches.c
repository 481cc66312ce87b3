// The batches of each of R replicas as `seqfeed train` draws them (one pipe
// for all R, as the fit opens it), written to OUT as raw float32: for each
// batch in order, replica 0's x then y, replica 1's, ... The Python test
// compares seqfeed.Dataset(replicas=R, replica=r) with them. With
// "validation" after TARGETS: the validation batches the fit scores (its
// plan, read as train/fit.c's validate reads it), x then y of each. With
// "series" (or "global", the default): --norm-scope series.
// usage: dump_batches DATA OUT WINDOW BATCH REPLICAS VAL_SPLIT POOL SEED EPOCHS TARGETS [validation] [series]
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/train.h"

typedef struct {
    FILE *f;
    size_t x_window, y_window;  // floats per window
} dump;

static int write_batch(void *arg, const float *x, const float *y, const uint64_t *ids, uint32_t count, sf_err *e) {
    dump *d = arg;
    size_t xl = count * d->x_window, yl = count * d->y_window;
    (void)ids;
    return fwrite(x, sizeof(float), xl, d->f) == xl && fwrite(y, sizeof(float), yl, d->f) == yl
               ? 0 : sf_err_set(e, SF_EIO, "write failed");
}

// The fit's validation plan (train/fit.c, open_data) read in order in batches of the replica batch.
static int dump_validation(const sf_fit_opts *o, uint32_t R, FILE *f, sf_err *e) {
    sf_run_data d;
    sf_plan *plan = NULL;
    int rc = sf_run_data_open(&d, o, e);
    if (!rc) {
        const sf_pack_info *in = sf_pack_get_info(d.pack);
        uint64_t n;
        const sf_series *series = sf_run_data_series(&d, &n);
        rc = sf_plan_create(&plan, in->nrows, in->chunk_rows, series, n, &o->pipe.window, 1,
                            &(sf_split){.fraction = o->val_split, .part = SF_PART_VALIDATION}, e);
    }
    dump out = {.f = f, .x_window = (size_t)o->pipe.window.length * d.cols.nfeatures, .y_window = d.cols.ntargets};
    if (!rc) rc = sf_windows_in_order(d.pack, plan, &d.cols, o->batch / R, write_batch, &out, e);
    sf_plan_free(plan);
    sf_run_data_close(&d);
    return rc;
}

int main(int argc, char **argv) {
    bool validation = false, usage = argc < 11;
    for (int k = 11; k < argc; k++) {
        if (!strcmp(argv[k], "validation")) validation = true;
        else if (strcmp(argv[k], "series") && strcmp(argv[k], "global")) usage = true;
    }
    if (usage) {
        fprintf(stderr, "usage: dump_batches DATA OUT WINDOW BATCH REPLICAS VAL_SPLIT POOL SEED EPOCHS TARGETS "
                "[validation] [series]\n");
        return 2;
    }
    sf_fit_opts o = sf_fit_opts_default();
    o.data = argv[1], o.targets = argv[10];
    o.pipe.window.length = (uint32_t)atoi(argv[3]), o.batch = (uint32_t)atoi(argv[4]);
    uint32_t R = (uint32_t)atoi(argv[5]);
    uint64_t pool = strtoull(argv[7], NULL, 10);  // 0: the default pool, as the Dataset's
    if (pool) o.pipe.pool = pool;
    o.val_split = atof(argv[6]), o.seed = strtoull(argv[8], NULL, 10);
    o.epochs = strtoull(argv[9], NULL, 10);
    for (int k = 11; k < argc; k++) o.norm_series |= !strcmp(argv[k], "series");
    sf_err e = {0};
    if (validation) {
        FILE *f = fopen(argv[2], "wb");
        int rc = f ? dump_validation(&o, R, f, &e) : sf_err_set(&e, SF_EIO, "%s: cannot write", argv[2]);
        if (f && fclose(f) != 0 && !rc) rc = sf_err_set(&e, SF_EIO, "%s: write failed", argv[2]);
        if (rc) fprintf(stderr, "dump_batches: %s\n", e.msg);
        return rc ? 1 : 0;
    }
    sf_run_data d;
    sf_pipe *pipe = NULL;
    int rc = sf_run_data_open(&d, &o, &e);
    sf_pipe_opts po = sf_run_pipe_opts(&o, &d, R, 0, 1);
    if (!rc) rc = sf_pipe_open(&pipe, d.pack, &d.cols, &po, &e);
    FILE *f = rc ? NULL : fopen(argv[2], "wb");
    if (!rc && !f) rc = sf_err_set(&e, SF_EIO, "%s: cannot write", argv[2]);
    size_t xw = (size_t)po.window.length * d.cols.nfeatures, yw = d.cols.ntargets;
    for (int more = 1; !rc && more;)
        for (uint32_t r = 0; !rc && r < R; r++) {
            sf_batch b;
            int got = sf_pipe_next_batch(pipe, r, &b, &e);
            if (got < 0) rc = got;
            if (got != 1) {
                more = 0;
                break;
            }
            size_t xl = b.count * xw, yl = b.count * yw;  // the replica's parts
            if (fwrite(b.x, sizeof(float), xl, f) != xl || fwrite(b.y, sizeof(float), yl, f) != yl)
                rc = sf_err_set(&e, SF_EIO, "%s: write failed", argv[2]);
            sf_pipe_release(pipe, r, &b);
        }
    if (f && fclose(f) != 0 && !rc) rc = sf_err_set(&e, SF_EIO, "%s: write failed", argv[2]);
    sf_pipe_close(pipe);
    sf_run_data_close(&d);
    if (rc) fprintf(stderr, "dump_batches: %s\n", e.msg);
    return rc ? 1 : 0;
}
