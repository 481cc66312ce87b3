// Fuzzes the Arrow converter (sf_arrow_pack) with streams built from the
// input by tests/arrow/arrow_build.h, as a careless or hostile producer
// makes them: format strings from a table of good and bad ones (a
// dictionary's too), schemas whose column count the batches do not match,
// lengths, offsets and null counts that lie, missing buffers, string
// offsets that go back, string views past their data or naming a buffer
// there is not, dictionary indices outside the dictionary, arrays
// shorter than the batch. Buffers are allocated to exactly what the array's
// own length and offset claim, so ASan sees any read past them (a length
// beyond the buffers themselves no consumer can see: the ABI has no sizes). The bytes, read in order (0 past the end):
//   byte 0: bits 0-1 columns - 1; bit 2 the first column is the series
//           column; bits 3-4 missing (error, drop, ffill); bit 5 every text
//           column categorical; bit 6 no time column (""); bit 7 the rows
//           come from three files (sources), split by the input's last
//           three bytes (read again, not consumed): the first two bytes the
//           first two files' rows out of the batches' total, the third's bit
//           0 one row too many, bit 1 one too few, bit 2 a series per file
//   per column: a format (index into formats[]), then a flag byte: bit 0
//           a dictionary (the format its indices', the next byte its values'
//           format), bit 1 no name
//   then batches until the input ends (at most 4): a length (0-15), an
//           offset (0-3), a byte of lies (bit 0 one column less, bit 1 a NULL
//           child); per column a length delta, an offset, a null mode and a
//           byte of buffer lies, then its values from the input
// Series ids that come back are regrouped (the corpus has such a stream).
// Whatever the stream, the call must return 0 or a negative code with a
// message, release every struct it was given exactly once, and leave the
// output only on success, a file that verifies.
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pack/internal.h"
#include "tests/arrow/arrow_build.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

__attribute__((noreturn)) static void fail(const char *what, const char *detail) {
    fprintf(stderr, "fuzz_arrow: %s: %s\n", what, detail);
    abort();
}

static const char *const formats[] = {"b", "c", "C", "s", "S", "i", "I", "l", "L", "e", "f", "g", "u", "U",
                                      "tdD", "tdm", "tss:", "tsm:UTC", "tsu:", "tsn:+01:00", "n", "z", "+s", "",
                                      "ts", "d:10,2", "vu", "w:4", "tsx:", "g"};
enum { NFORMATS = sizeof formats / sizeof *formats };

typedef struct {
    const uint8_t *p, *end;
} input;

static uint8_t next(input *in) { return in->p < in->end ? *in->p++ : 0; }

// Bytes a value of format f takes in buffer 1 (0: bits; -1: int32 offsets of text, -3: int64 ones).
static int width(const char *f) {
    if (!f[0]) return 8;
    if (!strcmp(f, "vu")) return 16;
    if (!strcmp(f, "b")) return 0;
    if (!strcmp(f, "u")) return -1;
    if (!strcmp(f, "U")) return -3;
    if (strchr("cC", f[0]) && !f[1]) return 1;
    if ((strchr("sSe", f[0]) && !f[1])) return 2;
    if ((strchr("iIf", f[0]) && !f[1]) || !strcmp(f, "tdD")) return 4;
    if ((strchr("lLg", f[0]) && !f[1]) || !strcmp(f, "tdm") || !strncmp(f, "ts", 2)) return 8;
    return 8;  // anything else: some bytes, which pack must not read as it does not know the type
}

