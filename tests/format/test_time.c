// ISO-8601 times against Python's datetime (tests/ref/gen_times.py wrote
// times.txt: fixed forms, zones, leap days, years 1 to 9999 either side of
// 1970, and texts that are not times), and every parsed time written back
// and read again to the same microsecond.
#include <stdlib.h>
#include <string.h>

#include "pack/internal.h"
#include "tests/common.h"

#include <math.h>

// Phases in the day, week and year against Python's datetime
// (tests/ref/gen_time_phases.py wrote the fixture).
static void test_phases(const char *path) {
    FILE *f = fopen(path, "r");
    CHECK(f != NULL, "cannot open %s", path);
    if (!f) return;
    long long us;
    double want[3];
    int n = 0;
    while (fscanf(f, "%lld %lf %lf %lf", &us, &want[0], &want[1], &want[2]) == 4) {
        for (int k = 0; k < 3; k++) {
            double got = sf_time_phase(us, (enum sf_time_feature)k);
            CHECK(fabs(got - want[k]) < 1e-12 && got >= 0 && got < 1, "%lld: %s phase %.17g, want %.17g", us,
                  sf_time_feature_name((enum sf_time_feature)k), got, want[k]);
        }
        n++;
    }
    fclose(f);
    CHECK(n > 3000, "only %d phases in %s", n, path);
}

// sf_time_parse reads the common layouts (YYYY-MM-DD or YYYY/MM/DD, T or a
// space, HH:MM[:SS], Z; t and z as the general parser) on a path of their own: each against the same
// instant in the basic form (20100101T...), which the general parser reads,
// with fields out of range (month 13, day 30 of February, hour 24, second
// 60, a digit replaced) as often as not: the same result, parts and error
// code. sf_time_why runs the general parser on the text itself. The packer
// reads with sf_time_parse_memo, which keeps the last date: half the texts
// repeat the date before them, and its results must be sf_time_parse's, as
// must sf_time_same_day's, which it tries first.
static void test_common_layouts(void) {
    uint64_t seed = 31;
    sf_time_memo memo = {0};
    int py = 0, pmo = 0, pd = 0, same_day = 0;
    for (int i = 0; i < 400000; i++) {
        uint64_t r = sf_splitmix64(&seed), r2 = sf_splitmix64(&seed);
        int y = (int)(r % 10000), mo = (int)(r >> 14 & 0xff) % 14, d = (int)(r >> 22 & 0xff) % 33,
            h = (int)(r >> 30 & 0xff) % 26, mi = (int)(r >> 38 & 0xff) % 62, sec = (int)(r >> 46 & 0xff) % 62;
        if (r2 % 4) {  // mostly in range
            mo = 1 + mo % 12, d = 1 + d % 28, h %= 24, mi %= 60, sec %= 60;
            if (r2 % 8 == 1) d = 29 + (int)((r2 >> 8) % 3);
        }
        if (r2 >> 33 & 1) y = py, mo = pmo, d = pd;  // the date before, perhaps not a valid one
        py = y, pmo = mo, pd = d;
        const char *sep = r2 >> 20 & 1 ? "/" : "-", *t = r2 >> 21 & 1 ? " " : (r2 >> 58 & 3) == 0 ? "t" : "T",
                   *z = r2 >> 22 & 1 ? (r2 >> 62) == 0 ? "z" : "Z" : "";
        int form = (int)((r2 >> 23) % 3);  // date, minutes, seconds
        char ext[64], basic[64], clock[16] = "";
        if (form == 1) snprintf(clock, sizeof clock, "%s%02d:%02d", t, h, mi);
        if (form == 2) snprintf(clock, sizeof clock, "%s%02d:%02d:%02d", t, h, mi, sec);
        snprintf(ext, sizeof ext, "%04d%s%02d%s%02d%s%s", y, sep, mo, sep, d, clock, z);
        // The basic form takes no Z after a date alone: compared without it.
        snprintf(basic, sizeof basic, "%04d%02d%02d%s%s", y, mo, d, clock, form ? z : "");
        if (r2 >> 30 & 1 && r2 % 4 == 0) {  // a byte that is not a digit, where one is wanted
            size_t at = (size_t)((r2 >> 40) % 4);
            ext[at] = basic[at] = (char)("a/:+ "[(r2 >> 50) % 5]);
        }
        int64_t a = 0, b = 0;
        unsigned pa = 0, pb = 0;
        int ra = sf_time_parse(ext, strlen(ext), &a, &pa), rb = sf_time_parse(basic, strlen(basic), &b, &pb);
        if (!form && *z) pb |= SF_TIME_ZONE;
        CHECK(ra == rb && (ra || (a == b && pa == pb)), "'%s': rc %d, %lld, parts %#x; '%s': rc %d, %lld, parts %#x",
              ext, ra, (long long)a, pa, basic, rb, (long long)b, pb);
        // RFC 3339's lower-case t and z read as T and Z.
        char upper[64];
        for (size_t k = 0; k < sizeof upper; k++)
            upper[k] = ext[k] == 't' || ext[k] == 'z' ? (char)(ext[k] - 32) : ext[k];
        int64_t u = 0;
        unsigned pu = 0;
        int ru = sf_time_parse(upper, strlen(upper), &u, &pu);
        CHECK(ru == ra && (ru || (u == a && pu == pa)), "'%s': rc %d, %lld, parts %#x; '%s': rc %d, %lld, parts %#x",
              ext, ra, (long long)a, pa, upper, ru, (long long)u, pu);
        // As the packer reads a field: sf_time_same_day first, the text
        // followed by a delimiter.
        char field[80];
        int64_t q = 0;
        size_t qn = sf_time_same_day(&memo, field, field + snprintf(field, sizeof field, "%s,", ext), ',', &q);
        same_day += qn > 0;
        CHECK(!qn || (qn == strlen(ext) && ra == 0 && q == a && memo.parts == pa), "'%s' on the date before: length "
              "%zu, %lld, parts %#x; sf_time_parse: rc %d, %lld, parts %#x", ext, qn, (long long)q, memo.parts, ra,
              (long long)a, pa);
        int64_t m = 0;
        unsigned pm = 0;
        int rm = sf_time_parse_memo(&memo, ext, strlen(ext), &m, &pm);
        CHECK(rm == ra && (rm || (m == a && pm == pa)), "'%s' with the last date kept: rc %d, %lld, parts %#x; "
              "without: rc %d, %lld, parts %#x", ext, rm, (long long)m, pm, ra, (long long)a, pa);
        char why[256];
        sf_time_why(ext, strlen(ext), why, sizeof why);
        CHECK((ra == 0) == !strcmp(why, "a time"), "'%s': rc %d, the general parser says %s", ext, ra, why);
        if (test_failures > 20) return;
    }
    CHECK(same_day > 1000, "only %d times read by sf_time_same_day", same_day);
}

