// The vector parser of plain numeric records (sf_number_rows_pick, scan.c)
// against a naive one written here: records split at the delimiter and the
// line feed, each field read by sf_parse_float. On random records of every
// field shape the fast path takes or leaves (signs, points, lengths around
// its 8-byte limit, exponents, CRLF) and of the ones that must stop it (a
// missing value, text, spaces, a quote, a CR inside a record, a ragged or
// blank line, a value of 2^24 or more): the same floats bit for bit, each
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

// A text of rows records of ncols fields; bad: how often a field is odd.
static size_t text(char *o, size_t rows, uint32_t ncols, unsigned bad) {
    size_t len = 0;
    for (size_t r = 0; r < rows; r++) {
        uint32_t fields = ncols;
        if (bad && rng() % (20 * bad) == 0) fields = ncols + (rng() % 2 ? 1 : (uint32_t)-1);  // ragged, or blank
        for (uint32_t f = 0; f < fields; f++) {
            if (f) o[len++] = ',';
            if (bad && rng() % bad == 0) {
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

// The naive parser: the record at p into row; its end + 1, or NULL when
// the fast path must leave it to the general one.
static const char *naive_record(const char *p, const char *end, uint32_t ncols, float *row) {
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    if (!eol || memchr(p, '"', (size_t)(eol - p))) return NULL;
    uint32_t f = 0;
    for (const char *s = p;; f++) {
        const char *e = s;
        while (e < eol && *e != ',') e++;
        const char *te = e == eol && e > s && e[-1] == '\r' ? e - 1 : e;
        if (f >= ncols || sf_parse_float(s, (size_t)(te - s), &row[f]) != 0 || !(fabsf(row[f]) < 0x1p24f))
            return NULL;
        if (e == eol) break;
        s = e + 1;
    }
    return f + 1 == ncols ? eol + 1 : NULL;
}

static void check_text(sf_number_rows_fn fn, const char *what, const char *buf, size_t len, uint32_t ncols,
                       size_t max_rows, bool expect_fast) {
    const char *p = buf, *end = buf + len;
    float *got = malloc(len * sizeof(float)), *want = malloc(ncols * sizeof(float));
    uint32_t *ends = malloc(len * sizeof *ends);
    size_t fast = 0, calls = 0;
    while (p < end && got && want && ends) {
        const char *next = NULL;
        size_t n = fn(p, end, ',', ncols, got, max_rows, ends, &next);
        calls++;
        const char *q = p;
        for (size_t r = 0; r < n; r++) {
            const char *after = naive_record(q, end, ncols, want);
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
            CHECK(ends[r] == (uint32_t)(after - p), "%s: record at byte %zu ends at %u, want %zu", what,
                  (size_t)(q - buf), ends[r], (size_t)(after - p));
            q = after;
        }
        CHECK(next == q, "%s: next at byte %zu, want %zu", what, (size_t)(next - buf), (size_t)(q - buf));
        fast += n;
        // Stopped short: at a record the naive parser refuses, at max_rows,
        // or where the last 64 bytes begin. Then past it, as the caller does.
        const char *eol = memchr(q, '\n', (size_t)(end - q));
        const char *after = naive_record(q, end, ncols, want);
        if (q < end && after && n < max_rows && eol < end - 64) {
            CHECK(0, "%s: stopped at byte %zu, a record it could parse", what, (size_t)(q - buf));
            goto out;
        }
        p = eol ? eol + 1 : end;
        if (n == max_rows) p = q;
    }
    CHECK(fast > 0 || !expect_fast, "%s: the fast path parsed nothing in %zu calls", what, calls);
out:
    free(got);
    free(want);
    free(ends);
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

int main(void) {
    no_midpoints();
    sf_number_rows_fn fn = sf_number_rows_pick();
    if (!fn) {
        printf("SKIP: no vector parser on this CPU\n");
        return 77;
    }
    static const uint32_t widths[] = {1, 2, 3, 7, 8, 9, 17, 64};
    size_t cap = 1 << 22;
    char *buf = malloc(cap + 64);  // 8 bytes past the end are read: the caller's padding
    CHECK(buf != NULL, "out of memory");
    for (size_t w = 0; buf && w < sizeof widths / sizeof *widths; w++) {
        for (unsigned bad = 0; bad <= 64; bad = bad ? bad * 4 : 1) {
            size_t rows = 20000 / widths[w] + 10;
            size_t len = text(buf, rows, widths[w], bad);
            memset(buf + len, 0, 64);
            char what[64];
            snprintf(what, sizeof what, "%u columns, bad 1/%u", widths[w], bad);
            check_text(fn, what, buf, len, widths[w], SIZE_MAX, bad == 0 || (bad >= 16 && widths[w] <= 9));
            check_text(fn, what, buf, len, widths[w], 1 + rng() % 7, bad == 0);  // runs cut by max_rows
        }
    }
    free(buf);
    return TEST_EXIT();
}
