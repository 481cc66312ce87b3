// checkpoint: a training run's state on disk, and the container it is kept
// in. safetensors.c reads and writes safetensors files
// (https://github.com/huggingface/safetensors): an 8-byte little-endian
// header length, a JSON header naming each tensor's dtype, shape and byte
// range, then the data; the test fixtures use it too, so numpy and PyTorch
// read them directly. checkpoint.c lays a run's weights, Adam state, scaling
// and settings out in one.
#ifndef SF_CHECKPOINT_H
#define SF_CHECKPOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "model/model.h"
#include "pipeline/pipeline.h"

enum { SF_ST_MAX_RANK = 4 };

typedef struct {
    char name[128];
    char dtype[8];  // "F32", "F64", "I64", "U8", ...
    uint32_t rank;
    uint64_t shape[SF_ST_MAX_RANK];
    uint64_t begin, end;  // byte range in the data section
} sf_st_entry;

// A file read whole into memory (checkpoints are megabytes) and validated:
// header JSON, dtypes, shapes against byte ranges, ranges inside the data
// and covering it without overlap, as the format requires.
typedef struct sf_st sf_st;
int sf_st_open(sf_st **out, const char *path, sf_err *e);
// The same, its format errors naming name instead of path (a temporary
// file read back under the name it is about to get).
int sf_st_open_named(sf_st **out, const char *path, const char *name, sf_err *e);
// The same from memory (data is copied); name is used in messages.
int sf_st_parse(sf_st **out, const void *data, size_t len, const char *name, sf_err *e);
void sf_st_close(sf_st *s);
size_t sf_st_count(const sf_st *s);
const sf_st_entry *sf_st_entry_at(const sf_st *s, size_t i);
const sf_st_entry *sf_st_find(const sf_st *s, const char *name);
const void *sf_st_data(const sf_st *s, const sf_st_entry *t);
// Copies tensor name, which must be F32 with count elements, into out.
int sf_st_read_f32(const sf_st *s, const char *name, float *out, size_t count, sf_err *e);
// A value of the header's __metadata__ (strings only), or NULL.
const char *sf_st_meta(const sf_st *s, const char *key);

typedef struct {
    const char *name, *dtype;
    uint32_t rank;
    uint64_t shape[SF_ST_MAX_RANK];
    const void *data;
} sf_st_tensor;
// Writes n tensors and the metadata pairs meta[0], meta[1], ... (NULL
// terminated, may be NULL) to path atomically: a temporary file, fsync,
// rename. Tensors are laid out in the order given.
int sf_st_write(const char *path, const sf_st_tensor *t, size_t n, const char *const *meta, sf_err *e);
// The same, with check(tmp, path, arg, e) called on the complete temporary
// file tmp before it becomes path: nonzero leaves path as it was.
typedef int (*sf_st_check)(const char *tmp, const char *path, void *arg, sf_err *e);
int sf_st_write_checked(const char *path, const sf_st_tensor *t, size_t n, const char *const *meta,
                        sf_st_check check, void *arg, sf_err *e);

// ---- checkpoints ----

// The most --steps-per-epoch, --validation-steps and --log-every take (and
// a checkpoint may hold): 2^40 steps, more than any run takes.
#define SF_MAX_EPOCH_STEPS ((uint64_t)1 << 40)

