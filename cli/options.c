// The one table of options: every spelling, its value's kind and range, its
// group and its help line. Each command names the options it takes
// (cli_command.uses); the parser and --help both read that list, so a
// command's help lists exactly what it accepts. Names must be given whole:
// no abbreviations, so that each option has one spelling.
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "cli.h"

// K_RANGE: a count N, or A-B (list[0] A, list[1] B, n 2); u is the last.
typedef enum { K_FLAG, K_TEXT, K_COUNT, K_COUNTS, K_INT, K_REAL, K_CHOICE, K_DURATION, K_RANGE } kind;

typedef struct {
    const char *name;
    char letter;                 // a one-letter spelling too ('q', 'o', 'h'), or 0
    const char *meta;            // the value in help: "N", "FILE"
    kind k;
    uint64_t lo, hi;             // counts: [lo, hi]
    int64_t ilo, ihi;            // integers: [ilo, ihi] (0, 0: zstd's levels)
    double rlo, rhi;             // reals: (rlo or [rlo, up to rhi)
    bool rlo_open, rhi_open;
    const char *const *choices;  // NULL terminated
    const char *group;
    const char *help;
} option;

static const char *const norms[] = {"zscore", "minmax", "none", NULL};
static const char *const norm_scopes[] = {"global", "series", NULL};
static const char *const lr_scalings[] = {"none", "linear", NULL};
static const char *const lr_schedules[] = {"constant", "cosine", "plateau", NULL};  // sf_lr_kind's order
static const char *const precisions[] = {"fp32", "tf32", "bf16", NULL};
static const char *const rnn_algos[] = {"standard", "persistent", "persistent-small", NULL};  // sf_rnn_algo's order
static const char *const on_off[] = {"on", "off", NULL};
static const char *const ios[] = {"auto", "uring", "pread", NULL};
static const char *const directs[] = {"auto", "on", "off", NULL};
static const char *const pipelines[] = {"auto", "fixed", NULL};
static const char *const splits[] = {"all", "train", "validation", NULL};
static const char *const target_kinds[] = {"value", "change", NULL};
static const char *const export_formats[] = {"keras", "keras-weights", NULL};
static const char *const missings[] = {"error", "drop", "ffill", NULL};
static const char *const filters[] = {"delta-shuffle", "shuffle", "none", NULL};
static const char *const time_units[] = {"s", "ms", "us", "ns", NULL};  // in the order of SF_TIME_EPOCH_*

#define U32 UINT32_MAX
#define FILES "input and output"
#define DATA "data and model"
#define TRAINING "training"
#define PIPELINE "the pipeline (seqfeed bench pipeline measures it alone)"
#define RUN "what a run writes"
#define BENCH "benchmark"
#define PACKING "packing"
#define OUTPUT "output"

