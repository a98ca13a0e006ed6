/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host-internal.h"
#include "host.h"
#include "interrupts.h"
#include "strv.h"

/* Host discovery, IRQs: /proc/interrupts (or /sys/kernel/irq on large hosts) and each IRQ's
 * affinity. */

static int cmp_uint(const void *a, const void *b) {
        unsigned x = *(const unsigned *) a, y = *(const unsigned *) b;
        return (x > y) - (x < y);
}

static int irq_cmp(const void *a, const void *b) {
        const Irq *x = a, *y = b;
        return x->number < y->number ? -1 : x->number > y->number;
}

static int parse_interrupts_header(Host *h, const char *p, const char *eol) {
        free(h->irq_columns);
        h->irq_columns = NULL;
        h->n_irq_columns = 0;
        return interrupts_header_parse(p, (size_t) (eol - p), &h->irq_columns, &h->n_irq_columns);
}

/* The kernel prints each count column as "%10u ". When every column boundary of the row is where
 * that format puts it, the first column; else (a count of 10+ digits, a short row) NULL. Both
 * parses (with counts and without) take the columns from there, so that they agree on where the
 * chip starts even in a row with something else than digits inside a column. */
static const char *fixed_counts(const char *q, const char *eol, size_t ncols) {
        /* The row starts "%*d: " (6.1) or "%*d:" (6.13+): the columns begin one byte after the
         * colon, or right at it. */
        for (size_t off = 1; off <= 1 && ncols > 0; off--) {
                const char *c0 = q + off, *end = c0 + 11 * ncols;
                if (end > eol)
                        continue;
                bool fixed = true;
                for (size_t c = 0; c < ncols && fixed; c++)
                        fixed = c0[11 * c + 10] == ' ' && isdigit((unsigned char) c0[11 * c + 9]) &&
                                (c0[11 * c] == ' ' || isdigit((unsigned char) c0[11 * c]));
                if (fixed)
                        return c0;
                if (off == 0)
                        break;
        }
        return NULL;
}

/* Skips the count columns: all at once where they are fixed-width, else one by one. */
static const char *skip_counts(const char *q, const char *eol, size_t ncols) {
        const char *c0 = fixed_counts(q, eol, ncols);
        if (c0)
                return c0 + 11 * ncols;
        for (size_t col = 0; col < ncols; col++) {
                while (q < eol && *q == ' ')
                        q++;
                if (q >= eol || !isdigit((unsigned char) *q))
                        break;
                while (q < eol && isdigit((unsigned char) *q))
                        q++;
        }
        return q;
}

static int parse_interrupts_line(Host *h, const char *p, const char *eol, bool want_counts, size_t *cap) {
        const char *q = p;
        while (q < eol && *q == ' ')
                q++;
        if (q >= eol || !isdigit((unsigned char) *q))
                return 0; /* NMI:, LOC:, ERR: … are architecture counters, not IRQs */
        unsigned long num = 0;
        while (q < eol && isdigit((unsigned char) *q))
                num = num * 10 + (unsigned long) (*q++ - '0');
        if (q >= eol || *q != ':')
                return 0;
        q++;

        if (h->n_irqs == *cap) {
                *cap = *cap ? *cap * 2 : 256;
                Irq *n = realloc(h->irqs, *cap * sizeof(Irq));
                if (!n)
                        return -ENOMEM;
                h->irqs = n;
        }
        Irq *irq = &h->irqs[h->n_irqs++];
        *irq = (Irq) { .number = (unsigned) num };

        if (want_counts) {
                /* One count per column; a row may have fewer (some architectures stop early). */
                irq->counts = calloc(MAX(h->n_cpu_ids, 1U), sizeof(uint64_t));
                if (!irq->counts)
                        return -ENOMEM;
                const char *c0 = fixed_counts(q, eol, h->n_irq_columns);
                for (size_t col = 0; col < h->n_irq_columns; col++) {
                        if (c0)
                                q = c0 + 11 * col;
                        while (q < eol && *q == ' ')
                                q++;
                        if (q >= eol || !isdigit((unsigned char) *q))
                                break;
                        uint64_t v = 0;
                        while (q < eol && isdigit((unsigned char) *q))
                                v = v * 10 + (uint64_t) (*q++ - '0');
                        irq->total += v;
                        int cpu = h->irq_columns[col];
                        if (cpu >= 0 && (unsigned) cpu < h->n_cpu_ids)
                                irq->counts[cpu] = v;
                }
                if (c0)
                        q = c0 + 11 * h->n_irq_columns;
        } else
                q = skip_counts(q, eol, h->n_irq_columns);

        /* "  IR-PCI-MSIX-0000:3b:00.0    1-edge      eth1-TxRx-0" */
        while (q < eol && *q == ' ')
                q++;
        const char *c0 = q;
        while (q < eol && *q != ' ' && *q != '\t')
                q++;
        irq->chip = strndup(c0, (size_t) (q - c0));
        while (q < eol && *q == ' ')
                q++;
        const char *h0 = q;
        if (q < eol && isdigit((unsigned char) *q))
                while (q < eol && *q != ' ' && *q != '\t')
                        q++;
        irq->hwirq = strndup(h0, (size_t) (q - h0));
        while (q < eol && (*q == ' ' || *q == '\t'))
                q++;
        const char *e = eol;
        while (e > q && isspace((unsigned char) e[-1]))
                e--;
        irq->actions = strndup(q, (size_t) (e - q));
        if (!irq->chip || !irq->hwirq || !irq->actions)
                return -ENOMEM;
        return 0;
}

