/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shell-env.h"
#include "strv.h"

/* See shell-env.h. The grammar is POSIX sh's (XCU 2.2 quoting, 2.6 word expansions, 2.9.1 simple
 * commands), read only as far as a file of assignments needs it; everything past that makes the
 * variables it could touch unknown, never guessed. */

void shell_env_done(ShellEnv *e) {
        for (size_t i = 0; i < e->n; i++) {
                free(e->vars[i].name);
                free(e->vars[i].value);
                free(e->vars[i].why);
        }
        free(e->vars);
        free(e->all_unknown);
        *e = (ShellEnv) {};
}

static bool is_name_start(char c) {
        return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_name_char(char c) {
        return is_name_start(c) || (c >= '0' && c <= '9');
}

static ShellVar *find_var(const ShellEnv *e, const char *name, size_t n) {
        for (size_t i = 0; i < e->n; i++)
                if (strlen(e->vars[i].name) == n && memcmp(e->vars[i].name, name, n) == 0)
                        return &e->vars[i];
        return NULL;
}

/* Sets name (n bytes) to value, or unknown (value NULL) for why. */
static int set_var(ShellEnv *e, const char *name, size_t n, const char *value, const char *why) {
        ShellVar *v = find_var(e, name, n);
        char *nv = value ? strdup(value) : NULL, *nw = value ? NULL : strdup(why ? why : "unknown");
        if (value ? !nv : !nw) {
                free(nv);
                free(nw);
                return -ENOMEM;
        }
        if (!v) {
                char *copy = strndup(name, n);
                if (!copy || GROW_ARRAY(e->vars, e->cap, e->n, 16) < 0) {
                        free(copy);
                        free(nv);
                        free(nw);
                        return -ENOMEM;
                }
                v = &e->vars[e->n++];
                *v = (ShellVar) { .name = copy };
        }
        free(v->value);
        free(v->why);
        v->value = nv;
        v->why = nw;
        return 0;
}

static void unset_var(ShellEnv *e, const char *name) {
        ShellVar *v = find_var(e, name, strlen(name));
        if (!v)
                return;
        free(v->name);
        free(v->value);
        free(v->why);
        *v = e->vars[--e->n];
}

int shell_env_get(const ShellEnv *e, const char *name, const char **ret_value, const char **ret_why) {
        const ShellVar *v = find_var(e, name, strlen(name));
        const char *why = e->all_unknown ? e->all_unknown : v && !v->value ? v->why : NULL;
        if (why) {
                if (ret_why)
                        *ret_why = why;
                return -EBADMSG;
        }
        if (!v)
                return 0;
        *ret_value = v->value;
        return 1;
}

char *shell_quote(const char *s) {
        StrBuf b = {};
        strbuf_append(&b, "'");
        for (const char *p = s; *p; p++)
                strbuf_append(&b, *p == '\'' ? "'\\''" : (char[]) { *p, 0 });
        strbuf_append(&b, "'");
        return strbuf_steal(&b);
}

/* ---- words ---- */

typedef struct Lexer {
        ShellEnv *env;
        const char *p, *e;
        const char *file;
        unsigned line;
} Lexer;

typedef struct Word {
        StrBuf value;
        char *why;       /* why the value is unknown, or NULL */
        size_t name_len; /* an assignment: its NAME's length; else 0 */
} Word;

static void word_done(Word *w) {
        strbuf_done(&w->value);
        free(w->why);
        *w = (Word) {};
}

/* The value needs what: the word is unknown (the first reason stays). */
static void word_unknown(Lexer *l, Word *w, const char *what) {
        if (!w->why && asprintf(&w->why, "%s, line %u: %s", l->file, l->line, what) < 0)
                w->why = NULL;
}

static void append_char(Word *w, char c) {
        char s[2] = { c, 0 };
        strbuf_append(&w->value, s);
}

/* Skips from l->p (at a '(') past the ')' that closes it, counting lines. */
static int skip_parens(Lexer *l) {
        unsigned depth = 0;
        for (; l->p < l->e; l->p++) {
                if (*l->p == '\n')
                        l->line++;
                else if (*l->p == '(')
                        depth++;
                else if (*l->p == ')' && --depth == 0) {
                        l->p++;
                        return 0;
                }
        }
        return -EBADMSG;
}

/* `…` from l->p: a command substitution. */
static int lex_backquote(Lexer *l, Word *w) {
        word_unknown(l, w, "a command substitution (`…`)");
        for (l->p++; l->p < l->e; l->p++) {
                if (*l->p == '\\' && l->p + 1 < l->e)
                        l->p++;
                else if (*l->p == '`') {
                        l->p++;
                        return 0;
                }
                if (*l->p == '\n')
                        l->line++;
        }
        return -EBADMSG;
}

static void expand_name(Lexer *l, Word *w, const char *name, size_t n) {
        ShellVar *v = find_var(l->env, name, n);
        if (l->env->all_unknown)
                word_unknown(l, w, "a variable after a sourced file");
        else if (!v) {
                _cleanup_free_ char *what = NULL;
                if (asprintf(&what, "$%.*s, which the file does not set before", (int) n, name) >= 0)
                        word_unknown(l, w, what);
                else
                        word_unknown(l, w, "a variable");
        } else if (!v->value) {
                if (!w->why)
                        w->why = strdup(v->why);
        } else
                strbuf_append(&w->value, v->value);
}

/* $… from l->p. */
static int lex_dollar(Lexer *l, Word *w) {
        const char *q = l->p + 1;
        if (q >= l->e || (!is_name_start(*q) && !strchr("{(@*#?$!-0123456789", *q))) {
                append_char(w, '$'); /* a '$' that starts nothing is itself */
                l->p++;
                return 0;
        }
        if (*q == '(') {
                word_unknown(l, w,
                             q + 1 < l->e && q[1] == '(' ? "an arithmetic expansion ($((…)))"
                                                         : "a command substitution ($(…))");
                l->p = q;
                return skip_parens(l);
        }
        if (*q == '{') {
                const char *end = memchr(q, '}', (size_t) (l->e - q));
                if (!end)
                        return -EBADMSG;
                const char *n = q + 1;
                bool plain = n < end && is_name_start(*n);
                for (const char *c = n; plain && c < end; c++)
                        plain = is_name_char(*c);
                if (plain)
                        expand_name(l, w, n, (size_t) (end - n));
                else
                        word_unknown(l, w, "a parameter expansion other than ${NAME}");
                l->p = end + 1;
                return 0;
        }
        if (is_name_start(*q)) {
                const char *n = q;
                while (q < l->e && is_name_char(*q))
                        q++;
                expand_name(l, w, n, (size_t) (q - n));
                l->p = q;
                return 0;
        }
        word_unknown(l, w, "a special parameter ($1, $@, $?, …)");
        l->p = q + 1;
        return 0;
}

/* "…" from l->p. */
static int lex_double(Lexer *l, Word *w) {
        int k;
        for (l->p++; l->p < l->e;) {
                char c = *l->p;
                if (c == '"') {
                        l->p++;
                        return 0;
                }
                if (c == '\\' && l->p + 1 < l->e && strchr("$`\"\\\n", l->p[1])) {
                        if (l->p[1] == '\n')
                                l->line++;
                        else
                                append_char(w, l->p[1]);
                        l->p += 2;
                } else if (c == '$' || c == '`') {
                        k = c == '$' ? lex_dollar(l, w) : lex_backquote(l, w);
                        if (k < 0)
                                return k;
                } else {
                        if (c == '\n')
                                l->line++;
                        append_char(w, c);
                        l->p++;
                }
        }
        return -EBADMSG;
}

static bool ends_word(char c) {
        return strchr(" \t\n;&|()<>", c) != NULL;
}

/* One word from l->p (not at a blank or an operator). */
static int lex_word(Lexer *l, Word *w) {
        const char *start = l->p, *value_start = start;
        int k = 0;

        while (start + w->name_len < l->e && is_name_char(start[w->name_len]) &&
               (w->name_len > 0 || is_name_start(*start)))
                w->name_len++;
        if (w->name_len > 0 && start + w->name_len < l->e && start[w->name_len] == '=')
                value_start = l->p = start + w->name_len + 1;
        else
                w->name_len = 0;

        while (k >= 0 && l->p < l->e && !ends_word(*l->p)) {
                char c = *l->p;
                if (c == '~' && (l->p == value_start || (w->name_len > 0 && l->p[-1] == ':'))) {
                        word_unknown(l, w, "a tilde expansion (~)");
                        l->p++;
                } else if (c == '\'') {
                        const char *end = memchr(l->p + 1, '\'', (size_t) (l->e - l->p - 1));
                        if (!end)
                                return -EBADMSG;
                        for (const char *c2 = l->p + 1; c2 < end; c2++)
                                l->line += *c2 == '\n';
                        strbuf_appendf(&w->value, "%.*s", (int) (end - l->p - 1), l->p + 1);
                        l->p = end + 1;
                } else if (c == '"')
                        k = lex_double(l, w);
                else if (c == '$')
                        k = lex_dollar(l, w);
                else if (c == '`')
                        k = lex_backquote(l, w);
                else if (c == '\\' && l->p + 1 < l->e) {
                        if (l->p[1] == '\n')
                                l->line++;
                        else
                                append_char(w, l->p[1]);
                        l->p += 2;
                } else {
                        append_char(w, c);
                        l->p++;
                }
        }
        if (k >= 0 && w->value.oom)
                k = -ENOMEM;
        return k;
}

/* ---- statements ---- */

/* A statement rtpart does not follow: every name in its text becomes unknown. */
static int opaque(Lexer *l, const char *start, const char *end, unsigned line) {
        _cleanup_free_ char *why = NULL;
        if (asprintf(&why, "%s, line %u: a statement that is not an assignment names it", l->file, line) < 0)
                return -ENOMEM;
        for (const char *p = start; p < end;) {
                if (!is_name_start(*p) || (p > start && is_name_char(p[-1]))) {
                        p++;
                        continue;
                }
                const char *n = p;
                while (p < end && is_name_char(*p))
                        p++;
                int k = set_var(l->env, n, (size_t) (p - n), NULL, why);
                if (k < 0)
                        return k;
        }
        return 0;
}

/* At the end of a statement of n words (raws: where each starts) from start to end, whose
 * assignments are made (sh makes them in order, each seeing the ones before). */
static int apply(Lexer *l, Word *words, size_t n, const char *start, const char *end, unsigned line) {
        size_t a = 0;
        while (a < n && words[a].name_len > 0)
                a++;
        const char *cmd = a < n && !words[a].why ? strempty(words[a].value.s) : "";
        if (a == n || (a == 0 && (streq(cmd, "export") || streq(cmd, "readonly"))))
                return 0; /* assignments only: made; after export, names without one are only exported */
        if (a == 0 && streq(cmd, "unset")) {
                for (size_t i = 1; i < n; i++)
                        if (!words[i].why && words[i].value.s && words[i].value.s[0] != '-')
                                unset_var(l->env, words[i].value.s);
                return 0;
        }
        if (a == 0 && (streq(cmd, ".") || streq(cmd, "source"))) {
                free(l->env->all_unknown);
                return asprintf(&l->env->all_unknown, "%s, line %u: it sources another file", l->file, line) < 0
                        ? -ENOMEM
                        : 0;
        }
        /* A command: an assignment before it was for it alone, and it may set what it names. */
        return opaque(l, start, end, line);
}

int shell_env_source(ShellEnv *e, const char *text, const char *file) {
        Lexer l = { .env = e, .p = text, .e = text + strlen(text), .file = file, .line = 1 };
        Word words[64] = {};
        size_t n = 0;
        const char *start = l.p;
        unsigned line = 1;
        bool complex = false, assigning = true;
        int k = 0;

        while (k >= 0) {
                while (l.p < l.e &&
                       (*l.p == ' ' || *l.p == '\t' || (*l.p == '\\' && l.p + 1 < l.e && l.p[1] == '\n'))) {
                        if (*l.p == '\\') { /* a line continued */
                                l.line++;
                                l.p++;
                        }
                        l.p++;
                }
                bool end = l.p >= l.e || *l.p == '\n' || *l.p == ';' || *l.p == '#';
                if (!end && strchr("&|()<>", *l.p)) {
                        complex = true; /* pipes, lists, redirections, subshells: not followed */
                        l.p++;
                        continue;
                }
                if (!end && n < ELEMENTSOF(words)) {
                        const char *raw = l.p;
                        Word *w = &words[n++];
                        k = lex_word(&l, w);
                        if (k >= 0 && assigning && w->name_len > 0)
                                k = set_var(e, raw, w->name_len, w->why ? NULL : strempty(w->value.s), w->why);
                        else if (n > 1 || w->why || !w->value.s ||
                                 (!streq(w->value.s, "export") && !streq(w->value.s, "readonly")))
                                assigning = false;
                        continue;
                }
                if (!end) { /* more words than any assignment statement has */
                        complex = true;
                        Word skip = {};
                        k = lex_word(&l, &skip);
                        word_done(&skip);
                        continue;
                }
                if (l.p < l.e && *l.p == '#')
                        while (l.p < l.e && *l.p != '\n')
                                l.p++;
                k = complex ? opaque(&l, start, l.p, line) : apply(&l, words, n, start, l.p, line);
                for (size_t i = 0; i < n; i++)
                        word_done(&words[i]);
                n = 0;
                complex = false;
                assigning = true;
                if (l.p >= l.e)
                        break;
                l.line += *l.p == '\n';
                start = ++l.p;
                line = l.line;
        }
        for (size_t i = 0; i < n; i++)
                word_done(&words[i]);
        if (k == -EBADMSG && !e->all_unknown &&
            asprintf(&e->all_unknown, "%s, line %u: a quote or substitution left open (sh stops there)", file, l.line) <
                    0)
                return -ENOMEM;
        return k;
}
