// Structural scanning of CSV text: where an unquoted field ends (the next
// delimiter or line feed), 64 or 32 bytes compared at a time as simdjson
// and simdcsv compare them, or 8 bytes in a word where the CPU lacks the
// vector instructions. The variant is chosen once per pack from the CPU's
// features (sf_field_end_pick), so one build runs on every x86-64. Then
// whole records of numbers, their fields converted 8 at a time
// (sf_number_rows_pick: AVX-512 or AVX2).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define SF_SCAN_X86 1
#endif

// Eight bytes a word: a byte equal to d or '\n' becomes zero after the
// xor, and a zero byte is found with the borrow trick (exact for the
// lowest one, which is the one wanted).
static const char *field_end_swar(const char *p, const char *end, char d) {
    const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
    const uint64_t dd = ones * (uint8_t)d, nl = ones * (uint8_t)'\n';
    for (; end - p >= 8; p += 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        uint64_t a = v ^ dd, b = v ^ nl;
        uint64_t hit = (((a - ones) & ~a) | ((b - ones) & ~b)) & high;
        if (hit) return p + (__builtin_ctzll(hit) >> 3);
    }
    while (p < end && *p != d && *p != '\n') p++;
    return p;
}

#ifdef SF_SCAN_X86
__attribute__((target("avx2"))) static const char *field_end_avx2(const char *p, const char *end, char d) {
    const __m256i vd = _mm256_set1_epi8(d), vn = _mm256_set1_epi8('\n');
    for (; end - p >= 32; p += 32) {
        __m256i x = _mm256_loadu_si256((const __m256i *)p);
        unsigned hit = (unsigned)_mm256_movemask_epi8(_mm256_or_si256(_mm256_cmpeq_epi8(x, vd), _mm256_cmpeq_epi8(x, vn)));
        if (hit) return p + __builtin_ctz(hit);
    }
    return field_end_swar(p, end, d);
}

// A masked load reads only the bytes before end (the others are not
// touched, so no fault and no read past the buffer): one compare for any
// field up to 64 bytes, none of the tail handling of the others.
__attribute__((target("avx512f,avx512bw,bmi2"))) static const char *field_end_avx512(const char *p, const char *end,
                                                                                    char d) {
    const __m512i vd = _mm512_set1_epi8(d), vn = _mm512_set1_epi8('\n');
    for (; p < end; p += 64) {
        size_t left = (size_t)(end - p);
        __mmask64 live = left >= 64 ? ~(__mmask64)0 : _bzhi_u64(~0ull, (unsigned)left);
        __m512i x = _mm512_maskz_loadu_epi8(live, p);
        __mmask64 hit = (_mm512_cmpeq_epi8_mask(x, vd) | _mm512_cmpeq_epi8_mask(x, vn)) & live;
        if (hit) return p + __builtin_ctzll(hit);
    }
    return end;
}
#endif

sf_field_end_fn sf_field_end_pick(enum sf_scan_kind kind) {
#ifdef SF_SCAN_X86
    __builtin_cpu_init();
    bool avx512 = __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("bmi2");
    bool avx2 = __builtin_cpu_supports("avx2");
    if ((kind == SF_SCAN_BEST || kind == SF_SCAN_AVX512) && avx512) return field_end_avx512;
    if ((kind == SF_SCAN_BEST || kind == SF_SCAN_AVX2) && avx2) return field_end_avx2;
#endif
    if (kind == SF_SCAN_AVX512 || kind == SF_SCAN_AVX2) return NULL;
    return field_end_swar;
}

#ifdef SF_SCAN_X86
#define SF_AVX512_NUMBERS __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512cd,bmi,bmi2")))
#define SF_AVX2_NUMBERS __attribute__((target("avx2,bmi,bmi2")))
#define SF_INLINE static inline __attribute__((always_inline))

