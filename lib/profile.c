/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "profile.h"
#include "strv.h"

const char * const profile_dirs[] = {
        PROFILE_DIR_USER,
        PROFILE_DIR_SYSTEM,
#ifdef PROFILE_DIR_DISTRO
        PROFILE_DIR_DISTRO,     /* the distribution's place, when built with another prefix */
#endif
        NULL,
};

#define MAX_INCLUDE_DEPTH 16
#define PROFILE_SIZE_MAX (1024 * 1024)          /* bytes a profile file may hold */
#define EXPAND_VALUE_MAX (64 * 1024)            /* bytes one variable or string may expand to */
#define EXPAND_WORK_MAX (16 * 1024 * 1024)      /* bytes expanded in all, a reference counting 64 */

/* Where names are looked up: the root's user and shipped directories; then, when --root is not this
 * system, the profiles shipped with this program (installed, or its source tree when it runs from
 * its build directory): shipped profiles belong to the program, not to the host it examines. */
typedef struct SearchPath {
        struct {
                Root *root;
                const char *dir;
                bool user;
        } d[8];
        size_t n;
        Root *program, *source;
} SearchPath;

static bool running_from_build_dir(void) {
        char exe[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        if (n <= 0)
                return false;
        exe[n] = 0;
        return startswith(exe, BUILD_DIR "/");
}

static void search_path_done(SearchPath *sp) {
        root_free(sp->program);
        root_free(sp->source);
        *sp = (SearchPath) {};
}

static void search_path_init(Root *root, SearchPath *sp) {
        *sp = (SearchPath) {};
        for (const char * const *dir = profile_dirs; *dir && sp->n < ELEMENTSOF(sp->d); dir++)
                sp->d[sp->n++] = (typeof(sp->d[0])) { root, *dir, streq(*dir, PROFILE_DIR_USER) };
        if (root_is_system(root))
                return;
        if (root_new("/", &sp->program) >= 0)
                for (const char * const *dir = profile_dirs + 1; *dir && sp->n < ELEMENTSOF(sp->d); dir++)
                        sp->d[sp->n++] = (typeof(sp->d[0])) { sp->program, *dir, false };
        if (running_from_build_dir() && root_new(SOURCE_PROFILE_DIR, &sp->source) >= 0 && sp->n < ELEMENTSOF(sp->d))
                sp->d[sp->n++] = (typeof(sp->d[0])) { sp->source, ".", false };
}

/* ---- errors ---- */

void profile_error_done(ProfileError *e) {
        if (!e)
                return;
        free(e->file);
        free(e->pointer);
        free(e->message);
        *e = (ProfileError) {};
}

char *profile_error_format(const ProfileError *e) {
        StrBuf b = {};
        if (e->file)
                strbuf_appendf(&b, "%s: ", e->file);
        if (e->pointer)
                strbuf_appendf(&b, "%s: ", *e->pointer ? e->pointer : "/");
        strbuf_append(&b, e->message ? e->message : "invalid profile");
        return strbuf_steal(&b);
}

_printf_(5, 6)
static int set_error(ProfileError *e, int code, const char *file, const char *pointer, const char *fmt, ...) {
        if (!e)
                return code;
        profile_error_done(e);
        va_list ap;
        va_start(ap, fmt);
        if (vasprintf(&e->message, fmt, ap) < 0)
                e->message = NULL;
        va_end(ap);
        e->file = file ? strdup(file) : NULL;
        e->pointer = pointer ? strdup(pointer) : NULL;
        e->code = code;
        return code;
}

char *json_pointer_append(const char *base, const char *token) {
        StrBuf b = {};
        strbuf_append(&b, base);
        strbuf_append(&b, "/");
        for (const char *p = token; *p; p++) {
                if (*p == '~')
                        strbuf_append(&b, "~0");
                else if (*p == '/')
                        strbuf_append(&b, "~1");
                else {
                        char c[2] = { *p, 0 };
                        strbuf_append(&b, c);
                }
        }
        return strbuf_steal(&b);
}

char *json_pointer_append_index(const char *base, size_t i) {
        char *s;
        return asprintf(&s, "%s/%zu", base, i) < 0 ? NULL : s;
}

/* ---- schema ---- */

typedef enum Kind {
        K_STRING,
        K_CPUS,         /* a CPU expression (string) */
        K_INT,
        K_BOOL,
        K_SCALAR,       /* string, number or boolean (sysctl and sysfs values) */
        K_SCALAR_OR_NULL,
        K_BOOTARG,      /* string, true (bare flag), false or null (remove) */
        K_STRINGS,      /* string or array of strings */
        K_OBJECT,
        K_ARRAY,
        K_MAP,          /* free keys, each value of one schema */
        K_FRAGMENT,     /* a profile fragment (vendor overlays) */
} Kind;

typedef struct Schema Schema;
typedef struct Field {
        const char *key;
        const Schema *schema;
} Field;

struct Schema {
        Kind kind;
        const Field *fields;            /* K_OBJECT, NULL-key terminated */
        const Schema *items;            /* K_ARRAY, K_MAP */
        const char * const *choices;    /* K_STRING: allowed values */
        long min, max;                  /* K_INT */
        const char *hint;               /* what a valid value looks like, for messages */
};

static const Schema s_string = { K_STRING };
static const Schema s_cpus = { K_CPUS };
static const Schema s_bool = { K_BOOL };
static const Schema s_strings = { K_STRINGS };
static const Schema s_scalar = { K_SCALAR };
static const Schema s_scalar_or_null = { K_SCALAR_OR_NULL };
static const Schema s_bootarg = { K_BOOTARG };
static const Schema s_nonneg = { K_INT, .min = 0, .max = 1L << 40 };
static const Schema s_percent = { K_INT, .min = 1, .max = 100 };
static const Schema s_cores = { K_INT, .min = 1, .max = 4096 };
static const Schema s_prio = { K_INT, .min = 0, .max = 99 };
static const Schema s_interval = { K_INT, .min = 1, .max = 86400 };

static const char * const policy_choices[] = { "fifo", "rr", "other", "batch", "idle", NULL };
static const char * const partition_modes[] = { "isolated", "root", "member", NULL };
static const char * const drift_policies[] = { "report", "correct", NULL };

static const Schema s_policy = { K_STRING, .choices = policy_choices };
static const Schema s_partition_mode = { K_STRING, .choices = partition_modes };
static const Schema s_drift_policy = { K_STRING, .choices = drift_policies };

static const Schema s_strings_array = { K_ARRAY, .items = &s_string };

static const Field cpus_fields[] = {
        { "isolated", &s_cpus },
        { "housekeeping", &s_cpus },
        { "housekeeping_cores_per_node", &s_cores },
        {}
};

static const Schema s_bootargs = { K_MAP, .items = &s_bootarg };
static const Field boot_fields[] = {
        { "args", &s_bootargs },
        {}
};

static const Field irq_rule_fields[] = {
        { "match", &s_string },
        { "cpus", &s_cpus },
        {}
};
static const Schema s_irq_rule = { K_OBJECT, .fields = irq_rule_fields };
static const Schema s_irq_rules = { K_ARRAY, .items = &s_irq_rule };
static const Field irq_fields[] = {
        { "affinity", &s_cpus },
        { "default_affinity", &s_cpus },
        { "rules", &s_irq_rules },
        { "exclude", &s_strings_array },
        {}
};

static const Field irqbalance_fields[] = {
        { "banned_cpus", &s_cpus },
        {}
};

static const Field partition_fields[] = {
        { "name", &s_string },
        { "cpus", &s_cpus },
        { "mode", &s_partition_mode },
        { "mems", &s_string },
        {}
};
static const Schema s_partition = { K_OBJECT, .fields = partition_fields };
static const Schema s_partitions = { K_ARRAY, .items = &s_partition };
static const Field cpuset_fields[] = {
        { "partitions", &s_partitions },
        { "confine", &s_strings_array },
        { "confine_cpus", &s_cpus },
        {}
};

static const Field share_fields[] = {
        { "mask", &s_string },
        { "ways", &s_cores },
        { "percent", &s_percent },
        {}
};
static const Schema s_share = { K_OBJECT, .fields = share_fields };
static const Field cat_group_fields[] = {
        { "name", &s_string },
        { "cpus", &s_cpus },
        { "l3", &s_share },
        { "l3code", &s_share },
        { "l3data", &s_share },
        { "mb", &s_percent },
        { "exclusive", &s_bool },
        {}
};
static const Schema s_cat_group = { K_OBJECT, .fields = cat_group_fields };
static const Schema s_cat_groups = { K_ARRAY, .items = &s_cat_group };
static const Field cat_fields[] = {
        { "groups", &s_cat_groups },
        { "shrink_default", &s_bool },
        {}
};

static const Schema s_values = { K_MAP, .items = &s_scalar_or_null };

static const Field kthread_rule_fields[] = {
        { "match", &s_string },
        { "policy", &s_policy },
        { "priority", &s_prio },
        { "cpus", &s_cpus },
        {}
};
static const Schema s_kthread_rule = { K_OBJECT, .fields = kthread_rule_fields };
static const Schema s_kthread_rules = { K_ARRAY, .items = &s_kthread_rule };
static const Field kthread_fields[] = {
        { "affinity", &s_cpus },
        { "rules", &s_kthread_rules },
        {}
};

static const Field cpu_fields[] = {
        { "cpus", &s_cpus },
        { "governor", &s_string },
        { "energy_perf_bias", &s_string },
        { "idle_max_latency_us", &s_nonneg },
        { "pm_qos_latency_us", &s_nonneg },
        { "no_turbo", &s_bool },
        {}
};

static const Schema s_module_params = { K_MAP, .items = &s_scalar_or_null };
static const Schema s_modules = { K_MAP, .items = &s_module_params };

static const Schema s_drift_domains = { K_MAP, .items = &s_drift_policy };
static const Field drift_fields[] = {
        { "policy", &s_drift_policy },
        { "domains", &s_drift_domains },
        { "interval_s", &s_interval },
        { "task_allow", &s_strings_array },
        {}
};

static const Schema s_variables = { K_MAP, .items = &s_scalar };
static const Schema s_cpus_section = { K_OBJECT, .fields = cpus_fields };
static const Schema s_boot = { K_OBJECT, .fields = boot_fields };
static const Schema s_irq = { K_OBJECT, .fields = irq_fields };
static const Schema s_irqbalance = { K_OBJECT, .fields = irqbalance_fields };
static const Schema s_cpuset = { K_OBJECT, .fields = cpuset_fields };
static const Schema s_cat = { K_OBJECT, .fields = cat_fields };
static const Schema s_kthreads = { K_OBJECT, .fields = kthread_fields };
static const Schema s_cpu = { K_OBJECT, .fields = cpu_fields };
static const Schema s_drift = { K_OBJECT, .fields = drift_fields };
static const Schema s_fragment = { K_FRAGMENT };

/* The sections a vendor overlay may carry: everything but include, variables and vendor. */
#define SECTION_FIELDS                          \
        { "summary", &s_string },               \
        { "description", &s_string },           \
        { "cpus", &s_cpus_section },            \
        { "boot", &s_boot },                    \
        { "irq", &s_irq },                      \
        { "irqbalance", &s_irqbalance },        \
        { "cpuset", &s_cpuset },                \
        { "cat", &s_cat },                      \
        { "sysctl", &s_values },                \
        { "sysfs", &s_values },                 \
        { "kthreads", &s_kthreads },            \
        { "cpu", &s_cpu },                      \
        { "modules", &s_modules },              \
        { "drift", &s_drift }

static const Field fragment_fields[] = { SECTION_FIELDS, {} };
static const Field vendor_fields[] = {
        { "intel", &s_fragment },
        { "amd", &s_fragment },
        {}
};
static const Schema s_vendor = { K_OBJECT, .fields = vendor_fields };

static const Field top_fields[] = {
        { "include", &s_strings },
        { "variables", &s_variables },
        { "vendor", &s_vendor },
        SECTION_FIELDS,
        {}
};
static const Schema s_top = { K_OBJECT, .fields = top_fields };
static const Schema s_fragment_object = { K_OBJECT, .fields = fragment_fields };

static unsigned edit_distance(const char *a, const char *b) {
        size_t la = strlen(a), lb = strlen(b);
        if (la > 64 || lb > 64)
                return 99;
        unsigned d[65][65];
        for (size_t i = 0; i <= la; i++)
                d[i][0] = (unsigned) i;
        for (size_t j = 0; j <= lb; j++)
                d[0][j] = (unsigned) j;
        for (size_t i = 1; i <= la; i++)
                for (size_t j = 1; j <= lb; j++) {
                        unsigned c = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
                        c = MIN(c, d[i - 1][j] + 1);
                        c = MIN(c, d[i][j - 1] + 1);
                        if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                                c = MIN(c, d[i - 2][j - 2] + 1);
                        d[i][j] = c;
                }
        return d[la][lb];
}

static const char *closest(const char *key, const char * const *candidates, size_t n) {
        const char *best = NULL;
        unsigned best_d = 99;
        for (size_t i = 0; i < n; i++) {
                unsigned dist = edit_distance(key, candidates[i]);
                if (dist < best_d) {
                        best_d = dist;
                        best = candidates[i];
                }
        }
        size_t len = strlen(key);
        if (best && best_d <= (len <= 4 ? 1U : len <= 8 ? 2U : 3U))
                return best;
        /* An abbreviation ("prio" for "priority") or an over-long form. */
        for (size_t i = 0; len >= 3 && i < n; i++)
                if (startswith(candidates[i], key) || startswith(key, candidates[i]))
                        return candidates[i];
        return NULL;
}

static const char *json_kind(const json_t *v) {
        switch (json_typeof(v)) {
        case JSON_OBJECT: return "an object";
        case JSON_ARRAY: return "an array";
        case JSON_STRING: return "a string";
        case JSON_INTEGER: return "an integer";
        case JSON_REAL: return "a number";
        case JSON_TRUE:
        case JSON_FALSE: return "a boolean";
        case JSON_NULL: return "null";
        }
        return "something else";
}

static int validate(const char *file, const char *ptr, const json_t *v, const Schema *s, ProfileError *e);

static int validate_object(const char *file, const char *ptr, const json_t *v, const Field *fields, ProfileError *e) {
        const char *key;
        json_t *child;
        int k;

        if (!json_is_object(v))
                return set_error(e, -EINVAL, file, ptr, "expected an object, found %s", json_kind(v));
        json_object_foreach((json_t *) v, key, child) {
                const Field *f = NULL;
                for (const Field *i = fields; i->key; i++)
                        if (streq(i->key, key)) {
                                f = i;
                                break;
                        }
                _cleanup_free_ char *p = json_pointer_append(ptr, key);
                if (!p)
                        return -ENOMEM;
                if (!f) {
                        const char *names[64];
                        size_t n = 0;
                        StrBuf known = {};
                        for (const Field *i = fields; i->key && n < ELEMENTSOF(names); i++) {
                                names[n++] = i->key;
                                strbuf_appendf(&known, "%s%s", n > 1 ? ", " : "", i->key);
                        }
                        const char *hint = closest(key, names, n);
                        _cleanup_free_ char *list = strbuf_steal(&known);
                        if (hint)
                                return set_error(e, -EINVAL, file, p, "unknown key \"%s\"; did you mean \"%s\"?", key, hint);
                        return set_error(e, -EINVAL, file, p, "unknown key \"%s\"; known keys here: %s", key, strempty(list));
                }
                k = validate(file, p, child, f->schema, e);
                if (k < 0)
                        return k;
        }
        return 0;
}

static int validate(const char *file, const char *ptr, const json_t *v, const Schema *s, ProfileError *e) {
        int k;

        switch (s->kind) {
        case K_STRING:
        case K_CPUS:
                if (!json_is_string(v))
                        return set_error(e, -EINVAL, file, ptr, "expected %s, found %s",
                                         s->kind == K_CPUS ? "a CPU list string such as \"2-7,10\" or \"isolated\"" : "a string",
                                         json_kind(v));
                if (s->choices) {
                        const char *val = json_string_value(v);
                        size_t n = 0;
                        StrBuf b = {};
                        for (const char * const *c = s->choices; *c; c++, n++) {
                                if (streq(*c, val)) {
                                        strbuf_done(&b);
                                        return 0;
                                }
                                strbuf_appendf(&b, "%s\"%s\"", n ? ", " : "", *c);
                        }
                        _cleanup_free_ char *list = strbuf_steal(&b);
                        const char *hint = closest(val, s->choices, n);
                        if (hint)
                                return set_error(e, -EINVAL, file, ptr, "\"%s\" is not valid; did you mean \"%s\"?", val, hint);
                        return set_error(e, -EINVAL, file, ptr, "\"%s\" is not valid; use one of %s", val, strempty(list));
                }
                return 0;
        case K_INT:
                if (!json_is_integer(v))
                        return set_error(e, -EINVAL, file, ptr, "expected an integer, found %s", json_kind(v));
                if (json_integer_value(v) < s->min || json_integer_value(v) > s->max)
                        return set_error(e, -EINVAL, file, ptr, "%lld is out of range; use %ld to %ld",
                                         (long long) json_integer_value(v), s->min, s->max);
                return 0;
        case K_BOOL:
                if (!json_is_boolean(v))
                        return set_error(e, -EINVAL, file, ptr, "expected true or false, found %s", json_kind(v));
                return 0;
        case K_SCALAR_OR_NULL:
                if (json_is_null(v))
                        return 0;
                _fallthrough_;
        case K_SCALAR:
                if (!json_is_string(v) && !json_is_number(v) && !json_is_boolean(v))
                        return set_error(e, -EINVAL, file, ptr, "expected a string, number or boolean, found %s%s",
                                         json_kind(v), s->kind == K_SCALAR_OR_NULL ? " (null removes an inherited value)" : "");
                return 0;
        case K_BOOTARG:
                if (!json_is_string(v) && !json_is_boolean(v) && !json_is_null(v))
                        return set_error(e, -EINVAL, file, ptr,
                                         "expected a string value, true for a bare flag, or false/null to remove the argument; found %s",
                                         json_kind(v));
                return 0;
        case K_STRINGS:
                if (json_is_string(v))
                        return 0;
                if (!json_is_array(v))
                        return set_error(e, -EINVAL, file, ptr, "expected a string or an array of strings, found %s", json_kind(v));
                _fallthrough_;
        case K_ARRAY: {
                if (!json_is_array(v))
                        return set_error(e, -EINVAL, file, ptr, "expected an array, found %s", json_kind(v));
                size_t i;
                json_t *item;
                json_array_foreach(v, i, item) {
                        _cleanup_free_ char *p = json_pointer_append_index(ptr, i);
                        if (!p)
                                return -ENOMEM;
                        k = validate(file, p, item, s->items ? s->items : &s_string, e);
                        if (k < 0)
                                return k;
                }
                return 0;
        }
        case K_OBJECT:
                return validate_object(file, ptr, v, s->fields, e);
        case K_FRAGMENT:
                return validate_object(file, ptr, v, fragment_fields, e);
        case K_MAP: {
                if (!json_is_object(v))
                        return set_error(e, -EINVAL, file, ptr, "expected an object, found %s", json_kind(v));
                const char *key;
                json_t *child;
                json_object_foreach((json_t *) v, key, child) {
                        _cleanup_free_ char *p = json_pointer_append(ptr, key);
                        if (!p)
                                return -ENOMEM;
                        if (!*key)
                                return set_error(e, -EINVAL, file, p, "empty key");
                        k = validate(file, p, child, s->items, e);
                        if (k < 0)
                                return k;
                }
                return 0;
        }
        }
        return 0;
}

/* Checks that do not need the host: names and paths that must have a given shape. */
static int validate_names(const char *file, const json_t *doc, const char *base, ProfileError *e) {
        const char *key;
        json_t *v;

        json_t *sysctl = json_object_get(doc, "sysctl");
        json_object_foreach(sysctl, key, v) {
                _cleanup_free_ char *p = json_pointer_append(base, "sysctl");
                _cleanup_free_ char *pk = p ? json_pointer_append(p, key) : NULL;
                for (const char *c = key; *c; c++)
                        if (!isalnum((unsigned char) *c) && !strchr("._-/*", *c))
                                return set_error(e, -EINVAL, file, pk,
                                                 "\"%s\" is not a sysctl name; use the dotted form, e.g. \"kernel.timer_migration\"", key);
                if (key[0] == '.' || key[0] == '/' || strstr(key, ".."))
                        return set_error(e, -EINVAL, file, pk,
                                         "\"%s\" is not a sysctl name; use the dotted form, e.g. \"kernel.timer_migration\"", key);
        }
        json_t *sysfs = json_object_get(doc, "sysfs");
        json_object_foreach(sysfs, key, v) {
                _cleanup_free_ char *p = json_pointer_append(base, "sysfs");
                _cleanup_free_ char *pk = p ? json_pointer_append(p, key) : NULL;
                if (!startswith(key, "/sys/") || strstr(key, "/../") || strstr(key, "/./"))
                        return set_error(e, -EINVAL, file, pk,
                                         "\"%s\" is not a path under /sys; write the absolute path, e.g. \"/sys/kernel/mm/ksm/run\"", key);
        }
        json_t *args = json_object_get(json_object_get(doc, "boot"), "args");
        json_object_foreach(args, key, v) {
                _cleanup_free_ char *p = NULL;
                if (asprintf(&p, "%s/boot/args", base) < 0)
                        return -ENOMEM;
                _cleanup_free_ char *pk = json_pointer_append(p, key);
                for (const char *c = key; *c; c++)
                        if (!isalnum((unsigned char) *c) && !strchr("._-", *c))
                                return set_error(e, -EINVAL, file, pk,
                                                 "\"%s\" is not a kernel parameter name; use the name alone as the key and its value as the value, e.g. \"nohz_full\": \"${isolated}\"",
                                                 key);
                if (json_is_string(v))
                        for (const char *c = json_string_value(v); *c; c++)
                                if (isspace((unsigned char) *c) || *c == '"')
                                        return set_error(e, -EINVAL, file, pk,
                                                         "the value must not contain spaces or quotes; give each kernel parameter its own key");
        }
        json_t *modules = json_object_get(doc, "modules");
        json_object_foreach(modules, key, v) {
                for (const char *c = key; *c; c++)
                        if (!isalnum((unsigned char) *c) && *c != '_' && *c != '-') {
                                _cleanup_free_ char *p = json_pointer_append(base, "modules");
                                _cleanup_free_ char *pk = p ? json_pointer_append(p, key) : NULL;
                                return set_error(e, -EINVAL, file, pk, "\"%s\" is not a module name, e.g. \"kvm_intel\"", key);
                        }
        }
        size_t ai;
        json_array_foreach(json_object_get(json_object_get(doc, "drift"), "task_allow"), ai, v) {
                const char *entry = json_string_value(v);
                if (entry && (!*entry || streq(entry, "!"))) {
                        _cleanup_free_ char *p = NULL;
                        if (asprintf(&p, "%s/drift/task_allow/%zu", base, ai) < 0)
                                return -ENOMEM;
                        return set_error(e, -EINVAL, file, p,
                                         "an empty entry matches nothing; give a comm pattern (\"qemu-*\"), a cgroup "
                                         "(\"/machine.slice\") or an exception (\"!stress*\")");
                }
        }
        const char *lists[][2] = { { "cpuset", "partitions" }, { "cat", "groups" } };
        for (size_t l = 0; l < ELEMENTSOF(lists); l++) {
                json_t *arr = json_object_get(json_object_get(doc, lists[l][0]), lists[l][1]);
                size_t i;
                json_array_foreach(arr, i, v) {
                        const char *name = json_string_value(json_object_get(v, "name"));
                        _cleanup_free_ char *p = NULL;
                        if (asprintf(&p, "%s/%s/%s/%zu", base, lists[l][0], lists[l][1], i) < 0)
                                return -ENOMEM;
                        if (!name)
                                return set_error(e, -EINVAL, file, p, "missing \"name\"");
                        for (const char *c = name; *c; c++)
                                if (!isalnum((unsigned char) *c) && !strchr("._-", *c))
                                        return set_error(e, -EINVAL, file, p,
                                                         "name \"%s\" may hold only letters, digits, '.', '_' and '-'", name);
                        static const char * const reserved[][5] = {
                                { "root", "rtpart-nrt", NULL },                         /* cpuset */
                                { "default", "info", "mon_groups", "mon_data", NULL },  /* resctrl */
                        };
                        bool taken = false;
                        for (const char * const *rn = reserved[l]; *rn; rn++)
                                taken = taken || streq(name, *rn);
                        if (taken || !*name || streq(name, ".") || streq(name, ".."))
                                return set_error(e, -EINVAL, file, p, "\"%s\" cannot be used as a group name", name);
                        if (!json_object_get(v, "cpus"))
                                return set_error(e, -EINVAL, file, p, "missing \"cpus\"");
                        for (size_t j = 0; j < i; j++)
                                if (streq_ptr(name, json_string_value(json_object_get(json_array_get(arr, j), "name"))))
                                        return set_error(e, -EINVAL, file, p, "name \"%s\" is used twice", name);
                        json_t *l3 = json_object_get(v, "l3");
                        const char *shares[] = { "l3", "l3code", "l3data" };
                        for (size_t s = 0; s < ELEMENTSOF(shares); s++) {
                                json_t *sh = json_object_get(v, shares[s]);
                                if (sh && json_object_size(sh) != 1) {
                                        _cleanup_free_ char *ps = json_pointer_append(p, shares[s]);
                                        return set_error(e, -EINVAL, file, ps, "give exactly one of \"mask\", \"ways\" or \"percent\"");
                                }
                        }
                        if (l3 && (json_object_get(v, "l3code") || json_object_get(v, "l3data"))) {
                                _cleanup_free_ char *ps = json_pointer_append(p, "l3");
                                return set_error(e, -EINVAL, file, ps, "use either \"l3\" or \"l3code\"/\"l3data\", not both");
                        }
                }
        }
        json_t *rules[] = { json_object_get(json_object_get(doc, "irq"), "rules"),
                            json_object_get(json_object_get(doc, "kthreads"), "rules") };
        const char *rule_ptrs[] = { "irq/rules", "kthreads/rules" };
        for (size_t r = 0; r < ELEMENTSOF(rules); r++) {
                size_t i;
                json_array_foreach(rules[r], i, v) {
                        _cleanup_free_ char *p = NULL;
                        if (asprintf(&p, "%s/%s/%zu", base, rule_ptrs[r], i) < 0)
                                return -ENOMEM;
                        if (!json_object_get(v, "match"))
                                return set_error(e, -EINVAL, file, p, "missing \"match\" (a shell pattern such as \"eth1-TxRx-*\")");
                        if (r == 0 && !json_object_get(v, "cpus"))
                                return set_error(e, -EINVAL, file, p, "missing \"cpus\": the CPUs the matching IRQs go to");
                        if (r == 1 && !json_object_get(v, "cpus") && !json_object_get(v, "policy"))
                                return set_error(e, -EINVAL, file, p, "give \"policy\" (with \"priority\") or \"cpus\", or both");
                }
        }
        return 0;
}

/* ---- loading and merging ---- */

Profile *profile_free(Profile *p) {
        if (!p)
                return NULL;
        free(p->name);
        free(p->path);
        free(p->summary);
        json_decref(p->doc);
        json_decref(p->origins);
        strv_free(p->files);
        free(p);
        return NULL;
}

bool profile_is_path(const char *s) {
        size_t n = strlen(s);
        return strchr(s, '/') || (n > 5 && streq(s + n - 5, ".json"));
}

static bool valid_name(const char *s) {
        if (!*s || strlen(s) > 128)
                return false;
        for (const char *c = s; *c; c++)
                if (!isalnum((unsigned char) *c) && !strchr("._-", *c))
                        return false;
        return s[0] != '.';
}

static char *stem(const char *path) {
        const char *b = strrchr(path, '/');
        b = b ? b + 1 : path;
        size_t n = strlen(b);
        if (n > 5 && streq(b + n - 5, ".json"))
                n -= 5;
        return strndup(b, n);
}

static const char *file_type_name(mode_t mode) {
        switch (mode & S_IFMT) {
        case S_IFDIR: return "a directory";
        case S_IFIFO: return "a FIFO";
        case S_IFCHR: return "a character device";
        case S_IFBLK: return "a block device";
        case S_IFSOCK: return "a socket";
        default: return "not a plain file";
        }
}

/* The checks a profile file passes before a byte of it is read, on what was opened (fstat of the
 * fd, never the path again): a regular file, owned by root or by the reader, writable by no one
 * else. A profile rtpartd (root) applies is one that only root could have written. */
static int check_trusted(int fd, const char *display, ProfileError *e) {
        struct stat st;
        if (fstat(fd, &st) < 0)
                return set_error(e, -errno, display, NULL, "cannot read profile: %s", strerror(errno));
        if (!S_ISREG(st.st_mode))
                return set_error(e, -EINVAL, display, NULL, "not a regular file (%s); give a profile's .json file",
                                 file_type_name(st.st_mode));
        uid_t me = geteuid();
        if (st.st_uid != 0 && st.st_uid != me) {
                if (me == 0)
                        return set_error(e, -EINVAL, display, NULL,
                                         "owned by uid %u, not by root; a profile rtpartd applies must be owned by root "
                                         "(chown root: %s)", (unsigned) st.st_uid, display);
                return set_error(e, -EINVAL, display, NULL,
                                 "owned by uid %u, neither by root nor by you (uid %u); use a copy you own (cp %s .)",
                                 (unsigned) st.st_uid, (unsigned) me, display);
        }
        if ((st.st_mode & S_IWOTH) || ((st.st_mode & S_IWGRP) && st.st_gid != 0))
                return set_error(e, -EINVAL, display, NULL,
                                 "%s (mode %04o); a profile must be writable by its owner only (chmod go-w %s)",
                                 st.st_mode & S_IWOTH ? "world-writable" : "group-writable", (unsigned) (st.st_mode & 07777),
                                 display);
        if (st.st_size > PROFILE_SIZE_MAX)
                return set_error(e, -EINVAL, display, NULL, "larger than 1 MiB (%lld bytes); a profile is at most 1 MiB",
                                 (long long) st.st_size);
        return 0;
}

/* Reads what check_trusted() let through, at most PROFILE_SIZE_MAX bytes (the file may grow after
 * the fstat), as text: a NUL byte in it is refused, not silently the end of the profile. */
static int read_trusted(int fd, const char *display, char **ret_text, ProfileError *e) {
        _cleanup_free_ char *buf = NULL;
        size_t len = 0, cap = 0;

        for (;;) {
                if (len == cap) {
                        if (cap > PROFILE_SIZE_MAX)
                                break;
                        cap = MIN(cap ? 2 * cap : 16384, (size_t) PROFILE_SIZE_MAX + 1);
                        char *n = realloc(buf, cap + 1);
                        if (!n)
                                return -ENOMEM;
                        buf = n;
                }
                ssize_t r = read(fd, buf + len, cap - len);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0)
                        return set_error(e, -errno, display, NULL, "cannot read profile: %s", strerror(errno));
                if (r == 0)
                        break;
                len += (size_t) r;
        }
        if (len > PROFILE_SIZE_MAX)
                return set_error(e, -EINVAL, display, NULL, "larger than 1 MiB; a profile is at most 1 MiB");
        const char *nul = memchr(buf ?: "", 0, len);
        if (nul)
                return set_error(e, -EINVAL, display, NULL,
                                 "a NUL byte at offset %zu; a profile is JSON text (was the file truncated or overwritten?)",
                                 (size_t) (nul - buf));
        if (!buf && !(buf = malloc(1)))
                return -ENOMEM;
        buf[len] = 0;
        *ret_text = TAKE_PTR(buf);
        return 0;
}

