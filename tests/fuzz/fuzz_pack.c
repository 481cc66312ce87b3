// Fuzzes the .sfpack reader: the input, less its first byte, is the file. It
// is opened from a memfd, every chunk is read and decoded, and the whole file
// verified. Nothing may crash, leak or hang, and a chunk of a file that opened
// must be readable: open promises to validate every chunk's place.
//
// Random bytes rarely get past the CRC-32C checks, so the first byte can ask
// the harness to recompute the checksums of the mutated file before opening it
// and let the structural checks behind them be fuzzed too:
//   bit 0: header, trailer and footer CRCs
//   bit 1: with bit 0, first the chunk CRCs in the trailer's index as well
// The places, from pack/internal.h (all little-endian):
//   header at 0: its size is the u32 at byte 12, its CRC (of the bytes before
//     it) the last 4 bytes of that size; the column count is the u32 at 16.
//   footer, the last 32 bytes: u64 trailer offset, u64 trailer size, u32
//     version, u32 CRC of the footer's first 20 bytes, 8-byte magic.
//   trailer: magic, u64 nrows, u64 nchunks (byte 16), u64 nseries, 32 bytes of
//     statistics per column, then 16-byte index entries (u64 offset, u32 stored
//     size, u32 CRC of the stored bytes), ...; its last 4 bytes are the CRC of
//     the rest.
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pack/internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

__attribute__((noreturn)) static void fail(const char *what, const char *detail) {
    fprintf(stderr, "fuzz_pack: %s: %s\n", what, detail);
    abort();
}

static void fix_crcs(uint8_t *b, size_t n, int chunks) {
    if (n < 16) return;
    uint32_t hsize = sf_get_u32(b + 12);
    if (hsize >= 4 && hsize <= n) sf_put_u32(b + hsize - 4, sf_crc32c(0, b, hsize - 4));
    if (n < SF_FOOTER_SIZE) return;
    uint8_t *f = b + n - SF_FOOTER_SIZE;
    uint64_t toff = sf_get_u64(f), tsize = sf_get_u64(f + 8), avail = n - SF_FOOTER_SIZE;
    if (toff <= avail && tsize >= SF_TRAILER_FIXED + 4 && tsize <= avail - toff) {
        uint8_t *t = b + toff;
        if (chunks) {
            uint64_t ncols = sf_get_u32(b + 16), nchunks = sf_get_u64(t + 16);
            uint64_t pos = SF_TRAILER_FIXED + ncols * SF_STATS_SIZE;  // no overflow: ncols < 2^32
            for (uint64_t i = 0; i < nchunks && pos <= tsize - 4 - SF_INDEX_ENTRY; i++, pos += SF_INDEX_ENTRY) {
                uint64_t off = sf_get_u64(t + pos);
                uint32_t len = sf_get_u32(t + pos + 8);
                if (off <= n && len <= n - off) sf_put_u32(t + pos + 12, sf_crc32c(0, b + off, len));
            }
        }
        sf_put_u32(t + tsize - 4, sf_crc32c(0, t, tsize - 4));
    }
    sf_put_u32(f + 20, sf_crc32c(0, f, 20));
}

static void read_everything(const sf_pack *p) {
    const sf_pack_info *in = sf_pack_get_info(p);
    size_t max_stored = sf_pack_max_stored_size(p);
    uint8_t *stored = malloc(max_stored);
    float *vals = malloc((size_t)in->chunk_rows * in->ncols * sizeof *vals);
    bool timed = in->time_kind != SF_TIME_NONE;
    int64_t *time = timed ? malloc((size_t)in->chunk_rows * 8) : NULL;
    int64_t *line = in->has_lines ? malloc((size_t)in->chunk_rows * 8) : NULL;
    uint8_t *imp = malloc((size_t)in->chunk_rows * in->ncols);  // all 0 for a file without the record
    sf_pack_dctx *d = sf_pack_dctx_create();
    if (!stored || !vals || !d || (timed && !time) || (in->has_lines && !line) || !imp)
        fail("out of memory", sf_pack_name(p));
    for (uint32_t c = 0; in->imputed && c < in->ncols; c++)
        if (in->imputed[c] > in->nrows) fail("more imputed values than rows", in->col_names[c]);
    for (uint64_t i = 0; timed && i < in->nseries; i++)
        if (in->series_times[2 * i] > in->series_times[2 * i + 1]) fail("a series ends before it starts", "");
    sf_err e;
    for (uint64_t i = 0; i < in->nchunks; i++) {
        sf_chunk c = sf_pack_chunk_locate(p, i);
        if (c.stored_size > max_stored || c.rows == 0 || c.rows > in->chunk_rows || c.first_row >= in->nrows ||
            c.offset < in->data_offset || c.offset + c.stored_size > in->trailer_offset)
            fail("a chunk of an opened file lies outside its bounds", sf_pack_name(p));
        if (sf_pack_chunk_read(p, i, stored, &e) != 0) fail("a chunk of an opened file cannot be read", e.msg);
        sf_pack_chunk_decode_imputed(d, p, i, stored, vals, time, line, imp, &e);
        (void)sf_pack_chunk_max_step(p, i);
    }
    sf_pack_verify(p, NULL, NULL, &e);
    free(stored);
    free(vals);
    free(time);
    free(line);
    free(imp);
    sf_pack_dctx_free(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int fd = -1;
    if (fd < 0 && (fd = memfd_create("fuzz_pack", MFD_CLOEXEC)) < 0) {
        perror("fuzz_pack: memfd_create");
        abort();
    }
    if (size < 1) return 0;
    uint8_t flags = data[0];
    size_t n = size - 1;
    uint8_t *file = malloc(n ? n : 1);
    if (!file) fail("out of memory", "input copy");
    memcpy(file, data + 1, n);
    if (flags & 1) fix_crcs(file, n, flags & 2);
    if (ftruncate(fd, 0) != 0 || (n && pwrite(fd, file, n, 0) != (ssize_t)n)) {
        perror("fuzz_pack: writing the memfd");
        abort();
    }
    free(file);
    sf_pack *p;
    sf_err e;
    if (sf_pack_open_fd(&p, fd, "fuzz.sfpack", &e) == 0) {
        read_everything(p);
        sf_pack_close(p);
    }
    return 0;
}
