/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "audit-advice.h"
#include "audit.h"
#include "interrupts.h"
#include "journal.h"
#include "prepare.h"
#include "proc.h"
#include "profile.h"
#include "strv.h"
#include "systemd.h"
#include "task.h"

/* ---- counter tables ---- */

void counter_table_done(CounterTable *t) {
        if (!t)
                return;
        for (size_t i = 0; i < t->n_rows; i++) {
                free(t->rows[i].label);
                free(t->rows[i].text);
                free(t->rows[i].counts);
        }
        free(t->rows);
        *t = (CounterTable) {};
}

const CounterRow *counter_table_find(const CounterTable *t, const char *label) {
        for (size_t i = 0; i < t->n_rows; i++)
                if (streq(t->rows[i].label, label))
                        return &t->rows[i];
        return NULL;
}

static bool parse_u64(const char **p, const char *eol, uint64_t *ret) {
        const char *q = *p;
        uint64_t v = 0;
        while (q < eol && *q == ' ')
                q++;
        if (q >= eol || !isdigit((unsigned char) *q))
                return false;
        for (; q < eol && isdigit((unsigned char) *q); q++) {
                if (v > (UINT64_MAX - 9) / 10)
                        return false;
                v = v * 10 + (uint64_t) (*q - '0');
        }
        if (q < eol && *q != ' ' && *q != '\t')
                return false;
        *p = q;
        *ret = v;
        return true;
}

int counter_table_parse(const char *text, CounterTable *ret) {
        _cleanup_(counter_table_done) CounterTable t = {};
        _cleanup_free_ int *columns = NULL;
        size_t n_columns = 0, cap = 0;
        const char *eol = strchrnul(text, '\n');

        int r = interrupts_header_parse(text, (size_t) (eol - text), &columns, &n_columns);
        if (r < 0)
                return r;
        for (size_t c = 0; c < n_columns; c++)
                t.n_cpus = MAX(t.n_cpus, (unsigned) columns[c] + 1);

        for (const char *p = *eol ? eol + 1 : eol; *p; p = *eol ? eol + 1 : eol) {
                eol = strchrnul(p, '\n');
                const char *colon = memchr(p, ':', (size_t) (eol - p));
                if (!colon)
                        continue;
                const char *l0 = p;
                while (l0 < colon && *l0 == ' ')
                        l0++;
                if (l0 == colon)
                        continue;
                if (t.n_rows == cap) {
                        cap = MAX(cap * 2, (size_t) 64);
                        CounterRow *n = realloc(t.rows, cap * sizeof(CounterRow));
                        if (!n)
                                return -ENOMEM;
                        t.rows = n;
                }
                CounterRow *row = &t.rows[t.n_rows];
                *row = (CounterRow) {
                        .label = strndup(l0, (size_t) (colon - l0)),
                        .counts = calloc(t.n_cpus, sizeof(uint64_t)),
                };
                t.n_rows++;
                if (!row->label || !row->counts)
                        return -ENOMEM;
                const char *q = colon + 1;
                for (size_t c = 0; c < n_columns; c++) {
                        uint64_t v;
                        if (!parse_u64(&q, eol, &v))
                                break;
                        row->counts[columns[c]] = v;
                }
                while (q < eol && (*q == ' ' || *q == '\t'))
                        q++;
                const char *e = eol;
                while (e > q && isspace((unsigned char) e[-1]))
                        e--;
                row->text = strndup(q, (size_t) (e - q));
                if (!row->text)
                        return -ENOMEM;
        }
        *ret = t;
        t = (CounterTable) {};
        return 0;
}

/* ---- snapshots ---- */

static void thread_done(AuditThread *t) {
        free(t->comm);
        free(t->cgroup);
}

void audit_snapshot_done(AuditSnapshot *s) {
        if (!s)
                return;
        counter_table_done(&s->interrupts);
        counter_table_done(&s->softirqs);
        for (size_t i = 0; i < s->n_threads; i++)
                thread_done(&s->threads[i]);
        free(s->threads);
        *s = (AuditSnapshot) {};
}

