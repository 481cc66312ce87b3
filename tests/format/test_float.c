// sf_parse_float must round exactly like strtof and sf_format_float must
// print the shortest text that reads back to the same bits. Both sit on the
// path of every packed value, so the checks run on millions of inputs built
// to land where float parsers go wrong: midpoints between floats, long digit
// strings, subnormals, the overflow edge and extreme exponents.
//
// usage: test_float [--slow]   (--slow: 10x the random inputs, every float
// of a few binades, a strided sweep of all 2^32 patterns)
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pack/pack.h"
#include "tests/common.h"
#include "tests/format/packutil.h"

#define MAX_FAILURES 30  // a broken parser fails millions of times: stop early

static uint64_t rng_state = 0x5eedf10a7c0ffee1ull;

static uint64_t rng(void) { return sf_splitmix64(&rng_state); }

static int rnd(int lo, int hi) { return lo + (int)(rng() % (uint64_t)(hi - lo + 1)); }

static long parse_checks;

// sf_parse_float(s) against strtof(s). s is copied in front of digits that
// are not part of it, so reading past n shows up as a wrong value.
static void check_parse(const char *s) {
    size_t n = strlen(s);
    static char *buf;
    static size_t cap;
    if (n + 8 > cap) {
        cap = 2 * (n + 8);
        buf = realloc(buf, cap);
        if (!buf) abort();
    }
    memcpy(buf, s, n);
    memcpy(buf + n, "7777777", 8);
    char *end;
    float want = strtof(s, &end);
    float got = 1234.5f;
    int rc = sf_parse_float(buf, n, &got);
    parse_checks++;
    // Messages show at most 100 bytes of the long fields.
    if (*end != 0 || n == 0) {
        CHECK(rc == SF_EFORMAT, "\"%.100s\" is not a plain decimal: expected SF_EFORMAT, got %d", s, rc);
    } else if (isinf(want)) {
        CHECK(rc == SF_ERANGE, "\"%.100s\" (%zu bytes) overflows in strtof: expected SF_ERANGE, got %d", s, n, rc);
    } else {
        CHECK(rc == 0 && bits_of(got) == bits_of(want),
              "\"%.100s\" (%zu bytes): rc %d, got %a (0x%08x), strtof gives %a (0x%08x)", s, n, rc, (double)got,
              bits_of(got), (double)want, bits_of(want));
    }
}

// A decimal as digits d[0..len) (d[0] != '0') and x: value 0.d * 10^x.
typedef struct {
    bool neg;
    char d[400];
    int len;
    long x;
} decimal;

// The digits of printf's "%e" text, as they are (trailing zeros kept).
static void decimal_of_text(decimal *dec, const char *t) {
    dec->neg = *t == '-';
    const char *e = strchr(t, 'e');
    dec->x = strtol(e + 1, NULL, 10) + 1;
    dec->len = 0;
    for (const char *p = t + dec->neg; p < e; p++)
        if (*p != '.') dec->d[dec->len++] = *p;
}

static void trim(decimal *dec) {
    while (dec->len > 1 && dec->d[dec->len - 1] == '0') dec->len--;
}

// The exact decimal value of a double: printf with enough digits prints
// every digit of a binary fraction (fewer than 120 significant digits for
// the values here, which lie in float range).
static void decimal_of_double(decimal *dec, double v) {
    char t[512];
    snprintf(t, sizeof t, "%.200e", v);
    decimal_of_text(dec, t);
    trim(dec);
}

// Adds (+1) or subtracts (-1) one unit in the place of the last digit.
static void bump(decimal *dec, int dir) {
    int i = dec->len - 1;
    if (dir > 0) {
        while (i >= 0 && dec->d[i] == '9') dec->d[i--] = '0';
        if (i < 0) {  // 999 -> 1000: one more digit in front
            memmove(dec->d + 1, dec->d, (size_t)dec->len);
            dec->d[0] = '1';
            dec->len++;
            dec->x++;
        } else {
            dec->d[i]++;
        }
    } else {
        while (dec->d[i] == '0') dec->d[i--] = '9';
        dec->d[i]--;
        if (dec->d[0] == '0') {  // 1000 -> 9999 one place lower: the next smaller decimal of as many digits
            memmove(dec->d, dec->d + 1, (size_t)dec->len - 1);
            dec->d[dec->len - 1] = '9';
            dec->x--;
        }
    }
    trim(dec);
}

