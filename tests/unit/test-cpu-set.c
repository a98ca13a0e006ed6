/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdlib.h>

#include "cpu-set.h"
#include "test-util.h"

static char *roundtrip_list(const char *in) {
        CpuSet s;
        CpuSetError e;
        int r = cpu_set_parse_list(in, &s, &e);
        ck_assert_msg(r == 0, "parse '%s' failed at %zu: %s", in, e.pos, e.reason);
        return cpu_set_format_list(&s);
}

START_TEST(test_list_canonical) {
        static const struct {
                const char *in, *out;
        } cases[] = {
                { "", "" },
                { "0", "0" },
                { "0-3", "0-3" },
                { "0,1,2,3", "0-3" },
                { "3,2,1,0", "0-3" },
                { "0-3,8,10-11", "0-3,8,10-11" },
                { " 5 \n", "5" },
                { "0-15:2/4", "0-1,4-5,8-9,12-13" },
                { "1-1", "1" },
                { "63,64", "63-64" },
                { "0-8191", "0-8191" },
                { "8191", "8191" },
                { "1,1,1", "1" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *out = roundtrip_list(cases[i].in);
                ck_assert_str_eq(out, cases[i].out);
        }
}
END_TEST

START_TEST(test_list_errors) {
        static const struct {
                const char *in;
                size_t pos;
                int r;
        } cases[] = {
                { "a", 0, -EINVAL },       { "0-", 2, -EINVAL },    { "0,", 2, -EINVAL },   { "3-1", 2, -EINVAL },
                { "0-3x", 3, -EINVAL },    { "1,,2", 2, -EINVAL },  { "8192", 0, -ERANGE }, { "0-99999", 2, -ERANGE },
                { "0-7:3/2", 6, -EINVAL }, { "0-7:1", 5, -EINVAL }, { "1 2", 2, -EINVAL },  { "-1", 0, -EINVAL },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                CpuSet s;
                CpuSetError e = {};
                int r = cpu_set_parse_list(cases[i].in, &s, &e);
                ck_assert_msg(r == cases[i].r, "'%s': r=%d", cases[i].in, r);
                ck_assert_msg(e.pos == cases[i].pos, "'%s': error at %zu (%s), expected %zu", cases[i].in, e.pos,
                              e.reason, cases[i].pos);
                ck_assert_ptr_nonnull(e.reason);
        }
}
END_TEST

START_TEST(test_mask) {
        CpuSet s;
        CpuSetError e;
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL, *d = NULL;

        ck_assert_int_eq(cpu_set_parse_mask("ffffffff,00000000", &s, &e), 0);
        a = cpu_set_format_list(&s);
        ck_assert_str_eq(a, "32-63");
        b = cpu_set_format_mask(&s, 64);
        ck_assert_str_eq(b, "ffffffff,00000000");

        ck_assert_int_eq(cpu_set_parse_mask("0x5", &s, &e), 0);
        c = cpu_set_format_list(&s);
        ck_assert_str_eq(c, "0,2");
        /* The kernel prints the top word with only the digits the CPU count needs. */
        d = cpu_set_format_mask(&s, 2);
        ck_assert_str_eq(d, "5");
        free(d);
        d = cpu_set_format_mask(&s, 40);
        ck_assert_str_eq(d, "00,00000005");

        /* A short word between commas still stands for 32 CPUs. */
        ck_assert_int_eq(cpu_set_parse_mask("1,0", &s, &e), 0);
        ck_assert(cpu_set_has(&s, 32));
        ck_assert_int_eq(cpu_set_count(&s), 1);

        ck_assert_int_eq(cpu_set_parse_mask("fg", &s, &e), -EINVAL);
        ck_assert_int_eq(e.pos, 1);
        ck_assert_int_eq(cpu_set_parse_mask("", &s, &e), -EINVAL);
        ck_assert_int_eq(cpu_set_parse_mask("1,,0", &s, &e), -EINVAL);
        ck_assert_int_eq(cpu_set_parse_mask("123456789", &s, &e), -EINVAL);
        ck_assert_int_eq(e.pos, 0);
}
END_TEST

START_TEST(test_mask_8192) {
        CpuSet s = {}, t;
        cpu_set_add(&s, 0);
        cpu_set_add(&s, 8191);
        _cleanup_free_ char *m = cpu_set_format_mask(&s, 8192);
        ck_assert_uint_eq(strlen(m), 256 * 9 - 1);
        ck_assert_int_eq(cpu_set_parse_mask(m, &t, NULL), 0);
        ck_assert(cpu_set_equal(&s, &t));
        _cleanup_free_ char *l = cpu_set_format_list(&t);
        ck_assert_str_eq(l, "0,8191");

        /* One bit more than 8192 CPUs is refused, not truncated. */
        _cleanup_free_ char *big = NULL;
        ck_assert(asprintf(&big, "1,%s", m) >= 0);
        ck_assert_int_eq(cpu_set_parse_mask(big, &t, NULL), -ERANGE);
}
END_TEST

START_TEST(test_algebra) {
        CpuSet a, b, c;
        ck_assert_int_eq(cpu_set_parse_list("0-9", &a, NULL), 0);
        ck_assert_int_eq(cpu_set_parse_list("5-14", &b, NULL), 0);

        c = a;
        cpu_set_and(&c, &b);
        _cleanup_free_ char *x = cpu_set_format_list(&c);
        ck_assert_str_eq(x, "5-9");

        c = a;
        cpu_set_or(&c, &b);
        _cleanup_free_ char *y = cpu_set_format_list(&c);
        ck_assert_str_eq(y, "0-14");

        c = a;
        cpu_set_andnot(&c, &b);
        _cleanup_free_ char *z = cpu_set_format_list(&c);
        ck_assert_str_eq(z, "0-4");

        ck_assert(cpu_set_intersects(&a, &b));
        ck_assert(!cpu_set_is_subset(&a, &b));
        ck_assert(cpu_set_is_subset(&c, &a));
        ck_assert_uint_eq(cpu_set_count(&a), 10);
        ck_assert_int_eq(cpu_set_last(&b), 14);
        ck_assert_int_eq(cpu_set_next(&b, 0), 5);
        ck_assert_int_eq(cpu_set_next(&b, 15), -1);

        CpuSet e = {};
        ck_assert(cpu_set_is_empty(&e));
        ck_assert_int_eq(cpu_set_last(&e), -1);
        cpu_set_add_range(&e, 60, 200);
        ck_assert_uint_eq(cpu_set_count(&e), 141);
        unsigned n = 0;
        CPU_SET_FOREACH (cpu, &e)
                n++;
        ck_assert_uint_eq(n, 141);
}
END_TEST

int main(void) {
        Suite *s = suite_create("cpu-set");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_list_canonical);
        tcase_add_test(tc, test_list_errors);
        tcase_add_test(tc, test_mask);
        tcase_add_test(tc, test_mask_8192);
        tcase_add_test(tc, test_algebra);
        suite_add_tcase(s, tc);
        return test_run(s);
}
