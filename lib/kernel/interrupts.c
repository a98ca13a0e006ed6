/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cpu-set.h"
#include "interrupts.h"
#include "macro.h"

int interrupts_header_parse(const char *text, size_t len, int **ret_columns, size_t *ret_n) {
        _cleanup_free_ int *columns = NULL;
        size_t n = 0, cap = 0;
        const char *q = text, *eol = text + len;

        while (q < eol) {
                while (q < eol && (*q == ' ' || *q == '\t'))
                        q++;
                if (q >= eol)
                        break;
                /* By hand: sscanf would strlen() the whole (huge) text for every column. */
                if (eol - q < 4 || strncmp(q, "CPU", 3) != 0 || !isdigit((unsigned char) q[3]))
                        return -EBADMSG;
                unsigned long cpu = 0;
                for (q += 3; q < eol && isdigit((unsigned char) *q) && cpu < CPU_SET_MAX; q++)
                        cpu = cpu * 10 + (unsigned long) (*q - '0');
                if (cpu >= CPU_SET_MAX || (q < eol && *q != ' ' && *q != '\t'))
                        return -EBADMSG;
                if (n == cap) {
                        int *c = realloc(columns, (cap = cap * 2 + 64) * sizeof(int));
                        if (!c)
                                return -ENOMEM;
                        columns = c;
                }
                columns[n++] = (int) cpu;
        }
        if (n == 0)
                return -EBADMSG;
        *ret_columns = TAKE_PTR(columns);
        *ret_n = n;
        return 0;
}