// One pass finds where a block of records' fields begin and end (64
// bytes compared at a time), then the numbers are converted 8 at a time:
// [-]digits[.digits] in at most 8 bytes after the sign, the digits joined
// by multiply-adds, times a power of ten in double, as the scalar fast
// path does (internal.h, sf_decimal_to_float), anything else left to
// sf_parse_float one by one. Nothing ties one field to the one before it,
// as the scalar parser's next field waits on the end of the one before.
// Then the time field of each record, if any. The 8 numbers are one in
// each 64-bit lane, of one AVX-512 vector or of two AVX2 ones.
enum { ROWS_FIELDS = 2048 };  // numbers a pass: their bounds stay in L1

// Fields' bounds from p; a record's last field ends before the CR of a CRLF.
typedef struct {
    int32_t start[ROWS_FIELDS], end[ROWS_FIELDS];    // each number's
    int32_t tstart[ROWS_FIELDS], tend[ROWS_FIELDS];  // each record's time
    int32_t kstart[ROWS_FIELDS], kend[ROWS_FIELDS];  // each record's series id
    int32_t next[ROWS_FIELDS];                       // each record's end + 1
} bounds;

// The line feeds, the separators (delimiters and line feeds) and the
// quotes among the 64 bytes at b, a bit each.
typedef struct {
    uint64_t nl, sep, q;
} masks64;

SF_AVX512_NUMBERS SF_INLINE masks64 masks_avx512(const char *b, char delim) {
    __m512i x = _mm512_loadu_si512(b);
    uint64_t nl = _mm512_cmpeq_epi8_mask(x, _mm512_set1_epi8('\n'));
    return (masks64){.nl = nl, .sep = _mm512_cmpeq_epi8_mask(x, _mm512_set1_epi8(delim)) | nl,
                     .q = _mm512_cmpeq_epi8_mask(x, _mm512_set1_epi8('"'))};
}

SF_AVX2_NUMBERS SF_INLINE uint64_t equal64_avx2(__m256i lo, __m256i hi, char c) {
    __m256i v = _mm256_set1_epi8(c);
    return (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(lo, v)) |
           (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(hi, v)) << 32;
}

SF_AVX2_NUMBERS SF_INLINE masks64 masks_avx2(const char *b, char delim) {
    __m256i lo = _mm256_loadu_si256((const __m256i *)b), hi = _mm256_loadu_si256((const __m256i *)(b + 32));
    uint64_t nl = equal64_avx2(lo, hi, '\n');
    return (masks64){.nl = nl, .sep = equal64_avx2(lo, hi, delim) | nl, .q = equal64_avx2(lo, hi, '"')};
}

// The bounds of up to want records from p. Returns the records; *stop when
// something else ends the run (a quote, a ragged line). Inlined into each
// variant with its masks. The end of a record's last field leaves out the
// CR of a CRLF: a CR before the line feed is not the field's.
SF_INLINE size_t record_bounds(masks64 (*masks)(const char *, char), const sf_number_rows_layout *l, const char *p,
                               const char *end, size_t want, bounds *bd, bool *stop) {
    size_t nn = 0, nrows = 0;
    uint32_t field = 0;  // within its record
    int32_t from = 0;    // where it begins
    *stop = false;
    for (const char *b = p; !*stop && end - b >= 64; b += 64) {
        masks64 mk = masks(b, l->delim);
        uint64_t nl = mk.nl, sep = mk.sep, q = mk.q;
        if (q) sep &= (q ^ (q - 1)) >> 1;  // the records before the quote
        for (; sep; sep &= sep - 1) {
            unsigned k = (unsigned)__builtin_ctzll(sep);
            bool line_end = nl >> k & 1;
            if (line_end != (field + 1 == l->nfields)) {  // ragged, or a blank line
                *stop = true;
                return nrows;
            }
            int32_t at = (int32_t)(b - p) + (int32_t)k;
            int32_t fe = at - (line_end && at > from && p[at - 1] == '\r');
            if (l->kind[field] == SF_FIELD_NUMBER) bd->start[nn] = from, bd->end[nn++] = fe;
            else if (l->kind[field] == SF_FIELD_TIME) bd->tstart[nrows] = from, bd->tend[nrows] = fe;
            else if (l->kind[field] == SF_FIELD_SERIES) bd->kstart[nrows] = from, bd->kend[nrows] = fe;
            from = at + 1;
            field = line_end ? 0 : field + 1;
            if (line_end && (bd->next[nrows] = from, ++nrows == want)) return nrows;
        }
        *stop = q != 0;  // the quote's record reached
    }
    return nrows;
}

