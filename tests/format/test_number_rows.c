// The vector parsers of records of numbers (sf_number_rows_pick, scan.c)
// against a naive one written here: records split at the delimiter and the
// line feed, each number read by sf_parse_float, the time by
// sf_time_parse_memo. On random records of every field shape the fast path
// takes or leaves (signs, points, lengths around its 8-byte limit,
// exponents, CRLF, times with fractions or zones, skipped fields, runs of
// one series id) and of
// the ones that must stop it (a missing value, text, spaces, a quote, a CR
// inside a record, a ragged or blank line (one of thousands of fields), a
// value of 2^24 or more, a time
// that does not move on, another series id): the same floats and times bit for bit, each
// record's end, and a stop at the first record the naive parser refuses,
// or no earlier than where the input's last 64 bytes begin. And the fact
// that spares the vector parser a midpoint check.
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pack/internal.h"
#include "tests/common.h"

static uint64_t rng_state = 0x5eedf00dcafe1234ull;

static uint64_t rng(void) { return sf_splitmix64(&rng_state); }

static size_t digits(char *o, size_t n) {
    for (size_t i = 0; i < n; i++) o[i] = (char)('0' + rng() % 10);
    return n;
}

// A number the way CSV writers print them, most within the fast path.
static size_t number(char *o) {
    size_t len = 0;
    if (rng() % 3 == 0) o[len++] = '-';
    else if (rng() % 50 == 0) o[len++] = '+';
    size_t total = 1 + rng() % (rng() % 4 ? 8 : 12);  // digits and point: around the 8-byte limit
    size_t point = rng() % 5 == 0 ? SIZE_MAX : rng() % total;
    if (point == SIZE_MAX || total == 1) {
        len += digits(o + len, total);
    } else {
        len += digits(o + len, point);
        o[len++] = '.';
        len += digits(o + len, total - 1 - point);
    }
    if (rng() % 40 == 0) len += (size_t)sprintf(o + len, "e%s%d", rng() % 2 ? "-" : "", (int)(rng() % 12));
    return len;
}

// Fields that stop a run, or that only the general parser reads.
static const char *const odd[] = {"", "abc", " 1.5", "1.5 ", "\"1.5\"", "1.5\r", "nan", "16777216", "-99999999",
                                  "1e40", "1.5e", "--1", "1.2.3", "12345678901234567890", "0x10", "."};

// An ISO time a record, moving on by up to two hours, now and then with a
// fraction, a zone, a space for the T, or not moving on (bad).
static int64_t clock_s = 1700000000;
static size_t iso_time(char *o, unsigned bad) {
    clock_s += (int64_t)(rng() % 7200) + 1;
    if (bad && rng() % (4 * bad) == 0) clock_s -= (int64_t)(rng() % 10000);
    int64_t t = clock_s, day = t / 86400, sec = t % 86400;
    // days since 1970-01-01 to a civil date (Howard Hinnant's algorithm)
    int64_t z = day + 719468, era = z / 146097, doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365, doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153, dd = doy - (153 * mp + 2) / 5 + 1, mm = mp < 10 ? mp + 3 : mp - 9;
    int64_t yy = yoe + era * 400 + (mm <= 2);
    const char *tail = rng() % 20 == 0 ? ".5" : rng() % 20 == 0 ? ".1234567" : rng() % 10 == 0 ? "Z" : "";
    return (size_t)sprintf(o, "%04lld-%02lld-%02lld%c%02lld:%02lld:%02lld%s", (long long)yy, (long long)mm,
                           (long long)dd, rng() % 30 ? 'T' : ' ', (long long)(sec / 3600), (long long)(sec / 60 % 60),
                           (long long)(sec % 60), tail);
}

static unsigned series_id;

