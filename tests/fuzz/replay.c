// Runs a fuzz target on saved inputs without libFuzzer, so that the committed
// corpus is an ordinary test in every build (and under the sanitizers).
// Each argument is a file or a directory of files (not recursive; names
// starting with '.' are skipped). Fails when an argument cannot be read or
// when there was nothing to replay.
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

// The input goes into a buffer of exactly its size, so that ASan catches a
// read past it as it would in libFuzzer's own copy.
static int replay_file(const char *path, off_t size) {
    FILE *f = fopen(path, "rb");
    uint8_t *buf = malloc(size ? (size_t)size : 1);
    if (!f || !buf || fread(buf, 1, (size_t)size, f) != (size_t)size) {
        fprintf(stderr, "%s: cannot read\n", path);
        if (f) fclose(f);
        free(buf);
        return -1;
    }
    fclose(f);
    LLVMFuzzerTestOneInput(buf, (size_t)size);
    free(buf);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
        return 2;
    }
    size_t done = 0;
    int failed = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            perror(argv[i]);
            failed = 1;
            continue;
        }
        if (!S_ISDIR(st.st_mode)) {
            if (replay_file(argv[i], st.st_size) != 0) failed = 1;
            else done++;
            continue;
        }
        struct dirent **ents;
        int n = scandir(argv[i], &ents, NULL, alphasort);  // sorted: the same order on every run
        if (n < 0) {
            perror(argv[i]);
            failed = 1;
            continue;
        }
        for (int k = 0; k < n; k++) {
            char path[8192];
            if (ents[k]->d_name[0] != '.') {
                snprintf(path, sizeof path, "%s/%s", argv[i], ents[k]->d_name);
                if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
                    if (replay_file(path, st.st_size) != 0) failed = 1;
                    else done++;
                }
            }
            free(ents[k]);
        }
        free(ents);
    }
    printf("replayed %zu inputs\n", done);
    if (done == 0) {
        fprintf(stderr, "nothing to replay\n");
        return 1;
    }
    return failed;
}
