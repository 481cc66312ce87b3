// ISO-8601 dates and date-times <-> int64 microseconds since 1970-01-01
// UTC, exactly: the proleptic Gregorian calendar by integer arithmetic (days
// from a civil date as in Hinnant's chrono-compatible algorithms), no
// locale, no time zone database, no libc time functions.
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static bool digits(const char *s, size_t n, int *out) {
    int v = 0;
    for (size_t i = 0; i < n; i++) {
        if ((unsigned)(s[i] - '0') >= 10) return false;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return true;
}

static bool leap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

static int month_days(int64_t y, int m) {
    static const int d[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && leap(y) ? 29 : d[m - 1];
}

// Days since 1970-01-01 of a civil date (any year; March-based eras of 400
// years, so that the leap day ends the year).
static int64_t days_from_civil(int64_t y, int m, int d) {
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;                                  // [0, 399]
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;  // [0, 365]
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;           // [0, 146096]
    return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, int *m, int *d) {
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

// What separates a date from its time: RFC 3339 allows t for T (and z for
// Z), as its section 5.6 notes; ISO 8601 a space by agreement.
static bool is_t(char ch) { return ch == 'T' || ch == 't' || ch == ' '; }

// Parses as sf_time_parse does; on failure *why says what is wrong (why
// may be NULL).
static int parse(const char *s, size_t n, int64_t *us, unsigned *parts, char *why, size_t cap) {
#define WHY(rc, ...) return (why ? (void)snprintf(why, cap, __VA_ARGS__) : (void)0), rc
    static const char form[] = "expected YYYY-MM-DD, YYYY/MM/DD or YYYYMMDD, then optionally T or a space and HH:MM, "
                               ":SS, a fraction, Z or an offset";
    int y, mo, d, h = 0, mi = 0, sec = 0;
    unsigned got = 0;
    int64_t frac = 0;
    size_t i;
    // ISO-8601's basic form (20120131): eight digits, as exports of dates
    // as integers write them.
    if (n >= 8 && digits(s, 8, &y) && (n == 8 || is_t(s[8]))) {
        mo = y / 100 % 100, d = y % 100, y /= 10000;
        i = 8;
    } else if (n < 10 || (s[4] != '-' && s[4] != '/') || s[7] != s[4] || !digits(s, 4, &y) || !digits(s + 5, 2, &mo) ||
               !digits(s + 8, 2, &d)) {
        WHY(SF_EFORMAT, "not a date: %s", form);
    } else {
        i = 10;
    }
    static const char *const month_names[] = {"January", "February", "March",     "April",   "May",      "June",
                                              "July",    "August",   "September", "October", "November", "December"};
    if (mo < 1 || mo > 12) WHY(SF_ERANGE, "month %02d: months run from 01 to 12", mo);
    if (d < 1 || d > month_days(y, mo))
        WHY(SF_ERANGE, "day %02d: %s %04d has %d days", d, month_names[mo - 1], y, month_days(y, mo));
    if (i < n && is_t(s[i])) {
        if (n < i + 6 || s[i + 3] != ':' || !digits(s + i + 1, 2, &h) || !digits(s + i + 4, 2, &mi))
            WHY(SF_EFORMAT, "not a time of day after the date: expected HH:MM");
        got |= SF_TIME_CLOCK;
        i += 6;
        if (i < n && s[i] == ':') {
            if (n < i + 3 || !digits(s + i + 1, 2, &sec)) WHY(SF_EFORMAT, "expected two digits of seconds after HH:MM:");
            got |= SF_TIME_SECONDS;
            i += 3;
            if (i < n && (s[i] == '.' || s[i] == ',')) {
                size_t k = 0;
                // Digits below a microsecond are dropped (as Python's
                // datetime.fromisoformat does): times are microseconds.
                for (i++; i < n && (unsigned)(s[i] - '0') < 10; i++, k++) {
                    if (k < 6) frac = frac * 10 + (s[i] - '0');
                    else if (s[i] != '0') got |= SF_TIME_TRUNCATED;
                }
                if (k == 0) WHY(SF_EFORMAT, "expected digits after the seconds' decimal point");
                for (size_t z = k; z < 6; z++) frac *= 10;
                got |= (unsigned)(k < 6 ? k : 6) << SF_TIME_FRACTION_SHIFT;
            }
        }
        if (h > 23) WHY(SF_ERANGE, "hour %02d: hours run from 00 to 23", h);
        if (mi > 59) WHY(SF_ERANGE, "minute %02d: minutes run from 00 to 59", mi);
        // No leap seconds: UTC as POSIX (and Python's datetime) counts it.
        if (sec == 60 && h == 23 && mi == 59)
            WHY(SF_ERANGE, "a leap second (23:59:60): seqfeed counts UTC without leap seconds, as POSIX and Python "
                "do; write it as 23:59:59 or leave the row out");
        if (sec > 59) WHY(SF_ERANGE, "second %02d: seconds run from 00 to 59", sec);
    }
    int64_t offset = 0;  // minutes east of UTC
    if (i < n && (s[i] == 'Z' || s[i] == 'z')) {
        got |= SF_TIME_ZONE;
        i++;
    } else if (i < n && (s[i] == '+' || s[i] == '-') && (got & SF_TIME_CLOCK)) {
        int oh, om = 0;
        bool east = s[i] == '+';
        if (n < i + 3 || !digits(s + i + 1, 2, &oh)) WHY(SF_EFORMAT, "expected an offset +HH, +HHMM or +HH:MM");
        i += 3;
        if (i < n && s[i] == ':') i++;
        if (i + 2 <= n && digits(s + i, 2, &om)) i += 2;
        else if (i < n && s[i - 1] == ':') WHY(SF_EFORMAT, "expected two digits of minutes in the offset");
        if (oh > 23 || om > 59) WHY(SF_ERANGE, "offset %02d:%02d: at most 23:59", oh, om);
        offset = (east ? 1 : -1) * (oh * 60 + om);
        got |= SF_TIME_ZONE;
    }
    if (i != n) WHY(SF_EFORMAT, "unexpected text after the %s: %s", got & SF_TIME_CLOCK ? "time" : "date", form);
    if ((got & SF_TIME_CLOCK) && !(got & SF_TIME_ZONE)) got |= SF_TIME_NAIVE;
    int64_t secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - offset * 60;
    // The instant, not the local date, must be in years 0000-9999: what
    // unpack writes (in UTC) must read back.
    if (secs < -62167219200ll || secs > 253402300799ll)
        WHY(SF_ERANGE, "its offset puts it in year %s in UTC: seqfeed keeps 0000-01-01T00:00Z to "
            "9999-12-31T23:59:59Z", secs < 0 ? "-0001" : "10000");
#undef WHY
    *us = secs * 1000000 + frac;
    *parts = got;
    return 0;
}

// Eight bytes of text against a pattern: digits (0..9 after the xor with
// '0') where mask has 0xff, exactly the pattern's byte elsewhere. *t: the
// bytes xor the pattern (the digits' values).
static inline bool swar_match(const char *s, uint64_t pattern, uint64_t digits, uint64_t *t) {
    uint64_t v;
    memcpy(&v, s, 8);
    *t = v ^ pattern;
    uint64_t above9 = (((*t & 0x7f7f7f7f7f7f7f7full) + 0x7676767676767676ull) | *t) & 0x8080808080808080ull;
    return !(above9 & digits) && !(*t & ~digits);
}

static inline uint64_t bytes8(const char *b) {
    uint64_t v;
    memcpy(&v, b, 8);
    return v;
}

// The layouts most files hold (YYYY-MM-DD or YYYY/MM/DD, then T or a space
// and HH:MM or HH:MM:SS, then maybe Z) without parse's general branches,
// eight bytes compared at a time: CSV packing parses a time per row.
// Anything else, and any error, is left to parse (false), which gives
// these texts the same result. memo (may be NULL) holds the last date
// read: rows mostly go on within a day, whose checks and day count are
// then the memo's.
static inline bool parse_common(const char *s, size_t n, int64_t *us, unsigned *parts, sf_time_memo *memo) {
    unsigned got = 0;
    if (n > 10 && s[n - 1] == 'Z') got |= SF_TIME_ZONE, n--;
    if (n != 10 && n != 16 && n != 19) return false;
    uint64_t head = bytes8(s);
    uint16_t tail;
    memcpy(&tail, s + 8, 2);
    int64_t day;
    if (memo && memo->valid && memo->head == head && memo->tail == tail) {
        day = memo->day;  // a valid date's bytes: checked when they were stored
    } else {
        if (s[4] != '-' && s[4] != '/') return false;
        char date[8] = {'0', '0', '0', '0', s[4], '0', '0', s[4]};
        uint64_t t0;
        unsigned a = (unsigned)(unsigned char)s[8] - '0', b = (unsigned)(unsigned char)s[9] - '0';
        if (!swar_match(s, bytes8(date), 0x00ffff00ffffffffull, &t0) || a > 9 || b > 9) return false;  // YYYY-MM-
        // Pairs of digits: byte i of p holds 10 * digit i + digit i + 1.
        uint64_t p0 = t0 * 10 + (t0 >> 8);
        int y = (int)(p0 & 0xff) * 100 + (int)(p0 >> 16 & 0xff), mo = (int)(p0 >> 40 & 0xff), d = (int)(a * 10 + b);
        if (mo < 1 || mo > 12 || d < 1 || (d > 28 && d > month_days(y, mo))) return false;
        day = days_from_civil(y, mo, d);
        if (memo) *memo = (sf_time_memo){.head = head, .tail = tail, .day = day, .valid = true};
    }
    int h = 0, mi = 0, sec = 0;
    if (n > 10) {
        // DDTHH:MM, then HH:MM:SS from byte 11 (the text's last 8)
        char clock[8] = {'0', '0', s[10], '0', '0', ':', '0', '0'};
        uint64_t t1, t2 = 0;
        if ((s[10] != 'T' && s[10] != ' ') || !swar_match(s + 8, bytes8(clock), 0xffff00ffff00ffffull, &t1))
            return false;
        if (n == 19 && !swar_match(s + 11, 0x3030003030003030ull | (uint64_t)':' << 16 | (uint64_t)':' << 40,
                                   0xffff00ffff00ffffull, &t2))
            return false;
        got |= SF_TIME_CLOCK | (n == 19 ? SF_TIME_SECONDS : 0) | (got & SF_TIME_ZONE ? 0 : SF_TIME_NAIVE);
        uint64_t p1 = t1 * 10 + (t1 >> 8), p2 = t2 * 10 + (t2 >> 8);
        h = (int)(p1 >> 24 & 0xff), mi = (int)(p1 >> 48 & 0xff), sec = (int)(p2 >> 48 & 0xff);
        if (h > 23 || mi > 59 || sec > 59) return false;
    }
    // Four digits of year, no offset: always within 0000-9999.
    *us = (day * 86400 + h * 3600 + mi * 60 + sec) * 1000000;
    *parts = got;
    if (memo) memo->len = 0;
    if (memo && n == 19) {  // the layout sf_time_same_day reads
        memo->len = (uint8_t)(n + !!(got & SF_TIME_ZONE));
        memo->parts = (uint8_t)got;
        memo->sep = (uint32_t)(unsigned char)s[8] | (uint32_t)(unsigned char)s[9] << 8 |
                    (uint32_t)(unsigned char)s[10] << 16;
        memo->day_us = day * 86400000000ll;
    }
    return true;
}

int sf_time_parse_memo(sf_time_memo *memo, const char *s, size_t n, int64_t *us, unsigned *parts) {
    if (parse_common(s, n, us, parts, memo)) return 0;
    return parse(s, n, us, parts, NULL, 0);
}

int sf_time_parse(const char *s, size_t n, int64_t *us, unsigned *parts) {
    return sf_time_parse_memo(NULL, s, n, us, parts);
}

void sf_time_why(const char *s, size_t n, char *why, size_t cap) {
    int64_t us;
    unsigned parts;
    if (parse(s, n, &us, &parts, why, cap) == 0) snprintf(why, cap, "a time");
}

int sf_pack_time_text(const sf_pack_info *in, int64_t t, char *buf, size_t cap) {
    if (in->time_kind == SF_TIME_ISO) return sf_time_format(buf, cap, t, in->time_parts);
    return snprintf(buf, cap, "%lld", (long long)t);
}

double sf_pack_time_unit(const sf_pack_info *in) {
    switch (in->time_kind) {
    case SF_TIME_EPOCH_S: return 1;
    case SF_TIME_EPOCH_MS: return 1e-3;
    case SF_TIME_EPOCH_NS: return 1e-9;
    default: return 1e-6;  // ISO-8601 and epoch microseconds
    }
}

int64_t sf_pack_time_count(const sf_pack_info *in, double seconds) {
    double n = floor(seconds / sf_pack_time_unit(in));
    return n < 0x1p63 ? (int64_t)n : INT64_MAX;  // casting a double beyond int64 is undefined
}

static const struct {
    const char *name;
    double seconds;
} units[] = {{"w", 604800}, {"d", 86400}, {"h", 3600}, {"min", 60}, {"s", 1}, {"ms", 1e-3}, {"us", 1e-6},
             {"ns", 1e-9}};

int sf_duration_text(double seconds, char *buf, size_t cap) {
    for (size_t k = 1; k < sizeof units / sizeof *units; k++) {  // weeks read worse than days
        double n = seconds / units[k].seconds;
        if (n >= 1 || k + 1 == sizeof units / sizeof *units) return snprintf(buf, cap, "%.4g%s", n, units[k].name);
    }
    return snprintf(buf, cap, "0s");
}

int sf_duration_parse(const char *s, double *seconds) {
    char *end;
    double n = strtod(s, &end);
    if (end == s || !(n > 0) || !isfinite(n)) return SF_EFORMAT;
    for (size_t k = 0; k < sizeof units / sizeof *units; k++)
        if (!strcmp(end, units[k].name)) {
            *seconds = n * units[k].seconds;
            return 0;
        }
    return SF_EFORMAT;
}

double sf_time_phase(int64_t us, enum sf_time_feature f) {
    int64_t day_us = 86400000000ll, days = us / day_us, in_day = us % day_us;
    if (in_day < 0) in_day += day_us, days--;
    double frac = (double)in_day / (double)day_us;
    if (f == SF_TIME_HOUR) return frac;
    if (f == SF_TIME_WEEKDAY) {
        int64_t wd = (days + 3) % 7;  // 1970-01-01 was a Thursday; Monday is 0
        if (wd < 0) wd += 7;
        return ((double)wd + frac) / 7;
    }
    int64_t y;
    int m, d;
    civil_from_days(days, &y, &m, &d);
    int64_t jan1 = days_from_civil(y, 1, 1);
    return ((double)(days - jan1) + frac) / (leap(y) ? 366.0 : 365.0);
}

const char *sf_time_feature_name(enum sf_time_feature f) {
    static const char *const names[] = {"hour", "weekday", "yearday"};
    return (unsigned)f < SF_TIME_FEATURE_COUNT ? names[f] : "?";
}

unsigned sf_time_parts_join(unsigned a, unsigned b) {
    unsigned flags = ((1u << SF_TIME_FRACTION_SHIFT) - 1) | SF_TIME_NAIVE, fa = a >> SF_TIME_FRACTION_SHIFT & 7,
             fb = b >> SF_TIME_FRACTION_SHIFT & 7;
    return ((a | b) & flags) | (fa > fb ? fa : fb) << SF_TIME_FRACTION_SHIFT;
}

int sf_time_format(char *buf, size_t cap, int64_t us, unsigned parts) {
    // Floor division: instants before 1970 have negative microseconds.
    int64_t secs = us / 1000000, frac = us % 1000000;
    if (frac < 0) frac += 1000000, secs--;
    int64_t days = secs / 86400, tod = secs % 86400;
    if (tod < 0) tod += 86400, days--;
    int64_t y;
    int m, d;
    civil_from_days(days, &y, &m, &d);
    int len = snprintf(buf, cap, "%04lld-%02d-%02d", (long long)y, m, d);
    if (parts & SF_TIME_CLOCK || tod || frac) {
        len += snprintf(buf + len, cap > (size_t)len ? cap - (size_t)len : 0, "T%02d:%02d", (int)(tod / 3600),
                        (int)(tod / 60 % 60));
        // The style's fraction digits, or more when the instant needs them:
        // what is written must read back to the same microsecond.
        unsigned fd = (parts >> SF_TIME_FRACTION_SHIFT) & 7, need = frac ? 6 : 0;
        for (int64_t f = frac; f && f % 10 == 0; f /= 10) need--;
        if (fd < need) fd = need;
        if (parts & SF_TIME_SECONDS || tod % 60 || fd)
            len += snprintf(buf + len, cap > (size_t)len ? cap - (size_t)len : 0, ":%02d", (int)(tod % 60));
        if (fd) {
            int64_t shown = frac;
            for (unsigned k = fd; k < 6; k++) shown /= 10;
            len += snprintf(buf + len, cap > (size_t)len ? cap - (size_t)len : 0, ".%0*lld", (int)fd,
                            (long long)shown);
        }
    }
    if (parts & SF_TIME_ZONE) len += snprintf(buf + len, cap > (size_t)len ? cap - (size_t)len : 0, "Z");
    return len;
}
