// A damaged .sfpack must be reported, never read as data, crash or hang:
// every byte the format protects is flipped in turn, the file is cut at
// many places, and fields are changed with their checksums recomputed so
// that only the reader's structural checks and sf_pack_verify stand between
// the damage and the caller.
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "pack/internal.h"
#include "pack/pack.h"
#include "tests/common.h"
#include "tests/format/packutil.h"

#define NCOLS 3
#define CHUNK_ROWS 50
#define NROWS 230  // five chunks, the last one partial

// The pristine file and where its parts are.
static unsigned char *orig;
static size_t orig_size;
static uint32_t hsize;
static uint64_t data_offset, toff, tsize, foot, nchunks;
static uint64_t chunk_off[8], chunk_size[8];
static uint64_t stats_at, index_at, series_at, names_at, tcrc_at;
static float *orig_values;
static char path[PATH_LEN];

static const char *const col_names[NCOLS] = {"alpha", "beta", "gamma"};

// Three series of 120, 1 and 109 rows: series and chunk boundaries cross.
static void write_sample(const char *out) {
    sf_pack_writer_opts o = {.ncols = NCOLS, .col_names = col_names, .series_column = "sid",
                             .chunk_rows = CHUNK_ROWS, .level = 3, .filter = SF_FILTER_DELTA_SHUFFLE};
    sf_pack_writer *w;
    sf_err e = {0};
    if (sf_pack_writer_open(&w, out, &o, &e)) {
        fprintf(stderr, "%s\n", e.msg);
        exit(1);
    }
    static const char *const series[] = {"s1", "series-two", "x"};
    static const int lens[] = {120, 1, 109};
    float row[NCOLS] = {1.5f, -20.0f, 1e-3f};
    int rc = 0;
    for (int s = 0; s < 3 && !rc; s++) {
        rc = sf_pack_writer_series(w, series[s], strlen(series[s]), &e);
        for (int r = 0; r < lens[s] && !rc; r++) {
            row[0] += 0.25f;
            row[1] -= (float)(r % 7) * 0.5f;
            row[2] *= 1.01f;
            rc = sf_pack_writer_rows(w, row, 1, &e);
        }
    }
    if (rc || sf_pack_writer_finish(w, &e)) {
        fprintf(stderr, "%s\n", e.msg);
        exit(1);
    }
}

static void load_layout(void) {
    sf_pack *p;
    sf_err e = {0};
    if (sf_pack_open(&p, path, &e)) {
        fprintf(stderr, "the pristine file: %s\n", e.msg);
        exit(1);
    }
    const sf_pack_info *in = sf_pack_get_info(p);
    orig = read_whole(path, &orig_size);
    orig_values = decode_all(p, &e);
    if (!orig || !orig_values || in->nchunks != 5 || in->nseries != 3) {
        fprintf(stderr, "the pristine file is not as expected\n");
        exit(1);
    }
    hsize = sf_get_u32(orig + 12);
    data_offset = in->data_offset;
    toff = in->trailer_offset;
    foot = orig_size - SF_FOOTER_SIZE;
    tsize = foot - toff;
    nchunks = in->nchunks;
    for (uint64_t i = 0; i < nchunks; i++) {
        sf_chunk c = sf_pack_chunk_locate(p, i);
        chunk_off[i] = c.offset;
        chunk_size[i] = c.stored_size;
    }
    stats_at = toff + SF_TRAILER_FIXED;
    index_at = stats_at + NCOLS * SF_STATS_SIZE;
    series_at = index_at + nchunks * SF_INDEX_ENTRY;
    names_at = series_at + in->nseries * SF_SERIES_ENTRY;
    tcrc_at = toff + tsize - 4;
    sf_pack_close(p);
}

// What byte pos of the file is; NULL for padding, which nothing protects.
static const char *region_of(uint64_t pos, int *chunk) {
    *chunk = -1;
    if (pos < SF_HEADER_FIXED) return "header fields";
    if (pos < hsize - 4) return "column names";
    if (pos < hsize) return "header checksum";
    for (uint64_t i = 0; i < nchunks; i++)
        if (pos >= chunk_off[i] && pos < chunk_off[i] + chunk_size[i]) {
            *chunk = (int)i;
            return "chunk";
        }
    if (pos < toff) return NULL;
    if (pos < stats_at) return "trailer fields";
    if (pos < index_at) return "statistics";
    if (pos < series_at) return "chunk index";
    if (pos < names_at) return "series table";
    if (pos < tcrc_at) return "series names";
    if (pos < foot) return "trailer checksum";
    if (pos < foot + 20) return "footer fields";
    if (pos < foot + 24) return "footer checksum";
    return "footer magic";
}

static void save(const unsigned char *buf, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(buf, 1, n, f) != n || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
}

// Opens the file as it is on disk and verifies it. Returns 0 when both pass,
// else the error, with the message in e.
static int open_and_verify(sf_err *e) {
    sf_pack *p;
    int rc = sf_pack_open(&p, path, e);
    if (rc) return rc;
    rc = sf_pack_verify(p, NULL, NULL, e);
    sf_pack_close(p);
    return rc;
}

