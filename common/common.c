#include "common.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <libgen.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <time.h>
#include <math.h>
#include <sys/syscall.h>

int sf_err_set(sf_err *e, int code, const char *fmt, ...) {
    if (e) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->msg, sizeof e->msg, fmt, ap);
        va_end(ap);
        e->code = code;
    }
    return code;
}

int sf_err_errno(sf_err *e, int code, int errnum, const char *fmt, ...) {
    if (e) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(e->msg, sizeof e->msg, fmt, ap);
        va_end(ap);
        char buf[128];  // strerror_r: decoding and compression threads report errors too
        if (n >= 0 && (size_t)n < sizeof e->msg)
            snprintf(e->msg + n, sizeof e->msg - (size_t)n, ": %s", strerror_r(errnum, buf, sizeof buf));
        e->code = code;
    }
    return code;
}

const char *sf_err_name(int code) {
    switch (code) {
    case SF_OK: return "ok";
    case SF_EIO: return "I/O error";
    case SF_ENOMEM: return "out of memory";
    case SF_EINVAL: return "invalid argument";
    case SF_EFORMAT: return "bad input";
    case SF_ECORRUPT: return "corrupt file";
    case SF_EUSAGE: return "unusable option";
    case SF_ERANGE: return "out of range";
    default: return "error";
    }
}

// The file an output path names: a symbolic link's target (resolved from
// the link's folder, whether or not the target exists yet), else the path
// itself. malloc'd; NULL when out of memory.
static char *output_target(const char *path) {
    char *cur = strdup(path);
    for (int hops = 0; cur && hops < 40; hops++) {
        struct stat st;
        char link[PATH_MAX];
        ssize_t n;
        if (lstat(cur, &st) != 0 || !S_ISLNK(st.st_mode) || (n = readlink(cur, link, sizeof link - 1)) < 0)
            return cur;
        link[n] = 0;
        char *next;
        if (link[0] == '/') {
            next = strdup(link);
        } else {  // relative to the link's own folder
            char *copy = strdup(cur);
            const char *dir = copy ? dirname(copy) : NULL;
            next = dir && (next = malloc(strlen(dir) + strlen(link) + 2)) ? next : NULL;
            if (next) sprintf(next, "%s/%s", dir, link);
            free(copy);
        }
        free(cur);
        cur = next;
    }
    return cur;
}

// Temporary files a killed run of this program left for target: those
// named target.tmp.PID.* whose process is gone.
static void remove_stale(const char *target) {
    char *copy = strdup(target), *copy2 = strdup(target);
    if (!copy || !copy2) {
        free(copy), free(copy2);
        return;
    }
    const char *dir = dirname(copy), *base = basename(copy2);
    size_t blen = strlen(base);
    DIR *d = opendir(dir);
    for (struct dirent *ent; d && (ent = readdir(d));) {
        const char *n = ent->d_name;
        if (strncmp(n, base, blen) || strncmp(n + blen, ".tmp.", 5)) continue;
        char *end;
        long pid = strtol(n + blen + 5, &end, 10);
        if (end == n + blen + 5 || *end != '.' || pid <= 0 || pid == getpid()) continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;  // alive, or not ours to judge
        char *full = malloc(strlen(dir) + strlen(n) + 2);
        if (full) sprintf(full, "%s/%s", dir, n), unlink(full);
        free(full);
    }
    if (d) closedir(d);
    free(copy), free(copy2);
}

int sf_list_next(const char **p, char *out, size_t cap) {
    const char *s = *p;
    size_t n = 0;
    while (*s == ' ') s++;
    if (*s == '"') {
        for (s++;; s++) {
            if (!*s) return SF_EFORMAT;
            if (*s == '"' && s[1] != '"') break;
            if (*s == '"') s++;
            if (n + 1 >= cap) return SF_EFORMAT;
            out[n++] = *s;
        }
        s++;
        while (*s == ' ') s++;
        if (*s && *s != ',') return SF_EFORMAT;
    } else {
        const char *end = s + strcspn(s, ",");
        const char *t = end;
        while (t > s && t[-1] == ' ') t--;
        if ((size_t)(t - s) >= cap) return SF_EFORMAT;
        memcpy(out, s, (size_t)(t - s));
        n = (size_t)(t - s);
        s = end;
    }
    out[n] = 0;
    *p = *s == ',' ? s + 1 : NULL;
    return 0;
}

