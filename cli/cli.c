// What every command shares: errors, temporary outputs, progress lines,
// JSON strings, the choice of GPUs.
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int cli_fail(const char *cmd, const sf_err *e, const char *hint) {
    fprintf(stderr, "seqfeed %s: error: %s\n", cmd, e->msg[0] ? e->msg : sf_err_name(e->code));
    if (hint) fprintf(stderr, "hint: %s\n", hint);
    if (e->code != SF_EUSAGE) return EXIT_ERR;
    fprintf(stderr, "see 'seqfeed %s --help'\n", cmd);
    return EXIT_USAGE;
}

int cli_usage_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "seqfeed %s: error: ", cmd);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nsee 'seqfeed %s --help'\n", cmd);
    return EXIT_USAGE;
}

// A metadata value of the checkpoint at path as text ("?" when it cannot be
// read: the command's own read names why).
static void meta_of(const sf_st *s, const char *key, char *out, size_t cap) {
    const char *v = s ? sf_st_meta(s, key) : NULL;
    snprintf(out, cap, "%s", v ? v : "?");
}

int cli_checkpoint_path(const char *cmd, const char *given, bool quiet, char *out, size_t cap, const char **path) {
    struct stat st;
    *path = given;
    if (stat(given, &st) != 0 || !S_ISDIR(st.st_mode)) return 0;  // a file: its read says what is wrong with it
    sf_checkpoint_dir_info info;
    sf_checkpoint_dir_look(given, &info);
    size_t len = strlen(given);
    const char *sep = len && given[len - 1] == '/' ? "" : "/";
    char fold[4200];
    snprintf(fold, sizeof fold, "%s%sfold-1", given, sep);
    if (!info.best && !info.latest && stat(fold, &st) == 0 && S_ISDIR(st.st_mode))
        return cli_usage_error(cmd, "--checkpoint %s holds a cross-validation's folds (train --folds), each a run of "
                               "its own: expected one of them (hint: --checkpoint %s, or another fold; the folds' "
                               "summary is %s%sfolds.json)", given, fold, given, sep);
    if (!info.best && !info.latest) {
        char hint[PATH_MAX + 128];
        snprintf(hint, sizeof hint, info.epochs ? "--checkpoint %s%s%s names the last epoch's" : "seqfeed train "
                 "--data FILE.sfpack --checkpoint-dir %s writes them", given, info.epochs ? sep : "", info.last_epoch);
        return cli_usage_error(cmd, "--checkpoint %s is a directory without best.safetensors or latest.safetensors: "
                               "expected a checkpoint file, or a run's directory that holds one (hint: %s)", given,
                               hint);
    }
    if (snprintf(out, cap, "%s%s%s", given, sep, info.best ? "best.safetensors" : "latest.safetensors") >= (int)cap)
        return cli_usage_error(cmd, "--checkpoint %.64s...: the path is too long", given);
    *path = out;
    if (quiet) return 0;
    sf_st *s = NULL;
    sf_err e = {0};
    if (sf_st_open(&s, out, &e)) return 0;  // the command's own read names why: no line of '?'
    char epoch[32], val[32], step[32];
    meta_of(s, "epoch", epoch, sizeof epoch);
    meta_of(s, info.best ? "best_val_loss" : "epoch_step", info.best ? val : step, info.best ? sizeof val : sizeof step);
    sf_st_close(s);
    if (info.best) {
        char *end;
        double v = strtod(val, &end);
        if (end != val && !*end) snprintf(val, sizeof val, "%.6g", v);
        // A directory with a best alone has no latest to point to.
        fprintf(stderr, "checkpoint: %s, epoch %s, the best val_loss %s (a run's directory gives its best epoch%s%s%s%s)\n",
                out, epoch, val, info.latest ? "; --checkpoint " : "", info.latest ? given : "", info.latest ? sep : "",
                info.latest ? "latest.safetensors gives where it stands" : "");
    } else {
        fprintf(stderr, "checkpoint: %s, epoch %s%s%s%s (the run has no best.safetensors: no epoch with a val_loss has "
                "ended)\n", out, epoch, strcmp(step, "0") ? " and " : "", strcmp(step, "0") ? step : "", strcmp(step, "0") ? " steps" : "");
    }
    return 0;
}

