// Several CSV inputs packed as one table (sf_csv_pack_files): what the
// arguments name (files, a directory's *.csv, a glob), the list of sources
// a packed file keeps, each source's series name (--series-per-file) and
// the check that every file has the first one's header. csv.c reads the
// files one after the other through this list (its next_input).
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

struct sf_sources {
    char **paths;  // as given
    char **stems;  // the file's name without directory and extension
    size_t n;
};

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

// Appends s (copied) to the list; false when out of memory.
static bool push(char ***list, size_t *n, size_t *cap, const char *s) {
    if (*n == *cap) {
        size_t c = *cap ? 2 * *cap : 16;
        char **l = realloc(*list, c * sizeof *l);
        if (!l) return false;
        *list = l, *cap = c;
    }
    return ((*list)[*n] = strdup(s)) ? ++*n, true : false;
}

void sf_csv_inputs_free(char **paths, size_t n) {
    for (size_t i = 0; paths && i < n; i++) free(paths[i]);
    free(paths);
}

// A directory's *.csv files (regular files, or links to them), sorted.
static int directory(const char *dir, char ***list, size_t *n, size_t *cap, sf_err *e) {
    DIR *d = opendir(dir);
    if (!d) return sf_err_errno(e, SF_EUSAGE, errno, "%s: cannot read the directory", dir);
    size_t first = *n, dl = strlen(dir), parquet = 0;
    bool slash = dl && dir[dl - 1] == '/';
    int rc = 0;
    for (struct dirent *de; !rc && (de = readdir(d));) {
        size_t len = strlen(de->d_name);
        parquet += len > 8 && !strcmp(de->d_name + len - 8, ".parquet");
        if (len <= 4 || strcmp(de->d_name + len - 4, ".csv")) continue;
        char *path = malloc(dl + len + 2);
        if (!path) {
            rc = sf_err_set(e, SF_ENOMEM, "out of memory");
            break;
        }
        sprintf(path, "%s%s%s", dir, slash ? "" : "/", de->d_name);
        struct stat st;
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && !push(list, n, cap, path))
            rc = sf_err_set(e, SF_ENOMEM, "out of memory");
        free(path);
    }
    closedir(d);
    if (!rc && *n == first)
        rc = sf_err_set(e, SF_EUSAGE, "%s: the directory has no *.csv file to pack%s%s%s", dir,
                        parquet ? " (its Parquet files pack with the Python package: python -m seqfeed pack " : "",
                        parquet ? dir : "", parquet ? " -o OUT.sfpack)" : "");
    if (!rc) qsort(*list + first, *n - first, sizeof **list, by_name);
    return rc;
}

typedef struct {
    dev_t dev;
    ino_t ino;
    size_t at;
} file_id;

static int by_id(const void *a, const void *b) {
    const file_id *x = a, *y = b;
    if (x->dev != y->dev) return x->dev < y->dev ? -1 : 1;
    if (x->ino != y->ino) return x->ino < y->ino ? -1 : 1;
    return x->at < y->at ? -1 : x->at > y->at;
}

// A file given twice (by two names, or as itself and in its directory)
// would be packed twice: a mistake, said before anything is read.
static int given_twice(char *const *list, size_t n, sf_err *e) {
    file_id *ids = malloc(n * sizeof *ids);
    if (!ids) return sf_err_set(e, SF_ENOMEM, "out of memory");
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (strcmp(list[i], "-") && stat(list[i], &st) == 0) ids[k++] = (file_id){st.st_dev, st.st_ino, i};
    }
    qsort(ids, k, sizeof *ids, by_id);
    int rc = 0;
    for (size_t i = 1; i < k && !rc; i++)
        if (ids[i].dev == ids[i - 1].dev && ids[i].ino == ids[i - 1].ino)
            rc = sf_err_set(e, SF_EUSAGE, "%s and %s are the same file: its rows would be packed twice (give it once)",
                            list[ids[i - 1].at], list[ids[i].at]);
    free(ids);
    return rc;
}