// The damaged file must be refused as corrupt, by a message that names it.
static void expect_corrupt(const char *what, int rc, const sf_err *e) {
    CHECK(rc == SF_ECORRUPT && strstr(e->msg, path), "%s: rc %d (%s), message \"%s\"", what, rc, sf_err_name(rc),
          rc ? e->msg : "");
}

// Chunk i's damage: verify names the chunk and its offset, the chunk
// itself does not decode, and every other chunk still does.
static void expect_chunk_error(const char *what, int i, int rc, const sf_err *e) {
    char name[64], at[64];
    snprintf(name, sizeof name, "chunk %d ", i);
    snprintf(at, sizeof at, "byte %llu", (unsigned long long)chunk_off[i]);
    expect_corrupt(what, rc, e);
    CHECK(strstr(e->msg, name) && strstr(e->msg, at), "%s: \"%s\" should name %sand %s", what, e->msg, name, at);
    sf_pack *p;
    sf_err e2 = {0};
    if (sf_pack_open(&p, path, &e2)) return;
    void *stored = malloc(sf_pack_max_stored_size(p));
    float *out = malloc((size_t)CHUNK_ROWS * NCOLS * sizeof *out);
    sf_pack_dctx *d = sf_pack_dctx_create();
    for (uint64_t k = 0; k < nchunks; k++) {
        int r = sf_pack_chunk_read(p, k, stored, &e2);
        if (!r) r = sf_pack_chunk_decode(d, p, k, stored, out, &e2);
        if ((int)k == i) CHECK(r == SF_ECORRUPT, "%s: chunk %d decodes (%d)", what, i, r);
        else CHECK(r == 0, "%s: undamaged chunk %llu fails: %s", what, (unsigned long long)k, e2.msg);
    }
    sf_pack_dctx_free(d);
    free(stored);
    free(out);
    sf_pack_close(p);
}

// Every protected byte flipped, one at a time, with a few different masks.
static void test_flips(void) {
    unsigned char *buf = malloc(orig_size);
    static const unsigned char masks[] = {0x01, 0x80, 0xff, 0x10, 0x42};
    int per_region[16] = {0};
    static const char *regions[16];
    for (uint64_t pos = 0; pos < orig_size; pos++) {
        int chunk;
        const char *region = region_of(pos, &chunk);
        if (!region) continue;
        int k = 0;
        while (regions[k] && regions[k] != region) k++;
        regions[k] = region;
        per_region[k]++;
        memcpy(buf, orig, orig_size);
        buf[pos] ^= masks[pos % sizeof masks];
        save(buf, orig_size);
        sf_err e = {0};
        int rc = open_and_verify(&e);
        char what[96];
        snprintf(what, sizeof what, "byte %llu (%s) flipped", (unsigned long long)pos, region);
        if (chunk >= 0) expect_chunk_error(what, chunk, rc, &e);
        else expect_corrupt(what, rc, &e);
        if (test_failures > 40) break;
    }
    int nregions = 0;
    for (; regions[nregions]; nregions++) printf("  %s: %d bytes flipped\n", regions[nregions], per_region[nregions]);
    CHECK(nregions == 13, "%d regions seen, expected 13", nregions);
    free(buf);
}

// Cut at the start, inside the header and its padding, inside chunks, in the
// trailer and the footer; also grown by stray bytes at the end.
static void test_truncation(void) {
    const uint64_t cuts[] = {0, 1, 10, 4095, 4096, 4097, chunk_off[0] + chunk_size[0] / 2, chunk_off[2],
                             chunk_off[4] + chunk_size[4] - 1, toff, toff + 40, tcrc_at, foot, foot + 16,
                             orig_size - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof *cuts; i++) {
        save(orig, cuts[i]);
        sf_err e = {0};
        char what[64];
        snprintf(what, sizeof what, "cut to %llu bytes", (unsigned long long)cuts[i]);
        expect_corrupt(what, open_and_verify(&e), &e);
    }
    unsigned char *buf = malloc(orig_size + 100);
    memcpy(buf, orig, orig_size);
    memset(buf + orig_size, 0, 100);
    save(buf, orig_size + 100);
    sf_err e = {0};
    expect_corrupt("100 zero bytes appended", open_and_verify(&e), &e);
    // The trailer and footer copied behind the file again: the footer is
    // intact but its trailer offset no longer leads to the end.
    memcpy(buf + orig_size, orig + foot, SF_FOOTER_SIZE);
    save(buf, orig_size + SF_FOOTER_SIZE);
    expect_corrupt("the footer twice", open_and_verify(&e), &e);
    free(buf);
}