/* Every profile file and include is read here: rel under root, or with root NULL a path from the
 * current directory. Opening never blocks (a FIFO is refused, not waited on); what is read is
 * what was checked. -ENOENT when there is no such file, with the error set. */
static int profile_read_file(Root *root, const char *rel, const char *display, char **ret_text, ProfileError *e) {
        const int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
        _cleanup_close_ int fd = root ? root_open(root, rel, flags, 0) : open(rel, flags);
        if (!root && fd < 0)
                fd = -errno;
        if (fd < 0)
                return set_error(e, fd, display, NULL, "cannot open profile: %s", strerror(-fd));
        int k = check_trusted(fd, display, e);
        if (k < 0)
                return k;
        return read_trusted(fd, display, ret_text, e);
}

/* The identity of a profile file for cycle detection: its real path where it has one. */
static char *file_key(const char *display) {
        char *real = realpath(display, NULL);
        return real ? real : strdup(display);
}

static int read_profile_text(Root *root, const char *name_or_path, const char *include_dir, char * const *loading,
                             char **ret_text, char **ret_display, char **ret_dir, ProfileError *e) {
        _cleanup_free_ char *text = NULL, *display = NULL, *dir = NULL;
        int k;

        if (profile_is_path(name_or_path)) {
                _cleanup_free_ char *path = NULL;
                if (name_or_path[0] != '/' && include_dir) {
                        if (asprintf(&path, "%s/%s", include_dir, name_or_path) < 0)
                                return -ENOMEM;
                } else if (!(path = strdup(name_or_path)))
                        return -ENOMEM;
                k = profile_read_file(NULL, path, path, &text, e);
                if (k < 0)
                        return k;
                char *slash = strrchr(path, '/');
                dir = slash ? strndup(path, (size_t) (slash - path)) : strdup(".");
                if (slash == path) {
                        free(dir);
                        dir = strdup("/");
                }
                display = TAKE_PTR(path);
        } else {
                if (!valid_name(name_or_path))
                        return set_error(e, -EINVAL, name_or_path, NULL,
                                         "not a profile name; names use letters, digits, '.', '_' and '-' (see rtpartctl list), or give a path to a .json file");
                /* An include by name from a profile read by path looks beside that file first, so
                 * a directory of profiles works wherever it is. */
                if (include_dir) {
                        _cleanup_free_ char *beside = NULL;
                        if (asprintf(&beside, "%s/%s.json", include_dir, name_or_path) < 0)
                                return -ENOMEM;
                        _cleanup_free_ char *bkey = file_key(beside);
                        if (access(beside, F_OK) >= 0 && !strv_contains(loading, bkey))
                                return read_profile_text(root, beside, NULL, loading, ret_text, ret_display, ret_dir, e);
                }
                k = -ENOENT;
                SearchPath sp;
                search_path_init(root, &sp);
                for (size_t i = 0; i < sp.n; i++) {
                        _cleanup_free_ char *rel = NULL;
                        if (asprintf(&rel, "%s/%s.json", sp.d[i].dir, name_or_path) < 0) {
                                search_path_done(&sp);
                                return -ENOMEM;
                        }
                        _cleanup_free_ char *cand = root_display_path(sp.d[i].root, rel), *ckey = NULL;
                        if (!cand || !(ckey = file_key(cand))) {
                                search_path_done(&sp);
                                return -ENOMEM;
                        }
                        /* A user profile that includes the shipped profile of its own name gets
                         * the shipped one, not itself. */
                        if (strv_contains(loading, ckey))
                                continue;
                        k = profile_read_file(sp.d[i].root, rel, cand, &text, e);
                        if (k == -ENOENT)
                                continue;
                        if (k < 0) {
                                search_path_done(&sp);
                                return k;
                        }
                        display = TAKE_PTR(cand);
                        char *slash = strrchr(display, '/');
                        dir = slash ? strndup(display, (size_t) (slash - display)) : strdup(".");
                        if (!dir) {
                                search_path_done(&sp);
                                return -ENOMEM;
                        }
                        break;
                }
                search_path_done(&sp);
                if (k == -ENOENT) {
                        _cleanup_free_ char *a = root_display_path(root, profile_dirs[0]);
                        _cleanup_free_ char *b = root_display_path(root, profile_dirs[1]);
                        return set_error(e, -ENOENT, name_or_path, NULL,
                                         "no such profile in %s or %s; see rtpartctl list", strempty(a), strempty(b));
                }
        }
        *ret_text = TAKE_PTR(text);
        *ret_display = TAKE_PTR(display);
        if (ret_dir)
                *ret_dir = TAKE_PTR(dir);
        return 0;
}

