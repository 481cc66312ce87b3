// Fuzzes the CSV packer (sf_csv_pack_mem). The first two input bytes choose
// the options, the rest is the CSV:
//   byte 0, bits 0-1: delimiter (detected, ',', ';', tab)
//           bits 2-3: missing values (error, drop, ffill, ffill)
//           bit 4:    the first header column is the series column
//           bit 5:    two threads instead of one (compression, and a
//                     second parse thread on inputs of 256 KiB or more)
//   byte 1, bits 0-3: chunk_rows - 1, so that small inputs span many chunks
//                     (times 1024 when inflated)
//           bits 4-5: filter (modulo the number of filters)
//           bits 6-7: both set, with two threads: the data rows are repeated
//                     until the packer parses them with two threads too (it
//                     does so only from 256 KiB on), and packed with one
//                     thread as well: the same result, message and bytes;
//                     rare, as they are slow
//   byte 0, bit 7:    a CSV without quotes is cut into two files at a line
//                     in the middle, each with the header, and packed with
//                     sf_csv_pack_files: the values must be the whole CSV's,
//                     each row's origin its line in its file
// A file the packer wrote must verify. It must also hold exactly the values of
// a reference packing of the same CSV with plain options (inline compression,
// default chunks, no filter, the series column dropped rather than used,
// every record through the scalar parser), so chunking, threads, filters,
// series boundaries and the vector parsers (scan.c: AVX-512 or AVX2, as the
// CPU has) cannot change the data unnoticed: row for row, or, where series interleave and pack regrouped
// them, line for line (each value the reference's at the same CSV line, a
// value --missing ffill filled the one of the row before it). A packing
// that failed must leave no file behind.
#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pack/pack.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[4096];

static void remove_dir(void) { rmdir(dir); }

// One directory per process, so that parallel fuzzing jobs do not collide;
// $TMPDIR lets a fuzzing run put it on tmpfs, where fsync costs nothing.
static const char *tmp_dir(void) {
    if (!dir[0]) {
        const char *t = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/fuzz_csv.XXXXXX", t && *t ? t : "/tmp");
        if (!mkdtemp(dir)) {
            perror("fuzz_csv: mkdtemp");
            abort();
        }
        atexit(remove_dir);
    }
    return dir;
}

__attribute__((noreturn)) static void fail(const char *what, const char *detail) {
    fprintf(stderr, "fuzz_csv: %s: %s\n", what, detail);
    abort();
}

static bool dir_empty(void) {
    DIR *d = opendir(dir);
    if (!d) fail("cannot list the temporary directory", dir);
    struct dirent *ent;
    bool empty = true;
    while (empty && (ent = readdir(d)))
        empty = strcmp(ent->d_name, ".") == 0 || strcmp(ent->d_name, "..") == 0;
    closedir(d);
    return empty;
}

// The first header column's name as the packer reads it when it is plain or
// simply quoted; anything odder just makes the series option fail, which is
// fuzzed as well.
static void first_column(const char *s, size_t n, char *out, size_t cap) {
    size_t i = 0, k = 0;
    if (n >= 3 && memcmp(s, "\xef\xbb\xbf", 3) == 0) i = 3;
    while (i < n && (s[i] == ' ' || s[i] == '\t')) i++;
    bool quoted = i < n && s[i] == '"';
    for (i += quoted; i < n && k + 1 < cap; i++) {
        char ch = s[i];
        if (quoted ? ch == '"' : ch == ',' || ch == ';' || ch == '\t' || ch == '\r' || ch == '\n') break;
        out[k++] = ch;
    }
    while (k && out[k - 1] == ' ') k--;
    out[k] = 0;
}

// text with its data rows (everything after the first line) repeated until
// they exceed 256 KiB; NULL when there are none.
static char *inflate(const char *text, size_t n, size_t *out_n) {
    const char *eol = memchr(text, '\n', n);
    if (!eol || eol + 1 == text + n) return NULL;
    size_t head = (size_t)(eol + 1 - text), body = n - head, reps = ((256u << 10) + 4096) / body + 1;
    char *big = malloc(head + reps * body);
    if (!big) fail("out of memory", "inflating the input");
    memcpy(big, text, head);
    for (size_t i = 0; i < reps; i++) memcpy(big + head + i * body, eol + 1, body);
    *out_n = head + reps * body;
    return big;
}