// Numbers i .. i+7 (lanes beyond n masked) into out[i ..]; returns the
// lanes whose field the general parser must read.
SF_AVX512_NUMBERS SF_INLINE unsigned convert8_avx512(const char *p, const bounds *bd, size_t i, size_t n, float *out) {
    const __m512i ones = _mm512_set1_epi64(-1), zero = _mm512_setzero_si512(), one = _mm512_set1_epi64(1);
    __mmask8 lanes = n - i >= 8 ? 0xff : (__mmask8)((1u << (n - i)) - 1);
    __m512i S = _mm512_cvtepi32_epi64(_mm256_maskz_loadu_epi32(lanes, bd->start + i));
    __m512i E = _mm512_cvtepi32_epi64(_mm256_maskz_loadu_epi32(lanes, bd->end + i));
    __m512i head = _mm512_mask_i64gather_epi64(zero, lanes, S, p, 1);
    __mmask8 neg = _mm512_cmpeq_epi64_mask(_mm512_and_si512(head, _mm512_set1_epi64(0xff)), _mm512_set1_epi64('-'));
    __m512i B = _mm512_mask_add_epi64(S, neg, S, one);
    __m512i len = _mm512_sub_epi64(E, B);  // the body's bytes, 1 to 8 here
    __mmask8 ok = lanes & _mm512_cmple_epu64_mask(_mm512_sub_epi64(len, one), _mm512_set1_epi64(7));
    __m512i v = _mm512_mask_i64gather_epi64(zero, ok, B, p, 1);
    __m512i t = _mm512_xor_si512(v, _mm512_set1_epi8('0'));  // digits become 0..9
    __m512i live = _mm512_xor_si512(_mm512_sllv_epi64(ones, _mm512_slli_epi64(len, 3)), ones);
    uint64_t livek = _mm512_test_epi8_mask(live, live);
    uint64_t nondigit = _mm512_cmpgt_epu8_mask(t, _mm512_set1_epi8(9)) & livek;
    uint64_t points = _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8('.')) & livek;
    if (nondigit != points) {  // a letter, a sign inside, an exponent
        __m512i other = _mm512_movm_epi8(nondigit ^ points);
        ok &= (__mmask8)~_mm512_test_epi64_mask(other, other);
    }
    // One bit a point (bit 8k for byte k); at most one a field.
    __m512i pt = _mm512_and_si512(_mm512_movm_epi8(points), _mm512_set1_epi64(0x0101010101010101ll));
    ok &= _mm512_cmpeq_epi64_mask(_mm512_and_si512(pt, _mm512_sub_epi64(pt, one)), zero);
    __mmask8 has_point = _mm512_test_epi64_mask(pt, pt);
    __m512i k1 = _mm512_srli_epi64(_mm512_sub_epi64(_mm512_set1_epi64(63), _mm512_lzcnt_epi64(pt)), 3);
    k1 = _mm512_mask_mov_epi64(_mm512_set1_epi64(8), has_point, k1);  // the point's byte; 8: none
    __m512i nd = _mm512_mask_sub_epi64(len, has_point, len, one);      // digits
    ok &= _mm512_cmpneq_epi64_mask(nd, zero);
    // The digits after the point move down over it, then right-align to 8
    // (leading zero bytes) and join: pairs, fours, then the two halves.
    __m512i below = _mm512_xor_si512(_mm512_sllv_epi64(ones, _mm512_slli_epi64(k1, 3)), ones);
    __m512i keep = _mm512_xor_si512(_mm512_sllv_epi64(ones, _mm512_slli_epi64(nd, 3)), ones);
    __m512i dig = _mm512_and_si512(_mm512_ternarylogic_epi64(below, t, _mm512_srli_epi64(t, 8), 0xca), keep);
    dig = _mm512_sllv_epi64(dig, _mm512_slli_epi64(_mm512_sub_epi64(_mm512_set1_epi64(8), nd), 3));
    __m512i w16 = _mm512_maddubs_epi16(dig, _mm512_set1_epi16(0x010a));
    __m512i w32 = _mm512_madd_epi16(w16, _mm512_set1_epi32(0x00010064));
    __m512i m = _mm512_add_epi64(_mm512_mul_epu32(w32, _mm512_set1_epi64(10000)), _mm512_srli_epi64(w32, 32));
    static const double p10[16] = {1e0, 1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7,
                                   1e-8, 1e-9, 1e-10, 1e-11, 1e-12, 1e-13, 1e-14, 1e-15};
    __m512i decimals = _mm512_maskz_sub_epi64(has_point, nd, k1);
    __m512d scale = _mm512_permutex2var_pd(_mm512_loadu_pd(p10), decimals, _mm512_loadu_pd(p10 + 8));
    // m exact, 10^-k and the product rounded: within a double ulp or so of
    // the decimal, and no decimal of 8 bytes below 2^24 lies within 2^11
    // double ulps of a float midpoint (test number-rows counts them all), so
    // rounding the double to float is strtof's rounding: no midpoint check
    // as sf_decimal_to_float makes for longer texts.
    __m512d x = _mm512_mul_pd(_mm512_cvtepi64_pd(m), scale);
    __m256 f = _mm512_cvtpd_ps(x);
    ok &= _mm256_cmp_ps_mask(f, _mm256_set1_ps(0x1p24f), _CMP_LT_OQ);
    f = _mm256_mask_or_ps(f, neg, f, _mm256_set1_ps(-0.0f));
    _mm256_mask_storeu_ps(out + i, ok, f);
    return lanes & (__mmask8)~ok;
}

