/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A loaded profile resolved against a host: the vendor overlay applied, the CPU classes computed,
 * variables expanded within their bounds, every CPU expression checked and made canonical. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile-internal.h"
#include "schema.h"
#include "strv.h"

#define EXPAND_VALUE_MAX (64 * 1024)       /* bytes one variable or string may expand to */
#define EXPAND_WORK_MAX (16 * 1024 * 1024) /* bytes expanded in all, a reference counting 64 */

Resolved *resolved_free(Resolved *r) {
        if (!r)
                return NULL;
        free(r->name);
        json_decref(r->doc);
        strv_free(r->notes);
        free(r);
        return NULL;
}

typedef struct Expander {
        json_t *vars;     /* name → string (user variables, unexpanded) */
        json_t *builtins; /* name → string */
        const char *stack[32];
        size_t depth;
        size_t work; /* bytes produced so far at every level, plus 64 a reference */
} Expander;

/* Variables may refer to variables, so a few bytes can stand for 2^32 copies of a string: every
 * expansion is bounded in size, and all of them together in work, so that resolving ends. */
static int expand_check(Expander *x, const StrBuf *b, const char *name, char **ret_message) {
        const char *var = name ? name : x->depth > 0 ? x->stack[x->depth - 1] : NULL;
        if (b->len > EXPAND_VALUE_MAX)
                return asprintf(ret_message, "%s%s%s expands to more than 64 KiB; a value may be at most 64 KiB",
                                var ? "variable \"${" : "the value", strempty(var), var ? "}\"" : "") < 0
                        ? -ENOMEM
                        : -EINVAL;
        if (x->work > EXPAND_WORK_MAX)
                return asprintf(ret_message,
                                "expanding %s%s%s makes more than 16 MiB of text in all; variables that refer to "
                                "each other several times multiply: refer to each at most once or use literal values",
                                var ? "variable \"${" : "the variables", strempty(var), var ? "}\"" : "") < 0
                        ? -ENOMEM
                        : -EINVAL;
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
                        return asprintf(ret_message,
                                        "unterminated \"${\" in \"%s\"; write ${name}, or $$ for a literal $", in) < 0
                                ? -ENOMEM
                                : -EINVAL;
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
                                        return asprintf(ret_message, "variable \"%s\" refers to itself", name) < 0
                                                ? -ENOMEM
                                                : -EINVAL;
                                }
                        if (x->depth >= ELEMENTSOF(x->stack)) {
                                strbuf_done(&b);
                                return asprintf(ret_message, "variables nest too deeply at \"%s\"", name) < 0 ? -ENOMEM
                                                                                                              : -EINVAL;
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
                        json_object_foreach (x->builtins, key, v)
                                if (n < ELEMENTSOF(known))
                                        known[n++] = key;
                        json_object_foreach (x->vars, key, v)
                                if (n < ELEMENTSOF(known))
                                        known[n++] = key;
                        const char *hint = schema_closest(name, known, n);
                        strbuf_done(&b);
                        if (hint)
                                return asprintf(ret_message, "undefined variable \"${%s}\"; did you mean \"${%s}\"?",
                                                name, hint) < 0
                                        ? -ENOMEM
                                        : -EINVAL;
                        return asprintf(ret_message, "undefined variable \"${%s}\"; define it under \"variables\"",
                                        name) < 0
                                ? -ENOMEM
                                : -EINVAL;
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
        char **notes; /* for Resolved.notes */
        Error *e;
} ResolveCtx;

static int fail_at(ResolveCtx *c, const char *ptr, int code, char *message /* taken */) {
        const char *file = profile_origin_of(c->profile->origins, ptr, c->profile->path);
        error_set(c->e, code, file, ptr, "%s", strempty(message));
        free(message);
        return code;
}

/* Expands variables in every string, and canonicalizes every CPU expression, walking the doc
 * with the schema so that we know which strings are CPU expressions. */
