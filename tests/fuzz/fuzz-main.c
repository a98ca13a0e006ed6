/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Replays a fuzzer corpus without libFuzzer: every file named on the command line, or every file
 * in the directories named, is fed to LLVMFuzzerTestOneInput once. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
        FILE *f = fopen(path, "re");
        if (!f) {
                perror(path);
                return -1;
        }
        static uint8_t buf[1 << 20];
        size_t n = fread(buf, 1, sizeof(buf), f);
        fclose(f);
        LLVMFuzzerTestOneInput(buf, n);
        return 0;
}

int main(int argc, char **argv) {
        unsigned n = 0;
        for (int i = 1; i < argc; i++) {
                struct stat st;
                if (stat(argv[i], &st) < 0) {
                        perror(argv[i]);
                        return 1;
                }
                if (!S_ISDIR(st.st_mode)) {
                        if (run_file(argv[i]) < 0)
                                return 1;
                        n++;
                        continue;
                }
                struct dirent **list;
                int k = scandir(argv[i], &list, NULL, alphasort);
                if (k < 0) {
                        perror(argv[i]);
                        return 1;
                }
                for (int j = 0; j < k; j++) {
                        if (list[j]->d_name[0] != '.') {
                                char path[4096];
                                snprintf(path, sizeof(path), "%s/%s", argv[i], list[j]->d_name);
                                if (run_file(path) < 0)
                                        return 1;
                                n++;
                        }
                        free(list[j]);
                }
                free(list);
        }
        printf("replayed %u inputs\n", n);
        return n > 0 ? 0 : 1;
}
