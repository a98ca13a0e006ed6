/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdlib.h>
#include <string.h>

#include "shell-env.h"
#include "test-util.h"

/* What sh gives X after sourcing text ("(unset)", or "?" + a fragment of why it is unknown). Each
 * known value below is what dash, bash and busybox sh print for it. */
static char *value_of(const char *text, const char *var) {
        _cleanup_(shell_env_done) ShellEnv e = {};
        const char *v = NULL, *why = NULL;
        int k = shell_env_source(&e, text, "f");
        ck_assert(k == 0 || k == -EBADMSG);
        char *out;
        k = shell_env_get(&e, var, &v, &why);
        if (k == -EBADMSG)
                ck_assert(asprintf(&out, "?%s", why) >= 0);
        else
                out = strdup(k > 0 ? v : "(unset)");
        ck_assert_ptr_nonnull(out);
        return out;
}

START_TEST(test_values) {
        static const struct {
                const char *text, *var, *value;
        } cases[] = {
                { "X=a\n", "X", "a" },
                { "X=\"a b\"\n", "X", "a b" },
                { "X='a $(b) `c` \"d\"'\n", "X", "a $(b) `c` \"d\"" },
                { "X='a '\"'\"'z;b'\"'\"\n", "X", "a 'z;b'" },
                { "X='dyndbg=\"file a.c +p\"'\n", "X", "dyndbg=\"file a.c +p\"" },
                { "X=\"\\$(a) \\`b\\` \\\"c\\\" \\\\ \\x\"\n", "X", "$(a) `b` \"c\" \\ \\x" },
                { "X=a\\ b\\$c\n", "X", "a b$c" },
                { "X=\"a\nb\"\n", "X", "a\nb" },
                { "X=\"a\\\nb\"\n", "X", "ab" },
                { "X=a#b # comment\n", "X", "a#b" },
                { "# X=1\nX=2\n", "X", "2" },
                { "X=1; X=2\n", "X", "2" },
                { "X=1\nX=\"$X 2\" Y=${X}3\n", "Y", "1 23" },
                { "X=1\nX=\"$X 2\"\n", "X", "1 2" },
                { "export X=\"q\"\n", "X", "q" },
                { "X=1\nunset X\n", "X", "(unset)" },
                { "Y=1\n", "X", "(unset)" },
                { "X=$\n", "X", "$" },
                { "X=\"a$\"\n", "X", "a$" },
                { "X=a*b?[c]\n", "X", "a*b?[c]" },
                { "  X=1\t\n", "X", "1" },
                { "X=\n", "X", "" },
                /* What cannot be known without running the file. */
                { "X=\"$(id)\"\n", "X", "?f, line 1: a command substitution ($(…))" },
                { "X=`id`\n", "X", "?f, line 1: a command substitution (`…`)" },
                { "X=$((1+1))\n", "X", "?f, line 1: an arithmetic expansion" },
                { "\nX=\"$Z a\"\n", "X", "?f, line 2: $Z, which the file does not set before" },
                { "X=${Z:-a}\n", "X", "?f, line 1: a parameter expansion other than ${NAME}" },
                { "X=\"$1\"\n", "X", "?f, line 1: a special parameter" },
                { "X=~/a\n", "X", "?f, line 1: a tilde expansion" },
                { "Z=`id`\nX=\"$Z\"\n", "X", "?f, line 1: a command substitution (`…`)" },
                { "X=1\nif true; then X=2; fi\n", "X", "?f, line 2: a statement that is not an assignment" },
                { "X=1\n[ -e /a ] && X=2\n", "X", "?f, line 2: a statement that is not an assignment" },
                { "X=1\n. /etc/other\n", "X", "?f, line 2: it sources another file" },
                { "X=1 true\n", "X", "?f, line 1: a statement that is not an assignment" },
                { "X='a\n", "X", "?f, line 1: a quote or substitution left open" },
                /* A variable the file never names stays known around an unknown one. */
                { "Z=`lsb_release -i -s 2> /dev/null || echo Debian`\nX=\"quiet\"\n", "X", "quiet" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *v = value_of(cases[i].text, cases[i].var);
                bool ok = cases[i].value[0] == '?' ? startswith(v, cases[i].value) : streq(v, cases[i].value);
                ck_assert_msg(ok, "case %zu: %s: got '%s', expected '%s'", i, cases[i].text, v, cases[i].value);
        }
}
END_TEST

START_TEST(test_quote) {
        static const char * const in[][2] = {
                { "", "''" },
                { "a b", "'a b'" },
                { "it's", "'it'\\''s'" },
                { "$(x) `y` \"z\"", "'$(x) `y` \"z\"'" },
        };
        for (size_t i = 0; i < ELEMENTSOF(in); i++) {
                _cleanup_free_ char *q = shell_quote(in[i][0]);
                ck_assert_str_eq(q, in[i][1]);
                /* What it quotes reads back as itself. */
                _cleanup_free_ char *text = NULL, *v = NULL;
                ck_assert(asprintf(&text, "X=%s\n", q) >= 0);
                v = value_of(text, "X");
                ck_assert_str_eq(v, in[i][0]);
        }
}
END_TEST

static Suite *suite(void) {
        Suite *s = suite_create("shell-env");
        TCase *tc = tcase_create("source");
        tcase_add_test(tc, test_values);
        tcase_add_test(tc, test_quote);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        return test_run(suite());
}
