// Opens an .sfpack: header at 0, footer at the end, trailer through the
// footer. Everything a later read depends on is validated here, so chunk
// reads and decodes only have to check the chunk itself.
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "internal.h"

struct sf_pack {
    char *name;
    int fd;
    sf_pack_info info;
    char **col_names;
    sf_col_stats *stats;
    sf_series *series;
    char *series_names;  // storage for series[i].name
    char *series_column;
    char *time_column;
    int64_t *series_times, *chunk_steps;
    sf_category *categories;
    char **category_text;  // every category's values, in one array
    uint64_t ncategory_text;
    uint32_t naux;  // int64 columns after the floats in each chunk
    bool has_imputed;   // each chunk ends with its imputed values' bits
    uint64_t *imputed;  // per column, from the trailer
    uint64_t *chunk_offset;
    uint32_t *chunk_size, *chunk_crc;
    size_t max_stored;
    char **sources;  // the files the rows came from (SF_FLAG_SOURCES)
};

struct sf_pack_dctx {
    ZSTD_DCtx *z;
    uint8_t *buf;
    size_t cap;
};

static int read_at(int fd, void *buf, size_t n, uint64_t off) {
    uint8_t *p = buf;
    while (n) {
        ssize_t k = pread(fd, p, n, (off_t)off);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) return -errno;
        if (k == 0) return -ENODATA;
        p += k;
        n -= (size_t)k;
        off += (uint64_t)k;
    }
    return 0;
}

void sf_pack_close(sf_pack *p) {
    if (!p) return;
    if (p->fd >= 0) close(p->fd);
    if (p->col_names)
        for (uint32_t c = 0; c < p->info.ncols; c++) free(p->col_names[c]);
    free(p->col_names);
    free(p->stats);
    free(p->series);
    free(p->series_names);
    free(p->series_column);
    free(p->time_column);
    for (uint64_t i = 0; i < p->ncategory_text; i++) free(p->category_text[i]);
    free(p->category_text);
    free(p->categories);
    free(p->series_times);
    free(p->chunk_steps);
    free(p->imputed);
    free(p->chunk_offset);
    free(p->chunk_size);
    free(p->chunk_crc);
    for (uint32_t i = 0; p->sources && i < p->info.nsources; i++) free(p->sources[i]);
    free(p->sources);
    free(p->name);
    free(p);
}

#define CORRUPT(...) sf_err_set(e, SF_ECORRUPT, __VA_ARGS__)

// A length-prefixed name at *pos inside buf[0, end). Returns NULL when it does
// not fit.
static char *take_name(const uint8_t *buf, size_t end, size_t *pos) {
    if (end - *pos < 2) return NULL;
    size_t len = sf_get_u16(buf + *pos);
    if (end - *pos - 2 < len) return NULL;
    char *s = malloc(len + 1);
    if (!s) return NULL;
    memcpy(s, buf + *pos + 2, len);
    s[len] = 0;
    *pos += 2 + len;
    return s;
}

// Printable ASCII, tabs and line ends only: a CSV given where data goes.
static bool looks_like_text(const uint8_t *b, size_t n) {
    for (size_t i = 0; i < n; i++)
        if ((b[i] < 0x20 && b[i] != '\t' && b[i] != '\n' && b[i] != '\r') || b[i] > 0x7e) return false;
    return true;
}

