// Arrow C data interface structs made by hand, as a producer exports them,
// for test_arrow.c and the fuzzer (no Arrow library): arrays of fixed-width
// values, bools, strings and dictionaries with nulls and offsets, record
// batches, schemas and a stream that hands them out. Every struct made and
// not yet released counts in ab_live, so that a test can check that the
// consumer released each one exactly once.
#ifndef SF_TESTS_ARROW_BUILD_H
#define SF_TESTS_ARROW_BUILD_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pack/arrow_abi.h"

static int ab_live;

// ---- arrays ----

typedef struct {
    void *bufs[4];  // a string_view's 4: validity, views, data, sizes
    const void *ptrs[4];
    int64_t nchildren;
    struct ArrowArray **children;
    struct ArrowArray *dict;
} ab_array_priv;

static inline void ab_array_release(struct ArrowArray *a) {
    ab_array_priv *p = a->private_data;
    for (int64_t i = 0; i < p->nchildren; i++) {  // a test may have taken a child out (NULL)
        if (p->children[i] && p->children[i]->release) p->children[i]->release(p->children[i]);
        free(p->children[i]);
    }
    free(p->children);
    if (p->dict) {
        if (p->dict->release) p->dict->release(p->dict);
        free(p->dict);
    }
    for (int k = 0; k < 4; k++) free(p->bufs[k]);
    free(p);
    a->release = NULL;
    ab_live--;
}

static inline struct ArrowArray *ab_heap(struct ArrowArray a) {
    struct ArrowArray *h = malloc(sizeof *h);
    if (!h) abort();
    *h = a;
    return h;
}

// An array owning its buffers (b0..b2, any NULL), children (heap, owned) and dictionary.
static inline struct ArrowArray ab_array(int64_t length, int64_t offset, int64_t null_count, int64_t nbuf, void *b0, void *b1,
                                  void *b2, int64_t nchildren, struct ArrowArray **children, struct ArrowArray *dict) {
    ab_array_priv *p = calloc(1, sizeof *p);
    if (!p) abort();
    p->bufs[0] = b0, p->bufs[1] = b1, p->bufs[2] = b2;
    p->ptrs[0] = b0, p->ptrs[1] = b1, p->ptrs[2] = b2;
    p->nchildren = nchildren, p->children = children, p->dict = dict;
    ab_live++;
    return (struct ArrowArray){.length = length, .null_count = null_count, .offset = offset, .n_buffers = nbuf,
                               .n_children = nchildren, .buffers = p->ptrs, .children = children,
                               .dictionary = dict, .release = ab_array_release, .private_data = p};
}

// A validity bitmap of n values from nulls ('x' at i: value i is null;
// NULL: none), and the nulls from offset on.
static inline void *ab_validity(int64_t n, const char *nulls, int64_t offset, int64_t *count) {
    *count = 0;
    if (!nulls) return NULL;
    uint8_t *v = calloc((size_t)(n + 7) / 8 + 1, 1);
    if (!v) abort();
    for (int64_t i = 0; i < n; i++) {
        bool null = nulls[i] == 'x';
        if (!null) v[i / 8] |= (uint8_t)(1u << (i % 8));
        else if (i >= offset) ++*count;
    }
    return v;
}

static inline void *ab_copy(const void *p, size_t n) {
    void *c = malloc(n ? n : 1);
    if (!c) abort();
    if (n) memcpy(c, p, n);
    return c;
}

// n values of width bytes each; the first offset of them lie before the array.
static inline struct ArrowArray ab_fixed(size_t width, int64_t n, const void *vals, const char *nulls, int64_t offset) {
    int64_t nc;
    void *valid = ab_validity(n, nulls, offset, &nc);
    return ab_array(n - offset, offset, nc, 2, valid, ab_copy(vals, (size_t)n * width), NULL, 0, NULL, NULL);
}

