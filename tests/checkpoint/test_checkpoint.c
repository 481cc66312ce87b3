// Checkpoints: a round trip, and nothing loaded on its byte count alone: a
// tensor of the right size but the wrong shape, a non-finite weight or
// scale, and metadata that contradicts itself are refused with the
// tensor's or the field's name. Nothing written that would not load; a
// run's directory recovered after a kill between its two files.
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checkpoint/checkpoint.h"
#include "tests/common.h"

static char dir[] = "/tmp/sfck.XXXXXX";

static uint8_t *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    rewind(f);
    uint8_t *b = malloc(*len + 1);
    if (b && fread(b, 1, *len, f) != *len) free(b), b = NULL;
    fclose(f);
    return b;
}

static void spit(const char *path, const uint8_t *b, size_t len) {
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(b, 1, len, f) == len && fclose(f) == 0, "cannot write %s", path);
}

// Reads path and expects SF_EFORMAT with says in the message.
static void refused(const char *path, const char *says, const char *what) {
    sf_checkpoint c;
    sf_model m;
    sf_err e = {0};
    int rc = sf_checkpoint_read(path, &c, &m, &e);
    CHECK(rc == SF_EFORMAT && strstr(e.msg, says) && strstr(e.msg, path), "%s: rc %d '%s', expected '%s'", what, rc,
          e.msg, says);
    sf_checkpoint_free(&c);
}

// The file good with its first occurrence of from (in the header) replaced
// by to, of the same length, written to path.
static void patched(const uint8_t *good, size_t len, const char *from, const char *to, const char *path) {
    uint8_t *b = malloc(len);
    memcpy(b, good, len);
    uint8_t *at = memmem(b, len, from, strlen(from));
    CHECK(at && strlen(from) == strlen(to), "'%s' not in the header", from);
    if (at) memcpy(at, to, strlen(to));
    spit(path, b, len);
    free(b);
}

// Lists of names (sf_list_append, sf_list_next) as checkpoints and
// --features spell them: every name comes back, whatever it holds.
static void test_lists(void) {
    const char *names[] = {"a", "rate,1y", "say \"hi\"", " edge ", "", "\"", ",", "x y"};
    size_t n = sizeof names / sizeof *names;
    char list[256], got[64];
    size_t len = 0;
    for (size_t i = 0; i < n; i++) CHECK(sf_list_append(list, sizeof list, &len, names[i]) == 0, "append %zu", i);
    CHECK(!strcmp(list, "a,\"rate,1y\",\"say \"\"hi\"\"\",\" edge \",\"\",\"\"\"\",\",\",x y"), "list: %s", list);
    size_t k = 0;
    for (const char *p = list; p; k++) {
        CHECK(sf_list_next(&p, got, sizeof got) == 0, "next %zu in %s", k, list);
        CHECK(k < n && !strcmp(got, names[k]), "name %zu: '%s'", k, got);
    }
    CHECK(k == n, "%zu names of %zu", k, n);
    // As people type them: spaces after commas, quotes only where needed.
    const char *typed = "a, b ,\"c,d\" , e";
    const char *want[] = {"a", "b", "c,d", "e"};
    k = 0;
    for (const char *p = typed; p; k++) {
        CHECK(sf_list_next(&p, got, sizeof got) == 0 && k < 4 && !strcmp(got, want[k]), "typed %zu: '%s'", k, got);
    }
    CHECK(k == 4, "typed: %zu names", k);
    const char *bad[] = {"\"open", "\"a\"b", "a,\"b"};
    for (size_t i = 0; i < 3; i++) {
        const char *p = bad[i];
        int rc = 0;
        while (p && !rc) rc = sf_list_next(&p, got, sizeof got);
        CHECK(rc == SF_EFORMAT, "'%s' is no list", bad[i]);
    }
    len = 0;
    CHECK(sf_list_append(list, 4, &len, "abcd") == SF_ERANGE, "a list too long for its buffer");
}

// Whether dir holds a file whose name has part in it.
static bool dir_has(const char *part) {
    DIR *d = opendir(dir);
    bool found = false;
    for (struct dirent *ent; d && (ent = readdir(d));) found |= strstr(ent->d_name, part) != NULL;
    if (d) closedir(d);
    return found;
}

