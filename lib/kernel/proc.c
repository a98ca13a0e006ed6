/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proc.h"

static const char * const policy_table[] = {
        [PROC_SCHED_OTHER] = "other", [PROC_SCHED_FIFO] = "fifo", [PROC_SCHED_RR] = "rr",
        [PROC_SCHED_BATCH] = "batch", [PROC_SCHED_IDLE] = "idle", [PROC_SCHED_DEADLINE] = "deadline",
};

const char *proc_policy_to_string(unsigned policy) {
        return policy < ELEMENTSOF(policy_table) ? policy_table[policy] : NULL;
}

int proc_policy_from_string(const char *s) {
        if (!s)
                return -EINVAL;
        for (unsigned i = 0; i < ELEMENTSOF(policy_table); i++)
                if (policy_table[i] && streq(policy_table[i], s))
                        return (int) i;
        return -EINVAL;
}

int proc_sched_format(unsigned policy, unsigned priority, char **ret) {
        const char *name = proc_policy_to_string(policy);
        int n = name ? asprintf(ret, "%s:%u", name, priority) : asprintf(ret, "%u:%u", policy, priority);
        return n < 0 ? -ENOMEM : 0;
}

/* A decimal number without sign, at most max; the whole string. */
static int parse_uint(const char *s, size_t len, unsigned max, unsigned *ret) {
        unsigned v = 0;
        if (len == 0 || len > 10)
                return -EINVAL;
        for (size_t i = 0; i < len; i++) {
                if (!isdigit((unsigned char) s[i]))
                        return -EINVAL;
                unsigned long long n = (unsigned long long) v * 10 + (unsigned) (s[i] - '0');
                if (n > max)
                        return -EINVAL;
                v = (unsigned) n;
        }
        *ret = v;
        return 0;
}

int proc_sched_parse(const char *s, unsigned *ret_policy, unsigned *ret_priority) {
        unsigned policy, prio;

        if (!s)
                return -EINVAL;
        const char *colon = strchr(s, ':');
        if (!colon || colon == s)
                return -EINVAL;
        _cleanup_free_ char *name = strndup(s, (size_t) (colon - s));
        if (!name)
                return -ENOMEM;
        int p = proc_policy_from_string(name);
        if (p >= 0)
                policy = (unsigned) p;
        else if (parse_uint(name, strlen(name), INT_MAX, &policy) < 0)
                return -EINVAL;
        if (parse_uint(colon + 1, strlen(colon + 1), 99, &prio) < 0)
                return -EINVAL;
        bool rt = policy == PROC_SCHED_FIFO || policy == PROC_SCHED_RR;
        if (rt ? prio == 0 : prio != 0)
                return -EINVAL;
        *ret_policy = policy;
        *ret_priority = prio;
        return 0;
}

static int parse_long(const char *s, const char **ret_end, long long *ret) {
        char *end;
        errno = 0;
        long long v = strtoll(s, &end, 10);
        if (errno || end == s)
                return -EINVAL;
        *ret_end = end;
        *ret = v;
        return 0;
}