// Opens and verifies a file the packer wrote, which must succeed, and decodes
// it into one column-major matrix of nrows x ncols values; *imputed: the
// values it records as imputed (UINT64_MAX: it records none); *lines and
// *imp (column-major flags), malloc'd, when not NULL.
static float *load(const char *path, uint64_t *nrows, uint32_t *ncols, uint64_t *imputed, int64_t **lines,
                   uint8_t **imp) {
    sf_pack *p;
    sf_err e;
    if (sf_pack_open(&p, path, &e) != 0) fail("the packed file does not open", e.msg);
    if (sf_pack_verify(p, NULL, NULL, &e) != 0) fail("the packed file does not verify", e.msg);
    const sf_pack_info *in = sf_pack_get_info(p);
    if (in->nrows == 0) fail("the packed file has no rows", path);
    float *all = malloc(in->nrows * in->ncols * sizeof *all);
    float *vals = malloc((size_t)in->chunk_rows * in->ncols * sizeof *vals);
    void *stored = malloc(sf_pack_max_stored_size(p));
    sf_pack_dctx *d = sf_pack_dctx_create();
    int64_t *line = lines ? malloc(in->nrows * sizeof *line) : NULL;
    uint8_t *flags = imp ? malloc((size_t)in->chunk_rows * in->ncols) : NULL;
    uint8_t *all_imp = imp ? malloc(in->nrows * in->ncols) : NULL;
    if (!all || !vals || !stored || !d || (lines && (!line || !in->has_lines)) || (imp && (!flags || !all_imp)))
        fail("out of memory", path);
    for (uint64_t i = 0; i < in->nchunks; i++) {
        sf_chunk c = sf_pack_chunk_locate(p, i);
        if (sf_pack_chunk_read(p, i, stored, &e) != 0 ||
            sf_pack_chunk_decode_imputed(d, p, i, stored, vals, NULL, line ? line + c.first_row : NULL, flags, &e) != 0)
            fail("a chunk of a verified file does not decode", e.msg);
        for (uint32_t col = 0; col < in->ncols; col++) {
            memcpy(all + col * in->nrows + c.first_row, vals + (size_t)col * c.rows, c.rows * sizeof *vals);
            if (all_imp) memcpy(all_imp + col * in->nrows + c.first_row, flags + (size_t)col * c.rows, c.rows);
        }
    }
    if (lines) *lines = line;
    if (imp) *imp = all_imp;
    free(flags);
    *nrows = in->nrows;
    *ncols = in->ncols;
    *imputed = in->imputed ? 0 : UINT64_MAX;
    for (uint32_t col = 0; in->imputed && col < in->ncols; col++) *imputed += in->imputed[col];
    free(vals);
    free(stored);
    sf_pack_dctx_free(d);
    sf_pack_close(p);
    return all;
}