// An array of format f for `length` values from `offset`, its buffers from
// the input, sized to exactly what it claims (less where the lies say).
static struct ArrowArray make_array(input *in, const char *f, int64_t length, int64_t offset, uint8_t nulls,
                                    uint8_t lies) {
    int64_t n = length + offset, null_count = 0;
    uint8_t *valid = NULL;
    if (nulls & 1) {
        valid = calloc((size_t)(n + 7) / 8 + 1, 1);
        if (!valid) abort();
        for (int64_t i = 0; i < n; i++)
            if (next(in) & 1) valid[i / 8] |= (uint8_t)(1u << (i % 8));
            else if (i >= offset) null_count++;
    }
    if (nulls & 2) null_count = nulls & 4 ? -1 : null_count + 1;  // unknown, or a lie
    int w = width(f);
    void *b1 = NULL, *b2 = NULL;
    int64_t nbuf = w < 0 ? 3 : 2;
    if (w == -1 || w == -3) {
        size_t ow = w == -1 ? 4 : 8;
        b1 = malloc((size_t)(n + 1) * ow);
        if (!b1) abort();
        int64_t at = 0, most = 0;
        for (int64_t i = 0; i <= n; i++) {
            if (i) at += (int8_t)next(in) % 5;  // now and then back
            if (ow == 4) ((int32_t *)b1)[i] = (int32_t)at;
            else ((int64_t *)b1)[i] = at;
            most = at > most ? at : most;
        }
        b2 = malloc((size_t)most + 1);
        if (!b2) abort();
        for (int64_t i = 0; i < most; i++) ((uint8_t *)b2)[i] = next(in) | 0x20;
    } else {
        size_t bytes = w == 0 ? (size_t)(n + 7) / 8 : (size_t)n * (size_t)w;
        b1 = malloc(bytes + 1);
        if (!b1) abort();
        for (size_t i = 0; i < bytes; i++) ((uint8_t *)b1)[i] = next(in);
    }
    int64_t *sizes = NULL;
    if (!strcmp(f, "vu")) {  // views over one data buffer of up to 32 bytes, some pointing past it or elsewhere
        int64_t bytes = next(in) % 33;
        b2 = malloc((size_t)bytes + 1);
        sizes = malloc(sizeof *sizes);
        if (!b2 || !sizes) abort();
        for (int64_t i = 0; i < bytes; i++) ((uint8_t *)b2)[i] = next(in) | 0x20;
        *sizes = bytes;
        for (int64_t i = 0; i < n; i++) {
            uint8_t *v = (uint8_t *)b1 + 16 * i, how = next(in);
            int32_t len = how & 1 ? how >> 1 : (int32_t)(how >> 1) % 13, buf = how & 0x80 ? 1 : 0, off = next(in) % 40;
            if (how == 0xff) len = -1;
            memcpy(v, &len, 4), memcpy(v + 8, &buf, 4), memcpy(v + 12, &off, 4);
        }
        nbuf = 4;
    }
    if (lies & 1) free(b1), b1 = NULL;
    if (lies & 2 && !sizes) nbuf++;  // a view array's buffer count is all that tells where its sizes are
    struct ArrowArray a = ab_array(length, offset, null_count, nbuf, valid, b1, b2, 0, NULL, NULL);
    ab_array_priv *p = a.private_data;
    p->bufs[3] = sizes, p->ptrs[3] = sizes;
    return a;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char dir[4096], out[4200];
    if (!dir[0]) {
        const char *t = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/fuzz_arrow.XXXXXX", t && *t ? t : "/tmp");
        if (!mkdtemp(dir)) fail("mkdtemp", dir);
        snprintf(out, sizeof out, "%s/out.sfpack", dir);
    }
    input in = {data, data + size};
    uint8_t head = next(&in);
    int ncols = (head & 3) + 1;
    const char *fmt[4], *dfmt[4];
    bool named[4];
    struct ArrowSchema fields[4];
    for (int k = 0; k < ncols; k++) {
        fmt[k] = formats[next(&in) % NFORMATS];
        uint8_t flags = next(&in);
        dfmt[k] = flags & 1 ? formats[next(&in) % NFORMATS] : NULL;
        named[k] = !(flags & 2);
        static const char *const names[] = {"a", "b", "c", "d"};
        struct ArrowSchema d = dfmt[k] ? ab_field(dfmt[k], "", NULL) : (struct ArrowSchema){0};
        fields[k] = ab_field(fmt[k], named[k] ? names[k] : NULL, dfmt[k] ? &d : NULL);
    }
    struct ArrowArray batches[4];
    int nb = 0;
    uint64_t total = 0;
    while (in.p < in.end && nb < 4) {
        int64_t length = next(&in) % 16, offset = next(&in) % 4;
        uint8_t lies = next(&in);
        int nc = ncols - (lies & 1);
        struct ArrowArray cols[4];
        for (int k = 0; k < nc; k++) {
            int64_t clen = length + offset + (int8_t)next(&in) % 3, coff = next(&in) % 4;
            uint8_t nulls = next(&in), blies = next(&in);
            if (clen < 0) clen = 0;
            // A dictionary's indices as its schema says them (a producer's arrays match their schema).
            cols[k] = make_array(&in, fmt[k], clen, coff, nulls, (blies & 0x0f) == 0x0f ? blies >> 4 : 0);
            if (dfmt[k]) {
                int64_t dn = next(&in) % 5;
                struct ArrowArray d = make_array(&in, dfmt[k], dn, 0, next(&in) & 1, 0);
                ab_array_priv *p = cols[k].private_data;
                p->dict = cols[k].dictionary = ab_heap(d);
                // Indices mostly within the dictionary: each one's low byte, modulo one more than its length.
                int w = width(fmt[k]);
                uint8_t *idx = p->bufs[1];
                for (int64_t i = 0; idx && w > 0 && i < clen + coff; i++) {
                    uint8_t low = (uint8_t)(idx[i * w] % (dn + 1));
                    memset(idx + i * w, 0, (size_t)w);
                    idx[i * w] = low;  // little-endian
                }
            }
        }
        batches[nb] = ab_batch(length, offset, nc, cols);
        total += (uint64_t)length;
        if (lies & 2 && nc) {
            struct ArrowArray *c = batches[nb].children[0];
            batches[nb].children[0] = NULL;
            c->release(c);
            free(c);
        }
        nb++;
    }
    struct ArrowArrayStream s = ab_stream(ab_struct(ncols, fields), nb, batches, -1);
    char cats[16] = "";
    size_t cn = 0;
    for (int k = 0; k < ncols; k++)
        if ((head & 32) && named[k] && (dfmt[k] || !strcmp(fmt[k], "u") || !strcmp(fmt[k], "U") || !strcmp(fmt[k], "vu")) &&
            !(k == 0 && head & 4))
            cn += (size_t)snprintf(cats + cn, sizeof cats - cn, "%s%c", cn ? "," : "", 'a' + k);
    sf_arrow_pack_opts o = {.name = "fuzz", .series_column = head & 4 && named[0] ? "a" : NULL,
                            .time_column = head & 64 ? "" : NULL, .categorical = cn ? cats : NULL,
                            .missing = (enum sf_missing)((head >> 3 & 3) == 3 ? 2 : head >> 3 & 3),
                            .pack = {.level = 1, .filter = SF_FILTER_DELTA_SHUFFLE, .chunk_rows = 5, .threads = 1},
                            // Series that interleave regrouped within the least budget: no 64 MB per input.
                            .memory_budget = SF_REGROUP_MIN_BUDGET};
    static const char *const files[] = {"d/x.parquet", "d/y.parquet", "e/z.parquet"};
    uint64_t rows[3];
    if (head & 128) {
        uint8_t t0 = size >= 3 ? data[size - 3] : 0, t1 = size >= 2 ? data[size - 2] : 0, lie = size ? data[size - 1] : 0;
        rows[0] = t0 % (total + 1);
        rows[1] = t1 % (total - rows[0] + 1);
        rows[2] = total - rows[0] - rows[1] + (lie & 1);
        if (lie & 2 && rows[2]) rows[2]--;
        o.sources = files, o.source_rows = rows, o.nsources = 3;
        o.series_per_file = lie & 4 && !o.series_column;
    }
    sf_err e = {0};
    int rc = sf_arrow_pack(&s, out, &o, NULL, &e);
    if (s.release) fail("the stream was not moved out", "");
    if (ab_live) fail("not every struct was released", e.msg);
    if (rc > 0) fail("a positive return code", e.msg);
    if (rc < 0 && !e.msg[0]) fail("a refusal without a message", "");
    if (rc < 0 && access(out, F_OK) == 0) fail("a failed pack left its output", e.msg);
    if (rc == 0) {
        sf_pack *p;
        if (sf_pack_open(&p, out, &e)) fail("the output does not open", e.msg);
        if (sf_pack_verify(p, NULL, NULL, &e)) fail("the output does not verify", e.msg);
        sf_pack_close(p);
        unlink(out);
    }
    return 0;
}