// The path to remove, published with an atomic pointer: the handler may run
// on any thread (BLAS starts threads of its own before main), so blocking
// signals in this one would not keep it from reading half a path. Two
// buffers, so that a new path is written where no handler is reading.
static char guard_buf[2][PATH_MAX];
static _Atomic(const char *) guarded;

static void on_fatal_signal(int sig) {
    static const char msg[] = "\nseqfeed: interrupted; partial output removed\n";
    // The signal stays blocked until the handler returns, so the code it
    // interrupted may run on a moment (another thread's, too): errno as it was.
    int saved_errno = errno;
    const char *path = atomic_load_explicit(&guarded, memory_order_acquire);
    if (path) {
        unlink(path);
        ssize_t ignored = write(2, msg, sizeof msg - 1);
        (void)ignored;
    }
    signal(sig, SIG_DFL);
    raise(sig);
    errno = saved_errno;
}

void cli_guard_temp(const char *path) {
    static bool installed;
    if (!installed) {
        struct sigaction sa = {0};
        sa.sa_handler = on_fatal_signal;
        sigemptyset(&sa.sa_mask);
        // A signal the caller ignores (nohup, background jobs) stays ignored.
        // SIGPIPE: a reader of stdout or stderr gone (`| head`), which ends
        // the program as before, its temporary file removed first.
        const int process[] = CLI_PROCESS_SIGNALS;
        int sigs[sizeof process / sizeof *process + 1];
        memcpy(sigs, process, sizeof process);
        sigs[sizeof process / sizeof *process] = SIGPIPE;
        for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) {
            struct sigaction old;
            if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN) sigaction(sigs[i], &sa, NULL);
        }
        installed = true;
    }
    if (!path) {
        atomic_store_explicit(&guarded, NULL, memory_order_release);
        return;
    }
    char *buf = guard_buf[atomic_load_explicit(&guarded, memory_order_relaxed) == guard_buf[0]];
    snprintf(buf, PATH_MAX, "%s", path);
    atomic_store_explicit(&guarded, buf, memory_order_release);
}

void cli_progress_start(cli_progress *p, bool quiet) { *p = (cli_progress){sf_now(), 0, false, quiet}; }