int proc_stat_parse(const char *text, ProcStat *ret) {
        const char *open, *close, *p;
        long long v;

        if (!text)
                return -EINVAL;
        open = strchr(text, '(');
        close = strrchr(text, ')');
        if (!open || !close || close < open)
                return -EINVAL;

        /* Field 1: the PID before the comm. */
        if (parse_long(text, &p, &v) < 0 || v <= 0 || v > INT_MAX)
                return -EINVAL;
        while (*p == ' ')
                p++;
        if (p != open)
                return -EINVAL;
        int pid = (int) v;

        /* Fields 3…41 after the last ')'. Field 3 is a letter, the rest are numbers. */
        p = close + 1;
        if (*p != ' ')
                return -EINVAL;
        p++;
        char state = *p;
        if (!state || isspace((unsigned char) state))
                return -EINVAL;
        p++;

        /* Fields we do not use are only checked to be numbers: rsslim and the addresses are
         * unsigned 64-bit values that do not fit a long long. */
        long long fields[42] = {};
        for (unsigned f = 4; f <= 41; f++) {
                if (*p != ' ')
                        return -EINVAL;
                p++;
                const char *start = p;
                if (*p == '-')
                        p++;
                if (!isdigit((unsigned char) *p))
                        return -EINVAL;
                while (isdigit((unsigned char) *p))
                        p++;
                if (f == 4 || f == 9 || f == 14 || f == 15 || f == 22 || f == 39 || f == 40 || f == 41) {
                        const char *end;
                        if (parse_long(start, &end, &fields[f]) < 0 || end != p)
                                return -EINVAL;
                }
        }
        if (*p && *p != ' ' && *p != '\n')
                return -EINVAL;
        if (fields[4] < 0 || fields[4] > INT_MAX || fields[9] < 0 || fields[9] > UINT_MAX || fields[40] < 0 ||
            fields[40] > 99 || fields[41] < 0 || fields[41] > UINT_MAX || fields[14] < 0 || fields[15] < 0 ||
            fields[22] < 0 || fields[39] < 0 || fields[39] > INT_MAX)
                return -EINVAL;

        char *comm = strndup(open + 1, (size_t) (close - open - 1));
        if (!comm)
                return -ENOMEM;
        *ret = (ProcStat) {
                .pid = pid,
                .comm = comm,
                .state = state,
                .ppid = (int) fields[4],
                .flags = (unsigned) fields[9],
                .rt_priority = (unsigned) fields[40],
                .policy = (unsigned) fields[41],
                .cpu_ticks = (uint64_t) fields[14] + (uint64_t) fields[15],
                .start_ticks = (uint64_t) fields[22],
                .processor = (int) fields[39],
        };
        return 0;
}

void proc_stat_done(ProcStat *s) {
        if (!s)
                return;
        free(s->comm);
        *s = (ProcStat) {};
}

/* The value of "Key:\tvalue" if line starts with key, else NULL; the value runs to eol. */
static const char *status_value(const char *line, const char *eol, const char *key) {
        size_t n = strlen(key);
        if ((size_t) (eol - line) <= n || strncmp(line, key, n) != 0 || line[n] != ':')
                return NULL;
        const char *v = line + n + 1;
        while (v < eol && (*v == ' ' || *v == '\t'))
                v++;
        return v;
}

int proc_status_parse(const char *text, ProcStatus *ret) {
        ProcStatus s = { .ppid = -1, .kthread = -1 };
        bool have_list = false;
        int k;

        if (!text)
                return -EINVAL;
        for (const char *line = text; *line;) {
                const char *eol = strchrnul(line, '\n');
                const char *v;
                _cleanup_free_ char *value = NULL;

                if ((v = status_value(line, eol, "PPid"))) {
                        const char *end;
                        long long n;
                        if (parse_long(v, &end, &n) < 0 || n < 0 || n > INT_MAX)
                                return -EINVAL;
                        s.ppid = (int) n;
                } else if ((v = status_value(line, eol, "Kthread"))) {
                        const char *end;
                        long long n;
                        if (parse_long(v, &end, &n) < 0 || (n != 0 && n != 1))
                                return -EINVAL;
                        s.kthread = (int) n;
                } else if ((v = status_value(line, eol, "Cpus_allowed_list"))) {
                        value = strndup(v, (size_t) (eol - v));
                        if (!value)
                                return -ENOMEM;
                        k = cpu_set_parse_list(value, &s.cpus_allowed, NULL);
                        if (k < 0)
                                return -EINVAL;
                        s.has_cpus_allowed = have_list = true;
                } else if (!have_list && (v = status_value(line, eol, "Cpus_allowed"))) {
                        value = strndup(v, (size_t) (eol - v));
                        if (!value)
                                return -ENOMEM;
                        k = cpu_set_parse_mask(value, &s.cpus_allowed, NULL);
                        if (k < 0)
                                return -EINVAL;
                        s.has_cpus_allowed = true;
                }
                line = *eol ? eol + 1 : eol;
        }
        *ret = s;
        return 0;
}
