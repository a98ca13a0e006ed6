/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "state.h"

static json_t *state_new(void) {
        return json_pack("{s:i, s:n, s:n, s:n, s:{}, s:[], s:{}, s:n, s:n}",
                         "version", 1,
                         "profile",
                         "hash",
                         "applied_at",
                         "originals",
                         "applied",
                         "unmovable",
                         "transaction",
                         "last_error");
}

Root *state_root(Root *root, const char **ret_dir) {
        *ret_dir = root->state ? "." : STATE_DIR;
        return root->state ? root->state : root;
}

int state_read(Root *root, char **ret_text, size_t *ret_size) {
        const char *dir;
        Root *sr = state_root(root, &dir);
        _cleanup_free_ char *file = NULL;
        if (asprintf(&file, "%s/state.json", dir) < 0)
                return -ENOMEM;
        int k = root_read_file(sr, file, ret_text, ret_size);
        if (k == -ENOENT) {
                *ret_text = NULL;
                if (ret_size)
                        *ret_size = 0;
                return 0;
        }
        return k;
}

int state_parse(const char *text, json_t **ret) {
        json_error_t err;
        if (!text) {
                *ret = state_new();
                return *ret ? 0 : -ENOMEM;
        }
        json_t *doc = json_loads(text, 0, &err);
        if (!doc || !json_is_object(doc) || json_integer_value(json_object_get(doc, "version")) != 1 ||
            !json_is_object(json_object_get(doc, "originals"))) {
                json_decref(doc);
                return -EBADMSG;
        }
        /* Fill in what an older writer may have left out. */
        const char *keys[] = { "applied", "unmovable" };
        for (size_t i = 0; i < ELEMENTSOF(keys); i++)
                if (!json_object_get(doc, keys[i]))
                        json_object_set_new(doc, keys[i], i == 0 ? json_array() : json_object());
        *ret = doc;
        return 0;
}

int state_load(Root *root, json_t **ret) {
        _cleanup_free_ char *text = NULL;
        int k = state_read(root, &text, NULL);
        if (k < 0)
                return k;
        return state_parse(text, ret);
}

int state_save(Root *root, json_t *state) {
        _cleanup_free_ char *text = json_dumps(state, JSON_INDENT(1) | JSON_PRESERVE_ORDER), *out = NULL;
        if (!text || asprintf(&out, "%s\n", text) < 0)
                return -ENOMEM;
        const char *dir;
        Root *sr = state_root(root, &dir);
        _cleanup_free_ char *file = NULL;
        if (asprintf(&file, "%s/state.json", dir) < 0)
                return -ENOMEM;
        int k = root_mkdir_p(sr, dir, 0755);
        if (k < 0)
                return k;
        return root_write_file_atomic(sr, file, out, strlen(out), 0644);
}

int state_entry_knob(json_t *entry, const char *id, Knob *ret) {
        const char *domain = json_string_value(json_object_get(entry, "domain"));
        const char *kind = json_string_value(json_object_get(entry, "kind"));
        Domain d = domain ? domain_from_string(domain) : _DOMAIN_INVALID;
        ValueKind vk = kind ? value_kind_from_string(kind) : _VALUE_KIND_INVALID;
        if (!id)
                id = json_string_value(json_object_get(entry, "knob"));
        if (!id || d < 0 || vk < 0)
                return -EBADMSG;
        *ret = (Knob) {
                .id = (char *) id,
                .domain = d,
                .kind = vk,
                .path = (char *) json_string_value(json_object_get(entry, "path")),
                .reboot = json_is_true(json_object_get(entry, "reboot")),
        };
        return 0;
}

json_t *state_entry_new(const Knob *k, const char *value_key, const char *value) {
        json_t *e = json_pack("{s:s, s:s, s:s?, s:b}",
                              "domain", domain_to_string(k->domain),
                              "kind", value_kind_to_string(k->kind),
                              "path", k->path,
                              "reboot", k->reboot);
        if (e && value_key)
                json_object_set_new(e, value_key, value ? json_string(value) : json_null());
        return e;
}

char *state_now_iso8601(void) {
        time_t t = time(NULL);
        struct tm tm;
        char buf[32];
        if (!gmtime_r(&t, &tm) || strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
                return NULL;
        return strdup(buf);
}

uint64_t state_digest(const void *p, size_t n) {
        uint64_t h = UINT64_C(0xcbf29ce484222325); /* FNV-1a */
        for (const unsigned char *c = p; n > 0; c++, n--) {
                h ^= *c;
                h *= UINT64_C(0x100000001b3);
        }
        return h;
}

char *state_hash(const json_t *doc) {
        _cleanup_free_ char *text = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
        if (!text)
                return NULL;
        uint64_t h = state_digest(text, strlen(text));
        char *s;
        return asprintf(&s, "fnv1a64:%016llx", (unsigned long long) h) < 0 ? NULL : s;
}
