/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "boot-internal.h"
#include "shell-env.h"
#include "strv.h"

/* GRUB's kernel arguments live in GRUB_CMDLINE_LINUX (every entry) and GRUB_CMDLINE_LINUX_DEFAULT
 * (normal entries), which grub-mkconfig gets by sourcing etc/default/grub and then the drop-ins
 * etc/default/grub.d/ *.cfg in glob order, as root. rtpart writes one of those drop-ins and never
 * edits the others. The drop-in does not restate the user's values: it edits what the files
 * before it gave, when grub-mkconfig sources it, with shell builtins only: the words rtpart
 * replaces are taken out (each an exact text, only where spaces surround it), and rtpart's own
 * arguments are added at the end of GRUB_CMDLINE_LINUX (before a "--"). So the user's text keeps
 * the meaning it has in their file (nothing of it is ever in the drop-in but inside single quotes,
 * which expand nothing), and their later edits to it take effect.
 *
 * The drop-in also records, in comments, what it does: rtpart-set (rtpart's value of a key),
 * rtpart-unset (a key rtpart removes), rtpart-was (a key's value in the base when rtpart took it)
 * and rtpart-takes (a word of the base it takes out). The value GRUB gets for a key is then: the
 * base's, where the base still has the key after the drop-in took its words out (the user set it
 * again since: a conflict with rtpart's value, which verify shows as drift), else rtpart's.
 * Writing a key's rtpart-was value gives the key back to the base (revert): the base's value,
 * whatever the user made it since, is GRUB's again. */

#define FORMAT_LINE "# rtpart-format: 2"
#define LINUX "GRUB_CMDLINE_LINUX"
#define DEFAULT "GRUB_CMDLINE_LINUX_DEFAULT"

void grub_done(Grub *g) {
        free(g->linux_);
        free(g->default_);
        free(g->restated_linux);
        free(g->restated_default);
        strv_free(g->set);
        strv_free(g->unset);
        strv_free(g->was);
        strv_free(g->takes);
        *g = (Grub) {};
}

/* ---- the base ---- */

static int base_value(const ShellEnv *env, const char *var, char **ret, char **ret_why) {
        const char *v = NULL, *why = NULL;
        int k = shell_env_get(env, var, &v, &why);
        if (k == -EBADMSG)
                return asprintf(ret_why,
                                "%s: %s's value cannot be known without running the file, which rtpart never does; "
                                "write the kernel arguments there literally",
                                why, var) < 0
                        ? -ENOMEM
                        : -EBADMSG;
        *ret = strdup(k > 0 ? v : "");
        return *ret ? 0 : -ENOMEM;
}

/* etc/default/grub, then the drop-ins that sort before rtpart's, as grub-mkconfig sources them
 * (one sorting after it could still change the variables: none of rtpart's business). */
static int grub_load_base(Root *root, Grub *g, char **ret_why) {
        _cleanup_(shell_env_done) ShellEnv env = {};
        _cleanup_strv_free_ char **dropins = NULL;
        _cleanup_free_ char *text = NULL;
        int k = root_read_file(root, "etc/default/grub", &text, NULL);
        if (k < 0 && k != -ENOENT)
                return k;
        if (text && (k = shell_env_source(&env, text, "/etc/default/grub")) < 0 && k != -EBADMSG)
                return k;
        k = root_glob(root, "etc/default/grub.d/*.cfg", &dropins);
        if (k < 0)
                return k;
        for (char **d = dropins; d && *d && strcmp(*d, GRUB_DROPIN) < 0; d++) {
                _cleanup_free_ char *t = NULL, *shown = NULL;
                if (root_read_file(root, *d, &t, NULL) < 0)
                        continue; /* grub-mkconfig sources only what it can read */
                if (asprintf(&shown, "/%s", *d) < 0)
                        return -ENOMEM;
                k = shell_env_source(&env, t, shown);
                if (k < 0 && k != -EBADMSG)
                        return k;
        }
        k = base_value(&env, LINUX, &g->linux_, ret_why);
        if (k >= 0)
                k = base_value(&env, DEFAULT, &g->default_, ret_why);
        return k;
}

/* ---- the drop-in's records ---- */

static const char *record_key_end(const char *r) {
        return r + strcspn(r, "=");
}

