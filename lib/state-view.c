/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdlib.h>
#include <string.h>

#include "state-view.h"

/* The view and everything it points to are one allocation: the struct, the arrays, then the
 * strings. */
typedef struct Block {
        char *strings;
        size_t used;
} Block;

static const char *block_add(Block *b, const char *s) {
        if (!s)
                return NULL;
        size_t n = strlen(s) + 1;
        char *p = memcpy(b->strings + b->used, s, n);
        b->used += n;
        return p;
}

static size_t string_size(const char *s) {
        return s ? strlen(s) + 1 : 0;
}

static int by_id_cmp(const void *a, const void *b, void *userdata) {
        const StateViewKnob *applied = userdata;
        return strcmp(applied[*(const uint32_t *) a].id, applied[*(const uint32_t *) b].id);
}

static int unmovable_cmp(const void *a, const void *b) {
        return strcmp(((const StateViewUnmovable *) a)->id, ((const StateViewUnmovable *) b)->id);
}

static const char *string_of(json_t *o, const char *key) {
        return json_string_value(json_object_get(o, key));
}

int state_view_new(json_t *state, StateView **ret) {
        json_t *applied = json_object_get(state, "applied"), *unmovable = json_object_get(state, "unmovable");
        size_t n = 0, nu = json_object_size(unmovable), strings = 0, i;
        json_t *e;
        const char *id;
        Knob k;

        const char *top[] = { "profile", "profile_path", "hash", "applied_at" };
        for (size_t t = 0; t < ELEMENTSOF(top); t++)
                strings += string_size(string_of(state, top[t]));
        json_t *source = json_object_get(state, "source");
        _cleanup_free_ char *source_text = json_is_object(source) ? json_dumps(source, JSON_COMPACT) : NULL;
        if (json_is_object(source) && !source_text)
                return -ENOMEM;
        strings += string_size(source_text);
        json_array_foreach(applied, i, e) {
                if (state_entry_knob(e, NULL, &k) < 0)
                        continue;
                n++;
                strings += string_size(k.id) + string_size(k.path) + string_size(string_of(e, "desired"));
        }
        json_object_foreach(unmovable, id, e)
                strings += string_size(id) + string_size(json_string_value(e));
        if (n > UINT32_MAX)
                return -E2BIG;

        size_t size = sizeof(StateView) + n * sizeof(StateViewKnob) + nu * sizeof(StateViewUnmovable) +
                      n * sizeof(uint32_t) + strings;
        StateView *v = calloc(1, size);
        if (!v)
                return -ENOMEM;
        v->applied = (StateViewKnob *) (v + 1);
        v->unmovable = (StateViewUnmovable *) (v->applied + n);
        v->by_id = (uint32_t *) (v->unmovable + nu);
        Block b = { .strings = (char *) (v->by_id + n) };

        v->profile = block_add(&b, string_of(state, "profile"));
        v->profile_path = block_add(&b, string_of(state, "profile_path"));
        v->hash = block_add(&b, string_of(state, "hash"));
        v->applied_at = block_add(&b, string_of(state, "applied_at"));
        v->source = block_add(&b, source_text);
        v->transaction_open = json_is_object(json_object_get(state, "transaction"));
        json_array_foreach(applied, i, e) {
                if (state_entry_knob(e, NULL, &k) < 0)
                        continue;
                v->by_id[v->n_applied] = (uint32_t) v->n_applied;
                v->applied[v->n_applied++] = (StateViewKnob) {
                        .id = block_add(&b, k.id),
                        .path = block_add(&b, k.path),
                        .desired = block_add(&b, string_of(e, "desired")),
                        .domain = k.domain,
                        .kind = k.kind,
                        .reboot = k.reboot,
                };
        }
        json_object_foreach(unmovable, id, e)
                v->unmovable[v->n_unmovable++] = (StateViewUnmovable) {
                        .id = block_add(&b, id),
                        .reason = block_add(&b, json_string_value(e)),
                };
        qsort_r(v->by_id, v->n_applied, sizeof(uint32_t), by_id_cmp, v->applied);
        qsort(v->unmovable, v->n_unmovable, sizeof(StateViewUnmovable), unmovable_cmp);
        *ret = v;
        return 0;
}

int state_view_load(Root *root, uint64_t unless_digest, StateView **ret) {
        _cleanup_free_ char *text = NULL;
        size_t size = 0;
        int k = state_read(root, &text, &size);
        if (k < 0)
                return k;
        uint64_t d = state_digest(strempty(text), size);
        if (d == unless_digest) {
                *ret = NULL;
                return 0;
        }
        json_t *state = NULL;
        k = state_parse(text, &state);
        if (k < 0)
                return k;
        free(TAKE_PTR(text));
        StateView *v = NULL;
        k = state_view_new(state, &v);
        json_decref(state);
        if (k < 0)
                return k;
        v->digest = d;
        *ret = v;
        return 1;
}

StateView *state_view_free(StateView *v) {
        free(v);
        return NULL;
}

const StateViewKnob *state_view_find(const StateView *v, const char *id) {
        if (!v || !id)
                return NULL;
        size_t lo = 0, hi = v->n_applied;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                const StateViewKnob *k = &v->applied[v->by_id[mid]];
                int c = strcmp(id, k->id);
                if (c == 0)
                        return k;
                if (c < 0)
                        hi = mid;
                else
                        lo = mid + 1;
        }
        return NULL;
}

const char *state_view_unmovable(const StateView *v, const char *id) {
        if (!v || !id)
                return NULL;
        StateViewUnmovable key = { .id = id };
        const StateViewUnmovable *u = bsearch(&key, v->unmovable, v->n_unmovable, sizeof(StateViewUnmovable),
                                              unmovable_cmp);
        return u ? strempty(u->reason) : NULL;
}

Knob state_view_knob(const StateViewKnob *k) {
        return (Knob) {
                .id = (char *) k->id,
                .domain = k->domain,
                .kind = k->kind,
                .path = (char *) k->path,
                .reboot = k->reboot,
        };
}
