/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "proc.h"
#include "strv.h"
#include "task.h"

/* The "kthreads" section of a profile: where kernel threads run, and at which priority. */
static const char * const policy_choices[] = { "fifo", "rr", "other", "batch", "idle", NULL };
static const Schema policy_schema = { SCHEMA_STRING, .choices = policy_choices };
static const SchemaField kthread_rule_fields[] = { { "match", &schema_string },
                                                   { "policy", &policy_schema },
                                                   { "priority", &schema_prio },
                                                   { "cpus", &schema_cpus },
                                                   {} };
static const Schema kthread_rule_schema = { SCHEMA_OBJECT, .fields = kthread_rule_fields };
static const Schema kthread_rules_schema = { SCHEMA_ARRAY, .items = &kthread_rule_schema };
static const SchemaField kthread_fields[] = { { "affinity", &schema_cpus }, { "rules", &kthread_rules_schema }, {} };
static const Schema kthread_schema = { SCHEMA_OBJECT, .fields = kthread_fields };
static const SchemaField kthread_section = { "kthreads", &kthread_schema };

/* Kernel threads: scheduling policy/priority of the ones a rule names (ksoftirqd, rcuc, ktimers …
 * rank above realtime vCPUs), and the CPU affinity of every kernel thread the kernel lets us move,
 * kthreadd included (every new kernel thread starts with kthreadd's mask).
 *
 * Knob ids:   kthread/<comm>/sched       value "<policy>:<priority>" ("fifo:2", "other:0")
 *             kthread/<comm>/affinity    value a CPU list ("0,16")
 * Knob path:  proc/<pid>/stat (the thread found when planning).
 *
 * PIDs are not stable across boots, so ids name the thread by its comm only: the journal keeps
 * originals by id, and verify after a reboot must find "kthread/kswapd0/affinity" again. When two
 * kernel threads share a comm (nfsd, lockd …), the one with the lowest PID keeps the plain id and
 * each later one gets the id suffixed with "#<pid>" ("kthread/nfsd/affinity#812"): those ids
 * cannot be stable, but they must stay unique, and the first thread keeps the id it would have on
 * its own. For affinity knobs only movable threads count (a pinned thread of the same name has no
 * affinity knob to collide with). The read and write verbs find the thread again by comm: the
 * lowest PID with that comm, or exactly the suffixed PID (see kthread_find()).
 *
 * Writes are sched_setscheduler() and sched_setaffinity() on that thread, through the root's ops:
 * syscalls on this kernel's PIDs, so only where the root can schedule (ROOT_CAN_SCHEDULE: the real
 * "/"); under a tree every write is skipped (writes_need) and the engine neither owns nor journals
 * the knob. Every value the read verb returns ("batch:0", "0-3,8") is one the write verb takes
 * back.
 *
 * Threaded IRQ handlers ("irq/41-eth1-TxRx-0", every handler on PREEMPT_RT) get no affinity knob
 * either: whenever an IRQ's affinity changes, the kernel moves its thread to the IRQ's effective
 * affinity (irq_thread_check_affinity()), usually one CPU of the irq knob's list. A list of ours
 * would be undone by the irq backend's own write and then reported as drift for ever; the thread
 * follows its IRQ, which the irq section places. */

typedef struct Kthread {
        ProcStat stat;
        bool movable;           /* not PF_NO_SETAFFINITY, not an IRQ thread */
        int first_pid_sched;    /* the lowest PID with this comm; == pid if first */
        int first_pid_affinity; /* the same among movable threads */
} Kthread;

typedef struct KthreadList {
        Kthread *items; /* room for every PID kthread_scan() found */
        size_t n;
} KthreadList;

static void kthread_list_done(KthreadList *l) {
        for (size_t i = 0; i < l->n; i++)
                proc_stat_done(&l->items[i].stat);
        free(l->items);
        *l = (KthreadList) {};
}

