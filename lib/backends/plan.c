/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "plan.h"
#include "strv.h"

Plan *plan_free(Plan *p) {
        if (!p)
                return NULL;
        for (size_t i = 0; i < p->n_knobs; i++) {
                free(p->knobs[i].id);
                free(p->knobs[i].path);
                free(p->knobs[i].current);
                free(p->knobs[i].desired);
                free(p->knobs[i].note);
        }
        free(p->knobs);
        free(p->profile);
        strv_free(p->notes);
        free(p);
        return NULL;
}

static char *dup_or_null(const char *s, bool *oom) {
        if (!s)
                return NULL;
        char *d = strdup(s);
        if (!d)
                *oom = true;
        return d;
}

int plan_add(PlanCtx *ctx, const char *id, ValueKind kind, const char *path, const char *current, const char *desired,
             bool reboot, Knob **ret) {
        Plan *p = ctx->plan;
        bool oom = false;

        if (GROW_ARRAY(p->knobs, p->cap_knobs, p->n_knobs, 64) < 0)
                return -ENOMEM;
        Knob *k = &p->knobs[p->n_knobs];
        *k = (Knob) {
                .id = dup_or_null(id, &oom),
                .domain = _DOMAIN_INVALID,
                .kind = kind,
                .path = dup_or_null(path, &oom),
                .current = dup_or_null(current, &oom),
                .desired = dup_or_null(desired, &oom),
                .reboot = reboot,
        };
        if (oom) {
                free(k->id);
                free(k->path);
                free(k->current);
                free(k->desired);
                return -ENOMEM;
        }
        k->changed = !value_equal(kind, current, desired);
        p->n_knobs++;
        if (ret)
                *ret = k;
        return 0;
}

int plan_note(PlanCtx *ctx, const char *fmt, ...) {
        char *s;
        va_list ap;
        va_start(ap, fmt);
        int n = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (n < 0)
                return -ENOMEM;
        return strv_push(&ctx->plan->notes, s);
}

static int plan_failv(PlanCtx *ctx, const char *pointer, const char *fmt, va_list ap) {
        Error *e = ctx->error;
        if (!e)
                return -EINVAL;
        error_done(e);
        if (vasprintf(&e->message, fmt, ap) < 0)
                e->message = NULL;
        /* Find the file that set this pointer (or its closest parent). */
        const Profile *pr = ctx->resolved->profile;
        const char *file = pr ? pr->path : NULL;
        if (pr && pr->origins) {
                _cleanup_free_ char *p = strdup(pointer);
                while (p) {
                        const char *f = json_string_value(json_object_get(pr->origins, p));
                        if (f) {
                                file = f;
                                break;
                        }
                        char *slash = strrchr(p, '/');
                        if (!slash)
                                break;
                        *slash = 0;
                }
        }
        e->file = file ? strdup(file) : NULL;
        e->pointer = strdup(pointer);
        e->code = -EINVAL;
        return -EINVAL;
}

int plan_fail(PlanCtx *ctx, const char *pointer, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = plan_failv(ctx, pointer, fmt, ap);
        va_end(ap);
        return r;
}

int plan_fail_item(PlanCtx *ctx, const char *list, size_t i, const char *key, const char *fmt, ...) {
        char ptr[256];
        if (key)
                snprintf(ptr, sizeof(ptr), "%s/%zu/%s", list, i, key);
        else
                snprintf(ptr, sizeof(ptr), "%s/%zu", list, i);
        va_list ap;
        va_start(ap, fmt);
        int r = plan_failv(ctx, ptr, fmt, ap);
        va_end(ap);
        return r;
}

int plan_check_param_value(PlanCtx *ctx, const char *pointer, const char *kind, const char *readers,
                           const char *value) {
        if (!value)
                return 0;
        size_t n = strlen(value);
        if (n > BOOTARG_VALUE_MAX)
                return plan_fail(ctx, pointer,
                                 "the value is %zu characters long, longer than a kernel command line "
                                 "can hold; keep it under %d characters",
                                 n, BOOTARG_VALUE_MAX);
        const char *bad = bootarg_value_invalid(value);
        if (!bad)
                return 0;
        char what[16];
        if (isprint((unsigned char) *bad))
                snprintf(what, sizeof(what), "'%c'", *bad);
        else
                snprintf(what, sizeof(what), "byte 0x%02x", (unsigned char) *bad);
        bool printable = true;
        for (const char *c = value; *c; c++)
                printable = printable && isascii((unsigned char) *c) && isprint((unsigned char) *c);
        /* The value itself only when it prints as it is (no newline cutting the message). */
        return plan_fail(ctx, pointer,
                         "%s%s%s has %s, which %s cannot carry safely; %s parameter values use "
                         "letters, digits and %s",
                         printable ? "value \"" : "the value", printable ? value : "", printable ? "\"" : "", what,
                         readers, kind, BOOTARG_VALUE_PUNCT);
}

size_t plan_count_changes(const Plan *p, size_t *ret_reboot) {
        size_t n = 0, reboot = 0;
        for (size_t i = 0; i < p->n_knobs; i++)
                if (p->knobs[i].changed) {
                        n++;
                        if (p->knobs[i].reboot)
                                reboot++;
                }
        if (ret_reboot)
                *ret_reboot = reboot;
        return n;
}

int plan_build(const Resolved *r, Root *root, Plan **ret, Error *ret_error) {
        _cleanup_(plan_freep) Plan *p = calloc(1, sizeof(Plan));
        int k;

        if (!p)
                return -ENOMEM;
        p->profile = strdup(r->name);
        if (!p->profile)
                return -ENOMEM;
        p->isolated = r->isolated;
        p->housekeeping = r->housekeeping;
        /* What resolving the profile noticed comes first. */
        for (char **n = r->notes; n && *n; n++)
                if (strv_extend(&p->notes, *n) < 0)
                        return -ENOMEM;

        PlanCtx ctx = {
                .plan = p,
                .resolved = r,
                .host = r->host,
                .root = root,
                .error = ret_error,
        };
        size_t n_table;
        const Backend * const *table = backend_table(&n_table);
        for (size_t i = 0; i < n_table; i++) {
                size_t first = p->n_knobs;
                k = table[i]->plan(&ctx);
                if (k < 0)
                        return k;
                for (size_t j = first; j < p->n_knobs; j++)
                        p->knobs[j].domain = table[i]->domain;
        }
        /* The list grew by doubling; what follows (the journal's parse, the writes) reuses the
         * room it no longer needs. */
        if (p->n_knobs > 0 && p->n_knobs < p->cap_knobs) {
                Knob *l = realloc(p->knobs, p->n_knobs * sizeof(Knob));
                if (l) {
                        p->knobs = l;
                        p->cap_knobs = p->n_knobs;
                }
        }
        *ret = TAKE_PTR(p);
        return 0;
}
