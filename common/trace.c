// Trace events in memory, written as Chrome's JSON trace format.
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

typedef struct {
    const char *name;
    double start, end;  // a counter: value in end
    int track;          // -1: a counter
} event;

struct sf_trace {
    pthread_mutex_t mu;
    event *ev;
    size_t n, cap;
    uint64_t dropped;
    char **tracks;
    int ntracks;
    double origin;
};

int sf_trace_open(sf_trace **out, size_t max_events, sf_err *e) {
    sf_trace *t = calloc(1, sizeof *t);
    *out = NULL;
    if (!t || !(t->ev = malloc((max_events ? max_events : 1) * sizeof *t->ev))) {
        free(t);
        return sf_err_set(e, SF_ENOMEM, "out of memory for a trace of %zu events", max_events);
    }
    pthread_mutex_init(&t->mu, NULL);
    t->cap = max_events;
    t->origin = sf_now();
    *out = t;
    return 0;
}

void sf_trace_close(sf_trace *t) {
    if (!t) return;
    for (int i = 0; i < t->ntracks; i++) free(t->tracks[i]);
    free(t->tracks);
    free(t->ev);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

int sf_trace_track(sf_trace *t, const char *name) {
    if (!t) return -1;
    pthread_mutex_lock(&t->mu);
    char **grown = realloc(t->tracks, (size_t)(t->ntracks + 1) * sizeof *grown);
    int id = -1;
    if (grown) {
        t->tracks = grown;
        if ((grown[t->ntracks] = strdup(name))) id = t->ntracks++;
    }
    pthread_mutex_unlock(&t->mu);
    return id;
}

static void add(sf_trace *t, event ev) {
    pthread_mutex_lock(&t->mu);
    if (t->n < t->cap) t->ev[t->n++] = ev;
    else t->dropped++;
    pthread_mutex_unlock(&t->mu);
}

void sf_trace_span(sf_trace *t, int track, const char *name, double start, double end) {
    if (t && track >= 0) add(t, (event){name, start, end, track});
}

void sf_trace_counter(sf_trace *t, const char *name, double at, double value) {
    if (t) add(t, (event){name, at, value, -1});
}

// One process's tracks and events, each line led by a comma, as a part
// of the traceEvents array.
int sf_trace_dump(sf_trace *t, int pid, const char *process, char **json, size_t *len, sf_err *e) {
    FILE *f = open_memstream(json, len);
    if (!f) return sf_err_set(e, SF_ENOMEM, "out of memory for a trace");
    pthread_mutex_lock(&t->mu);
    fprintf(f, ",\n{\"ph\": \"M\", \"pid\": %d, \"name\": \"process_name\", \"args\": {\"name\": \"%s\", "
            "\"dropped_events\": %llu}}", pid, process, (unsigned long long)t->dropped);
    for (int i = 0; i < t->ntracks; i++) {
        fprintf(f, ",\n{\"ph\": \"M\", \"pid\": %d, \"tid\": %d, \"name\": \"thread_name\", \"args\": {\"name\": \"",
                pid, i);
        for (const char *c = t->tracks[i]; *c; c++)
            if (*c == '"' || *c == '\\') fprintf(f, "\\%c", *c);
            else if ((unsigned char)*c >= 0x20) fputc(*c, f);
        fprintf(f, "\"}},\n{\"ph\": \"M\", \"pid\": %d, \"tid\": %d, \"name\": \"thread_sort_index\", "
                   "\"args\": {\"sort_index\": %d}}", pid, i, i);
    }
    for (size_t k = 0; k < t->n; k++) {
        const event *v = &t->ev[k];
        double ts = (v->start - t->origin) * 1e6;
        if (v->track >= 0)
            fprintf(f, ",\n{\"ph\": \"X\", \"pid\": %d, \"tid\": %d, \"name\": \"%s\", \"ts\": %.3f, \"dur\": %.3f}",
                    pid, v->track, v->name, ts, (v->end - v->start) * 1e6);
        else
            fprintf(f, ",\n{\"ph\": \"C\", \"pid\": %d, \"name\": \"%s\", \"ts\": %.3f, \"args\": {\"value\": %.6g}}",
                    pid, v->name, ts, v->end);
    }
    pthread_mutex_unlock(&t->mu);
    bool bad = ferror(f);
    if (fclose(f) || bad) {
        free(*json), *json = NULL;
        return sf_err_set(e, SF_ENOMEM, "out of memory for a trace");
    }
    return 0;
}

int sf_trace_write_parts(const char *path, const char *parts, size_t len, sf_err *e) {
    sf_temp_file out;
    int rc = sf_temp_fopen(&out, path, e);
    if (rc) return rc;
    fprintf(out.f, "{\"displayTimeUnit\": \"ms\",\n\"traceEvents\": [\n"
                   "{\"ph\": \"M\", \"pid\": 0, \"name\": \"process_name\", \"args\": {\"name\": \"seqfeed\"}}");
    fwrite(parts, 1, len, out.f);
    fprintf(out.f, "\n]}\n");
    return sf_temp_fclose(&out, true, e);
}
