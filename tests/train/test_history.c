// The fit's history of log rows stays within SF_HISTORY_MAX however long
// the run: rows between epoch ends thin out first, evenly (every k-th
// kept, k a power of two), epoch rows are all kept while any between
// remain, then they thin out alike; the rows stay in order.
#include <math.h>

#include "tests/common.h"
#include "train/internal.h"

// Adds `steps` steps' rows: one every step, an epoch's end every `epoch`.
static void run(sf_history *h, uint64_t steps, uint64_t epoch) {
    sf_err e = {0};
    for (uint64_t s = 1; s <= steps; s++) {
        sf_history_row r = {.epoch = (s - 1) / epoch + 1, .step = s, .loss = 1.0 / (double)s, .val_loss = NAN,
                            .epoch_end = s % epoch == 0};
        if (r.epoch_end) r.val_loss = 2.0 / (double)s;
        CHECK(sf_history_add(h, &r, &e) == 0, "%s", e.msg);
    }
}

// The rows' steps increase; rows of kind `end` come at even gaps (*gap,
// the first). Returns how many of that kind.
static size_t check_kind(const sf_history *h, bool end, uint64_t *gap) {
    size_t n = 0;
    uint64_t last = 0, first_gap = 0;
    for (size_t i = 0; i < h->n; i++) {
        const sf_history_row *r = &h->rows[i];
        if (i) CHECK(r->step > h->rows[i - 1].step, "row %zu: step %llu after %llu", i, (unsigned long long)r->step,
                     (unsigned long long)h->rows[i - 1].step);
        if (r->epoch_end != end) continue;
        if (n == 1) first_gap = r->step - last;
        // Between epoch ends one step in `epoch` is no row of that kind: a gap may be one longer.
        else if (n > 1) CHECK(r->step - last == first_gap || (!end && r->step - last == first_gap + 1),
                              "%s rows: gap %llu, then %llu at step %llu",
                              end ? "epoch" : "step", (unsigned long long)first_gap,
                              (unsigned long long)(r->step - last), (unsigned long long)r->step);
        last = r->step, n++;
    }
    *gap = first_gap;
    return n;
}

int main(void) {
    uint64_t gap;
    // A short run: every row.
    sf_history h = {0};
    run(&h, 300, 100);
    CHECK(h.n == 300, "300 rows kept %zu", h.n);
    CHECK(check_kind(&h, true, &gap) == 3 && gap == 100, "epoch rows");
    sf_history_free(&h);

    // 100000 steps, an epoch every 1000: 100 epoch rows, all kept; the
    // per-step rows thinned to every 32nd (99900 of them, 3122 kept).
    run(&h, 100000, 1000);
    CHECK(h.n <= SF_HISTORY_MAX && h.n > SF_HISTORY_MAX / 2, "%zu rows", h.n);
    CHECK(check_kind(&h, true, &gap) == 100 && gap == 1000, "not every epoch row kept");
    size_t between = check_kind(&h, false, &gap);
    CHECK(gap == 32 || gap == 33, "rows between epoch ends every %llu steps", (unsigned long long)gap);
    CHECK(between + 100 == h.n && between > 3000, "%zu rows between epoch ends", between);
    CHECK(h.rows[0].step == 1 && h.rows[0].loss == 1.0, "the first row goes: step %llu",
          (unsigned long long)h.rows[0].step);
    CHECK(h.rows[h.n - 1].epoch_end && h.rows[h.n - 1].step == 100000 && h.rows[h.n - 1].val_loss == 2.0 / 100000,
          "the last epoch's row");
    sf_history_free(&h);

    // Epoch rows alone (an epoch a step): they thin out too, evenly.
    run(&h, 10000, 1);
    CHECK(h.n <= SF_HISTORY_MAX && h.n >= SF_HISTORY_MAX / 2, "%zu rows", h.n);
    CHECK(check_kind(&h, true, &gap) == h.n && gap == 4, "epoch rows every %llu", (unsigned long long)gap);
    sf_history_free(&h);
    return TEST_EXIT();
}