static const option options[OPT_COUNT] = {
    [OPT_DATA] = {"data", 0, "FILE", K_TEXT, .group = FILES, .help = "the .sfpack file"},
    [OPT_OUTPUT] = {"output", 'o', "FILE", K_TEXT, .group = FILES,
                    .help = "where the output goes ('-': stdout); a file appears only when complete"},
    [OPT_CHECKPOINT] = {"checkpoint", 0, "FILE", K_TEXT, .group = FILES,
                        .help = "a checkpoint written by seqfeed train"},
    [OPT_FEATURES] = {"features", 0, "a,b", K_TEXT, .group = DATA, .help = "feature columns (default: all); a name with a comma in quotes, as in CSV: '\"rate,1y\",b'"},
    [OPT_TARGETS] = {"targets", 0, "c,d", K_TEXT, .group = DATA,
                     .help = "target columns (default: every numeric column), quoted as --features"},
    [OPT_TARGET] = {"target", 0, "value|change", K_CHOICE, .choices = target_kinds, .group = DATA,
                    .help = "what the model learns for each target: its value, or its change from its value at "
                            "the window's last row (each target a feature too: a model that learns nothing is then "
                            "persistence); predict and evaluate give values either way"},
    [OPT_NORM] = {"norm", 0, "zscore|minmax|none", K_CHOICE, .choices = norms, .group = DATA,
                  .help = "scaling, from the statistics of the training part's rows"},
    [OPT_NORM_SCOPE] = {"norm-scope", 0, "global|series", K_CHOICE, .choices = norm_scopes, .group = DATA,
                        .help = "--norm's statistics over every series' training rows (global), or each series' "
                                "own, its windows' inputs and targets scaled by them and the loss in its units "
                                "(series: needs a series column; a column with no spread in a series' training "
                                "rows keeps the global scaling there; predict and evaluate refuse a series the "
                                "checkpoint has not seen; export refuses: a Keras Normalization layer has one "
                                "scaling)"},
    [OPT_WINDOW] = {"window", 0, "T", K_COUNT, 1, U32, .group = DATA, .help = "rows per window"},
    [OPT_STRIDE] = {"stride", 0, "N", K_COUNT, 1, U32, .group = DATA, .help = "rows between window starts"},
    [OPT_SAMPLING_RATE] = {"sampling-rate", 0, "N", K_COUNT, 1, U32, .group = DATA,
                           .help = "rows between samples in a window"},
    [OPT_HORIZON] = {"horizon", 0, "N|A-B", K_RANGE, 1, U32, .group = DATA,
                     .help = "target row past the window's last (at least 1: 0 is a row the model sees); A-B: "
                             "every row from A to B past it at once (B - A + 1 steps, one output per step and "
                             "target)"},
    [OPT_MAX_GAP] = {"max-gap", 0, "DURATION", K_DURATION, .group = DATA,
                     .help = "no window spans a step between rows longer than this (90s, 15min, 2h, 3d, 1w): a gap "
                             "splits its series (default: no limit)"},
    [OPT_TIME_FEATURES] = {"time-features", 0, "hour,weekday,yearday", K_TEXT, .group = DATA,
                           .help = "inputs from the time column: the sine and cosine of each time's phase in its "
                                   "day, week or year (UTC), so that daily and yearly cycles are learnable"},
    [OPT_SERIES_FEATURES] = {"series-features", 0, "onehot|embedding:D", K_TEXT, .group = DATA,
                             .help = "the window's series as an input beside it, for a file of many series: one "
                                     "input per series, 1 for its own, or a learned vector of D values per series "
                                     "(Keras' Embedding); the checkpoint keeps the series' names, and predict "
                                     "refuses a series it has not seen"},
    [OPT_FUTURE_FEATURES] = {"future-features", 0, "a,b", K_TEXT, .group = DATA,
                             .help = "features known in advance (a holiday flag, a schedule, a time feature of "
                                     "--time-features): their values at every target row are inputs too, beside the "
                                     "window, which holds their past values as well; a target cannot be one "
                                     "(docs/TRAINING.md, \"Covariates\")"},
    [OPT_SPLIT] = {"split", 0, "all|train|validation", K_CHOICE, .choices = splits, .group = DATA,
                   .help = "which part of every series, split as the checkpoint was trained"},
    [OPT_SEASON] = {"season", 0, "N", K_COUNT, 1, U32, .group = DATA,
                    .help = "rows one season spans, for the seasonal naive baseline (default: from the time "
                            "column's typical step: a day of sub-daily rows, 7 daily, 52 weekly, 12 monthly rows)"},
    [OPT_MODEL] = {"model", 0, "SPEC", K_TEXT, .group = DATA,
                   .help = "layers, lstm:U,gru:U,dropout:P,...,dense[:N]; the last dense width defaults to the number "
                           "of targets"},
    [OPT_LOSS] = {"loss", 0, "mse|mae|huber[:D]|quantile:Q,..", K_TEXT, .group = TRAINING,
                  .help = "what training minimises, on scaled values, averaged over targets, steps and quantiles: "
                          "mse; mae; huber (Keras' Huber, delta 1, or huber:D); or quantile:0.1,0.5,0.9, the pinball "
                          "loss of each quantile (ascending, in (0, 1)), the model giving one forecast per quantile "
                          "(predict writes NAME_q10, NAME_q50, ..., sorted so that they never cross; evaluate "
                          "reports each one's loss and the coverage of the lowest to highest); kept in the "
                          "checkpoint"},
    [OPT_BATCH_SIZE] = {"batch-size", 0, "N", K_COUNTS, 1, 1u << 20, .group = TRAINING,
                        .help = "global batch: windows per step over every replica, cut into batch-size / 8 parts (1 to "
                                "12); each replica takes whole parts, so the run does not depend on --replicas"},
    [OPT_REPLICAS] = {"replicas", 0, "R", K_COUNTS, 1, 256, .group = TRAINING,
                      .help = "replicas (per rank under a launcher); at most the global batch's parts"},
    [OPT_EPOCHS] = {"epochs", 0, "N", K_COUNT, 1, UINT64_MAX >> 1, .group = TRAINING, .help = "passes over the data"},
    [OPT_VAL_SPLIT] = {"val-split", 0, "F", K_REAL, .rlo = 0, .rhi = 1, .rhi_open = true, .group = TRAINING,
                       .help = "the time-ordered tail of every series for validation"},
    [OPT_LR] = {"lr", 0, "F", K_REAL, .rlo = 1e-10, .rhi = 1000, .group = TRAINING,
                .help = "Adam's learning rate"},
    [OPT_LR_SCALING] = {"lr-scaling", 0, "none|linear", K_CHOICE, .choices = lr_scalings, .group = TRAINING,
                        .help = "linear: lr x replicas"},
    [OPT_LR_SCHEDULE] = {"lr-schedule", 0, "constant|cosine|plateau", K_CHOICE, .choices = lr_schedules,
                         .group = TRAINING,
                         .help = "the lr over the run (after --warmup-steps): constant; cosine, Keras' CosineDecay "
                                 "from --lr down to --lr-min over the run's planned steps (--epochs, or --max-steps "
                                 "when fewer); plateau, Keras' ReduceLROnPlateau on val_loss"},
    [OPT_WARMUP_STEPS] = {"warmup-steps", 0, "N", K_COUNT, 0, UINT64_MAX >> 1, .group = TRAINING,
                          .help = "the lr rises linearly from 0 to --lr over the first N steps"},
    [OPT_LR_MIN] = {"lr-min", 0, "F", K_REAL, .rlo = 0, .rhi = 1000, .group = TRAINING,
                    .help = "--lr-schedule cosine: where the lr ends; plateau: the floor of its reductions"},
    [OPT_LR_FACTOR] = {"lr-factor", 0, "F", K_REAL, .rlo = 0, .rhi = 1, .rlo_open = true, .rhi_open = true,
                       .group = TRAINING, .help = "--lr-schedule plateau: the lr is multiplied by F at each reduction"},
    [OPT_LR_PATIENCE] = {"lr-patience", 0, "N", K_COUNT, 1, U32, .group = TRAINING,
                         .help = "--lr-schedule plateau: evaluations (epochs) without improvement of val_loss "
                                 "before a reduction"},
    [OPT_SEED] = {"seed", 0, "N", K_COUNT, 0, UINT64_MAX, .group = TRAINING,
                  .help = "the random numbers: weights, shuffling, dropout"},
    [OPT_MAX_STEPS] = {"max-steps", 0, "N", K_COUNT, 1, UINT64_MAX, .group = TRAINING,
                       .help = "stop after N steps (a checkpoint is written)"},
    [OPT_STEPS_PER_EPOCH] = {"steps-per-epoch", 0, "N", K_COUNT, 1, SF_MAX_EPOCH_STEPS, .group = TRAINING,
                             .help = "an epoch is N steps (Keras' steps_per_epoch): the shuffled passes over the "
                                     "training windows follow one another, so an epoch may end inside one or span "
                                     "several; validation and checkpoints come every N steps (default: one pass)"},
    [OPT_VALIDATION_STEPS] = {"validation-steps", 0, "N", K_COUNT, 1, SF_MAX_EPOCH_STEPS, .group = TRAINING,
                              .help = "each validation scores the first N batches of --batch-size validation "
                                      "windows, in order, the same every time (Keras' validation_steps; default: "
                                      "every window)"},
    [OPT_GPUS] = {"gpus", 0, "all|none|0,1", K_TEXT, .group = TRAINING,
                  .help = "GPUs to use, one replica each (the CPU when there is none)"},
    [OPT_PRECISION] = {"precision", 0, "fp32|tf32|bf16", K_CHOICE, .choices = precisions, .group = TRAINING,
                       .help = "matrix products in fp32, TF32 tensor cores (GPUs), or bf16 operands with fp32 "
                               "sums (docs/TRAINING.md; GPUs of compute capability 8.0 and up); default: tf32 on "
                               "GPUs of compute capability 8.0 "
                               "and up, else fp32"},
    [OPT_RNN_ALGO] = {"rnn-algo", 0, "standard|persistent|persistent-small", K_CHOICE, .choices = rnn_algos,
                      .group = TRAINING,
                      .help = "GPUs in fp32 or tf32: cuDNN's LSTM recurrence, a kernel per step or one "
                              "persistent kernel that keeps the weights on chip (fast at small batches; "
                              "persistent-small for small hidden sizes; bf16 runs seqfeed's own LSTM)"},
    [OPT_DEFERRED_LOSS] = {"deferred-loss", 0, "on|off", K_CHOICE, .choices = on_off, .group = TRAINING,
                           .help = "GPUs: the host reads each step's loss after queuing its update, which the GPU "
                                   "skips if the loss or a gradient is not finite, so the GPU never waits for the "
                                   "host (off: the host waits for each step's end before the update)"},
    [OPT_CUDA_GRAPH] = {"cuda-graph", 0, "on|off", K_CHOICE, .choices = on_off, .group = TRAINING,
                        .help = "GPUs, with --deferred-loss on: each full batch's whole step (forward, backward, "
                                "all-reduce, update) replays one CUDA graph, a launch instead of a thousand "
                                "(off: each call queued on streams)"},
    [OPT_OVERLAP_REDUCE] = {"overlap-reduce", 0, "on|off", K_CHOICE, .choices = on_off, .group = TRAINING,
                            .help = "the gradients' sum across GPUs (NCCL) or MPI ranks starts a layer at a time, "
                                    "top first, while the backward pass goes on below (off: one sum after it)"},
    [OPT_MEMORY_BUDGET] = {"memory-budget", 0, "MB", K_REAL, .rlo = 0.001, .rhi = 1e9,
                           .group = TRAINING,
                           .help = "host memory for the replicas and the pipeline: the shuffle pool shrinks to "
                                   "fit (default: no budget)"},
    [OPT_EARLY_STOP] = {"early-stop", 0, "N", K_COUNT, 1, UINT64_MAX >> 1, .group = TRAINING,
                        .help = "stop when val_loss has not improved for N evaluations (epoch ends) in a row; "
                                "DIR/best.safetensors keeps the best epoch either way (default: train every epoch)"},
    [OPT_FOLDS] = {"folds", 0, "K", K_COUNT, 0, SF_MAX_FOLDS, .group = TRAINING,
                   .help = "cross-validation: K models on expanding time splits of every series (TimeSeriesSplit), "
                           "fold k trained on the first k of K + 1 parts and validated on the next; checkpoints in "
                           "DIR/fold-k, the summary (each fold's --loss next to the baselines') in DIR/folds.json "
                           "(default: one validation tail, --val-split)"},
    [OPT_MIN_DELTA] = {"min-delta", 0, "D", K_REAL, .rlo = 0, .rhi = 1e9, .group = TRAINING,
                       .help = "an improvement of val_loss by less than this is none (--early-stop, --lr-schedule "
                               "plateau)"},
    [OPT_POOL] = {"pool", 0, "N", K_COUNT, 0, UINT64_MAX >> 8, .group = PIPELINE,
                  .help = "shuffle pool of the job, in windows, shared among the global batch's parts (0 or 1: no "
                          "shuffle; never tuned: it decides the batches)"},
    [OPT_LANES] = {"lanes", 0, "N", K_COUNT, 1, 64, .group = PIPELINE,
                   .help = "windower threads per replica, each cutting some of its parts of the global batch (the "
                           "batches do not depend on it)"},
    [OPT_BLOCK_CHUNKS] = {"block-chunks", 0, "N", K_COUNT, 1, 1u << 20, .group = PIPELINE,
                          .help = "chunks per block, the unit of reading and shuffling (never tuned: it decides the "
                                  "batches)"},
    [OPT_DECODERS] = {"decoders", 0, "N", K_COUNT, 1, 256, .group = PIPELINE,
                      .help = "decoder threads"},
    [OPT_PREFETCH] = {"prefetch", 0, "N", K_COUNT, 1, 1024, .group = PIPELINE,
                      .help = "decoded blocks queued per lane, shared among its parts (two each at least)"},
    [OPT_SLOTS] = {"slots", 0, "N", K_COUNT, 2, 1024, .group = PIPELINE,
                   .help = "staging slots per replica (batches ready or being copied)"},
    [OPT_DEPTH] = {"depth", 0, "N", K_COUNT, 1, 1024, .group = PIPELINE, .help = "reads in flight"},
    [OPT_IO] = {"io", 0, "auto|uring|pread", K_CHOICE, .choices = ios, .group = PIPELINE,
                .help = "how the file is read (auto: io_uring when the kernel allows it)"},
    [OPT_DIRECT] = {"direct", 0, "auto|on|off", K_CHOICE, .choices = directs, .group = PIPELINE,
                    .help = "O_DIRECT reads, past the page cache"},
    [OPT_PIPELINE] = {"pipeline", 0, "auto|fixed", K_CHOICE, .choices = pipelines, .group = PIPELINE,
                      .help = "auto: --decoders, --prefetch, --slots and --depth are chosen at start and while the "
                              "run goes (when the consumer waits, or its step changes) to keep the input wait under "
                              "0.5% of the step with the least threads and memory, within --memory-budget and the "
                              "cores the replicas leave; one given explicitly is kept as given; a line says each "
                              "choice and why (docs/PIPELINE.md). --pool, --block-chunks and --lanes are never "
                              "tuned. fixed: every knob at its value or default"},
    [OPT_CHECKPOINT_DIR] = {"checkpoint-dir", 0, "DIR", K_TEXT, .group = RUN,
                            .help = "latest.safetensors (and epoch-NNNN.safetensors) written there (default: "
                                    "runs/YYYYmmdd-HHMMSS)"},
    [OPT_CHECKPOINT_EVERY] = {"checkpoint-every", 0, "N", K_COUNT, 1, UINT64_MAX, .group = RUN,
                              .help = "also every N steps (default: at epoch ends only)"},
    [OPT_RESUME] = {"resume", 0, NULL, K_FLAG, .group = RUN,
                    .help = "continue from DIR/latest.safetensors exactly where it stopped, with the run's "
                            "settings from it: --checkpoint-dir alone is enough"},
    [OPT_LOG] = {"log", 0, "FILE", K_TEXT, .group = RUN,
                 .help = "CSV, a row per epoch (and per --log-every steps): epoch,loss,val_loss,samples_per_s,"
                         "input_wait,step,seconds,lr (docs/TRAINING.md)"},
    [OPT_LOG_EVERY] = {"log-every", 0, "N", K_COUNT, 1, SF_MAX_EPOCH_STEPS, .group = RUN,
                       .help = "a --log row (and off a terminal a progress line) every N steps between epoch ends "
                               "too, with an empty val_loss (default: every 1000 steps when an epoch has more "
                               "than 10000, else none); a run that stops inside an epoch logs a row there"},
    [OPT_TRACE] = {"trace", 0, "FILE", K_TEXT, .group = RUN,
                   .help = "a Chrome trace (Perfetto, chrome://tracing): a track per pipeline thread and per "
                           "replica, a span per read, decode, batch, input wait, forward+backward, all-reduce, "
                           "update"},
    [OPT_REPORT] = {"report", 0, "FILE", K_TEXT, .group = RUN,
                    .help = "one self-contained HTML page: step time by phase over the run, stage utilisation, "
                            "the diagnosis, the settings"},
    [OPT_TENSORBOARD] = {"tensorboard", 0, "DIR", K_TEXT, .group = RUN,
                         .help = "TensorBoard event files of the --log rows, as Keras' TensorBoard callback writes "
                                 "them: DIR/train (batch_* scalars every logged step, epoch_* every epoch: loss, "
                                 "learning_rate, samples_per_s, input_wait) and DIR/validation (epoch_loss), the runs "
                                 "TensorBoard shows given DIR (docs/TRAINING.md)"},
    [OPT_COLLECTIVE_TIMEOUT] = {"collective-timeout", 0, "S", K_REAL, .rlo = 1, .rhi = 1e7, .group = RUN,
                                .help = "under a launcher: a rank that waits S seconds for the others (one died "
                                        "or hangs) ends the job"},
    [OPT_STEPS] = {"steps", 0, "N", K_COUNT, 1, 1u << 30, .group = BENCH, .help = "timed steps per run"},
    [OPT_WARMUP] = {"warmup", 0, "N", K_COUNT, 0, 1u << 30, .group = BENCH, .help = "untimed steps first"},
    [OPT_CONSUME_RATE] = {"consume-rate", 0, "N", K_REAL, .rlo = 0.01, .rhi = 1e9, .group = BENCH,
                          .help = "each consumer spends 1/N s on every batch, off the CPU like a GPU step, and "
                                  "the stalls are measured (default: takes them as fast as it can, raw throughput "
                                  "and no stall figure)"},
    [OPT_TARGET_LOSS] = {"target-loss", 0, "L|best+P%", K_TEXT, .group = BENCH,
                         .help = "time to a good model: steps and seconds until val_loss, scored on the whole "
                                 "validation part at each evaluation, is at or below L, or P% above the best "
                                 "val_loss of the first replica count's run at the per-replica batch"},
    [OPT_GRID] = {"grid", 0, "SECONDS", K_REAL, .rlo = 0.1, .rhi = 3600, .group = BENCH,
                  .help = "compare --pipeline auto with every setting of a grid over the knobs it tunes (--decoders "
                          "1 to the cores it may use, --prefetch, --slots and --depth each 2 or 8; a knob given stays "
                          "as given; with --memory-budget, only the settings within it), each run SECONDS long; then auto "
                          "and the grid's leaders in 5 interleaved rounds: auto's windows/s as a share of the best "
                          "setting's, the median of the rounds' ratios [least-most], when it settled, and with "
                          "--consume-rate their input waits"},
    [OPT_COLUMNS] = {"columns", 0, "a,b,c", K_TEXT, .group = PACKING, .help = "keep only these columns, in this order; a name with a comma in quotes, as in CSV: '\"rate,1y\",b'"},
    [OPT_DROP_COLUMNS] = {"drop-columns", 0, "x,y", K_TEXT, .group = PACKING, .help = "leave these columns out, quoted as --columns"},
    [OPT_SERIES_COLUMN] = {"series-column", 0, "NAME|none", K_TEXT, .group = PACKING,
                           .help = "rows with the same value of NAME form one series, in the order of the file (they "
                                   "need not be contiguous: pack regroups them); NAME is not stored as a feature; "
                                   "none: the rows are one series (default: one series; pack stops, or warns, where a "
                                   "column of integers looks like series ids)"},
    [OPT_SERIES_PER_FILE] = {"series-per-file", 0, NULL, K_FLAG, .group = PACKING,
                             .help = "each input file is its own series, named after the file without its directory "
                                     "and extension (not with --series-column)"},
    [OPT_TIME_COLUMN] = {"time-column", 0, "NAME|none", K_TEXT, .group = PACKING,
                         .help = "the time of each row, stored exactly and never as a feature: ISO-8601 dates and "
                                 "times, or integers with --time-unit; never going back within a series (default: "
                                 "the first column whose first value is an ISO-8601 time)"},
    [OPT_CATEGORICAL] = {"categorical", 0, "a,b", K_TEXT, .group = PACKING,
                         .help = "text columns of a few distinct values (at most 1024), stored as categories: train "
                                 "gives the model one input per value (one-hot)"},
    [OPT_TIME_UNIT] = {"time-unit", 0, "s|ms|us|ns", K_CHOICE, .choices = time_units, .group = PACKING,
                       .help = "the --time-column holds integer counts of this unit since 1970-01-01T00:00Z"},
    [OPT_DELIMITER] = {"delimiter", 0, "C", K_TEXT, .group = PACKING,
                       .help = "',', ';', 'tab' or any single character (default: detected from the header)"},
    [OPT_MISSING] = {"missing", 0, "error|drop|ffill", K_CHOICE, .choices = missings, .group = PACKING,
                     .help = "empty, NA, NaN or inf values: an error, drop the row, or repeat the series' "
                             "previous value (recorded as imputed: never scored or shown as observed)"},
    [OPT_ROWS] = {"rows", 0, "N", K_COUNT, 1, UINT64_MAX >> 8, .group = PACKING, .help = "rows in all"},
    [OPT_FEATURE_COUNT] = {"feature-count", 0, "N", K_COUNT, 1, SF_PACK_MAX_COLS, .group = PACKING,
                           .help = "columns, named f0, f1, ..."},
    [OPT_SERIES_COUNT] = {"series-count", 0, "N", K_COUNT, 1, U32, .group = PACKING,
                          .help = "series, named s0, s1, ..."},
    [OPT_LEVEL] = {"level", 0, "N", K_INT, .group = PACKING, .help = "zstd level (see docs/FORMAT.md)"},
    [OPT_CHUNK_ROWS] = {"chunk-rows", 0, "N", K_COUNT, 1, U32, .group = PACKING,
                        .help = "rows per chunk (default: 1 MiB of float32)"},
    [OPT_FILTER] = {"filter", 0, "NAME", K_CHOICE, .choices = filters, .group = PACKING,
                    .help = "delta-shuffle, shuffle or none"},
    [OPT_THREADS] = {"threads", 0, "N", K_COUNT, 1, 256, .group = PACKING,
                     .help = "from 2 on, a second thread parses the CSV; with 2 the parsing threads compress the chunks they fill, "
                             "with more N threads compress them (default: all cores)"},
    [OPT_APPEND_TO] = {"append-to", 0, "FILE.sfpack", K_TEXT, .group = PACKING,
                       .help = "add the CSV's rows to FILE (same columns): after each series' last row, new series "
                               "last; FILE keeps its layout and is replaced only once the new file is complete"},
    [OPT_FORMAT] = {"format", 0, "keras|keras-weights", K_CHOICE, .choices = export_formats, .group = OUTPUT,
                    .help = "keras: a .keras model; keras-weights: its .weights.h5 alone"},
    [OPT_JSON] = {"json", 0, NULL, K_FLAG, .group = OUTPUT, .help = "one JSON object instead of text"},
    [OPT_ALL_SERIES] = {"all-series", 0, NULL, K_FLAG, .group = OUTPUT, .help = "list every series, not the first 10"},
    [OPT_WITH_ACTUAL] = {"with-actual", 0, NULL, K_FLAG, .group = OUTPUT,
                         .help = "also each target's true value, as column NAME beside NAME_pred"},
    [OPT_QUIET] = {"quiet", 'q', NULL, K_FLAG, .group = OUTPUT,
                   .help = "no progress or summary lines: results and errors only"},
    [OPT_HELP] = {"help", 'h', NULL, K_FLAG, .group = OUTPUT, .help = "this text"},
};

