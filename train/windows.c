// The windows of a plan in id order, block by block: memory is one block
// and one batch, whatever the file's size.
#include <stdlib.h>

#include "train.h"

int sf_windows_in_order(const sf_pack *p, const sf_plan *plan, const sf_columns *cols, uint32_t batch,
                        sf_window_fn fn, void *arg, sf_err *e) {
    size_t xl = (size_t)sf_plan_spec(plan)->length * cols->nfeatures;
    sf_block_loader *loader = sf_block_loader_create(p, cols);
    float *x = malloc(batch * xl * sizeof(float) + 1), *y = malloc(batch * cols->ntargets * sizeof(float) + 1);
    uint64_t *ids = malloc(batch * sizeof *ids);
    sf_block_data d = {0};
    int rc = loader && x && y && ids ? 0 : sf_err_set(e, SF_ENOMEM, "out of memory for batches of %u", batch);
    uint32_t n = 0;
    for (uint64_t b = 0; !rc && b < sf_plan_blocks(plan); b++) {
        sf_block_task t = sf_plan_block(plan, b);
        if (t.first_window == t.end_window) continue;
        if ((rc = sf_block_load(loader, &t, &d, e))) break;
        for (uint64_t id = t.first_window; !rc && id < t.end_window; id++) {
            sf_window_cut(plan, cols, &d, id, x + n * xl, y + (size_t)n * cols->ntargets);
            ids[n++] = id;
            if (n == batch) rc = fn(arg, x, y, ids, n, e), n = 0;
        }
    }
    if (!rc && n) rc = fn(arg, x, y, ids, n, e);
    sf_block_data_free(&d);
    sf_block_loader_free(loader);
    free(x), free(y), free(ids);
    return rc;
}
