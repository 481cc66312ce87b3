// TensorBoard's event files (--tensorboard DIR), as Keras' TensorBoard
// callback lays them out: a run per subdirectory, DIR/train and
// DIR/validation, each with its own file events.out.tfevents.TIME.HOST.PID.0.
// A file is TFRecords (uint64 length, masked CRC-32C of the length, the
// data, masked CRC-32C of the data), each an Event protocol buffer: first
// file_version "brain.Event:2", then a SessionLog START, then summaries of
// simple_value scalars. The few fields are encoded by hand: protobuf-c
// would be a dependency for about a dozen of them.
//
// TensorBoard reads the files while they grow, so they are written in
// place, never through a temporary: a row's records in one write(2) when
// it is logged, fsync at each epoch's end. A crash leaves at most a last
// record cut short, which TensorBoard's reader skips.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

static const char *const run_names[2] = {"train", "validation"};

// ---- protocol buffers: the fields an Event of scalars needs ----

typedef struct {
    uint8_t *p;
    size_t n, cap;
    bool over;  // a write past cap: the caller's buffer is too small (a bug, never user input)
} pb;

static void put(pb *b, const void *data, size_t n) {
    if (b->over || n > b->cap - b->n) {
        b->over = true;
        return;
    }
    memcpy(b->p + b->n, data, n);
    b->n += n;
}