// Things that are no .sfpack at all.
static void test_not_a_pack(const char *srcdir, const char *dir) {
    sf_pack *p;
    sf_err e = {0};
    char csv[PATH_LEN];
    snprintf(csv, sizeof csv, "%s/data/treasury-yields-daily.csv", srcdir);
    int rc = sf_pack_open(&p, csv, &e);
    CHECK(rc == SF_EUSAGE && strstr(e.msg, csv) && strstr(e.msg, "not an .sfpack file: pack it first"), "a CSV: %d \"%s\"",
          rc, e.msg);
    char small[PATH_LEN];
    path_in(small, dir, "small.csv");
    FILE *f = fopen(small, "w");
    fputs("a,b\n1,2\n", f);
    fclose(f);
    rc = sf_pack_open(&p, small, &e);
    CHECK(rc == SF_EUSAGE && strstr(e.msg, small) && strstr(e.msg, "pack it first"), "a small CSV: %d \"%s\"", rc,
          e.msg);
    unlink(small);
    rc = sf_pack_open(&p, dir, &e);
    CHECK(rc == SF_EUSAGE && strstr(e.msg, dir) && strstr(e.msg, "is a directory"), "a directory: %d \"%s\"", rc,
          e.msg);
    char missing[PATH_LEN];
    path_in(missing, dir, "missing.sfpack");
    rc = sf_pack_open(&p, missing, &e);
    CHECK(rc == SF_EIO && strstr(e.msg, missing) && strstr(e.msg, strerror(ENOENT)), "a missing file: %d \"%s\"", rc,
          e.msg);
    rc = sf_pack_open(&p, "/dev/null", &e);
    CHECK(rc == SF_EUSAGE && strstr(e.msg, "character device"), "/dev/null: %d \"%s\"", rc, e.msg);
    // The right size and all zeros: no magic.
    unsigned char *zeros = calloc(1, orig_size);
    save(zeros, orig_size);
    rc = sf_pack_open(&p, path, &e);
    CHECK(rc == SF_ECORRUPT && strstr(e.msg, "not an .sfpack"), "zeros: %d \"%s\"", rc, e.msg);
    free(zeros);
}

// ---- changes behind valid checksums ----

static void fix_header_crc(unsigned char *b) { sf_put_u32(b + hsize - 4, sf_crc32c(0, b, hsize - 4)); }
static void fix_trailer_crc(unsigned char *b) { sf_put_u32(b + tcrc_at, sf_crc32c(0, b + toff, tsize - 4)); }

static double get_f64(const unsigned char *b) {
    uint64_t u = sf_get_u64(b);
    double d;
    memcpy(&d, &u, 8);
    return d;
}

static void put_f64(unsigned char *b, double d) {
    uint64_t u;
    memcpy(&u, &d, 8);
    sf_put_u64(b, u);
}

// Statistics that are plausible (open accepts them) but not the data's:
// only sf_pack_verify's recomputation can tell.
static void test_altered_stats(void) {
    unsigned char *buf = malloc(orig_size);
    static const char *const field[] = {"min", "max", "mean", "std"};
    for (int c = 0; c < NCOLS; c++)
        for (int k = 0; k < 4; k++) {
            memcpy(buf, orig, orig_size);
            unsigned char *at = buf + stats_at + (uint64_t)c * SF_STATS_SIZE + 8 * k;
            double v = get_f64(at);
            // One double ulp: the smallest change there is. min goes down and
            // max up so that min <= max still holds.
            put_f64(at, nextafter(v, k == 0 ? -INFINITY : INFINITY));
            fix_trailer_crc(buf);
            save(buf, orig_size);
            sf_pack *p;
            sf_err e = {0};
            int rc = sf_pack_open(&p, path, &e);
            CHECK(rc == 0, "column %d %s + 1 ulp: open fails: %s", c, field[k], e.msg);
            if (rc) continue;
            rc = sf_pack_verify(p, NULL, NULL, &e);
            CHECK(rc == SF_ECORRUPT && strstr(e.msg, path) && strstr(e.msg, "statistics") &&
                      strstr(e.msg, col_names[c]),
                  "column %d %s + 1 ulp: verify %d \"%s\"", c, field[k], rc, e.msg);
            sf_pack_close(p);
        }
    free(buf);
}

// Chunk bytes changed and the index CRC (and the trailer's) recomputed: zstd
// or the size check must refuse the chunk, or the values it now decodes to
// must change the statistics. A change that decodes to the very same values
// (a bit zstd does not use) is harmless, and counted.
static void test_altered_chunks(void) {
    unsigned char *buf = malloc(orig_size);
    int caught = 0, harmless = 0, total = 0;
    for (uint64_t i = 0; i < nchunks; i++)
        for (uint64_t pos = chunk_off[i]; pos < chunk_off[i] + chunk_size[i]; pos++) {
            memcpy(buf, orig, orig_size);
            buf[pos] ^= (unsigned char)(1u << (pos % 8));
            sf_put_u32(buf + index_at + i * SF_INDEX_ENTRY + 12, sf_crc32c(0, buf + chunk_off[i], chunk_size[i]));
            fix_trailer_crc(buf);
            save(buf, orig_size);
            sf_pack *p;
            sf_err e = {0};
            int rc = sf_pack_open(&p, path, &e);
            CHECK(rc == 0, "chunk %llu byte %llu: open fails: %s", (unsigned long long)i,
                  (unsigned long long)(pos - chunk_off[i]), e.msg);
            if (rc) continue;
            total++;
            rc = sf_pack_verify(p, NULL, NULL, &e);
            if (rc) {
                char name[32];
                snprintf(name, sizeof name, "chunk %llu ", (unsigned long long)i);
                bool named = strstr(e.msg, name) || strstr(e.msg, "statistics");
                CHECK(rc == SF_ECORRUPT && strstr(e.msg, path) && named, "chunk %llu byte %llu: %d \"%s\"",
                      (unsigned long long)i, (unsigned long long)(pos - chunk_off[i]), rc, e.msg);
                caught++;
            } else {
                float *v = decode_all(p, &e);
                CHECK(v && memcmp(v, orig_values, NROWS * NCOLS * sizeof *v) == 0,
                      "chunk %llu byte %llu: verify passes but the values changed", (unsigned long long)i,
                      (unsigned long long)(pos - chunk_off[i]));
                harmless++;
                free(v);
            }
            sf_pack_close(p);
        }
    printf("  chunk bytes changed behind a valid CRC: %d caught, %d decode to the same values\n", caught, harmless);
    CHECK(caught >= total * 9 / 10, "only %d of %d caught", caught, total);
    free(buf);
}