int sf_csv_inputs(const char *const *args, size_t n, char ***paths, size_t *npaths, sf_err *e) {
    char **list = NULL;
    size_t len = 0, cap = 0;
    int rc = 0;
    *paths = NULL, *npaths = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        const char *a = args[i];
        struct stat st;
        if (!strcmp(a, "-")) {
            if (n > 1) rc = sf_err_set(e, SF_EUSAGE, "'-' (stdin) is one input alone: give files, a directory or a "
                                       "glob instead, or one '-'");
            else if (!push(&list, &len, &cap, a)) rc = sf_err_set(e, SF_ENOMEM, "out of memory");
        } else if (stat(a, &st) == 0) {
            if (S_ISDIR(st.st_mode)) rc = directory(a, &list, &len, &cap, e);
            else if (!push(&list, &len, &cap, a)) rc = sf_err_set(e, SF_ENOMEM, "out of memory");
        } else if (strpbrk(a, "*?[")) {
            // glob(3)'s own sort follows the locale: byte order is the same everywhere.
            glob_t g;
            int r = glob(a, GLOB_NOSORT, NULL, &g);
            if (r == GLOB_NOMATCH)
                rc = sf_err_set(e, SF_EUSAGE, "%s: the pattern matches no file", a);
            else if (r)
                rc = sf_err_set(e, r == GLOB_NOSPACE ? SF_ENOMEM : SF_EUSAGE, "%s: the pattern cannot be read", a);
            size_t first = len;
            for (size_t k = 0; !r && !rc && k < g.gl_pathc; k++)
                if (stat(g.gl_pathv[k], &st) == 0 && S_ISREG(st.st_mode) && !push(&list, &len, &cap, g.gl_pathv[k]))
                    rc = sf_err_set(e, SF_ENOMEM, "out of memory");
            if (!r) globfree(&g);
            if (!r && !rc && len == first) rc = sf_err_set(e, SF_EUSAGE, "%s: the pattern matches no file", a);
            if (!rc) qsort(list + first, len - first, sizeof *list, by_name);
        } else {
            rc = sf_err_errno(e, SF_EIO, errno, "%s: cannot open", a);
        }
    }
    if (!rc && len > SF_MAX_SOURCES)
        rc = sf_err_set(e, SF_EUSAGE, "%zu files: a packed file lists at most %u sources", len, SF_MAX_SOURCES);
    for (size_t i = 0; !rc && i < len; i++)
        if (strlen(list[i]) > SF_PACK_MAX_NAME)
            rc = sf_err_set(e, SF_EUSAGE, "%.64s...: a path longer than %u bytes", list[i], SF_PACK_MAX_NAME);
    if (!rc && len > 1) rc = given_twice(list, len, e);
    if (rc) {
        sf_csv_inputs_free(list, len);
        return rc;
    }
    *paths = list, *npaths = len;
    return 0;
}

void sf_sources_free(sf_sources *s) {
    if (!s) return;
    sf_csv_inputs_free(s->stems, s->n);
    free(s->paths);
    free(s);
}

int sf_sources_open(sf_sources **out, const char *const *paths, size_t n, bool per_file, sf_err *e) {
    *out = NULL;
    if (n == 0) return sf_err_set(e, SF_EUSAGE, "no input to pack");
    if (n > SF_MAX_SOURCES)
        return sf_err_set(e, SF_EUSAGE, "%zu files: a packed file lists at most %u sources", n, SF_MAX_SOURCES);
    sf_sources *s = calloc(1, sizeof *s);
    if (!s || !(s->paths = malloc(n * sizeof *s->paths)) || !(s->stems = calloc(n, sizeof *s->stems))) {
        sf_sources_free(s);
        return sf_err_set(e, SF_ENOMEM, "out of memory");
    }
    s->n = n;
    for (size_t i = 0; i < n; i++) {
        s->paths[i] = (char *)paths[i];
        if (n > 1 && !strcmp(paths[i], "-")) {
            sf_sources_free(s);
            return sf_err_set(e, SF_EUSAGE, "'-' (stdin) is one input alone");
        }
        if (strlen(paths[i]) > SF_PACK_MAX_NAME) {
            sf_sources_free(s);
            return sf_err_set(e, SF_EUSAGE, "%.64s...: a path longer than %u bytes", paths[i], SF_PACK_MAX_NAME);
        }
        const char *base = strrchr(paths[i], '/'), *dot;
        base = base ? base + 1 : paths[i];
        dot = strrchr(base, '.');
        size_t len = dot && dot > base ? (size_t)(dot - base) : strlen(base);
        if (!(s->stems[i] = strndup(base, len))) {
            sf_sources_free(s);
            return sf_err_set(e, SF_ENOMEM, "out of memory");
        }
    }
    if (per_file) {  // two files of one name: sorted names put them side by side
        char **key = malloc(n * sizeof *key);
        if (!key) {
            sf_sources_free(s);
            return sf_err_set(e, SF_ENOMEM, "out of memory");
        }
        memcpy(key, s->stems, n * sizeof *key);
        qsort(key, n, sizeof *key, by_name);
        int rc = 0;
        for (size_t i = 1; i < n && !rc; i++) {
            if (strcmp(key[i - 1], key[i])) continue;
            size_t a = SIZE_MAX, b = SIZE_MAX;
            for (size_t k = 0; k < n && b == SIZE_MAX; k++)
                if (!strcmp(s->stems[k], key[i])) *(a == SIZE_MAX ? &a : &b) = k;
            rc = sf_err_set(e, SF_EUSAGE, "%s and %s: with --series-per-file each file is a series named after the "
                            "file, and both would be \"%s\" (rename one)", s->paths[a], s->paths[b], key[i]);
        }
        free(key);
        if (rc) {
            sf_sources_free(s);
            return rc;
        }
    }
    *out = s;
    return 0;
}

