/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The library's one error detail, as sd_bus_error is systemd's: what went wrong, where, and the
 * fix, for the program to say once. Every fallible function of lib/ returns a negative errno and,
 * where the caller must be able to tell the user more, fills an Error:
 *
 *   "lab.json: /irq/rules/0/cpus: CPU 64 does not exist (online: 0-63)"
 *   "tuned.conf:12: [sysctl] …"
 *   "/var/lib/rtpart/state.json: originals[\"irq/41/affinity\"]: unknown domain \"irqq\""
 *
 * Every field may be NULL (0 for line). */

#include "macro.h"

typedef struct Error {
        int code;      /* negative errno: -EINVAL invalid input, -ENOENT not found, other: I/O */
        char *file;    /* the file at fault, as the user names it */
        unsigned line; /* its line (1-based), 0: none */
        char *pointer; /* where in the file: a JSON pointer, a journal entry, a tuned option */
        char *message; /* what is wrong, and the fix */
        char *detail;  /* the words of whoever refused, as they gave them (the kernel's reason for
                        * a write, from resctrl's last_cmd_status): said beside the message */
} Error;

void error_done(Error *e);
/* Replaces *e (may be NULL) with the error and returns code. */
int error_set(Error *e, int code, const char *file, const char *pointer, const char *fmt, ...) _printf_(5, 6);
/* error_set() at a line of file. */
int error_set_line(Error *e, int code, const char *file, unsigned line, const char *fmt, ...) _printf_(5, 6);
/* Moves src into *dst (which is cleared first); src is left empty. */
void error_move(Error *dst, Error *src);
/* The one-line message for the user: "FILE:LINE: POINTER: MESSAGE", the parts it has (caller
 * frees; NULL on OOM). fallback is the message when e has none. */
char *error_format(const Error *e, const char *fallback);