static int parse_header(sf_pack *p, sf_err *e) {
    const char *nm = p->name;
    uint8_t fixed[SF_HEADER_FIXED];
    size_t head = p->info.file_size < sizeof fixed ? (size_t)p->info.file_size : sizeof fixed;
    if (head && !read_at(p->fd, fixed, head, 0) && memcmp(fixed, SF_MAGIC_HEADER, head < 8 ? head : 8) &&
        looks_like_text(fixed, head))
        return sf_err_set(e, SF_EUSAGE, "%s: a text file (CSV?), not an .sfpack file: pack it first (seqfeed "
                          "pack %s -o FILE.sfpack)", nm, nm);
    if (p->info.file_size < SF_PACK_ALIGN + SF_FOOTER_SIZE)
        return CORRUPT("%s: %llu bytes is too short for an .sfpack file (header %u + footer %u bytes at least)", nm,
                       (unsigned long long)p->info.file_size, SF_PACK_ALIGN, SF_FOOTER_SIZE);
    int rc = read_at(p->fd, fixed, sizeof fixed, 0);
    if (rc) return sf_err_errno(e, SF_EIO, -rc, "%s: cannot read the header", nm);
    p->info.fingerprint = sf_crc32c(0, fixed, sizeof fixed);
    if (memcmp(fixed, SF_MAGIC_HEADER, 8) != 0) {
        uint64_t hl = sf_get_u64(fixed);
        if (hl > 1 && hl < p->info.file_size && fixed[8] == '{')
            return sf_err_set(e, SF_EUSAGE, "%s: a checkpoint (safetensors), not an .sfpack data file", nm);
        return CORRUPT("%s: byte 0: not an .sfpack file (expected the magic \"SFPACK\\x1a\\n\")", nm);
    }
    uint32_t version = sf_get_u32(fixed + 8);
    if (version < 1 || version > SF_PACK_VERSION)
        return CORRUPT("%s: byte 8: format version %u; this seqfeed reads versions 1 to %u", nm, version,
                       SF_PACK_VERSION);
    uint32_t hsize = sf_get_u32(fixed + 12);
    if (hsize < SF_HEADER_FIXED + 6 || hsize > SF_MAX_HEADER || hsize > p->info.file_size - SF_FOOTER_SIZE)
        return CORRUPT("%s: byte 12: header size %u; expected %u to %u bytes, within the file", nm, hsize,
                       SF_HEADER_FIXED + 6, SF_MAX_HEADER);
    uint8_t *h = malloc(hsize);
    if (!h) return sf_err_set(e, SF_ENOMEM, "%s: out of memory", nm);
    if ((rc = read_at(p->fd, h, hsize, 0))) {
        rc = sf_err_errno(e, SF_EIO, -rc, "%s: cannot read the header", nm);
        goto out;
    }
    uint32_t crc = sf_get_u32(h + hsize - 4), want = sf_crc32c(0, h, hsize - 4);
    if (crc != want) {
        rc = CORRUPT("%s: header (bytes 0-%u): checksum mismatch (stored %08x, computed %08x)", nm, hsize - 1, crc,
                     want);
        goto out;
    }
    p->info.version = version;
    p->info.ncols = sf_get_u32(h + 16);
    p->info.chunk_rows = sf_get_u32(h + 20);
    p->info.filter = sf_get_u32(h + 24);
    p->info.level = (int32_t)sf_get_u32(h + 28);
    p->info.data_offset = sf_align_up(hsize, SF_PACK_ALIGN);
    uint32_t flags = sf_get_u32(h + 32);
    uint32_t known =
        version >= 2 ? SF_FLAG_TIME | SF_FLAG_LINES | SF_FLAG_CATEGORIES | SF_FLAG_IMPUTED | SF_FLAG_SOURCES : 0;
    if ((flags & ~known) || sf_get_u32(h + 36)) {
        rc = CORRUPT("%s: byte 32: flags %08x and reserved %08x; version %u knows flags %08x and reserves 0", nm,
                     flags, sf_get_u32(h + 36), version, known);
        goto out;
    }
    p->info.has_lines = flags & SF_FLAG_LINES;
    p->has_imputed = flags & SF_FLAG_IMPUTED;
    if ((flags & SF_FLAG_SOURCES) && !p->info.has_lines) {
        rc = CORRUPT("%s: byte 32: flags %08x: sources without lines", nm, flags);
        goto out;
    }
    p->info.nsources = flags & SF_FLAG_SOURCES ? 1 : 0;  // counted in the trailer
    p->naux = (flags & SF_FLAG_TIME ? 1 : 0) + p->info.has_lines;
    uint32_t nc = p->info.ncols;
    if (nc == 0 || nc > SF_PACK_MAX_COLS) {
        rc = CORRUPT("%s: byte 16: %u columns; expected 1 to %u", nm, nc, SF_PACK_MAX_COLS);
        goto out;
    }
    if (p->info.chunk_rows == 0 || (uint64_t)p->info.chunk_rows * nc * 4 > SF_MAX_CHUNK_RAW) {
        rc = CORRUPT("%s: byte 20: chunk of %u rows x %u columns is out of range", nm, p->info.chunk_rows, nc);
        goto out;
    }
    if (p->info.filter >= SF_FILTER_COUNT) {
        rc = CORRUPT("%s: byte 24: unknown filter %u", nm, p->info.filter);
        goto out;
    }
    p->col_names = calloc(nc, sizeof *p->col_names);
    if (!p->col_names) {
        rc = sf_err_set(e, SF_ENOMEM, "%s: out of memory", nm);
        goto out;
    }
    size_t pos = SF_HEADER_FIXED;
    for (uint32_t c = 0; c < nc; c++) {
        p->col_names[c] = take_name(h, hsize - 4, &pos);
        if (!p->col_names[c] || !p->col_names[c][0]) {
            rc = CORRUPT("%s: header byte %zu: column %u's name is empty or runs past the header", nm, pos, c + 1);
            goto out;
        }
    }
    p->series_column = take_name(h, hsize - 4, &pos);
    if (!p->series_column) {
        rc = CORRUPT("%s: header byte %zu: the series column's name runs past the header", nm, pos);
        goto out;
    }
    if (flags & SF_FLAG_TIME) {
        p->time_column = take_name(h, hsize - 4, &pos);
        uint32_t kind = pos + 4 <= hsize - 4 ? sf_get_u32(h + pos) : 0;
        if (!p->time_column || !p->time_column[0] || kind <= SF_TIME_NONE || kind > SF_TIME_EPOCH_NS) {
            rc = CORRUPT("%s: header byte %zu: the time column's name or kind is missing or unknown", nm, pos);
            goto out;
        }
        p->info.time_kind = (enum sf_time_kind)kind;
        pos += 4;
    }
    if (flags & SF_FLAG_CATEGORIES) {
        uint32_t n = pos + 4 <= hsize - 4 ? sf_get_u32(h + pos) : 0;
        if (n == 0 || n > nc || (uint64_t)pos + 4 + 4ull * n > hsize - 4) {
            rc = CORRUPT("%s: header byte %zu: the list of categorical columns is empty or runs past the header", nm,
                         pos);
            goto out;
        }
        if (!(p->categories = calloc(n, sizeof *p->categories))) {
            rc = sf_err_set(e, SF_ENOMEM, "%s: out of memory", nm);
            goto out;
        }
        for (uint32_t k = 0; k < n; k++) {
            uint32_t col = sf_get_u32(h + pos + 4 + 4 * k);
            if (col >= nc || (k && col <= p->categories[k - 1].column)) {
                rc = CORRUPT("%s: header byte %zu: categorical column %u is out of range or out of order", nm,
                             pos + 4 + 4 * k, col);
                goto out;
            }
            p->categories[k].column = col;
        }
        p->info.ncategories = n;
        pos += 4 + 4 * (size_t)n;
    }
    if (pos != hsize - 4) {
        rc = CORRUPT("%s: header byte %zu: %zu unexpected bytes before the header's checksum", nm, pos,
                     (size_t)(hsize - 4 - pos));
        goto out;
    }
    if ((p->naux || p->has_imputed) &&
        sf_chunk_raw_bytes(p->info.chunk_rows, nc, p->naux, p->has_imputed) > SF_MAX_CHUNK_RAW) {
        rc = CORRUPT("%s: byte 20: chunk of %u rows x %u columns and times, lines or imputed flags is out of range", nm,
                     p->info.chunk_rows, nc);
        goto out;
    }
    p->info.col_names = (const char *const *)p->col_names;
    p->info.series_column = p->series_column;
    p->info.time_column = p->time_column ? p->time_column : "";
out:
    free(h);
    return rc;
}

static double get_f64(const uint8_t *b) {
    uint64_t u = sf_get_u64(b);
    double d;
    memcpy(&d, &u, 8);
    return d;
}