int host_parse_interrupts(Host *h, const char *text, bool want_counts) {
        const char *eol = strchrnul(text, '\n');
        size_t cap = 0;
        int k = parse_interrupts_header(h, text, eol);
        if (k < 0)
                return k;
        for (const char *p = *eol ? eol + 1 : eol; *p; p = *eol ? eol + 1 : eol) {
                eol = strchrnul(p, '\n');
                k = parse_interrupts_line(h, p, eol, want_counts, &cap);
                if (k < 0)
                        return k;
        }
        if (h->n_irqs > 0) /* irqs is NULL without IRQs: qsort() must not get NULL */
                qsort(h->irqs, h->n_irqs, sizeof(Irq), irq_cmp);
        return 0;
}

/* Streams /proc/interrupts through a fixed buffer: on a 1024-CPU host the file is ~90 MB, and
 * holding it whole would cost that much memory and as many page faults. */
int host_read_interrupts(Host *h, bool want_counts, size_t bufsize) {
        _cleanup_close_ int fd = root_open(h->root, "proc/interrupts", O_RDONLY, 0);
        size_t len = 0, cap = 0;
        bool header = true;

        if (fd < 0)
                return fd;
        _cleanup_free_ char *buf = malloc(bufsize);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                if (len == bufsize) {
                        /* A single line longer than the buffer: grow. */
                        char *n = realloc(buf, bufsize * 2);
                        if (!n)
                                return -ENOMEM;
                        buf = n;
                        bufsize *= 2;
                }
                ssize_t n = read(fd, buf + len, bufsize - len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                bool eof = n == 0;
                len += (size_t) n;
                const char *p = buf, *end = buf + len;
                for (;;) {
                        const char *eol = memchr(p, '\n', (size_t) (end - p));
                        if (!eol) {
                                if (!eof || p == end)
                                        break;
                                eol = end; /* a last line without newline */
                        }
                        int k = header ? parse_interrupts_header(h, p, eol)
                                       : parse_interrupts_line(h, p, eol, want_counts, &cap);
                        if (k < 0)
                                return k;
                        header = false;
                        p = eol < end ? eol + 1 : eol;
                }
                len = (size_t) (end - p);
                memmove(buf, p, len);
                if (eof)
                        break;
        }
        if (header)
                return -EBADMSG;
        if (h->n_irqs > 0) /* irqs is NULL without IRQs: qsort() must not get NULL */
                qsort(h->irqs, h->n_irqs, sizeof(Irq), irq_cmp);
        return 0;
}