// Checks the file at path, which packing text with o wrote, against a
// reference packing with plain options. split: packed from two files whose
// second one's first data row is line split of text (0: from text itself).
static void check(const char *text, size_t n, const sf_csv_pack_opts *o, const sf_csv_pack_stats *st,
                  const char *path, uint64_t split) {
    uint64_t rows, ref_rows, imputed, ref_imputed;
    uint32_t ncols, ref_ncols;
    int64_t *lines = NULL;
    uint8_t *imp = NULL;
    float *vals = load(path, &rows, &ncols, &imputed, st->regrouped || split ? &lines : NULL,
                       st->regrouped ? &imp : NULL);
    // Line L of the whole CSV is line L of the first file, or line L - split
    // + 2 of the second (its header is line 1): each origin back to L.
    for (uint64_t r = 0; split && r < rows; r++) {
        uint64_t src = (uint64_t)lines[r] >> SF_ORIGIN_LINE_BITS;
        uint64_t l = (uint64_t)lines[r] & ((1ull << SF_ORIGIN_LINE_BITS) - 1);
        if (src > 1 || (src == 0 && l >= split) || (src == 1 && l < 2))
            fail("a row's origin is not its file and line", path);
        lines[r] = (int64_t)(src ? l + split - 2 : l);
    }
    unlink(path);
    if (rows != st->rows) fail("the packed file's row count differs from the packer's", path);
    // Every value --missing ffill filled is recorded as imputed, and only then.
    if (imputed != (o->missing == SF_MISSING_FFILL ? st->values_filled : UINT64_MAX))
        fail("the file's imputed values differ from the values the packer filled", path);
    sf_csv_pack_opts ref = {.drop_columns = o->series_column,
                            .categorical = o->categorical,
                            .delimiter = o->delimiter,
                            .missing = o->missing,
                            .pack = {.level = 1, .filter = SF_FILTER_NONE}};
    char ref_path[4200];
    snprintf(ref_path, sizeof ref_path, "%s/ref.sfpack", dir);
    sf_err e;
    // The reference may fail where the first packing did not (a series name
    // that --drop-columns cannot spell); only two results can be compared.
    setenv("SEQFEED_TEST_SCALAR_PARSE", "1", 1);  // read as the packing starts (sf_number_rows_pick)
    int ref_rc = sf_csv_pack_mem(text, n, "fuzz.csv", ref_path, &ref, NULL, &e);
    unsetenv("SEQFEED_TEST_SCALAR_PARSE");
    if (ref_rc == 0) {
        int64_t *ref_lines = NULL;
        float *ref_vals = load(ref_path, &ref_rows, &ref_ncols, &ref_imputed, lines ? &ref_lines : NULL, NULL);
        unlink(ref_path);
        if (ref_rows != rows || ref_ncols != ncols || ref_imputed != imputed ||
            (!st->regrouped && memcmp(ref_vals, vals, rows * ncols * sizeof *vals) != 0))
            fail("the packed values differ from the reference packing", path);
        for (uint64_t r = 0; split && !st->regrouped && r < rows; r++)
            if (lines[r] != ref_lines[r]) fail("a row's origin is not its file and line", path);
        // Regrouped: the reference's rows rise by line, each row's is found.
        for (uint64_t r = 0; st->regrouped && r < rows; r++) {
            uint64_t lo = 0, hi = ref_rows;
            while (lo < hi) {
                uint64_t mid = lo + (hi - lo) / 2;
                if (ref_lines[mid] < lines[r]) lo = mid + 1;
                else hi = mid;
            }
            if (lo == ref_rows || ref_lines[lo] != lines[r]) fail("a regrouped row's line is not the reference's", path);
            for (uint32_t col = 0; col < ncols; col++) {
                const float *v = vals + col * rows + r, *want = imp[col * rows + r] ? v - 1 : ref_vals + col * rows + lo;
                if ((imp[col * rows + r] && r == 0) || memcmp(v, want, sizeof *v) != 0)
                    fail("a regrouped row's values differ from the reference's at its line", path);
            }
        }
        free(ref_vals);
        free(ref_lines);
    }
    free(vals);
    free(lines);
    free(imp);
}