static int parse_trailer(sf_pack *p, sf_err *e) {
    const char *nm = p->name;
    sf_pack_info *in = &p->info;
    uint8_t f[SF_FOOTER_SIZE];
    uint64_t foot = in->file_size - SF_FOOTER_SIZE;
    int rc = read_at(p->fd, f, sizeof f, foot);
    if (rc) return sf_err_errno(e, SF_EIO, -rc, "%s: cannot read the footer", nm);
    if (memcmp(f + 24, SF_MAGIC_FOOTER, 8) != 0)
        return CORRUPT("%s: footer (byte %llu): magic missing; the file is truncated or not an .sfpack", nm,
                       (unsigned long long)foot);
    uint32_t crc = sf_get_u32(f + 20), want = sf_crc32c(0, f, 20);
    if (crc != want)
        return CORRUPT("%s: footer (byte %llu): checksum mismatch (stored %08x, computed %08x)", nm,
                       (unsigned long long)foot, crc, want);
    if (sf_get_u32(f + 16) != p->info.version)
        return CORRUPT("%s: footer (byte %llu): format version %u, the header says %u", nm,
                       (unsigned long long)(foot + 16), sf_get_u32(f + 16), p->info.version);
    uint64_t toff = sf_get_u64(f), tsize = sf_get_u64(f + 8);
    if (toff < in->data_offset || tsize < SF_TRAILER_FIXED + 4 || toff > foot || tsize != foot - toff)
        return CORRUPT("%s: footer (byte %llu): trailer at %llu of %llu bytes does not end at the footer", nm,
                       (unsigned long long)foot, (unsigned long long)toff, (unsigned long long)tsize);
    in->trailer_offset = toff;
    uint8_t *t = malloc(tsize);
    if (!t) return sf_err_set(e, SF_ENOMEM, "%s: out of memory for a %llu-byte trailer", nm, (unsigned long long)tsize);
    if ((rc = read_at(p->fd, t, tsize, toff))) {
        rc = sf_err_errno(e, SF_EIO, -rc, "%s: cannot read the trailer", nm);
        goto out;
    }
    crc = sf_get_u32(t + tsize - 4);
    want = sf_crc32c(0, t, tsize - 4);
    if (crc != want) {
        rc = CORRUPT("%s: trailer (bytes %llu-%llu): checksum mismatch (stored %08x, computed %08x)", nm,
                     (unsigned long long)toff, (unsigned long long)(foot - 1), crc, want);
        goto out;
    }
    in->fingerprint |= (uint64_t)crc << 32;
    if (memcmp(t, SF_MAGIC_TRAILER, 8) != 0) {
        rc = CORRUPT("%s: trailer (byte %llu): magic \"SFTRAIL\\n\" missing", nm, (unsigned long long)toff);
        goto out;
    }
    in->nrows = sf_get_u64(t + 8);
    in->nchunks = sf_get_u64(t + 16);
    in->nseries = sf_get_u64(t + 24);
    uint64_t body = tsize - 4 - SF_TRAILER_FIXED, nc = in->ncols;
    uint64_t need_chunks = in->nrows / in->chunk_rows + (in->nrows % in->chunk_rows != 0);
    if (in->nrows == 0 || in->nchunks != need_chunks || in->nseries == 0 || in->nseries > in->nrows ||
        in->nchunks > body / SF_INDEX_ENTRY || in->nseries > body / (SF_SERIES_ENTRY + 2) ||
        nc * SF_STATS_SIZE + in->nchunks * SF_INDEX_ENTRY + in->nseries * (SF_SERIES_ENTRY + 2) > body) {
        rc = CORRUPT("%s: trailer (byte %llu): %llu rows, %llu chunks of %u rows and %llu series do not fit its %llu "
                     "bytes",
                     nm, (unsigned long long)toff, (unsigned long long)in->nrows, (unsigned long long)in->nchunks,
                     in->chunk_rows, (unsigned long long)in->nseries, (unsigned long long)tsize);
        goto out;
    }
    p->stats = malloc(nc * sizeof *p->stats);
    p->chunk_offset = malloc(in->nchunks * sizeof *p->chunk_offset);
    p->chunk_size = malloc(in->nchunks * sizeof *p->chunk_size);
    p->chunk_crc = malloc(in->nchunks * sizeof *p->chunk_crc);
    p->series = malloc(in->nseries * sizeof *p->series);
    p->series_names = malloc(body);  // names take fewer bytes than the trailer
    if (!p->stats || !p->chunk_offset || !p->chunk_size || !p->chunk_crc || !p->series || !p->series_names) {
        rc = sf_err_set(e, SF_ENOMEM, "%s: out of memory for the index", nm);
        goto out;
    }
    const uint8_t *q = t + SF_TRAILER_FIXED;
    for (uint32_t c = 0; c < nc; c++, q += SF_STATS_SIZE) {
        sf_col_stats s = {get_f64(q), get_f64(q + 8), get_f64(q + 16), get_f64(q + 24)};
        if (!(s.min <= s.max) || !isfinite(s.min) || !isfinite(s.max) || !isfinite(s.mean) || !(s.std >= 0) ||
            !isfinite(s.std)) {
            rc = CORRUPT("%s: trailer (byte %llu): statistics of column \"%s\" are inconsistent", nm,
                         (unsigned long long)(toff + (uint64_t)(q - t)), p->col_names[c]);
            goto out;
        }
        p->stats[c] = s;
    }
    uint64_t prev_end = in->data_offset;
    size_t zbound = ZSTD_compressBound((size_t)sf_chunk_raw_bytes(in->chunk_rows, nc, p->naux, p->has_imputed));
    for (uint64_t i = 0; i < in->nchunks; i++, q += SF_INDEX_ENTRY) {
        uint64_t off = sf_get_u64(q);
        uint32_t size = sf_get_u32(q + 8);
        if (off % SF_PACK_ALIGN || off < prev_end || size == 0 || size > zbound || off > toff || size > toff - off) {
            rc = CORRUPT("%s: index entry of chunk %llu (trailer byte %llu): offset %llu / size %u must be %u-aligned, "
                         "after the previous chunk (%llu) and before the trailer (%llu)",
                         nm, (unsigned long long)i, (unsigned long long)(toff + (uint64_t)(q - t)),
                         (unsigned long long)off, size, SF_PACK_ALIGN, (unsigned long long)prev_end,
                         (unsigned long long)toff);
            goto out;
        }
        p->chunk_offset[i] = off;
        p->chunk_size[i] = size;
        p->chunk_crc[i] = sf_get_u32(q + 12);
        prev_end = off + size;
        if (size > p->max_stored) p->max_stored = size;
    }
    uint64_t row = 0;
    for (uint64_t i = 0; i < in->nseries; i++, q += SF_SERIES_ENTRY) {
        uint64_t first = sf_get_u64(q), rows = sf_get_u64(q + 8);
        if (first != row || rows == 0 || rows > in->nrows - row) {
            rc = CORRUPT("%s: series %llu (trailer byte %llu): rows %llu+%llu do not follow the previous series", nm,
                         (unsigned long long)i, (unsigned long long)(toff + (uint64_t)(q - t)),
                         (unsigned long long)first, (unsigned long long)rows);
            goto out;
        }
        p->series[i] = (sf_series){first, rows, NULL};
        row += rows;
    }
    if (row != in->nrows) {
        rc = CORRUPT("%s: trailer: series cover %llu rows, the file has %llu", nm, (unsigned long long)row,
                     (unsigned long long)in->nrows);
        goto out;
    }
    size_t pos = (size_t)(q - t), end = tsize - 4, out_pos = 0;
    for (uint64_t i = 0; i < in->nseries; i++) {
        if (end - pos < 2 || end - pos - 2 < sf_get_u16(t + pos)) {
            rc = CORRUPT("%s: trailer (byte %llu): name of series %llu runs past the trailer", nm,
                         (unsigned long long)(toff + pos), (unsigned long long)i);
            goto out;
        }
        size_t len = sf_get_u16(t + pos);
        // Placed here rather than found again with strlen: a name may hold a NUL.
        p->series[i].name = p->series_names + out_pos;
        memcpy(p->series_names + out_pos, t + pos + 2, len);
        p->series_names[out_pos + len] = 0;
        pos += 2 + len;
        out_pos += len + 1;
    }
    if (p->time_column) {
        uint64_t need = SF_TIME_FIXED + in->nseries * 16 + in->nchunks * 8;
        p->series_times = malloc(in->nseries * 16);
        p->chunk_steps = malloc(in->nchunks * 8);
        if (!p->series_times || !p->chunk_steps) {
            rc = sf_err_set(e, SF_ENOMEM, "%s: out of memory", nm);
            goto out;
        }
        if (end - pos < need) {
            rc = CORRUPT("%s: trailer (byte %llu): the time column's summary runs past the trailer", nm,
                         (unsigned long long)(toff + pos));
            goto out;
        }
        in->time_step = (int64_t)sf_get_u64(t + pos);
        in->time_gaps = sf_get_u64(t + pos + 8);
        in->time_parts = sf_get_u32(t + pos + 16);
        if (in->time_step < 0 || sf_get_u32(t + pos + 20)) {
            rc = CORRUPT("%s: trailer (byte %llu): the time column's step is negative or its reserved field is not 0",
                         nm, (unsigned long long)(toff + pos));
            goto out;
        }
        // Bits 0-5 (pack.h's SF_TIME_*), at most 6 digits of fraction: more
        // would print times 10x off.
        if (in->time_parts >> 6 || (in->time_parts >> SF_TIME_FRACTION_SHIFT & 7) > 6) {
            rc = CORRUPT("%s: trailer (byte %llu): the time column's parts are %#x, beyond what a pack writes", nm,
                         (unsigned long long)(toff + pos + 16), in->time_parts);
            goto out;
        }
        pos += SF_TIME_FIXED;
        for (uint64_t i = 0; i < in->nseries; i++, pos += 16) {
            p->series_times[2 * i] = (int64_t)sf_get_u64(t + pos);
            p->series_times[2 * i + 1] = (int64_t)sf_get_u64(t + pos + 8);
            if (p->series_times[2 * i] > p->series_times[2 * i + 1]) {
                rc = CORRUPT("%s: trailer (byte %llu): series %llu ends before it starts", nm,
                             (unsigned long long)(toff + pos), (unsigned long long)i);
                goto out;
            }
        }
        for (uint64_t i = 0; i < in->nchunks; i++, pos += 8) p->chunk_steps[i] = (int64_t)sf_get_u64(t + pos);
        in->series_times = p->series_times;
    }
    for (uint32_t k = 0; k < in->ncategories; k++) {
        uint32_t n = end - pos >= 4 ? sf_get_u32(t + pos) : 0;
        if (n == 0 || n > SF_PACK_MAX_CATEGORY) {
            rc = CORRUPT("%s: trailer (byte %llu): categorical column %u has %u values (1 to %u)", nm,
                         (unsigned long long)(toff + pos), p->categories[k].column, n, SF_PACK_MAX_CATEGORY);
            goto out;
        }
        pos += 4;
        char **v = realloc(p->category_text, (p->ncategory_text + n) * sizeof *v);
        if (!v) {
            rc = sf_err_set(e, SF_ENOMEM, "%s: out of memory", nm);
            goto out;
        }
        p->category_text = v;
        p->categories[k].nvalues = n;
        for (uint32_t i = 0; i < n; i++) {
            char *s = take_name(t, end, &pos);
            if (!s) {
                rc = CORRUPT("%s: trailer (byte %llu): a value of categorical column %u runs past the trailer", nm,
                             (unsigned long long)(toff + pos), p->categories[k].column);
                goto out;
            }
            v[p->ncategory_text++] = s;
        }
    }
    for (uint64_t k = 0, at = 0; k < in->ncategories; at += p->categories[k++].nvalues)
        p->categories[k].values = (const char *const *)p->category_text + at;
    in->categories = p->categories;
    if (p->has_imputed) {
        if (end - pos < nc * 8 || !(p->imputed = malloc(nc * 8))) {
            rc = end - pos < nc * 8 ? CORRUPT("%s: trailer (byte %llu): the counts of imputed values run past the "
                                              "trailer", nm, (unsigned long long)(toff + pos))
                                    : sf_err_set(e, SF_ENOMEM, "%s: out of memory", nm);
            goto out;
        }
        for (uint32_t c = 0; c < nc; c++, pos += 8)
            if ((p->imputed[c] = sf_get_u64(t + pos)) > in->nrows) {
                rc = CORRUPT("%s: trailer (byte %llu): %llu imputed values in column \"%s\" of %llu rows", nm,
                             (unsigned long long)(toff + pos), (unsigned long long)p->imputed[c], p->col_names[c],
                             (unsigned long long)in->nrows);
                goto out;
            }
        in->imputed = p->imputed;
    }
    if (in->nsources) {  // the flag: the count and the names
        uint32_t n = end - pos >= 4 ? sf_get_u32(t + pos) : 0;
        if (n == 0 || n > SF_MAX_SOURCES || (end - pos - 4) / 2 < n) {
            rc = CORRUPT("%s: trailer (byte %llu): %u sources; expected 1 to %u, their names in the trailer", nm,
                         (unsigned long long)(toff + pos), n, SF_MAX_SOURCES);
            goto out;
        }
        pos += 4;
        if (!(p->sources = calloc(n, sizeof *p->sources))) {
            rc = sf_err_set(e, SF_ENOMEM, "%s: out of memory", nm);
            goto out;
        }
        in->nsources = n;
        for (uint32_t i = 0; i < n; i++)
            if (!(p->sources[i] = take_name(t, end, &pos))) {
                rc = CORRUPT("%s: trailer (byte %llu): source %u's name runs past the trailer", nm,
                             (unsigned long long)(toff + pos), i);
                goto out;
            }
        in->sources = (const char *const *)p->sources;
    }
    if (pos != end) {
        rc = CORRUPT("%s: trailer (byte %llu): %zu unexpected bytes after the series %s", nm,
                     (unsigned long long)(toff + pos), end - pos, p->time_column ? "times" : "names");
        goto out;
    }
    in->stats = p->stats;
    in->series = p->series;
out:
    free(t);
    return rc;
}