static inline struct ArrowArray ab_bool(int64_t n, const uint8_t *vals, const char *nulls, int64_t offset) {
    int64_t nc;
    void *valid = ab_validity(n, nulls, offset, &nc);
    uint8_t *bits = calloc((size_t)(n + 7) / 8 + 1, 1);
    if (!bits) abort();
    for (int64_t i = 0; i < n; i++)
        if (vals[i]) bits[i / 8] |= (uint8_t)(1u << (i % 8));
    return ab_array(n - offset, offset, nc, 2, valid, bits, NULL, 0, NULL, NULL);
}

static inline struct ArrowArray ab_strings(int64_t n, const char *const *texts, const char *nulls, int64_t offset, bool large) {
    int64_t nc;
    void *valid = ab_validity(n, nulls, offset, &nc);
    size_t total = 0;
    for (int64_t i = 0; i < n; i++) total += texts[i] ? strlen(texts[i]) : 0;
    char *data = malloc(total + 1);
    void *offs = malloc((size_t)(n + 1) * (large ? 8 : 4));
    if (!data || !offs) abort();
    size_t at = 0;
    for (int64_t i = 0; i <= n; i++) {
        if (large) ((int64_t *)offs)[i] = (int64_t)at;
        else ((int32_t *)offs)[i] = (int32_t)at;
        if (i < n && texts[i]) memcpy(data + at, texts[i], strlen(texts[i])), at += strlen(texts[i]);
    }
    return ab_array(n - offset, offset, nc, 3, valid, offs, data, 0, NULL, NULL);
}

// A string_view array (Arrow's "vu", Polars' strings): texts of 12 bytes
// or fewer inside their views, longer ones in one data buffer.
static inline struct ArrowArray ab_views(int64_t n, const char *const *texts, const char *nulls, int64_t offset) {
    int64_t nc;
    void *valid = ab_validity(n, nulls, offset, &nc);
    size_t total = 0;
    for (int64_t i = 0; i < n; i++) total += texts[i] ? strlen(texts[i]) : 0;
    uint8_t *views = calloc((size_t)n + 1, 16);
    char *data = malloc(total + 1);
    int64_t *sizes = malloc(sizeof *sizes);
    if (!views || !data || !sizes) abort();
    int32_t at = 0, zero = 0;
    for (int64_t i = 0; i < n; i++) {
        int32_t len = texts[i] ? (int32_t)strlen(texts[i]) : 0;
        uint8_t *v = views + 16 * i;
        memcpy(v, &len, 4);
        if (len <= 12) {
            if (len) memcpy(v + 4, texts[i], (size_t)len);
            continue;
        }
        memcpy(v + 4, texts[i], 4), memcpy(v + 8, &zero, 4), memcpy(v + 12, &at, 4);
        memcpy(data + at, texts[i], (size_t)len), at += len;
    }
    *sizes = at;
    struct ArrowArray a = ab_array(n - offset, offset, nc, 4, valid, views, data, 0, NULL, NULL);
    ab_array_priv *p = a.private_data;
    p->bufs[3] = sizes, p->ptrs[3] = sizes;
    return a;
}

// int32 indices into dict (taken over).
static inline struct ArrowArray ab_dict(int64_t n, const int32_t *idx, const char *nulls, int64_t offset,
                                 struct ArrowArray dict) {
    struct ArrowArray a = ab_fixed(4, n, idx, nulls, offset);
    ab_array_priv *p = a.private_data;
    p->dict = a.dictionary = ab_heap(dict);
    return a;
}

// A record batch of length rows (from offset) over n columns (taken over).
static inline struct ArrowArray ab_batch(int64_t length, int64_t offset, int64_t n, const struct ArrowArray *cols) {
    struct ArrowArray **ch = malloc((size_t)(n ? n : 1) * sizeof *ch);
    if (!ch) abort();
    for (int64_t i = 0; i < n; i++) ch[i] = ab_heap(cols[i]);
    return ab_array(length, offset, 0, 1, NULL, NULL, NULL, n, ch, NULL);
}

// ---- schemas ----

typedef struct {
    int64_t n;
    struct ArrowSchema **children;
    struct ArrowSchema *dict;
} ab_schema_priv;

