// The ring stage: a lane's slots, where its windower writes batches and its
// consumer reads them, and through the stage hooks their copies onto the
// replica's device.
#include <stdlib.h>

#include "internal.h"

int sf_ring_open(sf_ring *g, uint32_t slots, uint32_t batch, size_t x_len, size_t y_len, const sf_stage_ops *stage,
                 uint32_t stage_r, uint32_t stage_s0) {
    *g = (sf_ring){.slots = slots, .stage = stage, .stage_r = stage_r, .stage_s0 = stage_s0};
    g->y_offset = ((size_t)batch * x_len * sizeof(float) + 255) & ~(size_t)255;
    g->bytes = g->y_offset + (size_t)batch * y_len * sizeof(float);
    g->buf = calloc(slots, sizeof *g->buf);
    g->device = calloc(slots, sizeof *g->device);
    g->ready = calloc(slots, sizeof *g->ready);
    g->ids = calloc(slots, sizeof *g->ids);
    g->count = calloc(slots, sizeof *g->count);
    g->epoch = calloc(slots, sizeof *g->epoch);
    g->state = calloc(slots, sizeof *g->state);
    if (!g->buf || !g->device || !g->ready || !g->ids || !g->count || !g->epoch || !g->state) return SF_ENOMEM;
    for (uint32_t k = 0; k < slots; k++) {
        g->buf[k] = stage ? stage->alloc(stage->arg, stage_r, stage_s0 + k, g->bytes) : malloc(g->bytes);
        g->ids[k] = malloc(batch * sizeof(uint64_t));
        if (!g->buf[k] || !g->ids[k]) return SF_ENOMEM;
    }
    return 0;
}

void sf_ring_close(sf_ring *g) {
    for (uint32_t k = 0; g->buf && k < g->slots; k++) {
        if (g->buf[k]) {
            if (g->stage) g->stage->free(g->stage->arg, g->stage_r, g->stage_s0 + k, g->buf[k]);
            else free(g->buf[k]);
        }
        if (g->ids) free(g->ids[k]);
    }
    free(g->buf), free(g->device), free(g->ready), free(g->ids), free(g->count), free(g->epoch), free(g->state);
    *g = (sf_ring){0};
}

int sf_ring_reclaim(sf_ring *g, uint32_t k, sf_err *e) {
    return g->stage ? g->stage->reclaim(g->stage->arg, g->stage_r, g->stage_s0 + k, e) : 0;
}

int sf_ring_publish(sf_ring *g, uint32_t k, sf_err *e) {
    if (!g->stage) return 0;
    return g->stage->publish(g->stage->arg, g->stage_r, g->stage_s0 + k, g->buf[k], g->bytes, &g->device[k],
                             &g->ready[k], e);
}

sf_batch sf_ring_batch(const sf_ring *g, uint32_t k, uint32_t lane) {
    float *dx = g->device[k];
    return (sf_batch){.x = sf_ring_x(g, k), .y = sf_ring_y(g, k), .ids = g->ids[k], .count = g->count[k],
                      .epoch = g->epoch[k], .device_x = dx, .device_y = dx ? (float *)((char *)dx + g->y_offset) : NULL,
                      .ready = g->ready[k], .slot = k, .lane = lane};
}

void sf_ring_release(sf_ring *g, uint32_t k) {
    if (g->stage) g->stage->release(g->stage->arg, g->stage_r, g->stage_s0 + k);
}