int sf_pack_open_fd(sf_pack **out, int fd, const char *name, sf_err *e) {
    *out = NULL;
    sf_pack *p = calloc(1, sizeof *p);
    if (!p) return sf_err_set(e, SF_ENOMEM, "out of memory");
    p->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    p->name = strdup(name);
    if (p->fd < 0 || !p->name) {
        int err = errno;
        sf_pack_close(p);
        return sf_err_errno(e, SF_EIO, err, "%s: cannot open", name);
    }
    struct stat st;
    if (fstat(p->fd, &st) != 0) {
        int err = errno;
        sf_pack_close(p);
        return sf_err_errno(e, SF_EIO, err, "%s: cannot stat", name);
    }
    if (!S_ISREG(st.st_mode)) {
        sf_pack_close(p);
        return sf_err_set(e, SF_EINVAL, "%s: not a regular file", name);
    }
    p->info.file_size = (uint64_t)st.st_size;
    int rc = parse_header(p, e);
    if (!rc) rc = parse_trailer(p, e);
    if (rc) {
        sf_pack_close(p);
        return rc;
    }
    *out = p;
    return 0;
}

int sf_pack_open(sf_pack **out, const char *path, sf_err *e) {
    *out = NULL;
    int fd = sf_open_file(path, "an .sfpack file", e);
    if (fd < 0) return fd;
    int rc = sf_pack_open_fd(out, fd, path, e);
    close(fd);
    return rc;
}