static int read_stat(Root *root, int pid, ProcStat *ret) {
        _cleanup_free_ char *text = NULL;
        char path[64];
        int k;

        snprintf(path, sizeof(path), "proc/%d/stat", pid);
        k = root_read_file(root, path, &text, NULL);
        if (k < 0)
                return k;
        return proc_stat_parse(text, ret);
}

/* The scan reads stat files in batches of this many (root_read_many), into buffers of
 * STAT_BUF bytes: a stat line is a few hundred bytes; a longer one is read again whole. */
#define STAT_BATCH ROOT_BATCH
#define STAT_BUF 1024U

static int read_status(Root *root, int pid, ProcStatus *ret) {
        _cleanup_free_ char *text = NULL;
        char path[64];
        int k;

        snprintf(path, sizeof(path), "proc/%d/status", pid);
        k = root_read_file(root, path, &text, NULL);
        if (k < 0)
                return k;
        return proc_status_parse(text, ret);
}

/* A vanished task (it exited between readdir and open) is not an error. */
static bool task_gone(int k) {
        return k == -ENOENT || k == -ESRCH;
}

/* "irq/<n>-<action>", as kernel/irq/manage.c setup_irq_thread() names them. */
static bool is_irq_thread(const char *comm) {
        return startswith(comm, "irq/") && isdigit((unsigned char) comm[4]);
}

static bool is_kthread(Root *root, const ProcStat *st) {
        if (st->flags & PROC_PF_KTHREAD)
                return true;
        /* kthreadd is PID 2 and the parent of every other kernel thread. */
        if (st->pid == 2 || st->ppid == 2)
                return true;
        /* A real kernel always shows PF_KTHREAD; a user task with no flag at all is rare enough
         * (no ASLR) that asking status ("Kthread:", Linux 6.x) for those only costs nothing. */
        if (st->flags != 0)
                return false;
        ProcStatus s;
        return read_status(root, st->pid, &s) >= 0 && s.kthread == 1;
}

static int cmp_int(const void *a, const void *b) {
        int x = *(const int *) a, y = *(const int *) b;
        return (x > y) - (x < y);
}

/* PIDs under proc/, ascending. */
static int list_pids(Root *root, int **ret, size_t *ret_n) {
        _cleanup_free_ int *pids = NULL;
        size_t n = 0, cap = 0;
        DIR *d;
        int k;

        k = root_opendir(root, "proc", &d);
        if (k < 0)
                return k;
        for (struct dirent *de; (de = readdir(d));) {
                const char *c = de->d_name;
                if (!isdigit((unsigned char) *c))
                        continue;
                char *end;
                errno = 0;
                long v = strtol(c, &end, 10);
                if (errno || *end || v <= 0 || v > INT32_MAX)
                        continue;
                if (n == cap) {
                        size_t nc = cap ? cap * 2 : 1024;
                        int *np = realloc(pids, nc * sizeof(int));
                        if (!np) {
                                closedir(d);
                                return -ENOMEM;
                        }
                        pids = np;
                        cap = nc;
                }
                pids[n++] = (int) v;
        }
        closedir(d);
        if (n > 0)
                qsort(pids, n, sizeof(int), cmp_int);
        *ret = TAKE_PTR(pids);
        *ret_n = n;
        return 0;
}

static int cmp_by_comm(const void *a, const void *b) {
        const Kthread *x = *(Kthread * const *) a, *y = *(Kthread * const *) b;
        int c = strcmp(x->stat.comm, y->stat.comm);
        return c ? c : cmp_int(&x->stat.pid, &y->stat.pid);
}