// The 8 bytes of the field at p + s after its sign; *minus: -1 after a
// '-', else 0.
SF_INLINE long long field_word(const char *p, int32_t s, long long *minus) {
    long long w;
    *minus = -(long long)(p[s] == '-');
    memcpy(&w, p + s - *minus, 8);
    return w;
}

// convert8_avx512 on 4 numbers a vector, for CPUs with AVX2 alone. AVX2
// lacks the byte masks, lzcnt and the conversion from 64-bit integers:
// the bytes before the point are the point's bit minus one, their count
// a sum of bytes, the integer a double through 2^52's low bits. Its
// gathers and masked stores are slow on AMD's cores: the fields' words
// are loaded one by one, the powers of ten permuted from two vectors.
// The same operations on the same values as convert8_avx512, so the same
// floats.
SF_AVX2_NUMBERS SF_INLINE unsigned convert4_avx2(const char *p, const bounds *bd, size_t i, size_t n, float *out) {
    const __m256i ones = _mm256_set1_epi64x(-1), zero = _mm256_setzero_si256(), one = _mm256_set1_epi64x(1);
    size_t live_n = n - i < 4 ? n - i : 4;
    __m128i lanes32 = _mm_cmpgt_epi32(_mm_set1_epi32((int)live_n), _mm_setr_epi32(0, 1, 2, 3));
    __m256i lanes = _mm256_cvtepi32_epi64(lanes32);
    // Each field's body, from its first byte after the sign, and its sign
    // (-1), in registers: through memory the vector would wait for them.
    long long m0, m1, m2, m3;
    long long w0 = field_word(p, bd->start[i], &m0), w1 = field_word(p, live_n > 1 ? bd->start[i + 1] : 0, &m1);
    long long w2 = field_word(p, live_n > 2 ? bd->start[i + 2] : 0, &m2);
    long long w3 = field_word(p, live_n > 3 ? bd->start[i + 3] : 0, &m3);
    __m256i v = _mm256_set_epi64x(w3, w2, w1, w0), neg = _mm256_set_epi64x(m3, m2, m1, m0);
    __m256i S = _mm256_cvtepi32_epi64(_mm_loadu_si128((const __m128i *)(bd->start + i)));
    __m256i E = _mm256_cvtepi32_epi64(_mm_loadu_si128((const __m128i *)(bd->end + i)));
    __m256i len = _mm256_add_epi64(_mm256_sub_epi64(E, S), neg);  // the body's bytes, 1 to 8 here
    __m256i ok = _mm256_and_si256(lanes, _mm256_andnot_si256(_mm256_cmpgt_epi64(len, _mm256_set1_epi64x(8)),
                                                             _mm256_cmpgt_epi64(len, zero)));
    __m256i t = _mm256_xor_si256(v, _mm256_set1_epi8('0'));  // digits become 0..9
    __m256i live = _mm256_xor_si256(_mm256_sllv_epi64(ones, _mm256_slli_epi64(len, 3)), ones);
    __m256i digit = _mm256_cmpeq_epi8(_mm256_max_epu8(t, _mm256_set1_epi8(9)), _mm256_set1_epi8(9));
    __m256i point = _mm256_and_si256(_mm256_cmpeq_epi8(v, _mm256_set1_epi8('.')), live);
    // A letter, a sign inside, an exponent; then at most one point a field.
    __m256i other = _mm256_andnot_si256(_mm256_or_si256(digit, point), live);
    ok = _mm256_and_si256(ok, _mm256_cmpeq_epi64(other, zero));
    __m256i pt = _mm256_and_si256(point, _mm256_set1_epi8(1));  // bit 8k for byte k
    ok = _mm256_and_si256(ok, _mm256_cmpeq_epi64(_mm256_and_si256(pt, _mm256_sub_epi64(pt, one)), zero));
    __m256i has_point = _mm256_cmpgt_epi64(pt, zero);
    __m256i below = _mm256_sub_epi64(pt, one);  // the bytes before the point: all of them without one
    __m256i k1 = _mm256_sad_epu8(_mm256_and_si256(below, _mm256_set1_epi8(1)), zero);  // the point's byte; 8: none
    __m256i nd = _mm256_add_epi64(len, has_point);                                        // digits
    ok = _mm256_andnot_si256(_mm256_cmpeq_epi64(nd, zero), ok);
    // The digits after the point move down over it, then right-align to 8
    // (leading zero bytes) and join: pairs, fours, then the two halves.
    __m256i keep = _mm256_xor_si256(_mm256_sllv_epi64(ones, _mm256_slli_epi64(nd, 3)), ones);
    __m256i dig = _mm256_and_si256(
        _mm256_or_si256(_mm256_and_si256(below, t), _mm256_andnot_si256(below, _mm256_srli_epi64(t, 8))), keep);
    dig = _mm256_sllv_epi64(dig, _mm256_slli_epi64(_mm256_sub_epi64(_mm256_set1_epi64x(8), nd), 3));
    __m256i w16 = _mm256_maddubs_epi16(dig, _mm256_set1_epi16(0x010a));
    __m256i w32 = _mm256_madd_epi16(w16, _mm256_set1_epi32(0x00010064));
    __m256i m = _mm256_add_epi64(_mm256_mul_epu32(w32, _mm256_set1_epi64x(10000)), _mm256_srli_epi64(w32, 32));
    __m256i decimals = _mm256_and_si256(_mm256_and_si256(has_point, _mm256_sub_epi64(nd, k1)), _mm256_set1_epi64x(7));
    // 10^-decimals: each lane's two halves picked from 10^0..10^-3 or 10^-4..10^-7.
    __m256i twice = _mm256_slli_epi64(decimals, 1);
    __m256i halves = _mm256_or_si256(_mm256_or_si256(twice, _mm256_slli_epi64(twice, 32)), _mm256_set1_epi64x(1ll << 32));
    __m256i p10lo = _mm256_castpd_si256(_mm256_setr_pd(1e0, 1e-1, 1e-2, 1e-3));
    __m256i p10hi = _mm256_castpd_si256(_mm256_setr_pd(1e-4, 1e-5, 1e-6, 1e-7));
    __m256d scale = _mm256_castsi256_pd(_mm256_blendv_epi8(_mm256_permutevar8x32_epi32(p10lo, halves),
                                                           _mm256_permutevar8x32_epi32(p10hi, halves),
                                                           _mm256_cmpgt_epi64(decimals, _mm256_set1_epi64x(3))));
    // m < 10^8: exact in the low bits of a double of 2^52.
    __m256d md = _mm256_sub_pd(_mm256_castsi256_pd(_mm256_or_si256(m, _mm256_set1_epi64x(0x4330000000000000ll))),
                               _mm256_set1_pd(0x1p52));
    __m128 f = _mm256_cvtpd_ps(_mm256_mul_pd(md, scale));  // as convert8_avx512 rounds, and why it may
    const __m256i low32 = _mm256_setr_epi32(0, 2, 4, 6, 0, 0, 0, 0);
    __m128i ok32 = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(ok, low32));
    __m128i neg32 = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(neg, low32));
    ok32 = _mm_and_si128(ok32, _mm_castps_si128(_mm_cmplt_ps(f, _mm_set1_ps(0x1p24f))));
    f = _mm_or_ps(f, _mm_castsi128_ps(_mm_and_si128(neg32, _mm_set1_epi32(INT32_MIN))));
    if (live_n == 4) {
        _mm_storeu_ps(out + i, f);  // the lanes the general parser reads get its floats after
    } else {
        float lane[4];
        _mm_storeu_ps(lane, f);
        memcpy(out + i, lane, live_n * sizeof(float));
    }
    return (unsigned)_mm_movemask_ps(_mm_castsi128_ps(_mm_andnot_si128(ok32, lanes32)));
}

