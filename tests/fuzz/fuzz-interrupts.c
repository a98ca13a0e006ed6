/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target for the /proc/interrupts parser. The text (after a first byte: the host's CPU
 * count, and whether the file is read with counts) is parsed whole (host_parse_interrupts), with
 * the per-CPU counts and without (which skips the count columns by their fixed width where it
 * can), and read as host discovery reads the file (host_read_interrupts: streamed through a small
 * buffer, line by line, from proc/interrupts in a tree). What must hold: all of them agree (the same IRQs, chips,
 * hardware IRQs and actions, and the same counts where both have them), and the IRQs come
 * sorted. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host-internal.h"
#include "root.h"

static char dir[64];
static Root *root;

static void cleanup(void) {
        char cmd[PATH_MAX + 16];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        (void) system(cmd);
}

static void setup(void) {
        /* tmpfs where there is one: every input rewrites the file. */
        snprintf(dir, sizeof(dir), "%s/rtpart-fuzz-irq-XXXXXX", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
        if (!mkdtemp(dir))
                abort();
        atexit(cleanup);
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/proc", dir);
        if (mkdir(path, 0755) < 0 || root_new(dir, &root) < 0)
                abort();
}

static void check_same(const Host *x, const Host *y, bool counts) {
        if (x->n_irqs != y->n_irqs || x->n_irq_columns != y->n_irq_columns || x->n_irq_columns == 0)
                abort();
        for (size_t i = 0; i < x->n_irqs; i++) {
                const Irq *a = &x->irqs[i], *b = &y->irqs[i];
                if (i > 0 && a->number < x->irqs[i - 1].number)
                        abort();
                if (a->number != b->number || strcmp(a->chip, b->chip) != 0 || strcmp(a->hwirq, b->hwirq) != 0 ||
                    strcmp(a->actions, b->actions) != 0)
                        abort();
                if (strchr(a->chip, '\n') || strchr(a->hwirq, '\n') || strchr(a->actions, '\n'))
                        abort();
                if (counts && (a->total != b->total || memcmp(a->counts, b->counts, x->n_cpu_ids * sizeof(uint64_t))))
                        abort();
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size < 1 || size > 65536)
                return 0;
        if (!root)
                setup();
        _cleanup_free_ char *s = strndup((const char *) data + 1, size - 1);
        _cleanup_(host_freep) Host *a = calloc(1, sizeof(Host)), *b = calloc(1, sizeof(Host)),
                                   *c = calloc(1, sizeof(Host));
        if (!s || !a || !b || !c)
                return 0;
        a->n_cpu_ids = b->n_cpu_ids = c->n_cpu_ids = data[0] % 64;
        bool counts = data[0] & 64;

        int ka = host_parse_interrupts(a, s, /* want_counts= */ false);
        int kb = host_parse_interrupts(b, s, /* want_counts= */ true);
        if (ka != kb)
                abort();
        if (ka >= 0) {
                check_same(a, b, false);
                for (size_t i = 0; i < a->n_irqs; i++)
                        if (a->irqs[i].counts || !b->irqs[i].counts)
                                abort();
        }

        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/proc/interrupts", dir);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        size_t n = strlen(s);
        if (fd < 0 || write(fd, s, n) != (ssize_t) n)
                abort();
        close(fd);
        c->root = root;
        /* A small buffer: lines cross its end, and longer ones make it grow. */
        int kc = host_read_interrupts(c, counts, data[0] & 128 ? 16 : 256);
        if (kc != ka)
                abort();
        if (kc >= 0)
                check_same(counts ? b : a, c, counts);
        return 0;
}