/* Every kernel thread under proc/, by PID, with the first PID of its comm filled in. */
static int kthread_scan(Root *root, KthreadList *ret) {
        _cleanup_free_ int *pids = NULL;
        KthreadList l = {};
        size_t n_pids;
        int k;

        k = list_pids(root, &pids, &n_pids);
        if (k < 0)
                return k;
        _cleanup_close_ int proc_fd = root_open(root, "proc", O_RDONLY | O_DIRECTORY, 0);
        if (proc_fd < 0)
                return proc_fd;
        size_t batch = MIN(n_pids, (size_t) STAT_BATCH);
        _cleanup_free_ RootReadItem *items = calloc(MAX(batch, (size_t) 1), sizeof(RootReadItem));
        _cleanup_free_ char *bufs = malloc(MAX(batch, (size_t) 1) * (STAT_BUF + 32));
        /* At most one per PID: sized once, not doubled past the need (16k kernel threads on 1024
         * CPUs took 2.6 MB, half of it unused, at rtpartd's peak). */
        l.items = malloc(MAX(n_pids, (size_t) 1) * sizeof(Kthread));
        if (!items || !bufs || !l.items) {
                free(l.items);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n_pids; i++) {
                size_t slot = i % STAT_BATCH;
                if (slot == 0) {
                        size_t m = MIN(n_pids - i, (size_t) STAT_BATCH);
                        for (size_t j = 0; j < m; j++) {
                                char *b = bufs + j * (STAT_BUF + 32);
                                snprintf(b + STAT_BUF, 32, "%d/stat", pids[i + j]);
                                items[j] = (RootReadItem) { .rel = b + STAT_BUF, .buf = b, .size = STAT_BUF };
                        }
                        k = root_read_many(root, proc_fd, items, m);
                        if (k < 0)
                                goto fail;
                }
                ProcStat st;
                RootReadItem *it = &items[slot];
                if (it->result < 0)
                        k = (int) it->result;
                else if ((size_t) it->result >= STAT_BUF - 1)
                        k = read_stat(root, pids[i], &st); /* longer than the buffer: whole */
                else
                        k = proc_stat_parse(it->buf, &st);
                if (task_gone(k) || k == -EINVAL)
                        continue; /* exited, or not a stat line (a fake tree's stray file) */
                if (k < 0)
                        goto fail;
                if (!is_kthread(root, &st)) {
                        proc_stat_done(&st);
                        continue;
                }
                l.items[l.n++] = (Kthread) {
                        /* l.n <= i < n_pids: room was made for every PID */
                        .stat = st,
                        .movable = !(st.flags & PROC_PF_NO_SETAFFINITY) && !is_irq_thread(st.comm),
                        .first_pid_sched = st.pid,
                        .first_pid_affinity = st.pid,
                };
        }

        /* Group by comm (sorted copies of pointers: O(n log n) for 10k threads on 1024 CPUs). */
        if (l.n > 1) {
                _cleanup_free_ Kthread **by = malloc(l.n * sizeof(Kthread *));
                if (!by) {
                        k = -ENOMEM;
                        goto fail;
                }
                for (size_t i = 0; i < l.n; i++)
                        by[i] = &l.items[i];
                qsort(by, l.n, sizeof(Kthread *), cmp_by_comm);
                Kthread *first = NULL, *first_movable = NULL;
                for (size_t i = 0; i < l.n; i++) {
                        if (!first || !streq(first->stat.comm, by[i]->stat.comm)) {
                                first = by[i];
                                first_movable = NULL;
                        }
                        by[i]->first_pid_sched = first->stat.pid;
                        if (by[i]->movable) {
                                if (!first_movable)
                                        first_movable = by[i];
                                by[i]->first_pid_affinity = first_movable->stat.pid;
                        }
                }
        }
        *ret = l;
        return 0;
fail:
        kthread_list_done(&l);
        return k;
}

/* "kthread/<comm>/<what>" or, for a later thread of the same comm, "…#<pid>". */
static int format_id(const char *comm, const char *what, int pid, int first_pid, char **ret) {
        int n = pid == first_pid ? asprintf(ret, "kthread/%s/%s", comm, what)
                                 : asprintf(ret, "kthread/%s/%s#%d", comm, what, pid);
        return n < 0 ? -ENOMEM : 0;
}