int main(int argc, char **argv) {
    test_common_layouts();
    if (argc < 3) return 2;
    test_phases(argv[2]);
    FILE *f = fopen(argv[1], "r");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", argv[1]);
        return 2;
    }
    char line[256];
    int cases = 0;
    while (fgets(line, sizeof line, f)) {
        char *tab = strchr(line, '\t');
        if (!tab) continue;
        *tab = 0;
        const char *want = tab + 1;
        int64_t us = 0;
        unsigned parts = 0;
        int rc = sf_time_parse(line, strlen(line), &us, &parts);
        cases++;
        if (!strncmp(want, "error", 5)) {
            CHECK(rc != 0, "'%s' parsed as %lld", line, (long long)us);
            continue;
        }
        long long expect = strtoll(want, NULL, 10);
        CHECK(rc == 0 && us == expect, "'%s': rc %d, %lld, expected %lld", line, rc, (long long)us, expect);
        char text[64];
        sf_time_format(text, sizeof text, us, parts);
        int64_t back = 0;
        unsigned parts2 = 0;
        CHECK(sf_time_parse(text, strlen(text), &back, &parts2) == 0 && back == us, "'%s' written as '%s', read as %lld",
              line, text, (long long)back);
    }
    fclose(f);
    CHECK(cases > 2000, "only %d cases in %s", cases, argv[1]);
    // The style comes back: a date stays a date, minutes stay minutes.
    const char *same[] = {"2012-01-01", "2012-01-01T10:30", "2012-01-01T10:30:05", "2012-01-01T10:30:05.250",
                          "1969-12-31T23:59:59.999999Z", "0001-01-01", "9999-12-31T23:59:59Z"};
    for (size_t i = 0; i < sizeof same / sizeof *same; i++) {
        int64_t us;
        unsigned parts;
        char text[64];
        CHECK(sf_time_parse(same[i], strlen(same[i]), &us, &parts) == 0, "'%s'", same[i]);
        sf_time_format(text, sizeof text, us, parts);
        CHECK(!strcmp(text, same[i]), "'%s' written back as '%s'", same[i], text);
    }
    // A time of day without a zone says so, to be told from a zone's beside
    // it in a column; a date alone or a zone does not; the join keeps it.
    const struct {
        const char *text;
        bool naive;
    } zones[] = {{"2010-01-01T10:30", true}, {"2010-01-01 10:30:05", true}, {"20100101T10:30:05.5", true},
                 {"2010-01-01T10:30Z", false}, {"2010-01-01t10:30:05z", false}, {"2010-01-01T10:30+02:00", false},
                 {"2010-01-01", false}};
    for (size_t i = 0; i < sizeof zones / sizeof *zones; i++) {
        int64_t at;
        unsigned p = 0;
        CHECK(sf_time_parse(zones[i].text, strlen(zones[i].text), &at, &p) == 0 &&
                  !!(p & SF_TIME_NAIVE) == zones[i].naive, "'%s': parts %#x", zones[i].text, p);
    }
    CHECK(sf_time_parts_join(SF_TIME_CLOCK | SF_TIME_ZONE, SF_TIME_CLOCK | SF_TIME_NAIVE) ==
              (SF_TIME_CLOCK | SF_TIME_ZONE | SF_TIME_NAIVE), "the join of a zone and none");
    // Digits below a microsecond are dropped and said; the flag is never
    // joined into what a file records.
    int64_t us;
    unsigned parts;
    CHECK(sf_time_parse("2010-01-01T00:00:00.123456789", 29, &us, &parts) == 0 && us == 1262304000123456 &&
              (parts & SF_TIME_TRUNCATED) && sf_time_parts_join(0, parts) == (parts & ~(unsigned)SF_TIME_TRUNCATED),
          "nanoseconds: %lld, parts %x", (long long)us, parts);
    CHECK(sf_time_parse("2010-01-01T00:00:00.123456000", 29, &us, &parts) == 0 && !(parts & SF_TIME_TRUNCATED),
          "zeros below a microsecond lose nothing: parts %x", parts);
    // What is wrong, said exactly.
    const struct {
        const char *text, *why;
    } whys[] = {{"2016-02-30", "day 30: February 2016 has 29 days"},
                {"2016-12-31T23:59:60", "a leap second (23:59:60)"},
                {"2016-12-31T12:00:60", "second 60"},
                {"2016-13-01", "month 13"},
                {"20161301", "month 13"},
                {"2016-01-01T24:00", "hour 24"},
                {"2016-01-01x", "unexpected text after the date"},
                {"01/02/2016", "not a date"}};
    for (size_t i = 0; i < sizeof whys / sizeof *whys; i++) {
        char why[256];
        sf_time_why(whys[i].text, strlen(whys[i].text), why, sizeof why);
        CHECK(!strncmp(why, whys[i].why, strlen(whys[i].why)), "'%s': %s", whys[i].text, why);
    }
    // A --max-gap beyond int64 counts of the unit saturates (a cast would be undefined).
    sf_pack_info ns = {.time_kind = SF_TIME_EPOCH_NS}, s = {.time_kind = SF_TIME_EPOCH_S};
    CHECK(sf_pack_time_count(&ns, 1e300) == INT64_MAX && sf_pack_time_count(&ns, 1e10) == INT64_MAX &&
              sf_pack_time_count(&ns, 9e9) > 8999999999000000000 && sf_pack_time_count(&s, 90.5) == 90,
          "time counts");
    return TEST_EXIT();
}