// Writes the value in one of the many spellings a CSV may hold: sign or
// none, the point anywhere (or absent), padding zeros on either side, an
// exponent in e or E with an optional sign and leading zeros, or none.
static void render(const decimal *dec, char *out) {
    char *o = out;
    if (dec->neg) *o++ = '-';
    else if (rng() % 8 == 0) *o++ = '+';
    // The point sits after q digits of d (q < 0: zeros after the point;
    // q > len: zeros before it); the exponent y makes up the rest.
    int q;
    if (dec->x >= -8 && dec->x <= 30 && rng() % 3 == 0) q = (int)dec->x;  // often no exponent at all
    else q = rnd(-3, dec->len + 3);
    long y = dec->x - q;
    int lead = rng() % 6 == 0 ? rnd(1, 3) : 0;
    for (int i = 0; i < lead; i++) *o++ = '0';
    if (q <= 0) {
        if (lead == 0 && rng() % 2) *o++ = '0';
        *o++ = '.';
        for (int i = 0; i < -q; i++) *o++ = '0';
        memcpy(o, dec->d, (size_t)dec->len);
        o += dec->len;
    } else if (q >= dec->len) {
        memcpy(o, dec->d, (size_t)dec->len);
        o += dec->len;
        for (int i = dec->len; i < q; i++) *o++ = '0';
        if (rng() % 3 == 0) *o++ = '.';
    } else {
        memcpy(o, dec->d, (size_t)q);
        o += q;
        *o++ = '.';
        memcpy(o, dec->d + q, (size_t)(dec->len - q));
        o += dec->len - q;
    }
    if (rng() % 5 == 0) {  // zeros after the last digit change nothing
        if (q >= dec->len && o[-1] != '.') *o++ = '.';
        for (int i = rnd(1, 8); i > 0; i--) *o++ = '0';
    }
    if (y != 0 || rng() % 10 == 0) {
        *o++ = rng() % 2 ? 'e' : 'E';
        if (y < 0) *o++ = '-';
        else if (rng() % 2) *o++ = '+';
        for (int i = rng() % 8 == 0 ? rnd(1, 4) : 0; i > 0; i--) *o++ = '0';
        o += sprintf(o, "%ld", labs(y));
    }
    *o = 0;
}

static void check_decimal(const decimal *dec) {
    char s[1024];
    render(dec, s);
    check_parse(s);
}

// 1 to 25 random significant digits at a random magnitude: mostly within
// float range, some beyond both ends, a few with five-digit exponents.
static void random_decimal(decimal *dec) {
    dec->neg = rng() % 2;
    dec->len = rnd(1, 25);
    for (int i = 0; i < dec->len; i++) dec->d[i] = (char)('0' + rng() % 10);
    if (dec->d[0] == '0') dec->d[0] = (char)('1' + rng() % 9);
    int kind = rnd(0, 99);
    if (kind < 80) dec->x = rnd(-46, 40);
    else if (kind < 95) dec->x = rnd(-65, 50);
    else dec->x = rng() % 2 ? rnd(99990, 100010) : -rnd(99990, 100010);
}

// A random float's bits: any finite pattern, or one from the subnormal or
// the top binade, where strtof rounds differently.
static float random_float(void) {
    for (;;) {
        uint32_t u = (uint32_t)rng();
        int kind = rnd(0, 9);
        if (kind == 0) u &= 0x807fffffu;  // subnormal
        else if (kind == 1) u |= 0x7f000000u;  // top binade (or inf/nan: retried)
        float v = float_of(u);
        if (isfinite(v)) return v;
    }
}

// The exact midpoint between |f| and the next float up (2^128 beyond
// FLT_MAX), as text, nudged and cut: a parser that rounds in double or looks
// at too few digits sends these to the wrong neighbour.
static void check_midpoints(float f) {
    f = fabsf(f);
    double lo = f, hi = f == FLT_MAX ? 0x1p128 : (double)nextafterf(f, INFINITY);
    decimal mid;
    decimal_of_double(&mid, lo + (hi - lo) / 2);
    mid.neg = rng() % 2;
    check_decimal(&mid);
    decimal up = mid, down = mid;
    bump(&up, 1);
    bump(&down, -1);
    check_decimal(&up);
    check_decimal(&down);
    decimal cut = mid;
    int keep = rnd(9, 20);
    if (cut.len > keep) {
        cut.len = keep;
        trim(&cut);
        check_decimal(&cut);
        bump(&cut, 1);
        check_decimal(&cut);
    }
}