const sf_pack_info *sf_pack_get_info(const sf_pack *p) { return &p->info; }

const sf_category *sf_pack_category(const sf_pack_info *in, uint32_t c) {
    for (uint32_t k = 0; k < in->ncategories; k++)
        if (in->categories[k].column == c) return &in->categories[k];
    return NULL;
}
const char *sf_pack_name(const sf_pack *p) { return p->name; }
int sf_pack_fd(const sf_pack *p) { return p->fd; }
size_t sf_pack_max_stored_size(const sf_pack *p) { return p->max_stored; }

uint64_t sf_pack_chunk_span_end(const sf_pack *p, uint64_t i) {
    if (i + 1 < p->info.nchunks) return p->chunk_offset[i + 1];
    uint64_t end = sf_align_up(p->chunk_offset[i] + p->chunk_size[i], SF_PACK_ALIGN);
    return end < p->info.file_size ? end : p->info.file_size;
}

sf_chunk sf_pack_chunk_locate(const sf_pack *p, uint64_t i) {
    uint64_t first = i * p->info.chunk_rows, left = p->info.nrows - first;
    return (sf_chunk){p->chunk_offset[i], p->chunk_size[i], p->chunk_crc[i], first,
                      (uint32_t)(left < p->info.chunk_rows ? left : p->info.chunk_rows)};
}

size_t sf_pack_chunk_raw_size(const sf_pack *p, uint64_t i) {
    return (size_t)sf_pack_chunk_locate(p, i).rows * p->info.ncols * 4;
}

int sf_pack_chunk_read(const sf_pack *p, uint64_t i, void *buf, sf_err *e) {
    if (i >= p->info.nchunks)
        return sf_err_set(e, SF_EINVAL, "%s: no chunk %llu (the file has %llu)", p->name, (unsigned long long)i,
                          (unsigned long long)p->info.nchunks);
    sf_chunk c = sf_pack_chunk_locate(p, i);
    int rc = read_at(p->fd, buf, c.stored_size, c.offset);
    if (rc == -ENODATA)
        return CORRUPT("%s: chunk %llu (byte %llu): file ends inside the chunk", p->name, (unsigned long long)i,
                       (unsigned long long)c.offset);
    if (rc) return sf_err_errno(e, SF_EIO, -rc, "%s: chunk %llu (byte %llu): read failed", p->name,
                                (unsigned long long)i, (unsigned long long)c.offset);
    return 0;
}

sf_pack_dctx *sf_pack_dctx_create(void) {
    sf_pack_dctx *d = calloc(1, sizeof *d);
    if (d && !(d->z = ZSTD_createDCtx())) {
        free(d);
        d = NULL;
    }
    return d;
}

void sf_pack_dctx_free(sf_pack_dctx *d) {
    if (!d) return;
    ZSTD_freeDCtx(d->z);
    free(d->buf);
    free(d);
}

int sf_pack_chunk_decode(sf_pack_dctx *d, const sf_pack *p, uint64_t i, const void *stored, float *out, sf_err *e) {
    return sf_pack_chunk_decode_all(d, p, i, stored, out, NULL, NULL, e);
}