// A text of rows records laid out as kind; bad: how often a field is odd.
static size_t text(char *o, size_t rows, const uint8_t *kind, uint32_t nfields, unsigned bad) {
    size_t len = 0;
    for (size_t r = 0; r < rows; r++) {
        uint32_t fields = nfields;
        if (bad && rng() % (20 * bad) == 0) fields = nfields + (rng() % 2 ? 1 : (uint32_t)-1);  // ragged, or blank
        if (bad && rng() % (200 * bad) == 0) fields = nfields + 2100;  // more numbers than a pass takes
        for (uint32_t f = 0; f < fields; f++) {
            if (f) o[len++] = ',';
            uint8_t k = f < nfields ? kind[f] : SF_FIELD_NUMBER;
            if (k == SF_FIELD_TIME) {
                len += iso_time(o + len, bad);
            } else if (k == SF_FIELD_SERIES) {  // runs of one id or two, now and then padded or quoted
                if (rng() % 40 == 0) series_id++;
                else if (rng() % 8 == 0) series_id ^= 1;  // two that interleave
                const char *pad = bad && rng() % (8 * bad) == 0 ? (rng() % 2 ? " " : "\"") : "";
                len += (size_t)sprintf(o + len, "%ss%u%s", pad, series_id, pad);
            } else if (k == SF_FIELD_SKIP) {
                len += (size_t)sprintf(o + len, "%s", rng() % 2 ? "site 7" : "x");
            } else if (bad && rng() % bad == 0) {
                const char *s = odd[rng() % (sizeof odd / sizeof *odd)];
                memcpy(o + len, s, strlen(s));
                len += strlen(s);
            } else {
                len += number(o + len);
            }
        }
        if (rng() % 5 == 0) o[len++] = '\r';
        o[len++] = '\n';
    }
    return len;
}

// The naive parser: the record at p into row and *t, as l would have it
// (its time later than l's last, unless l->any_key); its end + 1, or NULL
// when the fast path must leave it to the general one. Where its series id
// and its time begin, and the id's bytes, in key_at, time_at and key_len.
typedef struct {
    const sf_number_rows_layout *l;
    sf_time_memo memo;
    bool have_last;
    int64_t last;
    unsigned parts;
    size_t key_at, key_len, time_at;
} naive;

static const char *naive_record(naive *nv, const char *p, const char *end, float *row, int64_t *t) {
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    if (!eol || memchr(p, '"', (size_t)(eol - p))) return NULL;
    uint32_t f = 0, k = 0;
    unsigned parts = 0;
    for (const char *s = p;; f++) {
        const char *e = s;
        while (e < eol && *e != ',') e++;
        const char *te = e == eol && e > s && e[-1] == '\r' ? e - 1 : e;
        if (f >= nv->l->nfields) return NULL;
        if (nv->l->kind[f] == SF_FIELD_NUMBER) {
            if (sf_parse_float(s, (size_t)(te - s), &row[k]) != 0 || !(fabsf(row[k]) < 0x1p24f)) return NULL;
            k++;
        } else if (nv->l->kind[f] == SF_FIELD_SERIES) {
            if (!nv->l->any_key &&
                (!nv->l->key || (size_t)(te - s) != nv->l->key_len || memcmp(s, nv->l->key, nv->l->key_len)))
                return NULL;
            nv->key_at = (size_t)(s - p), nv->key_len = (size_t)(te - s);
        } else if (nv->l->kind[f] == SF_FIELD_TIME) {
            if (sf_time_parse_memo(&nv->memo, s, (size_t)(te - s), t, &parts) != 0 || parts & SF_TIME_TRUNCATED ||
                (nv->have_last && !nv->l->any_key && *t <= nv->last))
                return NULL;
            nv->time_at = (size_t)(s - p);
        }
        if (e == eol) break;
        s = e + 1;
    }
    if (f + 1 != nv->l->nfields) return NULL;
    nv->parts = sf_time_parts_join(nv->parts, parts);
    nv->have_last = true, nv->last = *t;
    return eol + 1;
}

