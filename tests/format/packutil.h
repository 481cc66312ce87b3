// Helpers shared by the format tests: scratch directories, whole-file I/O,
// and decoding every value of an .sfpack.
#ifndef SF_TESTS_FORMAT_PACKUTIL_H
#define SF_TESTS_FORMAT_PACKUTIL_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pack/pack.h"

// A fresh directory under $TMPDIR (or /tmp). Aborts when none can be made:
// no test means anything without one.
static inline char *scratch_dir(const char *tag) {
    const char *base = getenv("TMPDIR");
    char *dir = malloc(4096);
    if (!dir) abort();
    snprintf(dir, 4096, "%s/sf-%s-XXXXXX", base && *base ? base : "/tmp", tag);
    if (!mkdtemp(dir)) {
        perror(dir);
        abort();
    }
    return dir;
}

// A float's bits, and the float of bits.
static inline uint32_t bits_of(float v) {
    uint32_t u;
    memcpy(&u, &v, 4);
    return u;
}

static inline float float_of(uint32_t u) {
    float v;
    memcpy(&v, &u, 4);
    return v;
}

#define PATH_LEN 4200

// dir/name into out (PATH_LEN bytes); returns out.
static inline char *path_in(char *out, const char *dir, const char *name) {
    snprintf(out, PATH_LEN, "%s/%s", dir, name);
    return out;
}

// Entries in dir other than . and ..: what a failed or aborted write left.
static inline int count_entries(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    for (struct dirent *de; (de = readdir(d));) n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
    closedir(d);
    return n;
}

// Removes the (flat) directory and what is in it.
static inline void remove_dir(char *dir) {
    DIR *d = opendir(dir);
    if (d) {
        char path[PATH_LEN];
        for (struct dirent *de; (de = readdir(d));)
            if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) unlink(path_in(path, dir, de->d_name));
        closedir(d);
    }
    rmdir(dir);
    free(dir);
}

static inline unsigned char *read_whole(const char *path, size_t *n) {
    *n = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, len = 0;
    unsigned char *b = malloc(cap);
    for (size_t k; b && (k = fread(b + len, 1, cap - len, f)) > 0;) {
        len += k;
        if (len == cap) {
            unsigned char *nb = realloc(b, cap *= 2);
            if (!nb) free(b);
            b = nb;
        }
    }
    fclose(f);
    *n = len;
    return b;
}

// Every value of the file, row-major (v[row * ncols + col]), read and
// decoded chunk by chunk; NULL with e set on the first failure.
static inline float *decode_all(const sf_pack *p, sf_err *e) {
    const sf_pack_info *in = sf_pack_get_info(p);
    float *all = malloc(in->nrows * in->ncols * sizeof *all);
    void *stored = malloc(sf_pack_max_stored_size(p));
    float *chunk = malloc((size_t)in->chunk_rows * in->ncols * sizeof *chunk);
    sf_pack_dctx *d = sf_pack_dctx_create();
    int rc = all && stored && chunk && d ? 0 : sf_err_set(e, SF_ENOMEM, "out of memory");
    for (uint64_t i = 0; !rc && i < in->nchunks; i++) {
        rc = sf_pack_chunk_read(p, i, stored, e);
        if (!rc) rc = sf_pack_chunk_decode(d, p, i, stored, chunk, e);
        sf_chunk c = sf_pack_chunk_locate(p, i);
        for (uint32_t r = 0; !rc && r < c.rows; r++)
            for (uint32_t col = 0; col < in->ncols; col++)
                all[(c.first_row + r) * in->ncols + col] = chunk[(size_t)col * c.rows + r];
    }
    free(stored);
    free(chunk);
    sf_pack_dctx_free(d);
    if (rc) {
        free(all);
        return NULL;
    }
    return all;
}

#endif