const char *cli_opt_name(cli_opt o) { return options[o].name; }

// The range of an option's value, in words; many: a list of them.
static void range_text(const option *op, bool many, char *buf, size_t n) {
    if (op->k == K_COUNT || op->k == K_COUNTS) {
        const char *what = many ? "integers" : "an integer", *list = many ? ", comma-separated" : "";
        snprintf(buf, n, "%s from %" PRIu64 " to %" PRIu64 "%s", what, op->lo, op->hi, list);
        if (many) snprintf(buf + strlen(buf), n - strlen(buf), ", at most %d of them", CLI_MAX_LIST);
    } else if (op->k == K_RANGE) {
        snprintf(buf, n, "an integer from %" PRIu64 " to %" PRIu64 ", or a range A-B of them with A <= B and at most "
                 "%u steps (B - A + 1)", op->lo, op->hi, SF_MAX_STEPS);
    } else if (op->k == K_INT) {
        snprintf(buf, n, "an integer from %d to %d", ZSTD_minCLevel(), ZSTD_maxCLevel());
    } else if (op->k == K_REAL) {
        snprintf(buf, n, "a number %s %g %s %g", op->rlo_open ? "above" : "from", op->rlo,
                 op->rhi_open ? "to below" : op->rlo_open ? "and up to" : "to", op->rhi);
    } else if (op->k == K_DURATION) {
        snprintf(buf, n, "a duration: a number above 0 and a unit (ns, us, ms, s, min, h, d or w), such as 2h");
    } else if (op->k == K_CHOICE) {
        size_t k = (size_t)snprintf(buf, n, "one of");
        for (int i = 0; op->choices[i] && k < n; i++)
            k += (size_t)snprintf(buf + k, n - k, "%s %s", i ? "," : "", op->choices[i]);
    } else {
        snprintf(buf, n, "a value that is not empty");
    }
}

