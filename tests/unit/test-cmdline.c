/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdlib.h>
#include <string.h>

#include "cmdline.h"
#include "strv.h"
#include "test-util.h"

#define strnull(s) ((s) ?: "(null)")

/* Arguments as written, separated by "|". */
static char *split_joined(const char *s) {
        _cleanup_strv_free_ char **l = NULL;
        StrBuf b = {};
        ck_assert_int_eq(cmdline_split(s, &l), 0);
        ck_assert_ptr_nonnull(l);
        for (char **i = l; *i; i++)
                strbuf_appendf(&b, "%s%s", i == l ? "" : "|", *i);
        char *out = strbuf_steal(&b);
        return out ? out : strdup("");
}

START_TEST(test_split) {
        static const struct {
                const char *in, *out;
        } cases[] = {
                { NULL, "" },
                { "", "" },
                { "   \t\n", "" },
                { "quiet", "quiet" },
                { "ro quiet", "ro|quiet" },
                { "  ro   quiet  ", "ro|quiet" }, /* leading, repeated, trailing spaces */
                { "ro\tquiet\n", "ro|quiet" },
                { "root=UUID=1 ro", "root=UUID=1|ro" },
                { "foo=\"a b\" bar", "foo=\"a b\"|bar" }, /* quotes keep spaces, and stay */
                { "\"foo=a b\" bar", "\"foo=a b\"|bar" },
                { "a=\"x y\"z w", "a=\"x y\"z|w" },
                { "foo=\"unterminated x y", "foo=\"unterminated x y" },
                { "isolcpus=1 isolcpus=2", "isolcpus=1|isolcpus=2" }, /* repeated keys: both */
                { "x= -- init=1", "x=|--|init=1" },                   /* "--" is an argument too */
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *got = split_joined(cases[i].in);
                ck_assert_msg(streq(got, cases[i].out), "split('%s') = '%s', want '%s'", strnull(cases[i].in), got,
                              cases[i].out);
        }
}
END_TEST

START_TEST(test_next_bounded) {
        /* Only [p, e) is read: an argument ends at e. */
        const char *s = "ab cd ef", *start;
        const char *end = cmdline_next(s + 2, s + 5, &start);
        ck_assert_ptr_eq(start, s + 3);
        ck_assert_ptr_eq(end, s + 5);
        end = cmdline_next(end, s + 5, &start);
        ck_assert_ptr_eq(start, end);
        ck_assert_ptr_eq(end, s + 5);
}
END_TEST

START_TEST(test_parse_arg) {
        static const struct {
                const char *arg, *name, *value;
        } cases[] = {
                { "quiet", "quiet", NULL },
                { "isolcpus=1-3", "isolcpus", "1-3" },
                { "root=UUID=1", "root", "UUID=1" }, /* split at the first '=' */
                { "empty=", "empty", "" },
                { "foo=\"a b\"", "foo", "a b" }, /* quotes around the value go */
                { "\"foo=a b\"", "foo", "a b" }, /* … and around the argument */
                { "\"quiet\"", "quiet", NULL },
                { "foo=\"\"", "foo", "" },
                { "foo=\"", "foo", "" },
                { "a=\"x y\"z", "a", "x y\"z" }, /* as next_arg(): only the opening one goes */
                { "=x", "=x", NULL },            /* no name: no separator either */
                { "==x", "=", "x" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *name = NULL, *value = NULL;
                ck_assert_int_eq(cmdline_parse_arg(cases[i].arg, strlen(cases[i].arg), &name, &value), 0);
                ck_assert_msg(streq(name, cases[i].name), "name of '%s' is '%s', want '%s'", cases[i].arg, name,
                              cases[i].name);
                ck_assert_msg(streq_ptr(value, cases[i].value), "value of '%s' is '%s', want '%s'", cases[i].arg,
                              strnull(value), strnull(cases[i].value));
                ck_assert(cmdline_arg_is(cases[i].arg, cases[i].name));
        }
        ck_assert(!cmdline_arg_is("isolcpus=1", "isol"));
        ck_assert(!cmdline_arg_is("isol", "isolcpus"));
        ck_assert(cmdline_arg_is("isolcpus", "isolcpus"));
}
END_TEST

START_TEST(test_get) {
        static const char *cl = "BOOT_IMAGE=/vmlinuz root=UUID=1 ro quiet isolcpus=1-3 foo=\"a b\" "
                                "isolcpus=2-3 empty= \"q=x y\"  -- init=x isolcpus=9";
        static const struct {
                const char *key, *value;
        } cases[] = {
                { "isolcpus", "2-3" }, /* the last one wins; not the one after "--" */
                { "quiet", "" },       /* a flag */
                { "empty", "" },       { "root", "UUID=1" }, { "foo", "a b" }, { "q", "x y" },
                { "nohz_full", NULL }, { "init", NULL }, /* after "--": init's, not the kernel's */
                { "iso", NULL },                         /* a prefix is not a name */
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *v = NULL;
                ck_assert_int_eq(cmdline_get(cl, cases[i].key, &v), 0);
                ck_assert_msg(streq_ptr(v, cases[i].value), "%s is '%s', want '%s'", cases[i].key, strnull(v),
                              strnull(cases[i].value));
        }
        _cleanup_free_ char *v = NULL, *w = NULL;
        ck_assert_int_eq(cmdline_get("isolcpus=1   ", "isolcpus", &v), 0); /* trailing spaces */
        ck_assert_str_eq(v, "1");
        ck_assert_int_eq(cmdline_get(NULL, "isolcpus", &w), 0);
        ck_assert_ptr_null(w);
}
END_TEST

int main(void) {
        Suite *s = suite_create("cmdline");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_split);
        tcase_add_test(tc, test_next_bounded);
        tcase_add_test(tc, test_parse_arg);
        tcase_add_test(tc, test_get);
        suite_add_tcase(s, tc);
        return test_run(s);
}