// Whether a list writes the item name[0..n) in quotes: sf_list_append and
// sf_list_item_bytes must agree, or the checkpoint's limits are off.
static bool list_quote(const char *name, size_t n) {
    return !n || memchr(name, ',', n) || memchr(name, '"', n) || name[0] == ' ' || name[n - 1] == ' ';
}

int sf_list_append(char *out, size_t cap, size_t *len, const char *name) {
    size_t n = strlen(name), k = *len;
    bool quote = list_quote(name, n);
    if (k && k < cap) out[k++] = ',';
    if (quote && k < cap) out[k++] = '"';
    for (const char *s = name; *s && k < cap; s++) {
        if (*s == '"' && k < cap) out[k++] = '"';
        if (k < cap) out[k++] = *s;
    }
    if (quote && k < cap) out[k++] = '"';
    if (k >= cap) {  // out stays the list it was
        if (*len < cap) out[*len] = 0;
        return SF_ERANGE;
    }
    out[k] = 0;
    *len = k;
    return 0;
}

size_t sf_list_item_bytes(const char *name, size_t n, size_t *quotes) {
    size_t q = 0;
    for (size_t i = 0; i < n; i++) q += name[i] == '"';
    bool quote = list_quote(name, n);
    *quotes = 2 * q + (quote ? 2 : 0);
    return n + q + (quote ? 2 : 0);
}

size_t sf_list_group_bytes(size_t items, size_t bytes, size_t quotes) {
    size_t len = bytes + (items ? items - 1 : 0);  // the commas between the items
    // An item never starts or ends with a space unquoted, so only commas,
    // quotes or emptiness quote the group.
    bool quote = !len || items > 1 || quotes;
    return len + quotes + (quote ? 2 : 0);
}

size_t sf_escape_controls(char *out, size_t cap, const char *s, size_t n) {
    size_t len = 0, k = 0;
    bool full = false;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        char piece[8];
        size_t w = 1;
        if (ch >= 0x20 && ch != 0x7f) piece[0] = (char)ch;
        else if (ch == '\n' || ch == '\t' || ch == '\r') piece[0] = '\\', piece[1] = "ntr"[ch == '\t' ? 1 : ch == '\r' ? 2 : 0], w = 2;
        else w = (size_t)snprintf(piece, sizeof piece, "\\x%02x", ch);
        full |= k + w >= cap;
        if (!full) memcpy(out + k, piece, w), k += w;
        len += w;
    }
    if (cap) out[k] = 0;
    return len;
}

int sf_open_file(const char *path, const char *what, sf_err *e) {
    // O_NONBLOCK: a FIFO must not block open() before it can be refused.
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return sf_err_errno(e, errno == EISDIR ? SF_EUSAGE : SF_EIO, errno, "%s: cannot open", path);
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int err = errno;
        close(fd);
        return sf_err_errno(e, SF_EIO, err, "%s: cannot stat", path);
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return sf_err_set(e, SF_EUSAGE, "%s is a %s: expected %s", path,
                          S_ISDIR(st.st_mode)    ? "directory"
                          : S_ISFIFO(st.st_mode) ? "FIFO or pipe (its data cannot be read at offsets)"
                          : S_ISCHR(st.st_mode)  ? "character device"
                          : S_ISBLK(st.st_mode)  ? "block device"
                                                 : "socket",
                          what);
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
}