/* The record of key in l ("k=v" or "k"), or NULL. */
static const char *record_find(char **l, const char *key) {
        for (char **i = l; i && *i; i++)
                if ((size_t) (record_key_end(*i) - *i) == strlen(key) && strncmp(*i, key, strlen(key)) == 0)
                        return *i;
        return NULL;
}

/* Its value: "" for "k". */
static const char *record_value(const char *r) {
        const char *e = record_key_end(r);
        return *e ? e + 1 : "";
}

static void record_remove(char **l, const char *key) {
        size_t j = 0;
        for (size_t i = 0; l && l[i]; i++)
                if ((size_t) (record_key_end(l[i]) - l[i]) == strlen(key) && strncmp(l[i], key, strlen(key)) == 0)
                        free(l[i]);
                else
                        l[j++] = l[i];
        if (l)
                l[j] = NULL;
}

/* "VARIABLE word": the variable, the word. */
static bool take_split(const char *t, bool *ret_linux, const char **ret_word) {
        if (startswith(t, LINUX " ") || startswith(t, DEFAULT " ")) {
                *ret_linux = startswith(t, LINUX " ");
                *ret_word = t + strlen(*ret_linux ? LINUX " " : DEFAULT " ");
                return **ret_word != 0;
        }
        return false;
}

static bool record_valid(const char *kind, const char *r) {
        _cleanup_free_ char *key = strndup(r, (size_t) (record_key_end(r) - r));
        if (!key || bootarg_has_control(r))
                return false;
        if (streq(kind, "takes")) {
                bool l;
                const char *w;
                return take_split(r, &l, &w);
        }
        if (!bootarg_name_valid(key))
                return false;
        if (streq(kind, "unset"))
                return !*record_key_end(r);
        return !streq(kind, "set") || !bootarg_value_invalid(record_value(r));
}

static int parse_dropin(Grub *g, char *text, char **ret_why) {
        static const char * const kinds[] = { "set", "unset", "was", "takes" };
        char ***lists[] = { &g->set, &g->unset, &g->was, &g->takes };
        unsigned line = 0;
        int k;

        for (char *l = text, *next; l && *l; l = next) {
                next = strchr(l, '\n');
                if (next)
                        *next++ = 0;
                line++;
                if (streq(l, FORMAT_LINE))
                        g->restated = false;
                for (size_t i = 0; i < ELEMENTSOF(kinds); i++) {
                        char prefix[32];
                        snprintf(prefix, sizeof(prefix), "# rtpart-%s: ", kinds[i]);
                        if (!startswith(l, prefix))
                                continue;
                        if (!record_valid(kinds[i], l + strlen(prefix)))
                                return asprintf(ret_why,
                                                "/%s, line %u: \"%s\" is not a record rtpart writes; the file is "
                                                "rtpart's own: move it away and apply again",
                                                GRUB_DROPIN, line, l) < 0
                                        ? -ENOMEM
                                        : -EBADMSG;
                        if ((k = strv_extend(lists[i], l + strlen(prefix))) < 0)
                                return k;
                }
        }
        return 0;
}

int grub_load(Root *root, Grub *ret, char **ret_why) {
        _cleanup_(grub_done) Grub g = {};
        _cleanup_free_ char *text = NULL;
        int k = grub_load_base(root, &g, ret_why);
        if (k < 0)
                return k;
        k = root_read_file(root, GRUB_DROPIN, &text, NULL);
        if (k < 0 && k != -ENOENT)
                return k;
        if (text) {
                g.dropin = true;
                /* An older rtpart restated both variables, double-quoted (their text as it read it). */
                g.restated_linux = env_text_get(text, LINUX);
                g.restated_default = env_text_get(text, DEFAULT);
                g.restated = true;
                k = parse_dropin(&g, text, ret_why);
                if (k < 0)
                        return k;
                if (!g.restated) {
                        free(g.restated_linux);
                        free(g.restated_default);
                        g.restated_linux = g.restated_default = NULL;
                }
        }
        *ret = g;
        g = (Grub) {};
        return 0;
}

/* ---- what the drop-in's shell does ---- */

/* The words of variable linux in takes. */
static char **takes_of(char **takes, bool linux_) {
        char **l = calloc(strv_length(takes) + 1, sizeof(char *));
        size_t n = 0;
        for (char **t = takes; l && t && *t; t++) {
                bool is_linux;
                const char *w;
                if (take_split(*t, &is_linux, &w) && is_linux == linux_)
                        l[n++] = (char *) w;
        }
        return l; /* borrowed strings: free() the array only */
}