static int note_same_comm(Knob *kn, int pid, int first_pid) {
        if (pid == first_pid)
                return 0;
        if (asprintf(&kn->note, "shares its name with PID %d; told apart by its PID, which changes at reboot",
                     first_pid) < 0) {
                kn->note = NULL;
                return -ENOMEM;
        }
        return 0;
}

typedef struct Rule {
        const char *match;
        int policy; /* -1: the rule leaves scheduling alone */
        unsigned priority;
        const char *cpus; /* NULL: the section's affinity */
} Rule;

static int rule_pointer(size_t i, const char *key, char **ret) {
        return asprintf(ret, "/kthreads/rules/%zu%s%s", i, key ? "/" : "", strempty(key)) < 0 ? -ENOMEM : 0;
}

static int parse_rules(PlanCtx *ctx, json_t *rules, Rule **ret, size_t *ret_n) {
        _cleanup_free_ Rule *out = NULL;
        size_t n = json_array_size(rules), i;
        json_t *item;
        int k;

        if (n > 0) {
                out = calloc(n, sizeof(Rule));
                if (!out)
                        return -ENOMEM;
        }
        json_array_foreach (rules, i, item) {
                const char *policy = json_string_value(json_object_get(item, "policy"));
                json_t *prio = json_object_get(item, "priority");
                long long p = json_integer_value(prio);
                _cleanup_free_ char *ptr = NULL;
                Rule *r = &out[i];

                *r = (Rule) {
                        .match = json_string_value(json_object_get(item, "match")),
                        .policy = -1,
                        .cpus = json_string_value(json_object_get(item, "cpus")),
                };
                if (!r->match) {
                        k = rule_pointer(i, NULL, &ptr);
                        if (k < 0)
                                return k;
                        return plan_fail(ctx, ptr, "missing \"match\" (a shell pattern such as \"ksoftirqd/*\")");
                }
                if (r->cpus && !*r->cpus) {
                        k = rule_pointer(i, "cpus", &ptr);
                        if (k < 0)
                                return k;
                        return plan_fail(ctx, ptr,
                                         "no CPU left for the kernel threads this rule matches; "
                                         "name at least one, e.g. \"housekeeping\"");
                }
                if (!policy) {
                        if (prio) {
                                k = rule_pointer(i, "priority", &ptr);
                                if (k < 0)
                                        return k;
                                return plan_fail(ctx, ptr,
                                                 "a priority needs a policy; add \"policy\": \"fifo\" to this rule");
                        }
                        continue;
                }
                r->policy = proc_policy_from_string(policy);
                if (r->policy < 0 || r->policy == PROC_SCHED_DEADLINE) {
                        k = rule_pointer(i, "policy", &ptr);
                        if (k < 0)
                                return k;
                        return plan_fail(ctx, ptr, "\"%s\" is not a policy; use fifo, rr, other, batch or idle",
                                         policy);
                }
                bool rt = r->policy == PROC_SCHED_FIFO || r->policy == PROC_SCHED_RR;
                if (rt && (!prio || p < 1 || p > 99)) {
                        k = rule_pointer(i, "priority", &ptr);
                        if (k < 0)
                                return k;
                        if (!prio)
                                return plan_fail(
                                        ctx, ptr,
                                        "policy \"%s\" needs a priority from 1 to 99; add e.g. \"priority\": 2",
                                        policy);
                        return plan_fail(ctx, ptr, "policy \"%s\" takes a priority from 1 to 99, not %lld; use e.g. 2",
                                         policy, p);
                }
                if (!rt && prio && p != 0) {
                        k = rule_pointer(i, "priority", &ptr);
                        if (k < 0)
                                return k;
                        return plan_fail(ctx, ptr,
                                         "policy \"%s\" has no realtime priority, so the priority must be 0, not %lld; "
                                         "remove \"priority\" or use \"fifo\"",
                                         policy, p);
                }
                r->priority = rt ? (unsigned) p : 0;
        }
        *ret = TAKE_PTR(out);
        *ret_n = n;
        return 0;
}