int sf_temp_create(const char *path, char **tmp, sf_err *e) {
    *tmp = NULL;
    if (!strcmp(path, "-")) {
        int fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 0);
        return fd >= 0 ? fd : sf_err_errno(e, SF_EIO, errno, "stdout: cannot write");
    }
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        // A device, a FIFO: written as it is, never replaced; a folder, a
        // socket or a disk: refused.
        if (S_ISDIR(st.st_mode)) return sf_err_set(e, SF_EUSAGE, "%s is a directory: expected a file to write", path);
        if (!S_ISCHR(st.st_mode) && !S_ISFIFO(st.st_mode))
            return sf_err_set(e, SF_EUSAGE, "%s is a %s: expected a file, a character device or a FIFO to write", path,
                              S_ISBLK(st.st_mode) ? "block device" : "socket");
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        return fd >= 0 ? fd : sf_err_errno(e, SF_EIO, errno, "%s: cannot open for writing", path);
    }
    char *target = output_target(path);
    size_t len = target ? strlen(target) + 40 : 0;
    char *name = target ? malloc(len) : NULL;
    if (!name) {
        free(target);
        return sf_err_set(e, SF_ENOMEM, "%s: out of memory", path);
    }
    remove_stale(target);
    static const char chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t x = (uint64_t)ts.tv_nsec ^ (uint64_t)getpid() << 32 ^ (uintptr_t)name;
    for (int attempt = 0; attempt < 100; attempt++) {
        char suffix[7];
        for (int i = 0; i < 6; i++, x = x * 6364136223846793005ull + 1442695040888963407ull)
            suffix[i] = chars[(x >> 33) % (sizeof chars - 1)];
        suffix[6] = 0;
        // The PID in the name: a later run removes what a killed one left.
        snprintf(name, len, "%s.tmp.%ld.%s", target, (long)getpid(), suffix);
        // open() applies the umask: no process-wide umask() dance.
        int fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0) {
            free(target);
            *tmp = name;
            return fd;
        }
        if (errno != EEXIST) {
            int err = errno;
            free(name), free(target);
            return sf_err_errno(e, SF_EIO, err, "%s: cannot create a temporary file next to it", path);
        }
    }
    free(name), free(target);
    return sf_err_set(e, SF_EIO, "%s: cannot find a free temporary name next to it", path);
}

int sf_temp_unnamed(const char *path, sf_err *e) {
    struct stat st;
    bool regular = strcmp(path, "-") && (stat(path, &st) != 0 || S_ISREG(st.st_mode));
    char *target = regular ? output_target(path) : NULL, *copy = target ? strdup(target) : NULL;
    int fd = copy ? open(dirname(copy), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600) : -1;
    free(copy), free(target);
    if (fd >= 0) return fd;
    // No O_TMPFILE there (or no folder: sf_temp_create says which).
    char *tmp;
    int wfd = sf_temp_create(path, &tmp, e);
    if (wfd < 0) return wfd;
    if (!tmp) {
        close(wfd);
        return sf_err_set(e, SF_EUSAGE, "%s: scratch files go beside a file, not stdout or a device", path);
    }
    fd = open(tmp, O_RDWR | O_CLOEXEC);
    int err = errno;
    unlink(tmp);
    close(wfd);
    free(tmp);
    return fd >= 0 ? fd : sf_err_errno(e, SF_EIO, err, "%s: cannot open a temporary file beside it", path);
}

