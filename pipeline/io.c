// The reader stage: io_uring when the kernel allows it, plain preads when not;
// either way the same submit / wait interface over the reader's buffers.
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pipeline.h"

typedef struct {
    uint64_t offset, tag;
    size_t need, want, got;  // need: the caller's bytes; want: rounded up for O_DIRECT
} slot;

struct sf_reader {
    char *path;
    int fd;
    bool uring, fixed_file, fixed_bufs, direct;
    size_t align, buffer_size;
    uint32_t depth;
    uint64_t file_size;
    struct io_uring ring;
    void **bufs;
    slot *slots;
    uint32_t *done, done_head, done_count;  // pread mode: completed slots, FIFO
    char mode[192];
};

void sf_reader_close(sf_reader *r) {
    if (!r) return;
    if (r->uring) io_uring_queue_exit(&r->ring);
    for (uint32_t i = 0; r->bufs && i < r->depth; i++) free(r->bufs[i]);
    free(r->bufs);
    free(r->slots);
    free(r->done);
    if (r->fd >= 0) close(r->fd);
    free(r->path);
    free(r);
}

const char *sf_reader_mode(const sf_reader *r) { return r->mode; }
size_t sf_reader_align(const sf_reader *r) { return r->align; }
void *sf_reader_buffer(const sf_reader *r, uint32_t i) { return r->bufs[i]; }

static size_t dio_align(int fd) {
#ifdef STATX_DIOALIGN
    struct statx sx;
    if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) == 0 && (sx.stx_mask & STATX_DIOALIGN) &&
        sx.stx_dio_offset_align) {
        return sx.stx_dio_offset_align > sx.stx_dio_mem_align ? sx.stx_dio_offset_align : sx.stx_dio_mem_align;
    }
#else
    (void)fd;
#endif
    return 4096;
}

// The caller's file again: through /proc/self/fd for O_DIRECT (the same
// file, whatever became of its name; O_DIRECT is a property of the open
// file, which the caller's descriptor shares with dups), else a dup.
static int open_file(sf_reader *r, int fd, enum sf_direct direct, sf_err *e) {
    if (direct != SF_DIRECT_OFF) {
        char self[64];
        snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
        r->fd = open(self, O_RDONLY | O_CLOEXEC | O_DIRECT);
        if (r->fd >= 0) {
            r->direct = true;
            r->align = dio_align(r->fd);
            return 0;
        }
        if (direct == SF_DIRECT_ON)
            return sf_err_errno(e, SF_EIO, errno, "%s: cannot open with O_DIRECT (hint: --direct off)", r->path);
    }
    r->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (r->fd < 0) return sf_err_errno(e, SF_EIO, errno, "%s: cannot open", r->path);
    r->align = 1;
    return 0;
}

// Sets up io_uring; returns 0, or the errno that refused it.
static int start_uring(sf_reader *r) {
    int rc = io_uring_queue_init(r->depth, &r->ring, 0);
    if (rc < 0) return -rc;
    r->uring = true;
    r->fixed_file = io_uring_register_files(&r->ring, &r->fd, 1) == 0;
    struct iovec *iov = malloc(r->depth * sizeof *iov);
    if (iov) {
        for (uint32_t i = 0; i < r->depth; i++) iov[i] = (struct iovec){r->bufs[i], r->buffer_size};
        // Pinned memory counts against RLIMIT_MEMLOCK: without it, plain reads.
        r->fixed_bufs = io_uring_register_buffers(&r->ring, iov, r->depth) == 0;
        free(iov);
    }
    return 0;
}

int sf_reader_open(sf_reader **out, int fd, const char *path, const sf_reader_opts *o, sf_err *e) {
    *out = NULL;
    if (o->depth == 0 || o->buffer_size == 0)
        return sf_err_set(e, SF_EINVAL, "%s: reader depth and buffer size must be positive", path);
    sf_reader *r = calloc(1, sizeof *r);
    if (!r) return sf_err_set(e, SF_ENOMEM, "out of memory");
    r->fd = -1;
    r->depth = o->depth;
    r->path = strdup(path);
    int rc = r->path ? open_file(r, fd, o->direct, e) : sf_err_set(e, SF_ENOMEM, "out of memory");
    struct stat st;
    if (!rc && fstat(r->fd, &st) != 0) rc = sf_err_errno(e, SF_EIO, errno, "%s: cannot stat", path);
    if (rc) {
        sf_reader_close(r);
        return rc;
    }
    r->file_size = (uint64_t)st.st_size;
    r->buffer_size = (o->buffer_size + 4095) / 4096 * 4096;
    r->bufs = calloc(r->depth, sizeof *r->bufs);
    r->slots = calloc(r->depth, sizeof *r->slots);
    r->done = calloc(r->depth, sizeof *r->done);
    bool ok = r->bufs && r->slots && r->done;
    for (uint32_t i = 0; ok && i < r->depth; i++)
        if (posix_memalign(&r->bufs[i], 4096, r->buffer_size)) {
            r->bufs[i] = NULL;
            ok = false;
        }
    if (!ok) {
        sf_reader_close(r);
        return sf_err_set(e, SF_ENOMEM, "%s: out of memory for %u read buffers", path, o->depth);
    }
    int refused = o->io == SF_IO_PREAD ? 0 : start_uring(r);
    if (refused && o->io == SF_IO_URING) {
        sf_reader_close(r);
        return sf_err_errno(e, SF_EIO, refused, "%s: io_uring is not available (hint: --io pread)", path);
    }
    char how[96];
    if (r->uring)
        snprintf(how, sizeof how, "io_uring, depth %u, file %s, buffers %s", r->depth,
                 r->fixed_file ? "registered" : "not registered",
                 r->fixed_bufs ? "registered" : "not registered (RLIMIT_MEMLOCK)");
    else if (refused)
        snprintf(how, sizeof how, "pread (io_uring refused: %s)", strerror(refused));
    else
        snprintf(how, sizeof how, "pread");
    snprintf(r->mode, sizeof r->mode, "%s; %s", how, r->direct ? "O_DIRECT" : "page cache");
    *out = r;
    return 0;
}

