// sf_alloc_large_sparse: the sparse bytes start on a huge page's boundary
// behind the dense ones, and the kernel holds them off huge pages (the
// mapping's VmFlags in /proc/self/smaps say "nh"), the dense ones not.
// Every byte of the block is written, so that ASan sees its extent.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "tests/common.h"

#define MIB ((size_t)1 << 20)

// The VmFlags of the mapping that holds p: 1 with them in flags, 0 when
// smaps has no such mapping, -1 when smaps cannot be read.
static int vm_flags(const void *p, char *flags, size_t n) {
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) return -1;
    char line[512];
    int in = 0, found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
            in = (unsigned long)p >= lo && (unsigned long)p < hi;
        else if (in && !strncmp(line, "VmFlags:", 8))
            snprintf(flags, n, "%s", line + 8), found = 1;
    }
    fclose(f);
    return found;
}

static int has_flag(const char *flags, const char *flag) {
    char want[8];
    snprintf(want, sizeof want, " %s", flag);
    for (const char *s = flags; (s = strstr(s, want)); s++)
        if (s[3] == ' ' || s[3] == '\n' || s[3] == 0) return 1;
    return 0;
}

int main(void) {
    size_t at = 0;
    // Small: one malloc, the sparse bytes right behind the dense ones.
    char *p = sf_alloc_large_sparse(100000, 50000, &at);
    CHECK(p && at == 100000, "small: sparse at %zu", at);
    if (!p) return 1;
    memset(p, 1, at + 50000);
    free(p);

    // Large: the sparse bytes from the next 2 MiB boundary.
    size_t dense = MIB + MIB / 5, sparse = MIB + MIB / 2;
    p = sf_alloc_large_sparse(dense, sparse, &at);
    CHECK(p && at == 2 * MIB && (size_t)p % (2 * MIB) == 0, "large: sparse at %zu, block at %p", at, (void *)p);
    if (!p) return 1;
    memset(p, 1, at + sparse);
    char dense_flags[512], sparse_flags[512];
    int d = vm_flags(p, dense_flags, sizeof dense_flags), s = vm_flags(p + at, sparse_flags, sizeof sparse_flags);
    if (d < 0 || s < 0) {
        printf("SKIP: /proc/self/smaps cannot be read\n");
        free(p);
        return 77;
    }
    CHECK(d == 1 && s == 1, "no mapping in smaps holds the block");
    printf("dense VmFlags:%ssparse VmFlags:%s", dense_flags, sparse_flags);
    CHECK(has_flag(sparse_flags, "nh"), "the sparse bytes may be on huge pages");
    CHECK(!has_flag(dense_flags, "nh"), "the dense bytes are held off huge pages");
    free(p);
    return test_failures != 0;
}