// The text packed with two threads (result rc, message e, file at path
// when rc is 0) packed again with one: the same result and message, and
// the same bytes (the helper thread's records are committed in order).
// One thread's file goes to path too, the other moved aside, so that the
// messages, which name the output, compare as they are: rewriting one
// output's name into the other's rewrote the text of an input that held
// it (libFuzzer learns the name from the comparisons), a false failure.
static void same_one_thread(const char *text, size_t n, const sf_csv_pack_opts *o, int rc, const sf_err *e,
                            const char *path) {
    sf_csv_pack_opts one = *o;
    one.pack.threads = 1;
    char two[4200 + sizeof ".two"];  // path is at most 4200 bytes (LLVMFuzzerTestOneInput)
    snprintf(two, sizeof two, "%s.two", path);
    if (!rc && rename(path, two)) fail("cannot move aside", path);
    sf_err e1;
    int rc1 = sf_csv_pack_mem(text, n, "fuzz.csv", path, &one, NULL, &e1);
    if (rc1 != rc) fail("one thread and two return different codes", rc ? e->msg : e1.msg);
    if (rc && strcmp(e1.msg, e->msg)) fail("one thread and two say different things", e->msg);
    if (rc) return;
    FILE *a = fopen(path, "rb"), *b = fopen(two, "rb");
    int ca = 0, cb = 0;
    while (a && b && (ca = fgetc(a)) == (cb = fgetc(b)) && ca != EOF) {
    }
    bool same = a && b && ca == EOF && cb == EOF;
    if (a) fclose(a);
    if (b) fclose(b);
    unlink(two);
    if (!same) fail("the file packed with two threads differs from one thread's", path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    static const char delimiters[] = {0, ',', ';', '\t'};
    static const int missing[] = {SF_MISSING_ERROR, SF_MISSING_DROP, SF_MISSING_FFILL, SF_MISSING_FFILL};
    const char *text = (const char *)data + 2;
    size_t n = size - 2;
    char series[256];
    first_column(text, n, series, sizeof series);
    bool use_series = (data[0] & 0x10) && series[0], threads = data[0] & 0x20;
    char *big = threads && (data[1] & 0xc0) == 0xc0 ? inflate(text, n, &n) : NULL;
    if (big) text = big;
    // The first column as a category instead, when it is not the series.
    bool use_category = !use_series && (data[0] & 0x40) && series[0];
    sf_csv_pack_opts o = {.series_column = use_series ? series : NULL,
                          .categorical = use_category ? series : NULL,
                          .delimiter = delimiters[data[0] & 3],
                          .missing = missing[(data[0] >> 2) & 3],
                          .pack = {.chunk_rows = (1u + (data[1] & 15u)) << (big ? 10 : 0),
                                   .level = 1,
                                   .filter = ((data[1] >> 4) & 3) % SF_FILTER_COUNT,
                                   .threads = threads ? 2 : 1}};
    char path[4200];
    snprintf(path, sizeof path, "%s/out.sfpack", tmp_dir());
    sf_csv_pack_stats st;
    sf_err e;
    const char *eol = memchr(text, '\n', n);
    if ((data[0] & 0x80) && !big && eol && !memchr(text, '"', n)) {
        // The cut: after the line end at or after the middle of the data rows.
        const char *body = eol + 1, *mid = body + (size_t)(text + n - body) / 2;
        const char *cut = mid < text + n ? memchr(mid, '\n', (size_t)(text + n - mid)) : NULL;
        cut = cut ? cut + 1 : text + n;
        uint64_t split = 2;
        for (const char *q = body; q < cut; q++) split += *q == '\n';
        split += cut == text + n && cut > body && cut[-1] != '\n';  // a last line without its line feed
        char a[4200], b[4200];
        snprintf(a, sizeof a, "%s/a.csv", dir);
        snprintf(b, sizeof b, "%s/b.csv", dir);
        FILE *fa = fopen(a, "wb"), *fb = fopen(b, "wb");
        size_t head = (size_t)(body - text);
        if (!fa || !fb || fwrite(text, 1, (size_t)(cut - text), fa) != (size_t)(cut - text) ||
            fwrite(text, 1, head, fb) != head ||
            fwrite(cut, 1, (size_t)(text + n - cut), fb) != (size_t)(text + n - cut) || fclose(fa) || fclose(fb))
            fail("cannot write the two inputs in", dir);
        const char *const paths[] = {a, b};
        int rc = sf_csv_pack_files(paths, 2, path, &o, &st, &e);
        unlink(a), unlink(b);
        if (rc == 0) check(text, n, &o, &st, path, split);
    } else {
        int rc = sf_csv_pack_mem(text, n, "fuzz.csv", path, &o, &st, &e);
        if (big) same_one_thread(text, n, &o, rc, &e, path);
        if (rc == 0) check(text, n, &o, &st, path, 0);
    }
    // Failed packings must not leave their output or temporary file behind.
    if (!dir_empty()) fail("a file was left behind in", dir);
    free(big);
    return 0;
}