// Fields with valid checksums whose values contradict the rest of the file.
static void test_inconsistent_fields(void) {
    unsigned char *buf = malloc(orig_size + 1);  // + 1: the stray byte case
    struct {
        const char *what, *msg;  // msg: what the error must say
        uint64_t at;
        int width;  // 4 or 8: a little-endian integer; 0: a double
        uint64_t value;
        double dvalue;
        int part;  // which checksum to fix: 'h'eader or 't'railer
    } cases[] = {
        {"filter 7", "unknown filter", 24, 4, 7, 0, 'h'},
        {"0 columns", "columns", 16, 4, 0, 0, 'h'},
        {"0 chunk rows", "chunk of", 20, 4, 0, 0, 'h'},
        {"header size 12", "header size", 12, 4, 12, 0, 'h'},
        {"version 2", "version", 8, 4, 2, 0, 'h'},
        {"flags set", "flags", 32, 4, 1, 0, 'h'},
        {"reserved set", "reserved", 36, 4, 0x100, 0, 'h'},
        {"0 rows", "rows", toff + 8, 8, 0, 0, 't'},
        {"one row more", "rows", toff + 8, 8, NROWS + 1, 0, 't'},
        {"6 chunks", "chunks", toff + 16, 8, 6, 0, 't'},
        {"0 series", "series", toff + 24, 8, 0, 0, 't'},
        {"min NaN", "statistics", stats_at, 0, 0, NAN, 't'},
        {"std -1", "statistics", stats_at + 24, 0, 0, -1, 't'},
        {"max below min", "statistics", stats_at + 8, 0, 0, -1e30, 't'},
        {"chunk 0 unaligned", "chunk 0", index_at, 8, data_offset + 8, 0, 't'},
        {"chunk 1 before chunk 0", "chunk 1", index_at + SF_INDEX_ENTRY, 8, data_offset, 0, 't'},
        {"chunk 4 past the trailer", "chunk 4", index_at + 4 * SF_INDEX_ENTRY + 8, 4, chunk_size[4] + 1, 0, 't'},
        {"chunk 2 empty", "chunk 2", index_at + 2 * SF_INDEX_ENTRY + 8, 4, 0, 0, 't'},
        {"series 1 starts late", "series 1", series_at + SF_SERIES_ENTRY, 8, 121, 0, 't'},
        {"series 2 one row short", "series", series_at + 2 * SF_SERIES_ENTRY + 8, 8, 108, 0, 't'},
        {"series 0 empty", "series 0", series_at + 8, 8, 0, 0, 't'},
        {"series name too long", "name of series", names_at, 2, 1000, 0, 't'},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        memcpy(buf, orig, orig_size);
        unsigned char *at = buf + cases[i].at;
        if (cases[i].width == 8) sf_put_u64(at, cases[i].value);
        else if (cases[i].width == 4) sf_put_u32(at, (uint32_t)cases[i].value);
        else if (cases[i].width == 2) sf_put_u16(at, (uint16_t)cases[i].value);
        else put_f64(at, cases[i].dvalue);
        if (cases[i].part == 'h') fix_header_crc(buf);
        else fix_trailer_crc(buf);
        save(buf, orig_size);
        // sf_pack_open promises to validate all of this itself, before any
        // chunk is read.
        sf_pack *p;
        sf_err e = {0};
        int rc = sf_pack_open(&p, path, &e);
        if (!rc) sf_pack_close(p);
        expect_corrupt(cases[i].what, rc, &e);
        CHECK(rc == 0 || strstr(e.msg, cases[i].msg), "%s: \"%s\" should say \"%s\"", cases[i].what, e.msg,
              cases[i].msg);
    }

    // Bytes between the last series name and the CRC: the trailer grows by
    // one byte, everything else stays consistent.
    memcpy(buf, orig, tcrc_at);
    buf[tcrc_at] = 0;
    sf_put_u32(buf + tcrc_at + 1, sf_crc32c(0, buf + toff, tsize - 3));
    memcpy(buf + tcrc_at + 5, orig + foot, SF_FOOTER_SIZE);
    sf_put_u64(buf + foot + 1 + 8, tsize + 1);
    sf_put_u32(buf + foot + 1 + 20, sf_crc32c(0, buf + foot + 1, 20));
    save(buf, orig_size + 1);
    sf_pack *p;
    sf_err e = {0};
    int rc = sf_pack_open(&p, path, &e);
    if (!rc) sf_pack_close(p);
    expect_corrupt("a stray byte after the series names", rc, &e);

    // The footer pointing at the wrong trailer, with its own CRC fixed.
    const int64_t shifts[] = {-1, 1, -(int64_t)SF_PACK_ALIGN, (int64_t)tsize};
    for (size_t i = 0; i < sizeof shifts / sizeof *shifts; i++) {
        memcpy(buf, orig, orig_size);
        sf_put_u64(buf + foot, toff + (uint64_t)shifts[i]);
        sf_put_u64(buf + foot + 8, tsize - (uint64_t)shifts[i]);
        sf_put_u32(buf + foot + 20, sf_crc32c(0, buf + foot, 20));
        save(buf, orig_size);
        char what[64];
        snprintf(what, sizeof what, "trailer offset moved by %lld", (long long)shifts[i]);
        rc = sf_pack_open(&p, path, &e);
        if (!rc) sf_pack_close(p);
        expect_corrupt(what, rc, &e);
    }

    // A header that describes other chunks than the ones stored: open
    // cannot tell, decoding must.
    struct {
        const char *what;
        uint64_t at;
        uint32_t value;
    } header_lies[] = {
        {"51-row chunks (still 5 chunks)", 20, 51},  // the data decodes to fewer bytes than the header implies
        {"filter shuffle", 24, SF_FILTER_SHUFFLE},  // decodes, to other values
        {"filter none", 24, SF_FILTER_NONE},
    };
    for (size_t i = 0; i < sizeof header_lies / sizeof *header_lies; i++) {
        memcpy(buf, orig, orig_size);
        sf_put_u32(buf + header_lies[i].at, header_lies[i].value);
        fix_header_crc(buf);
        save(buf, orig_size);
        expect_corrupt(header_lies[i].what, open_and_verify(&e), &e);
    }
    // With the wrong row count, the chunk itself must refuse to decode: its
    // stored size no longer matches, whatever the statistics say.
    memcpy(buf, orig, orig_size);
    sf_put_u32(buf + 20, 51);
    fix_header_crc(buf);
    save(buf, orig_size);
    if ((rc = sf_pack_open(&p, path, &e)) == 0) {
        void *stored = malloc(sf_pack_max_stored_size(p));
        float *out = malloc(sf_pack_chunk_raw_size(p, 0));
        sf_pack_dctx *d = sf_pack_dctx_create();
        rc = sf_pack_chunk_read(p, 0, stored, &e);
        if (!rc) rc = sf_pack_chunk_decode(d, p, 0, stored, out, &e);
        CHECK(rc == SF_ECORRUPT && strstr(e.msg, "chunk 0 "), "51-row chunks: chunk 0 decodes (%d \"%s\")", rc,
              rc ? e.msg : "");
        sf_pack_dctx_free(d);
        free(stored);
        free(out);
        sf_pack_close(p);
    }
    CHECK(rc != 0, "51-row chunks: open fails (%s)", e.msg);
    free(buf);
}