// A checkpoint: safetensors with the weights under Keras' names, Adam's
// state, the scaling of every column, and in its metadata the model, the
// columns, the window, and the exact training position.
typedef struct {
    char model[1024], features[4096], targets[4096], data[4096];
    // data's path from the checkpoint's directory ("../s.sfpack"), so that a
    // resume elsewhere finds a relative data ("": not known)
    char data_from_dir[4096];
    // The run's --log as given ("-": stdout) and its path from the
    // checkpoint's directory, so that --resume goes on writing it ("": none)
    char log[4096], log_from_dir[4096];
    // The run's --tensorboard DIR, alike (a resume starts new event files there)
    char tensorboard[4096], tensorboard_from_dir[4096];
    char precision[8];  // sf_precision_name of the run's ("": a checkpoint from before it was kept)
    sf_window_spec window;
    enum sf_norm norm;
    uint32_t inputs, outputs;
    float *feature_scale, *feature_offset, *target_scale, *target_offset;
    float *target_mean;  // the training rows' mean of each target, data units (NULL: a checkpoint from before)
    size_t nparams;
    float *w, *m, *v;  // m and v NULL in a file without optimizer state
    // where training stands: epoch, steps into it, Adam steps in all
    uint64_t epoch, epoch_step, step, seed, epochs;
    uint32_t batch, replicas;
    double val_split, lr;
    char lr_scaling[16];
    uint64_t pool, rows;  // the shuffle pool and the data's rows: they decide the batches too
    uint32_t lanes, block_chunks;  // the pipeline's lanes and blocks (lanes decided the batches before parts)
    uint32_t parts;                // the global batch's parts (sf_batch_parts): epoch_step is a position
                                   // in the sequence of global batches they make, whatever the replicas
                                   // (0: a checkpoint from before, whose batches depended on them)
    uint64_t data_fingerprint;     // sf_pack_info.fingerprint (0: a checkpoint from before it was recorded)
    double max_gap;                // seconds: windows do not span a larger step (0: none)
    // Cross-validation (--folds): the run is fold `fold` (from 1) of `folds`,
    // trained and validated on that fold's parts (sf_split); 0: none, as in
    // every checkpoint from before (metadata folds and fold)
    uint32_t folds, fold;
    char time_features[64];        // "hour,yearday": two inputs each after the feature columns ("": none)
    // What --pipeline chose for the run so far, as its line says it
    // ("auto: decoders 1, prefetch 3, slots 2, depth 2 (settled at 0.40 s;
    // caps 2, 8, 8, 8)", sf_pipe_tuning_text);
    // a record, never read back into a run: the knobs change no batch ("":
    // a checkpoint from before it was kept).
    char pipeline[SF_PIPE_TUNING_TEXT];
    // --future-features: the features (of features and time_features) also
    // read at every target row, and their inputs (indices into the inputs,
    // sf_columns.future): the model's extra inputs are steps x future_inputs
    // ("", 0: none; older checkpoints). Kept as the metadata future_features
    // and future_inputs (the indices as a list).
    char future_features[4096];
    uint32_t future_inputs, future[SF_MAX_FUTURE_INPUTS];
    // --series-features onehot: the nonehot series the model has an input
    // for, in the inputs' order, by name (onehot[s].name): the metadata
    // series_features "onehot" and series_names (the names as a list). 0:
    // none. A fit's record borrows them; a read one owns them (onehot_text
    // holds the names).
    uint64_t nonehot;
    const sf_series *onehot;
    char *onehot_text;
    uint32_t embed;  // --series-features embedding:D: D (series_features "embedding:D"); 0: onehot
    // categorical features and the value of each of their inputs, as
    // sf_columns_categories writes them ("": none)
    char categories[SF_PACK_MAX_CATEGORY_LIST + 1];
    bool target_change;            // y is each target's change from its value at the window's last row
    // the epoch so far, so that a resumed epoch's line and log row are whole
    double epoch_loss, epoch_wait, epoch_seconds;
    uint64_t epoch_samples;
    // The validation record, so that a resumed run keeps the same best and
    // stops where the uninterrupted one would: the lowest val_loss so far
    // and its epoch (best_epoch 0: none yet), the val_loss of the last
    // improvement by at least min_delta and the evaluations since it, and
    // the run's --early-stop and --min-delta (0: none). A checkpoint from
    // before they were kept reads as none of each.
    uint64_t best_epoch, since_improved, early_stop;
    double best_val_loss, improved_val_loss, min_delta;
    // The lr's schedule (train.h, sf_lr_schedule) and where it stands
    // (checkpoints from before it was kept: constant, no warmup)
    char lr_schedule[16];          // constant, cosine or plateau
    uint64_t warmup_steps, lr_total_steps, lr_patience;  // lr_total_steps: cosine's planned steps
    double lr_min, lr_factor;
    double lr_scale, plateau_best;  // plateau's multiplier on the lr (1: none) and best val_loss (inf: none yet)
    uint64_t plateau_wait;          // evaluations since val_loss last improved
    // An epoch's steps (0: a pass over the training windows) and the
    // batches each validation scores (0: every window): they decide the
    // epochs and val_loss. A checkpoint from before they were kept: 0.
    uint64_t steps_per_epoch, validation_steps;
    uint64_t log_every;            // a log row every this many steps (0: the default)
    uint64_t checkpoint_every;     // latest written every this many steps too (0: at epoch ends only)
    // --norm-scope series: the nscoped series scaled by their own training
    // rows' statistics, by name (scoped[s].name; first_row and rows are the
    // training file's when written, 0 when read); series s's scales at
    // [s * inputs + j] and [s * outputs + j]. Kept as the metadata
    // norm_scope "series" and norm_series (the names as a list), and the
    // tensors scaling/series_* (nscoped x inputs or outputs). nscoped 0:
    // global, as every checkpoint from before. A fit's record borrows all;
    // a read one owns them (scoped_text holds the names).
    uint64_t nscoped;
    const sf_series *scoped;
    float *scoped_feature_scale, *scoped_feature_offset, *scoped_target_scale, *scoped_target_offset;
    float *scoped_target_mean;
    char *scoped_text;
} sf_checkpoint;