// f itself printed with 1 to 12 significant digits.
static void check_rounded(float f) {
    if (f == 0) return;
    char t[64];
    snprintf(t, sizeof t, "%.*e", rnd(0, 11), (double)f);
    decimal dec;
    decimal_of_text(&dec, t);
    trim(&dec);
    check_decimal(&dec);
}

static void test_parse_fixed(void) {
    static const char *const bad[] = {
        "1e", "--1", ".", "", "0x10", "1.2.3", "nan", "inf", "-inf", "infinity", "NaN", "+", "-", "e5", ".e1",
        "1e+", "1e-", "1ee5", "1e5.5", "1e5e5", " 1", "1 ", "1,0", "++1", "+-1", "1-", "0x", "1f", "1.5x", "1_000",
        "\xd9\xa1", "e", "E1", "-.", "+.", "1.e", "1e 5", "1e--5", "0b101",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        float v = 7;
        int rc = sf_parse_float(bad[i], strlen(bad[i]), &v);
        CHECK(rc == SF_EFORMAT, "\"%s\": expected SF_EFORMAT (not a plain decimal), got %d", bad[i], rc);
    }
    static const char *const good[] = {
        "0", "-0", "+0", "0.0", "-0.0e-99999", "0e99999", ".5", "5.", "-.5", "+5.", "00012.5000", "1e0",
        "1E+0", "1e-0", "1e00000000000000000000038", "3.4028234663852886e38", "3.4028235e38",
        "3.40282356779733661637539395458142568447e38", "3.40282356779733661637539395458142568448e38",
        "-3.40282356779733661637539395458142568449e38", "3.5e38", "1e39", "-1e39", "1e99999", "-1e99999",
        "1e-99999", "1.17549435e-38", "1.1754942e-38", "1.4e-45", "1.401298464324817e-45",
        "7.006492321624085354618e-46", "7.006492321624085354619e-46", "7.0064923216240853546e-46", "1e-46",
        "2.5e-46", "16777217", "16777217.000000000000000000001", "16777216.999999999999999999", "33554435",
        "0.1", "0.2", "0.3", "9999999999999999999999999", "123456789012345678901234567890e-20",
        "0.000000000000000000000000000000000000000000000000000000000000000000000001e72",
    };
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) check_parse(good[i]);
    // n bounds the text: the rest of the buffer is not part of the number.
    float v = 0;
    CHECK(sf_parse_float("12345", 3, &v) == 0 && v == 123, "\"12345\" with n = 3 gave %g", (double)v);
    CHECK(sf_parse_float("1.5e10", 4, &v) == SF_EFORMAT, "\"1.5e\" (n = 4) is not a number");
}

// Exponents that need more than a few digits only decide the result together
// with a mantissa of matching length: 10^6 zeros against e-1000000 is 1.
static void test_parse_long_fields(void) {
    size_t zeros = 2000000;  // seven-digit exponents
    char *s = malloc(zeros + 64);
    if (!s) abort();
    s[0] = '1';
    memset(s + 1, '0', zeros);
    strcpy(s + 1 + zeros, "e-2000000");
    check_parse(s);
    strcpy(s, "0.");
    memset(s + 2, '0', zeros);
    strcpy(s + 2 + zeros, "1e2000001");
    check_parse(s);
    strcpy(s, "-0.");
    memset(s + 3, '0', zeros);
    strcpy(s + 3 + zeros, "15e1999960");  // a subnormal
    check_parse(s);
    free(s);
}

static void test_parse_random(long n) {
    decimal dec;
    for (long i = 0; i < n && test_failures < MAX_FAILURES; i++) {
        random_decimal(&dec);
        check_decimal(&dec);
        float f = random_float();
        check_midpoints(f);
        check_rounded(f);
    }
}

// Every float of one binade (and its midpoints): where a parser's double
// shortcut is wrong it is wrong for a pattern of mantissas, not for one.
static void test_parse_binade(int exp2, uint32_t stride) {
    for (uint32_t m = 0; m < (1u << 23) && test_failures < MAX_FAILURES; m += stride) {
        float f = float_of((uint32_t)(exp2 + 127) << 23 | m);
        check_midpoints(f);
    }
}

// ---- sf_parse_float behind the CSV packer's 8-byte fast path ----

