/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What audit advises for each source that disturbed a CPU: the "fix" of its document. A fix that
 * names a profile setting names it from one table (AuditSetting), the same settings, with the
 * same values, as the shipped profiles (profiles/NAME.json) have: a test checks every one of them
 * against those files, so the advice cannot say what the profiles contradict. */

#include <stdbool.h>
#include <stddef.h>

#include "audit.h"

typedef struct AuditSetting {
        const char *key;     /* the name fix texts use: "@timer_migration@" */
        const char *pointer; /* in a profile: "/sysctl/kernel.timer_migration" */
        const char *value;   /* JSON: the value advised, as the shipped profiles set it; or, with
                              * example, one of the form a profile writes for its own host */
        bool example;
} AuditSetting;

/* Every setting a fix names. */
const AuditSetting *audit_settings(size_t *ret_n);
/* A setting as fixes write it: "sysctl.\"kernel.timer_migration\" = 0", "irq.rules" (examples). */
char *audit_setting_text(const AuditSetting *s);
/* Every fix text audit can print, with its settings written out and its other arguments as
 * written ("%s"): for tests. NULL-terminated; strv_free() it. */
char **audit_advice_texts(void);

/* The fixes (NULL where rtpart knows none; the caller frees). */
char *audit_advice_arch(const char *row);
char *audit_advice_softirq(const char *kind);
char *audit_advice_irq(const AuditScope *scope, const char *label, const char *name, unsigned cpu);
char *audit_advice_thread(const AuditThread *t, unsigned cpu);
char *audit_advice_tick(bool nohz_full);

/* t may run on cpu alone (a per-CPU kernel thread, where t is one). */
bool audit_thread_bound(const AuditThread *t, unsigned cpu);