SF_AVX2_NUMBERS SF_INLINE unsigned convert8_avx2(const char *p, const bounds *bd, size_t i, size_t n, float *out) {
    unsigned slow = convert4_avx2(p, bd, i, n, out);
    return i + 4 < n ? slow | convert4_avx2(p, bd, i + 4, n, out) << 4 : slow;
}

// Record r's time, when it is one the general path would take as it is
// (ISO 8601, to the microsecond) and later than the one before. joined:
// the parts joined last in this call (0 at first, which a join leaves
// alone), which joining again changes nothing: records' parts repeat, and
// the call a record was 2% of a pack's instructions.
static bool run_time(sf_number_rows_layout *l, const char *p, const char *end, const bounds *bd, size_t r,
                     int64_t *t, unsigned *joined) {
    const char *s = p + bd->tstart[r];
    size_t n = (size_t)(bd->tend[r] - bd->tstart[r]);
    unsigned parts;
    if (l->time_same_day && sf_time_same_day(l->memo, s, end, l->delim, t) == n) {
        parts = l->memo->parts;
    } else if (sf_time_parse_memo(l->memo, s, n, t, &parts) != 0 || parts & SF_TIME_TRUNCATED) {
        return false;
    }
    if (l->have_last && !l->any_key && *t <= l->last_time) return false;
    if (parts != *joined) l->parts = sf_time_parts_join(l->parts, parts), *joined = parts;
    l->last_time = *t, l->have_last = true;
    return true;
}