int sf_temp_commit(int fd, const char *tmp, const char *path, sf_err *e) {
    // A device or a FIFO was written as it is: what fsync cannot do there
    // (EINVAL) is no loss.
    if (fsync(fd) != 0 && (tmp || errno != EINVAL))
        return sf_err_errno(e, SF_EIO, errno, "%s: cannot flush the file to disk", path);
    if (!tmp) return 0;
    // The target is the temporary name less its .tmp.PID.XXXXXX: a link's
    // target, where the output goes.
    char *target = strdup(tmp);
    if (!target) return sf_err_set(e, SF_ENOMEM, "%s: out of memory", path);
    char *suffix = strrchr(target, '.');
    while (suffix && suffix > target && strncmp(suffix, ".tmp.", 5)) suffix = memrchr(target, '.', (size_t)(suffix - target));
    if (suffix) *suffix = 0;
    if (rename(tmp, target) != 0) {
        int err = errno;
        free(target);
        return sf_err_errno(e, SF_EIO, err, "%s: cannot rename %s onto it", path, tmp);
    }
    int dir = open(dirname(target), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(target);
    if (dir >= 0) {  // best effort: the data itself is already durable
        fsync(dir);
        close(dir);
    }
    return 0;
}

int sf_temp_fopen(sf_temp_file *t, const char *path, sf_err *e) {
    *t = (sf_temp_file){NULL, -1, NULL, path};
    int fd = sf_temp_create(path, &t->tmp, e);
    if (fd < 0) return fd;
    // A descriptor of its own for stdio: the commit still needs fd after fclose.
    int own = dup(fd);
    if (own < 0 || !(t->f = fdopen(own, "w"))) {
        int rc = sf_err_errno(e, SF_EIO, errno, "%s: cannot write", path);
        if (own >= 0) close(own);
        close(fd);
        if (t->tmp) unlink(t->tmp);
        free(t->tmp);
        *t = (sf_temp_file){NULL, -1, NULL, path};
        return rc;
    }
    t->fd = fd;
    return 0;
}

int sf_temp_fclose(sf_temp_file *t, bool commit, sf_err *e) {
    int rc = 0;
    if (fflush(t->f) != 0 || ferror(t->f)) rc = sf_err_errno(e, SF_EIO, errno, "%s: write failed", t->path);
    if (fclose(t->f) != 0 && !rc) rc = sf_err_errno(e, SF_EIO, errno, "%s: write failed", t->path);
    if (commit && !rc) rc = sf_temp_commit(t->fd, t->tmp, t->path, e);
    close(t->fd);
    if ((!commit || rc) && t->tmp) unlink(t->tmp);
    free(t->tmp);
    *t = (sf_temp_file){NULL, -1, NULL, t->path};
    return rc;
}

#define HUGE_PAGE ((size_t)2 << 20)

void *sf_alloc_large(size_t n) {
    if (n < HUGE_PAGE) return malloc(n);
    void *p = aligned_alloc(HUGE_PAGE, (n + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE);
    if (p) (void)madvise(p, n / HUGE_PAGE * HUGE_PAGE, MADV_HUGEPAGE);  // advice: refused, the pages stay small
    return p;
}

void *sf_alloc_large_sparse(size_t dense, size_t sparse, size_t *sparse_at) {
    // The sparse bytes from a huge page's start: advice for part of one
    // would split it.
    size_t at = dense + sparse < HUGE_PAGE ? dense : (dense + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
    char *p = sf_alloc_large(at + sparse);
    // Advice, as above; the kernel rounds the length up to whole pages.
    if (p && at >= HUGE_PAGE && sparse) (void)madvise(p + at, sparse, MADV_NOHUGEPAGE);
    *sparse_at = at;
    return p;
}

int sf_thread_start(pthread_t *t, void *(*fn)(void *), void *arg) {
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(t, NULL, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc ? SF_ENOMEM : 0;
}

double sf_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double sf_steady_best(void (*run)(void *arg), void *arg, double work, double seconds, bool *steady) {
    double start = sf_now(), best = 0, prev = 0;
    int more = -1;  // runs left after the rates agreed; -1 before
    for (int k = 0; more != 0 && (k < 2 || sf_now() - start < seconds); k++) {
        double t = sf_now();
        run(arg);
        double rate = work / (sf_now() - t);
        if (k == 0) continue;  // the warm-up
        best = rate > best ? rate : best;
        if (more > 0) more--;
        else if (more < 0 && k > 1 && fabs(rate - prev) <= 0.02 * (rate > prev ? rate : prev)) more = SF_STEADY_MORE;
        prev = rate;
    }
    if (steady) *steady = more >= 0;
    return best;
}

int sf_test_delays(uint32_t us[SF_DELAYS], sf_err *e) {
    static const char *const kinds[SF_DELAYS] = {"read", "decode", "window", "io", "decode-wait", "step"};
    for (int k = 0; k < SF_DELAYS; k++) us[k] = 0;
    const char *v = getenv("SEQFEED_TEST_DELAY");
    for (const char *at = v && *v ? v : NULL; at;) {
        const char *colon = strchr(at, ':'), *comma = strchr(at, ',');
        bool ok = false;
        for (int k = 0; colon && (!comma || colon < comma) && k < SF_DELAYS && !ok; k++) {
            char *end;
            unsigned long n = strtoul(colon + 1, &end, 10);
            if (strlen(kinds[k]) == (size_t)(colon - at) && !strncmp(at, kinds[k], (size_t)(colon - at)) &&
                end != colon + 1 && (*end == ',' || !*end) && n <= 1000000)
                us[k] = (uint32_t)n, ok = true;
        }
        if (!ok)
            return sf_err_set(e, SF_EINVAL, "SEQFEED_TEST_DELAY=%s: expected read, decode, window, io, decode-wait or "
                              "step, a colon, and microseconds up to 1000000 (several: comma-separated)", v);
        at = comma ? comma + 1 : NULL;
    }
    return 0;
}

void sf_sleep_until(double until) {
    for (double now = sf_now(); now < until; now = sf_now()) {
        double s = until - now;
        nanosleep(&(struct timespec){(time_t)s, (long)((s - (double)(time_t)s) * 1e9)}, NULL);
    }
}

int sf_thread_id(void) { return (int)syscall(SYS_gettid); }

void sf_thread_times(int tid, double *on_core, double *queued) {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", tid);
    FILE *f = tid > 0 ? fopen(path, "r") : NULL;
    unsigned long long run = 0, wait = 0;
    bool ok = f && fscanf(f, "%llu %llu", &run, &wait) == 2;
    if (f) fclose(f);
    *on_core = ok ? (double)run * 1e-9 : NAN;
    *queued = ok ? (double)wait * 1e-9 : NAN;
}

int sf_lat_bucket(double seconds) {
    if (!(seconds > 1e-6)) return 0;
    int k = (int)ceil(2 * log2(seconds * 1e6));
    if (k > 0 && seconds <= sf_lat_edge(k - 1)) k--;  // rounding: an edge belongs to the bucket below it
    return k < SF_LAT_BUCKETS ? k : SF_LAT_BUCKETS - 1;
}

double sf_lat_edge(int k) { return 1e-6 * exp2(k / 2.0); }

uint64_t sf_machine_memory(void) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    uint64_t bytes = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
    FILE *f = fopen("/sys/fs/cgroup/memory.max", "r");  // "max": no limit
    unsigned long long limit;
    if (f && fscanf(f, "%llu", &limit) == 1 && (!bytes || limit < bytes)) bytes = limit;
    if (f) fclose(f);
    return bytes;
}

uint32_t sf_affinity_cores(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return (uint32_t)CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (uint32_t)n : 1;
}

// CRC-32C, reflected polynomial 0x82F63B78.
static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_table_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xff];
}

static uint32_t crc32c_table(uint32_t crc, const uint8_t *p, size_t n) {
    pthread_once(&crc_once, crc_table_init);
    while (n >= 8) {
        uint64_t v = sf_get_u64(p) ^ crc;
        crc = crc_table[7][v & 0xff] ^ crc_table[6][(v >> 8) & 0xff] ^ crc_table[5][(v >> 16) & 0xff] ^
              crc_table[4][(v >> 24) & 0xff] ^ crc_table[3][(v >> 32) & 0xff] ^
              crc_table[2][(v >> 40) & 0xff] ^ crc_table[1][(v >> 48) & 0xff] ^ crc_table[0][v >> 56];
        p += 8;
        n -= 8;
    }
    while (n--) crc = (crc >> 8) ^ crc_table[0][(crc ^ *p++) & 0xff];
    return crc;
}

#if defined(__x86_64__)
#include <nmmintrin.h>

// One stream of crc32 instructions runs at about 8 bytes per 3 cycles, well
// above zstd's decompression speed, so interleaving streams would not pay.
__attribute__((target("sse4.2"))) static uint32_t crc32c_hw(uint32_t crc, const uint8_t *p, size_t n) {
    uint64_t c = crc;
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        c = _mm_crc32_u64(c, v);
        p += 8;
        n -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (n--) c32 = _mm_crc32_u8(c32, *p++);
    return c32;
}
#endif

uint32_t sf_crc32c(uint32_t crc, const void *data, size_t n) {
    const uint8_t *p = data;
    crc = ~crc;
#if defined(__x86_64__)
    if (__builtin_cpu_supports("sse4.2"))
        return ~crc32c_hw(crc, p, n);
#endif
    return ~crc32c_table(crc, p, n);
}

static void *module_at(const char *path, const char *what, sf_err *why) {
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *msg = dlerror();
        sf_err_set(why, SF_EUSAGE, "cannot load %s: %s", what, msg ? msg : path);
    }
    return h;
}