// A checkpoint that would not load is never written (the previous one
// stays, no temporary is left), and a category value of the limit's length
// loads; one byte more does not.
static void test_read_back(const sf_checkpoint *good, const sf_model *m, const char *path) {
    size_t len, len2;
    uint8_t *before = slurp(path, &len);
    sf_checkpoint c = *good;
    snprintf(c.features, sizeof c.features, "a,a");
    sf_err e = {0};
    int rc = sf_checkpoint_write(path, &c, m, &e);
    CHECK(rc == SF_EFORMAT && strstr(e.msg, "was not written: it would not load") && strstr(e.msg, "named twice") &&
              strstr(e.msg, path) && !strstr(e.msg, ".tmp."),
          "a checkpoint that cannot load: rc %d '%s'", rc, e.msg);
    uint8_t *after = slurp(path, &len2);
    CHECK(before && after && len == len2 && !memcmp(before, after, len), "the previous checkpoint was replaced");
    CHECK(!dir_has(".tmp."), "a temporary file was left");
    free(before), free(after);

    // One categorical input more: '"a,<value>,y"' is a (one-hot, 2 inputs) and b.
    sf_model m3;
    CHECK(sf_model_parse(&m3, "lstm:4,dense", 3, 1, &e) == 0, "model: %s", e.msg);
    float *w = calloc(m3.nparams, sizeof *w), ones[3] = {1, 1, 1}, zeros[3] = {0};
    c = *good;
    c.inputs = 3, c.w = w, c.nparams = m3.nparams, c.feature_scale = ones, c.feature_offset = zeros;
    char value[SF_PACK_MAX_CATEGORY_VALUE + 2];
    for (int extra = 0; extra < 2; extra++) {
        memset(value, 'x', sizeof value);
        value[SF_PACK_MAX_CATEGORY_VALUE + extra] = 0;
        char group[sizeof value + 16];
        snprintf(group, sizeof group, "a,%s,y", value);
        size_t n = 0;
        c.categories[0] = 0;
        CHECK(sf_list_append(c.categories, sizeof c.categories, &n, group) == 0, "categories");
        rc = sf_checkpoint_write(path, &c, &m3, &e);
        if (!extra) {
            CHECK(rc == 0, "a category value of %u bytes: %s", SF_PACK_MAX_CATEGORY_VALUE, e.msg);
        } else {
            CHECK(rc == SF_EFORMAT && strstr(e.msg, "would not load"), "a category value of %u bytes: rc %d '%s'",
                  SF_PACK_MAX_CATEGORY_VALUE + 1, rc, e.msg);
        }
    }
    free(w);
    CHECK(sf_checkpoint_write(path, good, m, &e) == 0, "write: %s", e.msg);
}

