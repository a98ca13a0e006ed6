/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What a POSIX shell sets by sourcing a file of variable assignments (etc/default/grub and its
 * grub.d drop-ins, which grub-mkconfig sources as root), worked out without running anything.
 *
 * Statements are read as sh reads them: words separated by blanks, ended by a newline or ';', a
 * '#' at the start of a word beginning a comment. A statement of assignments (NAME=WORD …, also
 * after "export" or "readonly") sets each NAME to WORD's value: quotes removed ('…' as it is,
 * "…" with \$ \` \" \\ and \newline), backslash escapes, and $NAME or ${NAME} of a variable set
 * before. A value that needs anything else (a command or arithmetic substitution, a variable the
 * file has not set, ${NAME:-…}, a special parameter, a tilde) cannot be known without running it:
 * its variable is unknown, and why says what and where. "unset NAME" unsets. Any other statement
 * (a command, if/then/fi) makes every variable it names unknown; ". FILE" or "source FILE" makes
 * every variable unknown. */

#include <stdbool.h>
#include <stddef.h>

typedef struct ShellVar {
        char *name;
        char *value; /* NULL: unknown without running the file */
        char *why;   /* for an unknown one: "etc/default/grub, line 3: a command substitution" */
} ShellVar;

typedef struct ShellEnv {
        ShellVar *vars;
        size_t n, cap;
        char *all_unknown; /* why every variable is unknown (a sourced file), or NULL */
} ShellEnv;

void shell_env_done(ShellEnv *e);

/* Reads text (named file in messages) as sh sources it, on top of what e holds. 0, -ENOMEM, or
 * -EBADMSG when sh itself would stop at a syntax error (a quote left open): then every variable
 * is unknown. */
int shell_env_source(ShellEnv *e, const char *text, const char *file);

/* 1 with *ret_value (borrowed) for a known variable, 0 for an unset one, -EBADMSG for an unknown
 * one with *ret_why (borrowed; optional). */
int shell_env_get(const ShellEnv *e, const char *name, const char **ret_value, const char **ret_why);

/* s as one single-quoted shell word, a "'" as '\''; NULL on OOM. */
char *shell_quote(const char *s);
