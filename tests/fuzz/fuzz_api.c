// Fuzzes libseqfeed's C API (api/seqfeed.h) as a careless caller would: the
// input is a program of calls on two pack slots and two dataset slots, in
// any order, closed handles passed as NULL (as the Python package does), and
// every sf_dataset_opts field drawn from its edges. Two small files are
// packed at start: one with series, a category and ISO times, one plain.
//
// Each call is checked against what seqfeed.h promises:
//   - sf_dataset_open accepts exactly the options in their documented
//     ranges (a file with no batch to give, a pipeline past the machine's
//     memory, bad names: refusals too), and every refusal says why;
//   - sf_dataset_next writes a batch only into buffers of a batch's size,
//     refusing shorter ones without writing (ASan sees every byte of x and
//     y: they are allocated to the size passed);
//   - sf_api_pack_read and read_times succeed exactly for a valid handle,
//     columns and rows, and write rows x columns values;
//   - NULL handles and pointers are SF_EINVAL, never a crash.
// Bytes, one op at a time (op = byte % 10): see run_op. Values are drawn by
// draw_* from a table of edges; the sizes that would allocate are kept small
// (a window or batch of at most the file's rows, a pool of at most 4096
// windows, else beyond any machine's memory), so that an input needs a few
// MB, while the API itself must refuse what does not fit.
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/seqfeed.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

// FUZZ_API_TRACE=1 prints each dataset open's outcome: for writing seeds.
static bool tracing;

__attribute__((noreturn)) static void fail(const char *what, const char *detail) {
    fprintf(stderr, "fuzz_api: %s: %s\n", what, detail);
    abort();
}

// ---- the files ----

static char dir[4096], timed[4200], plain[4200];
enum { TIMED_ROWS = 70, PLAIN_ROWS = 40 };

static void remove_files(void) {
    unlink(timed);
    unlink(plain);
    rmdir(dir);
}

static void pack_text(const char *csv, const char *path, const char *series, const char *categorical) {
    sf_csv_pack_opts o = {.series_column = series, .categorical = categorical,
                          .pack = {.chunk_rows = 16, .level = 1, .filter = SF_FILTER_DELTA_SHUFFLE, .threads = 1}};
    sf_err e;
    if (sf_csv_pack_mem(csv, strlen(csv), "fuzz.csv", path, &o, NULL, &e) != 0) fail("packing the seed file", e.msg);
}

static void make_files(void) {
    if (dir[0]) return;
    tracing = getenv("FUZZ_API_TRACE") != NULL;
    const char *t = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/fuzz_api.XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(dir)) fail("mkdtemp", dir);
    snprintf(timed, sizeof timed, "%s/timed.sfpack", dir);
    snprintf(plain, sizeof plain, "%s/plain.sfpack", dir);
    atexit(remove_files);
    static char csv[16384];
    size_t n = (size_t)snprintf(csv, sizeof csv, "site,time,a,sky,b\n");
    for (int i = 0; i < TIMED_ROWS; i++) {
        int s = i < 40 ? 0 : 1, h = s ? i - 40 : i;
        // Hourly, with a 5-hour gap in the first series for --max-gap to cut.
        n += (size_t)snprintf(csv + n, sizeof csv - n, "%s,2020-01-%02dT%02d:00,%d.5,%s,%d\n", s ? "south" : "north",
                              1 + (h + (h >= 20 ? 5 : 0)) / 24, (h + (h >= 20 ? 5 : 0)) % 24, (i * 7) % 13,
                              i % 3 ? "sun" : "rain", i % 5);
    }
    pack_text(csv, timed, "site", "sky");
    n = (size_t)snprintf(csv, sizeof csv, "a,b\n");
    for (int i = 0; i < PLAIN_ROWS; i++) n += (size_t)snprintf(csv + n, sizeof csv - n, "%d,%d\n", i % 7, (i * 3) % 11);
    pack_text(csv, plain, NULL, NULL);
}

// ---- drawing values ----

typedef struct {
    const uint8_t *p;
    size_t n;
} input;

static uint8_t byte(input *in) {
    if (!in->n) return 0;
    in->n--;
    return *in->p++;
}