// Chunk 0 re-encoded (filter, zstd) with one value changed, index and
// trailer CRCs fixed: a well-formed chunk holding the wrong numbers. Only
// verify's scan of the values and its statistics can see it.
static void test_reencoded_chunk(void) {
    const float bad[] = {NAN, INFINITY, -INFINITY, 0};
    const char *const expect[] = {"not finite", "not finite", "not finite", "statistics"};
    for (int k = 0; k < 4; k++) {
        float vals[CHUNK_ROWS * NCOLS];  // column-major, as in the chunk
        for (int r = 0; r < CHUNK_ROWS; r++)
            for (int c = 0; c < NCOLS; c++) vals[c * CHUNK_ROWS + r] = orig_values[r * NCOLS + c];
        int at = CHUNK_ROWS + 17;  // row 17 of column 1
        // The last case moves one value by a single float ulp.
        vals[at] = k < 3 ? bad[k] : nextafterf(vals[at], INFINITY);
        uint8_t filtered[sizeof vals];
        sf_filter_encode(filtered, vals, NCOLS, CHUNK_ROWS, SF_FILTER_DELTA_SHUFFLE);
        unsigned char *buf = malloc(orig_size);
        memcpy(buf, orig, orig_size);
        // Chunk 0 may grow up to chunk 1's offset.
        size_t n = ZSTD_compress(buf + chunk_off[0], chunk_off[1] - chunk_off[0], filtered, sizeof filtered, 3);
        if (ZSTD_isError(n)) abort();
        unsigned char *ent = buf + index_at;
        sf_put_u32(ent + 8, (uint32_t)n);
        sf_put_u32(ent + 12, sf_crc32c(0, buf + chunk_off[0], n));
        fix_trailer_crc(buf);
        save(buf, orig_size);
        sf_err e = {0};
        char at_byte[32];
        snprintf(at_byte, sizeof at_byte, "byte %llu", (unsigned long long)chunk_off[0]);
        int rc = open_and_verify(&e);
        expect_corrupt(expect[k], rc, &e);
        CHECK(rc == 0 || (strstr(e.msg, expect[k]) && (k == 3 || (strstr(e.msg, "chunk 0 ") && strstr(e.msg, at_byte) &&
                                                                 strstr(e.msg, "row 17") && strstr(e.msg, "beta")))),
              "a chunk holding %g: \"%s\"", (double)vals[at], e.msg);
        free(buf);
    }
}

