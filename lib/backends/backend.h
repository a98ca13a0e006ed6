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

typedef struct Plan {
        char *profile;
        CpuSet isolated, housekeeping;
        Knob *knobs;
        size_t n_knobs, cap_knobs;
        char **notes; /* host-level remarks ("resctrl not available: cat skipped") */
} Plan;

/* What a backend's plan verb sees. */
typedef struct PlanCtx {
        Plan *plan;
        const Resolved *resolved;
        const Host *host;
        Root *root;
        Error *error;
} PlanCtx;

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

/* What a domain is like, for the engine and the daemon to ask instead of naming it. */
typedef enum BackendFlags {
        BACKEND_REBOOT_ONLY = 1 << 0,    /* takes effect at the next boot: verify also compares with
                                         * what the running system uses (running) */
        BACKEND_OBJECTS_VANISH = 1 << 1, /* its objects come and go (IRQs with their devices, threads):
                                          * an absent one has vanished, it has not drifted */
        BACKEND_NEEDS_DAEMON = 1 << 2,   /* some knobs hold only while rtpartd runs (pm_qos requests) */
        BACKEND_FOLLOWS_FORKS = 1 << 3,  /* its objects are threads: checked again when the kernel
                                         * forks some (the proc connector), as no file says so */
        BACKEND_HOTPLUG_MOVES = 1 << 4,  /* the kernel itself changes its values when a CPU goes or
                                         * comes (IRQ and thread affinities, cpusets), with no file
                                         * event: read again after a CPU hotplug */
} BackendFlags;

/* What the daemon does when the kernel makes a new object of a domain while it runs (the IRQs of
 * a device that came): Backend.newcomers. The kernel makes each object's entry in `dir`
 * (/proc/irq/N at request_irq()) with no file event for it, and host discovery may find the object
 * only later (/proc/interrupts lists N once its handler is there). So rtpartd reads `dir` after
 * every device event (a uevent, an interface brought up, an entry made in a tree's dir), at each
 * of `steps_usec` after it, and at every safety check: an entry it has not seen makes a plan,
 * which places what that plan's host discovery found. An entry discovery has not found yet waits
 * and is looked for again at every step and safety check, never taken as placed. */
typedef struct BackendNewcomers {
        const char *dir; /* root-relative */
        /* Whether an entry of dir is one of the objects (NULL: every entry is). */
        bool (*is_object)(const char *entry);
        /* The objects host discovery found, named as their entries of dir (a strv; NULL: none). */
        int (*discovered)(const Host *host, char ***ret);
        /* When to look after a device event, µs after it, ascending; 0 ends the list. */
        const uint64_t *steps_usec;
        const char *noun;      /* one object, for the daemon's log: "IRQ" */
        const char *discovery; /* where discovery finds them, for the log: "/proc/interrupts" */
} BackendNewcomers;

typedef struct Backend {
        Domain domain;
        const char *name;
        /* The profile section this domain owns: its top-level key and its schema. */
        const SchemaField *schema;
        /* What the schema cannot say of the section as one profile file writes it (names, required
         * keys, combinations): a profile error at a pointer below `pointer` (the section's, e.g.
         * "/sysctl" or "/vendor/intel/sysctl"), or 0. NULL: the schema says it all. */
        int (*check)(const char *file, json_t *section, const char *pointer, Error *e);
        /* Adds this domain's knobs, with current values, to ctx->plan. */
        int (*plan)(PlanCtx *ctx);
        /* A knob it writes to several files (a boot argument: every BLS entry): the files the knob
         * with this id lives in now, root-relative. The knob with .path set to one of them is that
         * file's alone, for read and write, so that each file's original is journalled and put
         * back on its own. Returns their number and *ret_paths (a strv, NULL when none); 0: the
         * knob lives in one place. NULL: always one place. */
        int (*files)(Root *root, const Knob *k, char ***ret_paths);
        /* Re-reads a knob's current value. Absent (no such file, group or argument) is either
         * 0 with *ret = NULL or -ENOENT: callers treat both alike. */
        int (*read)(Root *root, const Knob *k, char **ret);
        /* Writes value (NULL: make it absent again, e.g. drop a boot argument) to the knob and says
         * what became of it in *ret (overwritten, not freed: pass a cleared result). Returns
         * KNOB_DONE, KNOB_REFUSED, KNOB_SKIPPED or the negative errno of ret->error. NULL: the
         * domain is read-only for now. */
        int (*write)(Root *root, const Knob *k, const char *value, KnobResult *ret);
        /* After a batch of writes to this domain: make them take effect (regenerate grub.cfg).
         * May set *ret_note for the user. NULL: nothing to do. */
        int (*flush)(Root *root, const Host *host, char **ret_note);
        /* Why the kernel refuses a write as expected (KNOB_REFUSED), when the write says nothing
         * more. NULL: this domain is never refused. */
        const char *refusal_reason;
        BackendFlags flags;
        /* What every write needs of the root (ROOT_CAN_*), 0 if nothing: on a root without it each
         * write is KNOB_SKIPPED for writes_need_reason, known before any is tried, so apply
         * journals no step for them (the journal grows with what may change, not with the host). */
        RootCan writes_need;
        const char *writes_need_reason;
        /* BACKEND_REBOOT_ONLY: the value the running system uses (from its command line), NULL if
         * none. */
        int (*running)(const Knob *k, const char *running_cmdline, char **ret);
        /* The files whose change means the knob may have drifted (root-relative; none: the daemon's
         * timer or the proc connector sees it). Returns their number and *ret_paths (a strv, NULL
         * when there are none). */
        int (*watch)(const Knob *k, char ***ret_paths);
        /* One of its knobs, in counts for people ("13 boot arguments"; the plural adds an "s").
         * NULL: "NAME knob". */
        const char *knob_noun;
        /* What a plan shows above this domain's knobs, from the plan document's "host" object
         * ({"bootloader": …, "cgroup": …, "systemd": …}); a new string. NULL: the name. */
        char *(*heading)(json_t *host);
        /* The objects of this domain the kernel makes while the daemon runs, and how it finds
         * them (BackendNewcomers); NULL: every object is there when a profile is applied. */
        const BackendNewcomers *newcomers;
} Backend;

