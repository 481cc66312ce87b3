// safetensors reading (validated, since files come from anywhere) and
// atomic writing.
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint.h"

enum { MAX_HEADER = 64 << 20, MAX_DEPTH = 32 };

struct sf_st {
    unsigned char *file;  // the whole file
    size_t len, data_at;  // data section: file + data_at .. file + len
    sf_st_entry *t;
    size_t nt;
    char **meta;  // key, value, key, value, ...
    size_t nmeta;
};

// A cursor over the JSON header; errors name the file and the byte.
typedef struct {
    const char *s, *p, *end, *file;
    sf_err *e;
} json;

static int jfail(json *j, const char *what) {
    return sf_err_set(j->e, SF_EFORMAT, "%s: safetensors header, byte %zu: expected %s", j->file,
                      (size_t)(j->p - j->s) + 8, what);
}

static void ws(json *j) {
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')) j->p++;
}

static bool eat(json *j, char c) {
    ws(j);
    if (j->p < j->end && *j->p == c) {
        j->p++;
        return true;
    }
    return false;
}

static int hex4(const char *p, unsigned *v) {
    *v = 0;
    for (int k = 0; k < 4; k++) {
        char c = p[k];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return -1;
        *v = *v << 4 | (unsigned)d;
    }
    return 0;
}

// The error for a string longer than a buffer of cap bytes keeps: the limit in it.
static int jtoo_long(json *j, size_t cap) {
    char what[64];
    snprintf(what, sizeof what, "a string of at most %zu bytes", cap - 1);
    return jfail(j, what);
}

// A string into out (cap bytes with its NUL); escapes decoded, \u to UTF-8
// (surrogate pairs joined).
static int jstring(json *j, char *out, size_t cap) {
    if (!eat(j, '"')) return jfail(j, "a string");
    size_t n = 0;
    while (j->p < j->end && *j->p != '"') {
        unsigned c = (unsigned char)*j->p++;
        if (c < 0x20) return j->p--, jfail(j, "no control characters in a string");
        if (c == '\\') {
            if (j->p >= j->end) break;
            char x = *j->p++;
            const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t", *k = strchr(from, x);
            if (x && k) c = (unsigned char)to[k - from];
            else if (x == 'u' && j->end - j->p >= 4 && hex4(j->p, &c) == 0) {
                j->p += 4;
                unsigned lo;
                if (c >= 0xd800 && c < 0xdc00 && j->end - j->p >= 6 && j->p[0] == '\\' && j->p[1] == 'u' &&
                    hex4(j->p + 2, &lo) == 0 && lo >= 0xdc00 && lo < 0xe000) {
                    c = 0x10000 + ((c - 0xd800) << 10) + (lo - 0xdc00);
                    j->p += 6;
                }
                char u[4];
                size_t un = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
                if (un == 1) u[0] = (char)c;
                else if (un == 2) u[0] = (char)(0xc0 | c >> 6), u[1] = (char)(0x80 | (c & 0x3f));
                else if (un == 3) u[0] = (char)(0xe0 | c >> 12), u[1] = (char)(0x80 | (c >> 6 & 0x3f)), u[2] = (char)(0x80 | (c & 0x3f));
                else u[0] = (char)(0xf0 | c >> 18), u[1] = (char)(0x80 | (c >> 12 & 0x3f)), u[2] = (char)(0x80 | (c >> 6 & 0x3f)), u[3] = (char)(0x80 | (c & 0x3f));
                if (n + un >= cap) return jtoo_long(j, cap);
                memcpy(out + n, u, un);
                n += un;
                continue;
            } else {
                return j->p--, jfail(j, "a valid escape");
            }
        }
        if (n + 1 >= cap) return jtoo_long(j, cap);
        out[n++] = (char)c;
    }
    if (j->p >= j->end) return jfail(j, "the end of a string");
    j->p++;
    out[n] = 0;
    return 0;
}

static int juint(json *j, uint64_t *v) {
    ws(j);
    if (j->p >= j->end || *j->p < '0' || *j->p > '9') return jfail(j, "a non-negative integer");
    *v = 0;
    while (j->p < j->end && *j->p >= '0' && *j->p <= '9') {
        if (*v > (UINT64_MAX - 9) / 10) return jfail(j, "a smaller integer");
        *v = *v * 10 + (uint64_t)(*j->p++ - '0');
    }
    return 0;
}