void cli_progress_line(cli_progress *p, const char *fmt, ...) {
    double now = sf_now();
    if (p->quiet || now - p->start < 1.0 || now - p->last < 0.2 || !isatty(2)) return;
    p->last = now;
    p->shown = true;
    va_list ap;
    va_start(ap, fmt);
    fputs("\r\033[K", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fflush(stderr);
}

void cli_progress_end(cli_progress *p) {
    if (p->shown) fputs("\r\033[K", stderr);
    p->shown = false;
}

void cli_csv_field(FILE *f, const char *s) {
    size_t n = strlen(s);
    if (n && !strpbrk(s, ",;\t\"\r\n") && s[0] != ' ' && s[n - 1] != ' ') {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

bool cli_tf32_available(const int *devices, int ngpus) {
    bool tf32 = ngpus > 0;
    for (int i = 0; i < ngpus; i++) tf32 &= sf_gpu_capability(devices[i]) >= 80;
    return tf32;
}

// --precision (cli.h): TF32 by default on GPUs that have it, as TensorFlow
// does; bf16 on GPUs of compute capability 8.0 and up (bf16 tensor cores),
// and on CPUs where this build and CPU have bf16 products.
int cli_choose_precision(const char *cmd, const char *text, const int *devices, int ngpus, bool quiet,
                         enum sf_precision *out) {
    bool tf32 = cli_tf32_available(devices, ngpus);  // and bf16: both came with compute capability 8.0
    if (!text) {
        *out = tf32 ? SF_PRECISION_TF32 : SF_PRECISION_FP32;
    } else if (!strcmp(text, "fp32")) {
        *out = SF_PRECISION_FP32;
    } else if (!strcmp(text, "tf32")) {
        if (!tf32) return cli_usage_error(cmd, "--precision tf32 needs GPUs of compute capability 8.0 or later");
        *out = SF_PRECISION_TF32;
    } else {
        char what[160];
        if (ngpus > 0 && !tf32)
            return cli_usage_error(cmd, "--precision bf16 needs GPUs of compute capability 8.0 or later (fp32 "
                                   "there; --gpus none computes in bf16 on the CPU)");
        if (ngpus == 0 && !sf_matmul_available(what, sizeof what))
            return cli_usage_error(cmd, "--precision bf16: no bf16 products here (%s); use --precision fp32",
                                   what + strlen("none: "));
        sf_bf16_kind kind = ngpus == 0 && !quiet ? sf_matmul_kind() : SF_BF16_NONE;
        if (kind == SF_BF16_EMULATED)
            fprintf(stderr, "precision: bf16 emulated: this CPU has AVX-512 but no bf16 dot products (correct, "
                    "slower than fp32)\n");
        if (kind == SF_BF16_DOT)  // one instruction per cycle, fp32's FMAs two
            fprintf(stderr, "precision: bf16 on AVX512_BF16 dot products, without AMX: measured slower than fp32 "
                    "(0.6x its samples/s on Emerald Rapids); seqfeed bench train --precision fp32, then bf16, "
                    "compares them here\n");
        *out = SF_PRECISION_BF16;
    }
    return 0;
}

// --gpus: which GPUs train, one replica each (cli.h). Without a usable GPU, or with
// --gpus none, one line says so and the CPU trains (exit status unchanged).
// Returns the number of GPUs chosen (their indices in devices, the GPU
// backend in *backend), 0 for the CPU, or -1 after a usage error.
// What cmd does on the device it was given, for the line that names it.
static const char *gpu_verb(const char *cmd) {
    return !strcmp(cmd, "predict") ? "predicting" : !strcmp(cmd, "evaluate") ? "evaluating" : "training";
}

int cli_choose_gpus(const char *cmd, const char *gpus, int *devices, int max, bool quiet, const sf_backend **backend) {
    sf_err e = {0};
    // The list is checked whatever the machine has, so that a command line
    // that fails on a GPU machine fails everywhere.
    int k = 0;
    bool all = !strcmp(gpus, "all");
    if (strcmp(gpus, "none") && !all) {
        for (const char *p = gpus;; p++) {
            char *end;
            long d = *p >= '0' && *p <= '9' ? strtol(p, &end, 10) : -1;
            bool twice = false;
            for (int i = 0; i < k && d >= 0; i++) twice |= devices[i] == d;
            if (d < 0 || d > 1023 || k == max || twice || (*end && *end != ',')) {
                cli_usage_error(cmd, "--gpus %s: expected all, none or distinct GPU indices, comma-separated%s", gpus,
                                twice ? " (one replica per GPU)" : "");
                return -1;
            }
            devices[k++] = (int)d;
            if (!*end) break;
            p = end;
        }
    }
    if (!strcmp(gpus, "none")) {
        if (!quiet) fprintf(stderr, "gpus: none asked for; %s on CPU\n", gpu_verb(cmd));
        return 0;
    }
    int n = sf_gpu_count(&e);
    if (n > 0 && !(*backend = sf_backend_gpu(&e))) n = 0;
    if (n == 0) {
        if (!quiet) fprintf(stderr, "gpus: none (%s); %s on CPU\n", e.msg, gpu_verb(cmd));
        return 0;
    }
    if (all) {
        for (k = 0; k < n && k < max; k++) devices[k] = k;
    } else {
        for (int i = 0; i < k; i++)
            if (devices[i] >= n) {
                cli_usage_error(cmd, "--gpus %s: GPU %d does not exist (GPUs 0 to %d are)", gpus, devices[i], n - 1);
                return -1;
            }
    }
    if (!quiet) {
        for (int i = 0; i < k; i++) {
            char name[256];
            size_t mem = 0;
            if (sf_gpu_describe(devices[i], name, sizeof name, &mem, &e) == 0)
                fprintf(stderr, "gpu %d: %s, %.0f GiB\n", devices[i], name, (double)mem / (1 << 30));
        }
    }
    return k;
}
