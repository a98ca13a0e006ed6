/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A backend is one knob domain's whole life: its profile section, its plan (profile → knobs), how
 * its knobs are read, written and watched, and what the domain is like. The engine and the daemon
 * ask the backend table instead of naming a domain. The knob types are knob.h's, the plan plan.h's. */

#include <stdbool.h>

#include "host.h"
#include "knob.h"
#include "plan.h"
#include "root.h"
#include "schema.h"

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
        BACKEND_KERNEL_SETS = 1 << 5,    /* drivers set its values themselves when another knob is
                                         * written (virtio_net places its queues' IRQs when its
                                         * channels change), with no file event: verify reads them
                                         * again, and after a run that wrote, the daemon reads them
                                         * and writes again those moved */
} BackendFlags;

/* What the engine lends a write to keep what it must put back byte for byte (a bootloader file's
 * bytes before rtpart first edited it): a directory of the domain's own beside the journal, kept
 * as long as the journal is. Backends never name the journal; NULL: nothing can be kept. */
typedef struct KnobKeep {
        Root *root;      /* where dir is */
        const char *dir; /* root-relative; made when something is first kept */
} KnobKeep;

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
         * "/sysctl" or "/vendor/intel/sysctl"), or 0. NULL: the schema says it all. The section and
         * this check go into the document's schema (backend_profile_schema()). */
        SchemaCheck check;
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
         * what became of it in *ret (overwritten, not freed: pass a cleared result). keep: where
         * it may keep what it must put back later (NULL: nowhere). Returns KNOB_DONE,
         * KNOB_REFUSED, KNOB_SKIPPED or the negative errno of ret->error. NULL: the domain is
         * read-only for now. */
        int (*write)(Root *root, const Knob *k, const char *value, const KnobKeep *keep, KnobResult *ret);
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
        /* The ids of plan's knobs that hold network interface ifname's state (its channels, its
         * queues' masks, the IRQs of its device): what rtpartd applies again when the interface
         * comes back or is reset (a link down and up, its driver bound again), which sets them
         * anew (engine_apply_interface()). A strv (NULL when none) and its length. NULL: the
         * domain holds no interface's state. */
        int (*interface_knobs)(Root *root, const Plan *plan, const char *ifname, char ***ret_ids);
        /* The files it replaces whole (root_write_file_atomic()), as root-relative shell patterns,
         * NULL-terminated (NULL: none): the recovery after a crash removes the temporaries a
         * replacement killed in the middle left beside them, whether or not the journal names the
         * files. */
        const char * const *replaces;
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
        backend_sysfs, backend_kthread, backend_cpu, backend_module, backend_hugepages, backend_net;

const Backend *backend_for(Domain d);
/* Every backend, in the order of application; *ret_n of them. */
const Backend * const *backend_table(size_t *ret_n);
/* The schema of a whole profile document: the core's keys and every backend's section (its schema
 * and its check), what profile_load() and profile_from_document() check a document against. */
const Schema *backend_profile_schema(void);
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

/* Writes a knob file (the value as the kernel takes it: a selection unwrapped). NULL: nothing. */
int knob_write_file(Root *root, const Knob *k, const char *value);
/* knob_write_file() as a backend's write verb. */
int knob_write_file_verb(Root *root, const Knob *k, const char *value, const KnobKeep *keep, KnobResult *ret);
/* Watch verbs: the knob's own file (if it has one), or none. */
int knob_watch_file(const Knob *k, char ***ret_paths);
int knob_watch_none(const Knob *k, char ***ret_paths);
/* Reads a knob file: first line, trimmed; -ENOENT if missing. */
int knob_read_file(Root *root, const Knob *k, char **ret);

/* Boot arguments another domain's section needs (the hugepages section's hugepagesz= and
 * hugepages=) are planned as the boot section's are: boot_plan_arg() adds boot/NAME for desired
 * (NULL: to be absent), a knob of the boot domain (configured in the bootloader's files, compared
 * with the running kernel's command line by verify, removed by revert) whose current value is what
 * the bootloader's configuration gives (none found or readable: the running kernel's), and whose
 * note says where the running kernel's differs. The section that asks refuses a profile whose boot
 * section sets the same argument. */
int boot_plan_arg(PlanCtx *ctx, const char *name, const char *desired, Knob **ret);
/* The command line the bootloader's configuration gives the next boot (GRUB's defaults with
 * rtpart's drop-in, the running kernel's BLS entry, or etc/kernel/cmdline); -ENOENT when there is
 * no bootloader configuration, -EBADMSG with *ret_why (what, where, the fix) when GRUB's cannot be
 * read without running it. */
int boot_configured_cmdline(Root *root, char **ret, char **ret_why);

/* Kernel and module parameters that go into bootloader files and /etc/modprobe.d (see backend.c
 * for the rules and why). */
#define BOOTARG_NAME_MAX 64
#define BOOTARG_VALUE_MAX 2047 /* x86's and arm64's COMMAND_LINE_SIZE, less its NUL */
#define BOOTARG_VALUE_PUNCT "_.,:=/+@%-"
/* [A-Za-z0-9_][A-Za-z0-9_.-]*, at most BOOTARG_NAME_MAX characters. */
bool bootarg_name_valid(const char *name);
/* The first character of value outside letters, digits and BOOTARG_VALUE_PUNCT; NULL if none. */
const char *bootarg_value_invalid(const char *value);
/* A control character (newline, carriage return, …) anywhere in value. */
bool bootarg_has_control(const char *value);