/* s without one space at its start (lead) and one at its end (trail), where there is one: the
 * shell's ${v# } and ${v% }. */
static char *trim_one(const char *s, bool lead, bool trail) {
        bool l = lead && s[0] == ' ';
        size_t n = strlen(s + l);
        if (trail && n > 0 && s[l + n - 1] == ' ')
                n--;
        return strndup(s + l, n);
}

/* value as the drop-in's shell (dropin_text()) leaves it, byte for byte: each word in words
 * taken out where a space stands on either side (" w " becomes " ", again until none is left:
 * ${v%%' w '*}' '${v#*' w '}), then, for GRUB_CMDLINE_LINUX (linux_), args added before the first
 * " -- " or at the end, after a space where anything is before them (${v:+$v }). */
static char *emulate(const char *value, char * const *words, const char *args, bool linux_) {
        _cleanup_free_ char *v = NULL, *head = NULL, *tail = NULL;
        char *out;
        if (asprintf(&v, " %s ", value) < 0)
                return NULL;
        for (char * const *w = words; w && *w; w++) {
                _cleanup_free_ char *pat = NULL;
                if (asprintf(&pat, " %s ", *w) < 0)
                        return NULL;
                size_t n = strlen(pat);
                for (char *p; (p = strstr(v, pat));)
                        memmove(p + 1, p + n, strlen(p + n) + 1);
        }
        if (!linux_)
                return trim_one(v, true, true);
        char *dash = strstr(v, " -- ");
        if (dash) {
                _cleanup_free_ char *t = NULL;
                if (asprintf(&t, " -- %s", dash + 4) < 0)
                        return NULL;
                dash[1] = 0; /* v up to the " -- ", and a space */
                tail = trim_one(t, false, true);
        } else
                tail = strdup("");
        head = trim_one(v, true, true);
        if (!head || !tail || asprintf(&out, "%s%s%s%s", head, *head && *args ? " " : "", args, tail) < 0)
                return NULL;
        return out;
}

/* rtpart's arguments, as one string for the end of GRUB_CMDLINE_LINUX. */
static char *set_args(char **set) {
        StrBuf b = {};
        for (char **i = set; i && *i; i++)
                strbuf_appendf(&b, "%s%s", b.len ? " " : "", *i);
        return strbuf_steal(&b);
}

/* What GRUB gets for a variable: the base's value as the drop-in leaves it. With_args: rtpart's
 * arguments too. */
static char *dropin_value(const Grub *g, bool linux_, bool with_args) {
        _cleanup_free_ char **words = takes_of(g->takes, linux_);
        _cleanup_free_ char *args = with_args && linux_ ? set_args(g->set) : strdup("");
        const char *base = linux_ ? g->linux_ : g->default_;
        if (!words || !args)
                return NULL;
        /* No code for a variable the drop-in has nothing to do with: it stays as it is. */
        if (!words[0] && !(with_args && linux_ && g->set && g->set[0]))
                return strdup(base);
        return emulate(base, words, args, linux_);
}

int grub_values(const Grub *g, char **ret_linux, char **ret_default) {
        _cleanup_free_ char *l = NULL, *d = NULL;
        if (!g->dropin || g->restated) {
                l = strdup(g->restated_linux ? g->restated_linux : g->linux_);
                d = strdup(g->restated_default ? g->restated_default : g->default_);
        } else {
                l = dropin_value(g, true, true);
                d = dropin_value(g, false, true);
        }
        if (!l || !d)
                return -ENOMEM;
        *ret_linux = TAKE_PTR(l);
        *ret_default = TAKE_PTR(d);
        return 0;
}

bool grub_gives_back(const Grub *g, const char *key, const char *value) {
        const char *was = record_find(g->was, key);
        /* An older rtpart's drop-in kept no rtpart-was: its keys are taken again first. */
        return !g->restated && (record_find(g->set, key) || record_find(g->unset, key)) &&
                streq_ptr(value, was ? record_value(was) : NULL);
}