static uint64_t bytes(input *in, int k) {
    uint64_t v = 0;
    for (int i = 0; i < k; i++) v = v << 8 | byte(in);
    return v;
}

static uint32_t draw_u32(input *in, uint32_t small_max) {
    static const uint32_t edges[] = {0, 1, 2, 3, UINT32_MAX, 1u << 31, 1u << 20, (1u << 20) + 1, 256, 257};
    uint8_t b = byte(in);
    if (b < 128) return b % (small_max + 1);
    return edges[b % (sizeof edges / sizeof *edges)];
}

// A pool: small, or beyond any machine's memory, or an edge of the range.
static uint64_t draw_pool(input *in) {
    static const uint64_t edges[] = {0, 1, 2, UINT64_MAX >> 8, (UINT64_MAX >> 8) + 1, UINT64_MAX, 1ull << 44,
                                     1ull << 50};
    uint8_t b = byte(in);
    if (b < 128) return bytes(in, 2) % 4097;
    return edges[b % (sizeof edges / sizeof *edges)];
}

static uint64_t draw_u64(input *in) {
    static const uint64_t edges[] = {0, 1, 2, 3, UINT64_MAX >> 1, (UINT64_MAX >> 1) + 1, UINT64_MAX};
    uint8_t b = byte(in);
    if (b < 200) return edges[b % (sizeof edges / sizeof *edges)];
    return bytes(in, 8);
}