// Writes c (its weights laid out as m says) to path atomically, after
// reading the complete temporary file back as sf_checkpoint_read does:
// a checkpoint that would not load (or not give c's weights) is never
// written, and SF_EFORMAT says why.
int sf_checkpoint_write(const char *path, const sf_checkpoint *c, const sf_model *m, sf_err *e);
// Reads path into *c (which owns its arrays afterwards: free them with
// sf_checkpoint_free, also after a failure) and parses its model into *m.
// A file that is not a seqfeed checkpoint, or whose parts disagree, is
// SF_EFORMAT naming path.
int sf_checkpoint_read(const char *path, sf_checkpoint *c, sf_model *m, sf_err *e);
// Frees the arrays sf_checkpoint_read allocated (not the caller's own).
void sf_checkpoint_free(sf_checkpoint *c);

// ---- a run's directory ----

// A run keeps DIR/latest.safetensors, where it stands, and at each epoch's
// end DIR/epoch-NNNN.safetensors too; a run with validation keeps
// DIR/best.safetensors, the checkpoint of the epoch with the lowest
// val_loss so far; nothing else but its lock (seqfeed.lock) and, while one
// is written, a temporary file (NAME.tmp.PID.XXXXXX). An epoch's end is one
// transaction of renames: at an epoch that improved on the best, best
// first, then latest copied from it; then the epoch's file copied from
// latest. So best is never worse than an epoch latest or an epoch file
// records: a kill before latest's rename leaves best one epoch ahead of
// latest, and the resume trains that epoch again to the same bytes. A run
// killed before the epoch file's rename leaves latest at the epoch's end
// without its epoch file, which sf_checkpoint_dir_recover completes.

// Whether a file's name (no directory) is one of a run's checkpoints:
// latest.safetensors, best.safetensors or epoch-NNNN.safetensors.
bool sf_checkpoint_run_file(const char *name);

// Writes c as DIR/latest.safetensors and, when epoch_end, as
// DIR/epoch-NNNN.safetensors (NNNN: c->epoch), and as DIR/best.safetensors
// before both when c is its own best (epoch_end, c->best_epoch == c->epoch).
int sf_checkpoint_save(const char *dir, const sf_checkpoint *c, const sf_model *m, bool epoch_end, sf_err *e);

// What DIR holds of a run: latest.safetensors, best.safetensors, and how
// many epoch-NNNN.safetensors (the highest's name in last_epoch).
typedef struct {
    bool latest, best;
    uint64_t epochs;
    char last_epoch[64];
} sf_checkpoint_dir_info;
void sf_checkpoint_dir_look(const char *dir, sf_checkpoint_dir_info *out);
// One directory, one run: SF_EUSAGE, naming --resume and a fresh
// --checkpoint-dir, when a new run (resume false) would join another's
// checkpoints in DIR (best alone too), or a resume finds epoch files but
// no latest.
int sf_checkpoint_dir_check(const char *dir, bool resume, sf_err *e);

// Whether a live run holds DIR's lock (DIR/seqfeed.lock): true with its PID
// in pid (cap bytes; "unknown" when it wrote none yet). Only for a process
// that does not hold the lock itself: its own lock reads as another's.
bool sf_checkpoint_dir_owner(const char *dir, char *pid, size_t cap);

// For the one run that holds DIR's lock: removes every temporary file a
// killed run left there, and completes an epoch's end that a kill
// interrupted (latest at the end of epoch N, epoch-NNNN missing: copied
// from latest), and a best.safetensors removed while its epoch's file is
// there (copied from it; SF_EUSAGE naming both when neither is).
// *completed: the epoch file written (0: none); *best_restored: the best's
// epoch when best was written (0: none).
int sf_checkpoint_dir_recover(const char *dir, uint64_t *completed, uint64_t *best_restored, sf_err *e);

// ---- Keras ----

enum sf_keras_format {
    SF_KERAS_MODEL,    // a .keras file: keras.models.load_model opens it, no custom objects
    SF_KERAS_WEIGHTS,  // a .weights.h5 alone, for the same model built in code (model.load_weights)
};
// Writes c's model (m, its layout) to path atomically, as Keras 3 saves
// one: a Sequential of InputLayer (window, inputs), Normalization (the
// inputs' scaling as mean and variance: it takes data units), the LSTM,
// Dropout and Dense layers under their Keras names, and an inverted
// Normalization that gives the targets in data units (with
// c->target_change: their change from the window's last row, in data
// units); with several steps (--horizon A-B) a Reshape to (steps, targets)
// before it, so the model outputs (batch, steps, targets). Loads the module seqfeed-keras.so on first use: SF_EUSAGE saying
// why when it cannot (seqfeed built without libhdf5 and libzip).
int sf_keras_export(const char *path, const sf_checkpoint *c, const sf_model *m, enum sf_keras_format format,
                    sf_err *e);
// Whether export can work: true, or false with the reason in *why (may be NULL).
bool sf_keras_available(sf_err *why);

#endif