static void check_text(sf_number_rows_fn fn, const char *what, const char *buf, size_t len,
                       sf_number_rows_layout l, size_t max_rows, bool expect_fast) {
    const char *p = buf, *end = buf + len;
    uint32_t ncols = l.ncols;
    bool timed = false;
    for (uint32_t f = 0; f < l.nfields; f++) timed |= l.kind[f] == SF_FIELD_TIME;
    sf_time_memo memo = {0};
    l.memo = &memo, l.time_same_day = true, l.have_last = false, l.parts = 0;
    naive nv = {.l = &l};
    char key[64];
    l.key = NULL, l.key_len = 0;
    float *got = malloc(len * sizeof(float)), *want = malloc(ncols * sizeof(float));
    int64_t *times = malloc(len * sizeof *times);
    uint8_t *parts = malloc(len);
    uint32_t *ends = malloc(len * sizeof *ends), *keys = malloc(len * sizeof *keys);
    uint32_t *time_starts = malloc(len * sizeof *time_starts);
    uint16_t *key_lens = malloc(len * sizeof *key_lens);
    bool keyed = false;
    for (uint32_t f = 0; f < l.nfields; f++) keyed |= l.kind[f] == SF_FIELD_SERIES;
    size_t fast = 0, calls = 0;
    while (p < end && got && want && times && parts && ends && keys && time_starts && key_lens) {
        const char *next = NULL;
        nv.have_last = l.have_last, nv.last = l.last_time, nv.parts = l.parts;
        sf_number_rows_out out = {.rows = got, .times = times, .parts = parts, .ends = ends, .keys = keys,
                                  .key_lens = key_lens, .time_starts = time_starts};
        size_t n = fn(&l, p, end, max_rows, &out, &next);
        calls++;
        const char *q = p;
        for (size_t r = 0; r < n; r++) {
            int64_t t = 0;
            const char *after = naive_record(&nv, q, end, want, &t);
            if (!after) {
                CHECK(0, "%s: record at byte %zu parsed, which the naive parser refuses", what, (size_t)(q - buf));
                goto out;
            }
            for (uint32_t k = 0; k < ncols; k++)
                if (memcmp(&got[r * ncols + k], &want[k], 4)) {
                    CHECK(0, "%s: byte %zu field %u: %a, want %a", what, (size_t)(q - buf), k, got[r * ncols + k],
                          want[k]);
                    goto out;
                }
            if (timed && (times[r] != t || parts[r] != (uint8_t)nv.parts)) {
                CHECK(0, "%s: byte %zu: time %lld parts %u, want %lld parts %u", what, (size_t)(q - buf),
                      (long long)times[r], parts[r], (long long)t, nv.parts);
                goto out;
            }
            CHECK(ends[r] == (uint32_t)(after - p), "%s: record at byte %zu ends at %u, want %zu", what,
                  (size_t)(q - buf), ends[r], (size_t)(after - p));
            CHECK(!keyed || (keys[r] == (uint32_t)(q - p) + nv.key_at && key_lens[r] == nv.key_len),
                  "%s: record at byte %zu: series id at %u, %u bytes, want %zu, %zu", what, (size_t)(q - buf),
                  keys[r], key_lens[r], (size_t)(q - p) + nv.key_at, nv.key_len);
            CHECK(!timed || time_starts[r] == (uint32_t)(q - p) + nv.time_at,
                  "%s: record at byte %zu: time at %u, want %zu", what, (size_t)(q - buf), time_starts[r],
                  (size_t)(q - p) + nv.time_at);
            q = after;
        }
        CHECK(next == q, "%s: next at byte %zu, want %zu", what, (size_t)(next - buf), (size_t)(q - buf));
        CHECK(!timed || !n || (l.last_time == nv.last && l.parts == nv.parts), "%s: layout's last time or parts", what);
        fast += n;
        // Stopped short: at a record the naive parser refuses, at max_rows,
        // or where the last 64 bytes begin. Then past it, as the caller
        // does, with no time before the next run.
        const char *eol = memchr(q, '\n', (size_t)(end - q));
        naive again = nv;
        int64_t t;
        const char *after = naive_record(&again, q, end, want, &t);
        if (q < end && after && n < max_rows && eol < end - 64) {
            CHECK(0, "%s: stopped at byte %zu, a record it could parse", what, (size_t)(q - buf));
            goto out;
        }
        if (n < max_rows) {
            // The general path takes the record: the next run goes on in
            // its series (its id's bytes as they are), with no time before.
            p = eol ? eol + 1 : end, l.have_last = false;
            for (uint32_t f = 0, at = 0; q < end && f < l.nfields; f++) {
                size_t e = at;
                while (q + e < eol && q[e] != ',') e++;
                if (l.kind[f] == SF_FIELD_SERIES && e - at < sizeof key) {
                    memcpy(key, q + at, e - at);
                    l.key = key, l.key_len = e - at;
                }
                at = (uint32_t)e + 1;
                if (q + e >= eol) break;
            }
        } else {
            p = q;
        }
    }
    CHECK(fast > 0 || !expect_fast, "%s: the fast path parsed nothing in %zu calls", what, calls);
out:
    free(got);
    free(want);
    free(times);
    free(parts);
    free(ends);
    free(keys);
    free(time_starts);
    free(key_lens);
}