// An epoch's end is latest and then epoch-NNNN; a kill between the two
// leaves latest at the epoch's end without its file, and temporaries:
// recovery completes the one and removes the others.
static void test_run_dir(const sf_checkpoint *good, const sf_model *m) {
    sf_checkpoint c = *good;
    c.epoch = 2, c.epoch_step = 0;
    sf_err e = {0};
    char latest[128], epoch[128], tmp[160];
    snprintf(latest, sizeof latest, "%s/latest.safetensors", dir);
    snprintf(epoch, sizeof epoch, "%s/epoch-0002.safetensors", dir);
    CHECK(sf_checkpoint_save(dir, &c, m, true, &e) == 0, "save: %s", e.msg);
    sf_checkpoint_dir_info info;
    sf_checkpoint_dir_look(dir, &info);
    CHECK(info.latest && info.epochs == 1 && !strcmp(info.last_epoch, "epoch-0002.safetensors"),
          "look: latest %d, %llu epochs, last '%s'", info.latest, (unsigned long long)info.epochs, info.last_epoch);
    size_t la, ea;
    uint8_t *lb = slurp(latest, &la), *eb = slurp(epoch, &ea);
    CHECK(lb && eb && la == ea && !memcmp(lb, eb, la), "the epoch's file is not latest's bytes");
    // The kill: epoch-0002 never renamed, its temporary (the running test's
    // own PID: under the lock the name's PID proves nothing) and latest's left.
    unlink(epoch);
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld.abcdef", epoch, (long)getpid());
    spit(tmp, lb, la / 2);
    snprintf(tmp, sizeof tmp, "%s.tmp.1.ghijkl", latest);
    spit(tmp, lb, la);
    snprintf(tmp, sizeof tmp, "%s/notes.txt.tmp.1.ghijkl", dir);  // not the run's: stays
    spit(tmp, lb, 1);
    uint64_t done = 99, restored = 99;
    CHECK(sf_checkpoint_dir_recover(dir, &done, &restored, &e) == 0 && done == 2 && !restored, "recover: done %llu, %s",
          (unsigned long long)done, e.msg);
    free(eb);
    eb = slurp(epoch, &ea);
    CHECK(eb && la == ea && !memcmp(lb, eb, la), "the recovered epoch file is not latest's bytes");
    CHECK(!dir_has("safetensors.tmp."), "a temporary file outlived the recovery");
    CHECK(dir_has("notes.txt.tmp."), "recovery removed a file that was not the run's");
    unlink(tmp);
    // Mid-epoch: nothing to complete.
    c.epoch = 2, c.epoch_step = 5;
    CHECK(sf_checkpoint_save(dir, &c, m, false, &e) == 0, "save: %s", e.msg);
    unlink(epoch);
    CHECK(sf_checkpoint_dir_recover(dir, &done, &restored, &e) == 0 && done == 0 && access(epoch, F_OK) != 0,
          "recover mid-epoch: done %llu", (unsigned long long)done);
    free(lb), free(eb);
    unlink(latest);
}

