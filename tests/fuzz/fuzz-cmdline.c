/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target for the kernel command-line tokenizer: split, parse every argument, and check
 * what must hold: arguments are non-empty and start with no whitespace, each argument's parsed
 * name is what cmdline_arg_is() matches, and cmdline_get() of a name gives the value of its last
 * argument before a "--" ("" for one without a value; none after the "--"). cmdline_get() is
 * checked for up to 32 of the names, spread over the line: it reads the whole line each time. */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cmdline.h"
#include "strv.h"

/* n strings, some of them NULL. */
static void free_n(char **v, size_t n) {
        for (size_t i = 0; v && i < n; i++)
                free(v[i]);
        free(v);
}

static void check(const char *s, char **l, size_t n, char **names, char **values) {
        for (size_t i = 0; i < n; i++) {
                const char *a = l[i];
                if (*a == 0 || isspace((unsigned char) *a))
                        abort();
                if (cmdline_parse_arg(a, strlen(a), &names[i], &values[i]) < 0)
                        return;
                if (!cmdline_arg_is(a, names[i]))
                        abort();
        }
        for (size_t c = 0, step = n / 32 + 1; c < n; c += step) {
                const char *key = names[c], *want = NULL;
                for (size_t i = 0; i < n; i++) {
                        if (cmdline_arg_ends_kernel(l[i], strlen(l[i])))
                                break;
                        if (strcmp(names[i], key) == 0)
                                want = values[i] ? values[i] : "";
                }
                _cleanup_free_ char *got = NULL;
                if (cmdline_get(s, key, &got) < 0)
                        return;
                if (!streq_ptr(got, want))
                        abort();
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *s = strndup((const char *) data, size);
        _cleanup_strv_free_ char **l = NULL;

        if (!s || cmdline_split(s, &l) < 0)
                return 0;
        size_t n = strv_length(l);
        char **names = calloc(n + 1, sizeof(char *)), **values = calloc(n + 1, sizeof(char *));
        if (names && values)
                check(s, l, n, names, values);
        free_n(names, n);
        free_n(values, n);
        return 0;
}
