// The batches of each of R replicas as `seqfeed train` draws them (one pipe
// for all R, as the fit opens it), written to OUT as raw float32: for each
// batch in order, replica 0's x then y, replica 1's, ... The Python test
// compares seqfeed.Dataset(replicas=R, replica=r) with them.
// usage: dump_batches DATA OUT WINDOW BATCH REPLICAS VAL_SPLIT POOL SEED EPOCHS TARGETS [NORM_SCOPE]
// (NORM_SCOPE: global, the default, or series, as train's --norm-scope)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/train.h"

int main(int argc, char **argv) {
    if (argc != 11 && argc != 12) {
        fprintf(stderr, "usage: dump_batches DATA OUT WINDOW BATCH REPLICAS VAL_SPLIT POOL SEED EPOCHS TARGETS "
                "[NORM_SCOPE]\n");
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
    o.norm_series = argc == 12 && !strcmp(argv[11], "series");
    sf_err e = {0};
    sf_run_data d;
    sf_pipe *pipe = NULL;
    int rc = sf_run_data_open(&d, &o, &e);
    sf_pipe_opts po = sf_run_pipe_opts(&o, &d, R, 0, 1);
    if (!rc) rc = sf_pipe_open(&pipe, d.pack, &d.cols, &po, &e);
    FILE *f = rc ? NULL : fopen(argv[2], "wb");
    if (!rc && !f) rc = sf_err_set(&e, SF_EIO, "%s: cannot write", argv[2]);
    size_t xl = (size_t)po.batch * po.window.length * d.cols.nfeatures, yl = (size_t)po.batch * d.cols.ntargets;
    for (int more = 1; !rc && more;)
        for (uint32_t r = 0; !rc && r < R; r++) {
            sf_batch b;
            int got = sf_pipe_next_batch(pipe, r, &b, &e);
            if (got < 0) rc = got;
            if (got != 1) {
                more = 0;
                break;
            }
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
