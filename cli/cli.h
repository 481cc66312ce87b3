// cli: the seqfeed program, one git-style command per file (cmd_*.c) over
// one table of options (options.c): one spelling and one meaning for every
// option in every command, the --help of each command printed from the same
// table its parser reads. Exit codes: 0 ok, 1 runtime or data error, 2 usage
// error (an unknown option, a value out of range, an option that cannot
// work with the data), 130 stopped by Ctrl-C, 143 by SIGTERM (train: on
// every rank when any got one).
#ifndef SF_CLI_H
#define SF_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "backend/backend.h"
#include "common/common.h"
#include "pack/pack.h"
#include "train/train.h"

enum { EXIT_OK = 0, EXIT_ERR = 1, EXIT_USAGE = 2, EXIT_INTERRUPTED = 130, EXIT_TERMINATED = 143 };

int cmd_pack(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_unpack(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_synth(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int bench_pipeline(int argc, char **argv);  // seqfeed bench pipeline
int bench_read(int argc, char **argv);      // seqfeed bench read
int bench_train(int argc, char **argv);     // seqfeed bench train
int bench_scaling(int argc, char **argv);   // seqfeed bench scaling
int cmd_train(int argc, char **argv);
int cmd_predict(int argc, char **argv);
int cmd_evaluate(int argc, char **argv);
int cmd_export(int argc, char **argv);

// ---- the options ----

// Every option of every command, in the order their groups appear in help.
typedef enum {
    OPT_DATA, OPT_OUTPUT, OPT_CHECKPOINT,
    // data and model
    OPT_FEATURES, OPT_TARGETS, OPT_TARGET, OPT_NORM, OPT_WINDOW, OPT_STRIDE, OPT_SAMPLING_RATE, OPT_HORIZON, OPT_MAX_GAP, OPT_TIME_FEATURES, OPT_FUTURE_FEATURES, OPT_SERIES_FEATURES, OPT_SPLIT,
    OPT_MODEL,
    OPT_SEASON,
    // training
    OPT_BATCH_SIZE, OPT_REPLICAS, OPT_EPOCHS, OPT_VAL_SPLIT, OPT_LR, OPT_LR_SCALING, OPT_LR_SCHEDULE,
    OPT_WARMUP_STEPS, OPT_LR_MIN, OPT_LR_FACTOR, OPT_LR_PATIENCE, OPT_MIN_DELTA, OPT_SEED, OPT_MAX_STEPS,
    OPT_STEPS_PER_EPOCH, OPT_VALIDATION_STEPS,
    OPT_GPUS, OPT_PRECISION, OPT_RNN_ALGO, OPT_DEFERRED_LOSS, OPT_CUDA_GRAPH, OPT_OVERLAP_REDUCE, OPT_MEMORY_BUDGET,
    OPT_EARLY_STOP, OPT_LOSS, OPT_FOLDS,
    // the pipeline
    OPT_POOL, OPT_LANES, OPT_BLOCK_CHUNKS, OPT_DECODERS, OPT_PREFETCH, OPT_SLOTS, OPT_DEPTH, OPT_IO, OPT_DIRECT, OPT_PIPELINE,
    // files a run writes
    OPT_CHECKPOINT_DIR, OPT_CHECKPOINT_EVERY, OPT_RESUME, OPT_LOG, OPT_LOG_EVERY, OPT_TRACE, OPT_REPORT, OPT_TENSORBOARD, OPT_COLLECTIVE_TIMEOUT,
    // benchmarks
    OPT_STEPS, OPT_WARMUP, OPT_CONSUME_RATE, OPT_TARGET_LOSS, OPT_GRID,
    // packing and synthetic data
    OPT_COLUMNS, OPT_DROP_COLUMNS, OPT_SERIES_COLUMN, OPT_TIME_COLUMN, OPT_TIME_UNIT, OPT_CATEGORICAL, OPT_DELIMITER, OPT_MISSING, OPT_ROWS, OPT_FEATURE_COUNT,
    OPT_SERIES_COUNT, OPT_LEVEL, OPT_CHUNK_ROWS, OPT_FILTER, OPT_THREADS,
    OPT_SERIES_PER_FILE,
    OPT_APPEND_TO,
    // output
    OPT_FORMAT, OPT_JSON, OPT_ALL_SERIES, OPT_WITH_ACTUAL, OPT_QUIET, OPT_HELP,
    OPT_NORM_SCOPE,  // data and model (help follows each command's uses)
    OPT_COUNT
} cli_opt;

enum { CLI_MAX_LIST = 64 };  // values of a comma-separated list of counts

// What the command line gave for one option.
typedef struct {
    bool set;
    const char *text;               // as given (the flag's name for a flag)
    uint64_t u;                     // a count (the first of a list)
    uint64_t list[CLI_MAX_LIST];    // a list of counts, n of them
    uint32_t n;
    int64_t i;                      // an integer
    double real;
    int choice;                     // an index into the option's choices
} cli_value;

typedef struct {
    cli_value v[OPT_COUNT];
    const char *positional;  // the one positional argument, when the command takes one
    // A command of positional_many: every positional argument, in order
    // (argv's own slots, moved to its front), npositional of them.
    const char *const *positionals;
    int npositional;
} cli_args;

// One option as a command uses it: its default as help shows it (NULL:
// the option's own, or none), a help line of the command's (NULL: the
// option's), and whether a list of counts may give several values
// (--batch-size 32,256 in bench train), and the heading of the command's
// help it is listed under (NULL: the option's group).
typedef struct {
    cli_opt opt;
    const char *def;
    const char *help;
    bool many;
    const char *group;
} cli_use;

typedef struct {
    const char *name;      // "train", "bench pipeline"
    const char *usage;     // after "usage: seqfeed NAME "
    const char *about;     // what it does, as paragraphs
    const cli_use *uses;   // its options, ending with {OPT_COUNT}
    const char *positional;  // "FILE.sfpack": a positional argument stands for --data; NULL: none
    const char *epilog;    // after the options (NULL: none)
    bool positional_many;  // several positional arguments (pack's inputs): cli_args.positionals
} cli_command;

// The option's spelling, without the dashes: "batch-size".
const char *cli_opt_name(cli_opt o);
// Parses argv (argv[0] is the command) for c into *a. Returns 0; -1 after
// printing --help to stdout; EXIT_USAGE after printing a usage error that
// names the option and what it accepts.
int cli_parse(const cli_command *c, int argc, char **argv, cli_args *a);
// Prints c's help to f.
void cli_help(const cli_command *c, FILE *f);
// The data file: --data or the positional shorthand; NULL (after a usage
// error, *rc = EXIT_USAGE) when there is none.
const char *cli_data(const cli_command *c, const cli_args *a, int *rc);

// The options of the data, model, training and pipeline groups that a
// command gave, onto the library's option structs (the defaults stay where
// an option was not given).
void cli_apply_pipe(const cli_args *a, sf_pipe_opts *o);
void cli_apply_fit(const cli_args *a, sf_fit_opts *o);
// The writer's options shared by pack and synth: --level, --chunk-rows, --threads.
void cli_apply_writer(const cli_args *a, sf_pack_writer_opts *wo);

// ---- what bench train and bench scaling share (cmd_bench_train.c) ----

// The data and the model, as train takes them.
#define BENCH_FIT_USES                                                                                    \
    {.opt = OPT_DATA, .help = "the .sfpack file (required)"}, {.opt = OPT_FEATURES}, {.opt = OPT_TARGETS}, \
        {.opt = OPT_NORM}, {.opt = OPT_WINDOW}, {.opt = OPT_STRIDE}, {.opt = OPT_SAMPLING_RATE},           \
        {.opt = OPT_HORIZON}, {.opt = OPT_MODEL}
// The devices and how they compute.
#define BENCH_DEVICE_USES                                                                                  \
    {.opt = OPT_GPUS}, {.opt = OPT_PRECISION}, {.opt = OPT_RNN_ALGO}, {.opt = OPT_DEFERRED_LOSS},          \
        {.opt = OPT_CUDA_GRAPH}, {.opt = OPT_OVERLAP_REDUCE}
// The pipeline.
#define BENCH_PIPE_USES                                                                                    \
    {.opt = OPT_POOL}, {.opt = OPT_LANES}, {.opt = OPT_BLOCK_CHUNKS}, {.opt = OPT_DECODERS},               \
        {.opt = OPT_PREFETCH}, {.opt = OPT_SLOTS}, {.opt = OPT_DEPTH}, {.opt = OPT_IO}, {.opt = OPT_DIRECT}, \
        {.opt = OPT_PIPELINE}, {.opt = OPT_MEMORY_BUDGET}

// Short measured runs: every step timed but the warmup, no validation, as
// many epochs as the steps need; the GPUs asked for, the steps.
typedef struct {
    sf_fit_opts o;
    const char *gpus;
    uint64_t steps, warmup;
} bench_runs;
// Parses c's options into *a and *b: 0, -1 after --help, or EXIT_USAGE.
int bench_setup(const cli_command *c, int argc, char **argv, cli_args *a, bench_runs *b);

// ---- output and errors ----

// "seqfeed CMD: error: MSG" (with a hint line when hint is not NULL); returns
// EXIT_ERR, or EXIT_USAGE when e is SF_EUSAGE (an option that cannot work).
int cli_fail(const char *cmd, const sf_err *e, const char *hint);
// Prints a usage error and "see seqfeed CMD --help"; returns EXIT_USAGE.
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

// --checkpoint as given to predict, evaluate and export: a checkpoint file,
// or a run's directory (train's --checkpoint-dir), which stands for its
// best.safetensors when it has one, else its latest.safetensors; a
// directory says on stderr which file it gave and why, unless quiet. 0 and
// the file's path in *path (given itself, or out, of cap bytes), or the
// exit code after a usage error that names the directory.
int cli_checkpoint_path(const char *cmd, const char *given, bool quiet, char *out, size_t cap, const char **path);

// The signals sent to the process that seqfeed handles (Ctrl-C, kill,
// a closed terminal, Ctrl-backslash): main hands them to one waiting
// thread, cli_guard_temp removes a temporary output on them.
#define CLI_PROCESS_SIGNALS {SIGINT, SIGTERM, SIGHUP, SIGQUIT}

// While a temporary output exists, the CLI_PROCESS_SIGNALS and SIGPIPE
// remove it before the program dies. path NULL: nothing to remove any more.
void cli_guard_temp(const char *path);

// A progress line on stderr, only on a terminal and only once the work has
// taken more than a second; redrawn at most 5 times a second; never with quiet.
typedef struct {
    double start, last;
    bool shown, quiet;
} cli_progress;
void cli_progress_start(cli_progress *p, bool quiet);
void cli_progress_line(cli_progress *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cli_progress_end(cli_progress *p);

// Prints s as one CSV field (RFC 4180): quoted, with quotes doubled, when
// it holds anything pack would read differently (a delimiter pack detects,
// a quote, a line break, an edge space) or is empty.
void cli_csv_field(FILE *f, const char *s);

// --gpus all|none|0,2 for cmd: the GPUs chosen (indices into devices, at
// most max) and the GPU backend in *backend; 0 (and one line on stderr
// unless quiet) when the CPU trains; -1 after a usage error.
int cli_choose_gpus(const char *cmd, const char *gpus, int *devices, int max, bool quiet, const sf_backend **backend);
// Whether the ngpus GPUs chosen (0: the CPU) all compute in tf32.
bool cli_tf32_available(const int *devices, int ngpus);
// --precision fp32|tf32|bf16 for cmd, given as text (NULL: not given) for
// the ngpus GPUs chosen (0: the CPU): 0 with *out set (and one line on
// stderr unless quiet when bf16 is emulated), or EXIT_USAGE after a usage
// error that says why the choice cannot work here.
int cli_choose_precision(const char *cmd, const char *text, const int *devices, int ngpus, bool quiet,
                         enum sf_precision *out);

#endif