// The record of imputed values (flag bit 3: a bitmap after each chunk's
// values, per-column counts at the trailer's end) is checked like the rest:
// counts that disagree with the bits or exceed the rows, a flipped bit in a
// well-formed chunk, padding bits set, and the flag taken away are each
// refused, naming the file and what is wrong.
static void test_imputed(const char *dir) {
    enum { NC = 3, CR = 7, NR = 40 };  // 21 bits a chunk: 3 padding bits; the last chunk 5 rows
    static const char *const names[NC] = {"a", "b", "c"};
    char ipath[PATH_LEN];
    path_in(ipath, dir, "imputed.sfpack");
    float rows[NR * NC];
    uint8_t flags[NR * NC];
    for (int i = 0; i < NR * NC; i++) rows[i] = (float)(i % 11) * 0.5f, flags[i] = i % 5 == 1;
    sf_pack_writer_opts o = {.ncols = NC, .col_names = names, .chunk_rows = CR, .level = 3, .imputed = true};
    sf_pack_writer *w;
    sf_err e = {0};
    if (sf_pack_writer_open(&w, ipath, &o, &e) || sf_pack_writer_rows_imputed(w, rows, NULL, NULL, flags, NR, &e) ||
        sf_pack_writer_finish(w, &e)) {
        CHECK(0, "imputed sample: %s", e.msg);
        return;
    }
    size_t n;
    unsigned char *good = read_whole(ipath, &n);
    if (!good) abort();
    uint32_t hs = sf_get_u32(good + 12);
    uint64_t ft = n - SF_FOOTER_SIZE, to = sf_get_u64(good + ft), ts = ft - to;
    uint64_t counts = to + ts - 4 - NC * 8, index = to + SF_TRAILER_FIXED + NC * SF_STATS_SIZE;
    unsigned char *b = malloc(n);
    if (!b) abort();
#define RESEAL() sf_put_u32(b + to + ts - 4, sf_crc32c(0, b + to, ts - 4))
    // Opens the damaged copy and verifies it; the result must be a corruption naming the file and `want`.
#define EXPECT(what, want)                                                                                     \
    do {                                                                                                       \
        FILE *f = fopen(ipath, "wb");                                                                          \
        if (!f || fwrite(b, 1, n, f) != n || fclose(f)) abort();                                               \
        sf_pack *p = NULL;                                                                                     \
        sf_err e2 = {0};                                                                                       \
        int rc = sf_pack_open(&p, ipath, &e2);                                                                 \
        if (!rc) rc = sf_pack_verify(p, NULL, NULL, &e2);                                                      \
        sf_pack_close(p);                                                                                      \
        CHECK(rc == SF_ECORRUPT && strstr(e2.msg, ipath) && strstr(e2.msg, want), "%s: rc %d, \"%s\"", what, rc, \
              rc ? e2.msg : "");                                                                               \
    } while (0)
    {
        sf_pack *p;
        int rc = sf_pack_open(&p, ipath, &e);
        if (!rc) rc = sf_pack_verify(p, NULL, NULL, &e);
        // Values i % 5 == 1 of the row-major 40 x 3: rows r with 3r + c = 1 mod 5.
        CHECK(rc == 0 && sf_pack_get_info(p)->imputed && sf_pack_get_info(p)->imputed[1] == 8,
              "pristine imputed sample: %s", rc ? e.msg : "counts");
        if (!rc) sf_pack_close(p);
    }
    // A count one off (the trailer resealed): verify finds the chunks' bits disagree.
    memcpy(b, good, n);
    sf_put_u64(b + counts + 8, sf_get_u64(b + counts + 8) + 1);
    RESEAL();
    EXPECT("a count one off", "imputed values in column \"b\"");
    // More imputed values than rows: refused at open.
    memcpy(b, good, n);
    sf_put_u64(b + counts + 16, NR + 1);
    RESEAL();
    EXPECT("a count above the rows", "imputed values in column \"c\" of 40 rows");
    // The flag taken away, the header resealed: the counts are bytes the trailer should not have.
    memcpy(b, good, n);
    sf_put_u32(b + 32, sf_get_u32(b + 32) & ~SF_FLAG_IMPUTED);
    sf_put_u32(b + hs - 4, sf_crc32c(0, b, hs - 4));
    EXPECT("the flag taken away", "unexpected bytes");
    // Chunk 0 re-encoded with one bit changed, index and trailer resealed:
    // a well-formed chunk whose bits disagree with the counts; then with a
    // padding bit set, which no writer sets.
    size_t raw = CR * NC * 4 + (CR * NC + 7) / 8;
    for (int k = 0; k < 2; k++) {
        memcpy(b, good, n);
        uint64_t off = sf_get_u64(b + index);
        uint8_t frame[CR * NC * 4 + (CR * NC + 7) / 8];
        size_t got = ZSTD_decompress(frame, sizeof frame, b + off, sf_get_u32(b + index + 8));
        CHECK(got == raw, "chunk 0 decodes to %zu bytes, want %zu", got, raw);
        frame[CR * NC * 4 + (k == 0 ? 0 : 2)] ^= k == 0 ? 0x01 : 0x80;
        size_t z = ZSTD_compress(b + off, sf_get_u64(b + index + SF_INDEX_ENTRY) - off, frame, raw, 3);
        if (ZSTD_isError(z)) abort();
        sf_put_u32(b + index + 8, (uint32_t)z);
        sf_put_u32(b + index + 12, sf_crc32c(0, b + off, z));
        RESEAL();
        if (k == 0) EXPECT("a bit flipped in a sealed chunk", "imputed values in column \"a\", the chunks flag");
        else EXPECT("a padding bit set", "chunk 0 (byte 4096): the imputed flags' padding bits are not 0");
    }
#undef EXPECT
#undef RESEAL
    free(b);
    free(good);
    unlink(ipath);
}