// A CSV of nrows x ncols decimals packed from memory with `threads` threads
// (2: the helper thread parses part of each buffer), decoded, each value's
// bits compared with want (column-major).
static void pack_and_compare(const char *csv, size_t len, const float *want, long nrows, int ncols, char delim,
                             int threads) {
    char *dir = scratch_dir("float"), path[PATH_LEN];
    path_in(path, dir, "short.sfpack");
    sf_csv_pack_opts o = {.delimiter = delim,
                          .pack = {.chunk_rows = (uint32_t)nrows, .level = 1, .filter = SF_FILTER_NONE, .threads = threads}};
    sf_err e = {0};
    sf_csv_pack_stats st = {0};
    int rc = sf_csv_pack_mem(csv, len, "short.csv", path, &o, &st, &e);
    CHECK(rc == 0, "packing decimals (%d thread(s)): %s", threads, e.msg);
    CHECK(threads < 2 || rc || st.rows_helper > 0, "the helper thread parsed no rows");
    sf_pack *p = NULL;
    if (!rc) rc = sf_pack_open(&p, path, &e);
    CHECK(rc == 0, "opening the packed decimals: %s", e.msg);
    if (p) {
        const sf_pack_info *in = sf_pack_get_info(p);
        CHECK(in->nrows == (uint64_t)nrows && in->nchunks == 1, "%llu rows in %llu chunks",
              (unsigned long long)in->nrows, (unsigned long long)in->nchunks);
        void *stored = malloc(sf_pack_max_stored_size(p));
        float *got = malloc(sf_pack_chunk_raw_size(p, 0));
        sf_pack_dctx *d = sf_pack_dctx_create();
        rc = sf_pack_chunk_read(p, 0, stored, &e);
        if (!rc) rc = sf_pack_chunk_decode(d, p, 0, stored, got, &e);
        CHECK(rc == 0, "decoding: %s", e.msg);
        for (size_t i = 0; !rc && i < (size_t)nrows * ncols && test_failures < MAX_FAILURES; i++)
            CHECK(bits_of(got[i]) == bits_of(want[i]), "%d thread(s), row %zu column %zu: got %a, strtof gives %a", threads,
                  i % (size_t)nrows, i / (size_t)nrows, (double)got[i], (double)want[i]);
        sf_pack_dctx_free(d);
        free(stored);
        free(got);
        sf_pack_close(p);
    }
    remove_dir(dir);
}

// Short decimals, 8 bytes or fewer, with and without sign: written into a
// CSV, packed from memory, decoded, compared with strtof.
static void test_csv_short(long nrows, char delim, const char *eol) {
    const int ncols = 4;
    size_t cap = (size_t)nrows * ncols * 12 + 64;
    char *csv = malloc(cap);
    float *want = malloc((size_t)nrows * ncols * sizeof *want);
    if (!csv || !want) abort();
    size_t len = (size_t)sprintf(csv, "a%cb%cc%cd%s", delim, delim, delim, eol);
    for (long r = 0; r < nrows; r++) {
        for (int c = 0; c < ncols; c++) {
            char v[16], *o = v;
            int total = rnd(1, 8);  // bytes after the sign
            if (rng() % 3 == 0) *o++ = '-';
            int point = rng() % 4 == 0 ? -1 : rnd(0, total - 1);
            for (int i = 0; i < total; i++) *o++ = i == point ? '.' : (char)('0' + rng() % 10);
            *o = 0;
            if (!strcmp(v + (v[0] == '-'), ".")) strcpy(v, "7");  // a lone point is no number
            want[(size_t)c * nrows + r] = strtof(v, NULL);
            len += (size_t)sprintf(csv + len, "%s%s", v, c + 1 < ncols ? (char[]){delim, 0} : "");
        }
        // The last record ends without a line break, as some files do.
        if (r + 1 < nrows) len += (size_t)sprintf(csv + len, "%s", eol);
    }
    pack_and_compare(csv, len, want, nrows, ncols, delim, 1);
    free(csv);
    free(want);
}

