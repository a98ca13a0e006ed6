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

static const char * const cgroup_mode_table[_CGROUP_MODE_MAX] = {
        [CGROUP_NONE] = "none",
        [CGROUP_V1] = "v1",
        [CGROUP_HYBRID] = "hybrid",
        [CGROUP_V2] = "v2",
};

static const char * const bootloader_table[_BOOTLOADER_MAX] = {
        [BOOTLOADER_NONE] = "none",
        [BOOTLOADER_GRUB] = "grub",
        [BOOTLOADER_BLS] = "bls",
        [BOOTLOADER_KERNEL_CMDLINE] = "kernel-install",
};

static const char * const cpu_vendor_table[_CPU_VENDOR_MAX] = {
        [CPU_VENDOR_OTHER] = "other",
        [CPU_VENDOR_INTEL] = "intel",
        [CPU_VENDOR_AMD] = "amd",
};

const char *cgroup_mode_to_string(CgroupMode m) {
        return m >= 0 && m < _CGROUP_MODE_MAX ? cgroup_mode_table[m] : NULL;
}

const char *bootloader_to_string(BootLoader b) {
        return b >= 0 && b < _BOOTLOADER_MAX ? bootloader_table[b] : NULL;
}

const char *cpu_vendor_to_string(CpuVendor v) {
        return v >= 0 && v < _CPU_VENDOR_MAX ? cpu_vendor_table[v] : NULL;
}

Host *host_free(Host *h) {
        if (!h)
                return NULL;
        free(h->cpus);
        free(h->nodes);
        free(h->l3);
        for (size_t i = 0; i < h->n_irqs; i++) {
                free(h->irqs[i].chip);
                free(h->irqs[i].hwirq);
                free(h->irqs[i].actions);
                free(h->irqs[i].counts);
        }
        free(h->irqs);
        for (size_t i = 0; i < h->n_irq_affinities; i++)
                free(h->irq_affinities[i].set);
        free(h->irq_affinities);
        free(h->irq_columns);
        free(h->cmdline);
        free(h->kernel_release);
        free(h->cgroup2_mount);
        free(h->cpuset_v1_mount);
        free(h->resctrl.mount);
        free(h->resctrl.domains);
        free(h);
        return NULL;
}

/* ---- CPUs and topology ---- */