/* The scheduling knob of a thread a rule gives a policy. */
static int plan_sched(PlanCtx *ctx, const Kthread *t, const Rule *rule, const char *path) {
        const ProcStat *st = &t->stat;
        _cleanup_free_ char *id = NULL, *cur = NULL, *want = NULL;
        Knob *kn;
        int k = format_id(st->comm, "sched", st->pid, t->first_pid_sched, &id);
        if (k >= 0)
                k = proc_sched_format(st->policy, st->rt_priority, &cur);
        if (k >= 0)
                k = proc_sched_format((unsigned) rule->policy, rule->priority, &want);
        if (k >= 0)
                k = plan_add(ctx, id, VALUE_AUTO, path, cur, want, false, &kn);
        return k < 0 ? k : note_same_comm(kn, st->pid, t->first_pid_sched);
}

/* The affinity knob of a thread the kernel lets move. */
static int plan_affinity(PlanCtx *ctx, const Kthread *t, const char *want, const char *path) {
        const ProcStat *st = &t->stat;
        _cleanup_free_ char *id = NULL, *cur = NULL;
        ProcStatus status;
        Knob *kn;
        int k = read_status(ctx->root, st->pid, &status);
        if (k < 0 && !task_gone(k) && k != -EINVAL)
                return k;
        if (k >= 0 && status.has_cpus_allowed && !(cur = cpu_set_format_list(&status.cpus_allowed)))
                return -ENOMEM;
        k = format_id(st->comm, "affinity", st->pid, t->first_pid_affinity, &id);
        if (k >= 0)
                k = plan_add(ctx, id, VALUE_CPU_LIST, path, cur, want, false, &kn);
        return k < 0 ? k : note_same_comm(kn, st->pid, t->first_pid_affinity);
}

/* The section's "affinity" (default: the housekeeping CPUs), in *hk where it is made. */
static int plan_affinity_default(PlanCtx *ctx, json_t *sec, char **hk, const char **ret) {
        const char *affinity = json_string_value(json_object_get(sec, "affinity"));
        if (!affinity) {
                *hk = cpu_set_format_list(&ctx->resolved->housekeeping);
                if (!*hk)
                        return -ENOMEM;
                affinity = *hk;
        }
        if (!*affinity)
                return plan_fail(ctx, "/kthreads/affinity",
                                 "no CPU left for kernel threads; name at least one, e.g. \"housekeeping\"");
        *ret = affinity;
        return 0;
}

static int kthread_plan(PlanCtx *ctx) {
        json_t *sec = json_object_get(ctx->resolved->doc, "kthreads");
        _cleanup_free_ Rule *rules = NULL;
        _cleanup_free_ char *hk = NULL;
        _cleanup_(kthread_list_done) KthreadList l = {};
        size_t n_rules = 0, pinned = 0, irq_threads = 0;
        const char *affinity = NULL;
        int k;

        if (!sec)
                return 0;
        k = parse_rules(ctx, json_object_get(sec, "rules"), &rules, &n_rules);
        if (k >= 0)
                k = plan_affinity_default(ctx, sec, &hk, &affinity);
        if (k < 0)
                return k;
        k = kthread_scan(ctx->root, &l);
        if (k == -ENOENT)
                return plan_note(ctx, "kthread: no /proc on this host; kernel threads skipped");
        if (k < 0)
                return k;
        if (l.n == 0)
                return plan_note(ctx, "kthread: no kernel threads found in /proc; skipped");

        for (size_t i = 0; i < l.n; i++) {
                const Kthread *t = &l.items[i];
                const Rule *rule = NULL;
                char path[64];

                for (size_t j = 0; j < n_rules && !rule; j++)
                        if (fnmatch(rules[j].match, t->stat.comm, 0) == 0)
                                rule = &rules[j];
                snprintf(path, sizeof(path), "proc/%d/stat", t->stat.pid);
                if (rule && rule->policy >= 0 && (k = plan_sched(ctx, t, rule, path)) < 0)
                        return k;
                if (!t->movable) {
                        if (t->stat.flags & PROC_PF_NO_SETAFFINITY)
                                pinned++;
                        else
                                irq_threads++;
                        continue;
                }
                k = plan_affinity(ctx, t, rule && rule->cpus ? rule->cpus : affinity, path);
                if (k < 0)
                        return k;
        }
        if (pinned > 0) {
                k = plan_note(ctx,
                              "kthread: %zu per-CPU kernel threads are pinned by the kernel (PF_NO_SETAFFINITY); "
                              "their affinity is left alone",
                              pinned);
                if (k < 0)
                        return k;
        }
        if (irq_threads > 0)
                return plan_note(ctx,
                                 "kthread: %zu IRQ threads follow their IRQ's affinity (set in the irq section); "
                                 "their affinity is left alone",
                                 irq_threads);
        return 0;
}