// A variant's pass: its masks and its conversion inlined.
SF_INLINE size_t number_rows_with(masks64 (*masks)(const char *, char),
                                  unsigned (*convert8)(const char *, const bounds *, size_t, size_t, float *),
                                  sf_number_rows_layout *l, const char *p, const char *end, size_t max_rows,
                                  const sf_number_rows_out *out, const char **next) {
    bounds bd;
    const char *p0 = p;
    const uint32_t ncols = l->ncols;
    size_t done = 0, pass = 8;  // records: the look ahead doubles while they parse
    unsigned joined = 0;        // run_time's
    bool stop = false, timed = false, keyed = false;
    for (uint32_t f = 0; f < l->nfields; f++) timed |= l->kind[f] == SF_FIELD_TIME, keyed |= l->kind[f] == SF_FIELD_SERIES;
    if (keyed && !l->key && !l->any_key) {  // no series to go on in yet: the general path starts one
        *next = p;
        return 0;
    }
    while (!stop && done < max_rows && ncols && ncols <= ROWS_FIELDS) {
        if (pass > ROWS_FIELDS / ncols) pass = ROWS_FIELDS / ncols;
        size_t want = pass < max_rows - done ? pass : max_rows - done;
        pass *= 2;
        size_t nrows = record_bounds(masks, l, p, end, want, &bd, &stop), nn = nrows * ncols;
        if (!nrows) break;
        float *rows = out->rows + done * ncols;
        size_t good = nrows;
        for (size_t i = 0; i < nn && good == nrows; i += 8) {
            for (unsigned slow = convert8(p, &bd, i, nn, rows); slow; slow &= slow - 1) {
                size_t k = i + (unsigned)__builtin_ctz(slow);
                float x;
                if (sf_parse_float(p + bd.start[k], (size_t)(bd.end[k] - bd.start[k]), &x) != 0 ||
                    !(fabsf(x) < 0x1p24f)) {
                    good = k / ncols;
                    break;
                }
                rows[k] = x;
            }
        }
        // Rows of the series the run goes on in, before the times, whose
        // checks carry on from row to row.
        for (size_t r = 0; keyed && !l->any_key && r < good; r++) {
            size_t n = (size_t)(bd.kend[r] - bd.kstart[r]);
            if (n != l->key_len || !sf_bytes_equal(p + bd.kstart[r], l->key, n)) good = r;
        }
        for (size_t r = 0; keyed && l->any_key && r < good; r++)
            if (bd.kend[r] - bd.kstart[r] > UINT16_MAX) good = r;
        for (size_t r = 0; timed && r < good; r++) {
            if (!run_time(l, p, end, &bd, r, &out->times[done + r], &joined)) good = r;
            else if (out->parts) out->parts[done + r] = (uint8_t)l->parts;
        }
        for (size_t r = 0; out->ends && r < good; r++) out->ends[done + r] = (uint32_t)(p - p0) + (uint32_t)bd.next[r];
        for (size_t r = 0; keyed && out->keys && r < good; r++)
            out->keys[done + r] = (uint32_t)(p - p0) + (uint32_t)bd.kstart[r];
        for (size_t r = 0; keyed && out->key_lens && r < good; r++)
            out->key_lens[done + r] = (uint16_t)(bd.kend[r] - bd.kstart[r]);
        for (size_t r = 0; timed && out->time_starts && r < good; r++)
            out->time_starts[done + r] = (uint32_t)(p - p0) + (uint32_t)bd.tstart[r];
        done += good;
        if (good) p += bd.next[good - 1];
        if (good < nrows) break;
    }
    *next = p;
    return done;
}

