/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "strv.h"

/* The "sysctl" and "sysfs" sections of a profile: values by name or path; null removes an
 * inherited one. */
static const SchemaField sysctl_section = { "sysctl", &schema_values };
static const SchemaField sysfs_section = { "sysfs", &schema_values };

/* sysctl: "kernel.timer_migration" → proc/sys/kernel/timer_migration. */

static int value_string(json_t *v, char **ret) {
        if (json_is_string(v))
                *ret = strdup(json_string_value(v));
        else if (json_is_integer(v))
                return asprintf(ret, "%lld", (long long) json_integer_value(v)) < 0 ? -ENOMEM : 0;
        else if (json_is_real(v))
                return asprintf(ret, "%g", json_real_value(v)) < 0 ? -ENOMEM : 0;
        else if (json_is_boolean(v))
                *ret = strdup(json_is_true(v) ? "1" : "0");
        else
                return -EINVAL;
        return *ret ? 0 : -ENOMEM;
}

static int sysctl_plan(PlanCtx *ctx) {
        json_t *sec = json_object_get(ctx->resolved->doc, "sysctl");
        const char *name;
        json_t *v;
        int k;
        StrBuf missing = {};

        json_object_foreach (sec, name, v) {
                if (json_is_null(v))
                        continue; /* removed by an including profile */
                _cleanup_free_ char *path = NULL, *id = NULL, *want = NULL, *cur = NULL;
                if (asprintf(&path, "proc/sys/%s", name) < 0 || asprintf(&id, "sysctl/%s", name) < 0)
                        return -ENOMEM;
                for (char *c = path + strlen("proc/sys/"); *c; c++)
                        if (*c == '.')
                                *c = '/';
                k = value_string(v, &want);
                if (k < 0)
                        return k;
                k = root_read_line(ctx->root, path, &cur);
                if (k == -ENOENT) {
                        strbuf_appendf(&missing, "%s%s", missing.len ? ", " : "", name);
                        continue;
                }
                if (k == -ENOMEM)
                        return k;
                /* Unreadable (write-only, a directory in its place): planned as unknown, and the
                 * write will tell. */
                k = plan_add(ctx, id, VALUE_AUTO, path, cur, want, false, NULL);
                if (k < 0)
                        return k;
        }
        if (missing.len) {
                _cleanup_free_ char *m = strbuf_steal(&missing);
                return plan_note(ctx, "sysctl: not on this kernel, skipped: %s", strempty(m));
        }
        strbuf_done(&missing);
        return 0;
}

/* Keys are sysctl names in the dotted form: nothing that leaves /proc/sys. */
static int sysctl_check(const char *file, json_t *section, const char *pointer, Error *e) {
        const char *key;
        json_t *v;
        json_object_foreach (section, key, v) {
                bool ok = key[0] != '.' && key[0] != '/' && !strstr(key, "..");
                for (const char *c = key; ok && *c; c++)
                        ok = isalnum((unsigned char) *c) || strchr("._-/*", *c);
                if (ok)
                        continue;
                _cleanup_free_ char *pk = json_pointer_append(pointer, key);
                return error_set(e, -EINVAL, file, pk,
                                 "\"%s\" is not a sysctl name; use the dotted form, e.g. \"kernel.timer_migration\"",
                                 key);
        }
        return 0;
}

const Backend backend_sysctl = {
        .domain = DOMAIN_SYSCTL,
        .name = "sysctl",
        .schema = &sysctl_section,
        .check = sysctl_check,
        .plan = sysctl_plan,
        .read = knob_read_file,
        .write = knob_write_file_verb,
        .watch = knob_watch_file,
};

/* sysfs: any path under /sys, with wildcards; two patterns reaching the same file through
 * different paths (a symlinked alias) are one knob, keyed by the canonical path. */

static bool is_mask_file(const char *path) {
        const char *b = strrchr(path, '/');
        b = b ? b + 1 : path;
        return streq(b, "cpumask") || streq(b, "cpumask_requested") || streq(b, "smp_affinity") ||
                streq(b, "default_smp_affinity");
}

static int sysfs_plan(PlanCtx *ctx) {
        json_t *sec = json_object_get(ctx->resolved->doc, "sysfs");
        size_t first_sysfs = ctx->plan->n_knobs; /* aliases can only collide with this domain's knobs */
        const char *key;
        json_t *v;
        int k;
        StrBuf missing = {};

        json_object_foreach (sec, key, v) {
                if (json_is_null(v))
                        continue;
                _cleanup_strv_free_ char **matches = NULL;
                _cleanup_free_ char *want = NULL;
                k = value_string(v, &want);
                if (k < 0)
                        return k;
                k = root_glob(ctx->root, key + 1, &matches);
                if (k < 0)
                        return k;
                if (strv_length(matches) == 0) {
                        strbuf_appendf(&missing, "%s%s", missing.len ? ", " : "", key);
                        continue;
                }
                for (char **m = matches; *m; m++) {
                        _cleanup_free_ char *canon = NULL, *id = NULL, *cur = NULL;
                        k = root_canonicalize(ctx->root, *m, &canon);
                        if (k < 0)
                                return k;
                        if (!startswith(canon, "sys/"))
                                continue; /* a link out of /sys: not ours to write */
                        if (asprintf(&id, "sysfs/%s", canon + strlen("sys/")) < 0)
                                return -ENOMEM;

                        Knob *existing = NULL;
                        for (size_t i = first_sysfs; i < ctx->plan->n_knobs; i++)
                                if (streq(ctx->plan->knobs[i].id, id))
                                        existing = &ctx->plan->knobs[i];
                        if (existing) {
                                /* The same file through another pattern: the later key wins. */
                                free(existing->desired);
                                existing->desired = strdup(want);
                                if (!existing->desired)
                                        return -ENOMEM;
                                existing->changed = !value_equal(existing->kind, existing->current, existing->desired);
                                continue;
                        }
                        k = root_read_line(ctx->root, canon, &cur);
                        if (k == -ENOMEM)
                                return k;
                        ValueKind kind = is_mask_file(canon) ? VALUE_CPU_MASK
                                : cur && strchr(cur, '[')    ? VALUE_SELECT
                                                             : VALUE_AUTO;
                        k = plan_add(ctx, id, kind, canon, cur, want, false, NULL);
                        if (k < 0)
                                return k;
                }
        }
        if (missing.len) {
                _cleanup_free_ char *m = strbuf_steal(&missing);
                return plan_note(ctx, "sysfs: no such file on this host, skipped: %s", strempty(m));
        }
        strbuf_done(&missing);
        return 0;
}

/* Keys are absolute paths under /sys that do not climb out of it. */
static int sysfs_check(const char *file, json_t *section, const char *pointer, Error *e) {
        const char *key;
        json_t *v;
        json_object_foreach (section, key, v) {
                if (startswith(key, "/sys/") && !strstr(key, "/../") && !strstr(key, "/./"))
                        continue;
                _cleanup_free_ char *pk = json_pointer_append(pointer, key);
                return error_set(
                        e, -EINVAL, file, pk,
                        "\"%s\" is not a path under /sys; write the absolute path, e.g. \"/sys/kernel/mm/ksm/run\"",
                        key);
        }
        return 0;
}

const Backend backend_sysfs = {
        .domain = DOMAIN_SYSFS,
        .name = "sysfs",
        .schema = &sysfs_section,
        .check = sysfs_check,
        .plan = sysfs_plan,
        .read = knob_read_file,
        .write = knob_write_file_verb,
        .watch = knob_watch_file,
};