/* Objects merge, everything else (arrays included) replaces; null deletes. origins records which
 * file set each pointer. */
static int merge(json_t *dst, json_t *src, const char *ptr, json_t *origins, const char *file) {
        const char *key;
        json_t *v;

        json_object_foreach(src, key, v) {
                _cleanup_free_ char *p = json_pointer_append(ptr, key);
                if (!p)
                        return -ENOMEM;
                json_t *cur = json_object_get(dst, key);
                if (json_is_object(v) && json_is_object(cur)) {
                        int k = merge(cur, v, p, origins, file);
                        if (k < 0)
                                return k;
                        continue;
                }
                if (json_object_set_new(dst, key, json_deep_copy(v)) < 0)
                        return -ENOMEM;
                if (origins && json_object_set_new(origins, p, json_string(file)) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* Records `file` as the origin of every pointer inside v (so later lookups find the deepest). */
static int mark_origin(json_t *v, const char *ptr, json_t *origins, const char *file) {
        if (json_object_set_new(origins, ptr, json_string(file)) < 0)
                return -ENOMEM;
        const char *key;
        json_t *c;
        if (json_is_object(v))
                json_object_foreach(v, key, c) {
                        _cleanup_free_ char *p = json_pointer_append(ptr, key);
                        if (!p || mark_origin(c, p, origins, file) < 0)
                                return -ENOMEM;
                }
        return 0;
}

static const char *origin_of(const json_t *origins, const char *ptr, const char *fallback) {
        _cleanup_free_ char *p = strdup(ptr);
        if (!p)
                return fallback;
        for (;;) {
                const char *f = json_string_value(json_object_get(origins, p));
                if (f)
                        return f;
                char *slash = strrchr(p, '/');
                if (!slash)
                        return fallback;
                *slash = 0;
        }
}

typedef struct LoadState {
        Root *root;
        char **stack;           /* files being loaded, as displayed */
        char **keys;            /* … and their real paths, for cycle detection */
        char **files;
} LoadState;

/* The schema and the names of one profile document, its vendor overlays included. */
static int validate_document(const char *file, const json_t *doc, ProfileError *e) {
        int k = validate(file, "", doc, &s_top, e);
        if (k < 0)
                return k;
        k = validate_names(file, doc, "", e);
        if (k < 0)
                return k;
        const char *vkey;
        json_t *vfrag;
        json_object_foreach(json_object_get(doc, "vendor"), vkey, vfrag) {
                _cleanup_free_ char *base = NULL;
                if (asprintf(&base, "/vendor/%s", vkey) < 0)
                        return -ENOMEM;
                k = validate_names(file, vfrag, base, e);
                if (k < 0)
                        return k;
        }
        return 0;
}

static int load_rec(LoadState *st, const char *name_or_path, const char *include_dir, const char *from_file,
                    const char *from_ptr, json_t **ret_doc, json_t *origins, char **ret_summary, ProfileError *e) {
        _cleanup_free_ char *text = NULL, *display = NULL, *dir = NULL;
        json_error_t jerr;
        int k;

        k = read_profile_text(st->root, name_or_path, include_dir, st->keys, &text, &display, &dir, e);
        if (k < 0) {
                if (from_file && e && e->code == -ENOENT) {
                        _cleanup_free_ char *msg = e->message ? strdup(e->message) : NULL;
                        return set_error(e, -EINVAL, from_file, from_ptr, "included profile \"%s\": %s",
                                         name_or_path, strempty(msg));
                }
                return k;
        }
        _cleanup_free_ char *key = file_key(display);
        if (!key)
                return -ENOMEM;
        if (strv_contains(st->keys, key)) {
                StrBuf chain = {};
                for (char **s = st->stack; *s; s++)
                        strbuf_appendf(&chain, "%s -> ", *s);
                strbuf_append(&chain, display);
                _cleanup_free_ char *c = strbuf_steal(&chain);
                return set_error(e, -EINVAL, from_file, from_ptr, "include cycle: %s; remove one of these includes", strempty(c));
        }
        if (strv_length(st->stack) >= MAX_INCLUDE_DEPTH)
                return set_error(e, -EINVAL, from_file, from_ptr, "includes nest deeper than %d levels", MAX_INCLUDE_DEPTH);

        _cleanup_(json_decrefp) json_t *doc = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
        if (!doc) {
                _cleanup_free_ char *where = NULL;
                if (asprintf(&where, "%s:%d:%d", display, jerr.line, jerr.column) < 0)
                        return -ENOMEM;
                return set_error(e, -EINVAL, where, NULL, "not valid JSON: %s", jerr.text);
        }
        k = validate_document(display, doc, e);
        if (k < 0)
                return k;

        k = strv_extend(&st->stack, display);
        if (k >= 0)
                k = strv_extend(&st->keys, key);
        if (k < 0)
                return k;

        /* Includes first, in order; this file on top. */
        _cleanup_(json_decrefp) json_t *merged = json_object();
        if (!merged)
                return -ENOMEM;
        json_t *inc = json_object_get(doc, "include");
        json_t *inc_list = json_is_string(inc) ? json_pack("[O]", inc) : json_incref(inc);
        size_t i;
        json_t *item;
        json_array_foreach(inc_list, i, item) {
                _cleanup_(json_decrefp) json_t *sub = NULL;
                _cleanup_free_ char *ptr = json_is_array(inc) ? json_pointer_append_index("/include", i) : strdup("/include");
                k = load_rec(st, json_string_value(item), dir, display, ptr, &sub, origins, NULL, e);
                if (k < 0) {
                        json_decref(inc_list);
                        return k;
                }
                k = merge(merged, sub, "", NULL, display); /* origins were set by the sub-load */
                if (k < 0) {
                        json_decref(inc_list);
                        return k;
                }
        }
        json_decref(inc_list);
        json_object_del(doc, "include");

        /* Variables merge like everything else; the including file's win. */
        k = merge(merged, doc, "", origins, display);
        if (k < 0)
                return k;
        k = mark_origin(doc, "", origins, display);
        if (k < 0)
                return k;

        if (ret_summary) {
                const char *s = json_string_value(json_object_get(merged, "summary"));
                *ret_summary = s ? strdup(s) : NULL;
        }
        free(st->stack[strv_length(st->stack) - 1]);
        st->stack[strv_length(st->stack) - 1] = NULL;
        free(st->keys[strv_length(st->keys) - 1]);
        st->keys[strv_length(st->keys) - 1] = NULL;
        if (!strv_contains(st->files, display)) {
                k = strv_extend(&st->files, display);
                if (k < 0)
                        return k;
        }
        *ret_doc = TAKE_PTR(merged);
        return 0;
}

int profile_load(Root *root, const char *name_or_path, Profile **ret, ProfileError *ret_error) {
        _cleanup_(profile_freep) Profile *p = NULL;
        LoadState st = { .root = root };
        int k;

        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->origins = json_object();
        p->name = stem(name_or_path);
        if (!p->origins || !p->name)
                return -ENOMEM;

        k = load_rec(&st, name_or_path, NULL, NULL, NULL, &p->doc, p->origins, &p->summary, ret_error);
        strv_free(st.stack);
        strv_free(st.keys);
        if (k < 0) {
                strv_free(st.files);
                return k;
        }
        p->files = st.files;
        size_t n = strv_length(p->files);
        p->path = n ? strdup(p->files[n - 1]) : NULL;
        profile_error_done(ret_error); /* a name not found in an earlier search directory left one */
        *ret = TAKE_PTR(p);
        return 0;
}

int profile_from_document(const char *name, const json_t *doc, Profile **ret, ProfileError *ret_error) {
        _cleanup_(profile_freep) Profile *p = NULL;
        _cleanup_free_ char *label = NULL;
        int k;

        if (asprintf(&label, "%s (as applied, in the journal)", strempty(name)) < 0)
                return -ENOMEM;
        if (!name || !*name || !doc)
                return set_error(ret_error, -EINVAL, label, NULL, "no profile document; apply the profile again");
        k = validate_document(label, doc, ret_error);
        if (k < 0)
                return k;
        if (json_object_get(doc, "include"))
                return set_error(ret_error, -EINVAL, label, "/include",
                                 "an applied profile has its includes merged and names none; apply the profile again");

        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->name = strdup(name);
        p->doc = json_deep_copy(doc);
        p->origins = json_object();
        if (!p->name || !p->doc || !p->origins)
                return -ENOMEM;
        k = mark_origin(p->doc, "", p->origins, label);
        if (k < 0)
                return k;
        const char *summary = json_string_value(json_object_get(doc, "summary"));
        if (summary && !(p->summary = strdup(summary)))
                return -ENOMEM;
        *ret = TAKE_PTR(p);
        return 0;
}

void profile_info_free_many(ProfileInfo *l, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(l[i].name);
                free(l[i].path);
                free(l[i].summary);
        }
        free(l);
}

static int info_cmp(const void *a, const void *b) {
        return strcmp(((const ProfileInfo *) a)->name, ((const ProfileInfo *) b)->name);
}

static int profile_info_add(Root *root, const char *dir, bool user, const char *file, ProfileInfo **l, size_t *n) {
        size_t len = strlen(file);
        _cleanup_free_ char *name = strndup(file, len - 5), *rel = NULL, *text = NULL;

        if (!name)
                return -ENOMEM;
        for (size_t i = 0; i < *n; i++)
                if (streq((*l)[i].name, name)) {
                        (*l)[i].shadows = (*l)[i].shadows || (*l)[i].user; /* the user's hides a shipped one */
                        return 0;
                }
        if (asprintf(&rel, "%s/%s", dir, file) < 0)
                return -ENOMEM;
        char *summary = NULL;
        /* A file that is no profile (a FIFO, another user's) gets no summary; apply says why. */
        if (profile_read_file(root, rel, rel, &text, NULL) >= 0) {
                json_t *doc = json_loads(text, 0, NULL);
                const char *s = json_string_value(json_object_get(doc, "summary"));
                summary = s ? strdup(s) : NULL;
                json_decref(doc);
        }
        char *path = root_display_path(root, rel);
        ProfileInfo *m = realloc(*l, (*n + 1) * sizeof(ProfileInfo));
        if (!m || !path) {
                free(summary);
                free(path);
                if (m)
                        *l = m;
                return -ENOMEM;
        }
        *l = m;
        m[(*n)++] = (ProfileInfo) { .name = TAKE_PTR(name), .path = path, .summary = summary, .user = user };
        return 0;
}

int profile_list(Root *root, ProfileInfo **ret, size_t *ret_n) {
        ProfileInfo *l = NULL;
        size_t n = 0;
        SearchPath sp;

        search_path_init(root, &sp);
        for (size_t di = 0; di < sp.n; di++) {
                struct dirent **entries;
                _cleanup_close_ int fd = root_open(sp.d[di].root, sp.d[di].dir, O_RDONLY | O_DIRECTORY, 0);
                if (fd < 0)
                        continue;
                int k = scandirat(fd, ".", &entries, NULL, alphasort);
                if (k < 0)
                        continue;
                int r = 0;
                for (int i = 0; i < k; i++) {
                        const char *f = entries[i]->d_name;
                        size_t len = strlen(f);
                        if (r >= 0 && len > 5 && streq(f + len - 5, ".json") && f[0] != '.')
                                r = profile_info_add(sp.d[di].root, sp.d[di].dir, sp.d[di].user, f, &l, &n);
                        free(entries[i]);
                }
                free(entries);
                if (r < 0) {
                        search_path_done(&sp);
                        profile_info_free_many(l, n);
                        return r;
                }
        }
        search_path_done(&sp);
        if (n)
                qsort(l, n, sizeof(ProfileInfo), info_cmp);
        *ret = l;
        *ret_n = n;
        return 0;
}

/* ---- CPU expressions ---- */

/* "node:1" with prefix "node:" → 1: decimal digits and nothing after them. An id past UINT_MAX
 * is UINT_MAX, which no host has ("node:4294967297" is not node 1). */
static bool selector_id(const char *tok, const char *prefix, unsigned *ret) {
        if (!startswith(tok, prefix))
                return false;
        const char *p = tok + strlen(prefix);
        if (!isdigit((unsigned char) *p))
                return false;
        char *end;
        errno = 0;
        unsigned long v = strtoul(p, &end, 10);
        if (*end)
                return false;
        *ret = errno == ERANGE || v > UINT_MAX ? UINT_MAX : (unsigned) v;
        return true;
}

int cpu_expr_parse(const char *expr, const Host *host, const CpuSet *iso, const CpuSet *hk, CpuSet *ret,
                   char **ret_message) {
        CpuSet plus = {}, minus = {};
        _cleanup_free_ char *copy = strdup(expr);
        char *save = NULL;
        bool any = false;

        if (!copy)
                return -ENOMEM;
        for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                while (isspace((unsigned char) *tok))
                        tok++;
                size_t tl = strlen(tok);
                while (tl > 0 && isspace((unsigned char) tok[tl - 1]))
                        tok[--tl] = 0;
                bool neg = tok[0] == '!';
                if (neg)
                        tok++;
                CpuSet *dst = neg ? &minus : &plus;
                CpuSet s;
                unsigned id;
                any = true;

                if (streq(tok, "all") || streq(tok, "online"))
                        s = host->online;
                else if (streq(tok, "isolated") || streq(tok, "housekeeping")) {
                        const CpuSet *c = streq(tok, "isolated") ? iso : hk;
                        if (!c)
                                return asprintf(ret_message, "\"%s\" cannot be used here: the CPU classes are being defined", tok) < 0
                                       ? -ENOMEM : -EINVAL;
                        s = *c;
                } else if (selector_id(tok, "node:", &id)) {
                        if (!host_node_cpus(host, id, &s))
                                return asprintf(ret_message, "NUMA node %s does not exist or has no online CPUs (nodes: 0-%u)",
                                                strchr(tok, ':') + 1, host->n_nodes - 1) < 0 ? -ENOMEM : -EINVAL;
                } else if (selector_id(tok, "package:", &id) || selector_id(tok, "socket:", &id)) {
                        if (!host_package_cpus(host, id, &s))
                                return asprintf(ret_message, "package %s does not exist on this host", strchr(tok, ':') + 1) < 0 ? -ENOMEM : -EINVAL;
                } else if (selector_id(tok, "l3:", &id)) {
                        if (!host_l3_cpus(host, id, &s)) {
                                StrBuf b = {};
                                for (size_t i = 0; i < host->n_l3; i++)
                                        strbuf_appendf(&b, "%s%u", i ? "," : "", host->l3[i].id);
                                _cleanup_free_ char *ids = strbuf_steal(&b);
                                return asprintf(ret_message, "L3 cache domain %s does not exist (cache ids: %s)", strchr(tok, ':') + 1,
                                                ids && *ids ? ids : "none") < 0 ? -ENOMEM : -EINVAL;
                        }
                } else if (isdigit((unsigned char) tok[0])) {
                        CpuSetError err;
                        int k = cpu_set_parse_list(tok, &s, &err);
                        if (k < 0)
                                return asprintf(ret_message, "\"%s\" is not a CPU list: %s at \"%s\"", tok, err.reason,
                                                tok + err.pos) < 0 ? -ENOMEM : -EINVAL;
                        CpuSet missing = s;
                        cpu_set_andnot(&missing, &host->online);
                        if (!cpu_set_is_empty(&missing)) {
                                _cleanup_free_ char *m = cpu_set_format_list(&missing);
                                _cleanup_free_ char *on = cpu_set_format_list(&host->online);
                                return asprintf(ret_message, "CPU %s %s not exist (online: %s)", strempty(m),
                                                cpu_set_count(&missing) > 1 ? "do" : "does", strempty(on)) < 0 ? -ENOMEM : -EINVAL;
                        }
                } else {
                        const char *words[] = { "isolated", "housekeeping", "all", "node:", "package:", "l3:" };
                        const char *hint = closest(tok, words, ELEMENTSOF(words));
                        if (hint)
                                return asprintf(ret_message, "\"%s\" is not a CPU expression; did you mean \"%s\"?", tok, hint) < 0
                                       ? -ENOMEM : -EINVAL;
                        return asprintf(ret_message,
                                        "\"%s\" is not a CPU expression; use CPU numbers and ranges (2-7,10), isolated, housekeeping, all, node:N, package:N or l3:N",
                                        tok) < 0 ? -ENOMEM : -EINVAL;
                }
                cpu_set_or(dst, &s);
        }
        (void) any;
        cpu_set_andnot(&plus, &minus);
        *ret = plus;
        return 0;
}

/* ---- resolution ---- */

Resolved *resolved_free(Resolved *r) {
        if (!r)
                return NULL;
        free(r->name);
        json_decref(r->doc);
        free(r);
        return NULL;
}

typedef struct Expander {
        json_t *vars;           /* name → string (user variables, unexpanded) */
        json_t *builtins;       /* name → string */
        const char *stack[32];
        size_t depth;
        size_t work;            /* bytes produced so far at every level, plus 64 a reference */
} Expander;

/* Variables may refer to variables, so a few bytes can stand for 2^32 copies of a string: every
 * expansion is bounded in size, and all of them together in work, so that resolving ends. */
static int expand_check(Expander *x, const StrBuf *b, const char *name, char **ret_message) {
        const char *var = name ? name : x->depth > 0 ? x->stack[x->depth - 1] : NULL;
        if (b->len > EXPAND_VALUE_MAX)
                return asprintf(ret_message, "%s%s%s expands to more than 64 KiB; a value may be at most 64 KiB",
                                var ? "variable \"${" : "the value", strempty(var), var ? "}\"" : "") < 0 ? -ENOMEM : -EINVAL;
        if (x->work > EXPAND_WORK_MAX)
                return asprintf(ret_message,
                                "expanding %s%s%s makes more than 16 MiB of text in all; variables that refer to "
                                "each other several times multiply: refer to each at most once or use literal values",
                                var ? "variable \"${" : "the variables", strempty(var), var ? "}\"" : "") < 0 ? -ENOMEM : -EINVAL;
        return 0;
}

static int expand(Expander *x, const char *in, char **ret, char **ret_message) {
        StrBuf b = {};
        int k;
        for (const char *p = in; *p;) {
                size_t before = b.len;
                if (b.len > EXPAND_VALUE_MAX || x->work > EXPAND_WORK_MAX) {
                        k = expand_check(x, &b, NULL, ret_message);
                        strbuf_done(&b);
                        return k;
                }
                if (p[0] == '$' && p[1] == '$') { /* "$$" is a literal '$' */
                        strbuf_append(&b, "$");
                        p += 2;
                        x->work += b.len - before;
                        continue;
                }
                if (p[0] != '$' || p[1] != '{') {
                        const char *n = strchr(p + 1, '$');
                        size_t len = n ? (size_t) (n - p) : strlen(p);
                        _cleanup_free_ char *chunk = strndup(p, len);
                        if (chunk)
                                strbuf_append(&b, chunk);
                        else
                                b.oom = true;
                        p += len;
                        x->work += b.len - before;
                        continue;
                }
                const char *close = strchr(p + 2, '}');
                if (!close) {
                        strbuf_done(&b);
                        return asprintf(ret_message, "unterminated \"${\" in \"%s\"; write ${name}, or $$ for a literal $", in) < 0
                               ? -ENOMEM : -EINVAL;
                }
                _cleanup_free_ char *name = strndup(p + 2, (size_t) (close - p - 2));
                if (!name) {
                        strbuf_done(&b);
                        return -ENOMEM;
                }
                const char *bv = json_string_value(json_object_get(x->builtins, name));
                json_t *uv = json_object_get(x->vars, name);
                if (bv)
                        strbuf_append(&b, bv);
                else if (uv) {
                        for (size_t i = 0; i < x->depth; i++)
                                if (streq(x->stack[i], name)) {
                                        strbuf_done(&b);
                                        return asprintf(ret_message, "variable \"%s\" refers to itself", name) < 0 ? -ENOMEM : -EINVAL;
                                }
                        if (x->depth >= ELEMENTSOF(x->stack)) {
                                strbuf_done(&b);
                                return asprintf(ret_message, "variables nest too deeply at \"%s\"", name) < 0 ? -ENOMEM : -EINVAL;
                        }
                        _cleanup_free_ char *raw = NULL, *sub = NULL;
                        if (json_is_string(uv))
                                raw = strdup(json_string_value(uv));
                        else if (json_is_integer(uv))
                                (void) asprintf(&raw, "%lld", (long long) json_integer_value(uv));
                        else if (json_is_real(uv))
                                (void) asprintf(&raw, "%g", json_real_value(uv));
                        else
                                raw = strdup(json_is_true(uv) ? "1" : "0");
                        if (!raw) {
                                strbuf_done(&b);
                                return -ENOMEM;
                        }
                        x->work += 64;
                        x->stack[x->depth++] = name;
                        k = expand(x, raw, &sub, ret_message);
                        x->depth--;
                        if (k < 0) {
                                strbuf_done(&b);
                                return k;
                        }
                        strbuf_append(&b, sub);
                        if (b.len > EXPAND_VALUE_MAX) {
                                k = expand_check(x, &b, name, ret_message);
                                strbuf_done(&b);
                                return k;
                        }
                } else {
                        const char *known[64];
                        size_t n = 0;
                        const char *key;
                        json_t *v;
                        json_object_foreach(x->builtins, key, v)
                                if (n < ELEMENTSOF(known))
                                        known[n++] = key;
                        json_object_foreach(x->vars, key, v)
                                if (n < ELEMENTSOF(known))
                                        known[n++] = key;
                        const char *hint = closest(name, known, n);
                        strbuf_done(&b);
                        if (hint)
                                return asprintf(ret_message, "undefined variable \"${%s}\"; did you mean \"${%s}\"?", name, hint) < 0
                                       ? -ENOMEM : -EINVAL;
                        return asprintf(ret_message, "undefined variable \"${%s}\"; define it under \"variables\"", name) < 0
                               ? -ENOMEM : -EINVAL;
                }
                p = close + 1;
                x->work += b.len - before;
        }
        if (b.len > EXPAND_VALUE_MAX || x->work > EXPAND_WORK_MAX) {
                k = expand_check(x, &b, NULL, ret_message);
                strbuf_done(&b);
                return k;
        }
        *ret = strbuf_steal(&b);
        return *ret ? 0 : -ENOMEM;
}

typedef struct ResolveCtx {
        Profile *profile;
        const Host *host;
        Expander x;
        CpuSet iso, hk;
        ProfileError *e;
} ResolveCtx;

static int fail_at(ResolveCtx *c, const char *ptr, int code, char *message /* taken */) {
        const char *file = origin_of(c->profile->origins, ptr, c->profile->path);
        set_error(c->e, code, file, ptr, "%s", strempty(message));
        free(message);
        return code;
}

/* Expands variables in every string, and canonicalizes every CPU expression, walking the doc
 * with the schema so that we know which strings are CPU expressions. */
static int resolve_walk(ResolveCtx *c, const char *ptr, json_t *parent, const char *key, size_t index, json_t *v,
                        const Schema *s) {
        int k;
        char *msg = NULL;

        if (s->kind == K_FRAGMENT)
                s = &s_fragment_object;

        if (json_is_string(v)) {
                _cleanup_free_ char *exp = NULL;
                k = expand(&c->x, json_string_value(v), &exp, &msg);
                if (k < 0)
                        return k == -ENOMEM ? k : fail_at(c, ptr, k, msg);
                json_t *nv;
                if (s->kind == K_CPUS) {
                        CpuSet set;
                        k = cpu_expr_parse(exp, c->host, &c->iso, &c->hk, &set, &msg);
                        if (k < 0)
                                return k == -ENOMEM ? k : fail_at(c, ptr, k, msg);
                        _cleanup_free_ char *canon = cpu_set_format_list(&set);
                        if (!canon)
                                return -ENOMEM;
                        nv = json_string(canon);
                } else
                        nv = json_string(exp);
                if (!nv)
                        return -ENOMEM;
                return key ? json_object_set_new(parent, key, nv) : json_array_set_new(parent, index, nv);
        }

        if (json_is_object(v)) {
                const char *ck;
                json_t *cv;
                void *tmp;
                json_object_foreach_safe(v, tmp, ck, cv) {
                        const Schema *cs = NULL;
                        if (s->kind == K_MAP)
                                cs = s->items;
                        else if (s->kind == K_OBJECT)
                                for (const Field *f = s->fields; f->key; f++)
                                        if (streq(f->key, ck))
                                                cs = f->schema;
                        if (!cs)
                                cs = &s_string;
                        _cleanup_free_ char *p = json_pointer_append(ptr, ck);
                        if (!p)
                                return -ENOMEM;
                        k = resolve_walk(c, p, v, ck, 0, cv, cs);
                        if (k < 0)
                                return k;
                }
                return 0;
        }
        if (json_is_array(v)) {
                size_t i;
                json_t *item;
                json_array_foreach(v, i, item) {
                        _cleanup_free_ char *p = json_pointer_append_index(ptr, i);
                        if (!p)
                                return -ENOMEM;
                        k = resolve_walk(c, p, v, NULL, i, item, s->items ? s->items : &s_string);
                        if (k < 0)
                                return k;
                }
        }
        return 0;
}

static int add_builtin_set(json_t *b, const char *name, const CpuSet *s, unsigned nbits) {
        _cleanup_free_ char *list = cpu_set_format_list(s), *mask = cpu_set_format_mask(s, nbits);
        _cleanup_free_ char *mname = NULL;
        if (!list || !mask || asprintf(&mname, "%s_mask", name) < 0)
                return -ENOMEM;
        if (json_object_set_new(b, name, json_string(list)) < 0 || json_object_set_new(b, mname, json_string(mask)) < 0)
                return -ENOMEM;
        return 0;
}

static int resolve_cpus(ResolveCtx *c, json_t *doc) {
        json_t *cpus = json_object_get(doc, "cpus");
        json_t *iso_v = json_object_get(cpus, "isolated"), *hk_v = json_object_get(cpus, "housekeeping");
        json_t *per_node = json_object_get(cpus, "housekeeping_cores_per_node");
        const Host *h = c->host;
        char *msg = NULL;
        int k;

        if (cpu_set_count(&h->online) < 2) {
                _cleanup_free_ char *on = cpu_set_format_list(&h->online);
                return fail_at(c, "/cpus", -EINVAL,
                               asprintf(&msg, "nothing to isolate: this host has a single online CPU (%s); "
                                        "realtime partitioning needs at least one housekeeping and one isolated CPU",
                                        strempty(on)) < 0 ? NULL : msg);
        }

        CpuSet iso = {}, hk = {};
        const char *which[2] = { "isolated", "housekeeping" };
        json_t *vals[2] = { iso_v, hk_v };
        CpuSet *sets[2] = { &iso, &hk };
        for (size_t i = 0; i < 2; i++) {
                if (!vals[i])
                        continue;
                _cleanup_free_ char *exp = NULL, *p = NULL;
                if (asprintf(&p, "/cpus/%s", which[i]) < 0)
                        return -ENOMEM;
                k = expand(&c->x, json_string_value(vals[i]), &exp, &msg);
                if (k < 0)
                        return k == -ENOMEM ? k : fail_at(c, p, k, msg);
                k = cpu_expr_parse(exp, h, NULL, NULL, sets[i], &msg);
                if (k < 0)
                        return k == -ENOMEM ? k : fail_at(c, p, k, msg);
        }

        if (iso_v && hk_v) {
                if (cpu_set_intersects(&iso, &hk)) {
                        CpuSet both = iso;
                        cpu_set_and(&both, &hk);
                        _cleanup_free_ char *l = cpu_set_format_list(&both);
                        return fail_at(c, "/cpus/isolated", -EINVAL,
                                       asprintf(&msg, "CPUs %s are both isolated and housekeeping; a CPU belongs to one class",
                                                strempty(l)) < 0 ? NULL : msg);
                }
        } else if (iso_v) {
                hk = h->online;
                cpu_set_andnot(&hk, &iso);
        } else if (hk_v) {
                iso = h->online;
                cpu_set_andnot(&iso, &hk);
        } else {
                unsigned n = per_node ? (unsigned) json_integer_value(per_node) : 1;
                host_default_split(h, n, &hk, &iso);
        }

        if (cpu_set_is_empty(&hk)) {
                _cleanup_free_ char *on = cpu_set_format_list(&h->online);
                return fail_at(c, iso_v ? "/cpus/isolated" : "/cpus", -EINVAL,
                               asprintf(&msg, "no housekeeping CPU would be left (online: %s); keep at least one CPU for the system",
                                        strempty(on)) < 0 ? NULL : msg);
        }
        if (cpu_set_is_empty(&iso)) {
                _cleanup_free_ char *on = cpu_set_format_list(&h->online);
                return fail_at(c, hk_v ? "/cpus/housekeeping" : "/cpus", -EINVAL,
                               asprintf(&msg, "nothing to isolate: every online CPU (%s) is housekeeping; "
                                        "lower housekeeping_cores_per_node or name the isolated CPUs", strempty(on)) < 0 ? NULL : msg);
        }
        c->iso = iso;
        c->hk = hk;

        _cleanup_free_ char *il = cpu_set_format_list(&iso), *hl = cpu_set_format_list(&hk);
        json_t *out = json_pack("{s:s, s:s}", "isolated", il, "housekeeping", hl);
        if (!out || json_object_set_new(doc, "cpus", out) < 0)
                return -ENOMEM;
        return 0;
}

int profile_resolve(Profile *p, const Host *host, Resolved **ret, ProfileError *ret_error) {
        _cleanup_(resolved_freep) Resolved *r = NULL;
        ResolveCtx c = { .profile = p, .host = host, .e = ret_error };
        int k;

        r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        r->name = strdup(p->name);
        r->doc = json_deep_copy(p->doc);
        if (!r->name || !r->doc)
                return -ENOMEM;
        r->host = host;
        r->profile = p;

        /* The vendor overlay for this host's CPUs goes on top of everything else. */
        json_t *vendor = json_object_get(r->doc, "vendor");
        const char *vname = cpu_vendor_to_string(host->vendor);
        json_t *frag = json_object_get(vendor, vname);
        if (frag) {
                _cleanup_free_ char *base = NULL;
                if (asprintf(&base, "/vendor/%s", vname) < 0)
                        return -ENOMEM;
                const char *file = origin_of(p->origins, base, p->path);
                k = merge(r->doc, frag, "", p->origins, file);
                if (k < 0)
                        return k;
        }
        json_object_del(r->doc, "vendor");

        json_t *vars = json_object_get(r->doc, "variables");
        c.x.vars = vars;
        c.x.builtins = json_object();
        if (!c.x.builtins)
                return -ENOMEM;
        /* While the classes are defined, only user variables and host facts exist. */
        json_object_set_new(c.x.builtins, "vendor", json_string(vname));
        k = add_builtin_set(c.x.builtins, "online", &host->online, host->n_cpu_ids);
        if (k < 0)
                goto finish;
        k = resolve_cpus(&c, r->doc);
        if (k < 0)
                goto finish;
        k = add_builtin_set(c.x.builtins, "isolated", &c.iso, host->n_cpu_ids);
        if (k >= 0)
                k = add_builtin_set(c.x.builtins, "housekeeping", &c.hk, host->n_cpu_ids);
        if (k < 0)
                goto finish;

        /* Expand and check every section (the variables section is consumed, not output). */
        json_incref(vars);
        json_object_del(r->doc, "variables");
        const char *key;
        json_t *v;
        void *tmp;
        json_object_foreach_safe(r->doc, tmp, key, v) {
                if (streq(key, "cpus"))
                        continue;
                const Schema *s = NULL;
                for (const Field *f = top_fields; f->key; f++)
                        if (streq(f->key, key))
                                s = f->schema;
                _cleanup_free_ char *ptr = json_pointer_append("", key);
                if (!ptr) {
                        k = -ENOMEM;
                        break;
                }
                k = resolve_walk(&c, ptr, r->doc, key, 0, v, s ? s : &s_string);
                if (k < 0)
                        break;
        }
        json_decref(vars);
        if (k < 0)
                goto finish;

        r->isolated = c.iso;
        r->housekeeping = c.hk;
        *ret = TAKE_PTR(r);
        k = 0;
finish:
        json_decref(c.x.builtins);
        return k;
}
