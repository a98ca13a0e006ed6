/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target for the kernel command-line tokenizer: split, parse every argument, look every
 * name up, and check what must hold: arguments are non-empty and start with no whitespace, and
 * each argument's parsed name is what cmdline_arg_is() matches. */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cmdline.h"
#include "strv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *s = strndup((const char *) data, size);
        _cleanup_strv_free_ char **l = NULL;

        if (!s || cmdline_split(s, &l) < 0)
                return 0;
        for (char **a = l; *a; a++) {
                _cleanup_free_ char *name = NULL, *value = NULL, *got = NULL;
                if (**a == 0 || isspace((unsigned char) **a))
                        abort();
                if (cmdline_parse_arg(*a, strlen(*a), &name, &value) < 0)
                        return 0;
                if (!cmdline_arg_is(*a, name))
                        abort();
                if (cmdline_get(s, name, &got) < 0)
                        return 0;
        }
        return 0;
}