size_t sf_sources_count(const sf_sources *s) { return s->n; }
const char *sf_sources_path(const sf_sources *s, size_t i) { return s->paths[i]; }
const char *sf_sources_stem(const sf_sources *s, size_t i) { return s->stems[i]; }
const char *const *sf_sources_paths(const sf_sources *s) { return (const char *const *)s->paths; }

int sf_sources_open_file(const sf_sources *s, size_t i, struct stat *opened, sf_err *e) {
    const char *path = s->paths[i];
    int fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : 0;
    if (fd < 0) return sf_err_errno(e, SF_EIO, errno, "%s: cannot open", path);
    if (fstat(fd, opened) != 0 || !S_ISREG(opened->st_mode)) opened->st_mode = 0;
    if (S_ISDIR(opened->st_mode)) {  // a directory among files given one by one
        close(fd);
        return sf_err_set(e, SF_EUSAGE, "%s is a directory: give it alone, or its files", path);
    }
    posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    return fd;
}

int sf_sources_same_header(const sf_sources *s, size_t i, const char *const *first, uint32_t nfirst, char dfirst,
                           const char *const *names, uint32_t n, char d, sf_err *e) {
    const char *f = s->paths[0], *g = s->paths[i];
    if (d != dfirst)
        return sf_err_set(e, SF_EFORMAT, "%s:1: the header is separated by '%s', %s's by '%s': every file must have "
                          "the same columns and delimiter", g, d == '\t' ? "\\t" : (char[]){d, 0}, f,
                          dfirst == '\t' ? "\\t" : (char[]){dfirst, 0});
    uint32_t k = 0;
    while (k < n && k < nfirst && !strcmp(first[k], names[k])) k++;
    if (k == n && k == nfirst) return 0;
    bool in_first = false, in_this = false;
    for (uint32_t j = 0; k < n && j < nfirst; j++) in_first |= !strcmp(first[j], names[k]);
    for (uint32_t j = 0; k < nfirst && j < n; j++) in_this |= !strcmp(names[j], first[k]);
    char how[1024];
    if (k == n || (k < nfirst && !in_this && (in_first || n < nfirst)))
        snprintf(how, sizeof how, "column %u \"%s\" of %s is missing (%u columns here, %u there)", k + 1, first[k], f,
                 n, nfirst);
    else if (k == nfirst || (!in_first && (in_this || n > nfirst)))
        snprintf(how, sizeof how, "column %u \"%s\" is extra (%u columns here, %u in %s)", k + 1, names[k], n, nfirst,
                 f);
    else if (!in_first)
        snprintf(how, sizeof how, "column %u is \"%s\" here, \"%s\" in %s (renamed?)", k + 1, names[k], first[k], f);
    else
        snprintf(how, sizeof how, "column %u is \"%s\" here, \"%s\" in %s: the same names in another order", k + 1,
                 names[k], first[k], f);
    return sf_err_set(e, SF_EFORMAT, "%s:1: the header differs from %s's: %s; every file must have the same "
                      "columns in the same order", g, f, how);
}
