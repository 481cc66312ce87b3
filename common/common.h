// common: error reporting, checksums and clocks shared by every subsystem.
// Library code returns 0 or a negative SF_E* code and, on failure, fills an
// sf_err with a message that names the file, the place and what was expected.
#ifndef SF_COMMON_H
#define SF_COMMON_H

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>

enum sf_code {
    SF_OK = 0,
    SF_EIO = -1,       // the operating system refused a read, write, open...
    SF_ENOMEM = -2,    // an allocation failed
    SF_EINVAL = -3,    // a caller or a user passed something unusable
    SF_EFORMAT = -4,   // input data (CSV) is not what was expected
    SF_ECORRUPT = -5,  // a packed file fails a structural or checksum check
    SF_EUSAGE = -6,    // an option's value cannot work here: the message names
                       // the option (programs exit 2, as for a usage error)
    SF_ERANGE = -7,    // a number beyond what its type holds
};

typedef struct {
    int code;
    char msg[1024];
} sf_err;

// Formats the message into e (if e is not NULL) and returns code, so that
// callers can write `return sf_err_set(e, SF_EIO, "...")`.
int sf_err_set(sf_err *e, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

// Like sf_err_set, with ": <strerror(errnum)>" appended.
int sf_err_errno(sf_err *e, int code, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

// Short name of a code, e.g. "corrupt file" for SF_ECORRUPT.
const char *sf_err_name(int code);

// CRC-32C (Castagnoli), the checksum of every block of an .sfpack file.
// Hardware instructions when the CPU has SSE4.2, a table otherwise.
uint32_t sf_crc32c(uint32_t crc, const void *data, size_t n);

// Output files appear whole or not at all: sf_temp_create opens a new
// TARGET.tmp.PID.XXXXXX next to the file path names (mode 0666 less the
// umask, as the final file gets) and returns its descriptor, with its
// malloc'd name in *tmp; sf_temp_commit fsyncs fd, renames tmp onto the
// target and fsyncs the directory. The target is path, or where path links
// to: a symbolic link is followed, never replaced. A character device or a
// FIFO (/dev/stdout, /dev/null) is opened and written as it is, never
// replaced: then *tmp is NULL and commit only flushes; a directory, a block
// device or a socket is SF_EUSAGE. Temporary files of the same target whose
// process is gone (a killed run) are removed. Both return a negative code
// on failure; the caller closes fd and, on failure, unlinks tmp (when not
// NULL).
int sf_temp_create(const char *path, char **tmp, sf_err *e);

// A file with no name, open for reading and writing, in the folder where
// path's target goes (as sf_temp_create's): scratch space that the kernel
// frees when fd is closed or the process ends, whatever ends it, and that
// no one ever sees by name (O_TMPFILE; on a file system without it, a name
// of sf_temp_create's unlinked at once). Returns fd, or a negative code
// (stdout or a device: SF_EUSAGE, there is no folder).
int sf_temp_unnamed(const char *path, sf_err *e);

// Lists of column names, comma-separated, as --features and checkpoints
// spell them: a name with a comma, a quote or an edge space is quoted as in
// CSV ("rate,1y", "say ""hi"""); unquoted names lose their edge spaces.
// sf_list_next copies the name at *p into out (cap bytes) and moves *p past
// it and its comma, to NULL after the last name; returns 0, or SF_EFORMAT
// (an unclosed quote, text after a closing quote, a name longer than cap).
int sf_list_next(const char **p, char *out, size_t cap);
// Appends name (quoted when it must be) to the list in out (cap bytes, *len
// of them used); returns 0, or SF_ERANGE when it does not fit.
int sf_list_append(char *out, size_t cap, size_t *len, const char *name);
// The bytes sf_list_append adds for the n bytes at name (no comma before
// it), and in *quotes how many of them are '"'.
size_t sf_list_item_bytes(const char *name, size_t n, size_t *quotes);
// The bytes a group of items (sf_list_item_bytes of each: bytes, then the
// total quotes) takes as one name of an outer list, as sf_list_append
// writes the group's own list into it: quoted, its quotes doubled.
size_t sf_list_group_bytes(size_t items, size_t bytes, size_t quotes);
// Writes s[0, n) into out (cap bytes, NUL-terminated; NULL when cap is 0)
// with each control character as \n, \t, \r or \xNN, so that a name or an
// id in a message or a table stays on its line; cut before a piece that
// does not fit whole. Returns the length of the whole, as snprintf.
size_t sf_escape_controls(char *out, size_t cap, const char *s, size_t n);
// Opens path for reading when it is a regular file; returns its descriptor
// (the caller closes it), or SF_EUSAGE naming what it is instead (a
// directory, a FIFO: never waiting for a FIFO's writer) and what was
// expected (`what`: "an .sfpack file"), or SF_EIO.
int sf_open_file(const char *path, const char *what, sf_err *e);
int sf_temp_commit(int fd, const char *tmp, const char *path, sf_err *e);

// The same for output written through stdio: sf_temp_fopen opens the
// temporary file as f; sf_temp_fclose flushes it, and commits it onto path
// when commit is true and every write succeeded, else removes it. It frees
// everything either way and returns 0 or a negative code.
typedef struct {
    FILE *f;
    int fd;
    char *tmp;  // the temporary name, for a signal handler to remove
    const char *path;
} sf_temp_file;
int sf_temp_fopen(sf_temp_file *t, const char *path, sf_err *e);
int sf_temp_fclose(sf_temp_file *t, bool commit, sf_err *e);

// pthread_create with every signal blocked in the new thread, so that
// signals (Ctrl-C) reach the main thread and its handlers. 0, or SF_ENOMEM
// when the thread cannot be had.
int sf_thread_start(pthread_t *t, void *(*fn)(void *), void *arg);

// n bytes for a large buffer that is filled soon after: from 2 MiB on,
// aligned to 2 MiB and advised onto transparent huge pages, so that its
// first touch costs the kernel a fault per 2 MiB, not one per 4 KiB page
// (on a CSV of interleaved series the faults on the regrouper's buffers
// were a tenth of pack's CPU). Returns NULL when out of memory; release it
// with free(). Where huge pages are off the advice is ignored.
void *sf_alloc_large(size_t n);

// One block of dense bytes, filled soon after, then sparse bytes written
// here and there if at all (records at the ends of runs, an overflow
// list), from *sparse_at. Where the block is large enough for huge pages
// (sf_alloc_large), the dense bytes are on them and the sparse ones on
// 4 KiB pages: a few bytes written there fault in 4 KiB each, not 2 MiB,
// and the first touch of a huge page on a virtual machine whose host has
// not backed it yet costs milliseconds. Returns NULL when out of memory;
// release it with free().
void *sf_alloc_large_sparse(size_t dense, size_t sparse, size_t *sparse_at);

// splitmix64: the seeded random numbers of the pipeline and of synth (fast,
// reproducible everywhere, not cryptographic).
static inline uint64_t sf_splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// Monotonic time in seconds.
double sf_now(void);

// The best rate (work per second) of run(arg) once the clock is steady:
// run again and again, the first run a warm-up, until two successive runs'
// rates agree within 2% and SF_STEADY_MORE runs more have gone, or `seconds`
// have passed (at least two runs either way); the best run but the first.
// *steady (may be NULL): whether two successive rates ever agreed. A
// ceiling for benchmarks: a clock still ramping up or a neighbour's burst
// only lowers a run, so the best steady run is the machine's.
enum { SF_STEADY_MORE = 3 };
double sf_steady_best(void (*run)(void *arg), void *arg, double work, double seconds, bool *steady);

// Faults tests inject, from SEQFEED_TEST_DELAY=KIND:MICROSECONDS[,KIND:US...]:
// read, decode, window: busy time on a core (a spin) per read request,
// decoded chunk or windowed batch; io: a read request completes no sooner
// than this after its submission (a slow device: requests in flight overlap
// their waits); decode-wait: a decoded chunk takes this long off the CPU;
// step: a replica's forward and backward take at least this long, the rest
// asleep (an emulated GPU step: no core used). 0 when unset; SF_EINVAL when
// malformed.
enum sf_test_delay { SF_DELAY_READ, SF_DELAY_DECODE, SF_DELAY_WINDOW, SF_DELAY_IO, SF_DELAY_DECODE_WAIT,
                     SF_DELAY_STEP, SF_DELAYS };
int sf_test_delays(uint32_t us[SF_DELAYS], sf_err *e);
// Sleeps until sf_now() reaches `until`.
void sf_sleep_until(double until);

// A thread's time on a core and waiting for one (the scheduler's run queue),
// in seconds, from /proc/self/task/TID/schedstat; NAN both when the kernel
// does not say. tid: sf_thread_id() of the thread, called on it.
int sf_thread_id(void);
void sf_thread_times(int tid, double *on_core, double *queued);

// Latencies in buckets a factor sqrt(2) apart: bucket 0 holds those up to
// 1 us, bucket k those above 2^((k-1)/2) us up to 2^(k/2) us, the last also
// every longer one (above 4 s).
enum { SF_LAT_BUCKETS = 46 };
int sf_lat_bucket(double seconds);
// Bucket k's upper edge, in seconds.
double sf_lat_edge(int k);
// Bytes of memory this process may use before the OOM killer comes: the
// machine's physical memory, or its cgroup's (v2) limit when lower; 0 when
// neither is known.
uint64_t sf_machine_memory(void);
// The cores this process may run on (taskset, a cpuset: sched_getaffinity),
// else the online ones; at least 1.
uint32_t sf_affinity_cores(void);

// Little-endian loads and stores; the packed format is little-endian on disk
// whatever the host.
static inline void sf_put_u16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static inline void sf_put_u32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline void sf_put_u64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint16_t sf_get_u16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t sf_get_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t sf_get_u64(const uint8_t *p) {
    return (uint64_t)sf_get_u32(p) | (uint64_t)sf_get_u32(p + 4) << 32;
}

// ---- traces: Chrome's trace event format (Perfetto, chrome://tracing) ----
// Tracks are threads of one process; spans and counters are kept in memory,
// at most max_events of them (later ones are counted and dropped, so memory
// stays bounded), and written as one JSON file at the end. Every call is
// thread-safe; a NULL trace ignores them all.
typedef struct sf_trace sf_trace;
int sf_trace_open(sf_trace **out, size_t max_events, sf_err *e);
void sf_trace_close(sf_trace *t);
// A new track, named (copied), and its id.
int sf_trace_track(sf_trace *t, const char *name);
// A span [start, end) in sf_now() seconds; name must outlive the trace.
void sf_trace_span(sf_trace *t, int track, const char *name, double start, double end);
// A counter's value at a time; name must outlive the trace.
void sf_trace_counter(sf_trace *t, const char *name, double at, double value);
// The same in two steps, for traces of several processes (the ranks of a
// job) in one file: each dumps its tracks and events as process pid into
// *json (malloc'd, *len bytes), and one writes the dumps, concatenated.
int sf_trace_dump(sf_trace *t, int pid, const char *process, char **json, size_t *len, sf_err *e);
int sf_trace_write_parts(const char *path, const char *parts, size_t len, sf_err *e);

// A module seqfeed loads when a command needs it (seqfeed-gpu.so,
// seqfeed-keras.so): $env when set, else file next to the object holding
// this code (libseqfeed.so when it is the library, else the program), else
// installed (a path; "" for none, as in the Python package's build). Returns its function named entry (cast it back to its
// type to call it), or NULL with why (SF_EUSAGE, naming what, "the GPU
// module") saying where it looked, dlerror(), or that entry is missing.
typedef void (*sf_module_fn)(void);
sf_module_fn sf_module_entry(const char *file, const char *env, const char *installed, const char *what,
                             const char *entry, sf_err *why);

// Text that grows as it is written (JSON, say): sf_text_put appends
// printf-style; after out of memory it stops, s is freed and NULL, nomem set.
// The caller frees s.
typedef struct {
    char *s;
    size_t len, cap;
    bool nomem;
} sf_text;
void sf_text_put(sf_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

// Prints s as a JSON string literal.
void sf_json_string(FILE *f, const char *s);
// Prints v as a JSON number that reads back as the same double (%.17g), or
// null when it is NaN or infinite (JSON has no such tokens).
void sf_json_real(FILE *f, double v);
// Prints s as HTML text: <, >, & and " as entities.
void sf_html_text(FILE *f, const char *s);
// Appends " s" to out[*len, cap) as one shell word, for the commands hints
// print: as it is when plain, else in single quotes; *len kept below cap,
// out[*len] a NUL. Full: what is there stays.
void sf_shell_word(char *out, size_t cap, size_t *len, const char *s);

#endif