/* Splits "kthread/<comm>/<what>[#<pid>]" into comm, what and pid (0 without suffix). */
static int parse_id(const char *id, char **ret_comm, bool *ret_affinity, int *ret_pid) {
        if (!startswith(id, "kthread/"))
                return -EINVAL;
        _cleanup_free_ char *s = strdup(id + strlen("kthread/"));
        int pid = 0;
        if (!s)
                return -ENOMEM;
        char *hash = strrchr(s, '#');
        if (hash && hash[1] && strspn(hash + 1, "0123456789") == strlen(hash + 1)) {
                long v = strtol(hash + 1, NULL, 10);
                if (v <= 0 || v > INT32_MAX)
                        return -EINVAL;
                pid = (int) v;
                *hash = 0;
        }
        char *slash = strrchr(s, '/');
        if (!slash || slash == s)
                return -EINVAL;
        bool affinity;
        if (streq(slash + 1, "affinity"))
                affinity = true;
        else if (streq(slash + 1, "sched"))
                affinity = false;
        else
                return -EINVAL;
        *slash = 0;
        *ret_comm = TAKE_PTR(s);
        *ret_affinity = affinity;
        *ret_pid = pid;
        return 0;
}

static int pid_from_path(const char *path) {
        int pid;
        if (!path || sscanf(path, "proc/%d/stat", &pid) != 1 || pid <= 0)
                return 0;
        return pid;
}

/* A task of the calling process: itself, one of its threads, or a child process (and the
 * child's threads, whose PPid is the caller too). Only on the real host, where PIDs are ours. */
static bool caller_owns(Root *root, const ProcStat *st) {
        char path[64];
        pid_t self = getpid();

        if (!root_can(root, ROOT_CAN_SCHEDULE))
                return false;
        if (st->pid == self || st->ppid == self)
                return true;
        snprintf(path, sizeof(path), "proc/%d/task/%d", (int) self, st->pid);
        return root_exists(root, path);
}

/* Is this PID still the thread the knob names? A kernel thread with the knob's comm, or, when the
 * PID was given (explicit: the knob's path or "#pid"), a task of the caller with that comm. */
static int check_pid(Root *root, int pid, const char *comm, bool need_movable, bool explicit, ProcStat *ret) {
        ProcStat st;
        int k = read_stat(root, pid, &st);
        if (k < 0)
                return task_gone(k) || k == -EINVAL ? 0 : k;
        bool ok = streq(st.comm, comm);
        if (ok && !is_kthread(root, &st))
                ok = explicit && caller_owns(root, &st);
        if (ok && need_movable)
                ok = !(st.flags & PROC_PF_NO_SETAFFINITY) && !is_irq_thread(st.comm);
        if (!ok) {
                proc_stat_done(&st);
                return 0;
        }
        *ret = st;
        return 1;
}

