// The reader: every chunk of a packed file read through io_uring and through
// pread, with and without O_DIRECT, with registered buffers and with more
// buffer memory than RLIMIT_MEMLOCK allows, must give the bytes a plain pread
// gives and decode. Errors: a read past the end, misaligned offsets, O_DIRECT
// forced where the file system refuses it.
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include "tests/pipeline/sample.h"

static void read_all(const sf_pack *p, const sf_reader_opts *o, const char *what) {
    const sf_pack_info *in = sf_pack_get_info(p);
    sf_reader *r;
    sf_err e = {0};
    if (sf_reader_open(&r, sf_pack_fd(p), path, o, &e)) {
        CHECK(0, "%s: %s", what, e.msg);
        return;
    }
    printf("%s: %s\n", what, sf_reader_mode(r));
    void *want = malloc(sf_pack_max_stored_size(p));
    float *vals = malloc((size_t)in->chunk_rows * in->ncols * sizeof(float));
    sf_pack_dctx *d = sf_pack_dctx_create();
    uint64_t next = 0, done = 0;
    uint32_t in_flight = 0, free_slot[64], nfree = 0;
    for (uint32_t i = 0; i < o->depth; i++) free_slot[nfree++] = i;
    while (done < in->nchunks) {
        while (nfree && next < in->nchunks) {
            sf_chunk c = sf_pack_chunk_locate(p, next);
            CHECK(sf_reader_submit(r, free_slot[--nfree], c.offset, c.stored_size, next, &e) == 0, "%s: %s", what,
                  e.msg);
            next++;
            in_flight++;
        }
        uint32_t i;
        uint64_t tag;
        if (sf_reader_wait(r, &i, &tag, &e)) {
            CHECK(0, "%s: %s", what, e.msg);
            break;
        }
        sf_chunk c = sf_pack_chunk_locate(p, tag);
        CHECK(sf_pack_chunk_read(p, tag, want, &e) == 0, "%s", e.msg);
        CHECK(memcmp(sf_reader_buffer(r, i), want, c.stored_size) == 0, "%s: chunk %llu differs", what,
              (unsigned long long)tag);
        CHECK(sf_pack_chunk_decode(d, p, tag, sf_reader_buffer(r, i), vals, &e) == 0, "%s: %s", what, e.msg);
        free_slot[nfree++] = i;
        in_flight--;
        done++;
    }
    // Past the end of the file: a clear error, not a hang.
    uint64_t end = (in->file_size + sf_reader_align(r) - 1) / sf_reader_align(r) * sf_reader_align(r);
    int rc = sf_reader_submit(r, 0, end, 4096, 7, &e);
    if (rc == 0) {
        uint32_t i;
        uint64_t tag;
        rc = sf_reader_wait(r, &i, &tag, &e);
    }
    CHECK(rc == SF_ECORRUPT && strstr(e.msg, "ends"), "%s: read past the end: %d %s", what, rc, e.msg);
    if (sf_reader_align(r) > 1)
        CHECK(sf_reader_submit(r, 0, 1, 10, 0, &e) == SF_EINVAL, "%s: a misaligned offset was accepted", what);
    free(want);
    free(vals);
    sf_pack_dctx_free(d);
    sf_reader_close(r);
}

int main(void) {
    if (!mkdtemp(dir)) return 2;
    snprintf(path, sizeof path, "%s/sample.sfpack", dir);
    sf_pack *p;
    sf_err e = {0};
    if (pack_sample(97) || sf_pack_open(&p, path, &e)) {
        CHECK(0, "setup: %s", e.msg);
        return TEST_EXIT();
    }
    size_t biggest = sf_pack_max_stored_size(p);
    const char *io_name[] = {"auto", "uring", "pread"}, *direct_name[] = {"auto", "on", "off"};
    for (int io = SF_IO_AUTO; io <= SF_IO_PREAD; io++)
        for (int direct = SF_DIRECT_AUTO; direct <= SF_DIRECT_OFF; direct++)
            for (uint32_t depth = 1; depth <= 8; depth *= 8) {
                char what[64];
                snprintf(what, sizeof what, "io=%s direct=%s depth=%u", io_name[io], direct_name[direct], depth);
                sf_reader_opts o = {io, direct, depth, biggest};
                read_all(p, &o, what);
            }
    // More pinned memory than RLIMIT_MEMLOCK allows: io_uring still reads,
    // into unregistered buffers. Root ignores the limit through
    // CAP_IPC_LOCK, so drop that first (for this process only).
    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct caps[2];
    if (syscall(SYS_capget, &hdr, caps) == 0) {
        caps[0].effective &= ~(1u << CAP_IPC_LOCK);
        syscall(SYS_capset, &hdr, caps);
    }
    struct rlimit lim = {1u << 20, 1u << 20};
    if (setrlimit(RLIMIT_MEMLOCK, &lim) == 0) {
        sf_reader_opts o = {SF_IO_URING, SF_DIRECT_OFF, 8, 1u << 20};
        sf_reader *r;
        if (sf_reader_open(&r, sf_pack_fd(p), path, &o, &e) == 0) {
            CHECK(strstr(sf_reader_mode(r), "buffers not registered (RLIMIT_MEMLOCK)"),
                  "8 MiB registered under a 1 MiB limit: %s", sf_reader_mode(r));
            sf_reader_close(r);
            read_all(p, &o, "over RLIMIT_MEMLOCK");
        } else if (strstr(e.msg, strerror(ENOMEM))) {
            // The ring itself counts against the limit, with everything else
            // the user has locked (a running `perf record`'s buffers): the
            // case cannot be set up here, which says nothing of the reader.
            printf("over RLIMIT_MEMLOCK: not checked, this user's locked memory is in use elsewhere: %s\n", e.msg);
        } else {
            CHECK(0, "over RLIMIT_MEMLOCK: %s", e.msg);
        }
    }
    sf_pack_close(p);
    // O_DIRECT where the file system refuses it (tmpfs): forced is an error
    // with a hint, auto falls back to the page cache.
    char shm[] = "/dev/shm/sfreader.XXXXXX";
    int fd = mkstemp(shm);
    if (fd >= 0 && write(fd, "x", 1) == 1) {
        sf_reader *r;
        sf_reader_opts o = {SF_IO_AUTO, SF_DIRECT_ON, 2, 4096};
        int rc = sf_reader_open(&r, fd, shm, &o, &e);
        if (rc == 0) {
            sf_reader_close(r);  // this tmpfs takes O_DIRECT: nothing to check
        } else {
            CHECK(rc == SF_EIO && strstr(e.msg, "--direct off"), "forced O_DIRECT: %s", e.msg);
            o.direct = SF_DIRECT_AUTO;
            CHECK(sf_reader_open(&r, fd, shm, &o, &e) == 0 && strstr(sf_reader_mode(r), "page cache"),
                  "auto O_DIRECT on tmpfs: %s", e.msg);
            sf_reader_close(r);
        }
    }
    if (fd >= 0) {
        close(fd);
        unlink(shm);
    }
    sf_reader_opts bad = {SF_IO_PREAD, SF_DIRECT_OFF, 0, 4096};
    sf_reader *r;
    CHECK(sf_reader_open(&r, 0, path, &bad, &e) == SF_EINVAL, "depth 0 accepted");
    unlink(path);
    rmdir(dir);
    return TEST_EXIT();
}
