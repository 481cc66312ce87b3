// Structural scanning of CSV text: where an unquoted field ends (the next
// delimiter or line feed), 64 or 32 bytes compared at a time as simdjson
// and simdcsv compare them, or 8 bytes in a word where the CPU lacks the
// vector instructions. The variant is chosen once per pack from the CPU's
// features (sf_field_end_pick), so one build runs on every x86-64.
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
