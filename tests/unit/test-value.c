/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "backend.h"
#include "test-util.h"

START_TEST(test_semantic_equal) {
        ck_assert(value_equal(VALUE_CPU_LIST, "0-3", "0,1,2,3"));
        ck_assert(!value_equal(VALUE_CPU_LIST, "0-3", "0-4"));
        ck_assert(value_equal(VALUE_CPU_MASK, "000000ff", "ff"));
        ck_assert(value_equal(VALUE_CPU_MASK, "0f", "0-3"));
        ck_assert(!value_equal(VALUE_CPU_MASK, "0f", "1f"));
        ck_assert(value_equal(VALUE_SELECT, "always [madvise] never", "madvise"));
        ck_assert(!value_equal(VALUE_SELECT, "always [madvise] never", "never"));
        ck_assert(value_equal(VALUE_AUTO, "always madvise [never]", "never"));
        ck_assert(value_equal(VALUE_AUTO, "Y", "1"));
        ck_assert(value_equal(VALUE_AUTO, "N", "0"));
        ck_assert(value_equal(VALUE_AUTO, " 10\n", "10"));
        ck_assert(value_equal(VALUE_AUTO, "4\t4  1 7", "4 4 1 7"));
        ck_assert(!value_equal(VALUE_AUTO, "10", "100"));
        ck_assert(value_equal(VALUE_AUTO, "-1", "-1"));
        ck_assert(value_equal(VALUE_BOOTARG, "managed_irq,domain,2-7", "domain,managed_irq,2,3,4-7"));
        ck_assert(!value_equal(VALUE_BOOTARG, "managed_irq,domain,2-7", "domain,2-7"));
        ck_assert(value_equal(VALUE_BOOTARG, "", ""));
        ck_assert(value_equal(VALUE_BOOTARG, "on", "on"));
        ck_assert(value_equal(VALUE_SCHEMATA, "0=7f0;1=7f0", "1=07f0;0=7f0"));
        ck_assert(!value_equal(VALUE_SCHEMATA, "0=7f0;1=7f0", "0=7f0"));
        ck_assert(!value_equal(VALUE_SCHEMATA, "0=7f0;1=7f0", "0=7f0;1=7ff"));
        /* absent is only equal to absent */
        ck_assert(value_equal(VALUE_AUTO, NULL, NULL));
        ck_assert(!value_equal(VALUE_AUTO, NULL, ""));
        ck_assert(!value_equal(VALUE_BOOTARG, "", NULL));
}
END_TEST

START_TEST(test_display) {
        _cleanup_free_ char *a = value_display(VALUE_CPU_MASK, "0000000f");
        ck_assert_str_eq(a, "0000000f (0-3)");
        _cleanup_free_ char *b = value_display(VALUE_SELECT, "always [madvise] never");
        ck_assert_str_eq(b, "madvise");
        _cleanup_free_ char *c = value_display(VALUE_AUTO, NULL);
        ck_assert_str_eq(c, "(absent)");
        _cleanup_free_ char *d = value_display(VALUE_BOOTARG, "");
        ck_assert_str_eq(d, "(set)");
}
END_TEST

int main(void) {
        Suite *s = suite_create("value");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_semantic_equal);
        tcase_add_test(tc, test_display);
        suite_add_tcase(s, tc);
        return test_run(s);
}