int grub_get(const Grub *g, const char *key, char **ret) {
        _cleanup_free_ char *line = NULL;
        if (!g->dropin || g->restated) {
                const char *l = g->restated_linux ? g->restated_linux : g->linux_,
                           *d = g->restated_default ? g->restated_default : g->default_;
                return asprintf(&line, "%s %s", l, d) < 0 ? -ENOMEM : cmdline_get(line, key, ret);
        }
        _cleanup_free_ char *l = dropin_value(g, true, false), *d = dropin_value(g, false, false);
        if (!l || !d || asprintf(&line, "%s %s", l, d) < 0)
                return -ENOMEM;
        int k = cmdline_get(line, key, ret);
        if (k < 0 || *ret)
                return k; /* the base has it (again): its value is GRUB's, rtpart's conflicts */
        const char *r = record_find(g->set, key);
        *ret = r ? strdup(record_value(r)) : NULL;
        return r && !*ret ? -ENOMEM : 0;
}

/* ---- writing ---- */

/* Forgets the words of key taken out of the base. */
static void remove_takes(Grub *g, const char *key) {
        size_t j = 0;
        for (size_t i = 0; g->takes && g->takes[i]; i++) {
                bool linux_;
                const char *w;
                if (take_split(g->takes[i], &linux_, &w) && cmdline_arg_is(w, key))
                        free(g->takes[i]);
                else
                        g->takes[j++] = g->takes[i];
        }
        if (g->takes)
                g->takes[j] = NULL;
}

/* Takes the words of key in the kernel's part of the base (before a "--") out: they replace the
 * ones taken before. */
static int take_key(Grub *g, const char *key, KnobResult *ret) {
        remove_takes(g, key);
        bool init = false;
        for (int linux_ = 1; linux_ >= 0 && !init; linux_--) {
                _cleanup_strv_free_ char **words = NULL;
                if (cmdline_split(linux_ ? g->linux_ : g->default_, &words) < 0)
                        return -ENOMEM;
                for (char **w = words; *w && !init; w++) {
                        _cleanup_free_ char *t = NULL;
                        init = cmdline_arg_ends_kernel(*w, strlen(*w));
                        if (init || !cmdline_arg_is(*w, key))
                                continue;
                        if (bootarg_has_control(*w)) {
                                knob_result_reason(ret,
                                                   "/etc/default/grub: %s has \"%s\" with a tab or a line break "
                                                   "inside quotes; rtpart can take out only what a line holds",
                                                   linux_ ? LINUX : DEFAULT, key);
                                return -EBADMSG;
                        }
                        if (asprintf(&t, "%s %s", linux_ ? LINUX : DEFAULT, *w) < 0)
                                return -ENOMEM;
                        if (!strv_contains(g->takes, t) && strv_extend(&g->takes, t) < 0)
                                return -ENOMEM;
                }
        }
        return 0;
}

static void release_key(Grub *g, const char *key) {
        record_remove(g->set, key);
        record_remove(g->unset, key);
        record_remove(g->was, key);
        remove_takes(g, key);
}

static int add_record(char ***l, const char *key, const char *value) {
        _cleanup_free_ char *r = NULL;
        if (!value || !*value ? !(r = strdup(key)) : asprintf(&r, "%s=%s", key, value) < 0)
                return -ENOMEM;
        return strv_push(l, TAKE_PTR(r));
}

/* rtpart sets key to value (NULL: removes it); the first time (take), the base's value is kept
 * as the one revert gives back. */
static int own_key(Grub *g, const char *key, const char *value, bool take, const char *base_value, KnobResult *ret) {
        record_remove(g->set, key);
        record_remove(g->unset, key);
        int k = 0;
        if (take) {
                record_remove(g->was, key);
                if (base_value)
                        k = add_record(&g->was, key, base_value);
        }
        if (k >= 0)
                k = value ? add_record(&g->set, key, value) : strv_extend(&g->unset, key);
        return k < 0 ? k : take_key(g, key, ret);
}

/* An older rtpart's drop-in restated both variables: its keys are rtpart's, with the base's
 * values now as what they were. */
static int convert_restated(Grub *g, KnobResult *ret) {
        _cleanup_strv_free_ char **keys = NULL;
        _cleanup_free_ char *base = NULL;
        int k;
        for (char **i = g->set; i && *i; i++)
                if ((k = strv_push(&keys, strndup(*i, (size_t) (record_key_end(*i) - *i)))) < 0)
                        return k;
        for (char **i = g->unset; i && *i; i++)
                if ((k = strv_extend(&keys, *i)) < 0)
                        return k;
        if (asprintf(&base, "%s %s", g->linux_, g->default_) < 0)
                return -ENOMEM;
        for (char **key = keys; key && *key; key++) {
                _cleanup_free_ char *v = NULL;
                record_remove(g->was, *key);
                if ((k = cmdline_get(base, *key, &v)) < 0 || (v && (k = add_record(&g->was, *key, v)) < 0) ||
                    (k = take_key(g, *key, ret)) < 0)
                        return k;
        }
        g->restated = false;
        return 0;
}