static int discover_cpus(Host *h) {
        Root *r = h->root;
        int k;

        k = root_read_cpu_list(r, "sys/devices/system/cpu/online", &h->online);
        if (k < 0)
                return k;
        if (cpu_set_is_empty(&h->online))
                return -ENODEV;
        if (root_read_cpu_list(r, "sys/devices/system/cpu/possible", &h->possible) < 0)
                h->possible = h->online;
        if (root_read_cpu_list(r, "sys/devices/system/cpu/present", &h->present) < 0)
                h->present = h->online;
        cpu_set_or(&h->possible, &h->online);
        (void) root_read_cpu_list(r, "sys/devices/system/cpu/isolated", &h->boot_isolated);
        (void) root_read_cpu_list(r, "sys/devices/system/cpu/nohz_full", &h->boot_nohz_full);

        h->n_cpu_ids = (unsigned) cpu_set_last(&h->possible) + 1;
        h->cpus = calloc(h->n_cpu_ids, sizeof(HostCpu));
        if (!h->cpus)
                return -ENOMEM;
        for (unsigned c = 0; c < h->n_cpu_ids; c++)
                h->cpus[c] = (HostCpu) { .core = -1, .package = -1, .node = 0, .l3 = -1 };

        /* Read one file per group, not per CPU: a sibling list names the whole core, a package
         * list the whole package, an L3 shared list the whole cache domain. */
        CPU_SET_FOREACH (c, &h->online) {
                HostCpu *hc = &h->cpus[c];
                char path[128];

                if (hc->core < 0) {
                        CpuSet sib;
                        snprintf(path, sizeof(path), "sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", c);
                        if (root_read_cpu_list(r, path, &sib) < 0 || !cpu_set_has(&sib, (unsigned) c)) {
                                cpu_set_zero(&sib);
                                cpu_set_add(&sib, (unsigned) c);
                        }
                        cpu_set_and(&sib, &h->online);
                        int first = cpu_set_next(&sib, 0);
                        CPU_SET_FOREACH (s, &sib)
                                if (h->cpus[s].core < 0)
                                        h->cpus[s].core = first;
                }
                if (hc->package < 0) {
                        unsigned pkg = 0;
                        CpuSet pk;
                        snprintf(path, sizeof(path), "sys/devices/system/cpu/cpu%d/topology/physical_package_id", c);
                        (void) root_read_uint(r, path, &pkg);
                        snprintf(path, sizeof(path), "sys/devices/system/cpu/cpu%d/topology/package_cpus_list", c);
                        if (root_read_cpu_list(r, path, &pk) < 0) {
                                snprintf(path, sizeof(path), "sys/devices/system/cpu/cpu%d/topology/core_siblings_list",
                                         c);
                                if (root_read_cpu_list(r, path, &pk) < 0)
                                        cpu_set_zero(&pk);
                        }
                        cpu_set_add(&pk, (unsigned) c);
                        cpu_set_and(&pk, &h->online);
                        CPU_SET_FOREACH (s, &pk)
                                if (h->cpus[s].package < 0)
                                        h->cpus[s].package = (int) pkg;
                }
                if (hc->l3 < 0) {
                        unsigned level = 0, id = 0;
                        CpuSet shared;
                        snprintf(path, sizeof(path), "sys/devices/system/cpu/cpu%d/cache/index3/level", c);
                        if (root_read_uint(r, path, &level) < 0 || level != 3)
                                continue;
                        snprintf(path, sizeof(path), "sys/devices/system/cpu/cpu%d/cache/index3/id", c);
                        if (root_read_uint(r, path, &id) < 0)
                                continue;
                        snprintf(path, sizeof(path), "sys/devices/system/cpu/cpu%d/cache/index3/shared_cpu_list", c);
                        if (root_read_cpu_list(r, path, &shared) < 0)
                                cpu_set_zero(&shared);
                        cpu_set_add(&shared, (unsigned) c);
                        cpu_set_and(&shared, &h->online);

                        CacheDomain *d = NULL;
                        for (size_t i = 0; i < h->n_l3; i++)
                                if (h->l3[i].id == id)
                                        d = &h->l3[i];
                        if (!d) {
                                CacheDomain *n = realloc(h->l3, (h->n_l3 + 1) * sizeof(CacheDomain));
                                if (!n)
                                        return -ENOMEM;
                                h->l3 = n;
                                d = &h->l3[h->n_l3++];
                                *d = (CacheDomain) { .id = id };
                        }
                        CPU_SET_FOREACH (s, &shared)
                                if (h->cpus[s].l3 < 0) {
                                        h->cpus[s].l3 = (int) id;
                                        cpu_set_add(&d->cpus, (unsigned) s);
                                }
                }
        }
        return 0;
}

static int discover_nodes(Host *h) {
        DIR *d;
        struct dirent *de;
        int k;

        k = root_opendir(h->root, "sys/devices/system/node", &d);
        if (k < 0) {
                /* No NUMA directory (a small VM, CONFIG_NUMA=n): one node with every CPU. */
                h->numa = false;
                h->nodes = calloc(1, sizeof(CpuSet));
                if (!h->nodes)
                        return -ENOMEM;
                h->nodes[0] = h->online;
                h->n_nodes = 1;
                return 0;
        }
        h->numa = true;
        while ((de = readdir(d))) {
                unsigned id;
                char tail;
                if (sscanf(de->d_name, "node%u%c", &id, &tail) != 1 || id > 4096)
                        continue;
                char path[512];
                CpuSet cpus;
                snprintf(path, sizeof(path), "sys/devices/system/node/%s/cpulist", de->d_name);
                if (root_read_cpu_list(h->root, path, &cpus) < 0)
                        continue;
                if (id >= h->n_nodes) {
                        CpuSet *n = realloc(h->nodes, (id + 1) * sizeof(CpuSet));
                        if (!n) {
                                closedir(d);
                                return -ENOMEM;
                        }
                        for (unsigned i = h->n_nodes; i <= id; i++)
                                cpu_set_zero(&n[i]);
                        h->nodes = n;
                        h->n_nodes = id + 1;
                }
                cpu_set_and(&cpus, &h->online);
                h->nodes[id] = cpus;
                CPU_SET_FOREACH (c, &cpus)
                        h->cpus[c].node = (int) id;
        }
        closedir(d);
        if (h->n_nodes == 0) {
                h->nodes = calloc(1, sizeof(CpuSet));
                if (!h->nodes)
                        return -ENOMEM;
                h->nodes[0] = h->online;
                h->n_nodes = 1;
        }
        return 0;
}