// A file packed from several inputs (flag bit 4): each row's line is an
// origin, its source's index in bits 40-62, and the trailer ends with the
// sources' names. A source index past the list, lines that do not rise
// within a source's rows of a series, a count of 0 and the flag without
// lines are each refused, naming the file and what is wrong.
static void test_sources(const char *dir) {
    enum { NC = 2, CR = 8, NR = 20 };  // series "a" rows 0-11 from a.csv, "b" rows 12-19 from dir/b.csv
    static const char *const names[NC] = {"x", "y"};
    static const char *const sources[] = {"a.csv", "dir/b.csv"};
    char spath[PATH_LEN];
    path_in(spath, dir, "sources.sfpack");
    float rows[NR * NC];
    int64_t line[NR];
    for (int i = 0; i < NR; i++) {
        rows[2 * i] = (float)i, rows[2 * i + 1] = (float)(i % 3);
        line[i] = i < 12 ? sf_origin_make(0, (uint64_t)i + 2) : sf_origin_make(1, (uint64_t)(i - 12) * 2 + 2);
    }
    sf_pack_writer_opts o = {.ncols = NC, .col_names = names, .chunk_rows = CR, .level = 3, .lines = true,
                             .filter = SF_FILTER_NONE, .sources = sources, .nsources = 2};
    sf_pack_writer *w;
    sf_err e = {0};
    if (sf_pack_writer_open(&w, spath, &o, &e) || sf_pack_writer_series(w, "a", 1, &e) ||
        sf_pack_writer_rows_at(w, rows, NULL, line, 12, &e) || sf_pack_writer_series(w, "b", 1, &e) ||
        sf_pack_writer_rows_at(w, rows + 12 * NC, NULL, line + 12, NR - 12, &e) || sf_pack_writer_finish(w, &e)) {
        CHECK(0, "sources sample: %s", e.msg);
        return;
    }
    {  // pristine: the list, and origins that split back into source and line
        sf_pack *p;
        int rc = sf_pack_open(&p, spath, &e);
        if (!rc) rc = sf_pack_verify(p, NULL, NULL, &e);
        const sf_pack_info *in = rc ? NULL : sf_pack_get_info(p);
        CHECK(in && in->nsources == 2 && !strcmp(in->sources[1], "dir/b.csv"), "pristine sources: %s",
              rc ? e.msg : "the list differs");
        uint32_t src;
        uint64_t ln;
        if (in) sf_origin_split(in, line[13], &src, &ln);
        CHECK(in && src == 1 && ln == 4, "origin of row 13: source %u line %llu", in ? src : 0,
              in ? (unsigned long long)ln : 0);
        if (!rc) sf_pack_close(p);
    }
    size_t n;
    unsigned char *good = read_whole(spath, &n);
    if (!good) abort();
    uint32_t hs = sf_get_u32(good + 12);
    uint64_t ft = n - SF_FOOTER_SIZE, to = sf_get_u64(good + ft), ts = ft - to;
    uint64_t index = to + SF_TRAILER_FIXED + NC * SF_STATS_SIZE;
    uint64_t count = to + ts - 4 - (4 + 2 + 5 + 2 + 9);  // u32 count, then "a.csv" and "dir/b.csv"
    unsigned char *b = malloc(n);
    if (!b) abort();
#define RESEAL() sf_put_u32(b + to + ts - 4, sf_crc32c(0, b + to, ts - 4))
#define EXPECT(what, want)                                                                                     \
    do {                                                                                                       \
        FILE *f = fopen(spath, "wb");                                                                          \
        if (!f || fwrite(b, 1, n, f) != n || fclose(f)) abort();                                               \
        sf_pack *p = NULL;                                                                                     \
        sf_err e2 = {0};                                                                                       \
        int rc = sf_pack_open(&p, spath, &e2);                                                                 \
        if (!rc) rc = sf_pack_verify(p, NULL, NULL, &e2);                                                      \
        sf_pack_close(p);                                                                                      \
        CHECK(rc == SF_ECORRUPT && strstr(e2.msg, spath) && strstr(e2.msg, want), "%s: rc %d, \"%s\"", what, rc, \
              rc ? e2.msg : "");                                                                               \
    } while (0)
    CHECK(sf_get_u32(good + count) == 2, "the sources' count is not where expected");
    // Chunk 0 re-encoded with its lines changed (zigzag deltas after the
    // floats): the first delta with source 5 of 2, then row 3 equal to row 2.
    size_t raw = CR * NC * 4 + CR * 8;
    for (int k = 0; k < 2; k++) {
        memcpy(b, good, n);
        uint64_t off = sf_get_u64(b + index);
        uint8_t frame[CR * NC * 4 + CR * 8];
        size_t got = ZSTD_decompress(frame, sizeof frame, b + off, sf_get_u32(b + index + 8));
        CHECK(got == raw, "chunk 0 decodes to %zu bytes, want %zu", got, raw);
        uint8_t *lines = frame + CR * NC * 4;
        if (k == 0) sf_put_u64(lines, (uint64_t)sf_origin_make(5, 2) << 1);
        else sf_put_u64(lines + 3 * 8, 0);
        size_t z = ZSTD_compress(b + off, sf_get_u64(b + index + SF_INDEX_ENTRY) - off, frame, raw, 3);
        if (ZSTD_isError(z)) abort();
        sf_put_u32(b + index + 8, (uint32_t)z);
        sf_put_u32(b + index + 12, sf_crc32c(0, b + off, z));
        RESEAL();
        if (k == 0) EXPECT("a source index past the list", "source 5 of 2");
        else EXPECT("a line repeated in its series", "row 3 (a.csv line 4) does not follow");
    }
    memcpy(b, good, n);
    sf_put_u32(b + count, 0);
    RESEAL();
    EXPECT("no sources", "0 sources");
    memcpy(b, good, n);
    sf_put_u32(b + count, 3);  // a third name would run past the trailer
    RESEAL();
    EXPECT("a source too many", "runs past the trailer");
    memcpy(b, good, n);
    sf_put_u32(b + 32, sf_get_u32(b + 32) & ~SF_FLAG_SOURCES);
    sf_put_u32(b + hs - 4, sf_crc32c(0, b, hs - 4));
    EXPECT("the flag taken away", "unexpected bytes");
    memcpy(b, good, n);
    sf_put_u32(b + 32, SF_FLAG_SOURCES);
    sf_put_u32(b + hs - 4, sf_crc32c(0, b, hs - 4));
    EXPECT("sources without lines", "sources without lines");
#undef EXPECT
#undef RESEAL
    free(b);
    free(good);
    unlink(spath);
}