static void varint(pb *b, uint64_t v) {
    uint8_t out[10];
    size_t k = 0;
    do {
        out[k++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    put(b, out, k);
}

enum { WIRE_VARINT = 0, WIRE_FIXED64 = 1, WIRE_BYTES = 2, WIRE_FIXED32 = 5 };

static void key(pb *b, uint32_t field, int wire) { varint(b, (uint64_t)field << 3 | (uint64_t)wire); }

static void bytes_field(pb *b, uint32_t field, const void *data, size_t n) {
    key(b, field, WIRE_BYTES);
    varint(b, n);
    put(b, data, n);
}

static void double_field(pb *b, uint32_t field, double v) {
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    uint8_t le[8];
    sf_put_u64(le, u);
    key(b, field, WIRE_FIXED64);
    put(b, le, sizeof le);
}

static void float_field(pb *b, uint32_t field, float v) {
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    uint8_t le[4];
    sf_put_u32(le, u);
    key(b, field, WIRE_FIXED32);
    put(b, le, sizeof le);
}

// Event's fields (tensorboard/compat/proto/event.proto) and Summary's (summary.proto).
enum {
    EVENT_WALL_TIME = 1, EVENT_STEP = 2, EVENT_FILE_VERSION = 3, EVENT_SUMMARY = 5, EVENT_SESSION_LOG = 7,
    SUMMARY_VALUE = 1, VALUE_TAG = 1, VALUE_SIMPLE = 2,
    SESSION_LOG_STATUS = 1, SESSION_LOG_START = 1,
};

typedef struct {
    const char *tag;
    double value;
} scalar;

// An Event at step with what (a summary of n scalars; file_version when
// version; a SessionLog START when start) into b.
static void event(pb *b, double wall, uint64_t step, const char *version, bool start, const scalar *v, size_t n) {
    double_field(b, EVENT_WALL_TIME, wall);
    if (step) key(b, EVENT_STEP, WIRE_VARINT), varint(b, step);  // proto3 leaves a 0 out
    if (version) bytes_field(b, EVENT_FILE_VERSION, version, strlen(version));
    if (start) {
        uint8_t log[2] = {SESSION_LOG_STATUS << 3 | WIRE_VARINT, SESSION_LOG_START};
        bytes_field(b, EVENT_SESSION_LOG, log, sizeof log);
    }
    if (!n) return;
    uint8_t s[512], one[128];
    pb sum = {.p = s, .cap = sizeof s};
    for (size_t k = 0; k < n; k++) {
        pb val = {.p = one, .cap = sizeof one};
        bytes_field(&val, VALUE_TAG, v[k].tag, strlen(v[k].tag));
        float_field(&val, VALUE_SIMPLE, (float)v[k].value);
        sum.over |= val.over;
        bytes_field(&sum, SUMMARY_VALUE, one, val.n);
    }
    b->over |= sum.over;
    bytes_field(b, EVENT_SUMMARY, s, sum.n);
}

uint32_t sf_tboard_masked_crc(const void *data, size_t n) {
    uint32_t c = sf_crc32c(0, data, n);
    return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

// Frames the n bytes at data as a TFRecord at the end of out.
static void record(pb *out, const uint8_t *data, size_t n) {
    uint8_t head[12], tail[4];
    sf_put_u64(head, n);
    sf_put_u32(head + 8, sf_tboard_masked_crc(head, 8));
    sf_put_u32(tail, sf_tboard_masked_crc(data, n));
    put(out, head, sizeof head);
    put(out, data, n);
    put(out, tail, sizeof tail);
}

// An Event as a record at the end of out.
static void event_record(pb *out, double wall, uint64_t step, const char *version, bool start, const scalar *v,
                         size_t n) {
    uint8_t buf[1024];
    pb b = {.p = buf, .cap = sizeof buf};
    event(&b, wall, step, version, start, v, n);
    out->over |= b.over;
    record(out, buf, b.n);
}

static double wall_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

// ---- the files ----

static int write_all(sf_tboard *t, int run, const uint8_t *p, size_t n, sf_err *e) {
    while (n) {
        ssize_t w = write(t->fd[run], p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return sf_err_errno(e, SF_EIO, w < 0 ? errno : ENOSPC, "%s: cannot write TensorBoard's events",
                                        t->path[run]);
        p += w, n -= (size_t)w;
    }
    return 0;
}

static int sync_all(sf_tboard *t, sf_err *e) {
    for (int r = 0; r < 2; r++)
        if (t->fd[r] >= 0 && fsync(t->fd[r]) != 0 && errno != EINVAL)
            return sf_err_errno(e, SF_EIO, errno, "%s: cannot write TensorBoard's events", t->path[r]);
    return 0;
}

int sf_tboard_row(sf_tboard *t, const sf_history_row *r, double samples_per_s, double input_wait, sf_err *e) {
    uint8_t buf[2][4096];
    pb out[2] = {{.p = buf[0], .cap = sizeof buf[0]}, {.p = buf[1], .cap = sizeof buf[1]}};
    double wall = wall_now();
    // The log's rows as Keras' batch_ scalars at Adam's step count; at an
    // epoch's end also its epoch_ scalars at the epoch (from 0, as Keras
    // counts), and val_loss in the validation run, as Keras writes both.
    const char *names[2][4] = {{"batch_loss", "batch_learning_rate", "batch_samples_per_s", "batch_input_wait"},
                               {"epoch_loss", "epoch_learning_rate", "epoch_samples_per_s", "epoch_input_wait"}};
    for (int kind = 0; kind < (r->epoch_end ? 2 : 1); kind++) {
        scalar v[4] = {{names[kind][0], r->loss}, {names[kind][1], r->lr}, {names[kind][2], samples_per_s},
                       {names[kind][3], input_wait}};
        event_record(&out[0], wall, kind ? r->epoch - 1 : r->step, NULL, false, v, 4);
    }
    if (r->epoch_end && !isnan(r->val_loss)) {
        event_record(&out[1], wall, r->epoch - 1, NULL, false, &(scalar){"epoch_loss", r->val_loss}, 1);
        event_record(&out[1], wall, r->step, NULL, false, &(scalar){"evaluation_loss_vs_iterations", r->val_loss}, 1);
    }
    int rc = 0;
    for (int run = 0; run < 2 && !rc; run++) {
        if (out[run].over) return sf_err_set(e, SF_EINVAL, "%s: an event outgrew its buffer", t->path[run]);
        rc = write_all(t, run, out[run].p, out[run].n, e);
    }
    return !rc && r->epoch_end ? sync_all(t, e) : rc;
}

// DIR and its parents, created where missing (as TensorFlow's summary
// writer does), each a directory or a link to one.
static int make_dirs(const char *dir, sf_err *e) {
    if (!*dir) return sf_err_set(e, SF_EUSAGE, "--tensorboard: an empty path; expected a directory");
    char *p = strdup(dir);
    if (!p) return sf_err_set(e, SF_ENOMEM, "out of memory");
    int rc = 0;
    for (char *s = p + 1;; s++) {
        bool end = !*s;
        if (*s != '/' && !end) continue;
        *s = 0;
        struct stat st;
        if (mkdir(p, 0777) != 0 && errno != EEXIST)
            rc = sf_err_errno(e, SF_EIO, errno, "--tensorboard %s: cannot create %s", dir, p);
        else if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode))
            rc = sf_err_set(e, SF_EUSAGE, "--tensorboard %s: %s is not a directory (a file of that name, or a "
                            "dangling link, is in the way) (hint: another --tensorboard DIR)", dir, p);
        if (rc || end) break;
        *s = '/';
    }
    free(p);
    return rc;
}

// DIR/NAME, created when missing, opened as a directory: a symbolic link
// there (someone else's) is refused, never followed.
static int open_run_dir(const char *dir, int dirfd, const char *name, sf_err *e) {
    if (mkdirat(dirfd, name, 0777) != 0 && errno != EEXIST)
        return sf_err_errno(e, SF_EIO, errno, "--tensorboard %s: cannot create %s/%s", dir, dir, name);
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && (errno == ENOTDIR || errno == ELOOP))
        return sf_err_set(e, SF_EUSAGE, "--tensorboard %s: %s/%s is not a directory (a file or a symbolic link of "
                          "that name is in the way: TensorBoard's runs are the directories train and validation) "
                          "(hint: another --tensorboard DIR)", dir, dir, name);
    if (fd < 0) return sf_err_errno(e, SF_EIO, errno, "--tensorboard %s: cannot open %s/%s", dir, dir, name);
    return fd;
}

static const char prefix[] = "events.out.tfevents.";

// The latest TIME of the event files in the directory fd (-1: none).
// TensorBoard reads a run's files in the order of their names, so a new
// one must sort after them all.
static long long latest_events(int fd) {
    int dup_fd = dup(fd);
    DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
    if (!d) {
        if (dup_fd >= 0) close(dup_fd);
        return -1;
    }
    long long latest = -1;
    for (struct dirent *de; (de = readdir(d));) {
        if (strncmp(de->d_name, prefix, sizeof prefix - 1)) continue;
        char *end;
        long long t = strtoll(de->d_name + sizeof prefix - 1, &end, 10);
        if (end != de->d_name + sizeof prefix - 1 && *end == '.' && t > latest) latest = t;
    }
    closedir(d);
    return latest;
}

int sf_tboard_open(sf_tboard *t, const char *dir, uint64_t first, bool *earlier, sf_err *e) {
    *t = (sf_tboard){.fd = {-1, -1}};
    *earlier = false;
    int rc = make_dirs(dir, e);
    int top = rc ? -1 : open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (!rc && top < 0) rc = sf_err_errno(e, SF_EIO, errno, "--tensorboard %s: cannot open it", dir);
    int runs[2] = {-1, -1};
    for (int r = 0; r < 2 && !rc; r++)
        if ((runs[r] = open_run_dir(dir, top, run_names[r], e)) < 0) rc = runs[r];
    long long latest = -1, now = (long long)time(NULL);
    for (int r = 0; r < 2 && !rc; r++) {
        long long l = latest_events(runs[r]);
        latest = l > latest ? l : latest;
    }
    *earlier = latest >= 0;
    char host[72] = "";
    if (gethostname(host, sizeof host - 1) != 0 || !host[0]) snprintf(host, sizeof host, "localhost");
    for (char *c = host; *c; c++)  // a name TensorBoard and shells take as it is
        if (!(*c == '-' || *c == '.' || *c == '_' || (*c >= '0' && *c <= '9') || ((*c | 32) >= 'a' && (*c | 32) <= 'z')))
            *c = '_';
    long long stamp = latest >= now ? latest + 1 : now;
    double wall = wall_now();
    for (int r = 0; r < 2 && !rc; r++) {
        char name[160];
        snprintf(name, sizeof name, "%s%010lld.%s.%ld.0", prefix, stamp, host, (long)getpid());
        size_t len = strlen(dir) + strlen(run_names[r]) + strlen(name) + 3;
        if (!(t->path[r] = malloc(len))) {
            rc = sf_err_set(e, SF_ENOMEM, "out of memory");
            break;
        }
        snprintf(t->path[r], len, "%s/%s/%s", dir, run_names[r], name);
        // A new file, never one that is there, nor a link's target.
        t->fd[r] = openat(runs[r], name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (t->fd[r] < 0) {
            rc = sf_err_errno(e, SF_EIO, errno, "%s: cannot create", t->path[r]);
            break;
        }
        // A SessionLog START at the run's first step: TensorBoard drops what
        // earlier files hold from that step on (a killed run's rows past its
        // checkpoint, which this run logs again).
        uint8_t buf[256];
        pb out = {.p = buf, .cap = sizeof buf};
        event_record(&out, wall, 0, "brain.Event:2", false, NULL, 0);
        event_record(&out, wall, first, NULL, true, NULL, 0);
        rc = write_all(t, r, out.p, out.n, e);
    }
    for (int r = 0; r < 2; r++)
        if (runs[r] >= 0) close(runs[r]);
    if (top >= 0) close(top);
    if (!rc) rc = sync_all(t, e);
    if (rc) sf_tboard_close(t, NULL);
    return rc;
}

int sf_tboard_close(sf_tboard *t, sf_err *e) {
    int rc = e ? sync_all(t, e) : 0;
    for (int r = 0; r < 2; r++) {
        if (t->fd[r] >= 0 && close(t->fd[r]) != 0 && !rc && e)
            rc = sf_err_errno(e, SF_EIO, errno, "%s: cannot write TensorBoard's events", t->path[r]);
        free(t->path[r]);
        t->fd[r] = -1, t->path[r] = NULL;
    }
    return rc;
}
