// seqfeed: pack time series into .sfpack files, feed them to LSTM replicas.
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} commands[] = {
    {"pack", cmd_pack, "convert a CSV file into an .sfpack file"},
    {"inspect", cmd_inspect, "show an .sfpack file's columns, statistics, series and chunks"},
    {"verify", cmd_verify, "decode every chunk and check every checksum"},
    {"unpack", cmd_unpack, "convert an .sfpack file back into CSV"},
    {"synth", cmd_synth, "write a synthetic .sfpack (random walks and seasons)"},
    {"train", cmd_train, "train the LSTM model on an .sfpack file"},
    {"predict", cmd_predict, "predict every window of a file with a checkpoint"},
    {"evaluate", cmd_evaluate, "a checkpoint's loss on a file, next to two baselines"},
    {"export", cmd_export, "a checkpoint as a Keras 3 model (.keras) or weights file"},
    {"bench", cmd_bench, "benchmarks: bench pipeline | read | train | scaling"},
    {"info", cmd_info, "show the version, the build and the GPUs found"},
};

static void usage(FILE *f) {
    fprintf(f, "usage: seqfeed COMMAND [OPTIONS]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n'seqfeed COMMAND --help' describes a command's options.\n");
}

// OpenBLAS reads two settings from the environment as it loads, before
// main, so the program runs itself again with them when either matters:
// - its pthread build starts a pool of threads, which spin a while before
//   they sleep: CPU taken from every command (pack's CPU time went up 24%).
//   seqfeed never needs the pool (its replicas call BLAS single-threaded
//   from their own threads), so OPENBLAS_NUM_THREADS=1, unless the user
//   chose a number, or the command is bench, whose SGEMM ceiling uses
//   every core;
// - on a CPU it does not know it runs kernels of the SSE era, 4-7x slower
//   (sf_cpu_blas_core), so OPENBLAS_CORETYPE names the CPU's kind, unless
//   the user chose one.
// Under valgrind /proc/self/exe is valgrind's tool, which refuses to run
// alone ("You cannot run ... directly"): there the program carries on as
// loaded. Valgrind preloads its vgpreload_*.so into every program it runs.
static bool under_valgrind(void) {
    const char *preload = getenv("LD_PRELOAD");
    return preload && strstr(preload, "vgpreload");
}

static void blas_environment(char **argv) {
    if (under_valgrind()) return;
    bool pool = !getenv("OPENBLAS_NUM_THREADS") && strcmp(argv[1], "bench");
    const char *core = getenv("OPENBLAS_CORETYPE") ? NULL : sf_cpu_blas_core();
    if (!pool && !core) return;
    if ((!pool || setenv("OPENBLAS_NUM_THREADS", "1", 1) == 0) &&
        (!core || setenv("OPENBLAS_CORETYPE", core, 1) == 0))
        execv("/proc/self/exe", argv);
    if (pool) unsetenv("OPENBLAS_NUM_THREADS");  // no exec: carry on as loaded
    if (core) unsetenv("OPENBLAS_CORETYPE");
}

// oneDNN's f32 GEMM kernels (Debian's libdnnl 2.x; oneDNN issue 4845,
// fixed in 3.12) point rsp at heap memory while they run, so a signal
// handled on a thread inside one writes its frame over the heap: Ctrl-C
// while train scored its validation part aborted the run one time in two
// ("corrupted size vs. prev_size"). So every thread blocks the signals that
// seqfeed handles but one, which only waits: the kernel hands them to it
// and the handlers (installed as before) run there. Threads started later,
// by seqfeed or by its libraries, inherit the blocked mask from main.
static void *signal_home(void *arg) {
    (void)arg;
    for (;;) pause();
    return NULL;
}

static void signals_to_one_thread(void) {
    sigset_t handled;
    sigemptyset(&handled);
    const int sigs[] = CLI_PROCESS_SIGNALS;
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) sigaddset(&handled, sigs[i]);
    pthread_t t;
    // Started first, so that it keeps them unblocked; without it the
    // handlers run wherever the kernel picks, as before.
    if (pthread_create(&t, NULL, signal_home, NULL) != 0) return;
    pthread_detach(t);
    pthread_sigmask(SIG_BLOCK, &handled, NULL);
}

// What a command printed must have reached its destination (a full disk, a
// closed pipe): a lost report is an error, not a success.
static int finish(const char *cmd, int rc) {
    // A command that failed has said why, stdout's write error among them.
    if ((fflush(stdout) == 0 && !ferror(stdout)) || rc) return rc;
    fprintf(stderr, "seqfeed %s: error: <stdout>: write failed: %s\n", cmd, strerror(errno ? errno : EIO));
    return rc ? rc : EXIT_ERR;
}

int main(int argc, char **argv) {
    if (argc >= 2) blas_environment(argv);
    signals_to_one_thread();
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "help") && argc > 2) {  // seqfeed help train: as seqfeed train --help
        for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
            if (!strcmp(argv[2], commands[i].name))
                return finish(argv[2], commands[i].run(2, (char *[]){argv[2], "--help", NULL}));
        fprintf(stderr, "seqfeed: error: unknown command '%s'\n\n", argv[2]);
        usage(stderr);
        return EXIT_USAGE;
    }
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        usage(stdout);
        return finish("help", EXIT_OK);
    }
    if (!strcmp(cmd, "--version")) {
        printf("seqfeed %s\n", SF_VERSION);
        return finish("--version", EXIT_OK);
    }
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        if (!strcmp(cmd, commands[i].name)) return finish(cmd, commands[i].run(argc - 1, argv + 1));
    if (cmd[0] == '-')
        fprintf(stderr, "seqfeed: error: '%s' before the command: options go after it (seqfeed train %s ...)\n\n", cmd,
                cmd);
    else
        fprintf(stderr, "seqfeed: error: unknown command '%s'\n\n", cmd);
    usage(stderr);
    return EXIT_USAGE;
}