// The fast paths against strtof on the hard cases, through the packer
// (the main thread's and the helper's 8-byte path, and the general one):
// exact midpoints between floats (2^24 + 1 rounds to even), leading zeros,
// signs, 17 and more digits, exponents, subnormals, the largest float and
// the smallest, each in rows enough for the helper thread to take part.
static void test_csv_hard(int threads) {
    static const char *const hard[] = {
        "16777217", "-16777217", "16777219", "33554434", "33554435", "33554438", "67108867", "99999999",
        "-9999999", "0", "-0", "+0", "0.0", "-0.00000", "00000001", "-0000001", "0000.125", "-.000001",
        ".5", "5.", "-.5", "+5.", "0.1", "0.2", "0.3", "1.0000001", "1.00000006", "0.99999997", "8388607.5",
        "8388608.5", "-8388609.5", "4194303.75", "16777216.999999999999999999", "16777217.000000000000000000001",
        "3.4028234663852886e38", "3.4028235e38", "-3.40282346638528859811704183484516925440e38",
        "1.17549435e-38", "1.1754942e-38", "1.4e-45", "1.401298464324817e-45", "7.006492321624085354619e-46",
        "2.5e-45", "-4.2e-45", "123456789012345678901234567890e-20", "1e0", "1E+0", "-1e-0", "12345678e-7",
        "0.000000000000000000000000000000000000000000000000000000000000000000000001e72", "1.5e10",
        "9007199254740993", "9007199254740993e-16", "0.30000001192092896", "0.3000000119209289551",
    };
    const int ncols = 4, nh = (int)(sizeof hard / sizeof *hard);
    const long nrows = 40000;  // 1.5 MB: the helper parses part of each buffer
    size_t cap = (size_t)nrows * ncols * 96 + 64;
    char *csv = malloc(cap);
    float *want = malloc((size_t)nrows * ncols * sizeof *want);
    if (!csv || !want) abort();
    size_t len = (size_t)sprintf(csv, "a,b,c,d\n");
    for (long r = 0; r < nrows; r++)
        for (int c = 0; c < ncols; c++) {
            const char *v = hard[(r * ncols + c) % nh];
            want[(size_t)c * nrows + r] = strtof(v, NULL);
            len += (size_t)sprintf(csv + len, "%s%s", v, c + 1 < ncols ? "," : "\n");
        }
    pack_and_compare(csv, len, want, nrows, ncols, ',', threads);
    free(csv);
    free(want);
}

// Every decimal of `digits` digits (leading zeros included) with the point
// at each place or nowhere, signed and not, straight into sf_parse_float: the
// shapes the CSV fast path takes (up to 8 bytes with 6 digits).
static void test_parse_all_short(int digits) {
    long count = 1;
    for (int i = 0; i < digits; i++) count *= 10;
    for (int point = -1; point <= digits; point++)
        for (long v = 0; v < count && test_failures < MAX_FAILURES; v++) {
            char s[32], *o = s;
            *o++ = v % 2 ? '-' : '+';
            char num[16];
            long t = v;
            for (int i = digits - 1; i >= 0; i--, t /= 10) num[i] = (char)('0' + t % 10);
            for (int i = 0; i <= digits; i++) {
                if (i == point) *o++ = '.';
                if (i < digits) *o++ = num[i];
            }
            *o = 0;
            check_parse(v % 3 ? s + 1 : s);  // with a sign or without
        }
}

// ---- sf_format_float ----

// Significant digits of a formatted number (sign, point, exponent, leading
// and trailing zeros left out).
static int sig_digits(const char *s) {
    const char *p = s + (*s == '-'), *e = strpbrk(p, "eE");
    if (!e) e = p + strlen(p);
    while (p < e && (*p == '0' || *p == '.')) p++;
    while (e > p && (e[-1] == '0' || e[-1] == '.')) e--;
    int n = 0;
    for (; p < e; p++) n += *p != '.';
    return n;
}

static bool reads_back(const char *s, float v) { return bits_of(strtof(s, NULL)) == bits_of(v); }

// Whether some decimal with p significant digits reads back to v: the one
// nearest v or either neighbour (the rounding interval of a power of two is
// wider above than below, so the nearest may miss while the next one hits).
static bool some_decimal_reads_back(float v, int p) {
    char t[64];
    snprintf(t, sizeof t, "%.*e", p - 1, (double)v);
    decimal dec;
    decimal_of_text(&dec, t);
    for (int dir = -1; dir <= 1; dir++) {
        decimal c = dec;
        if (dir) bump(&c, dir);
        char s[64];
        snprintf(s, sizeof s, "%s0.%.*se%ld", c.neg ? "-" : "", c.len, c.d, c.x);
        if (reads_back(s, v)) return true;
    }
    return false;
}