static inline void ab_schema_release(struct ArrowSchema *s) {
    ab_schema_priv *p = s->private_data;
    for (int64_t i = 0; i < p->n; i++) {
        if (p->children[i]->release) p->children[i]->release(p->children[i]);
        free(p->children[i]);
    }
    free(p->children);
    if (p->dict) {
        if (p->dict->release) p->dict->release(p->dict);
        free(p->dict);
    }
    free(p);
    s->release = NULL;
    ab_live--;
}

// A field (format and name are borrowed: literals); dict (taken over) NULL when not a dictionary.
static inline struct ArrowSchema ab_field(const char *format, const char *name, const struct ArrowSchema *dict) {
    ab_schema_priv *p = calloc(1, sizeof *p);
    if (!p) abort();
    if (dict) {
        if (!(p->dict = malloc(sizeof *p->dict))) abort();
        *p->dict = *dict;
    }
    ab_live++;
    return (struct ArrowSchema){.format = format, .name = name, .flags = ARROW_FLAG_NULLABLE, .dictionary = p->dict,
                                .release = ab_schema_release, .private_data = p};
}

// A struct of n fields (taken over).
static inline struct ArrowSchema ab_struct(int64_t n, const struct ArrowSchema *fields) {
    struct ArrowSchema s = ab_field("+s", "", NULL);
    ab_schema_priv *p = s.private_data;
    p->n = n;
    if (!(p->children = malloc((size_t)(n ? n : 1) * sizeof *p->children))) abort();
    for (int64_t i = 0; i < n; i++) {
        if (!(p->children[i] = malloc(sizeof **p->children))) abort();
        *p->children[i] = fields[i];
    }
    s.n_children = n, s.children = p->children;
    return s;
}

// ---- the stream ----

typedef struct {
    struct ArrowSchema schema;
    struct ArrowArray *batches;
    int n, next;
    int fail_at;  // get_next fails (EIO) at this batch; -1: never. get_schema fails when schema is not given.
    bool failed;
} ab_stream_priv;

static inline int ab_get_schema(struct ArrowArrayStream *s, struct ArrowSchema *out) {
    ab_stream_priv *p = s->private_data;
    if (!p->schema.release) return p->failed = true, EIO;
    *out = p->schema;  // moved: once
    p->schema.release = NULL;
    return 0;
}

static inline int ab_get_next(struct ArrowArrayStream *s, struct ArrowArray *out) {
    ab_stream_priv *p = s->private_data;
    if (p->next == p->fail_at) return p->failed = true, EIO;
    if (p->next == p->n) {
        out->release = NULL;
        return 0;
    }
    *out = p->batches[p->next];
    p->batches[p->next++].release = NULL;
    return 0;
}

static inline const char *ab_last_error(struct ArrowArrayStream *s) {
    ab_stream_priv *p = s->private_data;
    return p->failed ? "the disk is on fire" : NULL;
}

static inline void ab_stream_release(struct ArrowArrayStream *s) {
    ab_stream_priv *p = s->private_data;
    if (p->schema.release) p->schema.release(&p->schema);
    for (int i = 0; i < p->n; i++)
        if (p->batches[i].release) p->batches[i].release(&p->batches[i]);
    free(p->batches);
    free(p);
    s->release = NULL;
    ab_live--;
}

// A stream of schema and n batches (all taken over); schema.release NULL
// makes get_schema fail.
static inline struct ArrowArrayStream ab_stream(struct ArrowSchema schema, int n, const struct ArrowArray *batches,
                                         int fail_at) {
    ab_stream_priv *p = calloc(1, sizeof *p);
    if (!p || !(p->batches = malloc((size_t)(n ? n : 1) * sizeof *p->batches))) abort();
    p->schema = schema;
    if (n) memcpy(p->batches, batches, (size_t)n * sizeof *batches);
    p->n = n, p->fail_at = fail_at;
    ab_live++;
    return (struct ArrowArrayStream){.get_schema = ab_get_schema, .get_next = ab_get_next,
                                     .get_last_error = ab_last_error, .release = ab_stream_release,
                                     .private_data = p};
}

#endif