// The best: written at the epoch that is its own best, first, with latest
// and the epoch's file its bytes; left as it was at an epoch that is not;
// its record read back exactly; its temporaries the run's.
static void test_best(const sf_checkpoint *good, const sf_model *m) {
    sf_checkpoint c = *good;
    c.epoch = 3, c.epoch_step = 0, c.best_epoch = 3, c.best_val_loss = 0.1, c.improved_val_loss = 0.1 + 1e-17;
    c.since_improved = 0, c.early_stop = 2, c.min_delta = 1e-3;
    sf_err e = {0};
    char best[128], latest[128], epoch[128], tmp[160];
    snprintf(best, sizeof best, "%s/best.safetensors", dir);
    snprintf(latest, sizeof latest, "%s/latest.safetensors", dir);
    snprintf(epoch, sizeof epoch, "%s/epoch-0003.safetensors", dir);
    CHECK(sf_checkpoint_save(dir, &c, m, true, &e) == 0, "save: %s", e.msg);
    size_t bl, ll, el;
    uint8_t *bb = slurp(best, &bl), *lb = slurp(latest, &ll), *eb = slurp(epoch, &el);
    CHECK(bb && lb && eb && bl == ll && bl == el && !memcmp(bb, lb, bl) && !memcmp(bb, eb, bl),
          "best, latest and the epoch's file are not the same bytes at the best epoch");
    sf_checkpoint_dir_info info;
    sf_checkpoint_dir_look(dir, &info);
    CHECK(info.best && info.latest, "look: best %d, latest %d", info.best, info.latest);
    sf_checkpoint r;
    sf_model rm;
    if (sf_checkpoint_read(best, &r, &rm, &e) == 0) {
        CHECK(r.best_epoch == 3 && r.best_val_loss == c.best_val_loss && r.improved_val_loss == c.improved_val_loss &&
                  r.since_improved == 0 && r.early_stop == 2 && r.min_delta == 1e-3,
              "the validation record read back differs");
        sf_checkpoint_free(&r);
    } else {
        CHECK(0, "read best: %s", e.msg);
    }
    // An epoch that is not the best: best stays.
    c.epoch = 4, c.since_improved = 1;
    CHECK(sf_checkpoint_save(dir, &c, m, true, &e) == 0, "save: %s", e.msg);
    free(eb);
    eb = slurp(best, &el);
    CHECK(eb && el == bl && !memcmp(eb, bb, bl), "an epoch that was not the best replaced best.safetensors");
    snprintf(tmp, sizeof tmp, "%s.tmp.1.abcdef", best);
    spit(tmp, bb, bl / 2);
    uint64_t done, restored;
    CHECK(sf_checkpoint_dir_recover(dir, &done, &restored, &e) == 0 && !restored, "recover: %s", e.msg);
    CHECK(!dir_has("safetensors.tmp."), "best's temporary outlived the recovery");
    // best removed: written again from its epoch's file; with that gone
    // too, refused before any training, naming both.
    unlink(best);
    CHECK(sf_checkpoint_dir_recover(dir, &done, &restored, &e) == 0 && restored == 3, "recover without best: %s",
          e.msg);
    free(eb);
    eb = slurp(best, &el);
    CHECK(eb && el == bl && !memcmp(eb, bb, bl), "best written again is not the best's bytes");
    unlink(best), unlink(epoch);
    CHECK(sf_checkpoint_dir_recover(dir, &done, &restored, &e) == SF_EUSAGE && strstr(e.msg, "best.safetensors") &&
              strstr(e.msg, "epoch-0003.safetensors"), "recover without best or its epoch: %s", e.msg);
    // ... but for latest at the best epoch's end, a copy of best too.
    c.epoch = 3, c.since_improved = 0;
    CHECK(sf_checkpoint_save(dir, &c, m, true, &e) == 0, "save: %s", e.msg);
    unlink(best), unlink(epoch);
    CHECK(sf_checkpoint_dir_recover(dir, &done, &restored, &e) == 0 && restored == 3 && done == 3,
          "recover from latest at the best's end: %s", e.msg);
    free(eb);
    eb = slurp(best, &el);
    CHECK(eb && el == bl && !memcmp(eb, bb, bl), "best written from latest is not the best's bytes");
    c.epoch = 4, c.since_improved = 1;
    CHECK(sf_checkpoint_save(dir, &c, m, true, &e) == 0, "save: %s", e.msg);  // epoch 4's file again, for below
    spit(best, bb, bl);
    CHECK(sf_checkpoint_dir_check(dir, false, &e) == SF_EUSAGE && strstr(e.msg, "best.safetensors"),
          "a new run beside best: %s", e.msg);
    free(bb), free(lb), free(eb);
    for (int k = 3; k <= 4; k++) {
        snprintf(epoch, sizeof epoch, "%s/epoch-%04d.safetensors", dir, k);
        unlink(epoch);
    }
    unlink(best), unlink(latest);
}

// Plateau's best is a val_loss (inf before the first): a NaN one, which the
// fit never leaves (sf_plateau_update skips a NaN val_loss, as Keras' inf
// start does), names the key as damaged, and the writer refuses to leave a
// file that would not load.
static void test_plateau_nan(const sf_checkpoint *good, const sf_model *m, const char *path) {
    sf_checkpoint c = *good;
    snprintf(c.lr_schedule, sizeof c.lr_schedule, "plateau");
    c.lr_factor = 0.1, c.lr_patience = 1, c.lr_scale = 0.1, c.plateau_best = NAN, c.plateau_wait = 1;
    sf_err e = {0};
    unlink(path);
    CHECK(sf_checkpoint_write(path, &c, m, &e) == SF_EFORMAT && strstr(e.msg, "plateau_best"),
          "a NaN plateau best was written: %s", e.msg);
    CHECK(access(path, F_OK) != 0, "the refused checkpoint was left at %s", path);
    c.plateau_best = INFINITY;  // none yet
    CHECK(sf_checkpoint_write(path, &c, m, &e) == 0, "write with no plateau best yet: %s", e.msg);
}