bool host_node_cpus(const Host *h, unsigned node, CpuSet *ret) {
        if (node >= h->n_nodes || cpu_set_is_empty(&h->nodes[node]))
                return false;
        *ret = h->nodes[node];
        return true;
}

bool host_package_cpus(const Host *h, unsigned package, CpuSet *ret) {
        CpuSet s = {};
        CPU_SET_FOREACH (c, &h->online)
                if (h->cpus[c].package == (int) package)
                        cpu_set_add(&s, (unsigned) c);
        if (cpu_set_is_empty(&s))
                return false;
        *ret = s;
        return true;
}

bool host_l3_cpus(const Host *h, unsigned id, CpuSet *ret) {
        for (size_t i = 0; i < h->n_l3; i++)
                if (h->l3[i].id == id) {
                        *ret = h->l3[i].cpus;
                        return true;
                }
        return false;
}

void host_default_split(const Host *h, unsigned cores_per_node, CpuSet *ret_housekeeping, CpuSet *ret_isolated) {
        CpuSet hk = {};

        for (unsigned n = 0; n < h->n_nodes; n++) {
                unsigned taken = 0;
                CPU_SET_FOREACH (c, &h->nodes[n]) {
                        if (taken >= cores_per_node)
                                break;
                        int core = h->cpus[c].core >= 0 ? h->cpus[c].core : c;
                        if (core != c || cpu_set_has(&hk, (unsigned) c))
                                continue; /* a sibling of a core already taken, or not a core's first CPU */
                        CPU_SET_FOREACH (s, &h->nodes[n])
                                if (h->cpus[s].core == core)
                                        cpu_set_add(&hk, (unsigned) s);
                        cpu_set_add(&hk, (unsigned) c);
                        taken++;
                }
        }
        CpuSet iso = h->online;
        cpu_set_andnot(&iso, &hk);
        *ret_housekeeping = hk;
        *ret_isolated = iso;
}

/* ---- IRQs ---- */

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

static int discover_irqs(Host *h, bool want_counts) {
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

/* ---- mounts: cgroups and resctrl ---- */

static char *unescape_mount(const char *s) {
        char *out = malloc(strlen(s) + 1), *o = out;
        if (!out)
                return NULL;
        while (*s) {
                if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' && s[3] >= '0' &&
                    s[3] <= '7') {
                        *o++ = (char) ((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
                        s += 4;
                } else
                        *o++ = *s++;
        }
        *o = 0;
        return out;
}

static int set_mount(char **slot, const char *mountpoint) {
        if (*slot)
                return 0; /* first one wins */
        while (*mountpoint == '/')
                mountpoint++;
        *slot = strdup(mountpoint);
        return *slot ? 0 : -ENOMEM;
}

static bool has_option(const char *opts, const char *opt) {
        size_t n = strlen(opt);
        for (const char *p = opts; p && *p;) {
                if (strncmp(p, opt, n) == 0 && (p[n] == ',' || p[n] == 0))
                        return true;
                p = strchr(p, ',');
                if (p)
                        p++;
        }
        return false;
}

int host_parse_mounts(Host *h, char *text, bool mountinfo) {
        bool any_v1 = false;
        int k;

        for (char *line = text, *next; line && *line; line = next) {
                next = strchr(line, '\n');
                if (next)
                        *next++ = 0;

                char *fields[12] = {}, *save = NULL;
                size_t n = 0;
                for (char *t = strtok_r(line, " ", &save); t && n < ELEMENTSOF(fields); t = strtok_r(NULL, " ", &save))
                        fields[n++] = t;

                const char *mp, *fstype, *opts;
                if (mountinfo) {
                        /* id parent maj:min root mountpoint opts [optional…] - fstype source superopts */
                        size_t dash = 0;
                        for (size_t i = 6; i < n; i++)
                                if (streq(fields[i], "-")) {
                                        dash = i;
                                        break;
                                }
                        if (dash == 0 || dash + 3 >= n + 1 || n < 5)
                                continue;
                        mp = fields[4];
                        fstype = fields[dash + 1];
                        opts = dash + 3 < n ? fields[dash + 3] : "";
                } else {
                        if (n < 4)
                                continue;
                        mp = fields[1];
                        fstype = fields[2];
                        opts = fields[3];
                }
                if (!fstype)
                        continue;
                _cleanup_free_ char *mpu = unescape_mount(mp);
                if (!mpu)
                        return -ENOMEM;

                if (streq(fstype, "cgroup2"))
                        k = set_mount(&h->cgroup2_mount, mpu);
                else if (streq(fstype, "cgroup")) {
                        any_v1 = true;
                        k = has_option(opts, "cpuset") ? set_mount(&h->cpuset_v1_mount, mpu) : 0;
                } else if (streq(fstype, "resctrl")) {
                        h->resctrl.mounted = true;
                        k = set_mount(&h->resctrl.mount, mpu);
                } else
                        k = 0;
                if (k < 0)
                        return k;
        }

        if (h->cgroup2_mount && streq(h->cgroup2_mount, "sys/fs/cgroup") && !any_v1)
                h->cgroup_mode = CGROUP_V2;
        else if (any_v1 && h->cgroup2_mount)
                h->cgroup_mode = CGROUP_HYBRID;
        else if (any_v1)
                h->cgroup_mode = CGROUP_V1;
        else if (h->cgroup2_mount)
                h->cgroup_mode = CGROUP_V2;
        else
                h->cgroup_mode = CGROUP_NONE;

        return 0;
}

static int discover_mounts(Host *h) {
        _cleanup_free_ char *text = NULL;
        bool mountinfo = true;
        int k;

        k = root_read_file(h->root, "proc/self/mountinfo", &text, NULL);
        if (k < 0) {
                mountinfo = false;
                k = root_read_file(h->root, "proc/mounts", &text, NULL);
                if (k < 0)
                        return k == -ENOENT ? 0 : k;
        }
        k = host_parse_mounts(h, text, mountinfo);
        if (k < 0)
                return k;

        if (h->cgroup2_mount) {
                _cleanup_free_ char *ctl = NULL, *path = NULL;
                if (asprintf(&path, "%s/cgroup.controllers", h->cgroup2_mount) < 0)
                        return -ENOMEM;
                if (root_read_line(h->root, path, &ctl) >= 0) {
                        _cleanup_free_ char *padded = NULL;
                        if (asprintf(&padded, " %s ", ctl) < 0)
                                return -ENOMEM;
                        h->cgroup2_cpuset = strstr(padded, " cpuset ") != NULL;
                }
        }
        return 0;
}

static int hex64(const char *s, uint64_t *ret) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 16);
        if (errno || end == s)
                return -EINVAL;
        *ret = v;
        return 0;
}

