// A run's log rows in memory, bounded however long the run (the report
// draws its curves from them).
#include <stdlib.h>
#include <string.h>

#include "internal.h"

// Keeps every other row of kind k (the first, third, ...): those whose
// count of that kind is a multiple of twice the stride.
static void halve(sf_history *h, int k) {
    size_t to = 0, of_kind = 0;
    for (size_t i = 0; i < h->n; i++) {
        bool mine = h->rows[i].epoch_end == (k == 1);
        if (!mine || of_kind++ % 2 == 0) h->rows[to++] = h->rows[i];
    }
    h->n = to;
    h->stride[k] *= 2;
}

int sf_history_add(sf_history *h, const sf_history_row *r, sf_err *e) {
    int k = r->epoch_end ? 1 : 0;
    if (!h->stride[0]) h->stride[0] = h->stride[1] = 1;
    if (h->seen[k]++ % h->stride[k]) return 0;
    if (!h->rows && !(h->rows = malloc(SF_HISTORY_MAX * sizeof *h->rows)))
        return sf_err_set(e, SF_ENOMEM, "out of memory for the run's history");
    if (h->n == SF_HISTORY_MAX) {
        size_t between = 0;
        for (size_t i = 0; i < h->n; i++) between += !h->rows[i].epoch_end;
        int drop = between >= 2 ? 0 : 1;  // rows between epoch ends go first
        halve(h, drop);
        // The row just seen must fall on the new stride of its kind, as the
        // ones kept do.
        if ((h->seen[k] - 1) % h->stride[k]) return 0;
    }
    h->rows[h->n++] = *r;
    return 0;
}

void sf_history_free(sf_history *h) {
    free(h->rows);
    *h = (sf_history){0};
}
