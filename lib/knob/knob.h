/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A knob is one value rtpart owns on the host, with a stable id ("irq/41/affinity"). These are its
 * types and their names, shared by the planner and the backends (lib/backends), the journal and
 * the engine: what a knob is, how two of its values compare, and what became of a write. Nothing
 * here knows a backend, a profile or the host. */

#include <errno.h>
#include <stdbool.h>

#include "macro.h"

typedef enum Domain {
        DOMAIN_BOOT,
        DOMAIN_IRQ,
        DOMAIN_IRQBALANCE,
        DOMAIN_CPUSET,
        DOMAIN_RESCTRL,
        DOMAIN_SYSCTL,
        DOMAIN_SYSFS,
        DOMAIN_KTHREAD,
        DOMAIN_CPU,
        DOMAIN_MODULE,
        _DOMAIN_MAX,
        _DOMAIN_INVALID = -EINVAL,
} Domain;

/* How two values of a knob are compared: semantically, never textually. */
typedef enum ValueKind {
        VALUE_AUTO,     /* integers compare as numbers (Y/N as 1/0), else whitespace-normalized text */
        VALUE_CPU_LIST, /* "0-3" == "0,1,2,3" */
        VALUE_CPU_MASK, /* "ff" == "000000ff"; a list is accepted on either side */
        VALUE_SELECT,   /* "always [madvise] never" reads as "madvise" */
        VALUE_BOOTARG,  /* "managed_irq,domain,2-7": flags as a set, then a CPU list */
        VALUE_SCHEMATA, /* "0=7f0;1=7f0": per-domain values compared as numbers */
        _VALUE_KIND_MAX,
        _VALUE_KIND_INVALID = -EINVAL,
} ValueKind;

typedef struct Knob {
        char *id; /* "irq/41/affinity" */
        Domain domain;
        ValueKind kind;
        char *path;    /* root-relative file behind it, NULL if none (boot args, kthreads) */
        char *current; /* NULL: absent (file missing, argument not set) */
        char *desired; /* NULL: to be removed */
        bool reboot;   /* takes effect only after a reboot */
        bool changed;  /* current differs from desired */
        char *note;    /* shown beside the knob, may be NULL */
} Knob;

/* What became of a write. */
typedef enum KnobStatus {
        KNOB_DONE,    /* written (or nothing to write) */
        KNOB_REFUSED, /* the kernel said no, as expected (a managed IRQ, a per-CPU kthread) */
        KNOB_SKIPPED, /* not possible on this root now (syscall-backed knobs under a tree, a CPU
                       * gone offline, a module unloaded) */
        KNOB_FAILED,  /* error says why */
        _KNOB_STATUS_MAX,
        _KNOB_STATUS_INVALID = -EINVAL,
} KnobStatus;

typedef struct KnobResult {
        KnobStatus status;
        int error;    /* negative errno when KNOB_FAILED, else 0 */
        char *reason; /* the kernel's or systemd's own words (resctrl's info/last_cmd_status,
                       * a cpuset partition's "invalid (reason)"), or NULL */
} KnobResult;

void knob_result_done(KnobResult *r);
/* Sets (replaces) r's reason. */
void knob_result_reason(KnobResult *r, const char *fmt, ...) _printf_(2, 3);
/* Ends a write verb: r is KNOB_DONE, KNOB_REFUSED, KNOB_SKIPPED or a negative errno. Fills ret's
 * status and error (its reason stays) and returns r. */
int knob_result_finish(KnobResult *ret, int r);

const char *domain_to_string(Domain d);
Domain domain_from_string(const char *s);
/* The domain of a knob id: its first component ("module/kvm/halt_poll_ns" → module). */
Domain knob_id_domain(const char *id);

const char *value_kind_to_string(ValueKind k);
ValueKind value_kind_from_string(const char *s);

/* Semantic equality of two values of the given kind; NULL is "absent". */
bool value_equal(ValueKind kind, const char *a, const char *b);
/* The value as a person should see it: masks also as lists, selections unwrapped. */
char *value_display(ValueKind kind, const char *v);
/* "always [madvise] never" → "madvise"; other values as they are. */
char *value_for_write(ValueKind kind, const char *v);
