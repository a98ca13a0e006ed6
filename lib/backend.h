/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A knob is one value rtpart owns on the host. Each domain's backend turns the resolved profile
 * into knobs (plan) and reads their current values (read); apply/verify/revert build on these. */

#include <stdbool.h>

#include "host.h"
#include "profile.h"
#include "schema.h"

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
        char *id;               /* "irq/41/affinity" */
        Domain domain;
        ValueKind kind;
        char *path;             /* root-relative file behind it, NULL if none (boot args, kthreads) */
        char *current;          /* NULL: absent (file missing, argument not set) */
        char *desired;          /* NULL: to be removed */
        bool reboot;            /* takes effect only after a reboot */
        bool changed;           /* current differs from desired */
        char *note;             /* shown beside the knob, may be NULL */
} Knob;

typedef struct Plan {
        char *profile;
        CpuSet isolated, housekeeping;
        Knob *knobs;
        size_t n_knobs, cap_knobs;
        char **notes;           /* host-level remarks ("resctrl not available: cat skipped") */
} Plan;

/* What a backend's plan verb sees. */
typedef struct PlanCtx {
        Plan *plan;
        const Resolved *resolved;
        const Host *host;
        Root *root;
        ProfileError *error;
} PlanCtx;

typedef struct Backend {
        Domain domain;
        const char *name;
        /* The profile section this domain owns: its top-level key and its schema. */
        const SchemaField *schema;
        /* Adds this domain's knobs, with current values, to ctx->plan. */
        int (*plan)(PlanCtx *ctx);
        /* Re-reads a knob's current value. Absent (no such file, group or argument) is either
         * 0 with *ret = NULL or -ENOENT: callers treat both alike. */
        int (*read)(Root *root, const Knob *k, char **ret);
        /* Writes value (NULL: make it absent again, e.g. drop a boot argument) to the knob.
         * Returns 0, KNOB_REFUSED when the kernel refuses as expected (a managed IRQ, a per-CPU
         * kthread), KNOB_SKIPPED when this host cannot take it now (not the real root for
         * syscall-backed knobs), or a negative errno. NULL: the domain is read-only for now. */
        int (*write)(Root *root, const Knob *k, const char *value);
        /* After a batch of writes to this domain: make them take effect (regenerate grub.cfg).
         * May set *ret_note for the user. NULL: nothing to do. */
        int (*flush)(Root *root, const Host *host, char **ret_note);
        /* The kernel's own words on the last failed write (resctrl's info/last_cmd_status, a
         * cpuset partition's "invalid (reason)"), or NULL. Optional. */
        const char *(*last_status)(void);
} Backend;

#define KNOB_REFUSED 1
#define KNOB_SKIPPED 2

extern const Backend backend_boot, backend_irq, backend_irqbalance, backend_cpuset, backend_resctrl,
        backend_sysctl, backend_sysfs, backend_kthread, backend_cpu, backend_module;

const Backend *backend_for(Domain d);
const char *domain_to_string(Domain d);
Domain domain_from_string(const char *s);

/* ---- helpers for backends ---- */

/* Adds a knob; takes ownership of nothing (copies). current/desired may be NULL. */
int plan_add(PlanCtx *ctx, const char *id, ValueKind kind, const char *path, const char *current,
             const char *desired, bool reboot, Knob **ret);
int plan_note(PlanCtx *ctx, const char *fmt, ...) _printf_(2, 3);
/* A profile error at a JSON pointer of the resolved profile (the file is found from the pointer). */
int plan_fail(PlanCtx *ctx, const char *pointer, const char *fmt, ...) _printf_(3, 4);
/* The same at item i of an array ("/cat/groups", 2, "l3" → /cat/groups/2/l3; key may be NULL). */
int plan_fail_item(PlanCtx *ctx, const char *list, size_t i, const char *key, const char *fmt, ...) _printf_(5, 6);
/* Writes a knob file (the value as the kernel takes it: a selection unwrapped). NULL: nothing. */
int knob_write_file(Root *root, const Knob *k, const char *value);
/* "always [madvise] never" → "madvise"; other values as they are. */
char *value_for_write(ValueKind kind, const char *v);
/* Reads a knob file: first line, trimmed; -ENOENT if missing. */
int knob_read_file(Root *root, const Knob *k, char **ret);

/* Kernel and module parameters that go into bootloader files and /etc/modprobe.d (see plan.c for
 * the rules and why). */
#define BOOTARG_NAME_MAX 64
#define BOOTARG_VALUE_MAX 2047          /* x86's and arm64's COMMAND_LINE_SIZE, less its NUL */
#define BOOTARG_VALUE_PUNCT "_.,:=/+@%-"
/* [A-Za-z0-9_][A-Za-z0-9_.-]*, at most BOOTARG_NAME_MAX characters. */
bool bootarg_name_valid(const char *name);
/* The first character of value outside letters, digits and BOOTARG_VALUE_PUNCT; NULL if none. */
const char *bootarg_value_invalid(const char *value);
/* A control character (newline, carriage return, …) anywhere in value. */
bool bootarg_has_control(const char *value);
/* A plan error at pointer unless value (NULL: nothing to check) is within the rules. kind is
 * "kernel" or "module"; readers names what reads the file ("the kernel command line and …"). */
int plan_check_param_value(PlanCtx *ctx, const char *pointer, const char *kind, const char *readers, const char *value);

const char *value_kind_to_string(ValueKind k);
ValueKind value_kind_from_string(const char *s);

/* Semantic equality of two values of the given kind; NULL is "absent". */
bool value_equal(ValueKind kind, const char *a, const char *b);
/* The value as a person should see it: masks also as lists, selections unwrapped. */
char *value_display(ValueKind kind, const char *v);

/* Builds the plan: every backend in table order. */
int plan_build(const Resolved *r, Root *root, Plan **ret, ProfileError *ret_error);
Plan *plan_free(Plan *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(Plan *, plan_free);
size_t plan_count_changes(const Plan *p, size_t *ret_reboot);
