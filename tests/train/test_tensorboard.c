// TensorBoard's event files at the byte level: CRC-32C against RFC 3720's
// vectors (in one call and in pieces, so both the SSE4.2 and the table
// paths' joins count), TFRecord's mask, and the first two records of a new
// file (file_version, then a SessionLog START at the step asked) framed as
// TFRecord frames them. tests/train/tensorboard.sh checks whole runs.
#include <fcntl.h>
#include <sys/stat.h>

#include "tests/common.h"
#include "train/internal.h"

static void crc_vectors(void) {
    uint8_t zeros[32] = {0}, ones[32], up[32];
    memset(ones, 0xff, sizeof ones);
    for (int i = 0; i < 32; i++) up[i] = (uint8_t)i;
    const struct {
        const void *p;
        size_t n;
        uint32_t crc;
    } v[] = {{zeros, 32, 0x8a9136aa}, {ones, 32, 0x62a8ab43}, {up, 32, 0x46dd794e}, {"123456789", 9, 0xe3069283}};
    for (size_t k = 0; k < sizeof v / sizeof *v; k++) {
        CHECK(sf_crc32c(0, v[k].p, v[k].n) == v[k].crc, "vector %zu: %08x", k, sf_crc32c(0, v[k].p, v[k].n));
        for (size_t cut = 1; cut < v[k].n; cut += 3) {
            uint32_t c = sf_crc32c(sf_crc32c(0, v[k].p, cut), (const uint8_t *)v[k].p + cut, v[k].n - cut);
            CHECK(c == v[k].crc, "vector %zu cut at %zu: %08x", k, cut, c);
        }
    }
    // ((crc >> 15) | (crc << 17)) + 0xa282ead8, worked by hand from the vectors.
    CHECK(sf_tboard_masked_crc("123456789", 9) == 0xc78ab0e5, "%08x", sf_tboard_masked_crc("123456789", 9));
    CHECK(sf_tboard_masked_crc(zeros, 32) == 0x0fd7fffa, "%08x", sf_tboard_masked_crc(zeros, 32));
}

// The record at *at of the n bytes at b: its data (length in *len), framing checked; NULL when broken.
static const uint8_t *frame(const uint8_t *b, size_t n, size_t *at, size_t *len) {
    if (n - *at < 16) return NULL;
    uint64_t l = sf_get_u64(b + *at);
    CHECK(sf_get_u32(b + *at + 8) == sf_tboard_masked_crc(b + *at, 8), "length CRC at %zu", *at);
    if (l > n - *at - 16) return NULL;
    const uint8_t *data = b + *at + 12;
    CHECK(sf_get_u32(data + l) == sf_tboard_masked_crc(data, l), "data CRC at %zu", *at);
    *at += 16 + l, *len = l;
    return data;
}

static void first_records(void) {
    char dir[] = "/tmp/sftbunit.XXXXXX";
    CHECK(mkdtemp(dir), "mkdtemp");
    char top[64];
    snprintf(top, sizeof top, "%s/a/b", dir);  // parents created too
    sf_tboard t;
    bool earlier = true;
    sf_err e = {0};
    CHECK(sf_tboard_open(&t, top, 300, &earlier, &e) == 0, "%s", e.msg);
    CHECK(!earlier, "a new DIR has earlier event files");
    uint8_t b[4096];
    int fd = open(t.path[1], O_RDONLY);
    ssize_t n = fd >= 0 ? read(fd, b, sizeof b) : -1;
    if (fd >= 0) close(fd);
    CHECK(sf_tboard_close(&t, &e) == 0, "%s", e.msg);
    CHECK(n > 0, "cannot read the validation run's file");
    size_t at = 0, len = 0;
    const uint8_t *r = n > 0 ? frame(b, (size_t)n, &at, &len) : NULL;
    // Event: wall_time (field 1, fixed64), file_version (field 3, bytes).
    static const uint8_t version[] = {0x1a, 13, 'b', 'r', 'a', 'i', 'n', '.', 'E', 'v', 'e', 'n', 't', ':', '2'};
    CHECK(r && len == 9 + sizeof version && r[0] == 0x09 && !memcmp(r + 9, version, sizeof version),
          "file_version record (%zu bytes)", len);
    r = r ? frame(b, (size_t)n, &at, &len) : NULL;
    // wall_time, step 300 (field 2, varint ac 02), session_log (field 7) {status (1): START (1)}.
    static const uint8_t start[] = {0x10, 0xac, 0x02, 0x3a, 2, 0x08, 0x01};
    CHECK(r && len == 9 + sizeof start && !memcmp(r + 9, start, sizeof start), "START record (%zu bytes)", len);
    CHECK(at == (size_t)n, "%zd bytes, %zu in the two records", n, at);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0, "%s", cmd);
}

int main(void) {
    crc_vectors();
    first_records();
    return test_failures ? 1 : 0;
}