// What lets the vector parser round m * 10^-k (in double) to float without
// sf_decimal_to_float's midpoint check: no body of 8 bytes (8 digits, or 7
// and a point) below 2^24 gives a double within 2^11 ulps of a float
// midpoint (its low 29 bits within 2^11 of 2^28). All of them, counted.
static void no_midpoints(void) {
    long near = 0;
    for (int k = 0; k <= 7; k++) {
        double scale = sf_p10[-k - SF_P10_MIN];
        for (uint64_t m = 1; m < (k ? 10000000u : 100000000u); m++) {
            double d = (double)m * scale;
            uint64_t bits;
            memcpy(&bits, &d, 8);
            uint64_t low = bits & ((1ull << 29) - 1);
            near += d < 0x1p24 && low - (1ull << 28) + (1u << 11) <= (1u << 12);
        }
    }
    CHECK(near == 0, "%ld bodies of 8 bytes lie within 2^11 double ulps of a float midpoint", near);
}

// Every layout at every rate of odd fields through the variant fn.
static void check_variant(sf_number_rows_fn fn, const char *name) {
    // Numbers only, then a time first or last and a skipped field.
    static const char *const layouts[] = {"n", "nn", "nnn", "nnnnnnn", "nnnnnnnn", "nnnnnnnnn", "nnnnnnnnnnnnnnnnn",
                                          "tnnn", "nntn", "nnnt", "snn", "tsnnnnnn", "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn",
                                          "tkn", "knnn", "nntk", "sktn"};
    size_t cap = 1 << 22;
    char *buf = malloc(cap + 64);  // 8 bytes past the end are read: the caller's padding
    CHECK(buf != NULL, "out of memory");
    for (size_t w = 0; buf && w < sizeof layouts / sizeof *layouts; w++) {
        uint8_t kind[64];
        uint32_t nfields = (uint32_t)strlen(layouts[w]), ncols = 0;
        for (uint32_t f = 0; f < nfields; f++) {
            char c = layouts[w][f];
            kind[f] = c == 'n' ? SF_FIELD_NUMBER : c == 't' ? SF_FIELD_TIME : c == 'k' ? SF_FIELD_SERIES : SF_FIELD_SKIP;
            ncols += c == 'n';
        }
        sf_number_rows_layout l = {.kind = kind, .nfields = nfields, .ncols = ncols, .delim = ','};
        for (unsigned bad = 0; bad <= 64; bad = bad ? bad * 4 : 1) {
            size_t rows = 20000 / nfields + 10;
            size_t len = text(buf, rows, kind, nfields, bad);
            memset(buf + len, 0, 64);
            char what[128];
            snprintf(what, sizeof what, "%s, layout %s, bad 1/%u", name, layouts[w], bad);
            check_text(fn, what, buf, len, l, SIZE_MAX, bad == 0 || (bad >= 16 && nfields <= 9));
            check_text(fn, what, buf, len, l, 1 + rng() % 7, bad == 0);  // runs cut by max_rows
            if (!strchr(layouts[w], 'k')) continue;
            // Rows held to be regrouped: any series, times in any order.
            sf_number_rows_layout any = l;
            any.any_key = true;
            snprintf(what, sizeof what, "%s, layout %s, any series, bad 1/%u", name, layouts[w], bad);
            check_text(fn, what, buf, len, any, SIZE_MAX, bad == 0 || (bad >= 16 && nfields <= 9));
            check_text(fn, what, buf, len, any, 1 + rng() % 7, bad == 0);
        }
    }
    free(buf);
}

int main(void) {
    no_midpoints();
    static const struct {
        enum sf_scan_kind kind;
        const char *name;
    } variants[] = {{SF_SCAN_AVX512, "AVX-512"}, {SF_SCAN_AVX2, "AVX2"}};
    int checked = 0;
    for (size_t v = 0; v < sizeof variants / sizeof *variants; v++) {
        sf_number_rows_fn fn = sf_number_rows_pick(variants[v].kind);
        printf("%s: %s\n", variants[v].name, fn ? "checked" : "not on this CPU");
        if (fn) check_variant(fn, variants[v].name), checked++;
    }
    CHECK(sf_number_rows_pick(SF_SCAN_SWAR) == NULL, "SF_SCAN_SWAR has no vector parser");
    if (!checked) {
        printf("SKIP: no vector parser on this CPU\n");
        return 77;
    }
    return TEST_EXIT();
}
