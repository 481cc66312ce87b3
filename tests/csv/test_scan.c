// The structural scan's variants (pack/scan.c) against a byte loop: every
// field length up to 200 at every alignment, delimiters and line feeds
// among bytes of all values (high ones compare as signed chars in vector
// code), the text ending on a page whose neighbour is unmapped so that a
// read past the end faults.
#include <sys/mman.h>

#include "../common.h"
#include "pack/internal.h"

static const char *naive(const char *p, const char *end, char d) {
    while (p < end && *p != d && *p != '\n') p++;
    return p;
}

int main(void) {
    long page = sysconf(_SC_PAGESIZE);
    char *map = mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(map != MAP_FAILED, "mmap");
    if (map == MAP_FAILED) return 1;
    CHECK(mprotect(map + page, (size_t)page, PROT_NONE) == 0, "mprotect");
    char *tail = map + page;  // text ends here
    static const char delims[] = {',', ';', '\t', '|', (char)0xa7};
    static const char *const names[] = {"avx512", "avx2", "swar"};
    uint64_t seed = 29, variants = 0;
    for (int v = 0; v < 3; v++) {
        sf_field_end_fn fn = sf_field_end_pick((enum sf_scan_kind)(SF_SCAN_AVX512 + v));
        if (!fn) {
            printf("scan %s: not on this CPU\n", names[v]);
            continue;
        }
        variants++;
        for (size_t n = 0; n <= 200; n++)
            for (size_t rep = 0; rep < 40; rep++) {
                char d = delims[rep % sizeof delims];
                char *s = tail - n;
                for (size_t i = 0; i < n; i++) {
                    uint64_t r = sf_splitmix64(&seed);
                    // Mostly field bytes, sometimes a delimiter, a line feed,
                    // a byte one off either (a compare by range would take it).
                    s[i] = r % 64 == 0 ? d : r % 64 == 1 ? '\n' : r % 64 == 2 ? (char)(d + 1) : (char)(r >> 8);
                    if (rep < 20 && (s[i] == d || s[i] == '\n')) s[i] = 'x';  // no hit: the whole text
                }
                for (size_t at = 0; at <= n; at++) {
                    const char *want = naive(s + at, tail, d), *got = fn(s + at, tail, d);
                    CHECK(got == want, "%s: %zu bytes from %zu, delimiter 0x%02x: end at %td, want %td", names[v], n,
                          at, (unsigned char)d, got - s, want - s);
                    if (got != want) return 1;
                }
            }
    }
    CHECK(variants > 0, "no scan variant runs here");
    CHECK(sf_field_end_pick(SF_SCAN_BEST) != NULL, "no variant for SF_SCAN_BEST");
    munmap(map, 2 * (size_t)page);
    return test_failures != 0;
}