int64_t sf_pack_chunk_max_step(const sf_pack *p, uint64_t i) {
    return p->chunk_steps && i < p->info.nchunks ? p->chunk_steps[i] : 0;
}

// The running sum of zigzag deltas aux_encode wrote (pack/writer.c).
static void aux_decode(int64_t *out, const uint8_t *in, size_t rows) {
    uint64_t v = 0;
    for (size_t r = 0; r < rows; r++) {
        uint64_t z = sf_get_u64(in + 8 * r);
        v += z >> 1 ^ (uint64_t)-(int64_t)(z & 1);
        out[r] = (int64_t)v;
    }
}

int sf_pack_chunk_decode_all(sf_pack_dctx *d, const sf_pack *p, uint64_t i, const void *stored, float *out,
                             int64_t *time, int64_t *line, sf_err *e) {
    return sf_pack_chunk_decode_imputed(d, p, i, stored, out, time, line, NULL, e);
}

int sf_pack_chunk_decode_imputed(sf_pack_dctx *d, const sf_pack *p, uint64_t i, const void *stored, float *out,
                                 int64_t *time, int64_t *line, uint8_t *imputed, sf_err *e) {
    if ((time && !p->time_column) || (line && !p->info.has_lines))
        return sf_err_set(e, SF_EINVAL, "%s: the file has no %s", p->name, time && !p->time_column ? "time column"
                                                                                                  : "CSV lines");
    if (i >= p->info.nchunks)
        return sf_err_set(e, SF_EINVAL, "%s: no chunk %llu (the file has %llu)", p->name, (unsigned long long)i,
                          (unsigned long long)p->info.nchunks);
    sf_chunk c = sf_pack_chunk_locate(p, i);
    uint32_t crc = sf_crc32c(0, stored, c.stored_size);
    if (crc != c.crc)
        return CORRUPT("%s: chunk %llu (byte %llu): checksum mismatch (index says %08x, data gives %08x)", p->name,
                       (unsigned long long)i, (unsigned long long)c.offset, c.crc, crc);
    size_t floats = (size_t)c.rows * p->info.ncols * 4, aux = floats + (size_t)c.rows * p->naux * 8;
    size_t raw = (size_t)sf_chunk_raw_bytes(c.rows, p->info.ncols, p->naux, p->has_imputed);
    if (d->cap < raw) {
        uint8_t *b = realloc(d->buf, raw);
        if (!b) return sf_err_set(e, SF_ENOMEM, "%s: out of memory decoding chunk %llu", p->name, (unsigned long long)i);
        d->buf = b;
        d->cap = raw;
    }
    size_t r = ZSTD_decompressDCtx(d->z, d->buf, raw, stored, c.stored_size);
    if (ZSTD_isError(r) || r != raw)
        return CORRUPT("%s: chunk %llu (byte %llu): zstd data does not decode to %zu bytes (%s)", p->name,
                       (unsigned long long)i, (unsigned long long)c.offset, raw,
                       ZSTD_isError(r) ? ZSTD_getErrorName(r) : "wrong size");
    if (out) sf_filter_decode(out, d->buf, p->info.ncols, c.rows, (int)p->info.filter);
    if (time) aux_decode(time, d->buf + floats, c.rows);
    if (line) aux_decode(line, d->buf + floats + (p->time_column ? (size_t)c.rows * 8 : 0), c.rows);
    size_t nv = (size_t)c.rows * p->info.ncols;
    // The bits past the last value are 0: anything else is not what pack wrote.
    if (p->has_imputed && nv % 8 && d->buf[raw - 1] >> (nv % 8))
        return CORRUPT("%s: chunk %llu (byte %llu): the imputed flags' padding bits are not 0", p->name,
                       (unsigned long long)i, (unsigned long long)c.offset);
    if (imputed && !p->has_imputed) memset(imputed, 0, nv);
    for (size_t k = 0; imputed && p->has_imputed && k < nv; k++) imputed[k] = (d->buf[aux + k / 8] >> (k % 8)) & 1;
    return 0;
}

int sf_pack_segments(const sf_pack *p, int64_t max_step, sf_series **out, uint64_t *n, sf_err *e) {
    const sf_pack_info *in = &p->info;
    uint64_t cap = in->nseries, k = 0;
    sf_series *seg = malloc(cap * sizeof *seg);
    size_t rows = in->chunk_rows < in->nrows ? in->chunk_rows : (size_t)in->nrows;
    int64_t *time = NULL, last_of_prev = 0;  // the last time of chunk i - 1, when decoded
    void *stored = NULL;
    sf_pack_dctx *d = NULL;
    uint64_t prev_decoded = UINT64_MAX, s = 0;
    int rc = seg ? 0 : sf_err_set(e, SF_ENOMEM, "%s: out of memory", p->name);
    for (uint64_t i = 0; i < in->nseries && !rc; i++) seg[k++] = in->series[i];
    for (uint64_t c = 0; p->chunk_steps && !rc && c < in->nchunks; c++) {
        if (p->chunk_steps[c] <= max_step) continue;
        if (!time && (!(time = malloc(rows * 8)) || !(stored = malloc(p->max_stored)) ||
                      !(d = sf_pack_dctx_create()))) {
            rc = sf_err_set(e, SF_ENOMEM, "%s: out of memory", p->name);
            break;
        }
        sf_chunk ch = sf_pack_chunk_locate(p, c);
        // The step into the chunk's first row needs the row before it.
        if (c > 0 && prev_decoded != c - 1) {
            sf_chunk pc = sf_pack_chunk_locate(p, c - 1);
            if ((rc = sf_pack_chunk_read(p, c - 1, stored, e)) ||
                (rc = sf_pack_chunk_decode_all(d, p, c - 1, stored, NULL, time, NULL, e)))
                break;
            last_of_prev = time[pc.rows - 1];
        }
        if ((rc = sf_pack_chunk_read(p, c, stored, e)) || (rc = sf_pack_chunk_decode_all(d, p, c, stored, NULL, time, NULL, e)))
            break;
        prev_decoded = c;
        for (uint32_t r = 0; r < ch.rows; r++) {
            uint64_t row = ch.first_row + r;
            while (s + 1 < in->nseries && in->series[s + 1].first_row <= row) s++;
            int64_t before = r ? time[r - 1] : last_of_prev;
            if (row == in->series[s].first_row || sf_time_diff(before, time[r]) <= max_step) continue;
            if (k == cap) {
                sf_series *g = realloc(seg, 2 * cap * sizeof *seg);
                if (!g) {
                    rc = sf_err_set(e, SF_ENOMEM, "%s: out of memory for the segments", p->name);
                    break;
                }
                seg = g, cap *= 2;
            }
            seg[k++] = (sf_series){row, 0, in->series[s].name};  // a cut: sorted into place below
        }
        last_of_prev = time[ch.rows - 1];
    }
    free(time), free(stored);
    sf_pack_dctx_free(d);
    if (rc) {
        free(seg);
        return rc;
    }
    // The series and the cuts (both in row order) merged; each runs to the next.
    sf_series *all = malloc(k * sizeof *all);
    if (!all) {
        free(seg);
        return sf_err_set(e, SF_ENOMEM, "%s: out of memory for the segments", p->name);
    }
    for (uint64_t a = 0, b = in->nseries, j = 0; j < k; j++)
        all[j] = b == k || (a < in->nseries && seg[a].first_row < seg[b].first_row) ? seg[a++] : seg[b++];
    for (uint64_t i = 0; i < k; i++) all[i].rows = (i + 1 < k ? all[i + 1].first_row : in->nrows) - all[i].first_row;
    free(seg);
    *out = all, *n = k;
    return 0;
}