// Rows keep their CSV lines, which rise within each series: across series
// they may go back (pack regroups series whose rows interleave), within one
// verify refuses a line that does not follow the row before it.
static void test_lines(const char *dir) {
    static const char *const names[] = {"v"};
    static const char *const sid[] = {"a", "b"};
    char lpath[PATH_LEN];
    path_in(lpath, dir, "lines.sfpack");
    // Series a at lines 2, 4, 7; series b at 3, 5, 6: file order 2 3 4 5 6 7.
    const int64_t regrouped[6] = {2, 4, 7, 3, 5, 6}, back[6] = {2, 7, 4, 3, 5, 6};
    const int64_t *cases[2] = {regrouped, back};
    for (int k = 0; k < 2; k++) {
        sf_pack_writer_opts o = {.ncols = 1, .col_names = names, .series_column = "id", .chunk_rows = 4, .level = 1,
                                 .lines = true};
        sf_pack_writer *w;
        sf_err e = {0};
        float v[3] = {1, 2, 3};
        int rc = sf_pack_writer_open(&w, lpath, &o, &e);
        for (int s = 0; s < 2 && !rc; s++) {
            rc = sf_pack_writer_series(w, sid[s], 1, &e);
            if (!rc) rc = sf_pack_writer_rows_at(w, v, NULL, cases[k] + 3 * s, 3, &e);
        }
        if (!rc) rc = sf_pack_writer_finish(w, &e);
        CHECK(rc == 0, "lines sample %d: %s", k, e.msg);
        sf_pack *p = NULL;
        if (!rc) rc = sf_pack_open(&p, lpath, &e);
        if (!rc) rc = sf_pack_verify(p, NULL, NULL, &e);
        sf_pack_close(p);
        if (k == 0) CHECK(rc == 0, "lines rising within each series, back across them: verify says %s", e.msg);
        else
            CHECK(rc == SF_ECORRUPT && strstr(e.msg, "row 2's CSV line 4 does not follow line 7, the row before it in "
                                                     "its series"),
                  "a line going back within a series: verify %d \"%s\"", rc, e.msg);
        unlink(lpath);
    }
}

int main(void) {
    const char *srcdir = getenv("SRCDIR");
    if (!srcdir) {
        fprintf(stderr, "SRCDIR must be set (meson test sets it)\n");
        return 1;
    }
    double t0 = sf_now();
    char *dir = scratch_dir("corrupt");
    path_in(path, dir, "sample.sfpack");
    write_sample(path);
    load_layout();
    printf("sample: %zu bytes, header %u, %llu chunks, trailer %llu+%llu\n", orig_size, hsize,
           (unsigned long long)nchunks, (unsigned long long)toff, (unsigned long long)tsize);
    test_flips();
    test_truncation();
    test_not_a_pack(srcdir, dir);
    test_altered_stats();
    test_altered_chunks();
    test_inconsistent_fields();
    test_reencoded_chunk();
    test_imputed(dir);
    test_sources(dir);
    test_lines(dir);
    remove_dir(dir);
    free(orig);
    free(orig_values);
    printf("%.1f s\n", sf_now() - t0);
    return TEST_EXIT();
}
