// The seqfeed program: one git-style subcommand per file. Exit codes: 0 ok,
// 1 runtime or data error, 2 usage error, 130 stopped by Ctrl-C (train).
#ifndef SF_CLI_H
#define SF_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "common/common.h"
#include "backend/backend.h"
#include "pack/pack.h"

enum { EXIT_OK = 0, EXIT_ERR = 1, EXIT_USAGE = 2, EXIT_INTERRUPTED = 130 };

int cmd_pack(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_unpack(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_synth(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int bench_train(int argc, char **argv);    // seqfeed bench train
int bench_scaling(int argc, char **argv);  // seqfeed bench scaling
int cmd_train(int argc, char **argv);
int cmd_predict(int argc, char **argv);
int cmd_evaluate(int argc, char **argv);

// "seqfeed CMD: error: MSG" (with a hint line when hint is not NULL); returns
// EXIT_ERR.
int cli_fail(const char *cmd, const sf_err *e, const char *hint);
// Prints a usage error and "see seqfeed CMD --help"; returns EXIT_USAGE.
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

// While a temporary output exists, SIGINT/SIGTERM/SIGHUP remove it before
// the program dies. path NULL: nothing to remove any more.
void cli_guard_temp(const char *path);

// A progress line on stderr, only on a terminal and only once the work has
// taken more than a second; redrawn at most 5 times a second.
typedef struct {
    double start, last;
    bool shown;
} cli_progress;
void cli_progress_start(cli_progress *p);
void cli_progress_line(cli_progress *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cli_progress_end(cli_progress *p);

// Prints s as a JSON string literal.
void cli_json_string(FILE *f, const char *s);
// The .sfpack writer's options shared by pack and synth: --level,
// --chunk-rows, --threads (opt names which). Returns EXIT_OK or prints a
// usage error and returns EXIT_USAGE.
int cli_writer_option(const char *cmd, char which, const char *arg, sf_pack_writer_opts *wo);

// --gpus all|none|0,2 for cmd: the GPUs chosen (indices into devices, at
// most max) and the GPU backend in *backend; 0 (and one line on stderr
// unless quiet) when the CPU trains; -1 after a usage error.
int cli_choose_gpus(const char *cmd, const char *gpus, int *devices, int max, bool quiet, const sf_backend **backend);

// Parses a whole non-negative integer option; false when it is not one.
bool cli_parse_u64(const char *s, uint64_t max, uint64_t *out);

#endif