static bool parse_count(const char *s, uint64_t lo, uint64_t hi, uint64_t *out) {
    if (!s || *s < '0' || *s > '9') return false;  // strtoull would take spaces and signs
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v < lo || v > hi) return false;
    *out = v;
    return true;
}

// Parses text as op says into *v; false when it is not a value of op.
static bool parse_value(const option *op, const char *text, cli_value *v) {
    v->text = text;
    switch (op->k) {
    case K_FLAG: return true;
    case K_TEXT: return *text != 0;
    case K_COUNT: return parse_count(text, op->lo, op->hi, &v->u);
    case K_RANGE: {
        char buf[64];
        size_t len = strcspn(text, "-");
        v->n = 1;
        if (!text[len]) return parse_count(text, op->lo, op->hi, &v->u) && (v->list[0] = v->list[1] = v->u, true);
        if (len == 0 || len >= sizeof buf) return false;
        memcpy(buf, text, len);
        buf[len] = 0;
        v->n = 2;
        return parse_count(buf, op->lo, op->hi, &v->list[0]) && parse_count(text + len + 1, op->lo, op->hi, &v->list[1]) &&
               v->list[0] <= v->list[1] && v->list[1] - v->list[0] < SF_MAX_STEPS && (v->u = v->list[1], true);
    }
    case K_COUNTS: {
        v->n = 0;
        for (const char *p = text;;) {
            char buf[64];
            size_t len = strcspn(p, ",");
            if (len == 0 || len >= sizeof buf || v->n == CLI_MAX_LIST) return false;
            memcpy(buf, p, len);
            buf[len] = 0;
            if (!parse_count(buf, op->lo, op->hi, &v->list[v->n++])) return false;
            if (!p[len]) break;
            p += len + 1;
        }
        v->u = v->list[0];
        return true;
    }
    case K_INT: {
        char *end;
        errno = 0;
        long x = strtol(text, &end, 10);
        if (errno || end == text || *end || x < ZSTD_minCLevel() || x > ZSTD_maxCLevel()) return false;
        v->i = x;
        return true;
    }
    case K_REAL: {
        char *end;
        double x = strtod(text, &end);
        if (end == text || *end || !(op->rlo_open ? x > op->rlo : x >= op->rlo) ||
            !(op->rhi_open ? x < op->rhi : x <= op->rhi))
            return false;
        v->real = x;
        return true;
    }
    case K_DURATION: return sf_duration_parse(text, &v->real) == 0;
    case K_CHOICE:
        for (int i = 0; op->choices[i]; i++)
            if (!strcmp(text, op->choices[i])) {
                v->choice = i;
                return true;
            }
        return false;
    }
    return false;
}