/* What a variable's words must be after the drop-in: the kernel's part of the base without the
 * words taken, rtpart's arguments (GRUB_CMDLINE_LINUX), then "--" and init's as they were. */
static int expected_words(const Grub *g, bool linux_, bool base_linux_has_init, char ***ret) {
        _cleanup_strv_free_ char **words = NULL, **out = NULL;
        _cleanup_free_ char **takes = takes_of(g->takes, linux_);
        bool init = !linux_ && base_linux_has_init;
        if (!takes || cmdline_split(linux_ ? g->linux_ : g->default_, &words) < 0)
                return -ENOMEM;
        for (char **w = words;; w++) {
                bool end = !*w || (!init && cmdline_arg_ends_kernel(*w, strlen(*w)));
                if (end && linux_ && !init)
                        for (char **s = g->set; s && *s; s++)
                                if (strv_extend(&out, *s) < 0)
                                        return -ENOMEM;
                init = init || end;
                if (!*w)
                        break;
                if ((init || !strv_contains(takes, *w)) && strv_extend(&out, *w) < 0)
                        return -ENOMEM;
        }
        if (!out && !(out = calloc(1, sizeof(char *))))
                return -ENOMEM;
        *ret = TAKE_PTR(out);
        return 0;
}

static bool strv_equal(char **a, char **b) {
        for (; *a && *b; a++, b++)
                if (!streq(*a, *b))
                        return false;
        return !*a && !*b;
}

/* The drop-in's shell patterns take out whole words only where spaces surround them: a word
 * separated by a tab, or whose text also stands inside another argument or after "--", would come
 * out wrong. Checked before anything is written. */
static int check_dropin(const Grub *g, const char *key, KnobResult *ret) {
        _cleanup_strv_free_ char **lw = NULL;
        bool has_init = false;
        if (cmdline_split(g->linux_, &lw) < 0)
                return -ENOMEM;
        for (char **w = lw; *w; w++)
                has_init = has_init || cmdline_arg_ends_kernel(*w, strlen(*w));
        for (int linux_ = 1; linux_ >= 0; linux_--) {
                _cleanup_strv_free_ char **want = NULL, **got = NULL;
                _cleanup_free_ char *v = dropin_value(g, linux_, true);
                if (!v || cmdline_split(v, &got) < 0 || expected_words(g, linux_, has_init, &want) < 0)
                        return -ENOMEM;
                if (!strv_equal(got, want)) {
                        knob_result_reason(ret,
                                           "/etc/default/grub: %s: the drop-in cannot take \"%s\" out of it with "
                                           "the shell's patterns (an argument separated by a tab or a line break, "
                                           "or the same text inside a quoted argument or after \"--\"); separate "
                                           "the arguments with spaces",
                                           linux_ ? LINUX : DEFAULT, key);
                        return -EBADMSG;
                }
        }
        return 0;
}

static void append_takes(StrBuf *b, const Grub *g, bool linux_) {
        _cleanup_free_ char **words = takes_of(g->takes, linux_);
        for (char **w = words; w && *w; w++) {
                _cleanup_free_ char *pat = NULL, *q = NULL;
                if (asprintf(&pat, " %s ", *w) < 0 || !(q = shell_quote(pat))) {
                        b->oom = true;
                        return;
                }
                strbuf_appendf(b,
                               "while :; do case $rtpart_v in *%s*) rtpart_v=${rtpart_v%%%%%s*}' '${rtpart_v#*%s} ;; "
                               "*) break ;; esac; done\n",
                               q, q, q);
        }
        if (!words)
                b->oom = true;
}