// The file of the object that holds this code: libseqfeed.so's path when
// it is the library (so that a copy installed anywhere, in a Python package
// say, finds the modules installed beside it), else the program's. false
// when neither is known. Any address in this object will do (a function's
// is no data pointer in ISO C).
static const char module_anchor;

static bool module_self(char *self, size_t n, bool *program) {
    Dl_info info;
    struct link_map *map = NULL;
    *program = !dladdr1((void *)&module_anchor, &info, (void **)&map, RTLD_DL_LINKMAP) || !map || !map->l_name[0];
    if (!*program) return snprintf(self, n, "%s", map->l_name) < (int)n;
    ssize_t len = readlink("/proc/self/exe", self, n - 1);
    if (len <= 0) return false;
    self[len] = 0;
    return true;
}

static void *module_open(const char *file, const char *env, const char *installed, const char *what, sf_err *why) {
    const char *given = getenv(env);
    if (given && *given) return module_at(given, what, why);
    char path[PATH_MAX + 64], self[PATH_MAX], dir[PATH_MAX];
    bool program;
    void *h = NULL;
    if (module_self(self, sizeof self, &program)) {
        snprintf(dir, sizeof dir, "%s", self);
        snprintf(path, sizeof path, "%s/%s", dirname(dir), file);
        if (access(path, F_OK) == 0) h = module_at(path, what, why);
    }
    // A build for the Python package has no installed path: only its own
    // modules, never another installation's.
    if (!h && *installed && access(installed, F_OK) == 0) h = module_at(installed, what, why);
    if (!h && !why->msg[0]) {
        const char *beside = program ? "the program" : self;
        if (*installed) sf_err_set(why, SF_EUSAGE, "%s (%s) is neither next to %s nor at %s", what, file, beside,
                                   installed);
        else sf_err_set(why, SF_EUSAGE, "%s (%s) is not next to %s", what, file, beside);
    }
    return h;
}

