/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fnmatch.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proc.h"
#include "strv.h"
#include "task.h"

void task_done(Task *t) {
        free(t->comm);
        free(t->cgroup);
        *t = (Task) {};
}

void task_rules_done(TaskRules *r) {
        strv_free(r->partitions);
        strv_free(r->allow);
        *r = (TaskRules) {};
}

/* "3:cpuset:/rtpart-rt" (v1, controllers comma-separated) or "0::/user.slice" (v2). */
int task_cgroup_parse(const char *text, char **ret) {
        const char *v2 = NULL, *v1 = NULL;
        size_t v2_len = 0, v1_len = 0;

        for (const char *line = text; line && *line;) {
                const char *end = strchrnul(line, '\n');
                const char *c1 = memchr(line, ':', (size_t) (end - line));
                const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t) (end - c1 - 1)) : NULL;
                if (c2) {
                        const char *path = c2 + 1;
                        size_t len = (size_t) (end - path);
                        if (c1 - line == 1 && line[0] == '0' && c2 == c1 + 1) {
                                v2 = path;
                                v2_len = len;
                        } else
                                for (const char *w = c1 + 1; w < c2;) {
                                        const char *comma = memchr(w, ',', (size_t) (c2 - w));
                                        const char *we = comma ? comma : c2;
                                        if (we - w == 6 && strncmp(w, "cpuset", 6) == 0) {
                                                v1 = path;
                                                v1_len = len;
                                        }
                                        w = we + 1;
                                }
                }
                line = *end ? end + 1 : end;
        }
        /* The cpuset controller lives in one hierarchy: v1 when it is mounted there. */
        const char *p = v1 ? v1 : v2;
        size_t len = v1 ? v1_len : v2_len;
        if (!p || len == 0 || p[0] != '/')
                return -ENOENT;
        char *s = strndup(p, len);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

static int read_task_file(Root *root, int pid, const char *name, char **ret) {
        char path[64];
        snprintf(path, sizeof(path), "proc/%d/%s", pid, name);
        return root_read_file(root, path, ret, NULL);
}

int task_read(Root *root, int pid, Task *ret) {
        _cleanup_free_ char *stat_text = NULL, *status_text = NULL, *cgroup_text = NULL;
        ProcStat st = {};
        ProcStatus status = {};
        Task t = { .pid = pid };
        int r;

        r = read_task_file(root, pid, "stat", &stat_text);
        if (r >= 0)
                r = proc_stat_parse(stat_text, &st);
        if (r >= 0)
                r = read_task_file(root, pid, "status", &status_text);
        if (r >= 0)
                r = proc_status_parse(status_text, &status);
        if (r >= 0 && !status.has_cpus_allowed)
                r = -EINVAL;
        if (r < 0) {
                proc_stat_done(&st);
                return r;
        }
        t.comm = TAKE_PTR(st.comm);
        t.flags = st.flags;
        t.policy = st.policy;
        t.cpus_allowed = status.cpus_allowed;
        /* kthreadd is PID 2 and the parent of every other kernel thread; Linux 6.x also says so. */
        t.kernel = (st.flags & PROC_PF_KTHREAD) || st.pid == 2 || st.ppid == 2 || status.kthread == 1;
        proc_stat_done(&st);

        /* A kernel without cgroups, or a task that exited meanwhile: no cgroup. */
        r = read_task_file(root, pid, "cgroup", &cgroup_text);
        if (r >= 0)
                r = task_cgroup_parse(cgroup_text, &t.cgroup);
        if (r == -ENOMEM) {
                task_done(&t);
                return r;
        }
        *ret = t;
        return 0;
}

/* "/a" holds "/a" and "/a/b", not "/ab"; "/" holds everything. */
static bool cgroup_in(const char *cgroup, const char *top) {
        size_t n = strlen(top);
        while (n > 1 && top[n - 1] == '/')
                n--;
        if (n == 1 && top[0] == '/')
                return true;
        return strncmp(cgroup, top, n) == 0 && (cgroup[n] == 0 || cgroup[n] == '/');
}

static bool entry_matches(const char *entry, const Task *t) {
        if (entry[0] == '/')
                return t->cgroup && cgroup_in(t->cgroup, entry);
        return t->comm && fnmatch(entry, t->comm, 0) == 0;
}

bool task_is_allowed(const TaskRules *r, const Task *t) {
        bool allowed = false;

        for (char **p = r->partitions; t->cgroup && p && *p; p++)
                if (cgroup_in(t->cgroup, *p))
                        return true;
        for (char **a = r->allow; a && *a; a++) {
                if ((*a)[0] == '!') {
                        if (entry_matches(*a + 1, t))
                                return false;
                } else if (entry_matches(*a, t))
                        allowed = true;
        }
        return allowed;
}

bool task_on_isolated(const TaskRules *r, const Task *t) {
        return !t->kernel && cpu_set_intersects(&t->cpus_allowed, &r->isolated) && !task_is_allowed(r, t);
}

bool task_rules_allow_all(const TaskRules *r) {
        bool all = false;
        for (char **a = r->allow; a && *a; a++) {
                if ((*a)[0] == '!')
                        return false;
                if (streq(*a, "*"))
                        all = true;
        }
        return all;
}

const char *task_move_refusal(const Task *t) {
        if (t->flags & PROC_PF_NO_SETAFFINITY)
                return "the kernel pins it";
        switch (t->policy) {
        case PROC_SCHED_OTHER:
        case PROC_SCHED_BATCH:
        case PROC_SCHED_IDLE:
                return NULL;
        case PROC_SCHED_FIFO:
        case PROC_SCHED_RR:
                return "a realtime task could starve the housekeeping CPUs";
        default:
                return "its scheduling policy does not allow it to be moved safely";
        }
}

void task_move_target(const Task *t, const CpuSet *isolated, const CpuSet *housekeeping, CpuSet *ret) {
        CpuSet s = t->cpus_allowed;
        cpu_set_andnot(&s, isolated);
        *ret = cpu_set_is_empty(&s) ? *housekeeping : s;
}

int task_set_affinity(int tid, const CpuSet *cpus) {
        int last = cpu_set_last(cpus);
        if (last < 0)
                return -EINVAL;
        size_t size = CPU_ALLOC_SIZE(last + 1);
        cpu_set_t *set = CPU_ALLOC(last + 1);
        if (!set)
                return -ENOMEM;
        CPU_ZERO_S(size, set);
        CPU_SET_FOREACH (cpu, cpus)
                CPU_SET_S((size_t) cpu, size, set);
        int r = sched_setaffinity(tid, size, set) < 0 ? -errno : 0;
        CPU_FREE(set);
        return r;
}

int task_set_scheduler(int tid, unsigned policy, unsigned priority) {
        struct sched_param param = { .sched_priority = (int) priority };
        int p = (int) policy;
        int cur = sched_getscheduler(tid);
        if (cur < 0)
                return -errno;
        if (cur & SCHED_RESET_ON_FORK)
                p |= SCHED_RESET_ON_FORK;
        return sched_setscheduler(tid, p, &param) < 0 ? -errno : 0;
}