/* Finds the thread a knob names: exactly its suffixed PID, or the lowest PID with its comm
 * (tried first at the PID it had when planned, to spare a scan of /proc). For an affinity knob
 * the lowest movable thread with that comm counts, as when planning; only if every thread of that
 * comm is pinned by the kernel is the lowest of those returned, so that a knob naming one by hand
 * gets the kernel's refusal (KNOB_REFUSED) rather than "no such thread". Returns 1 and the stat,
 * or 0 if no such thread runs now.
 *
 * The scan by comm considers kernel threads only. A user task is found only at a PID the knob
 * gives and only if it belongs to the caller (see caller_owns()): that lets a test start a thread
 * of its own and drive the verbs with a knob it builds, while a process that names itself
 * "ksoftirqd/3" and waits for a kernel thread's old PID after a reboot gets no realtime priority
 * from rtpart. */
static int kthread_find(Root *root, const char *comm, bool affinity, int pid, int planned_pid, ProcStat *ret) {
        _cleanup_(kthread_list_done) KthreadList l = {};
        Kthread *pinned = NULL;
        int k;

        if (pid > 0)
                return check_pid(root, pid, comm, /* need_movable= */ false, /* explicit= */ true, ret);
        if (planned_pid > 0) {
                k = check_pid(root, planned_pid, comm, affinity, /* explicit= */ true, ret);
                if (k != 0)
                        return k;
        }
        k = kthread_scan(root, &l);
        if (k < 0)
                return k;
        for (size_t i = 0; i < l.n; i++) {
                Kthread *t = &l.items[i];
                if (!streq(t->stat.comm, comm))
                        continue;
                if (affinity && !t->movable) {
                        if (!pinned && !is_irq_thread(comm))
                                pinned = t;
                        continue;
                }
                *ret = t->stat;
                t->stat = (ProcStat) {}; /* taken */
                return 1;
        }
        if (!pinned)
                return 0;
        *ret = pinned->stat;
        pinned->stat = (ProcStat) {};
        return 1;
}