static int thread_cmp(const void *a, const void *b) {
        const AuditThread *x = a, *y = b;
        return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static bool is_number(const char *s) {
        if (!*s)
                return false;
        for (; *s; s++)
                if (!isdigit((unsigned char) *s))
                        return false;
        return true;
}

/* Reads one small file below dirfd into buf (NUL-terminated); false when it cannot. */
static bool read_small(Root *root, int dirfd, const char *rel, char *buf, size_t size) {
        _cleanup_close_ int fd = root_openat(root, dirfd, rel, O_RDONLY);
        if (fd < 0)
                return false;
        ssize_t n = read(fd, buf, size - 1);
        if (n <= 0)
                return false;
        buf[n] = 0;
        return true;
}

static int read_thread(Root *root, int taskfd, int pid, const char *tid, AuditSnapshotFlags flags, AuditThread *ret) {
        char path[64], buf[4096];
        ProcStat st = {};

        snprintf(path, sizeof(path), "%s/stat", tid);
        if (!read_small(root, taskfd, path, buf, sizeof(buf)) || proc_stat_parse(buf, &st) < 0)
                return -ENOENT;
        *ret = (AuditThread) {
                .pid = pid,
                .tid = st.pid,
                .start_ticks = st.start_ticks,
                .cpu_ticks = st.cpu_ticks,
                .processor = st.processor,
                .comm = TAKE_PTR(st.comm),
                .kernel = st.flags & PROC_PF_KTHREAD,
        };
        proc_stat_done(&st);
        if (!(flags & AUDIT_SNAPSHOT_PLACES))
                return 0;
        /* status can be long (a task's Cpus_allowed on a big host); 4 KiB lines are plenty up
         * to the CPU lists, which come last but one group. */
        _cleanup_free_ char *status = NULL;
        _cleanup_close_ int fd = -EBADF;
        snprintf(path, sizeof(path), "%s/status", tid);
        fd = root_openat(root, taskfd, path, O_RDONLY);
        if (fd >= 0) {
                size_t cap = 16384, len = 0;
                status = malloc(cap);
                for (ssize_t n; status && (n = read(fd, status + len, cap - 1 - len)) > 0;) {
                        len += (size_t) n;
                        if (len == cap - 1) {
                                char *s2 = realloc(status, cap *= 2);
                                if (!s2)
                                        break;
                                status = s2;
                        }
                }
                if (status) {
                        status[len] = 0;
                        ProcStatus ps = {};
                        if (proc_status_parse(status, &ps) >= 0 && ps.has_cpus_allowed) {
                                ret->allowed = ps.cpus_allowed;
                                ret->has_allowed = true;
                        }
                }
        }
        snprintf(path, sizeof(path), "%s/cgroup", tid);
        if (read_small(root, taskfd, path, buf, sizeof(buf)))
                (void) task_cgroup_parse(buf, &ret->cgroup);
        return 0;
}

static uint64_t now_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}

int audit_snapshot(Root *root, AuditSnapshotFlags flags, AuditSnapshot *ret) {
        _cleanup_(audit_snapshot_done) AuditSnapshot s = {};
        _cleanup_free_ char *text = NULL;
        size_t cap = 0;
        DIR *d = NULL;
        int r;

        s.usec = now_usec();
        r = root_read_file(root, "proc/interrupts", &text, NULL);
        if (r < 0)
                return r;
        r = counter_table_parse(text, &s.interrupts);
        if (r < 0)
                return r;
        free(text);
        text = NULL;
        if (root_read_file(root, "proc/softirqs", &text, NULL) >= 0 && counter_table_parse(text, &s.softirqs) >= 0)
                s.has_softirqs = true;

        r = root_opendir(root, "proc", &d);
        if (r < 0)
                return r;
        struct dirent *de;
        while ((de = readdir(d))) {
                if (!is_number(de->d_name))
                        continue;
                char rel[sizeof(de->d_name) + 16];
                snprintf(rel, sizeof(rel), "proc/%s/task", de->d_name);
                _cleanup_close_ int taskfd = root_open(root, rel, O_RDONLY | O_DIRECTORY, 0);
                if (taskfd < 0)
                        continue;
                int dfd = dup(taskfd);
                DIR *td = dfd >= 0 ? fdopendir(dfd) : NULL;
                if (!td) {
                        if (dfd >= 0)
                                close(dfd);
                        continue;
                }
                struct dirent *te;
                while ((te = readdir(td))) {
                        if (!is_number(te->d_name))
                                continue;
                        if (s.n_threads == cap) {
                                cap = MAX(cap * 2, (size_t) 256);
                                AuditThread *n = realloc(s.threads, cap * sizeof(AuditThread));
                                if (!n) {
                                        closedir(td);
                                        closedir(d);
                                        return -ENOMEM;
                                }
                                s.threads = n;
                        }
                        if (read_thread(root, taskfd, atoi(de->d_name), te->d_name, flags, &s.threads[s.n_threads]) >=
                            0)
                                s.n_threads++;
                }
                closedir(td);
        }
        closedir(d);
        qsort(s.threads, s.n_threads, sizeof(AuditThread), thread_cmp);
        *ret = s;
        s = (AuditSnapshot) {};
        return 0;
}

