/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target for the parsers of a task's /proc files (lib/kernel/proc.c, lib/kernel/task.c). The first
 * byte picks what the rest is: 0 /proc/PID/stat, 1 /proc/PID/status, 2 /proc/PID/cgroup, 3 a
 * "policy:priority" scheduling value. What must hold:
 *   - a stat line that parses, printed again as the kernel prints it, parses to the same fields;
 *   - status: the allowed CPUs are only set when a Cpus_allowed line was there, and round-trip
 *     through the list form;
 *   - cgroup: a path found is absolute, one line, and part of the text;
 *   - a scheduling value that parses formats to one that parses to the same policy and priority. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proc.h"
#include "strv.h"
#include "task.h"

static void check_stat(const char *s) {
        ProcStat st = {}, again = {};
        if (proc_stat_parse(s, &st) < 0)
                return;
        if (!st.comm || st.pid <= 0 || st.ppid < 0 || st.rt_priority > 99 || !st.state)
                abort();
        _cleanup_free_ char *line = NULL;
        if (asprintf(&line,
                     "%d (%s) %c %d 1 1 0 -1 %u 0 0 0 0 0 0 0 0 20 0 1 0 5 0 0 18446744073709551615 0 0 0 0 0 0 0 "
                     "0 0 0 0 0 17 3 %u %u\n",
                     st.pid, st.comm, st.state, st.ppid, st.flags, st.rt_priority, st.policy) < 0)
                abort();
        if (proc_stat_parse(line, &again) < 0 || again.pid != st.pid || strcmp(again.comm, st.comm) != 0 ||
            again.state != st.state || again.ppid != st.ppid || again.flags != st.flags ||
            again.rt_priority != st.rt_priority || again.policy != st.policy)
                abort();
        proc_stat_done(&again);
        proc_stat_done(&st);
}

static void check_status(const char *s) {
        ProcStatus st;
        if (proc_status_parse(s, &st) < 0)
                return;
        if (st.has_cpus_allowed && !strstr(s, "Cpus_allowed"))
                abort();
        if (!st.has_cpus_allowed && !cpu_set_is_empty(&st.cpus_allowed))
                abort();
        if (st.kthread < -1 || st.kthread > 1 || st.ppid < -1)
                abort();
        _cleanup_free_ char *list = cpu_set_format_list(&st.cpus_allowed);
        CpuSet back;
        if (!list || cpu_set_parse_list(list, &back, NULL) < 0 || !cpu_set_equal(&back, &st.cpus_allowed))
                abort();
}

static void check_cgroup(const char *s) {
        _cleanup_free_ char *path = NULL;
        if (task_cgroup_parse(s, &path) < 0)
                return;
        if (path[0] != '/' || strchr(path, '\n') || !strstr(s, path))
                abort();
}

static void check_sched(const char *s) {
        unsigned policy, prio, p2, q2;
        if (proc_sched_parse(s, &policy, &prio) < 0)
                return;
        _cleanup_free_ char *f = NULL;
        if (proc_sched_format(policy, prio, &f) < 0 || proc_sched_parse(f, &p2, &q2) < 0 || p2 != policy || q2 != prio)
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size < 1 || size > 16384)
                return 0;
        _cleanup_free_ char *s = strndup((const char *) data + 1, size - 1);
        if (!s)
                return 0;
        switch (data[0] % 4) {
        case 0:
                check_stat(s);
                break;
        case 1:
                check_status(s);
                break;
        case 2:
                check_cgroup(s);
                break;
        case 3:
                check_sched(s);
                break;
        }
        return 0;
}