static double draw_real(input *in) {
    static const double edges[] = {0, 0.1, 0.5, 0.99, 1, -0.1, -0.0, 1e-300, 1, 3600, 7200, 1e300, -1, 0.25};
    uint8_t b = byte(in);
    if (b < 16) return (double[]){NAN, INFINITY, -INFINITY, 5e-324}[b % 4];
    if (b < 220) return edges[b % (sizeof edges / sizeof *edges)];
    uint64_t bits = bytes(in, 8);
    double v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

static const char *draw_text(input *in, const char *const *table, size_t n) { return table[byte(in) % n]; }

// ---- the calls ----

typedef struct {
    sf_pack *pack[2];
    const char *pack_file[2];
    sf_dataset *ds[2];
    sf_dataset_info info[2];
} state;

static uint64_t file_rows(const char *f) { return f == timed ? TIMED_ROWS : PLAIN_ROWS; }

// Whether o is within every range seqfeed.h gives (the file's own checks
// aside): sf_dataset_open must refuse any other.
static bool opts_in_range(const sf_dataset_opts *o) {
    bool texts = (!o->features || *o->features) && (!o->targets || *o->targets) &&
                 (!o->time_features || *o->time_features);
    return o->data && *o->data && texts && o->window >= 1 && o->stride >= 1 && o->sampling_rate >= 1 &&
           o->horizon >= 1 && o->batch >= 1 && o->batch <= 1u << 20 && o->pool <= UINT64_MAX >> 8 && o->epochs >= 1 &&
           o->epochs <= UINT64_MAX >> 1 && o->replicas >= 1 && o->replicas <= 256 && o->replica < o->replicas &&
           o->batch % o->replicas == 0 && o->decoders <= 256 && o->val_split >= 0 && o->val_split < 1 &&
           (o->max_gap == 0 || (o->max_gap > 0 && isfinite(o->max_gap)));
}

static void dataset_open(state *s, int k, input *in) {
    static const char *const names[] = {NULL, "", "a", "b", "a,b", "sky", "nope", "\"a\",b", "a,,b", ","};
    static const char *const times[] = {NULL, "", "hour", "hour,yearday", "weekday", "bogus", "hour,hour"};
    static const char *const norms[] = {NULL, "zscore", "minmax", "none", "log", ""};
    const char *files[] = {timed, plain, NULL, "", "/nonexistent/x.sfpack", dir};
    uint8_t how = byte(in);
    sf_dataset_opts o = {
        .data = files[how % 6],
        .features = draw_text(in, names, 10),
        .targets = draw_text(in, names, 10),
        .time_features = draw_text(in, times, 7),
        .norm = draw_text(in, norms, 6),
        .target_change = byte(in) & 1,
        .window = draw_u32(in, TIMED_ROWS),
        .stride = draw_u32(in, 8),
        .sampling_rate = draw_u32(in, 4),
        .horizon = draw_u32(in, 4),
        .batch = draw_u32(in, TIMED_ROWS),
        .pool = draw_pool(in),
        .seed = bytes(in, 8),
        .epochs = draw_u64(in),
        .val_split = draw_real(in),
        .max_gap = draw_real(in),
        .replicas = draw_u32(in, 4),
        .replica = draw_u32(in, 4),
        .decoders = draw_u32(in, 3),
    };
    sf_dataset_close(s->ds[k]);
    s->ds[k] = NULL;
    sf_err e = {0};
    sf_dataset **out = how & 0x40 ? NULL : &s->ds[k];
    int rc = sf_dataset_open(out, how & 0x80 ? NULL : &o, &e);
    if (tracing) fprintf(stderr, "fuzz_api: dataset %d open: %d %s\n", k, rc, rc ? e.msg : "");
    if (!out || (how & 0x80)) {
        if (rc != SF_EINVAL) fail("sf_dataset_open with NULL is not SF_EINVAL", e.msg);
        return;
    }
    if (rc != 0) {
        if (s->ds[k]) fail("a refused open left a handle", e.msg);
        if (!e.msg[0] || rc >= 0) fail("a refusal says nothing", o.data ? o.data : "(NULL)");
        return;
    }
    if (!opts_in_range(&o)) fail("options out of their documented range were accepted", "");
    sf_dataset_info *i = &s->info[k];
    if (sf_dataset_shape(s->ds[k], i) != 0) fail("sf_dataset_shape refused an open dataset", "");
    if (i->window != o.window || i->batch != o.batch / o.replicas || i->epochs != o.epochs ||
        i->batches_per_epoch == 0 || i->batches_per_epoch * i->batch > file_rows(o.data))
        fail("sf_dataset_shape does not match the options", "");
}

static void dataset_next(state *s, int k, input *in) {
    sf_dataset *d = s->ds[k];
    uint8_t how = byte(in);
    size_t nx = d ? (size_t)s->info[k].batch * s->info[k].window * s->info[k].nfeatures : 1;
    size_t ny = d ? (size_t)s->info[k].batch * s->info[k].ntargets : 1;
    // Buffers of exactly the size passed, so that ASan sees a write past it.
    size_t xl = how % 4 == 1 ? nx - 1 : how % 4 == 2 ? 0 : how % 4 == 3 ? nx + 7 : nx;
    size_t yl = (how >> 2) % 4 == 1 ? ny - 1 : (how >> 2) % 4 == 2 ? 0 : ny;
    float *x = (how & 0x40) ? NULL : malloc((xl ? xl : 1) * sizeof *x);
    float *y = (how & 0x80) ? NULL : malloc((yl ? yl : 1) * sizeof *y);
    for (size_t i = 0; x && i < xl; i++) x[i] = -7;
    sf_err e = {0};
    int rc = sf_dataset_next(d, x, xl, y, yl, (how & 0x20) ? NULL : &e);
    bool room = d && x && y && xl >= nx && yl >= ny;
    if (!room && rc != SF_EINVAL) fail("sf_dataset_next without room for a batch is not SF_EINVAL", "");
    if (!room)
        for (size_t i = 0; x && i < xl; i++)
            if (x[i] != -7) fail("a refused sf_dataset_next wrote into x", "");
    if (tracing) fprintf(stderr, "fuzz_api: dataset %d next: %d\n", k, rc);
    if (room && rc != 1 && rc != 0) fail("sf_dataset_next failed on a good dataset", e.msg);
    free(x);
    free(y);
}

static void pack_read(state *s, int k, input *in, bool times) {
    sf_pack *p = s->pack[k];
    uint8_t how = byte(in);
    uint64_t rows = p ? file_rows(s->pack_file[k]) : 0, lo, hi;
    if (how & 1) {
        lo = bytes(in, 1) % (rows + 3), hi = bytes(in, 1) % (rows + 3);
    } else {
        lo = draw_u64(in), hi = draw_u64(in);
    }
    uint32_t ncols = byte(in) % 5, cols[4], file_cols = p ? (s->pack_file[k] == timed ? 3 : 2) : 0;
    bool cols_ok = true;
    for (uint32_t i = 0; i < ncols; i++) {
        uint8_t c = byte(in);
        cols[i] = c < 250 ? c % 4 : UINT32_MAX - (c & 3);
        cols_ok = cols_ok && cols[i] < file_cols;
    }
    // out holds exactly the rows asked for when that is few, else one value:
    // a call that writes more than it may is caught by ASan.
    uint64_t want = hi > lo && hi - lo <= 4096 ? (hi - lo) * (times ? 1 : ncols) : 1;
    bool null_out = how & 2, null_cols = (how & 4) && ncols;
    void *out = null_out ? NULL : malloc((want ? want : 1) * (times ? sizeof(int64_t) : sizeof(float)));
    sf_err e = {0};
    int rc = times ? sf_api_pack_read_times(p, lo, hi, out, (how & 8) ? NULL : &e)
                   : sf_api_pack_read(p, null_cols ? NULL : cols, ncols, lo, hi, out, (how & 8) ? NULL : &e);
    bool range = p && lo <= hi && hi <= rows, something = hi > lo && (times || ncols);
    bool ok = range && (!something || !null_out) &&
              (times ? s->pack_file[k] == timed : cols_ok && !null_cols);
    if (ok != (rc == 0)) fail(times ? "sf_api_pack_read_times: success not as promised" : "sf_api_pack_read: success "
                              "not as promised", e.msg);
    free(out);
}

static void run_op(state *s, input *in) {
    uint8_t op = byte(in);
    int k = (op >> 7) & 1;
    switch (op % 10) {
    case 0: {  // pack open (the slot's handle closed first)
        sf_api_pack_close(s->pack[k]);
        s->pack[k] = NULL;
        uint8_t f = byte(in);
        const char *path = (const char *[]){timed, plain, NULL, "", dir, "/nonexistent/x.sfpack"}[f % 6];
        sf_err e = {0};
        int rc = sf_api_pack_open(f & 0x40 ? NULL : &s->pack[k], path, &e);
        if ((rc == 0) != (!(f & 0x40) && (path == timed || path == plain))) fail("sf_api_pack_open", e.msg);
        if (rc == 0) s->pack_file[k] = path;
        break;
    }
    case 1:
        sf_api_pack_close(s->pack[k]);
        s->pack[k] = NULL;
        break;
    case 2: {
        char *json = sf_api_pack_describe(s->pack[k]);
        if (!json != !s->pack[k] || (json && json[0] != '{')) fail("sf_api_pack_describe", json ? json : "NULL");
        sf_api_free(json);
        break;
    }
    case 3: pack_read(s, k, in, false); break;
    case 4: pack_read(s, k, in, true); break;
    case 5: dataset_open(s, k, in); break;
    case 6: dataset_next(s, k, in); break;
    case 7: {
        sf_dataset_info i;
        int rc = sf_dataset_shape(s->ds[k], byte(in) & 1 ? NULL : &i);
        if (rc != 0 && rc != SF_EINVAL) fail("sf_dataset_shape", "an unexpected code");
        break;
    }
    case 8:
        sf_dataset_close(s->ds[k]);
        s->ds[k] = NULL;
        break;
    default: {  // a few batches in a row: reaches the end of short epochs
        uint8_t n = byte(in) % 16;
        for (uint8_t i = 0; i < n && s->ds[k]; i++) {
            sf_dataset_info *f = &s->info[k];
            size_t nx = (size_t)f->batch * f->window * f->nfeatures, ny = (size_t)f->batch * f->ntargets;
            float *x = malloc(nx * sizeof *x), *y = malloc(ny * sizeof *y);
            sf_err e;
            int rc = x && y ? sf_dataset_next(s->ds[k], x, nx, y, ny, &e) : 0;
            free(x);
            free(y);
            if (rc < 0) fail("sf_dataset_next failed on a good dataset", e.msg);
            if (rc == 0) break;
        }
    }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    make_files();
    if (size > 4096) return 0;
    input in = {data, size};
    state s = {0};
    for (int ops = 0; in.n && ops < 64; ops++) run_op(&s, &in);
    for (int k = 0; k < 2; k++) {
        sf_api_pack_close(s.pack[k]);
        sf_dataset_close(s.ds[k]);
    }
    return 0;
}