static const AuditThread *find_thread(const AuditSnapshot *s, const AuditThread *t) {
        size_t lo = 0, hi = s->n_threads;
        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (s->threads[mid].tid == t->tid)
                        return s->threads[mid].start_ticks == t->start_ticks ? &s->threads[mid] : NULL;
                if (s->threads[mid].tid < t->tid)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

/* ---- the document ---- */

static double rate(uint64_t count, double seconds) {
        return seconds > 0 ? (double) count / seconds : 0;
}

/* The IRQ row's action names: what follows the chip and hwirq columns. */
static const char *irq_actions(const char *text) {
        const char *q = text;
        while (*q && *q != ' ' && *q != '\t')
                q++; /* the chip */
        while (*q == ' ' || *q == '\t')
                q++;
        if (isdigit((unsigned char) *q)) {
                while (*q && *q != ' ' && *q != '\t')
                        q++; /* the hwirq, "1-edge" */
                while (*q == ' ' || *q == '\t')
                        q++;
        }
        return *q ? q : text;
}

static bool in_partition(const AuditScope *scope, const AuditThread *t) {
        if (!t->cgroup)
                return false;
        for (char **p = scope->partitions; p && *p; p++) {
                size_t n = strlen(*p);
                if (strncmp(t->cgroup, *p, n) == 0 && (t->cgroup[n] == 0 || t->cgroup[n] == '/'))
                        return true;
        }
        return false;
}

static int add_source(json_t *list, json_t *entry) {
        if (!entry)
                return -ENOMEM;
        return json_array_append_new(list, entry) < 0 ? -ENOMEM : 0;
}

/* The difference of a counter row at cpu between the snapshots; 0 when it did not move. */
static uint64_t counted(const CounterTable *ta, const CounterRow *row, unsigned cpu) {
        const CounterRow *old = counter_table_find(ta, row->label);
        uint64_t before = old && cpu < ta->n_cpus ? old->counts[cpu] : 0;
        return row->counts[cpu] > before ? row->counts[cpu] - before : 0;
}

/* Interrupts at cpu: device IRQs by number, then the architecture's rows; LOC (the tick) goes to
 * *ret_loc. 1 when any counted. */
static int cpu_interrupts(const AuditScope *scope, const AuditSnapshot *a, const AuditSnapshot *b, unsigned cpu,
                          double secs, json_t *irqs, uint64_t *ret_loc) {
        bool noisy = false;
        *ret_loc = 0;
        for (size_t i = 0; cpu < b->interrupts.n_cpus && i < b->interrupts.n_rows; i++) {
                const CounterRow *row = &b->interrupts.rows[i];
                uint64_t n = counted(&a->interrupts, row, cpu);
                if (n == 0)
                        continue;
                if (streq(row->label, "LOC")) {
                        *ret_loc = n;
                        continue;
                }
                _cleanup_free_ char *fix = NULL;
                json_t *e;
                if (is_number(row->label)) {
                        const char *name = irq_actions(row->text);
                        if (!(fix = audit_advice_irq(scope, row->label, name, cpu)))
                                return -ENOMEM;
                        e = json_pack("{s:s, s:i, s:s, s:I, s:f, s:s}", "source", "irq", "irq", atoi(row->label),
                                      "name", name, "count", (json_int_t) n, "rate", rate(n, secs), "fix", fix);
                } else {
                        fix = audit_advice_arch(row->label);
                        e = json_pack("{s:s, s:s, s:s, s:I, s:f, s:s?}", "source", "arch", "row", row->label, "name",
                                      row->text, "count", (json_int_t) n, "rate", rate(n, secs), "fix", fix);
                }
                if (add_source(irqs, e) < 0)
                        return -ENOMEM;
                noisy = true;
        }
        return noisy;
}

/* Softirqs at cpu; 1 when any ran. */
static int cpu_softirqs(const AuditSnapshot *a, const AuditSnapshot *b, unsigned cpu, double secs, json_t *list) {
        bool noisy = false;
        if (!a->has_softirqs || !b->has_softirqs)
                return 0;
        for (size_t i = 0; cpu < b->softirqs.n_cpus && i < b->softirqs.n_rows; i++) {
                const CounterRow *row = &b->softirqs.rows[i];
                uint64_t n = counted(&a->softirqs, row, cpu);
                if (n == 0)
                        continue;
                _cleanup_free_ char *fix = audit_advice_softirq(row->label);
                if (add_source(list,
                               json_pack("{s:s, s:I, s:f, s:s?}", "kind", row->label, "count", (json_int_t) n, "rate",
                                         rate(n, secs), "fix", fix)) < 0)
                        return -ENOMEM;
                noisy = true;
        }
        return noisy;
}

/* A thread audit reports: not the caller, not in the profile's partitions, not a measuring thread
 * of the tracers audit and check run. */
static bool reported(const AuditScope *scope, const AuditThread *t) {
        if (t->pid == scope->self || in_partition(scope, t))
                return false;
        return !(t->kernel && (fnmatch("osnoise/*", t->comm, 0) == 0 || fnmatch("timerlat/*", t->comm, 0) == 0));
}

/* The CPU time t used in the window on cpu (it ran there at the start or the end), 0 if none. */
static uint64_t ran_on(const AuditSnapshot *a, const AuditThread *t, unsigned cpu) {
        const AuditThread *was = find_thread(a, t);
        uint64_t used = t->cpu_ticks - (was ? MIN(was->cpu_ticks, t->cpu_ticks) : 0);
        bool here = t->processor == (int) cpu || (was && was->processor == (int) cpu);
        return here ? used : 0;
}

/* t may run on cpu (its allowed CPUs include it), and is not a per-CPU kernel thread or kthreadd. */
static bool may_run_on(const AuditThread *t, unsigned cpu) {
        return t->has_allowed && cpu_set_has(&t->allowed, cpu) && !(t->kernel && audit_thread_bound(t, cpu)) &&
                !(t->kernel && t->pid == 2);
}

/* t may run on audited CPUs only (a task pinned there: it runs there whenever it runs). */
static bool pinned_to(const AuditScope *scope, const AuditThread *t) {
        CpuSet out = t->allowed;
        cpu_set_andnot(&out, &scope->cpus);
        return t->has_allowed && cpu_set_is_empty(&out);
}

static json_t *thread_ref(const AuditThread *t) {
        return json_pack("{s:i, s:i, s:s, s:b}", "pid", t->pid, "tid", t->tid, "comm", t->comm, "kernel", t->kernel);
}

/* Threads that ran on cpu ("threads": 1 when any did) and those that may run there ("may_run":
 * every one pinned to the audited CPUs, the first 16 others; the document's own "may_run" lists
 * them all). */
static int cpu_threads(const AuditScope *scope, const AuditSnapshot *a, const AuditSnapshot *b, unsigned cpu,
                       json_t *threads, json_t *pinned, json_t *first, unsigned *ret_may) {
        bool noisy = false;
        *ret_may = 0;
        for (size_t i = 0; i < b->n_threads; i++) {
                const AuditThread *t = &b->threads[i];
                if (!reported(scope, t))
                        continue;
                uint64_t used = ran_on(a, t, cpu);
                if (used > 0) {
                        _cleanup_free_ char *fix = audit_advice_thread(t, cpu);
                        double ms = scope->clock_ticks ? 1000.0 * (double) used / scope->clock_ticks : 0;
                        if (!fix ||
                            add_source(threads,
                                       json_pack("{s:i, s:i, s:s, s:b, s:f, s:s}", "pid", t->pid, "tid", t->tid, "comm",
                                                 t->comm, "kernel", t->kernel, "cpu_ms", ms, "fix", fix)) < 0)
                                return -ENOMEM;
                        noisy = true;
                        continue;
                }
                if (!may_run_on(t, cpu))
                        continue;
                bool pin = pinned_to(scope, t);
                if ((pin || json_array_size(first) < 16) && add_source(pin ? pinned : first, thread_ref(t)) < 0)
                        return -ENOMEM;
                (*ret_may)++;
        }
        return noisy;
}

static json_t *cpu_osnoise(const AuditScope *scope, unsigned cpu) {
        const OsnoiseCpu *on = osnoise_cpu(scope->osnoise, cpu);
        if (!on || on->periods == 0)
                return json_null();
        const OsnoiseSample *t = &on->total;
        double avail = t->runtime_us
                ? 100.0 * (double) (t->runtime_us - MIN(t->noise_us, t->runtime_us)) / (double) t->runtime_us
                : 0.0;
        return json_pack("{s:i, s:I, s:I, s:f, s:I, s:I, s:I, s:I, s:I, s:I}", "periods", (int) on->periods,
                         "runtime_us", (json_int_t) t->runtime_us, "noise_us", (json_int_t) t->noise_us,
                         "available_percent", avail, "max_single_us", (json_int_t) t->max_single_us, "hw",
                         (json_int_t) t->hw, "nmi", (json_int_t) t->nmi, "irq", (json_int_t) t->irq, "softirq",
                         (json_int_t) t->softirq, "thread", (json_int_t) t->thread);
}

static int cpu_document(const AuditScope *scope, const AuditSnapshot *a, const AuditSnapshot *b, unsigned cpu,
                        double secs, json_t **ret) {
        _cleanup_(json_decrefp) json_t *irqs = json_array(), *softirqs = json_array(), *threads = json_array(),
                                       *pinned = json_array(), *first = json_array();
        bool nohz = cpu_set_has(&scope->nohz_full, cpu);
        uint64_t loc;
        unsigned may_n;

        if (!irqs || !softirqs || !threads || !pinned || !first)
                return -ENOMEM;
        int ni = cpu_interrupts(scope, a, b, cpu, secs, irqs, &loc);
        int ns = ni < 0 ? ni : cpu_softirqs(a, b, cpu, secs, softirqs);
        int nt = ns < 0 ? ns : cpu_threads(scope, a, b, cpu, threads, pinned, first, &may_n);
        if (nt < 0)
                return nt;
        /* The tick: on a nohz_full CPU running at most one task it stops (the kernel keeps one tick
         * a second for its statistics); elsewhere it runs at HZ while the CPU is busy. */
        bool stopped = rate(loc, secs) <= 1.5;
        _cleanup_free_ char *tick_fix = stopped ? NULL : audit_advice_tick(nohz);
        if (!stopped && !tick_fix)
                return -ENOMEM;
        bool noisy = ni || ns || nt || !stopped;
        json_t *o = json_pack("{s:i, s:s, s:b, s:O, s:O, s:{s:I, s:f, s:b, s:s?}, s:O, s:{s:i, s:O, s:O}, s:o}", "cpu",
                              (int) cpu, "verdict", noisy ? "noisy" : "quiet", "nohz_full", nohz, "interrupts", irqs,
                              "softirqs", softirqs, "tick", "count", (json_int_t) loc, "rate", rate(loc, secs),
                              "stopped", stopped, "fix", tick_fix, "threads", threads, "may_run", "count", (int) may_n,
                              "pinned", pinned, "first", first, "osnoise", cpu_osnoise(scope, cpu));
        if (!o)
                return -ENOMEM;
        *ret = o;
        return noisy;
}

/* Every thread outside the partitions that may run on an audited CPU, once: the audited CPUs it
 * may run on, and whether those are all it may run on (pinned); pinned ones first, then by id. */
static int may_run_document(const AuditScope *scope, const AuditSnapshot *b, json_t **ret) {
        _cleanup_(json_decrefp) json_t *pinned = json_array(), *others = json_array();
        if (!pinned || !others)
                return -ENOMEM;
        for (size_t i = 0; i < b->n_threads; i++) {
                const AuditThread *t = &b->threads[i];
                CpuSet on = {};
                if (!reported(scope, t) || !t->has_allowed)
                        continue;
                CPU_SET_FOREACH (c, &scope->cpus)
                        if (may_run_on(t, (unsigned) c))
                                cpu_set_add(&on, (unsigned) c);
                if (cpu_set_is_empty(&on))
                        continue;
                _cleanup_free_ char *list = cpu_set_format_list(&on);
                bool pin = pinned_to(scope, t);
                if (!list ||
                    add_source(pin ? pinned : others,
                               json_pack("{s:i, s:i, s:s, s:b, s:s, s:b}", "pid", t->pid, "tid", t->tid, "comm",
                                         t->comm, "kernel", t->kernel, "cpus", list, "pinned", pin)) < 0)
                        return -ENOMEM;
        }
        if (json_array_extend(pinned, others) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(pinned);
        return 0;
}

int audit_document(const AuditScope *scope, const AuditSnapshot *a, const AuditSnapshot *b, json_t **ret) {
        _cleanup_(json_decrefp) json_t *cpus = json_array(), *doc = NULL, *may = NULL;
        _cleanup_free_ char *list = cpu_set_format_list(&scope->cpus), *noisy_list = NULL;
        double secs = (double) (b->usec - MIN(a->usec, b->usec)) / 1e6;
        CpuSet noisy = {};
        int r;

        if (!cpus || !list)
                return -ENOMEM;
        CPU_SET_FOREACH (c, &scope->cpus) {
                json_t *o = NULL;
                r = cpu_document(scope, a, b, (unsigned) c, secs, &o);
                if (r < 0)
                        return r;
                if (r > 0)
                        cpu_set_add(&noisy, (unsigned) c);
                if (json_array_append_new(cpus, o) < 0)
                        return -ENOMEM;
        }
        if ((r = may_run_document(scope, b, &may)) < 0)
                return r;
        noisy_list = cpu_set_format_list(&noisy);
        if (!noisy_list)
                return -ENOMEM;
        doc = json_pack("{s:f, s:s, s:s, s:s?, s:s, s:s, s:{s:b, s:s*}, s:O, s:O}", "seconds", secs, "cpus", list,
                        "source", scope->source, "profile", scope->profile, "verdict",
                        cpu_set_is_empty(&noisy) ? "quiet" : "noisy", "noisy_cpus", noisy_list, "osnoise", "ran",
                        scope->osnoise != NULL, "reason", scope->osnoise ? NULL : scope->osnoise_reason, "cpu", cpus,
                        "may_run", may);
        if (!doc)
                return -ENOMEM;
        *ret = TAKE_PTR(doc);
        return 0;
}

/* ---- what to observe ---- */

void audit_target_done(AuditTarget *x) {
        strv_free(x->s.partitions);
        strv_free(x->s.irqs_managed);
        strv_free(x->s.irqs_applied);
        free(x->source);
        free(x->profile);
        *x = (AuditTarget) {};
}

/* The applied profile as the journal holds it, resolved for this host: its isolated CPUs, the
 * cgroups of its partitions, its latency limit. 0 when there is none to use. */
static int target_from_journal(Root *root, const Journal *j, AuditTarget *x, CpuSet *ret_isolated) {
        _cleanup_(json_decrefp) json_t *doc = NULL;
        Profile *profile = NULL;
        Error pe = {};
        PrepareError e = {};
        Prepared p = {};
        size_t i;
        json_t *v;

        if (!j->profile || !j->source)
                return 0;
        doc = json_loads(j->source, 0, NULL);
        if (!doc || profile_from_document(backend_profile_schema(), j->profile, doc, &profile, &pe) < 0) {
                error_done(&pe);
                return 0;
        }
        if (prepare_profile_built(root, profile, 0, &p, &e) < 0) {
                prepare_error_done(&e);
                return 0;
        }
        *ret_isolated = p.resolved->isolated;
        json_int_t limit =
                json_integer_value(json_object_get(json_object_get(p.resolved->doc, "check"), "latency_max_us"));
        x->limit_us = limit > 0 ? (unsigned) limit : 0;
        json_array_foreach (json_object_get(json_object_get(p.resolved->doc, "cpuset"), "partitions"), i, v) {
                const char *name = json_string_value(json_object_get(v, "name"));
                _cleanup_free_ char *slice = name ? systemd_partition_slice(name) : NULL;
                char *c = NULL, *d = NULL;
                if (!name)
                        continue;
                if (!slice || asprintf(&c, "/%s", name) < 0 || strv_push(&x->s.partitions, c) < 0 ||
                    asprintf(&d, "/%s", slice) < 0 || strv_push(&x->s.partitions, d) < 0) {
                        prepared_done(&p);
                        return -ENOMEM;
                }
        }
        prepared_done(&p);
        return 1;
}

int audit_target(Root *root, const Journal *j, const char *cpus, AuditTarget *x, char **ret_error) {
        CpuSet isolated = {}, s;
        int r;

        *x = (AuditTarget) {};
        *ret_error = NULL;
        /* The running kernel's nohz_full CPUs: where the tick should stop. */
        if (root_read_cpu_list(root, "sys/devices/system/cpu/nohz_full", &s) >= 0)
                x->s.nohz_full = s;

        if (j && j->profile) {
                x->profile = strdup(j->profile);
                if (!x->profile)
                        return -ENOMEM;
                for (size_t i = 0; i < j->n_applied; i++)
                        if (strncmp(j->applied[i].id, "irq/", 4) == 0 &&
                            strv_extend(&x->s.irqs_applied, j->applied[i].id) < 0)
                                return -ENOMEM;
                for (size_t i = 0; i < j->n_unmovable; i++)
                        if (strncmp(j->unmovable[i].id, "irq/", 4) == 0 &&
                            strv_extend(&x->s.irqs_managed, j->unmovable[i].id) < 0)
                                return -ENOMEM;
                r = target_from_journal(root, j, x, &isolated);
                if (r < 0)
                        return r;
        }

        if (cpus) {
                if (cpu_set_parse_list(cpus, &x->s.cpus, NULL) < 0 || cpu_set_is_empty(&x->s.cpus)) {
                        *ret_error = strdup("not a CPU list (\"2-7\", \"3,5\")");
                        return *ret_error ? -EINVAL : -ENOMEM;
                }
                x->source = strdup("--cpus");
        } else if (!cpu_set_is_empty(&isolated)) {
                x->s.cpus = isolated;
                if (asprintf(&x->source, "the isolated CPUs of %s", x->profile) < 0)
                        x->source = NULL;
        } else {
                if (root_read_cpu_list(root, "sys/devices/system/cpu/isolated", &s) >= 0)
                        cpu_set_or(&x->s.cpus, &s);
                cpu_set_or(&x->s.cpus, &x->s.nohz_full);
                if (cpu_set_is_empty(&x->s.cpus)) {
                        *ret_error = strdup("no isolated CPUs to observe: no profile with isolated CPUs is applied, "
                                            "and the kernel isolates none (isolcpus=, nohz_full=)");
                        return *ret_error ? -ENOENT : -ENOMEM;
                }
                x->source = strdup("the kernel's isolated and nohz_full CPUs");
        }
        if (!x->source)
                return -ENOMEM;
        x->s.source = x->source;
        x->s.profile = x->profile;
        long t = sysconf(_SC_CLK_TCK);
        x->s.clock_ticks = t > 0 ? (unsigned) t : 100;
        return 0;
}