// The command's use of option o, or NULL when it does not take it.
static const cli_use *use_of(const cli_command *c, cli_opt o) {
    for (const cli_use *u = c->uses; u->opt != OPT_COUNT; u++)
        if (u->opt == o) return u;
    return NULL;
}

// The option arg names (a "--name", "--name=value", "-q" or "-o"), or
// OPT_COUNT.
static cli_opt lookup(const char *arg, const char **inline_value) {
    *inline_value = NULL;
    if (arg[1] != '-') {
        for (int o = 0; o < OPT_COUNT; o++)
            if (options[o].letter && arg[1] == options[o].letter && !arg[2]) return (cli_opt)o;
        return OPT_COUNT;
    }
    const char *name = arg + 2, *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    for (int o = 0; o < OPT_COUNT; o++)
        if (strlen(options[o].name) == len && !strncmp(options[o].name, name, len)) {
            if (eq) *inline_value = eq + 1;
            return (cli_opt)o;
        }
    return OPT_COUNT;
}


static const cli_opt output_opts[] = {OPT_OUTPUT, OPT_LOG, OPT_TRACE, OPT_REPORT};

// Whether path, as named, is a file train writes in the checkpoint
// directory dir (latest.safetensors, best.safetensors,
// epoch-NNNN.safetensors, seqfeed.lock).
static bool named_run_file(const char *path, const char *dir) {
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    bool ours = sf_checkpoint_run_file(base) || !strcmp(base, "seqfeed.lock");
    if (!ours) return false;
    char *parent = strndup(path, slash ? (size_t)(slash - path) : 0);
    struct stat a, b;
    bool same = parent && stat(*parent ? parent : (slash ? "/" : "."), &a) == 0 && stat(dir, &b) == 0 &&
                a.st_dev == b.st_dev && a.st_ino == b.st_ino;
    free(parent);
    return same;
}

// Whether writing path would write one of those files of dir: by its name,
// or through a symbolic link, to a run file that exists (any name reaches
// it) or to the name of one that does not yet.
static bool checkpoint_file(const char *path, const char *dir) {
    if (named_run_file(path, dir)) return true;
    struct stat st;
    if (stat(path, &st) == 0) {
        DIR *d = opendir(dir);
        bool same = false;
        for (struct dirent *ent; d && !same && (ent = readdir(d));) {
            struct stat r;
            same = (sf_checkpoint_run_file(ent->d_name) || !strcmp(ent->d_name, "seqfeed.lock")) &&
                   fstatat(dirfd(d), ent->d_name, &r, 0) == 0 && r.st_dev == st.st_dev && r.st_ino == st.st_ino;
        }
        if (d) closedir(d);
        return same;
    }
    // A dangling link, perhaps to another: each name along the chain, as
    // far as the kernel follows one (40 links).
    char at[2 * PATH_MAX], target[PATH_MAX], joined[2 * PATH_MAX];
    snprintf(at, sizeof at, "%s", path);
    for (int hops = 0; hops < 40; hops++) {
        ssize_t n = readlink(at, target, sizeof target - 1);
        if (n <= 0) return false;
        target[n] = 0;
        const char *slash = strrchr(at, '/');
        if (target[0] == '/' || !slash) snprintf(joined, sizeof joined, "%s", target);
        else snprintf(joined, sizeof joined, "%.*s/%s", (int)(slash - at), at, target);
        if (named_run_file(joined, dir)) return true;
        memcpy(at, joined, sizeof at);
    }
    return false;
}