// Any value, skipped (for keys this reader does not use).
static int jskip(json *j, int depth) {
    ws(j);
    if (depth > MAX_DEPTH) return jfail(j, "less nesting");
    if (j->p >= j->end) return jfail(j, "a value");
    char c = *j->p;
    if (c == '"') {
        char tmp[4096];
        return jstring(j, tmp, sizeof tmp);
    }
    if (c == '{' || c == '[') {
        j->p++;
        char close = c == '{' ? '}' : ']';
        if (eat(j, close)) return 0;
        do {
            if (c == '{') {
                char key[4096];
                if (jstring(j, key, sizeof key)) return SF_EFORMAT;
                if (!eat(j, ':')) return jfail(j, "':'");
            }
            if (jskip(j, depth + 1)) return SF_EFORMAT;
        } while (eat(j, ','));
        return eat(j, close) ? 0 : jfail(j, c == '{' ? "',' or '}'" : "',' or ']'");
    }
    // A number or a word, scanned within the header: it is not NUL-terminated
    // (strspn and friends would read past it), and NUL is no character of either.
    const char *start = j->p;
    bool digits_only = true;
    while (j->p < j->end && *j->p && strchr("+-.0123456789eEtruefalsn", *j->p)) {
        digits_only &= strchr("+-.0123456789eE", *j->p) != NULL;
        j->p++;
    }
    size_t n = (size_t)(j->p - start);
    bool word = (n == 4 && (!strncmp(start, "true", 4) || !strncmp(start, "null", 4))) ||
                (n == 5 && !strncmp(start, "false", 5));
    bool number = n > 0 && digits_only && (*start == '-' || (*start >= '0' && *start <= '9'));
    if (!word && !number) return j->p = start, jfail(j, "a value");
    return 0;
}