static void queue_read(sf_reader *r, uint32_t i) {
    slot *s = &r->slots[i];
    struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);  // never NULL: at most depth reads in flight
    char *dst = (char *)r->bufs[i] + s->got;
    int fd = r->fixed_file ? 0 : r->fd;
    if (r->fixed_bufs) io_uring_prep_read_fixed(sqe, fd, dst, (unsigned)(s->want - s->got), s->offset + s->got, (int)i);
    else io_uring_prep_read(sqe, fd, dst, (unsigned)(s->want - s->got), s->offset + s->got);
    if (r->fixed_file) sqe->flags |= IOSQE_FIXED_FILE;
    io_uring_sqe_set_data64(sqe, i);
}

static int read_error(sf_reader *r, const slot *s, int err, sf_err *e) {
    if (err == 0)
        return sf_err_set(e, SF_ECORRUPT, "%s: the file ends at byte %llu, inside the read of bytes %llu-%llu",
                          r->path, (unsigned long long)(s->offset + s->got), (unsigned long long)s->offset,
                          (unsigned long long)(s->offset + s->need - 1));
    return sf_err_errno(e, SF_EIO, err, "%s: read of bytes %llu-%llu failed", r->path, (unsigned long long)s->offset,
                        (unsigned long long)(s->offset + s->need - 1));
}

int sf_reader_submit(sf_reader *r, uint32_t i, uint64_t offset, size_t len, uint64_t tag, sf_err *e) {
    size_t want = (len + r->align - 1) / r->align * r->align;
    if (i >= r->depth || offset % r->align || want > r->buffer_size)
        return sf_err_set(e, SF_EINVAL, "%s: read %u of %zu bytes at %llu: expected a buffer below %u, %zu-aligned "
                          "offsets and at most %zu bytes",
                          r->path, i, len, (unsigned long long)offset, r->depth, r->align, r->buffer_size);
    slot *s = &r->slots[i];
    *s = (slot){offset, tag, len, want, 0};
    if (r->uring) {
        queue_read(r, i);
        int rc = io_uring_submit(&r->ring);
        return rc < 0 ? sf_err_errno(e, SF_EIO, -rc, "%s: io_uring submit failed", r->path) : 0;
    }
    while (s->got < s->need) {
        ssize_t k = pread(r->fd, (char *)r->bufs[i] + s->got, s->want - s->got, (off_t)(s->offset + s->got));
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return read_error(r, s, k < 0 ? errno : 0, e);
        s->got += (size_t)k;
    }
    r->done[(r->done_head + r->done_count++) % r->depth] = i;
    return 0;
}

int sf_reader_wait(sf_reader *r, uint32_t *i, uint64_t *tag, sf_err *e) {
    if (!r->uring) {
        if (r->done_count == 0) return sf_err_set(e, SF_EINVAL, "%s: no read in flight", r->path);
        *i = r->done[r->done_head];
        r->done_head = (r->done_head + 1) % r->depth;
        r->done_count--;
        *tag = r->slots[*i].tag;
        return 0;
    }
    for (;;) {
        struct io_uring_cqe *cqe;
        int rc = io_uring_wait_cqe(&r->ring, &cqe);
        if (rc == -EINTR) continue;
        if (rc < 0) return sf_err_errno(e, SF_EIO, -rc, "%s: io_uring wait failed", r->path);
        uint32_t k = (uint32_t)io_uring_cqe_get_data64(cqe);
        int res = cqe->res;
        io_uring_cqe_seen(&r->ring, cqe);
        slot *s = &r->slots[k];
        if (res == -EINTR || res == -EAGAIN) res = 0;  // nothing read: ask again
        else if (res <= 0) return read_error(r, s, -res, e);
        s->got += (size_t)res;
        if (s->got >= s->need) {
            *i = k;
            *tag = s->tag;
            return 0;
        }
        // A short read: the rest again (O_DIRECT reads stop short only at
        // the end of the file, which the check above reports).
        queue_read(r, k);
        if ((rc = io_uring_submit(&r->ring)) < 0)
            return sf_err_errno(e, SF_EIO, -rc, "%s: io_uring submit failed", r->path);
    }
}