// A file the command writes must be one it can write, and none may be one
// it reads or another of its outputs: that file would be destroyed.
// Checked before any work, so that a long run does not fail at its end.
// Only regular files count as the same: /dev/stdout and /dev/stdin may well
// be one terminal.
static int check_files(const cli_command *c, const cli_args *a) {
    struct { const char *name, *path; } seen[2 + sizeof output_opts / sizeof *output_opts] = {
        {"data", a->v[OPT_DATA].set ? a->v[OPT_DATA].text : a->positional},
        {"checkpoint", a->v[OPT_CHECKPOINT].text}};
    size_t nseen = 2;
    // Every command may write stdout (results, -o -): redirected into a
    // file (>> input), that file must not be an input.
    struct stat so, si;
    for (size_t i = 0; i < 2 && fstat(STDOUT_FILENO, &so) == 0 && S_ISREG(so.st_mode); i++)
        if (seen[i].path && stat(seen[i].path, &si) == 0 && si.st_dev == so.st_dev && si.st_ino == so.st_ino)
            return cli_usage_error(c->name, "standard output is the file --%s %s: writing would destroy it; "
                                   "redirect it to another file", seen[i].name, seen[i].path);
    for (size_t k = 0; k < sizeof output_opts / sizeof *output_opts; k++) {
        const cli_value *v = &a->v[output_opts[k]];
        const char *name = options[output_opts[k]].name;
        if (!v->set || !strcmp(v->text, "-")) continue;
        struct stat st;
        bool exists = stat(v->text, &st) == 0;
        if (exists && S_ISDIR(st.st_mode))
            return cli_usage_error(c->name, "--%s %s is a directory: expected a file to write", name, v->text);
        for (size_t i = 0; i < nseen; i++) {
            struct stat si;
            if (!seen[i].path) continue;
            bool same = exists ? S_ISREG(st.st_mode) && stat(seen[i].path, &si) == 0 && si.st_dev == st.st_dev &&
                                     si.st_ino == st.st_ino
                               : !strcmp(seen[i].path, v->text);
            if (same)
                return cli_usage_error(c->name, "--%s %s is the same file as --%s %s: one would destroy the other; "
                                       "write to another file", name, v->text, seen[i].name, seen[i].path);
        }
        if (a->v[OPT_CHECKPOINT_DIR].set && checkpoint_file(v->text, a->v[OPT_CHECKPOINT_DIR].text))
            return cli_usage_error(c->name, "--%s %s is a file train writes in --checkpoint-dir %s: write to another "
                                   "file", name, v->text, a->v[OPT_CHECKPOINT_DIR].text);
        // A run's directory as --checkpoint: its files are the checkpoints read.
        if (a->v[OPT_CHECKPOINT].set && checkpoint_file(v->text, a->v[OPT_CHECKPOINT].text))
            return cli_usage_error(c->name, "--%s %s is a checkpoint of the run's directory --checkpoint %s: write to "
                                   "another file", name, v->text, a->v[OPT_CHECKPOINT].text);
        if (!exists) {  // its folder must take new files
            char *dir = strdup(v->text), *slash = dir ? strrchr(dir, '/') : NULL;
            const char *d = !slash ? "." : slash == dir ? "/" : (*slash = 0, dir);
            int err = !dir ? ENOMEM : access(d, W_OK | X_OK) ? errno : 0;
            int rc = err ? cli_usage_error(c->name, "--%s %s: cannot create a file in %s: %s", name, v->text, d,
                                           strerror(err))
                         : 0;
            free(dir);
            if (rc) return rc;
        }
        seen[nseen].name = name, seen[nseen++].path = v->text;
    }
    // --tensorboard DIR is a directory train creates, or adds files to.
    const char *tb = a->v[OPT_TENSORBOARD].set ? a->v[OPT_TENSORBOARD].text : NULL;
    struct stat st;
    if (tb && stat(tb, &st) == 0 && !S_ISDIR(st.st_mode))
        return cli_usage_error(c->name, "--tensorboard %s is not a directory: expected a directory for TensorBoard's "
                               "event files (created when missing)", tb);
    for (size_t i = 0; tb && i < nseen; i++)
        if (seen[i].path && !strcmp(seen[i].path, tb))
            return cli_usage_error(c->name, "--tensorboard %s is the same path as --%s %s: one would destroy the "
                                   "other; write to another directory", tb, seen[i].name, seen[i].path);
    return 0;
}

int cli_parse(const cli_command *c, int argc, char **argv, cli_args *a) {
    *a = (cli_args){0};
    bool options_end = false;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (options_end || arg[0] != '-' || !arg[1]) {  // "-" is a file: stdin or stdout
            if (!c->positional) return cli_usage_error(c->name, "unexpected argument '%s'", arg);
            if (a->positional && !c->positional_many)
                return cli_usage_error(c->name, "unexpected argument '%s' (one %s only)", arg, c->positional);
            // Slots before i are read: each positional moves to the front, in order.
            if (c->positional_many) argv[1 + a->npositional++] = argv[i], a->positionals = (const char *const *)argv + 1;
            if (!a->positional) a->positional = arg;
            continue;
        }
        if (!strcmp(arg, "--")) {
            options_end = true;
            continue;
        }
        const char *value;
        cli_opt o = lookup(arg, &value);
        if (o == OPT_COUNT && arg[1] != '-' && arg[2] && lookup((char[]){'-', arg[1], 0}, &value) != OPT_COUNT)
            return cli_usage_error(c->name, "unknown option '%s' (a one-letter option takes its value as the next "
                                   "argument: -%c VALUE)", arg, arg[1]);
        if (o == OPT_COUNT || !use_of(c, o)) {
            int len = (int)strcspn(arg, "=");
            // A user repeating train's flags (--window, --loss, ...) to
            // predict or export: say where those settings come from.
            bool model_setting =
                o != OPT_COUNT && (!strcmp(options[o].group, DATA) || !strcmp(options[o].group, TRAINING));
            if (model_setting && use_of(c, OPT_CHECKPOINT))
                return cli_usage_error(c->name, "unknown option '%.*s' (%s takes the model's settings from the "
                                       "checkpoint train wrote)", len, arg, c->name);
            return cli_usage_error(c->name, "unknown option '%.*s'", len, arg);
        }
        const option *op = &options[o];
        if (op->k == K_FLAG) {
            if (value) return cli_usage_error(c->name, "--%s takes no value", op->name);
            value = arg;
        } else if (!value) {
            if (i + 1 >= argc) {
                char range[160];
                range_text(op, use_of(c, o)->many, range, sizeof range);
                return cli_usage_error(c->name, "--%s needs a value: %s", op->name, range);
            }
            value = argv[++i];
        }
        if (o == OPT_HELP) {
            cli_help(c, stdout);
            return -1;
        }
        // A value given twice is a contradiction the user did not see (--data
        // a --data b trained on b alone): which one was meant is theirs to say.
        if (a->v[o].set && op->k != K_FLAG)
            return cli_usage_error(c->name, "--%s is given twice (%s, then %s): give it once", op->name,
                                   a->v[o].text, value);
        if (!parse_value(op, value, &a->v[o])) {
            char range[160];
            range_text(op, use_of(c, o)->many, range, sizeof range);
            return cli_usage_error(c->name, "--%s %s: expected %s", op->name, value, range);
        }
        if (op->k == K_COUNTS && a->v[o].n > 1 && !use_of(c, o)->many)
            return cli_usage_error(c->name, "--%s %s: expected one value (from %" PRIu64 " to %" PRIu64 ")",
                                   op->name, value, op->lo, op->hi);
        a->v[o].set = true;
    }
    return check_files(c, a);
}

const char *cli_data(const cli_command *c, const cli_args *a, int *rc) {
    const cli_value *d = &a->v[OPT_DATA];
    if (d->set && a->positional) {
        *rc = cli_usage_error(c->name, "the data is given twice: --data %s and %s", d->text, a->positional);
        return NULL;
    }
    if (d->set) return d->text;
    if (a->positional) return a->positional;
    *rc = cli_usage_error(c->name, "missing --data %s", c->positional ? c->positional : "FILE.sfpack");
    return NULL;
}