static int resolve_walk(ResolveCtx *c, const char *ptr, json_t *parent, const char *key, size_t index, json_t *v,
                        const Schema *s) {
        int k;
        char *msg = NULL;

        if (json_is_string(v)) {
                _cleanup_free_ char *exp = NULL;
                k = expand(&c->x, json_string_value(v), &exp, &msg);
                if (k < 0)
                        return k == -ENOMEM ? k : fail_at(c, ptr, k, msg);
                json_t *nv;
                if (s->kind == SCHEMA_CPUS) {
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
                json_object_foreach_safe (v, tmp, ck, cv) {
                        const Schema *cs = schema_child(s, ck);
                        if (!cs)
                                cs = &schema_string;
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
                json_array_foreach (v, i, item) {
                        _cleanup_free_ char *p = json_pointer_append_index(ptr, i);
                        if (!p)
                                return -ENOMEM;
                        k = resolve_walk(c, p, v, NULL, i, item, s->items ? s->items : &schema_string);
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

/* A core whose SMT threads the classes split: its housekeeping threads' interrupts, kernel threads
 * and tasks run on the execution units and caches of the isolated one. Allowed (a core may be
 * short of isolated CPUs), but not silently: one note per core, for plan. */
static int note_split_cores(const Host *h, const CpuSet *iso, const CpuSet *hk, char ***notes) {
        CpuSet seen = {};
        CPU_SET_FOREACH (cpu, iso) {
                if ((unsigned) cpu >= h->n_cpu_ids || h->cpus[cpu].core < 0 ||
                    cpu_set_has(&seen, (unsigned) h->cpus[cpu].core))
                        continue;
                int core = h->cpus[cpu].core;
                CpuSet in_iso = {}, in_hk = {};
                cpu_set_add(&seen, (unsigned) core);
                for (unsigned t = 0; t < h->n_cpu_ids; t++)
                        if (h->cpus[t].core == core && cpu_set_has(&h->online, t))
                                cpu_set_add(cpu_set_has(iso, t) ? &in_iso : &in_hk, t);
                cpu_set_and(&in_hk, hk);
                if (cpu_set_is_empty(&in_hk))
                        continue;
                _cleanup_free_ char *a = cpu_set_format_list(&in_iso), *b = cpu_set_format_list(&in_hk);
                char *note;
                if (!a || !b ||
                    asprintf(&note,
                             "cpus: CPU %s (isolated) and CPU %s (housekeeping) are SMT siblings, threads of one "
                             "core: what runs on the housekeeping thread (interrupts, kernel threads, tasks) shares "
                             "the core's execution units and caches with the isolated one; put the whole core in one "
                             "class",
                             a, b) < 0)
                        return -ENOMEM;
                if (strv_push(notes, note) < 0)
                        return -ENOMEM;
        }
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
                               asprintf(&msg,
                                        "nothing to isolate: this host has a single online CPU (%s); "
                                        "realtime partitioning needs at least one housekeeping and one isolated CPU",
                                        strempty(on)) < 0
                                       ? NULL
                                       : msg);
        }

        /* The split the host gets when the profile names neither class: what "isolated" and
         * "housekeeping" stand for within the two expressions that define the classes ("node:1,
         * !housekeeping" is node 1 without its first core). */
        unsigned per_node_n = per_node ? (unsigned) json_integer_value(per_node) : 1;
        CpuSet def_iso = {}, def_hk = {};
        host_default_split(h, per_node_n, &def_hk, &def_iso);

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
                k = cpu_expr_parse(exp, h, &def_iso, &def_hk, sets[i], &msg);
                if (k < 0)
                        return k == -ENOMEM ? k : fail_at(c, p, k, msg);
        }

        if (iso_v && hk_v) {
                if (cpu_set_intersects(&iso, &hk)) {
                        CpuSet both = iso;
                        cpu_set_and(&both, &hk);
                        _cleanup_free_ char *l = cpu_set_format_list(&both);
                        return fail_at(
                                c, "/cpus/isolated", -EINVAL,
                                asprintf(&msg, "CPUs %s are both isolated and housekeeping; a CPU belongs to one class",
                                         strempty(l)) < 0
                                        ? NULL
                                        : msg);
                }
        } else if (iso_v) {
                hk = h->online;
                cpu_set_andnot(&hk, &iso);
        } else if (hk_v) {
                iso = h->online;
                cpu_set_andnot(&iso, &hk);
        } else {
                iso = def_iso;
                hk = def_hk;
        }

        if (cpu_set_is_empty(&hk)) {
                _cleanup_free_ char *on = cpu_set_format_list(&h->online);
                return fail_at(
                        c, iso_v ? "/cpus/isolated" : "/cpus", -EINVAL,
                        asprintf(&msg,
                                 "no housekeeping CPU would be left (online: %s); keep at least one CPU for the system",
                                 strempty(on)) < 0
                                ? NULL
                                : msg);
        }
        if (cpu_set_is_empty(&iso)) {
                _cleanup_free_ char *on = cpu_set_format_list(&h->online);
                return fail_at(c, hk_v ? "/cpus/housekeeping" : "/cpus", -EINVAL,
                               asprintf(&msg,
                                        "nothing to isolate: every online CPU (%s) is housekeeping; "
                                        "lower housekeeping_cores_per_node or name the isolated CPUs",
                                        strempty(on)) < 0
                                       ? NULL
                                       : msg);
        }
        c->iso = iso;
        c->hk = hk;
        k = note_split_cores(h, &iso, &hk, &c->notes);
        if (k < 0)
                return k;

        _cleanup_free_ char *il = cpu_set_format_list(&iso), *hl = cpu_set_format_list(&hk);
        json_t *out = json_pack("{s:s, s:s}", "isolated", il, "housekeeping", hl);
        json_t *siblings = json_object_get(cpus, "vcpu_siblings"); /* for export libvirt */
        if (!out || (siblings && json_object_set(out, "vcpu_siblings", siblings) < 0) ||
            json_object_set_new(doc, "cpus", out) < 0)
                return -ENOMEM;
        return 0;
}

int profile_resolve(Profile *p, const Host *host, Resolved **ret, Error *ret_error) {
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
                const char *file = profile_origin_of(p->origins, base, p->path);
                k = profile_merge(r->doc, frag, "", p->origins, file);
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
        json_object_foreach_safe (r->doc, tmp, key, v) {
                if (streq(key, "cpus"))
                        continue;
                const Schema *s = schema_child(p->schema, key);
                _cleanup_free_ char *ptr = json_pointer_append("", key);
                if (!ptr) {
                        k = -ENOMEM;
                        break;
                }
                k = resolve_walk(&c, ptr, r->doc, key, 0, v, s ? s : &schema_string);
                if (k < 0)
                        break;
        }
        json_decref(vars);
        if (k < 0)
                goto finish;

        r->isolated = c.iso;
        r->housekeeping = c.hk;
        r->notes = TAKE_PTR(c.notes);
        *ret = TAKE_PTR(r);
        k = 0;
finish:
        json_decref(c.x.builtins);
        strv_free(c.notes);
        return k;
}