// Range k's rows into group[k]'s statistics (group NULL: one group).
static int stats_of(const sf_pack *p, const sf_series *ranges, const uint64_t *group, uint64_t n, uint64_t ngroups,
                    sf_col_stats *out, sf_err *e) {
    const sf_pack_info *in = &p->info;
    size_t rows = in->chunk_rows < in->nrows ? in->chunk_rows : (size_t)in->nrows;
    sf_moments *acc = calloc(ngroups * in->ncols, sizeof *acc);
    float *vals = malloc(rows * in->ncols * sizeof *vals + 1);
    void *stored = malloc(p->max_stored + 1);
    sf_pack_dctx *d = sf_pack_dctx_create();
    int rc = acc && vals && stored && d ? 0 : sf_err_set(e, SF_ENOMEM, "%s: out of memory", p->name);
    uint64_t decoded = UINT64_MAX;
    for (uint64_t k = 0; !rc && k < n; k++) {
        uint64_t lo = ranges[k].first_row, hi = lo + ranges[k].rows;
        if (hi > in->nrows || hi < lo || (k && lo < ranges[k - 1].first_row + ranges[k - 1].rows)) {
            rc = sf_err_set(e, SF_EINVAL, "%s: rows %llu+%llu are not a range after the one before", p->name,
                            (unsigned long long)lo, (unsigned long long)ranges[k].rows);
            break;
        }
        while (!rc && lo < hi) {
            uint64_t c = lo / in->chunk_rows;
            sf_chunk ch = sf_pack_chunk_locate(p, c);
            if (c != decoded && !(rc = sf_pack_chunk_read(p, c, stored, e)))
                rc = sf_pack_chunk_decode(d, p, c, stored, vals, e);
            if (rc) break;
            decoded = c;
            uint64_t end = hi < ch.first_row + ch.rows ? hi : ch.first_row + ch.rows;
            sf_moments *a = acc + (group ? group[k] : 0) * in->ncols;
            for (uint32_t col = 0; col < in->ncols; col++) {
                sf_moments m;
                sf_moments_of(&m, vals + (size_t)col * ch.rows + (lo - ch.first_row), (size_t)(end - lo));
                sf_moments_merge(&a[col], &m);
            }
            lo = end;
        }
    }
    for (uint64_t c = 0; !rc && c < ngroups * in->ncols; c++) sf_moments_finish(&out[c], &acc[c]);
    free(acc), free(vals), free(stored);
    sf_pack_dctx_free(d);
    return rc;
}

int sf_pack_stats_of_rows(const sf_pack *p, const sf_series *ranges, uint64_t n, sf_col_stats *out, sf_err *e) {
    return stats_of(p, ranges, NULL, n, 1, out, e);
}

int sf_pack_stats_of_groups(const sf_pack *p, const sf_series *ranges, const uint64_t *group, uint64_t n,
                            uint64_t ngroups, sf_col_stats *out, sf_err *e) {
    for (uint64_t k = 0; k < n; k++)
        if (group[k] >= ngroups)
            return sf_err_set(e, SF_EINVAL, "%s: range %llu's group %llu is not below %llu", p->name,
                              (unsigned long long)k, (unsigned long long)group[k], (unsigned long long)ngroups);
    return stats_of(p, ranges, group, n, ngroups, out, e);
}

// A row's origin in a file with sources: a listed source and a line of it
// (from 1), and within a series after the row before it (prev; INT64_MIN
// at a series' start): a series keeps its rows in the order of the files
// and of their lines.
static int verify_origin(const sf_pack *p, uint64_t chunk, uint64_t row, int64_t origin, int64_t prev, sf_err *e) {
    const sf_pack_info *in = &p->info;
    uint32_t src;
    uint64_t line;
    sf_origin_split(in, origin, &src, &line);
    if (origin < 0 || src >= in->nsources || line == 0)
        return CORRUPT("%s: chunk %llu: row %llu's origin %lld: source %u of %u, line %llu; expected a listed source "
                       "and a line from 1", p->name, (unsigned long long)chunk, (unsigned long long)row,
                       (long long)origin, src, in->nsources, (unsigned long long)line);
    if (origin <= prev) {
        uint32_t psrc;
        uint64_t pline;
        sf_origin_split(in, prev, &psrc, &pline);
        return CORRUPT("%s: chunk %llu: row %llu (%s line %llu) does not follow the row before it in its series "
                       "(%s line %llu)", p->name, (unsigned long long)chunk, (unsigned long long)row,
                       in->sources[src], (unsigned long long)line, in->sources[psrc], (unsigned long long)pline);
    }
    return 0;
}