// The library's default of an option, as help shows it ("" when it has none).
static void default_text(cli_opt o, char *buf, size_t n) {
    sf_fit_opts f = sf_fit_opts_default();
    const sf_pipe_opts *p = &f.pipe;
    buf[0] = 0;
    switch (o) {
    case OPT_NORM: snprintf(buf, n, "%s", sf_norm_name(f.norm)); break;
    case OPT_NORM_SCOPE: snprintf(buf, n, "%s", f.norm_series ? "series" : "global"); break;
    case OPT_WINDOW: snprintf(buf, n, "%u", p->window.length); break;
    case OPT_STRIDE: snprintf(buf, n, "%u", p->window.stride); break;
    case OPT_SAMPLING_RATE: snprintf(buf, n, "%u", p->window.sampling_rate); break;
    case OPT_HORIZON: snprintf(buf, n, "%u", p->window.horizon); break;
    case OPT_MODEL: snprintf(buf, n, "%s", f.model); break;
    case OPT_LOSS: sf_loss_format(&f.loss, buf, n); break;
    case OPT_BATCH_SIZE: snprintf(buf, n, "%u", f.batch); break;
    case OPT_EPOCHS: snprintf(buf, n, "%" PRIu64, f.epochs); break;
    case OPT_VAL_SPLIT: snprintf(buf, n, "%g", f.val_split); break;
    case OPT_LR: snprintf(buf, n, "%g", (double)f.adam.lr); break;
    case OPT_LR_SCALING: snprintf(buf, n, "%s", lr_scalings[f.lr_linear]); break;
    case OPT_SEED: snprintf(buf, n, "%" PRIu64, f.seed); break;
    case OPT_LR_SCHEDULE: snprintf(buf, n, "%s", lr_schedules[f.lr_schedule.kind]); break;
    case OPT_WARMUP_STEPS: snprintf(buf, n, "%" PRIu64, f.lr_schedule.warmup_steps); break;
    case OPT_LR_MIN: snprintf(buf, n, "%g", f.lr_schedule.lr_min); break;
    case OPT_LR_FACTOR: snprintf(buf, n, "%g", f.lr_schedule.factor); break;
    case OPT_LR_PATIENCE: snprintf(buf, n, "%" PRIu64, f.lr_schedule.patience); break;
    case OPT_MIN_DELTA: snprintf(buf, n, "%g", f.min_delta); break;
    case OPT_POOL: snprintf(buf, n, "%" PRIu64, p->pool); break;
    case OPT_LANES: snprintf(buf, n, "%u", p->lanes); break;
    case OPT_BLOCK_CHUNKS: snprintf(buf, n, "%u", p->block_chunks); break;
    // Tuned where the pipeline runs autotuned; the fixed value otherwise
    // (no flag named: not every command that takes the knob takes it).
    case OPT_DECODERS: snprintf(buf, n, "tuned as the run goes; one per core when fixed"); break;
    case OPT_PREFETCH: snprintf(buf, n, "tuned as the run goes; %u when fixed", p->prefetch); break;
    case OPT_SLOTS: snprintf(buf, n, "tuned as the run goes; %u when fixed", p->slots); break;
    case OPT_DEPTH: snprintf(buf, n, "tuned as the run goes; %u when fixed", p->io.depth); break;
    case OPT_PIPELINE: snprintf(buf, n, "auto"); break;
    case OPT_IO: snprintf(buf, n, "%s", ios[p->io.io]); break;
    case OPT_DIRECT: snprintf(buf, n, "%s", directs[p->io.direct]); break;
    case OPT_GPUS: snprintf(buf, n, "all"); break;
    case OPT_RNN_ALGO: snprintf(buf, n, "%s", sf_rnn_algo_name(f.rnn_algo)); break;
    case OPT_DEFERRED_LOSS: snprintf(buf, n, "%s", on_off[!f.late_loss]); break;
    case OPT_CUDA_GRAPH: snprintf(buf, n, "%s", on_off[!f.cuda_graph]); break;
    case OPT_OVERLAP_REDUCE: snprintf(buf, n, "%s", on_off[!f.overlap_reduce]); break;
    case OPT_COLLECTIVE_TIMEOUT: snprintf(buf, n, "300"); break;
    case OPT_LEVEL: snprintf(buf, n, "%d", SF_PACK_DEFAULT_LEVEL); break;
    case OPT_FILTER: snprintf(buf, n, "%s", sf_filter_name(SF_FILTER_DELTA_SHUFFLE)); break;
    case OPT_MISSING: snprintf(buf, n, "error"); break;
    default: break;
    }
}

// Prints text from column `at` on (the cursor is at column col), wrapped
// before column 100.
static void wrapped(FILE *f, const char *text, int at, int col) {
    bool first = true;
    for (const char *p = text; *p;) {
        while (*p == ' ') p++;
        size_t word = strcspn(p, " ");
        if (!word) break;
        if (!first && col + 1 + (int)word > 100) {
            fprintf(f, "\n%*s", at, "");
            col = at;
        } else if (!first) {
            fputc(' ', f), col++;
        }
        fprintf(f, "%.*s", (int)word, p);
        col += (int)word, p += word, first = false;
    }
    fputc('\n', f);
}

void cli_help(const cli_command *c, FILE *f) {
    fprintf(f, "usage: seqfeed %s%s%s\n\n%s", c->name, *c->usage ? " " : "", c->usage, c->about);
    const char *group = NULL;
    for (const cli_use *u = c->uses; u->opt != OPT_COUNT; u++) {
        const option *op = &options[u->opt];
        const char *heading = u->group ? u->group : op->group;
        if (!group || strcmp(group, heading)) fprintf(f, "\n%s:\n", heading), group = heading;
        char left[64], def[1024];  // a help text and its default, whole
        int at = 28;
        snprintf(left, sizeof left, "  %c%c%s--%s%s%s", op->letter ? '-' : ' ', op->letter ? op->letter : ' ',
                 op->letter ? ", " : "  ", op->name, op->meta ? " " : "", op->meta ? op->meta : "");
        if ((int)strlen(left) > at - 2) fprintf(f, "%s\n%*s", left, at, "");
        else fprintf(f, "%-*s", at, left);
        int col = at;
        const char *help = u->help ? u->help : op->help;
        if (u->def) snprintf(def, sizeof def, "%s (default %s)", help, u->def);
        else {
            char d[200];
            default_text(u->opt, d, sizeof d);
            if (d[0]) snprintf(def, sizeof def, "%s (default %s)", help, d);
            else snprintf(def, sizeof def, "%s", help);
        }
        wrapped(f, def, at, col);
    }
    if (c->epilog) fprintf(f, "\n%s", c->epilog);
    fputs("\nAn option that takes a value is given once; '--' ends the options.\n", f);
}