static void read_resctrl_resource(Host *h, const char *name, ResctrlResource *res) {
        Resctrl *rc = &h->resctrl;
        char path[256];
        _cleanup_free_ char *s = NULL;

        snprintf(path, sizeof(path), "%s/info/%s", rc->mount, name);
        if (!root_is_dir(h->root, path))
                return;
        res->present = true;
        res->sparse_masks = -1;

#define RD(file, var) \
        do { \
                snprintf(path, sizeof(path), "%s/info/%s/" file, rc->mount, name); \
                (void) root_read_uint(h->root, path, &(var)); \
        } while (0)
        RD("num_closids", res->num_closids);
        RD("min_cbm_bits", res->min_cbm_bits);
        RD("min_bandwidth", res->min_bandwidth);
        RD("bandwidth_gran", res->bandwidth_gran);
#undef RD
        unsigned v;
        snprintf(path, sizeof(path), "%s/info/%s/delay_linear", rc->mount, name);
        if (root_read_uint(h->root, path, &v) >= 0)
                res->delay_linear = v;
        snprintf(path, sizeof(path), "%s/info/%s/sparse_masks", rc->mount, name);
        if (root_read_uint(h->root, path, &v) >= 0)
                res->sparse_masks = (int) v;
        snprintf(path, sizeof(path), "%s/info/%s/cbm_mask", rc->mount, name);
        if (root_read_line(h->root, path, &s) >= 0 && hex64(s, &res->cbm_mask) >= 0)
                res->cbm_bits = res->cbm_mask ? 64U - (unsigned) __builtin_clzll(res->cbm_mask) : 0;
        free(s);
        s = NULL;
        snprintf(path, sizeof(path), "%s/info/%s/shareable_bits", rc->mount, name);
        if (root_read_line(h->root, path, &s) >= 0)
                (void) hex64(s, &res->shareable_bits);
}

static int uint_cmp(const void *a, const void *b) {
        unsigned x = *(const unsigned *) a, y = *(const unsigned *) b;
        return x < y ? -1 : x > y;
}