extern const Backend backend_boot, backend_irq, backend_irqbalance, backend_cpuset, backend_resctrl, backend_sysctl,
        backend_sysfs, backend_kthread, backend_cpu, backend_module;

const Backend *backend_for(Domain d);
/* Every backend, in the order of application; *ret_n of them. */
const Backend * const *backend_table(size_t *ret_n);
const char *domain_to_string(Domain d);
Domain domain_from_string(const char *s);
/* The domain of a knob id: its first component ("module/kvm/halt_poll_ns" → module). */
Domain knob_id_domain(const char *id);
/* Counts of knobs by domain, as people read them: "11 boot arguments and 2 module parameters"
 * (domains in table order, by their knob_noun); "" when all are 0; NULL on OOM. */
char *knob_count_phrase(const size_t counts[_DOMAIN_MAX]);

/* ---- helpers for backends ---- */

/* The checks of a list of named groups (cpuset partitions, cache groups) at list_ptr: each has a
 * "name" of letters, digits, '.', '_' and '-' that is none of `reserved` (NULL-terminated), unique,
 * and "cpus". */
int backend_check_named_groups(const char *file, json_t *list, const char *list_ptr, const char * const *reserved,
                               Error *e);
/* The checks of a list of rules at list_ptr: each has "match", and "cpus" (need_cpus), or else
 * one of alternative (NULL: none). */
int backend_check_rules(const char *file, json_t *list, const char *list_ptr, const char *missing_cpus,
                        const char *alternative, const char *missing_either, Error *e);

/* Adds a knob; takes ownership of nothing (copies). current/desired may be NULL. */
int plan_add(PlanCtx *ctx, const char *id, ValueKind kind, const char *path, const char *current, const char *desired,
             bool reboot, Knob **ret);
int plan_note(PlanCtx *ctx, const char *fmt, ...) _printf_(2, 3);
/* A profile error at a JSON pointer of the resolved profile (the file is found from the pointer). */
int plan_fail(PlanCtx *ctx, const char *pointer, const char *fmt, ...) _printf_(3, 4);
/* The same at item i of an array ("/cat/groups", 2, "l3" → /cat/groups/2/l3; key may be NULL). */
int plan_fail_item(PlanCtx *ctx, const char *list, size_t i, const char *key, const char *fmt, ...) _printf_(5, 6);
/* Writes a knob file (the value as the kernel takes it: a selection unwrapped). NULL: nothing. */
int knob_write_file(Root *root, const Knob *k, const char *value);
/* knob_write_file() as a backend's write verb. */
int knob_write_file_verb(Root *root, const Knob *k, const char *value, KnobResult *ret);
/* "always [madvise] never" → "madvise"; other values as they are. */
char *value_for_write(ValueKind kind, const char *v);
/* Watch verbs: the knob's own file (if it has one), or none. */
int knob_watch_file(const Knob *k, char ***ret_paths);
int knob_watch_none(const Knob *k, char ***ret_paths);
/* Reads a knob file: first line, trimmed; -ENOENT if missing. */
int knob_read_file(Root *root, const Knob *k, char **ret);

/* Kernel and module parameters that go into bootloader files and /etc/modprobe.d (see plan.c for
 * the rules and why). */
#define BOOTARG_NAME_MAX 64
#define BOOTARG_VALUE_MAX 2047 /* x86's and arm64's COMMAND_LINE_SIZE, less its NUL */
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
int plan_build(const Resolved *r, Root *root, Plan **ret, Error *ret_error);
Plan *plan_free(Plan *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(Plan *, plan_free);
size_t plan_count_changes(const Plan *p, size_t *ret_reboot);
