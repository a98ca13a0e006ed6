/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "schema.h"
#include "strv.h"
#include "test-util.h"

/* How many times key is declared among the fields of an object schema. */
static size_t count_key(const Schema *s, const char *key) {
        size_t n = 0;
        for (const SchemaField *f = s->fields; f->key; f++)
                n += streq(f->key, key);
        return n;
}

/* The field of key in an object schema, or NULL. */
static const SchemaField *field_of(const Schema *s, const char *key) {
        for (const SchemaField *f = s->fields; f->key; f++)
                if (streq(f->key, key))
                        return f;
        return NULL;
}

/* How many backends declare key as their section. */
static size_t count_backends(const char *key) {
        size_t n = 0;
        for (Domain d = 0; d < _DOMAIN_MAX; d++)
                n += streq(backend_for(d)->schema->key, key);
        return n;
}

START_TEST(test_every_backend_has_a_section) {
        const Schema *top = backend_profile_schema();
        ck_assert_int_eq(top->kind, SCHEMA_OBJECT);
        for (Domain d = 0; d < _DOMAIN_MAX; d++) {
                const Backend *b = backend_for(d);
                ck_assert_msg(b, "no backend for domain %s", domain_to_string(d));
                ck_assert_msg(b->schema && b->schema->key && *b->schema->key && b->schema->schema,
                              "backend %s declares no profile section", b->name);
                /* Its section is in the document's schema once, with the backend's own schema, and
                 * no other backend declares the same key. */
                ck_assert_msg(count_key(top, b->schema->key) == 1, "section \"%s\" of backend %s is declared %zu times",
                              b->schema->key, b->name, count_key(top, b->schema->key));
                ck_assert_ptr_eq(schema_child(top, b->schema->key), b->schema->schema);
                ck_assert_int_eq(count_backends(b->schema->key), 1);
                /* Vendor overlays carry every domain's section too. */
                const Schema *intel = schema_child(schema_child(top, "vendor"), "intel");
                ck_assert_ptr_nonnull(intel);
                ck_assert_ptr_eq(schema_child(intel, b->schema->key), b->schema->schema);
                /* … each with its backend's check, which profile loading runs without knowing it. */
                ck_assert_ptr_eq((void *) field_of(top, b->schema->key)->check, (void *) b->check);
                ck_assert_ptr_eq((void *) field_of(intel, b->schema->key)->check, (void *) b->check);
        }
}
END_TEST

START_TEST(test_top_level_order) {
        /* The order messages list the known keys in ("unknown key …; known keys here: …"): the
         * core's head, the backends' sections in Domain order, the core's tail. */
        static const char * const expected[] = {
                "include", "variables",  "vendor", "summary", "description", "cpus",  "boot",
                "irq",     "irqbalance", "cpuset", "cat",     "sysctl",      "sysfs", "kthreads",
                "cpu",     "modules",    "drift",  "check",   NULL,
        };
        const SchemaField *f = backend_profile_schema()->fields;
        size_t i = 0;
        for (; f[i].key && expected[i]; i++)
                ck_assert_str_eq(f[i].key, expected[i]);
        ck_assert_ptr_null(f[i].key);
        ck_assert_ptr_null(expected[i]);
}
END_TEST

static void check_keys(const char *file, const char *where, const json_t *obj, const Schema *s) {
        const char *key;
        json_t *v;
        json_object_foreach ((json_t *) obj, key, v) {
                size_t declared = count_key(s, key);
                ck_assert_msg(declared == 1, "%s: %s key \"%s\" is declared %zu times (by %zu backends)", file, where,
                              key, declared, count_backends(key));
        }
}

START_TEST(test_shipped_profiles_are_declared) {
        const Schema *top = backend_profile_schema();
        DIR *d = opendir(SOURCE_PROFILE_DIR);
        ck_assert_ptr_nonnull(d);
        size_t n = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                size_t len = strlen(de->d_name);
                if (len < 5 || !streq(de->d_name + len - 5, ".json"))
                        continue;
                _cleanup_free_ char *path = NULL;
                ck_assert_int_ge(asprintf(&path, "%s/%s", SOURCE_PROFILE_DIR, de->d_name), 0);
                json_error_t err;
                json_t *doc = json_load_file(path, 0, &err);
                ck_assert_msg(doc, "%s: %s", path, err.text);
                check_keys(path, "top-level", doc, top);
                const char *vkey;
                json_t *frag;
                json_object_foreach (json_object_get(doc, "vendor"), vkey, frag)
                        check_keys(path, "vendor overlay", frag, schema_child(schema_child(top, "vendor"), vkey));
                json_decref(doc);
                n++;
        }
        closedir(d);
        ck_assert_uint_ge(n, 4);
}
END_TEST

int main(void) {
        Suite *s = suite_create("schema");
        TCase *tc = tcase_create("sections");
        tcase_add_test(tc, test_every_backend_has_a_section);
        tcase_add_test(tc, test_top_level_order);
        tcase_add_test(tc, test_shipped_profiles_are_declared);
        suite_add_tcase(s, tc);
        return test_run(s);
}
