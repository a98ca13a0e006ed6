/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit-advice.h"
#include "strv.h"

/* The profile settings fixes name, "@key@" in their texts. Values are JSON, as the shipped
 * profiles write them (tests/sysroot/test-audit.c compares them with the shipped profiles). */
static const AuditSetting settings[] = {
        { "nohz_full", "/boot/args/nohz_full", "\"${isolated}\"", false },
        { "rcu_nocbs", "/boot/args/rcu_nocbs", "\"${isolated}\"", false },
        { "isolcpus", "/boot/args/isolcpus", "\"managed_irq,domain,${isolated}\"", false },
        { "nosoftlockup", "/boot/args/nosoftlockup", "true", false },
        { "timer_migration", "/sysctl/kernel.timer_migration", "0", false },
        { "nmi_watchdog", "/sysctl/kernel.nmi_watchdog", "0", false },
        { "wq_cpumask", "/sysfs/~1sys~1devices~1virtual~1workqueue~1cpumask", "\"${housekeeping_mask}\"", false },
        { "irq_affinity", "/irq/affinity", "\"housekeeping\"", false },
        { "irq_rules", "/irq/rules", "[{\"match\": \"eth0-TxRx-0\", \"cpus\": \"housekeeping\"}]", true },
        { "kthread_rules", "/kthreads/rules", "[{\"match\": \"kswapd*\", \"cpus\": \"housekeeping\"}]", true },
        { "partitions", "/cpuset/partitions",
          "[{\"name\": \"rtpart-rt\", \"cpus\": \"isolated\", \"mode\": \"isolated\"}]", true },
        { "task_allow", "/drift/task_allow", "[\"myapp\"]", true },
};

const AuditSetting *audit_settings(size_t *ret_n) {
        *ret_n = ELEMENTSOF(settings);
        return settings;
}

char *audit_setting_text(const AuditSetting *s) {
        StrBuf b = {};
        strbuf_append(&b, "");
        for (const char *p = s->pointer; *p == '/';) {
                const char *e = strchrnul(p + 1, '/');
                _cleanup_free_ char *tok = strndup(p + 1, (size_t) (e - p - 1));
                if (!tok) {
                        strbuf_done(&b);
                        return NULL;
                }
                /* RFC 6901: "~1" is "/", "~0" is "~". */
                char *w = tok;
                for (const char *q = tok; *q; q++)
                        *w++ = q[0] == '~' && (q[1] == '1' || q[1] == '0') ? (*++q == '1' ? '/' : '~') : *q;
                *w = 0;
                bool quote = strpbrk(tok, "./") != NULL;
                strbuf_appendf(&b, "%s%s%s%s", b.len ? "." : "", quote ? "\"" : "", tok, quote ? "\"" : "");
                p = e;
        }
        if (!s->example)
                strbuf_appendf(&b, " = %s", s->value);
        return strbuf_steal(&b);
}

/* text with every "@key@" written out as its setting (an unknown key stays as written). */
static char *expand(const char *text) {
        StrBuf b = {};
        strbuf_append(&b, "");
        for (const char *p = text; *p;) {
                const char *end = *p == '@' ? strchr(p + 1, '@') : NULL;
                const AuditSetting *s = NULL;
                for (size_t i = 0; end && i < ELEMENTSOF(settings); i++)
                        if (strlen(settings[i].key) == (size_t) (end - p - 1) &&
                            strncmp(settings[i].key, p + 1, (size_t) (end - p - 1)) == 0)
                                s = &settings[i];
                if (!s) {
                        strbuf_appendf(&b, "%c", *p++);
                        continue;
                }
                _cleanup_free_ char *t = audit_setting_text(s);
                strbuf_append(&b, t ?: "");
                if (!t)
                        b.oom = true;
                p = end + 1;
        }
        return strbuf_steal(&b);
}

static char *advise(const char *fmt, ...) _printf_(1, 2);
static char *advise(const char *fmt, ...) {
        _cleanup_free_ char *f = expand(fmt);
        char *s = NULL;
        va_list ap;
        if (!f)
                return NULL;
        va_start(ap, fmt);
        _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wformat-nonliteral\"");
        int k = vasprintf(&s, f, ap);
        _Pragma("GCC diagnostic pop");
        va_end(ap);
        return k < 0 ? NULL : s;
}

typedef struct Advice {
        const char *label; /* a row of /proc/interrupts, a softirq, a thread name pattern */
        const char *text;
} Advice;

/* What each architecture row and softirq means for an isolated CPU, and what removes it. */
static const Advice arch_advice[] = {
        { "RES", "rescheduling IPIs: another thread was woken here (see the threads that ran)" },
        { "CAL",
          "function-call IPIs, from work other CPUs ask of this one (often through memory shared with "
          "threads here)" },
        { "TLB", "TLB shootdowns: a process with threads here changed its memory map from another CPU" },
        { "NMI", "NMIs: perf, or the NMI watchdog (@nmi_watchdog@ stops it)" },
        { "IWI", "irq_work interrupts (perf, printk, the tick's deferred work)" },
        { "PMI", "performance-monitoring interrupts: a perf session counts on this CPU" },
        { "MCE", "machine-check events" },
        { "THR", "thresholds of machine-check banks" },
        { "TRM", "thermal events" },
        {},
};