static int discover_resctrl(Host *h) {
        Resctrl *rc = &h->resctrl;
        _cleanup_free_ char *fs = NULL;

        if (root_read_file(h->root, "proc/filesystems", &fs, NULL) >= 0)
                rc->supported = strstr(fs, "\tresctrl\n") != NULL;
        if (!rc->mounted)
                return 0;
        rc->supported = true;

        read_resctrl_resource(h, "L3", &rc->l3);
        read_resctrl_resource(h, "L3CODE", &rc->l3code);
        read_resctrl_resource(h, "L3DATA", &rc->l3data);
        read_resctrl_resource(h, "MB", &rc->mb);
        rc->cdp = rc->l3code.present && rc->l3data.present;

        /* Domain ids: from the L3 cache ids the CPUs report; those are what schemata uses. */
        rc->domains = calloc(MAX(h->n_l3, (size_t) 1), sizeof(unsigned));
        if (!rc->domains)
                return -ENOMEM;
        for (size_t i = 0; i < h->n_l3; i++)
                rc->domains[i] = h->l3[i].id;
        rc->n_domains = h->n_l3;
        qsort(rc->domains, rc->n_domains, sizeof(unsigned), uint_cmp);
        return 0;
}

/* ---- the rest ---- */

BootLoader host_detect_bootloader(Root *r) {
        _cleanup_strv_free_ char **entries = NULL;

        (void) root_glob(r, "boot/loader/entries/*.conf", &entries);
        if (strv_length(entries) == 0) {
                strv_free(entries);
                entries = NULL;
                (void) root_glob(r, "boot/efi/loader/entries/*.conf", &entries);
        }
        bool bls = strv_length(entries) > 0;
        bool kcmd = root_exists(r, "etc/kernel/cmdline");

        if (bls)
                return kcmd ? BOOTLOADER_KERNEL_CMDLINE : BOOTLOADER_BLS;
        if (root_exists(r, "etc/default/grub") || root_is_dir(r, "etc/default/grub.d"))
                return BOOTLOADER_GRUB;
        if (kcmd)
                return BOOTLOADER_KERNEL_CMDLINE;
        return BOOTLOADER_NONE;
}

static void discover_vendor(Host *h) {
        _cleanup_close_ int fd = root_open(h->root, "proc/cpuinfo", O_RDONLY, 0);
        char buf[4096];

        h->vendor = CPU_VENDOR_OTHER;
        if (fd < 0)
                return;
        ssize_t n = read(fd, buf, sizeof(buf) - 1); /* the first stanza is enough */
        if (n <= 0)
                return;
        buf[n] = 0;
        if (strstr(buf, "GenuineIntel"))
                h->vendor = CPU_VENDOR_INTEL;
        else if (strstr(buf, "AuthenticAMD") || strstr(buf, "HygonGenuine"))
                h->vendor = CPU_VENDOR_AMD;
}

int host_discover(Root *root, HostDiscoverFlags flags, Host **ret) {
        _cleanup_(host_freep) Host *h = NULL;
        int k;

        h = calloc(1, sizeof(*h));
        if (!h)
                return -ENOMEM;
        h->root = root;

        k = discover_cpus(h);
        if (k < 0)
                return k;
        k = discover_nodes(h);
        if (k < 0)
                return k;
        if (flags & HOST_DISCOVER_NO_IRQS)
                h->default_irq_affinity = h->online;
        else {
                k = discover_irqs(h, flags & HOST_DISCOVER_IRQ_COUNTS);
                if (k < 0)
                        return k;
        }
        k = discover_mounts(h);
        if (k < 0)
                return k;
        k = discover_resctrl(h);
        if (k < 0)
                return k;

        if (root_read_line(root, "proc/cmdline", &h->cmdline) < 0) {
                h->cmdline = strdup("");
                if (!h->cmdline)
                        return -ENOMEM;
        }
        (void) root_read_line(root, "proc/sys/kernel/osrelease", &h->kernel_release);
        _cleanup_free_ char *version = NULL;
        if (root_read_line(root, "proc/version", &version) >= 0)
                h->preempt_rt = strstr(version, "PREEMPT_RT") || strstr(version, "PREEMPT RT");
        if (!h->preempt_rt) {
                unsigned rt = 0;
                h->preempt_rt = root_read_uint(root, "sys/kernel/realtime", &rt) >= 0 && rt == 1;
        }
        discover_vendor(h);
        h->bootloader = host_detect_bootloader(root);
        h->systemd_running = root_is_dir(root, "run/systemd/system");

        *ret = TAKE_PTR(h);
        return 0;
}