int main(void) {
    if (!mkdtemp(dir)) return 2;
    test_lists();
    sf_model m;
    sf_err e = {0};
    CHECK(sf_model_parse(&m, "lstm:4,dense", 2, 1, &e) == 0, "model: %s", e.msg);
    float *w = malloc(m.nparams * sizeof *w);
    for (size_t i = 0; i < m.nparams; i++) w[i] = (float)i / 100;
    float fs[2] = {1, 2}, fo[2] = {0, -1}, ts[1] = {3}, to[1] = {0.5f};
    sf_checkpoint c = {.model = "lstm:4,dense", .features = "a,b", .targets = "b", .data = "d.sfpack",
                       .window = {.length = 5, .stride = 1, .sampling_rate = 1}, .norm = SF_NORM_ZSCORE,
                       .inputs = 2, .outputs = 1, .feature_scale = fs, .feature_offset = fo, .target_scale = ts,
                       .target_offset = to, .nparams = m.nparams, .w = w, .batch = 8, .replicas = 1,
                       .lr = 1e-3, .lr_scaling = "none", .lanes = 1, .block_chunks = 1, .precision = "fp32"};
    char path[96], bad[96];
    snprintf(path, sizeof path, "%s/good.safetensors", dir);
    snprintf(bad, sizeof bad, "%s/bad.safetensors", dir);
    CHECK(sf_checkpoint_write(path, &c, &m, &e) == 0, "write: %s", e.msg);
    sf_checkpoint r;
    sf_model rm;
    int rc = sf_checkpoint_read(path, &r, &rm, &e);
    CHECK(rc == 0, "read: %s", e.msg);
    if (!rc) {
        CHECK(r.nparams == m.nparams && !memcmp(r.w, w, m.nparams * sizeof *w) && r.feature_scale[1] == 2 &&
                  r.target_offset[0] == 0.5f && !strcmp(r.features, "a,b") && !strcmp(r.precision, "fp32"),
              "the round trip changed the checkpoint");
        sf_checkpoint_free(&r);
    }

    size_t len;
    uint8_t *good = slurp(path, &len);
    CHECK(good != NULL, "cannot read %s", path);
    if (!good) return TEST_EXIT();
    // The kernel stored transposed: 2 x 16 and 16 x 2 are the same bytes.
    patched(good, len, "\"shape\":[2,16]", "\"shape\":[16,2]", bad);
    refused(bad, "tensor 'lstm/kernel' has shape [16,2]; the model needs [2,16]", "a transposed kernel");
    // One weight NaN, one scale infinite.
    uint64_t hl = sf_get_u64(good);
    const sf_st_entry *t;
    sf_st *s;
    CHECK(sf_st_open(&s, path, &e) == 0, "open: %s", e.msg);
    const char *names[] = {"lstm/recurrent_kernel", "scaling/feature_scale"};
    const float poison[] = {NAN, INFINITY};
    for (int k = 0; k < 2; k++) {
        t = sf_st_find(s, names[k]);
        CHECK(t != NULL, "no %s", names[k]);
        if (!t) continue;
        uint8_t *b = malloc(len);
        memcpy(b, good, len);
        memcpy(b + 8 + hl + t->begin + 4, &poison[k], 4);
        spit(bad, b, len);
        free(b);
        char says[96];
        snprintf(says, sizeof says, "tensor '%s' holds %s at index 1", names[k], k ? "an infinity" : "NaN");
        refused(bad, says, names[k]);
    }
    sf_st_close(s);
    // Precision: kept; an unknown one refused.
    patched(good, len, "\"precision\":\"fp32\"", "\"precision\":\"fp64\"", bad);
    refused(bad, "metadata 'precision' is 'fp64', expected fp32, tf32 or bf16", "precision fp64");
    // Features that name one column twice.
    patched(good, len, "\"features\":\"a,b\"", "\"features\":\"a,a\"", bad);
    refused(bad, "a column named twice in features 'a,a'", "features a,a");
    // A record train never writes: a best without its val_loss.
    patched(good, len, "\"early_stop\":\"0\"", "\"best_epoch\":\"2\"", bad);
    refused(bad, "metadata 'best_val_loss' is 'missing', expected a number", "a best without its val_loss");
    free(good);
    test_read_back(&c, &m, path);
    test_run_dir(&c, &m);
    test_best(&c, &m);
    test_plateau_nan(&c, &m, path);
    free(w);
    unlink(path), unlink(bad), rmdir(dir);
    return TEST_EXIT();
}