static int kthread_read(Root *root, const Knob *kn, char **ret) {
        _cleanup_free_ char *comm = NULL;
        ProcStat st;
        ProcStatus status;
        bool affinity;
        int pid, k;

        k = parse_id(kn->id, &comm, &affinity, &pid);
        if (k < 0)
                return k;
        k = kthread_find(root, comm, affinity, pid, pid_from_path(kn->path), &st);
        if (k < 0)
                return k;
        if (k == 0) {
                *ret = NULL; /* no such thread now */
                return 0;
        }
        if (!affinity) {
                k = proc_sched_format(st.policy, st.rt_priority, ret);
                proc_stat_done(&st);
                return k;
        }
        k = read_status(root, st.pid, &status);
        proc_stat_done(&st);
        if (task_gone(k) || (k >= 0 && !status.has_cpus_allowed)) {
                *ret = NULL;
                return 0;
        }
        if (k < 0)
                return k;
        char *s = cpu_set_format_list(&status.cpus_allowed);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

/* Is the thread pinned by the kernel now? Asked after a refusal: the flag, not the errno, tells
 * a per-CPU thread from a mask with no CPU the thread may use. */
static bool is_pinned(Root *root, int tid) {
        ProcStat st;
        if (read_stat(root, tid, &st) < 0)
                return false;
        bool pinned = st.flags & PROC_PF_NO_SETAFFINITY;
        proc_stat_done(&st);
        return pinned;
}

/* Writes a knob with sched_setscheduler()/sched_setaffinity() on the thread the read verb finds.
 *
 *   root cannot schedule     KNOB_SKIPPED: a tree's PIDs are nobody's threads (ROOT_CAN_SCHEDULE)
 *   value NULL               0: the thread did not run when rtpart first read the knob, so there is
 *                            nothing to put back
 *   thread gone (not found,  KNOB_SKIPPED: nothing left to hold the value. On apply the knob is then
 *   or ESRCH)                neither owned nor journalled; on rollback/revert there is nothing to
 *                            restore (a thread that comes back starts with the kernel's defaults)
 *   pinned (affinity)        KNOB_REFUSED
 *
 * Anything else the kernel says (EPERM without CAP_SYS_NICE or from a realtime cgroup budget, EINVAL
 * for a mask without a usable CPU) is an error. */
static int kthread_write_value(Root *root, const Knob *kn, const char *value) {
        _cleanup_free_ char *comm = NULL;
        unsigned policy = 0, prio = 0;
        CpuSet cpus;
        ProcStat st;
        bool affinity;
        int pid, k;

        k = parse_id(kn->id, &comm, &affinity, &pid);
        if (k < 0)
                return k;
        if (!root_can(root, ROOT_CAN_SCHEDULE))
                return KNOB_SKIPPED;
        if (!value)
                return 0;
        if (affinity) {
                k = cpu_set_parse_list(value, &cpus, NULL);
                if (k < 0)
                        return k;
                if (cpu_set_is_empty(&cpus))
                        return -EINVAL;
        } else {
                k = proc_sched_parse(value, &policy, &prio);
                if (k < 0)
                        return k;
        }

        k = kthread_find(root, comm, affinity, pid, pid_from_path(kn->path), &st);
        if (k < 0)
                return k;
        if (k == 0)
                return KNOB_SKIPPED;
        int tid = st.pid;
        proc_stat_done(&st);

        k = affinity ? root_set_affinity(root, tid, &cpus) : root_set_scheduler(root, tid, policy, prio);
        switch (-k) {
        case 0:
                return 0;
        case ESRCH: /* exited between the lookup and the call */
                return KNOB_SKIPPED;
        case EINVAL:
        case EPERM:
                /* per-CPU kthread (PF_NO_SETAFFINITY): sched_setaffinity() will not move it */
                if (affinity && is_pinned(root, tid))
                        return KNOB_REFUSED;
                return k;
        default:
                return k;
        }
}

#define KTHREAD_REFUSAL "the kernel pins this thread to its CPU"
#define KTHREAD_NEEDS_HOST "thread scheduling needs the real host"

static int kthread_write(Root *root, const Knob *kn, const char *value, const KnobKeep *keep, KnobResult *ret) {
        *ret = (KnobResult) {};
        int r = kthread_write_value(root, kn, value);
        if (r == KNOB_REFUSED)
                knob_result_reason(ret, KTHREAD_REFUSAL);
        else if (r == KNOB_SKIPPED)
                knob_result_reason(ret,
                                   root_can(root, ROOT_CAN_SCHEDULE) ? "the thread has exited" : KTHREAD_NEEDS_HOST);
        return knob_result_finish(ret, r);
}

/* Rules: each matches threads by name and says where they run, how, or both. */
static int kthread_check(const char *file, json_t *section, const char *pointer, Error *e) {
        _cleanup_free_ char *p = json_pointer_append(pointer, "rules");
        return p ? backend_check_rules(file, json_object_get(section, "rules"), p, NULL, "policy",
                                       "give \"policy\" (with \"priority\") or \"cpus\", or both", e)
                 : -ENOMEM;
}

const Backend backend_kthread = {
        .domain = DOMAIN_KTHREAD,
        .name = "kthread",
        .schema = &kthread_section,
        .check = kthread_check,
        .plan = kthread_plan,
        .read = kthread_read,
        .write = kthread_write,
        .refusal_reason = KTHREAD_REFUSAL,
        .flags = BACKEND_OBJECTS_VANISH | BACKEND_FOLLOWS_FORKS | BACKEND_HOTPLUG_MOVES,
        .writes_need = ROOT_CAN_SCHEDULE,
        .writes_need_reason = KTHREAD_NEEDS_HOST,
        .watch = knob_watch_none, /* proc/PID/stat: the proc connector and the timer */
};