static const Advice softirq_advice[] = {
        { "NET_RX", "network receive: move the NIC's IRQs (@irq_rules@) and its RPS CPUs off this CPU" },
        { "NET_TX", "network transmit: move the NIC's IRQs (@irq_rules@) and its XPS CPUs off this CPU" },
        { "BLOCK", "block I/O completions: move the disk's IRQs (@irq_rules@)" },
        { "TIMER",
          "timers expiring here: @nohz_full@ stops the tick while one task runs, and @timer_migration@ keeps "
          "timers on the CPU that armed them" },
        { "HRTIMER", "high-resolution timers armed by threads here" },
        { "RCU", "RCU callbacks: @rcu_nocbs@ offloads them" },
        { "SCHED",
          "load balancing: take the CPU out of the scheduler's domains (@isolcpus@, or a partition of "
          "@partitions@)" },
        { "TASKLET", "drivers' tasklets: move their IRQs (@irq_rules@)" },
        { "HI", "drivers' high-priority tasklets: move their IRQs (@irq_rules@)" },
        { "IRQ_POLL", "block-device IRQ polling: move the device's IRQs (@irq_rules@)" },
        {},
};

static const Advice kthread_advice[] = {
        { "ksoftirqd/*", "softirq work deferred to its thread: see the softirqs" },
        { "kworker/[0-9]*", "per-CPU work items queued here (@wq_cpumask@ moves only unbound work)" },
        { "rcuc/*", "RCU callbacks: @rcu_nocbs@ offloads them" },
        { "rcuop/*", "RCU callback offloading thread: place it with @kthread_rules@" },
        { "migration/*", "the scheduler's stopper thread: CPU hotplug or a task moved here" },
        { "cpuhp/*", "CPU hotplug" },
        { "watchdog/*",
          "the soft-lockup watchdog: @nosoftlockup@ stops it, and @nohz_full@ keeps it off a tickless CPU" },
        { "irq/*", "a threaded IRQ handler: it runs where its IRQ is placed (see the interrupts)" },
        {},
};

#define IRQ_MANAGED \
        "the kernel manages IRQ %s's affinity (it refused rtpart's): managed_irq in @isolcpus@ keeps managed " \
        "IRQs off isolated CPUs"
#define IRQ_PLACED \
        "rtpart placed IRQ %s, yet it fired on CPU %u: see rtpartctl verify, and " \
        "/proc/irq/%s/effective_affinity_list"
#define IRQ_UNPLACED \
        "IRQ %s (%s) is not placed by %s: add {\"match\": \"%s\", \"cpus\": \"housekeeping\"} to @irq_rules@"
#define IRQ_NO_PROFILE "no profile is applied: @irq_affinity@ places every IRQ"
#define THREAD_BOUND "a per-CPU kernel thread: the kernel keeps it on this CPU"
#define THREAD_KTHREAD "place it with @kthread_rules@: {\"match\": \"%s\", \"cpus\": \"housekeeping\"}"
#define THREAD_TASK "put it in one of @partitions@, or keep it on housekeeping CPUs (@task_allow@ allows it)"
#define TICK_NOHZ \
        "the tick did not stop: nohz_full stops it only while at most one task runs here (see the threads " \
        "that ran)"
#define TICK_NOT_NOHZ "the tick runs: this CPU is not nohz_full (@nohz_full@; a reboot)"

static const char *advice_for(const Advice *table, const char *label, bool pattern) {
        for (const Advice *a = table; a->label; a++)
                if (pattern ? fnmatch(a->label, label, 0) == 0 : streq(a->label, label))
                        return a->text;
        return NULL;
}

char *audit_advice_arch(const char *row) {
        const char *t = advice_for(arch_advice, row, false);
        return t ? expand(t) : NULL;
}

char *audit_advice_softirq(const char *kind) {
        const char *t = advice_for(softirq_advice, kind, false);
        return t ? expand(t) : NULL;
}

char *audit_advice_irq(const AuditScope *scope, const char *label, const char *name, unsigned cpu) {
        char id[64];
        snprintf(id, sizeof(id), "irq/%s/affinity", label);
        if (strv_contains(scope->irqs_managed, id))
                return advise(IRQ_MANAGED, label);
        if (strv_contains(scope->irqs_applied, id))
                return advise(IRQ_PLACED, label, cpu, label);
        if (scope->profile)
                return advise(IRQ_UNPLACED, label, name, scope->profile, name);
        return advise(IRQ_NO_PROFILE);
}

bool audit_thread_bound(const AuditThread *t, unsigned cpu) {
        return t->has_allowed && cpu_set_count(&t->allowed) == 1 && cpu_set_has(&t->allowed, cpu);
}

char *audit_advice_thread(const AuditThread *t, unsigned cpu) {
        if (!t->kernel)
                return advise(THREAD_TASK);
        const char *known = advice_for(kthread_advice, t->comm, true);
        if (known)
                return expand(known);
        if (audit_thread_bound(t, cpu))
                return advise(THREAD_BOUND);
        return advise(THREAD_KTHREAD, t->comm);
}

char *audit_advice_tick(bool nohz_full) {
        return advise(nohz_full ? TICK_NOHZ : TICK_NOT_NOHZ);
}

char **audit_advice_texts(void) {
        static const char * const templates[] = { IRQ_MANAGED,    IRQ_PLACED,   IRQ_UNPLACED,
                                                  IRQ_NO_PROFILE, THREAD_BOUND, THREAD_KTHREAD,
                                                  THREAD_TASK,    TICK_NOHZ,    TICK_NOT_NOHZ };
        const Advice * const tables[] = { arch_advice, softirq_advice, kthread_advice };
        char **l = NULL;
        for (size_t i = 0; i < ELEMENTSOF(tables); i++)
                for (const Advice *a = tables[i]; a->label; a++)
                        if (strv_push(&l, expand(a->text)) < 0) {
                                strv_free(l);
                                return NULL;
                        }
        for (size_t i = 0; i < ELEMENTSOF(templates); i++)
                if (strv_push(&l, expand(templates[i])) < 0) {
                        strv_free(l);
                        return NULL;
                }
        return l;
}
