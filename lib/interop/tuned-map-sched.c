/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "strv.h"
#include "tuned-internal.h"

/* The [scheduler] plugin: the isolated CPUs (mapped in tuned-map.c), kernel threads' scheduling
 * (group.*), the processes left alone (ps_blacklist) and the default IRQ affinity. */

/* A Python regular expression over `ps -eo cmd` as a shell pattern over a kernel thread's name
 * ("^\[ksoftirqd" → "ksoftirqd*"); NULL where there is no such pattern. *ret_kthread: it names
 * kernel threads ("[name]"). */
static char *regex_to_glob(const char *re, bool *ret_kthread) {
        StrBuf b = {};
        const char *p = re;
        bool anchored = false, end = false;
        *ret_kthread = false;
        if (*p == '^')
                p++, anchored = true;
        if (startswith(p, "\\[")) {
                p += 2;
                *ret_kthread = anchored = true;
        }
        strbuf_append(&b, anchored ? "" : "*");
        for (; *p; p++) {
                if (p[0] == '.' && p[1] == '*') {
                        if (!(b.len > 0 && b.s[b.len - 1] == '*'))
                                strbuf_append(&b, "*");
                        p++;
                } else if (*p == '.')
                        strbuf_append(&b, "?");
                else if (*p == '\\' && p[1] == ']' && *ret_kthread && (p[2] == 0 || (p[2] == '$' && p[3] == 0))) {
                        end = true;
                        break;
                } else if (*p == '$' && p[1] == 0) {
                        end = true;
                        break;
                } else if (*p == '\\' && p[1] && strchr("[].-/\\^$", p[1])) {
                        if (strchr("[]", p[1])) {
                                strbuf_done(&b);
                                return NULL;
                        }
                        char c[2] = { *++p, 0 };
                        strbuf_append(&b, c);
                } else if (isalnum((unsigned char) *p) || strchr("_-/:@ ", *p)) {
                        char c[2] = { *p, 0 };
                        strbuf_append(&b, c);
                } else {
                        strbuf_done(&b);
                        return NULL;
                }
        }
        if (!end && !(b.len > 0 && b.s[b.len - 1] == '*'))
                strbuf_append(&b, "*");
        return strbuf_steal(&b);
}

typedef struct Rule {
        long prio;
        size_t order;
        json_t *rule;
} Rule;

static int rule_cmp(const void *a, const void *b) {
        const Rule *x = a, *y = b;
        /* Later rules win in tuned, the first in rtpart: highest rule_prio, latest first. */
        if (x->prio != y->prio)
                return x->prio > y->prio ? -1 : 1;
        return x->order > y->order ? -1 : x->order < y->order;
}

static int map_group(Mapper *m, const char *group, const char *v, Rule *ret) {
        /* rule_prio:policy:priority:affinity:regex; the regex may hold ':'. */
        char *f[5] = {};
        _cleanup_free_ char *copy = strdup(v);
        if (!copy)
                return -ENOMEM;
        char *p = copy;
        for (int i = 0; i < 4; i++) {
                char *c = strchr(p, ':');
                if (!c)
                        return UNSUPPORTED(m, "'%s' is not rule_prio:policy:priority:affinity:regex", v);
                *c = 0;
                f[i] = p;
                p = c + 1;
        }
        f[4] = p;
        long prio = 0, rprio = 0;
        if (!tuned_py_int(f[0], strlen(f[0]), &rprio))
                return UNSUPPORTED(m, "rule priority '%s' is not a number", f[0]);
        bool kthread;
        _cleanup_free_ char *glob = regex_to_glob(f[4], &kthread);
        if (!glob)
                return UNSUPPORTED(m, "regular expression '%s' has no shell-pattern equivalent over thread names",
                                   f[4]);
        if (!kthread)
                return UNSUPPORTED(m,
                                   "group.%s matches user processes ('%s'); rtpart sets the scheduling of kernel "
                                   "threads only (kthreads.rules): set it where the process is started (chrt, "
                                   "systemd's CPUSchedulingPolicy=)",
                                   group, f[4]);
        static const struct {
                const char *tuned, *rtpart;
        } policies[] = { { "f", "fifo" }, { "r", "rr" }, { "o", "other" }, { "b", "batch" }, { "i", "idle" } };
        const char *policy = NULL;
        for (size_t i = 0; i < ELEMENTSOF(policies); i++)
                if (streq(f[1], policies[i].tuned))
                        policy = policies[i].rtpart;
        if (!policy && !streq(f[1], "*"))
                return UNSUPPORTED(m, "scheduling policy '%s' is none of f, r, o, b, i, *", f[1]);
        json_t *rule = json_object();
        if (!rule)
                return -ENOMEM;
        int k = json_object_set_new(rule, "match", json_string(glob));
        if (policy) {
                k |= json_object_set_new(rule, "policy", json_string(policy));
                if (!tuned_py_int(f[2], strlen(f[2]), &prio) || prio < 0 || prio > 99) {
                        json_decref(rule);
                        return UNSUPPORTED(m, "priority '%s' is not 0 to 99", f[2]);
                }
                if (streq(policy, "fifo") || streq(policy, "rr") || prio > 0)
                        k |= json_object_set_new(rule, "priority", json_integer(prio));
        }
        if (!streq(f[3], "*")) {
                if (startswith(f[3], "cgroup.")) {
                        json_decref(rule);
                        return UNSUPPORTED(m, "affinity by cgroup ('%s') is not expressible in kthreads.rules", f[3]);
                }
                CpuSet s = {};
                tuned_hex_add(&s, f[3], strlen(f[3]));
                _cleanup_free_ char *sym = tuned_cpu_symbol(m, &s, FORM_CLASS);
                if (!sym || cpu_set_is_empty(&s)) {
                        json_decref(rule);
                        return sym ? UNSUPPORTED(m, "affinity '%s' is not a CPU mask", f[3]) : -ENOMEM;
                }
                k |= json_object_set_new(rule, "cpus", json_string(sym));
        }
        if (k < 0) {
                json_decref(rule);
                return -ENOMEM;
        }
        if (json_object_size(rule) == 1) {
                json_decref(rule);
                return NOTE(m, "group.%s changes nothing (policy and affinity '*')", group);
        }
        ret->prio = rprio;
        ret->rule = rule;
        return 1;
}