static char *dropin_text(const Grub *g) {
        static const char * const kinds[] = { "set", "unset", "was", "takes" };
        char ** const lists[] = { g->set, g->unset, g->was, g->takes };
        _cleanup_free_ char **takes_default = takes_of(g->takes, false), **takes_linux = takes_of(g->takes, true);
        _cleanup_free_ char *args = set_args(g->set), *q = NULL;
        StrBuf b = {};
        if (!takes_default || !takes_linux || !args || !(q = shell_quote(args)))
                return NULL;
        strbuf_append(&b,
                      "# Kernel arguments managed by rtpart; 'rtpartctl revert' removes this file.\n"
                      "# Do not edit: rtpart rewrites it. The lines below record what rtpart set.\n" FORMAT_LINE "\n");
        for (size_t i = 0; i < ELEMENTSOF(kinds); i++)
                for (char **r = lists[i]; r && *r; r++)
                        strbuf_appendf(&b, "# rtpart-%s: %s\n", kinds[i], *r);
        strbuf_append(&b,
                      "# The values etc/default/grub and the drop-ins before this one gave, without the words\n"
                      "# rtpart takes out; rtpart's arguments go at the end of " LINUX " (before a \"--\").\n");
        if (takes_linux[0] || *args) {
                strbuf_append(&b, "rtpart_v=\" ${" LINUX "-} \"\n");
                append_takes(&b, g, true);
                strbuf_append(&b,
                              "rtpart_t=\n"
                              "case $rtpart_v in *' -- '*) rtpart_t=' -- '${rtpart_v#*' -- '}; "
                              "rtpart_v=${rtpart_v%%' -- '*}' ' ;; esac\n");
                strbuf_append(&b, "rtpart_v=${rtpart_v# }\nrtpart_v=${rtpart_v% }\n");
                if (*args)
                        strbuf_appendf(&b, LINUX "=${rtpart_v:+$rtpart_v }%s${rtpart_t%% }\n", q);
                else
                        strbuf_append(&b, LINUX "=$rtpart_v${rtpart_t% }\n");
        }
        if (takes_default[0]) {
                strbuf_append(&b, "rtpart_v=\" ${" DEFAULT "-} \"\n");
                append_takes(&b, g, false);
                strbuf_append(&b, "rtpart_v=${rtpart_v# }\n" DEFAULT "=${rtpart_v% }\n");
        }
        strbuf_append(&b, "unset rtpart_v rtpart_t\n");
        return strbuf_steal(&b);
}

int grub_write(Root *root, const char *key, const char *value, KnobResult *ret) {
        _cleanup_(grub_done) Grub g = {};
        _cleanup_free_ char *why = NULL, *base = NULL, *base_value = NULL, *text = NULL;
        int k = grub_load(root, &g, &why);
        if (k == -EBADMSG)
                knob_result_reason(ret, "%s", why);
        if (k < 0)
                return k;
        /* rtpart's arguments go at the end of GRUB_CMDLINE_LINUX, inside a quote it leaves open
         * even where GRUB_CMDLINE_LINUX_DEFAULT closes it: each is checked on its own. */
        if (boot_quote_open(g.linux_, g.linux_ + strlen(g.linux_)))
                return boot_refuse_open_quote(ret, "/etc/default/grub", LINUX);
        if (boot_quote_open(g.default_, g.default_ + strlen(g.default_)))
                return boot_refuse_open_quote(ret, "/etc/default/grub", DEFAULT);
        if (value && bootarg_value_invalid(value))
                return -EINVAL; /* the plan's rules: what rtpart sets itself is plain */
        if (asprintf(&base, "%s %s", g.linux_, g.default_) < 0 || cmdline_get(base, key, &base_value) < 0)
                return -ENOMEM;
        if (g.restated && (k = convert_restated(&g, ret)) < 0)
                return k;

        if (grub_gives_back(&g, key, value))
                release_key(&g, key); /* back to the base's, as the user has it now */
        else if (record_find(g.set, key) || record_find(g.unset, key))
                k = own_key(&g, key, value, false, NULL, ret);
        else if (!streq_ptr(value, base_value))
                k = own_key(&g, key, value, true, base_value, ret);
        if (k < 0)
                return k;

        if (strv_length(g.set) == 0 && strv_length(g.unset) == 0) {
                k = root_unlink(root, GRUB_DROPIN);
                return k == -ENOENT ? 0 : k;
        }
        k = check_dropin(&g, key, ret);
        if (k < 0)
                return k;
        if (!(text = dropin_text(&g)))
                return -ENOMEM;
        k = root_mkdir_p(root, "etc/default/grub.d", 0755);
        if (k < 0)
                return k;
        return root_write_file_atomic(root, GRUB_DROPIN, text, strlen(text), 0644);
}