int sf_pack_verify(const sf_pack *p, void (*progress)(void *arg, uint64_t chunk), void *arg, sf_err *e) {
    const sf_pack_info *in = &p->info;
    size_t raw_max = (size_t)(in->chunk_rows < in->nrows ? in->chunk_rows : in->nrows) * in->ncols * 4;
    void *stored = malloc(p->max_stored ? p->max_stored : 1);
    float *vals = malloc(raw_max);
    sf_moments *acc = calloc(in->ncols, sizeof *acc);
    sf_pack_dctx *d = sf_pack_dctx_create();
    size_t rows_max = raw_max / (4 * in->ncols);
    int64_t *time = p->time_column ? malloc(rows_max * 8) : NULL, *line = in->has_lines ? malloc(rows_max * 8) : NULL;
    int64_t prev_time = 0, prev_line = 0;
    uint64_t series = 0;
    // The imputed flags, counted per column to check the trailer's counts.
    uint8_t *imp = p->has_imputed ? malloc(rows_max * in->ncols) : NULL;
    uint64_t *nimp = p->has_imputed ? calloc(in->ncols, sizeof *nimp) : NULL;
    int rc = 0;
    if (!stored || !vals || !acc || !d || (p->time_column && !time) || (in->has_lines && !line) ||
        (p->has_imputed && (!imp || !nimp))) {
        rc = sf_err_set(e, SF_ENOMEM, "%s: out of memory", p->name);
        goto out;
    }
    for (uint64_t i = 0; i < in->nchunks && !rc; i++) {
        rc = sf_pack_chunk_read(p, i, stored, e);
        if (!rc) rc = sf_pack_chunk_decode_imputed(d, p, i, stored, vals, time, line, imp, e);
        if (rc) break;
        sf_chunk c = sf_pack_chunk_locate(p, i);
        for (size_t k = 0; imp && k < (size_t)c.rows * in->ncols; k++) nimp[k / c.rows] += imp[k];
        // Times: non-decreasing in each series, the series' first and last
        // and each chunk's largest step as the trailer says. Lines: rising in
        // each series (pack regroups series whose rows interleave).
        int64_t most = 0;
        for (uint32_t r = 0; (time || line) && r < c.rows; r++) {
            uint64_t row = c.first_row + r;
            bool starts = row == in->series[series].first_row;
            if (row >= in->series[series].first_row + in->series[series].rows) series++, starts = true;
            if (line && in->nsources) {
                rc = verify_origin(p, i, row, line[r], starts ? INT64_MIN : prev_line, e);
            } else if (line && !starts && line[r] <= prev_line)
                rc = CORRUPT("%s: chunk %llu: row %llu's CSV line %lld does not follow line %lld, the row before it in "
                             "its series", p->name,
                             (unsigned long long)i, (unsigned long long)row, (long long)line[r], (long long)prev_line);
            if (time && !starts && time[r] < prev_time)
                rc = CORRUPT("%s: chunk %llu: row %llu's time goes back in its series", p->name,
                             (unsigned long long)i, (unsigned long long)row);
            if (time && !starts && sf_time_diff(prev_time, time[r]) > most) most = sf_time_diff(prev_time, time[r]);
            if (time && ((starts && time[r] != p->series_times[2 * series]) ||
                         (row + 1 == in->series[series].first_row + in->series[series].rows &&
                          time[r] != p->series_times[2 * series + 1])))
                rc = CORRUPT("%s: trailer: the first or last time of series %llu differs from its rows'", p->name,
                             (unsigned long long)series);
            if (rc) goto out;
            if (time) prev_time = time[r];
            if (line) prev_line = line[r];
        }
        if (time && most != p->chunk_steps[i]) {
            rc = CORRUPT("%s: trailer: chunk %llu's largest step is %lld, its rows' is %lld", p->name,
                         (unsigned long long)i, (long long)p->chunk_steps[i], (long long)most);
            goto out;
        }
        for (uint32_t col = 0; col < in->ncols; col++) {
            const float *x = vals + (size_t)col * c.rows;
            for (uint32_t r = 0; r < c.rows; r++)
                if (!isfinite(x[r])) {
                    rc = CORRUPT("%s: chunk %llu (byte %llu): row %llu of column \"%s\" is not finite", p->name,
                                 (unsigned long long)i, (unsigned long long)c.offset,
                                 (unsigned long long)(c.first_row + r), in->col_names[col]);
                    goto out;
                }
            const sf_category *cat = sf_pack_category(in, col);
            for (uint32_t r = 0; cat && r < c.rows; r++)
                if (!(x[r] >= 0 && x[r] < (float)cat->nvalues && x[r] == (float)(uint32_t)x[r])) {
                    rc = CORRUPT("%s: chunk %llu: row %llu of categorical column \"%s\" holds %g, not a code of its "
                                 "%u values", p->name, (unsigned long long)i, (unsigned long long)(c.first_row + r),
                                 in->col_names[col], x[r], cat->nvalues);
                    goto out;
                }
            sf_moments m;
            sf_moments_of(&m, x, c.rows);
            sf_moments_merge(&acc[col], &m);
        }
        if (progress) progress(arg, i);
    }
    for (uint32_t col = 0; col < in->ncols && !rc; col++) {
        sf_col_stats s;
        sf_moments_finish(&s, &acc[col]);
        const sf_col_stats *t = &in->stats[col];
        if (s.min != t->min || s.max != t->max || s.mean != t->mean || s.std != t->std)
            rc = CORRUPT("%s: trailer: statistics of column \"%s\" (min %.17g max %.17g mean %.17g std %.17g) differ "
                         "from the data (min %.17g max %.17g mean %.17g std %.17g)",
                         p->name, in->col_names[col], t->min, t->max, t->mean, t->std, s.min, s.max, s.mean, s.std);
    }
    for (uint32_t col = 0; nimp && col < in->ncols && !rc; col++)
        if (nimp[col] != in->imputed[col])
            rc = CORRUPT("%s: trailer: %llu imputed values in column \"%s\", the chunks flag %llu", p->name,
                         (unsigned long long)in->imputed[col], in->col_names[col], (unsigned long long)nimp[col]);
out:
    free(stored);
    free(vals);
    free(time);
    free(line);
    free(imp), free(nimp);
    free(acc);
    sf_pack_dctx_free(d);
    return rc;
}