static void check_format(float v, bool thorough) {
    char buf[64], g9[32];
    memset(buf, 'x', sizeof buf);
    int len = sf_format_float(buf, v);
    CHECK(len > 0 && len <= 16 && (size_t)len == strnlen(buf, sizeof buf), "%a: length %d for \"%.20s\"", (double)v,
          len, buf);
    if (len <= 0 || len > 16) return;
    CHECK(reads_back(buf, v), "%a (0x%08x): \"%s\" reads back as %a", (double)v, bits_of(v), buf,
          (double)strtof(buf, NULL));
    int g9len = snprintf(g9, sizeof g9, "%.9g", (double)v);
    CHECK(len <= g9len, "%a: \"%s\" is longer than %%.9g \"%s\"", (double)v, buf, g9);
    // Plain integers are printed in full (documented in float.c: they read
    // better than 1.2345679e+08); everything else must be the shortest.
    if (!strpbrk(buf, ".e") && fabsf(v) >= 1) {
        char f0[32];
        snprintf(f0, sizeof f0, "%.0f", (double)v);
        CHECK(strcmp(buf, f0) == 0 && fabsf(v) < 1e9f, "%a: \"%s\" is not its integer value %s", (double)v, buf, f0);
        return;
    }
    int k = sig_digits(buf);
    for (int p = 1; p < k; p++) {
        char t[400];
        snprintf(t, sizeof t, "%.*g", p, (double)v);
        CHECK(!reads_back(t, v), "%a: \"%s\" has %d digits, \"%s\" has %d and reads back", (double)v, buf, k, t, p);
        if (thorough)
            CHECK(!some_decimal_reads_back(v, p), "%a: \"%s\" has %d digits but a %d-digit decimal reads back",
                  (double)v, buf, k, p);
    }
}

static void test_format_fixed(void) {
    const float fixed[] = {0.0f, -0.0f, FLT_MAX, -FLT_MAX, FLT_MIN, FLT_TRUE_MIN, -FLT_TRUE_MIN, 1, -1, 0.1f,
                           1e8f, 123456792.0f, 16777216.0f, 1e9f, 999999936.0f, 0.0001f, 1e-5f, 3.0e-45f, 110};
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++) check_format(fixed[i], true);
    char buf[32];
    sf_format_float(buf, -0.0f);
    CHECK(strcmp(buf, "-0") == 0, "-0 printed as \"%s\"", buf);
    sf_format_float(buf, 110);
    CHECK(strcmp(buf, "110") == 0, "110 printed as \"%s\"", buf);
    // Powers of two have the lopsided rounding interval: test them all.
    for (uint32_t u = 0x00800000; u < 0x7f800000; u += 0x00800000) {
        check_format(float_of(u), true);
        check_format(float_of(u | 0x80000000u), true);
    }
    for (int i = 0; i < 23; i++) check_format(float_of(1u << i), true);
}

static void test_format_random(long n) {
    for (long i = 0; i < n && test_failures < MAX_FAILURES; i++) check_format(random_float(), i % 16 == 0);
}

static void test_format_sweep(uint32_t first, uint64_t end, uint32_t stride) {
    for (uint64_t u = first; u < end && test_failures < MAX_FAILURES; u += stride) {
        float v = float_of((uint32_t)u);
        if (isfinite(v)) check_format(v, false);
    }
}

int main(int argc, char **argv) {
    bool slow = argc > 1 && !strcmp(argv[1], "--slow");
    long scale = slow ? 10 : 1;
    double t0 = sf_now();
    test_parse_fixed();
    test_parse_long_fields();
    test_parse_random(250000 * scale);
    for (int digits = 1; digits <= (slow ? 6 : 5); digits++) test_parse_all_short(digits);
    test_csv_short(100000 * scale, ',', "\n");
    test_csv_short(50000 * scale, ';', "\r\n");
    test_csv_hard(1);
    test_csv_hard(2);
    test_format_fixed();
    test_format_random(300000 * scale);
    if (slow) {
        test_parse_binade(0, 1);      // [1, 2)
        test_parse_binade(-126, 3);   // the smallest normals
        test_parse_binade(127, 3);    // up to FLT_MAX and past it
        test_parse_binade(-60, 7);
        test_format_sweep(0x3f800000u, 0x40000000u, 1);   // every float in [1, 2)
        test_format_sweep(0, 0x00800000u, 5);             // subnormals
        test_format_sweep(0, 1ull << 32, 257);            // all patterns, strided
    }
    printf("%ld parse checks; %.1f s\n", parse_checks, sf_now() - t0);
    return TEST_EXIT();
}