static size_t dtype_size(const char *d) {
    static const struct {
        const char *name;
        size_t size;
    } t[] = {{"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8}, {"I32", 4}, {"I16", 2},
             {"I8", 1},  {"U64", 8}, {"U32", 4}, {"U16", 2},  {"U8", 1},   {"BOOL", 1}};
    for (size_t k = 0; k < sizeof t / sizeof *t; k++)
        if (strcmp(d, t[k].name) == 0) return t[k].size;
    return 0;
}

static int add_meta(sf_st *s, json *j) {
    if (!eat(j, '{')) return jfail(j, "__metadata__ to be an object");
    if (eat(j, '}')) return 0;
    do {
        char k[1024], v[16384];  // a checkpoint's longest value: its categories (sf_checkpoint)
        if (jstring(j, k, sizeof k)) return SF_EFORMAT;
        if (!eat(j, ':')) return jfail(j, "':'");
        if (jstring(j, v, sizeof v)) return SF_EFORMAT;
        char **m = realloc(s->meta, (s->nmeta + 2) * sizeof *m);
        if (!m) return sf_err_set(j->e, SF_ENOMEM, "out of memory");
        s->meta = m;
        if (!(m[s->nmeta] = strdup(k)) || !(m[s->nmeta + 1] = strdup(v))) {
            free(m[s->nmeta]);
            return sf_err_set(j->e, SF_ENOMEM, "out of memory");
        }
        s->nmeta += 2;
    } while (eat(j, ','));
    return eat(j, '}') ? 0 : jfail(j, "',' or '}'");
}

static int add_tensor(sf_st *s, json *j, const char *name) {
    sf_st_entry t = {0};
    bool dtype = false, shape = false, offsets = false;
    if (strlen(name) >= sizeof t.name) return jfail(j, "a tensor name under 128 bytes");
    memcpy(t.name, name, strlen(name) + 1);
    if (!eat(j, '{')) return jfail(j, "a tensor's object");
    if (!eat(j, '}')) {
        do {
            char key[64];
            if (jstring(j, key, sizeof key)) return SF_EFORMAT;
            if (!eat(j, ':')) return jfail(j, "':'");
            if (strcmp(key, "dtype") == 0) {
                if (jstring(j, t.dtype, sizeof t.dtype)) return SF_EFORMAT;
                if (!dtype_size(t.dtype)) return jfail(j, "a known dtype (F32, F64, I64, ...)");
                dtype = true;
            } else if (strcmp(key, "shape") == 0) {
                if (!eat(j, '[')) return jfail(j, "a shape list");
                if (!eat(j, ']')) {
                    do {
                        if (t.rank == SF_ST_MAX_RANK) return jfail(j, "at most 4 dimensions");
                        if (juint(j, &t.shape[t.rank++])) return SF_EFORMAT;
                    } while (eat(j, ','));
                    if (!eat(j, ']')) return jfail(j, "',' or ']'");
                }
                shape = true;
            } else if (strcmp(key, "data_offsets") == 0) {
                if (!eat(j, '[') || juint(j, &t.begin) || !eat(j, ',') || juint(j, &t.end) || !eat(j, ']'))
                    return jfail(j, "data_offsets [begin, end]");
                offsets = true;
            } else if (jskip(j, 1)) {
                return SF_EFORMAT;
            }
        } while (eat(j, ','));
        if (!eat(j, '}')) return jfail(j, "',' or '}'");
    }
    if (!dtype || !shape || !offsets)
        return sf_err_set(j->e, SF_EFORMAT, "%s: tensor '%s' lacks dtype, shape or data_offsets", j->file, name);
    uint64_t bytes = dtype_size(t.dtype);
    for (uint32_t k = 0; k < t.rank; k++)
        if (t.shape[k] && bytes > UINT64_MAX / t.shape[k]) return jfail(j, "a smaller shape");
        else bytes *= t.shape[k];
    if (t.end < t.begin || t.end - t.begin != bytes)
        return sf_err_set(j->e, SF_EFORMAT, "%s: tensor '%s': data_offsets [%llu, %llu] hold %llu bytes, its dtype "
                          "and shape need %llu", j->file, name, (unsigned long long)t.begin,
                          (unsigned long long)t.end, (unsigned long long)(t.end - t.begin), (unsigned long long)bytes);
    sf_st_entry *grown = realloc(s->t, (s->nt + 1) * sizeof *grown);
    if (!grown) return sf_err_set(j->e, SF_ENOMEM, "out of memory");
    s->t = grown;
    s->t[s->nt++] = t;
    return 0;
}

static int by_begin(const void *a, const void *b) {
    const sf_st_entry *x = a, *y = b;
    return x->begin < y->begin ? -1 : x->begin > y->begin;
}

int sf_st_parse(sf_st **out, const void *data, size_t len, const char *name, sf_err *e) {
    *out = NULL;
    if (len < 8) return sf_err_set(e, SF_EFORMAT, "%s: %zu bytes, too short for a safetensors file", name, len);
    if (len >= 8 && !memcmp(data, "SFPACK\x1a\n", 8))
        return sf_err_set(e, SF_EUSAGE, "%s: an .sfpack data file, not a checkpoint: give it as --data, and a "
                          "checkpoint seqfeed train wrote as --checkpoint", name);
    uint64_t hl = sf_get_u64(data);
    if (hl > MAX_HEADER || hl > len - 8) {
        // Eight bytes of text (UTF-8 too, a BOM first or not) make a length
        // of 2^56 and more: a CSV or a log given as the checkpoint.
        const uint8_t *b = data;
        bool text = true;
        for (int i = 0; i < 8; i++)
            text = text && (b[i] >= 0x20 || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') && b[i] != 0x7f;
        if (text)
            return sf_err_set(e, SF_EUSAGE, "%s: a text file (a CSV?), not a checkpoint: give a checkpoint seqfeed "
                              "train wrote (.safetensors) as --checkpoint", name);
        if (!memcmp(data, "PK\x03\x04", 4))
            return sf_err_set(e, SF_EUSAGE, "%s: a zip file (an exported .keras model?), not a checkpoint: give the "
                              "checkpoint it was exported from (.safetensors) as --checkpoint", name);
        return sf_err_set(e, SF_EFORMAT, "%s: header length %llu does not fit in the file's %zu bytes", name,
                          (unsigned long long)hl, len);
    }
    sf_st *s = calloc(1, sizeof *s);
    if (!s || !(s->file = malloc(len ? len : 1))) {
        free(s);
        return sf_err_set(e, SF_ENOMEM, "out of memory for %s", name);
    }
    memcpy(s->file, data, len);
    s->len = len;
    s->data_at = 8 + (size_t)hl;
    json j = {(const char *)s->file + 8, (const char *)s->file + 8, (const char *)s->file + 8 + hl, name, e};
    int rc = eat(&j, '{') ? 0 : jfail(&j, "'{'");
    if (!rc && !eat(&j, '}')) {
        do {
            char key[1024];
            if ((rc = jstring(&j, key, sizeof key)) || (!eat(&j, ':') && (rc = jfail(&j, "':'")))) break;
            if (strcmp(key, "__metadata__") == 0) rc = add_meta(s, &j);
            else if (sf_st_find(s, key)) rc = sf_err_set(e, SF_EFORMAT, "%s: tensor '%s' twice", name, key);
            else rc = add_tensor(s, &j, key);
        } while (!rc && eat(&j, ','));
        if (!rc && !eat(&j, '}')) rc = jfail(&j, "',' or '}'");
    }
    ws(&j);
    if (!rc && j.p != j.end) rc = jfail(&j, "the end of the header");
    if (!rc && s->nt) {
        sf_st_entry *sorted = malloc(s->nt * sizeof *sorted);
        if (!sorted) rc = sf_err_set(e, SF_ENOMEM, "out of memory");
        else {
            memcpy(sorted, s->t, s->nt * sizeof *sorted);
            qsort(sorted, s->nt, sizeof *sorted, by_begin);
            uint64_t at = 0;
            for (size_t k = 0; k < s->nt && !rc; k++) {
                if (sorted[k].begin != at)
                    rc = sf_err_set(e, SF_EFORMAT, "%s: tensor '%s' starts at data byte %llu, expected %llu (the "
                                    "tensors must cover the data without gaps or overlap)", name, sorted[k].name,
                                    (unsigned long long)sorted[k].begin, (unsigned long long)at);
                at = sorted[k].end;
            }
            if (!rc && at != len - s->data_at)
                rc = sf_err_set(e, SF_EFORMAT, "%s: the tensors cover %llu data bytes, the file has %zu", name,
                                (unsigned long long)at, len - s->data_at);
            free(sorted);
        }
    } else if (!rc && len != s->data_at) {
        rc = sf_err_set(e, SF_EFORMAT, "%s: %zu data bytes but no tensors", name, len - s->data_at);
    }
    if (rc) {
        sf_st_close(s);
        return rc;
    }
    *out = s;
    return 0;
}

int sf_st_open(sf_st **out, const char *path, sf_err *e) { return sf_st_open_named(out, path, path, e); }

int sf_st_open_named(sf_st **out, const char *path, const char *name, sf_err *e) {
    *out = NULL;
    int fd = sf_open_file(path, "a checkpoint (.safetensors)", e);
    if (fd < 0) return fd;
    struct stat st;
    void *buf = NULL;
    int rc = 0;
    if (fstat(fd, &st) != 0) rc = sf_err_errno(e, SF_EIO, errno, "%s: cannot stat", path);
    else if (!(buf = malloc((size_t)st.st_size + 1))) rc = sf_err_set(e, SF_ENOMEM, "out of memory for %s", path);
    size_t got = 0;
    while (!rc && got < (size_t)st.st_size) {
        ssize_t n = read(fd, (char *)buf + got, (size_t)st.st_size - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) rc = sf_err_errno(e, SF_EIO, n ? errno : EIO, "%s: read failed", path);
        else got += (size_t)n;
    }
    close(fd);
    if (!rc) rc = sf_st_parse(out, buf, got, name, e);
    free(buf);
    return rc;
}

void sf_st_close(sf_st *s) {
    if (!s) return;
    for (size_t k = 0; k < s->nmeta; k++) free(s->meta[k]);
    free(s->meta);
    free(s->t);
    free(s->file);
    free(s);
}

size_t sf_st_count(const sf_st *s) { return s->nt; }
const sf_st_entry *sf_st_entry_at(const sf_st *s, size_t i) { return i < s->nt ? &s->t[i] : NULL; }

const sf_st_entry *sf_st_find(const sf_st *s, const char *name) {
    for (size_t k = 0; k < s->nt; k++)
        if (strcmp(s->t[k].name, name) == 0) return &s->t[k];
    return NULL;
}

const void *sf_st_data(const sf_st *s, const sf_st_entry *t) { return s->file + s->data_at + t->begin; }

int sf_st_read_f32(const sf_st *s, const char *name, float *out, size_t count, sf_err *e) {
    const sf_st_entry *t = sf_st_find(s, name);
    if (!t) return sf_err_set(e, SF_EFORMAT, "no tensor '%s'", name);
    if (strcmp(t->dtype, "F32") != 0 || t->end - t->begin != count * sizeof(float))
        return sf_err_set(e, SF_EFORMAT, "tensor '%s' is %s with %llu bytes, expected F32 with %zu values", name,
                          t->dtype, (unsigned long long)(t->end - t->begin), count);
    memcpy(out, sf_st_data(s, t), count * sizeof(float));  // little-endian, as the format is
    return 0;
}

const char *sf_st_meta(const sf_st *s, const char *key) {
    for (size_t k = 0; k + 1 < s->nmeta; k += 2)
        if (strcmp(s->meta[k], key) == 0) return s->meta[k + 1];
    return NULL;
}

// The header being written; oom once any growth failed.
typedef struct {
    char *p;
    size_t n, cap;
    bool oom;
} hbuf;

static bool reserve(hbuf *h, size_t more) {
    if (h->oom) return false;
    if (h->n + more <= h->cap) return true;
    size_t cap = (h->n + more) * 2;
    char *g = realloc(h->p, cap);
    if (!g) return !(h->oom = true);
    h->p = g, h->cap = cap;
    return true;
}

static void put_raw(hbuf *h, const char *s) {
    size_t l = strlen(s);
    if (!reserve(h, l)) return;
    memcpy(h->p + h->n, s, l);
    h->n += l;
}

// s as a JSON string.
static void put_string(hbuf *h, const char *s) {
    if (!reserve(h, 6 * strlen(s) + 3)) return;
    h->p[h->n++] = '"';
    for (const char *c = s; *c; c++) {
        if (*c == '"' || *c == '\\') h->p[h->n++] = '\\', h->p[h->n++] = *c;
        else if ((unsigned char)*c < 0x20) h->n += (size_t)snprintf(h->p + h->n, 7, "\\u%04x", (unsigned char)*c);
        else h->p[h->n++] = *c;
    }
    h->p[h->n++] = '"';
}

int sf_st_write(const char *path, const sf_st_tensor *t, size_t n, const char *const *meta, sf_err *e) {
    return sf_st_write_checked(path, t, n, meta, NULL, NULL, e);
}

int sf_st_write_checked(const char *path, const sf_st_tensor *t, size_t n, const char *const *meta,
                        sf_st_check check, void *arg, sf_err *e) {
    hbuf h = {0};
    char num[96];
    uint64_t at = 0;
    put_raw(&h, "{");
    if (meta && meta[0]) {
        put_raw(&h, "\"__metadata__\":{");
        for (size_t k = 0; meta[k] && meta[k + 1]; k += 2) {
            if (k) put_raw(&h, ",");
            put_string(&h, meta[k]);
            put_raw(&h, ":");
            put_string(&h, meta[k + 1]);
        }
        put_raw(&h, "}");
    }
    for (size_t k = 0; k < n; k++) {
        uint64_t bytes = dtype_size(t[k].dtype);
        if (!bytes) {
            free(h.p);
            return sf_err_set(e, SF_EINVAL, "%s: tensor '%s': unknown dtype '%s'", path, t[k].name, t[k].dtype);
        }
        if (h.n > 1) put_raw(&h, ",");
        put_string(&h, t[k].name);
        put_raw(&h, ":{\"dtype\":");
        put_string(&h, t[k].dtype);
        put_raw(&h, ",\"shape\":[");
        for (uint32_t d = 0; d < t[k].rank; d++) {
            snprintf(num, sizeof num, "%s%llu", d ? "," : "", (unsigned long long)t[k].shape[d]);
            put_raw(&h, num);
            bytes *= t[k].shape[d];
        }
        snprintf(num, sizeof num, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)at,
                 (unsigned long long)(at + bytes));
        put_raw(&h, num);
        at += bytes;
    }
    put_raw(&h, "}");
    while ((8 + h.n) % 8 && !h.oom) put_raw(&h, " ");  // the data starts 8-byte aligned
    if (h.oom) {
        free(h.p);
        return sf_err_set(e, SF_ENOMEM, "out of memory");
    }
    sf_temp_file out;
    int rc = sf_temp_fopen(&out, path, e);
    if (rc) {
        free(h.p);
        return rc;
    }
    uint8_t len8[8];
    sf_put_u64(len8, h.n);
    bool ok = fwrite(len8, 1, 8, out.f) == 8 && fwrite(h.p, 1, h.n, out.f) == h.n;
    for (size_t k = 0; ok && k < n; k++) {
        uint64_t bytes = dtype_size(t[k].dtype);
        for (uint32_t d = 0; d < t[k].rank; d++) bytes *= t[k].shape[d];
        ok = fwrite(t[k].data, 1, bytes, out.f) == bytes;
    }
    int werr = ok ? 0 : errno;
    free(h.p);
    ok = ok && fflush(out.f) == 0;
    if (!ok) werr = werr ? werr : errno;
    // Read back under its temporary name (a device or FIFO has none: no check).
    int crc = ok && check && out.tmp ? check(out.tmp, path, arg, e) : 0;
    rc = sf_temp_fclose(&out, ok && !crc, e);
    if (crc) return crc;
    return ok || rc ? rc : sf_err_errno(e, SF_EIO, werr, "%s: write failed", path);
}