const Irq *host_find_irq(const Host *h, unsigned number) {
        size_t lo = 0, hi = h->n_irqs;
        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (h->irqs[mid].number == number)
                        return &h->irqs[mid];
                if (h->irqs[mid].number < number)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

/* A batch of per-IRQ files at a time: bounded memory for any number of IRQs. */
#define IRQ_BATCH ROOT_BATCH
/* Bytes read at once from sys/kernel/irq/N/actions; a longer list is read again whole. */
#define IRQ_ACTIONS_MAX 512U

static char *irq_actions_spaced(const char *a) {
        size_t commas = 0;
        for (const char *p = a; *p; p++)
                commas += *p == ',';
        char *out = malloc(strlen(a) + commas + 1), *o = out;
        if (!out)
                return NULL;
        for (const char *p = a; *p; p++) {
                *o++ = *p;
                if (*p == ',')
                        *o++ = ' ';
        }
        *o = 0;
        return out;
}

/* The IRQs with a handler, from /sys/kernel/irq/N/actions (Linux 5.2+): one short file per IRQ
 * instead of /proc/interrupts, which has a count column per CPU (93 MB at 1024 CPUs and 8192
 * IRQs) and which the kernel formats anew on every read. The names only: chip and hwirq stay
 * NULL, counts are /proc/interrupts' alone. -ENOENT without the directory. */
static int discover_irqs_sysfs(Host *h) {
        _cleanup_free_ unsigned *numbers = NULL;
        size_t n = 0, cap = 0;
        DIR *d;
        int k;

        k = root_opendir(h->root, "sys/kernel/irq", &d);
        if (k < 0)
                return k;
        for (struct dirent *de; (de = readdir(d));) {
                char *end;
                if (!isdigit((unsigned char) de->d_name[0]))
                        continue;
                errno = 0;
                unsigned long v = strtoul(de->d_name, &end, 10);
                if (errno || *end || v > UINT_MAX)
                        continue;
                if (GROW_ARRAY(numbers, cap, n, 256) < 0) {
                        closedir(d);
                        return -ENOMEM;
                }
                numbers[n++] = (unsigned) v;
        }
        closedir(d);
        if (n == 0)
                return 0;
        qsort(numbers, n, sizeof(unsigned), cmp_uint);

        _cleanup_close_ int dfd = root_open(h->root, "sys/kernel/irq", O_RDONLY | O_DIRECTORY, 0);
        if (dfd < 0)
                return dfd;
        _cleanup_free_ RootReadItem *items = calloc(MIN(n, IRQ_BATCH), sizeof(RootReadItem));
        _cleanup_free_ char *bufs = malloc(MIN(n, IRQ_BATCH) * (IRQ_ACTIONS_MAX + 32));
        if (!items || !bufs)
                return -ENOMEM;
        size_t cap_irqs = 0;
        for (size_t first = 0; first < n; first += IRQ_BATCH) {
                size_t m = MIN(n - first, IRQ_BATCH);
                for (size_t i = 0; i < m; i++) {
                        char *b = bufs + i * (IRQ_ACTIONS_MAX + 32);
                        /* the path first, at the buffer's end; the read lands at its start */
                        char *path = b + IRQ_ACTIONS_MAX;
                        snprintf(path, 32, "%u/actions", numbers[first + i]);
                        items[i] = (RootReadItem) { .rel = path, .buf = b, .size = IRQ_ACTIONS_MAX };
                }
                k = root_read_many(h->root, dfd, items, m);
                if (k < 0)
                        return k;
                for (size_t i = 0; i < m; i++) {
                        if (items[i].result <= 0)
                                continue; /* gone meanwhile, or unreadable: as if not there */
                        char *a = items[i].buf, *e = a + items[i].result;
                        while (e > a && isspace((unsigned char) e[-1]))
                                e--;
                        *e = 0;
                        if (!*a)
                                continue; /* no handler: /proc/interrupts has no row for it either */
                        if (GROW_ARRAY(h->irqs, cap_irqs, h->n_irqs, 256) < 0)
                                return -ENOMEM;
                        _cleanup_free_ char *whole = NULL;
                        if ((size_t) items[i].result >= items[i].size - 1) {
                                /* more handlers than the buffer holds: the whole file */
                                k = root_read_linef(h->root, &whole, "sys/kernel/irq/%u/actions", numbers[first + i]);
                                if (k < 0)
                                        continue;
                                a = whole;
                        }
                        /* "a,b" here; "a, b" in /proc/interrupts, which profiles' patterns and
                         * messages follow */
                        char *actions = irq_actions_spaced(a);
                        if (!actions)
                                return -ENOMEM;
                        h->irqs[h->n_irqs++] = (Irq) { .number = numbers[first + i], .actions = actions };
                }
        }
        return 0;
}

static uint64_t cpu_set_hash(const CpuSet *set) {
        uint64_t h = UINT64_C(1469598103934665603);
        for (size_t i = 0; i < CPU_SET_WORDS; i++)
                h = (h ^ set->bits[i]) * UINT64_C(1099511628211);
        return h;
}

/* The host's copy of set for Irq.affinity: the one kept already, else a new one. Sets are found by
 * a hash of their words; past IRQ_AFFINITIES_SCAN distinct sets (a host whose IRQs nearly all
 * differ) only the last few are looked at, which bounds the search and keeps a copy per IRQ at
 * worst. NULL on ENOMEM. */
#define IRQ_AFFINITIES_SCAN 1024U
static const CpuSet *irq_affinity_intern(Host *h, const CpuSet *set) {
        uint64_t hash = cpu_set_hash(set);
        size_t n = h->n_irq_affinities, from = n > IRQ_AFFINITIES_SCAN ? n - 16 : 0;
        for (size_t i = n; i-- > from;)
                if (h->irq_affinities[i].hash == hash && cpu_set_equal(h->irq_affinities[i].set, set))
                        return h->irq_affinities[i].set;
        if (GROW_ARRAY(h->irq_affinities, h->cap_irq_affinities, n, 16) < 0)
                return NULL;
        CpuSet *copy = malloc(sizeof(CpuSet)); /* its own allocation: Irq.affinity outlives growth */
        if (!copy)
                return NULL;
        *copy = *set;
        h->irq_affinities[h->n_irq_affinities++] = (struct HostIrqAffinity) { .hash = hash, .set = copy };
        return copy;
}

/* Every IRQ's smp_affinity_list (or, on kernels without it, smp_affinity), in batches. */
static int discover_irq_affinities(Host *h) {
        /* "0-1023" or a mask of 1024 CPUs (287 bytes) fits; a longer one is read again whole. */
        enum { BUF = 512, PATH = 48 };
        _cleanup_close_ int dfd = root_open(h->root, "proc/irq", O_RDONLY | O_DIRECTORY, 0);
        if (dfd < 0 || h->n_irqs == 0)
                return 0;
        size_t cap = MIN(h->n_irqs, IRQ_BATCH);
        _cleanup_free_ RootReadItem *items = calloc(cap, sizeof(RootReadItem));
        _cleanup_free_ size_t *which = calloc(cap, sizeof(size_t));
        _cleanup_free_ char *bufs = malloc(cap * (BUF + PATH));
        if (!items || !which || !bufs)
                return -ENOMEM;
        for (size_t first = 0; first < h->n_irqs; first += IRQ_BATCH) {
                size_t m = MIN(h->n_irqs - first, IRQ_BATCH), todo = m;
                for (size_t i = 0; i < m; i++)
                        which[i] = first + i;
                for (bool list = true; todo > 0; list = false) {
                        for (size_t i = 0; i < todo; i++) {
                                char *b = bufs + i * (BUF + PATH);
                                snprintf(b + BUF, PATH, list ? "%u/smp_affinity_list" : "%u/smp_affinity",
                                         h->irqs[which[i]].number);
                                items[i] = (RootReadItem) { .rel = b + BUF, .buf = b, .size = BUF };
                        }
                        int k = root_read_many(h->root, dfd, items, todo);
                        if (k < 0)
                                return k;
                        size_t missing = 0;
                        for (size_t i = 0; i < todo; i++) {
                                Irq *irq = &h->irqs[which[i]];
                                CpuSet set;
                                _cleanup_free_ char *whole = NULL;
                                const char *text = items[i].buf;
                                if (items[i].result >= (ssize_t) BUF - 1) {
                                        int w = root_read_linef(h->root, &whole, "proc/irq/%s", items[i].rel);
                                        if (w == -ENOMEM)
                                                return w;
                                        if (w < 0)
                                                continue; /* gone meanwhile: as if unreadable */
                                        text = whole;
                                }
                                if (items[i].result == -ENOENT && list)
                                        which[missing++] = which[i]; /* no _list: the mask file */
                                else if (items[i].result >= 0 &&
                                         (list ? cpu_set_parse_list(text, &set, NULL)
                                               : cpu_set_parse_mask(text, &set, NULL)) >= 0) {
                                        irq->affinity = irq_affinity_intern(h, &set);
                                        if (!irq->affinity)
                                                return -ENOMEM;
                                        irq->has_affinity = true;
                                }
                        }
                        todo = list ? missing : 0;
                }
        }
        return 0;
}

int host_discover_irqs(Host *h, bool want_counts) {
        /* Counts are in /proc/interrupts only; names are in /sys/kernel/irq too, which is the
         * cheaper read from HOST_IRQ_SYSFS_MIN_CPUS possible CPUs on. */
        bool sysfs = !want_counts && h->n_cpu_ids >= HOST_IRQ_SYSFS_MIN_CPUS;
        int k = sysfs ? discover_irqs_sysfs(h) : -ENOENT;
        if (k == -ENOENT || k == -ENOTDIR) {
                k = host_read_interrupts(h, want_counts, HOST_INTERRUPTS_BUFSIZE);
                if (k == -ENOENT)
                        return 0;
        }
        if (k < 0)
                return k;
        k = discover_irq_affinities(h);
        if (k < 0)
                return k;
        if (root_read_cpu_mask(h->root, "proc/irq/default_smp_affinity", &h->default_irq_affinity) < 0)
                h->default_irq_affinity = h->online;
        return 0;
}