SF_AVX512_NUMBERS static size_t number_rows_avx512(sf_number_rows_layout *l, const char *p, const char *end,
                                                   size_t max_rows, const sf_number_rows_out *out,
                                                   const char **next) {
    return number_rows_with(masks_avx512, convert8_avx512, l, p, end, max_rows, out, next);
}

SF_AVX2_NUMBERS static size_t number_rows_avx2(sf_number_rows_layout *l, const char *p, const char *end,
                                               size_t max_rows, const sf_number_rows_out *out, const char **next) {
    return number_rows_with(masks_avx2, convert8_avx2, l, p, end, max_rows, out, next);
}
#endif

// Tests run the CSV cases through the scalar parser too, which is all
// that CPUs without AVX2 have.
static bool scalar_forced(void) {
    const char *scalar = getenv("SEQFEED_TEST_SCALAR_PARSE");
    return scalar && *scalar && strcmp(scalar, "0");
}

void sf_csv_describe(char *out, size_t n) {
    const char *how = scalar_forced() ? "field by field (SEQFEED_TEST_SCALAR_PARSE)" : "field by field (no AVX2)";
#ifdef SF_SCAN_X86
    sf_number_rows_fn fn = sf_number_rows_pick(SF_SCAN_BEST);  // NULL when forced
    if (fn == number_rows_avx512) how = "records of numbers 8 at a time in AVX-512";
    else if (fn == number_rows_avx2) how = "records of numbers 8 at a time in AVX2";
#endif
    snprintf(out, n, "%s", how);
}

sf_number_rows_fn sf_number_rows_pick(enum sf_scan_kind kind) {
    if (scalar_forced()) return NULL;
#ifdef SF_SCAN_X86
    __builtin_cpu_init();
    bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
                  __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("bmi2");
    bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2");
    if ((kind == SF_SCAN_BEST || kind == SF_SCAN_AVX512) && avx512) return number_rows_avx512;
    if ((kind == SF_SCAN_BEST || kind == SF_SCAN_AVX2) && avx2) return number_rows_avx2;
#endif
    (void)kind;
    return NULL;
}