void cli_apply_pipe(const cli_args *a, sf_pipe_opts *o) {
    const cli_value *v = a->v;
    if (v[OPT_WINDOW].set) o->window.length = (uint32_t)v[OPT_WINDOW].u;
    if (v[OPT_STRIDE].set) o->window.stride = (uint32_t)v[OPT_STRIDE].u;
    if (v[OPT_SAMPLING_RATE].set) o->window.sampling_rate = (uint32_t)v[OPT_SAMPLING_RATE].u;
    if (v[OPT_HORIZON].set) {
        o->window.horizon = (uint32_t)v[OPT_HORIZON].u;
        o->window.steps = (uint32_t)(v[OPT_HORIZON].list[1] - v[OPT_HORIZON].list[0] + 1);
    }
    if (v[OPT_POOL].set) o->pool = v[OPT_POOL].u;
    if (v[OPT_LANES].set) o->lanes = (uint32_t)v[OPT_LANES].u;
    if (v[OPT_BLOCK_CHUNKS].set) o->block_chunks = (uint32_t)v[OPT_BLOCK_CHUNKS].u;
    if (v[OPT_DECODERS].set) o->decoders = (uint32_t)v[OPT_DECODERS].u;
    if (v[OPT_PREFETCH].set) o->prefetch = (uint32_t)v[OPT_PREFETCH].u;
    if (v[OPT_SLOTS].set) o->slots = (uint32_t)v[OPT_SLOTS].u;
    if (v[OPT_DEPTH].set) o->io.depth = (uint32_t)v[OPT_DEPTH].u;
    if (v[OPT_IO].set) o->io.io = (enum sf_io)v[OPT_IO].choice;
    if (v[OPT_DIRECT].set) o->io.direct = (enum sf_direct)v[OPT_DIRECT].choice;
    o->autotune = !v[OPT_PIPELINE].set || v[OPT_PIPELINE].choice == 0;
    o->fixed = (v[OPT_DECODERS].set ? SF_KNOB_DECODERS : 0) | (v[OPT_PREFETCH].set ? SF_KNOB_PREFETCH : 0) |
               (v[OPT_SLOTS].set ? SF_KNOB_SLOTS : 0) | (v[OPT_DEPTH].set ? SF_KNOB_DEPTH : 0);
    if (v[OPT_SEED].set) o->seed = v[OPT_SEED].u;
    if (v[OPT_EPOCHS].set) o->epochs = v[OPT_EPOCHS].u;
}

void cli_apply_fit(const cli_args *a, sf_fit_opts *o) {
    const cli_value *v = a->v;
    cli_apply_pipe(a, &o->pipe);
    if (v[OPT_DATA].set) o->data = v[OPT_DATA].text;
    if (v[OPT_FEATURES].set) o->features = v[OPT_FEATURES].text;
    if (v[OPT_TARGETS].set) o->targets = v[OPT_TARGETS].text;
    if (v[OPT_NORM].set) o->norm = (enum sf_norm)v[OPT_NORM].choice;
    if (v[OPT_NORM_SCOPE].set) o->norm_series = v[OPT_NORM_SCOPE].choice == 1;
    if (v[OPT_MODEL].set) o->model = v[OPT_MODEL].text;
    if (v[OPT_BATCH_SIZE].set) o->batch = (uint32_t)v[OPT_BATCH_SIZE].u;
    if (v[OPT_REPLICAS].set) o->replicas = (uint32_t)v[OPT_REPLICAS].u;
    if (v[OPT_EPOCHS].set) o->epochs = v[OPT_EPOCHS].u;
    if (v[OPT_SEED].set) o->seed = v[OPT_SEED].u;
    if (v[OPT_VAL_SPLIT].set) o->val_split = v[OPT_VAL_SPLIT].real;
    if (v[OPT_MAX_GAP].set) o->max_gap = v[OPT_MAX_GAP].real;
    if (v[OPT_TIME_FEATURES].set) o->time_features = v[OPT_TIME_FEATURES].text;
    if (v[OPT_FUTURE_FEATURES].set) o->future_features = v[OPT_FUTURE_FEATURES].text;
    if (v[OPT_SERIES_FEATURES].set) o->series_features = v[OPT_SERIES_FEATURES].text;
    if (v[OPT_TARGET].set) o->target_change = v[OPT_TARGET].choice == 1;
    if (v[OPT_LR].set) o->adam.lr = (float)v[OPT_LR].real;
    if (v[OPT_LR_SCALING].set) o->lr_linear = v[OPT_LR_SCALING].choice == 1;
    if (v[OPT_LR_SCHEDULE].set) o->lr_schedule.kind = (enum sf_lr_kind)v[OPT_LR_SCHEDULE].choice;
    if (v[OPT_WARMUP_STEPS].set) o->lr_schedule.warmup_steps = v[OPT_WARMUP_STEPS].u;
    if (v[OPT_LR_MIN].set) o->lr_schedule.lr_min = v[OPT_LR_MIN].real;
    if (v[OPT_LR_FACTOR].set) o->lr_schedule.factor = v[OPT_LR_FACTOR].real;
    if (v[OPT_LR_PATIENCE].set) o->lr_schedule.patience = v[OPT_LR_PATIENCE].u;
    if (v[OPT_MIN_DELTA].set) o->min_delta = v[OPT_MIN_DELTA].real;
    if (v[OPT_MAX_STEPS].set) o->max_steps = v[OPT_MAX_STEPS].u;
    if (v[OPT_EARLY_STOP].set) o->early_stop = v[OPT_EARLY_STOP].u;
    if (v[OPT_FOLDS].set) o->folds = (uint32_t)v[OPT_FOLDS].u;
    if (v[OPT_STEPS_PER_EPOCH].set) o->steps_per_epoch = v[OPT_STEPS_PER_EPOCH].u;
    if (v[OPT_VALIDATION_STEPS].set) o->validation_steps = v[OPT_VALIDATION_STEPS].u;
    if (v[OPT_LOG_EVERY].set) o->log_every = v[OPT_LOG_EVERY].u;
    if (v[OPT_RNN_ALGO].set) o->rnn_algo = (enum sf_rnn_algo)v[OPT_RNN_ALGO].choice;
    if (v[OPT_DEFERRED_LOSS].set) o->late_loss = v[OPT_DEFERRED_LOSS].choice == 0;
    if (v[OPT_CUDA_GRAPH].set) o->cuda_graph = v[OPT_CUDA_GRAPH].choice == 0;
    if (v[OPT_OVERLAP_REDUCE].set) o->overlap_reduce = v[OPT_OVERLAP_REDUCE].choice == 0;
    if (v[OPT_MEMORY_BUDGET].set) o->memory_budget = (uint64_t)(v[OPT_MEMORY_BUDGET].real * 1e6);
    if (v[OPT_CHECKPOINT_DIR].set) o->checkpoint_dir = v[OPT_CHECKPOINT_DIR].text;
    if (v[OPT_CHECKPOINT_EVERY].set) o->checkpoint_every = v[OPT_CHECKPOINT_EVERY].u;
    if (v[OPT_RESUME].set) o->resume = true;
    if (v[OPT_LOG].set) o->log = v[OPT_LOG].text;
    if (v[OPT_TRACE].set) o->trace = v[OPT_TRACE].text;
    if (v[OPT_REPORT].set) o->report = v[OPT_REPORT].text;
    if (v[OPT_TENSORBOARD].set) o->tensorboard = v[OPT_TENSORBOARD].text;
    if (v[OPT_SEASON].set) o->season = (uint32_t)v[OPT_SEASON].u;
    if (v[OPT_QUIET].set) o->progress = false;
}

void cli_apply_writer(const cli_args *a, sf_pack_writer_opts *wo) {
    const cli_value *v = a->v;
    if (v[OPT_LEVEL].set) wo->level = (int)v[OPT_LEVEL].i;
    if (v[OPT_CHUNK_ROWS].set) wo->chunk_rows = (uint32_t)v[OPT_CHUNK_ROWS].u;
    if (v[OPT_THREADS].set) wo->threads = (int)v[OPT_THREADS].u;
}