sf_module_fn sf_module_entry(const char *file, const char *env, const char *installed, const char *what,
                             const char *entry, sf_err *why) {
    void *h = module_open(file, env, installed, what, why);
    void *sym = h ? dlsym(h, entry) : NULL;
    sf_module_fn fn = NULL;
    memcpy(&fn, &sym, sizeof fn);  // POSIX: a function's address as data
    if (h && !fn) sf_err_set(why, SF_EUSAGE, "%s has no %s", what, entry);
    return fn;
}

void sf_text_put(sf_text *t, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = t->nomem ? 0 : vsnprintf(t->s ? t->s + t->len : NULL, t->s ? t->cap - t->len : 0, fmt, ap);
        va_end(ap);
        if (t->nomem || n < 0) return;
        if (t->s && (size_t)n < t->cap - t->len) {
            t->len += (size_t)n;
            return;
        }
        char *g = realloc(t->s, 2 * t->cap + (size_t)n + 64);
        if (!g) {
            free(t->s);
            *t = (sf_text){.nomem = true};
            return;
        }
        t->s = g, t->cap = 2 * t->cap + (size_t)n + 64;
    }
}

void sf_json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
        else if (*p < 0x20) fprintf(f, "\\u%04x", *p);
        else fputc(*p, f);
    }
    fputc('"', f);
}

void sf_json_real(FILE *f, double v) {
    if (isfinite(v)) fprintf(f, "%.17g", v);
    else fputs("null", f);
}

void sf_html_text(FILE *f, const char *s) {
    for (; *s; s++) {
        if (*s == '<') fputs("&lt;", f);
        else if (*s == '>') fputs("&gt;", f);
        else if (*s == '&') fputs("&amp;", f);
        else if (*s == '"') fputs("&quot;", f);
        else fputc(*s, f);
    }
}

void sf_shell_word(char *out, size_t cap, size_t *len, const char *s) {
    if (*len + 1 >= cap) return;
    bool plain = *s != 0;
    for (const char *p = s; *p; p++) plain &= strchr("_./:,=+-@%", *p) || (*p >= '0' && *p <= '9') ||
                                              ((*p | 0x20) >= 'a' && (*p | 0x20) <= 'z');
    size_t k = *len;
    if (k + 2 < cap) out[k++] = ' ';
    if (!plain && k + 2 < cap) out[k++] = '\'';
    for (const char *p = s; *p && k + 6 < cap; p++) {
        if (*p == '\'' && !plain) memcpy(out + k, "'\\''", 4), k += 4;
        else out[k++] = *p;
    }
    if (!plain && k + 2 < cap) out[k++] = '\'';
    out[k] = 0;
    *len = k;
}