/* ps_blacklist: the processes tuned does not move, as the processes rtpartd does not report. */
static int map_ps_blacklist(Mapper *m, const char *v) {
        _cleanup_free_ char *copy = strdup(v);
        json_t *allow = NULL;
        int r = 0;
        if (!copy)
                return -ENOMEM;
        for (char *sp = NULL, *tok = strtok_r(copy, ";", &sp); tok && r >= 0; tok = strtok_r(NULL, ";", &sp)) {
                bool kthread;
                _cleanup_free_ char *glob = regex_to_glob(tok, &kthread);
                if (!glob) {
                        r = UNSUPPORTED(m, "ps_blacklist entry '%s' has no shell-pattern equivalent", tok);
                        continue;
                }
                if (kthread) {
                        r = NOTE(m,
                                 "ps_blacklist entry '%s' is a kernel thread: rtpart moves only the kernel threads "
                                 "the kernel lets move",
                                 tok);
                        continue;
                }
                json_t *drift = tuned_obj(m->profile, "drift");
                if (!drift)
                        return -ENOMEM;
                allow = json_object_get(drift, "task_allow");
                if (!json_is_array(allow) && JSET(drift, "task_allow", allow = json_array()) < 0)
                        return -ENOMEM;
                if (json_array_append_new(allow, json_string(glob)) < 0)
                        return -ENOMEM;
        }
        if (r >= 0 && allow)
                r = NOTE(m,
                         "ps_blacklist: the processes tuned leaves on isolated CPUs are the ones rtpartd does not "
                         "report there (drift.task_allow), matched by thread name where tuned matches the command "
                         "line");
        return r;
}

/* The kthreads.rules of the group.* rules collected. */
static int set_rules(Mapper *m, Rule *rules, size_t n_rules) {
        if (n_rules == 0)
                return 0;
        qsort(rules, n_rules, sizeof(Rule), rule_cmp);
        json_t *kt = tuned_obj(m->profile, "kthreads"), *arr = json_array();
        if (!kt || !arr) {
                json_decref(arr);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n_rules; i++)
                if (json_array_append(arr, rules[i].rule) < 0) {
                        json_decref(arr);
                        return -ENOMEM;
                }
        return JSET(kt, "rules", arr);
}

/* One option of [scheduler] but its group.* rules. */
static int map_scheduler_option(Mapper *m, const char *key, const char *v) {
        if (streq(key, "isolated_cores"))
                return *v ? NOTE(m,
                                 "isolated CPUs: IRQs, the default IRQ affinity and every movable kernel thread go "
                                 "to the housekeeping CPUs; user processes are not moved (tuned moves them once): "
                                 "put services on housekeeping CPUs with cpuset.confine where wanted")
                          : 0;
        if (streq(key, "ps_blacklist"))
                return map_ps_blacklist(m, v);
        if (streq(key, "default_irq_smp_affinity")) {
                json_t *irq = tuned_obj(m->profile, "irq");
                if (!irq)
                        return -ENOMEM;
                if (streq(v, "calc"))
                        return 0;
                if (streq(v, "ignore")) {
                        (void) json_object_del(irq, "default_affinity");
                        return 0;
                }
                return tuned_set_cpus(m, irq, "default_affinity", v, FORM_CLASS);
        }
        if (streq(key, "runtime") || streq(key, "perf_process_fork") || streq(key, "perf_mmap_pages"))
                return NOTE(m, "tuned's process monitor: rtpartd watches kernel threads itself");
        return UNSUPPORTED(m,
                           "%s is not one of the scheduler settings rtpart has (isolated_cores, group.*, "
                           "ps_blacklist, default_irq_smp_affinity)",
                           key);
}

int tuned_map_scheduler(Mapper *m, TunedSection *u) {
        _cleanup_free_ Rule *rules = NULL;
        size_t n_rules = 0;
        int r = 0;

        for (size_t i = 0; i < u->n_options && r >= 0; i++) {
                TunedOption *o = &u->options[i];
                _cleanup_free_ char *v = NULL;
                tuned_map_at(m, u->name, o);
                if (tuned_unit_key(o->key))
                        continue;
                if ((r = tuned_expand(m->ev, strempty(o->value), &v)) < 0)
                        break;
                if (!startswith(o->key, "group.")) {
                        r = map_scheduler_option(m, o->key, v);
                        continue;
                }
                Rule rule = { .order = i };
                if (!*v || (r = map_group(m, o->key + 6, v, &rule)) <= 0)
                        continue;
                Rule *nr = realloc(rules, (n_rules + 1) * sizeof(Rule));
                if (!nr) {
                        json_decref(rule.rule);
                        r = -ENOMEM;
                        break;
                }
                rules = nr;
                rules[n_rules++] = rule;
                r = 0;
        }
        if (r >= 0)
                r = set_rules(m, rules, n_rules);
        for (size_t i = 0; i < n_rules; i++)
                json_decref(rules[i].rule);
        return r < 0 ? r : 0;
}
