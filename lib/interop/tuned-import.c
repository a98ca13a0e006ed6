/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "strv.h"
#include "tuned-import.h"

/* ---- errors and notes ---- */

static int error_set(TunedError *e, const char *file, unsigned line, const char *fmt, ...) _printf_(4, 5);
static int error_set(TunedError *e, const char *file, unsigned line, const char *fmt, ...) {
        va_list ap;
        char *m = NULL;

        va_start(ap, fmt);
        if (vasprintf(&m, fmt, ap) < 0)
                m = NULL;
        va_end(ap);
        if (e) {
                tuned_error_done(e);
                e->file = strdup(strempty(file));
                e->line = line;
                e->message = m;
        } else
                free(m);
        return -EINVAL;
}

void tuned_error_done(TunedError *e) {
        if (!e)
                return;
        free(e->file);
        free(e->message);
        *e = (TunedError) {};
}

/* ---- the INI syntax ---- */

static void option_done(TunedOption *o) {
        free(o->key);
        free(o->value);
        free(o->file);
        *o = (TunedOption) {};
}

static void section_done(TunedSection *s) {
        for (size_t i = 0; i < s->n_options; i++)
                option_done(&s->options[i]);
        free(s->options);
        free(s->name);
        free(s->file);
        *s = (TunedSection) {};
}

void tuned_ini_done(TunedIni *ini) {
        if (!ini)
                return;
        for (size_t i = 0; i < ini->n_sections; i++)
                section_done(&ini->sections[i]);
        free(ini->sections);
        *ini = (TunedIni) {};
}

static TunedSection *ini_section(TunedIni *ini, const char *name) {
        for (size_t i = 0; i < ini->n_sections; i++)
                if (streq(ini->sections[i].name, name))
                        return &ini->sections[i];
        return NULL;
}

static TunedOption *section_option(TunedSection *s, const char *key) {
        for (size_t i = 0; i < s->n_options; i++)
                if (streq(s->options[i].key, key))
                        return &s->options[i];
        return NULL;
}

static int section_remove(TunedSection *s, const char *key) {
        for (size_t i = 0; i < s->n_options; i++)
                if (streq(s->options[i].key, key)) {
                        option_done(&s->options[i]);
                        memmove(&s->options[i], &s->options[i + 1], (s->n_options - i - 1) * sizeof(TunedOption));
                        s->n_options--;
                        return 1;
                }
        return 0;
}

/* Sets key (a repeated key keeps its first place and takes the new value, as a Python dict does). */
static int section_set(TunedSection *s, const char *key, const char *value, const char *file, unsigned line) {
        TunedOption *o = section_option(s, key);
        char *v = value ? strdup(value) : NULL, *f = strdup(file);
        if ((value && !v) || !f) {
                free(v);
                free(f);
                return -ENOMEM;
        }
        if (!o) {
                TunedOption *n = realloc(s->options, (s->n_options + 1) * sizeof(TunedOption));
                if (!n) {
                        free(v);
                        free(f);
                        return -ENOMEM;
                }
                s->options = n;
                o = &s->options[s->n_options];
                *o = (TunedOption) { .key = strdup(key) };
                if (!o->key) {
                        free(v);
                        free(f);
                        return -ENOMEM;
                }
                s->n_options++;
        }
        free(o->value);
        free(o->file);
        o->value = v;
        o->file = f;
        o->line = line;
        return 0;
}

static TunedSection *ini_add_section(TunedIni *ini, const char *name, const char *file, unsigned line) {
        TunedSection *s = ini_section(ini, name);
        if (s)
                return s;
        TunedSection *n = realloc(ini->sections, (ini->n_sections + 1) * sizeof(TunedSection));
        if (!n)
                return NULL;
        ini->sections = n;
        s = &ini->sections[ini->n_sections];
        *s = (TunedSection) { .name = strdup(name), .file = strdup(file), .line = line };
        if (!s->name || !s->file) {
                section_done(s);
                return NULL;
        }
        ini->n_sections++;
        return s;
}

static char *strip_dup(const char *p, size_t n) {
        while (n > 0 && isspace((unsigned char) *p))
                p++, n--;
        while (n > 0 && isspace((unsigned char) p[n - 1]))
                n--;
        return strndup(p, n);
}

/* A "#" after whitespace starts an inline comment. */
static size_t value_length(const char *p, size_t n) {
        for (size_t i = 1; i < n; i++)
                if (p[i] == '#' && isspace((unsigned char) p[i - 1]))
                        return i;
        return n;
}

int tuned_ini_parse(const char *text, const char *file, bool allow_no_value, TunedIni *ret, TunedError *ret_error) {
        _cleanup_(tuned_ini_done) TunedIni ini = {};
        TunedSection *cur = NULL;
        TunedOption *open = NULL; /* the option that indented lines continue */
        size_t open_indent = 0;
        unsigned line = 0;

        if (allow_no_value && !(cur = ini_add_section(&ini, "", file, 0)))
                return -ENOMEM;
        for (const char *p = text ?: ""; *p;) {
                const char *e = strchr(p, '\n');
                size_t n = e ? (size_t) (e - p) : strlen(p);
                const char *l = p;
                p = e ? e + 1 : l + n;
                line++;
                if (n > 0 && l[n - 1] == '\r')
                        n--;

                size_t indent = 0;
                while (indent < n && isspace((unsigned char) l[indent]))
                        indent++;
                if (indent == n) { /* an empty line ends a value */
                        open = NULL;
                        continue;
                }
                if (l[indent] == '#' || l[indent] == ';')
                        continue;
                if (open && indent > open_indent) {
                        _cleanup_free_ char *more = strip_dup(l + indent, value_length(l + indent, n - indent));
                        char *v = NULL;
                        if (!more || asprintf(&v, "%s\n%s", strempty(open->value), more) < 0)
                                return -ENOMEM;
                        free(open->value);
                        open->value = v;
                        continue;
                }
                open = NULL;
                if (l[indent] == '[') {
                        const char *close = NULL;
                        for (size_t i = indent + 1; i < n; i++)
                                if (l[i] == ']')
                                        close = l + i;
                        if (!close || close == l + indent + 1)
                                return error_set(ret_error, file, line, "section header without a name or ']'");
                        _cleanup_free_ char *name = strndup(l + indent + 1, (size_t) (close - l - indent - 1));
                        if (!name || !(cur = ini_add_section(&ini, name, file, line)))
                                return -ENOMEM;
                        continue;
                }
                if (!cur)
                        return error_set(ret_error, file, line, "option before the first [section] header");
                const char *eq = memchr(l, '=', n);
                if (!eq && !allow_no_value)
                        return error_set(ret_error, file, line,
                                         "a line that is neither \"[section]\" nor \"key = value\"");
                size_t klen = eq ? (size_t) (eq - l) : value_length(l, n);
                _cleanup_free_ char *key = strip_dup(l, klen);
                if (!key)
                        return -ENOMEM;
                if (!*key)
                        return error_set(ret_error, file, line, "an option without a name before '='");
                _cleanup_free_ char *value = NULL;
                if (eq) {
                        size_t off = (size_t) (eq + 1 - l);
                        value = strip_dup(eq + 1, value_length(eq + 1, n - off));
                        if (!value)
                                return -ENOMEM;
                }
                int r = section_set(cur, key, value, file, line);
                if (r < 0)
                        return r;
                open = section_option(cur, key);
                open_indent = indent;
        }
        *ret = ini;
        ini = (TunedIni) {};
        return 0;
}

/* ---- CPU lists, as tuned writes and reads them ---- */

static bool py_int(const char *s, size_t n, long *ret) {
        while (n > 0 && isspace((unsigned char) *s))
                s++, n--;
        while (n > 0 && isspace((unsigned char) s[n - 1]))
                n--;
        if (n == 0 || n > 18)
                return false;
        char buf[20];
        memcpy(buf, s, n);
        buf[n] = 0;
        char *end;
        errno = 0;
        long v = strtol(buf, &end, 10);
        if (*end || errno || !(isdigit((unsigned char) buf[0]) || buf[0] == '-' || buf[0] == '+'))
                return false;
        *ret = v;
        return true;
}

static void add_range(CpuSet *s, long a, long b) {
        for (long c = MAX(a, 0); c <= b && c < (long) CPU_SET_MAX; c++)
                cpu_set_add(s, (unsigned) c);
}

/* A hex mask, commas ignored, as tuned's hex2cpulist: invalid gives no CPUs. */
static void hex_add(CpuSet *s, const char *p, size_t n) {
        CpuSet m = {};
        unsigned bit = 0;
        if (n >= 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
                p += 2, n -= 2;
        bool any = false;
        for (size_t i = n; i > 0; i--) {
                char c = p[i - 1];
                if (c == ',' || c == '_')
                        continue;
                if (!isxdigit((unsigned char) c))
                        return;
                any = true;
                unsigned v = (unsigned) (isdigit((unsigned char) c) ? c - '0' : tolower((unsigned char) c) - 'a' + 10);
                for (unsigned b = 0; b < 4; b++, bit++)
                        if (v & (1U << b))
                                cpu_set_add(&m, bit);
        }
        if (any)
                cpu_set_or(s, &m);
}

bool tuned_cpulist_parse(const char *s, CpuSet *ret) {
        CpuSet set = {}, neg = {};
        const char *p = s ?: "";
        size_t n = strlen(p);

        cpu_set_zero(ret);
        while (n > 0 && (*p == '\'' || *p == '"'))
                p++, n--;
        while (n > 0 && (p[n - 1] == '\'' || p[n - 1] == '"'))
                n--;

        /* Elements between commas; a mask ("0x...") runs on to the next empty element. */
        const char *end = p + n;
        const char *hex = NULL;
        for (const char *q = p;;) {
                const char *c = memchr(q, ',', (size_t) (end - q));
                const char *ee = c ?: end;
                size_t len = (size_t) (ee - q);
                if (hex) {
                        if (len == 0) {
                                hex_add(&set, hex, (size_t) (q - 1 - hex));
                                hex = NULL;
                        }
                } else if (len >= 2 && q[0] == '0' && (q[1] == 'x' || q[1] == 'X'))
                        hex = q;
                else if (len > 0 && (q[0] == '^' || q[0] == '!')) {
                        const char *dash = memchr(q + 1, '-', len - 1);
                        long a, b;
                        if (dash) {
                                if (!py_int(q + 1, (size_t) (dash - q - 1), &a) ||
                                    !py_int(dash + 1, (size_t) (ee - dash - 1), &b))
                                        return false;
                        } else if (!py_int(q + 1, len - 1, &a))
                                return false;
                        else
                                b = a;
                        add_range(&neg, a, b);
                } else if (len > 0) {
                        const char *dash = memchr(q, '-', len);
                        long a, b;
                        if (dash) {
                                const char *dash2 = memchr(dash + 1, '-', (size_t) (ee - dash - 1));
                                if (!py_int(q, (size_t) (dash - q), &a) ||
                                    !py_int(dash + 1, (size_t) ((dash2 ?: ee) - dash - 1), &b))
                                        return false;
                        } else if (!py_int(q, len, &a))
                                return false;
                        else
                                b = a;
                        add_range(&set, a, b);
                }
                if (!c)
                        break;
                q = c + 1;
        }
        if (hex)
                hex_add(&set, hex, (size_t) (end - hex));
        cpu_set_andnot(&set, &neg);
        *ret = set;
        return true;
}

/* "1,2,3", as tuned's list functions give them. */
static char *format_unpacked(const CpuSet *s) {
        StrBuf b = {};
        strbuf_append(&b, "");
        CPU_SET_FOREACH (c, s)
                strbuf_appendf(&b, "%s%d", b.len ? "," : "", c);
        return strbuf_steal(&b);
}

/* tuned's cpulist2hex: 8 hex digits a group, as few groups as the highest CPU needs. */
static char *format_hex(const CpuSet *s) {
        int last = cpu_set_last(s);
        unsigned groups = last < 0 ? 1 : (unsigned) last / 32 + 1;
        StrBuf b = {};
        strbuf_append(&b, "");
        for (unsigned g = groups; g > 0; g--) {
                uint32_t w = (uint32_t) (s->bits[(g - 1) / 2] >> (((g - 1) % 2) * 32));
                strbuf_appendf(&b, "%s%08x", g == groups ? "" : ",", w);
        }
        return strbuf_steal(&b);
}

/* ---- the profile, loaded and merged ---- */

typedef struct Eval Eval;
struct Eval {
        const TunedEnv *env;
        char **names, **values; /* the variables, in the order defined */
        size_t n_vars;
        TunedImport *out;
        /* Where the value being expanded was written. */
        const char *file, *section, *option;
        unsigned line;
        /* calc_isolated_cores: its argument and result, when called. */
        bool calc_used;
        unsigned calc_n;
        CpuSet calc_set;
        TunedError *error;
};

typedef struct Loader {
        const TunedEnv *env;
        Eval *ev;        /* for the functions of [main] include, evaluated at load */
        TunedIni merged; /* the sections, "main" among them, merged in include order */
        char **files;
        unsigned depth;
        TunedError *error;
} Loader;

static const char * const load_dirs[] = { "/etc/tuned", "/usr/lib/tuned" };

static int expand_functions(Eval *ev, const char *value, char **ret);

/* ${i:PROFILE_DIR}, unless escaped. */
static char *expand_profile_dir(const char *v, const char *dir) {
        static const char tok[] = "${i:PROFILE_DIR}";
        StrBuf b = {};
        strbuf_append(&b, "");
        for (const char *p = v; *p;) {
                if (startswith(p, tok) && (p == v || p[-1] != '\\')) {
                        strbuf_append(&b, dir);
                        p += strlen(tok);
                } else {
                        char c[2] = { *p++, 0 };
                        strbuf_append(&b, c);
                }
        }
        return strbuf_steal(&b);
}

/* Options of every unit that say how tuned runs it, not what it sets. */
static bool unit_key(const char *k) {
        return streq(k, "type") || streq(k, "enabled") || streq(k, "devices") || streq(k, "priority");
}

/* tuned's merge of one profile over what came before. */
static int merge_ini(TunedIni *into, TunedIni *add) {
        for (size_t i = 0; i < add->n_sections; i++) {
                TunedSection *s = &add->sections[i];
                TunedOption *rep = section_option(s, "replace");
                bool replace = rep && rep->value &&
                        (streq(rep->value, "True") || streq(rep->value, "true") || streq(rep->value, "1"));
                TunedSection *d = ini_section(into, s->name);
                if (!d) {
                        if (!(d = ini_add_section(into, s->name, s->file, s->line)))
                                return -ENOMEM;
                } else if (replace) {
                        for (size_t j = d->n_options; j > 0; j--)
                                option_done(&d->options[j - 1]);
                        d->n_options = 0;
                } else if (!streq(s->name, "main") && !streq(s->name, "variables")) {
                        /* The later unit's type, enabled and devices replace the earlier ones,
                         * defaults included. */
                        for (const char * const *k = (const char * const[]) { "type", "enabled", "devices", NULL }; *k;
                             k++)
                                (void) section_remove(d, *k);
                }
                TunedOption *drop = section_option(s, "drop");
                if (drop && drop->value && !streq(s->name, "main") && !streq(s->name, "variables")) {
                        _cleanup_free_ char *l = strdup(drop->value);
                        if (!l)
                                return -ENOMEM;
                        for (char *sp = NULL, *tok = strtok_r(l, ",; \t", &sp); tok; tok = strtok_r(NULL, ",; \t", &sp))
                                (void) section_remove(d, tok);
                }
                for (size_t j = 0; j < s->n_options; j++) {
                        TunedOption *o = &s->options[j];
                        if (!streq(s->name, "main") && !streq(s->name, "variables") &&
                            (streq(o->key, "replace") || streq(o->key, "drop")))
                                continue;
                        int r = section_set(d, o->key, o->value, o->file, o->line);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

static char *dirname_dup(const char *path) {
        const char *s = strrchr(path, '/');
        return s ? strndup(path, s == path ? 1 : (size_t) (s - path)) : strdup(".");
}

static int load_names(Loader *l, const char *names, const char *from_file, unsigned from_line);

static int load_file(Loader *l, const char *path, bool host_path) {
        _cleanup_free_ char *text = NULL;
        int r = l->env->read_file(l->env->userdata, path, host_path, &text);
        if (r < 0)
                return r;
        if (strv_extend(&l->files, path) < 0)
                return -ENOMEM;

        _cleanup_(tuned_ini_done) TunedIni ini = {};
        r = tuned_ini_parse(text, path, /* allow_no_value= */ false, &ini, l->error);
        if (r < 0)
                return r;
        _cleanup_free_ char *dir = dirname_dup(path);
        if (!dir)
                return -ENOMEM;
        for (size_t i = 0; i < ini.n_sections; i++)
                for (size_t j = 0; j < ini.sections[i].n_options; j++) {
                        TunedOption *o = &ini.sections[i].options[j];
                        if (!o->value || !strstr(o->value, "${i:PROFILE_DIR}"))
                                continue;
                        char *v = expand_profile_dir(o->value, dir);
                        if (!v)
                                return -ENOMEM;
                        free(o->value);
                        o->value = v;
                }

        TunedSection *main = ini_section(&ini, "main");
        TunedOption *inc = main ? section_option(main, "include") : NULL;
        if (inc && inc->value) {
                _cleanup_free_ char *names = NULL, *ifile = strdup(inc->file);
                unsigned iline = inc->line;
                /* At load, no variable is defined yet: only the functions expand. */
                l->ev->file = inc->file;
                l->ev->line = inc->line;
                l->ev->section = "main";
                l->ev->option = "include";
                r = expand_functions(l->ev, inc->value, &names);
                if (r < 0)
                        return r;
                (void) section_remove(main, "include");
                if (!ifile)
                        return -ENOMEM;
                if (++l->depth > 32)
                        return error_set(l->error, ifile, iline, "includes nested more than 32 deep");
                r = load_names(l, names, ifile, iline);
                l->depth--;
                if (r < 0)
                        return r;
        }
        return merge_ini(&l->merged, &ini);
}

static int load_names(Loader *l, const char *names, const char *from_file, unsigned from_line) {
        _cleanup_free_ char *copy = strdup(names);
        if (!copy)
                return -ENOMEM;
        for (char *sp = NULL, *tok = strtok_r(copy, ",;", &sp); tok; tok = strtok_r(NULL, ",;", &sp)) {
                _cleanup_free_ char *name = strip_dup(tok, strlen(tok));
                if (!name)
                        return -ENOMEM;
                bool conditional = name[0] == '-';
                const char *base = strrchr(name + conditional, '/');
                base = base ? base + 1 : name + conditional;
                if (!*base)
                        continue;
                bool found = false, skipped = false;
                for (size_t d = 0; d < ELEMENTSOF(load_dirs) && !found; d++) {
                        _cleanup_free_ char *path = NULL;
                        if (asprintf(&path, "%s/%s/tuned.conf", load_dirs[d], base) < 0)
                                return -ENOMEM;
                        if (strv_contains(l->files, path)) {
                                skipped = true;
                                continue;
                        }
                        int r = load_file(l, path, /* host_path= */ true);
                        if (r == -ENOENT)
                                continue;
                        if (r < 0) {
                                if (r != -EINVAL && r != -ENOMEM)
                                        (void) error_set(l->error, path, 0, "cannot read: %s", strerror(-r));
                                return r;
                        }
                        found = true;
                }
                if (!found && !skipped && !conditional && !from_file)
                        return error_set(l->error, base, 0, "no tuned profile '%s' in /etc/tuned or /usr/lib/tuned",
                                         base);
                if (!found && !skipped && !conditional)
                        return error_set(l->error, from_file, from_line,
                                         "included profile '%s' not found in /etc/tuned or /usr/lib/tuned", base);
        }
        return 0;
}

/* ---- variables and functions ---- */

static int note_add(TunedImport *t, const char *file, unsigned line, const char *section, const char *option,
                    bool unsupported, const char *fmt, ...) _printf_(7, 8);
static int note_add(TunedImport *t, const char *file, unsigned line, const char *section, const char *option,
                    bool unsupported, const char *fmt, ...) {
        if (!t)
                return 0;
        TunedNote *n = realloc(t->notes, (t->n_notes + 1) * sizeof(TunedNote));
        if (!n)
                return -ENOMEM;
        t->notes = n;
        TunedNote *x = &t->notes[t->n_notes];
        *x = (TunedNote) { .file = strdup(strempty(file)),
                           .line = line,
                           .section = strdup(strempty(section)),
                           .option = option ? strdup(option) : NULL,
                           .unsupported = unsupported };
        va_list ap;
        va_start(ap, fmt);
        if (vasprintf(&x->message, fmt, ap) < 0)
                x->message = NULL;
        va_end(ap);
        t->n_notes++;
        if (unsupported)
                t->n_unsupported++;
        if (!x->file || !x->section || (option && !x->option) || !x->message)
                return -ENOMEM;
        return 0;
}

#define EV_NOTE(ev, unsupported, ...) \
        ((ev) ? note_add((ev)->out, (ev)->file, (ev)->line, (ev)->section, (ev)->option, (unsupported), __VA_ARGS__) \
              : 0)

static const char *var_get(Eval *ev, const char *name, size_t n) {
        for (size_t i = ev ? ev->n_vars : 0; i > 0; i--)
                if (strlen(ev->names[i - 1]) == n && strncmp(ev->names[i - 1], name, n) == 0)
                        return ev->values[i - 1];
        return NULL;
}

static bool word_char(char c) {
        return isalnum((unsigned char) c) || c == '_';
}

/* ${name} of a defined variable replaced in one pass (not preceded by '\'), then "\${name}"
 * unescaped. */
/* Variables that refer to others twice double at each step: a value is bounded (a longer one is
 * an error). */
#define TUNED_VALUE_MAX (64U * 1024U)

static char *expand_static(Eval *ev, const char *v) {
        StrBuf b = {};
        strbuf_append(&b, "");
        for (const char *p = v; *p && b.len <= TUNED_VALUE_MAX;) {
                if (p[0] == '$' && p[1] == '{' && (p == v || p[-1] != '\\')) {
                        size_t n = 0;
                        while (word_char(p[2 + n]))
                                n++;
                        const char *val = n > 0 && p[2 + n] == '}' ? var_get(ev, p + 2, n) : NULL;
                        if (val) {
                                strbuf_append(&b, val);
                                p += n + 3;
                                continue;
                        }
                }
                char c[2] = { *p++, 0 };
                strbuf_append(&b, c);
        }
        _cleanup_free_ char *s = strbuf_steal(&b);
        if (!s)
                return NULL;
        /* "\${word}" → "${word}" */
        strbuf_append(&b, "");
        for (const char *p = s; *p;) {
                if (p[0] == '\\' && p[1] == '$' && p[2] == '{') {
                        size_t n = 0;
                        while (word_char(p[3 + n]))
                                n++;
                        if (n > 0 && p[3 + n] == '}') {
                                p++;
                                continue;
                        }
                }
                char c[2] = { *p++, 0 };
                strbuf_append(&b, c);
        }
        return strbuf_steal(&b);
}

/* Arguments split at ':' not preceded by '\'; "\:" becomes ':'. */
static char **split_args(const char *s, size_t n) {
        char **l = NULL;
        StrBuf b = {};
        strbuf_append(&b, "");
        for (size_t i = 0;; i++) {
                if (i == n || (s[i] == ':' && (i == 0 || s[i - 1] != '\\'))) {
                        char *a = strbuf_steal(&b);
                        if (!a || strv_push(&l, a) < 0) {
                                free(a);
                                strv_free(l);
                                return NULL;
                        }
                        strbuf_append(&b, "");
                        if (i == n)
                                break;
                        continue;
                }
                if (s[i] == '\\' && i + 1 < n && s[i + 1] == ':')
                        continue;
                char c[2] = { s[i], 0 };
                strbuf_append(&b, c);
        }
        strbuf_done(&b);
        return l;
}

static char *join(char **args, const char *sep) {
        StrBuf b = {};
        strbuf_append(&b, "");
        for (char **a = args; a && *a; a++)
                strbuf_appendf(&b, "%s%s", a == args ? "" : sep, *a);
        return strbuf_steal(&b);
}

static int regex_search(Eval *ev, const char *re, const char *text, bool multiline, bool *ret) {
        regex_t rx;
        if (regcomp(&rx, re, REG_EXTENDED | REG_NOSUB | (multiline ? REG_NEWLINE : 0)) != 0) {
                (void) EV_NOTE(ev, true, "regular expression '%s' is not one rtpartctl can evaluate", re);
                return -EINVAL;
        }
        *ret = regexec(&rx, text, 0, NULL, 0) == 0;
        regfree(&rx);
        return 0;
}

typedef struct Function {
        const char *name;
        int min, max; /* argument counts; max 0: any */
} Function;

static const Function functions[] = {
        { "assertion", 3, 3 },
        { "assertion_non_equal", 3, 3 },
        { "calc_isolated_cores", 0, 1 },
        { "check_net_queue_count", 1, 1 },
        { "cpuinfo_check", 0, 0 },
        { "cpulist2devs", 0, 0 },
        { "cpulist2hex", 0, 0 },
        { "cpulist2hex_invert", 0, 0 },
        { "cpulist_invert", 0, 0 },
        { "cpulist_online", 0, 0 },
        { "cpulist_pack", 0, 0 },
        { "cpulist_present", 0, 0 },
        { "cpulist_unpack", 0, 0 },
        { "exec", 1, 0 },
        { "hex2cpulist", 1, 1 },
        { "kb2s", 1, 1 },
        { "regex_search_ternary", 4, 4 },
        { "s2kb", 1, 1 },
        { "strip", 0, 0 },
        { "virt_check", 2, 2 },
};

/* "1-3" style, as cpulist_pack gives it. */
static char *format_packed(const CpuSet *s) {
        return cpu_set_format_list(s);
}

/* One function call: 1 and *ret its value, 0 when the call is left as written (tuned's None), a
 * negative errno (-EINVAL: a failed assertion, in ev->error). */
static int call_function(Eval *ev, const char *name, char **args, char **ret) {
        size_t n = strv_length(args);
        const Function *f = NULL;
        CpuSet s;
        _cleanup_free_ char *joined = NULL;

        for (size_t i = 0; i < ELEMENTSOF(functions); i++)
                if (streq(functions[i].name, name))
                        f = &functions[i];
        if (!f) {
                (void) EV_NOTE(ev, true, "function '%s' is not one tuned 2.20 has; left as written", name);
                return 0;
        }
        if ((int) n < f->min || (f->max > 0 && (int) n > f->max)) {
                /* tuned logs this and goes on; so does the import. */
                (void) EV_NOTE(ev, false,
                               "function '%s' called with %zu arguments (an argument with an unescaped ':'?); "
                               "left as written, as tuned does",
                               name, n);
                return 0;
        }
#define RET(x) \
        do { \
                if (!(*ret = (x))) \
                        return -ENOMEM; \
                return 1; \
        } while (0)
        if (streq(name, "assertion") || streq(name, "assertion_non_equal")) {
                bool eq = streq(args[1], args[2]);
                if (eq != streq(name, "assertion"))
                        return error_set(ev ? ev->error : NULL, ev ? ev->file : "", ev ? ev->line : 0,
                                         "assertion '%s' failed: '%s' %s '%s'%s", args[0], args[1],
                                         eq ? "==" : "!=", args[2],
                                         strstr(args[0], "isolated_cores")
                                                 ? "; set isolated_cores in the profile's variables file"
                                                 : "");
                return 0;
        }
        if (streq(name, "calc_isolated_cores")) {
                long k = 1;
                if (n > 0 && (!py_int(args[0], strlen(args[0]), &k) || k < 0 || !isdigit((unsigned char) args[0][0])))
                        return 0;
                if (!ev || !ev->env->split)
                        return 0;
                ev->env->split(ev->env->userdata, (unsigned) k, &s);
                ev->calc_used = true;
                ev->calc_n = (unsigned) k;
                ev->calc_set = s;
                RET(format_unpacked(&s));
        }
        if (streq(name, "check_net_queue_count")) {
                bool digits = *args[0] != 0;
                for (const char *p = args[0]; *p; p++)
                        digits = digits && isdigit((unsigned char) *p);
                if (digits)
                        RET(strdup(args[0]));
                if (asprintf(ret, "%u", ev ? cpu_set_count(&ev->env->online) : 1) < 0)
                        return -ENOMEM;
                return 1;
        }
        if (streq(name, "cpuinfo_check")) {
                _cleanup_free_ char *cpuinfo = NULL;
                if (!ev || ev->env->read_file(ev->env->userdata, "/proc/cpuinfo", true, &cpuinfo) < 0)
                        cpuinfo = strdup("");
                if (!cpuinfo)
                        return -ENOMEM;
                (void) EV_NOTE(ev, false, "cpuinfo_check evaluated on this host's /proc/cpuinfo");
                for (size_t i = 0; i + 1 < n; i += 2) {
                        bool m;
                        if (regex_search(ev, args[i], cpuinfo, true, &m) < 0)
                                return 0;
                        if (m)
                                RET(strdup(args[i + 1]));
                }
                RET(strdup(n % 2 ? args[n - 1] : ""));
        }
        if (streq(name, "exec")) {
                (void) EV_NOTE(ev, true, "${f:exec:%s...}: rtpartctl runs no commands from a profile; taken as \"\"",
                               args[0]);
                RET(strdup(""));
        }
        if (streq(name, "virt_check")) {
                (void) EV_NOTE(ev, true,
                               "virt_check runs virt-what, and an rtpart profile has no condition on "
                               "virtualization; took the bare-metal branch '%s'",
                               args[1]);
                RET(strdup(args[1]));
        }
        if (streq(name, "regex_search_ternary")) {
                bool m;
                if (regex_search(ev, args[1], args[0], false, &m) < 0)
                        return 0;
                RET(strdup(m ? args[2] : args[3]));
        }
        if (streq(name, "strip")) {
                _cleanup_free_ char *j = join(args, "");
                if (!j)
                        return -ENOMEM;
                RET(strip_dup(j, strlen(j)));
        }
        if (streq(name, "s2kb") || streq(name, "kb2s")) {
                long v;
                if (!py_int(args[0], strlen(args[0]), &v) || v > LONG_MAX / 2 || v < LONG_MIN / 2)
                        return 0;
                /* s2kb rounds half to even, as Python's round() does. */
                long r = streq(name, "kb2s") ? v * 2 : (v % 2 == 0 ? v / 2 : ((v / 2) % 2 == 0 ? v / 2 : v / 2 + 1));
                if (asprintf(ret, "%ld", r) < 0)
                        return -ENOMEM;
                return 1;
        }
        if (streq(name, "hex2cpulist")) {
                cpu_set_zero(&s);
                hex_add(&s, args[0], strlen(args[0]));
                RET(format_unpacked(&s));
        }

        /* The CPU list functions: their arguments are one list, joined by ",," (a mask may end at
         * ",,") or by "," (cpulist_online, cpulist2devs). */
        bool single = streq(name, "cpulist_online") || streq(name, "cpulist2devs");
        joined = join(args, single ? "," : ",,");
        if (!joined)
                return -ENOMEM;
        (void) tuned_cpulist_parse(joined, &s);
        CpuSet online = ev ? ev->env->online : (CpuSet) {};
        if (streq(name, "cpulist_unpack"))
                RET(format_unpacked(&s));
        if (streq(name, "cpulist_pack"))
                RET(format_packed(&s));
        if (streq(name, "cpulist2hex"))
                RET(format_hex(&s));
        if (streq(name, "cpulist_invert") || streq(name, "cpulist2hex_invert")) {
                CpuSet inv = online;
                cpu_set_andnot(&inv, &s);
                RET(streq(name, "cpulist_invert") ? format_unpacked(&inv) : format_hex(&inv));
        }
        if (streq(name, "cpulist_online") || streq(name, "cpulist_present")) {
                CpuSet present = ev ? ev->env->present : (CpuSet) {};
                cpu_set_and(&s, streq(name, "cpulist_online") ? &online : &present);
                RET(format_unpacked(&s));
        }
        if (streq(name, "cpulist2devs")) {
                StrBuf b = {};
                strbuf_append(&b, "");
                CPU_SET_FOREACH (c, &s)
                        strbuf_appendf(&b, "%scpu%d", b.len ? "," : "", c);
                RET(strbuf_steal(&b));
        }
#undef RET
        return 0;
}

typedef struct Frame {
        bool esc;
        size_t pos;
} Frame;

/* The ${f:...} calls, innermost first, left to right; "\${" is not a call. Then the first
 * "\${f:" is unescaped, as tuned does. ev NULL: no host (the include line at load). */
static int expand_functions(Eval *ev, const char *value, char **ret) {
        char *s = strdup(value);
        size_t len = strlen(s);
        Frame *stack = NULL;
        size_t n_stack = 0, cap = 0;
        bool esc = false;
        int r = 0;

        if (!s)
                return -ENOMEM;
        for (size_t i = 0; i < len; i++) {
                if (s[i] == '}') {
                        if (n_stack == 0)
                                break; /* tuned stops here: the rest is as written */
                        Frame fr = stack[--n_stack];
                        if (!fr.esc && strncmp(s + fr.pos, "${f:", 4) == 0) {
                                _cleanup_strv_free_ char **a = split_args(s + fr.pos + 2, i - fr.pos - 2);
                                if (!a) {
                                        r = -ENOMEM;
                                        break;
                                }
                                _cleanup_free_ char *out = NULL;
                                bool word = a[1] && *a[1];
                                for (const char *p = a[1]; word && *p; p++)
                                        word = word_char(*p);
                                if (!word)
                                        goto next;
                                r = call_function(ev, a[1], a + 2, &out);
                                if (r < 0)
                                        break;
                                r = 0;
                                if (!out)
                                        goto next;
                                size_t ol = strlen(out), nl = len - (i - fr.pos + 1) + ol;
                                char *ns = malloc(nl + 1);
                                if (!ns) {
                                        r = -ENOMEM;
                                        break;
                                }
                                memcpy(ns, s, fr.pos);
                                memcpy(ns + fr.pos, out, ol);
                                memcpy(ns + fr.pos + ol, s + i + 1, len - i - 1);
                                ns[nl] = 0;
                                free(s);
                                s = ns;
                                len = nl;
                                /* Go on after the value, as after its last character. */
                                esc = ol > 0 ? out[ol - 1] == '\\' : fr.pos > 0 && s[fr.pos - 1] == '\\';
                                i = fr.pos + ol - 1; /* wraps to SIZE_MAX for "" at 0: i++ makes it 0 */
                                continue;
                        }
                } else if (s[i] == '$' && s[i + 1] == '{') {
                        if (n_stack == cap) {
                                Frame *nf = realloc(stack, (cap = cap * 2 + 8) * sizeof(Frame));
                                if (!nf) {
                                        r = -ENOMEM;
                                        break;
                                }
                                stack = nf;
                        }
                        stack[n_stack++] = (Frame) { esc, i };
                }
        next:
                esc = s[i] == '\\';
        }
        free(stack);
        if (r < 0) {
                free(s);
                return r;
        }
        /* "\${f:...}" → "${f:...}", the first one that a '}' closes later. */
        char *m = strstr(s, "\\${f:");
        if (m && strchr(m, '}'))
                memmove(m, m + 1, strlen(m));
        *ret = s;
        return 0;
}

static int expand(Eval *ev, const char *value, char **ret) {
        _cleanup_free_ char *st = expand_static(ev, value), *out = NULL;
        if (!st)
                return -ENOMEM;
        if (strlen(st) <= TUNED_VALUE_MAX) {
                int r = expand_functions(ev, st, &out);
                if (r < 0)
                        return r;
        }
        if (!out || strlen(out) > TUNED_VALUE_MAX)
                return error_set(ev->error, ev->file, ev->line, "the value of %s expands to more than %u bytes",
                                 strempty(ev->option), TUNED_VALUE_MAX);
        *ret = TAKE_PTR(out);
        return 0;
}

static int var_add(Eval *ev, const char *name, const char *value, const char *file, unsigned line) {
        bool ok = *name != 0;
        for (const char *p = name; *p; p++)
                ok = ok && word_char(*p);
        ev->file = file;
        ev->line = line;
        ev->section = "variables";
        ev->option = name;
        if (!ok)
                return note_add(ev->out, file, line, "variables", name, true,
                                "a variable's name is letters, digits and '_' only; ignored, as tuned does");
        _cleanup_free_ char *v = NULL;
        int r = expand(ev, value, &v);
        if (r < 0)
                return r;
        char **nn = realloc(ev->names, (ev->n_vars + 1) * sizeof(char *));
        if (!nn)
                return -ENOMEM;
        ev->names = nn;
        char **nv = realloc(ev->values, (ev->n_vars + 1) * sizeof(char *));
        if (!nv)
                return -ENOMEM;
        ev->values = nv;
        if (!(ev->names[ev->n_vars] = strdup(name)))
                return -ENOMEM;
        ev->values[ev->n_vars++] = TAKE_PTR(v);
        return 0;
}

static int load_variables(Eval *ev, Loader *l, TunedSection *vars) {
        for (size_t i = 0; vars && i < vars->n_options; i++) {
                TunedOption *o = &vars->options[i];
                int r;
                if (!o->value)
                        continue;
                if (!streq(o->key, "include")) {
                        if ((r = var_add(ev, o->key, o->value, o->file, o->line)) < 0)
                                return r;
                        continue;
                }
                _cleanup_free_ char *text = NULL;
                r = l->env->read_file(l->env->userdata, o->value, /* host_path= */ true, &text);
                if (r == -ENOENT) {
                        /* tuned logs this and goes on without the file. */
                        if ((r = note_add(ev->out, o->file, o->line, "variables", "include", true,
                                          "variables file %s not found; its variables are undefined", o->value)) < 0)
                                return r;
                        continue;
                }
                if (r < 0) {
                        (void) error_set(l->error, o->value, 0, "cannot read: %s", strerror(-r));
                        return r;
                }
                if (strv_extend(&l->files, o->value) < 0)
                        return -ENOMEM;
                _cleanup_(tuned_ini_done) TunedIni vi = {};
                if ((r = tuned_ini_parse(text, o->value, /* allow_no_value= */ true, &vi, l->error)) < 0)
                        return r;
                for (size_t s = 0; s < vi.n_sections; s++)
                        for (size_t k = 0; k < vi.sections[s].n_options; k++) {
                                TunedOption *v = &vi.sections[s].options[k];
                                if (v->value && (r = var_add(ev, v->key, v->value, v->file, v->line)) < 0)
                                        return r;
                        }
        }
        return 0;
}

/* ---- the mapping onto rtpart's profile ---- */

typedef struct Mapper {
        Eval *ev;
        json_t *profile;
        bool have_isolated;
        CpuSet isolated, housekeeping, online;
        json_t *kthread_rules; /* collected, then ordered */
} Mapper;

/* Sets key (NULL parent or value: out of memory): 0 or -ENOMEM. */
#define JSET(o, k, v) (json_object_set_new((o), (k), (v)) < 0 ? -ENOMEM : 0)

static json_t *obj(json_t *parent, const char *key) {
        json_t *o = json_object_get(parent, key);
        if (!o) {
                o = json_object();
                if (!o || json_object_set_new(parent, key, o) < 0)
                        return NULL;
        }
        return o;
}

/* A string of the profile that rtpart must not expand: "$$" for a "$" before "{" or "$". */
static json_t *literal(const char *s) {
        StrBuf b = {};
        strbuf_append(&b, "");
        for (const char *p = s; *p; p++) {
                if (*p == '$' && (p[1] == '{' || p[1] == '$'))
                        strbuf_append(&b, "$");
                char c[2] = { *p, 0 };
                strbuf_append(&b, c);
        }
        _cleanup_free_ char *t = strbuf_steal(&b);
        return t ? json_string(t) : NULL;
}

/* An integer where the value is one, as rtpart's shipped profiles write them; else a string. */
static json_t *scalar(const char *v) {
        long n;
        const char *p = v;
        if (*p == '-')
                p++;
        bool digits = *p && strlen(p) < 18 && (p[0] != '0' || p[1] == 0);
        for (const char *q = p; digits && *q; q++)
                digits = isdigit((unsigned char) *q);
        if (digits && py_int(v, strlen(v), &n))
                return json_integer(n);
        return literal(v);
}

typedef enum CpuForm {
        FORM_CLASS, /* "isolated": a CPU expression */
        FORM_LIST,  /* "${isolated}": a string with a CPU list */
        FORM_MASK,  /* "${isolated_mask}" */
} CpuForm;

/* The CPUs s names, in rtpart's own terms where it is one of the profile's classes. */
static char *cpu_symbol(Mapper *m, const CpuSet *s, CpuForm form) {
        const char *cls = NULL;
        if (m->have_isolated && cpu_set_equal(s, &m->isolated))
                cls = "isolated";
        else if (m->have_isolated && cpu_set_equal(s, &m->housekeeping))
                cls = "housekeeping";
        else if (cpu_set_equal(s, &m->online))
                cls = form == FORM_CLASS ? "all" : "online";
        if (cls) {
                char *r = NULL;
                if (form == FORM_CLASS)
                        return strdup(cls);
                if (asprintf(&r, "${%s%s}", cls, form == FORM_MASK ? "_mask" : "") < 0)
                        return NULL;
                return r;
        }
        if (form == FORM_MASK)
                return format_hex(s);
        return cpu_set_format_list(s);
}

static int set_cpus(Mapper *m, json_t *o, const char *key, const char *value, CpuForm form) {
        CpuSet s;
        if (!tuned_cpulist_parse(value, &s) || cpu_set_is_empty(&s))
                return EV_NOTE(m->ev, true, "'%s' is not a CPU list rtpart can use", value);
        _cleanup_free_ char *sym = cpu_symbol(m, &s, form);
        if (!sym)
                return -ENOMEM;
        return JSET(o, key, json_string(sym));
}

#define UNSUPPORTED(m, ...) EV_NOTE((m)->ev, true, __VA_ARGS__)
#define NOTE(m, ...) EV_NOTE((m)->ev, false, __VA_ARGS__)

static bool boot_value_ok(const char *v) {
        for (const char *p = v; *p; p++)
                if (!isalnum((unsigned char) *p) && !strchr("_.,:=/+@%-", *p))
                        return false;
        return true;
}

static bool is_cpu_param(const char *name) {
        static const char * const names[] = { "nohz_full",    "rcu_nocbs", "irqaffinity",
                                              "kthread_cpus", "isolcpus",  "rcu_nocb_poll_cpus" };
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (streq(names[i], name))
                        return true;
        return false;
}

static int map_boot_arg(Mapper *m, json_t *args, const char *tok) {
        const char *eq = strchr(tok, '=');
        _cleanup_free_ char *name = eq ? strndup(tok, (size_t) (eq - tok)) : strdup(tok);
        if (!name)
                return -ENOMEM;
        if (!*name || !boot_value_ok(name) || (eq && (!eq[1] || !boot_value_ok(eq + 1))))
                return UNSUPPORTED(m,
                                   "kernel argument '%s': rtpart's boot arguments are name=value with letters, "
                                   "digits and _.,:=/+@%%- only",
                                   tok);
        if (!eq)
                return JSET(args, name, json_true());

        const char *v = eq + 1;
        if (is_cpu_param(name)) {
                /* isolcpus=[flags,]LIST: the flags are words. */
                const char *list = v;
                for (const char *p = v;;) {
                        const char *c = strchr(p, ',');
                        if (!c || !isalpha((unsigned char) *p))
                                break;
                        list = c + 1;
                        p = c + 1;
                }
                CpuSet s;
                if (tuned_cpulist_parse(list, &s) && !cpu_set_is_empty(&s)) {
                        _cleanup_free_ char *sym = cpu_symbol(m, &s, FORM_LIST), *full = NULL;
                        if (!sym || asprintf(&full, "%.*s%s", (int) (list - v), v, sym) < 0)
                                return -ENOMEM;
                        return JSET(args, name, json_string(full));
                }
        } else if (streq(name, "tuned.non_isolcpus")) {
                CpuSet s = {};
                hex_add(&s, v, strlen(v));
                _cleanup_free_ char *sym = cpu_symbol(m, &s, FORM_MASK);
                if (!sym)
                        return -ENOMEM;
                (void) NOTE(m, "tuned.non_isolcpus= is read by tuned's initramfs hook only; kept as an argument");
                return JSET(args, name, json_string(sym));
        }
        return JSET(args, name, json_string(v));
}

/* The kernel command line of every cmdline* option in order: "+" appends, "-" takes away the
 * arguments written after it, anything else appends. */
static int map_bootloader(Mapper *m, TunedSection *u) {
        _cleanup_strv_free_ char **line = NULL;
        for (size_t i = 0; i < u->n_options; i++) {
                TunedOption *o = &u->options[i];
                m->ev->file = o->file;
                m->ev->line = o->line;
                m->ev->option = o->key;
                if (!startswith(o->key, "cmdline")) {
                        if (streq(o->key, "priority") || unit_key(o->key))
                                continue;
                        int r = UNSUPPORTED(m,
                                            "%s: rtpart edits the kernel command line only; initrd images and "
                                            "bootloader files are not its business",
                                            o->key);
                        if (r < 0)
                                return r;
                        continue;
                }
                _cleanup_free_ char *v = NULL;
                int r = expand(m->ev, strempty(o->value), &v);
                if (r < 0)
                        return r;
                if (!*v)
                        continue;
                bool remove = v[0] == '-';
                const char *rest = v;
                if (v[0] == '+' || v[0] == '-' || (v[0] == '\\' && strchr("\\+-", v[1] ?: 'x')))
                        rest = v + 1;
                _cleanup_free_ char *copy = strdup(rest);
                if (!copy)
                        return -ENOMEM;
                for (char *sp = NULL, *tok = strtok_r(copy, " \t\n", &sp); tok; tok = strtok_r(NULL, " \t\n", &sp)) {
                        if (!remove) {
                                if (strv_extend(&line, tok) < 0)
                                        return -ENOMEM;
                                continue;
                        }
                        for (size_t k = strv_length(line); k > 0; k--)
                                if (streq(line[k - 1], tok)) {
                                        free(line[k - 1]);
                                        memmove(&line[k - 1], &line[k], (strv_length(line) - k + 1) * sizeof(char *));
                                }
                }
        }
        if (strv_length(line) == 0)
                return 0;
        json_t *args = obj(obj(m->profile, "boot"), "args");
        if (!args)
                return -ENOMEM;
        for (char **t = line; *t; t++) {
                int r = map_boot_arg(m, args, *t);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* A Python regular expression over `ps -eo cmd` as a shell pattern over a kernel thread's name
 * ("^\[ksoftirqd" → "ksoftirqd*"); NULL where there is no such pattern. *ret_kthread: it names
 * kernel threads ("[name]"). */
static char *regex_to_glob(const char *re, bool *ret_kthread) {
        StrBuf b = {};
        const char *p = re;
        bool anchored = false, end = false;
        *ret_kthread = false;
        if (*p == '^')
                p++, anchored = true;
        if (startswith(p, "\\[")) {
                p += 2;
                *ret_kthread = anchored = true;
        }
        strbuf_append(&b, anchored ? "" : "*");
        for (; *p; p++) {
                if (p[0] == '.' && p[1] == '*') {
                        if (!(b.len > 0 && b.s[b.len - 1] == '*'))
                                strbuf_append(&b, "*");
                        p++;
                } else if (*p == '.')
                        strbuf_append(&b, "?");
                else if (*p == '\\' && p[1] == ']' && *ret_kthread && (p[2] == 0 || (p[2] == '$' && p[3] == 0))) {
                        end = true;
                        break;
                } else if (*p == '$' && p[1] == 0) {
                        end = true;
                        break;
                } else if (*p == '\\' && p[1] && strchr("[].-/\\^$", p[1])) {
                        if (strchr("[]", p[1])) {
                                strbuf_done(&b);
                                return NULL;
                        }
                        char c[2] = { *++p, 0 };
                        strbuf_append(&b, c);
                } else if (isalnum((unsigned char) *p) || strchr("_-/:@ ", *p)) {
                        char c[2] = { *p, 0 };
                        strbuf_append(&b, c);
                } else {
                        strbuf_done(&b);
                        return NULL;
                }
        }
        if (!end && !(b.len > 0 && b.s[b.len - 1] == '*'))
                strbuf_append(&b, "*");
        return strbuf_steal(&b);
}

typedef struct Rule {
        long prio;
        size_t order;
        json_t *rule;
} Rule;

static int rule_cmp(const void *a, const void *b) {
        const Rule *x = a, *y = b;
        /* Later rules win in tuned, the first in rtpart: highest rule_prio, latest first. */
        if (x->prio != y->prio)
                return x->prio > y->prio ? -1 : 1;
        return x->order > y->order ? -1 : x->order < y->order;
}

static int map_group(Mapper *m, const char *group, const char *v, Rule *ret) {
        /* rule_prio:policy:priority:affinity:regex; the regex may hold ':'. */
        char *f[5] = {};
        _cleanup_free_ char *copy = strdup(v);
        if (!copy)
                return -ENOMEM;
        char *p = copy;
        for (int i = 0; i < 4; i++) {
                char *c = strchr(p, ':');
                if (!c)
                        return UNSUPPORTED(m, "'%s' is not rule_prio:policy:priority:affinity:regex", v);
                *c = 0;
                f[i] = p;
                p = c + 1;
        }
        f[4] = p;
        long prio = 0, rprio = 0;
        if (!py_int(f[0], strlen(f[0]), &rprio))
                return UNSUPPORTED(m, "rule priority '%s' is not a number", f[0]);
        bool kthread;
        _cleanup_free_ char *glob = regex_to_glob(f[4], &kthread);
        if (!glob)
                return UNSUPPORTED(m, "regular expression '%s' has no shell-pattern equivalent over thread names",
                                   f[4]);
        if (!kthread)
                return UNSUPPORTED(m,
                                   "group.%s matches user processes ('%s'); rtpart sets the scheduling of kernel "
                                   "threads only (kthreads.rules): set it where the process is started (chrt, "
                                   "systemd's CPUSchedulingPolicy=)",
                                   group, f[4]);
        static const struct {
                const char *tuned, *rtpart;
        } policies[] = { { "f", "fifo" }, { "r", "rr" }, { "o", "other" }, { "b", "batch" }, { "i", "idle" } };
        const char *policy = NULL;
        for (size_t i = 0; i < ELEMENTSOF(policies); i++)
                if (streq(f[1], policies[i].tuned))
                        policy = policies[i].rtpart;
        if (!policy && !streq(f[1], "*"))
                return UNSUPPORTED(m, "scheduling policy '%s' is none of f, r, o, b, i, *", f[1]);
        json_t *rule = json_object();
        if (!rule)
                return -ENOMEM;
        int k = json_object_set_new(rule, "match", json_string(glob));
        if (policy) {
                k |= json_object_set_new(rule, "policy", json_string(policy));
                if (!py_int(f[2], strlen(f[2]), &prio) || prio < 0 || prio > 99) {
                        json_decref(rule);
                        return UNSUPPORTED(m, "priority '%s' is not 0 to 99", f[2]);
                }
                if (streq(policy, "fifo") || streq(policy, "rr") || prio > 0)
                        k |= json_object_set_new(rule, "priority", json_integer(prio));
        }
        if (!streq(f[3], "*")) {
                if (startswith(f[3], "cgroup.")) {
                        json_decref(rule);
                        return UNSUPPORTED(m, "affinity by cgroup ('%s') is not expressible in kthreads.rules", f[3]);
                }
                CpuSet s = {};
                hex_add(&s, f[3], strlen(f[3]));
                _cleanup_free_ char *sym = cpu_symbol(m, &s, FORM_CLASS);
                if (!sym || cpu_set_is_empty(&s)) {
                        json_decref(rule);
                        return sym ? UNSUPPORTED(m, "affinity '%s' is not a CPU mask", f[3]) : -ENOMEM;
                }
                k |= json_object_set_new(rule, "cpus", json_string(sym));
        }
        if (k < 0) {
                json_decref(rule);
                return -ENOMEM;
        }
        if (json_object_size(rule) == 1) {
                json_decref(rule);
                return NOTE(m, "group.%s changes nothing (policy and affinity '*')", group);
        }
        ret->prio = rprio;
        ret->rule = rule;
        return 1;
}

static int map_scheduler(Mapper *m, TunedSection *u) {
        _cleanup_free_ Rule *rules = NULL;
        size_t n_rules = 0;
        int r = 0;

        for (size_t i = 0; i < u->n_options; i++) {
                TunedOption *o = &u->options[i];
                _cleanup_free_ char *v = NULL;
                m->ev->file = o->file;
                m->ev->line = o->line;
                m->ev->option = o->key;
                if (unit_key(o->key))
                        continue;
                if ((r = expand(m->ev, strempty(o->value), &v)) < 0)
                        break;
                if (streq(o->key, "isolated_cores")) {
                        if (!*v)
                                continue;
                        r = NOTE(m,
                                 "isolated CPUs: IRQs, the default IRQ affinity and every movable kernel thread go to "
                                 "the housekeeping CPUs; user processes are not moved (tuned moves them once): put "
                                 "services on housekeeping CPUs with cpuset.confine where wanted");
                } else if (startswith(o->key, "group.")) {
                        if (!*v)
                                continue;
                        Rule rule = { .order = i };
                        r = map_group(m, o->key + 6, v, &rule);
                        if (r > 0) {
                                Rule *nr = realloc(rules, (n_rules + 1) * sizeof(Rule));
                                if (!nr) {
                                        json_decref(rule.rule);
                                        r = -ENOMEM;
                                        break;
                                }
                                rules = nr;
                                rules[n_rules++] = rule;
                                r = 0;
                        }
                } else if (streq(o->key, "ps_blacklist")) {
                        json_t *allow = NULL;
                        _cleanup_free_ char *copy = strdup(v);
                        if (!copy) {
                                r = -ENOMEM;
                                break;
                        }
                        for (char *sp = NULL, *tok = strtok_r(copy, ";", &sp); tok && r >= 0;
                             tok = strtok_r(NULL, ";", &sp)) {
                                bool kthread;
                                _cleanup_free_ char *glob = regex_to_glob(tok, &kthread);
                                if (!glob)
                                        r = UNSUPPORTED(m, "ps_blacklist entry '%s' has no shell-pattern equivalent",
                                                        tok);
                                else if (kthread)
                                        r = NOTE(m,
                                                 "ps_blacklist entry '%s' is a kernel thread: rtpart moves only the "
                                                 "kernel threads the kernel lets move",
                                                 tok);
                                else {
                                        json_t *drift = obj(m->profile, "drift");
                                        if (!drift) {
                                                r = -ENOMEM;
                                                break;
                                        }
                                        allow = json_object_get(drift, "task_allow");
                                        if (!json_is_array(allow) &&
                                            (r = JSET(drift, "task_allow", allow = json_array())) < 0)
                                                break;
                                        if (json_array_append_new(allow, json_string(glob)) < 0) {
                                                r = -ENOMEM;
                                                break;
                                        }
                                }
                        }
                        if (r >= 0 && allow)
                                r = NOTE(m,
                                         "ps_blacklist: the processes tuned leaves on isolated CPUs are the ones "
                                         "rtpartd does not report there (drift.task_allow), matched by thread "
                                         "name where tuned matches the command line");
                } else if (streq(o->key, "default_irq_smp_affinity")) {
                        if (streq(v, "calc"))
                                continue;
                        if (streq(v, "ignore"))
                                (void) json_object_del(obj(m->profile, "irq"), "default_affinity");
                        else
                                r = set_cpus(m, obj(m->profile, "irq"), "default_affinity", v, FORM_CLASS);
                } else if (streq(o->key, "runtime") || streq(o->key, "perf_process_fork") ||
                           streq(o->key, "perf_mmap_pages"))
                        r = NOTE(m, "tuned's process monitor: rtpartd watches kernel threads itself");
                else
                        r = UNSUPPORTED(m,
                                        "%s is not one of the scheduler settings rtpart has (isolated_cores, group.*, "
                                        "ps_blacklist, default_irq_smp_affinity)",
                                        o->key);
                if (r < 0)
                        break;
        }
        if (r >= 0 && n_rules > 0) {
                qsort(rules, n_rules, sizeof(Rule), rule_cmp);
                json_t *kt = obj(m->profile, "kthreads"), *arr = json_array();
                if (!kt || !arr) {
                        json_decref(arr);
                        r = -ENOMEM;
                } else {
                        for (size_t i = 0; i < n_rules; i++)
                                json_array_append(arr, rules[i].rule);
                        r = JSET(kt, "rules", arr);
                }
        }
        for (size_t i = 0; i < n_rules; i++)
                json_decref(rules[i].rule);
        return r < 0 ? r : 0;
}

static const char *first_alternative(Mapper *m, const char *v, char *buf, size_t size) {
        const char *bar = strchr(v, '|');
        if (!bar)
                return v;
        snprintf(buf, size, "%.*s", (int) (bar - v), v);
        (void) NOTE(m, "'%s': tuned takes the first the host offers; the profile takes '%s'", v, buf);
        return buf;
}

static int map_cpu(Mapper *m, TunedSection *u) {
        json_t *cpu = obj(m->profile, "cpu");
        if (!cpu)
                return -ENOMEM;
        for (size_t i = 0; i < u->n_options; i++) {
                TunedOption *o = &u->options[i];
                _cleanup_free_ char *v = NULL;
                char buf[256];
                int r;
                m->ev->file = o->file;
                m->ev->line = o->line;
                m->ev->option = o->key;
                if (streq(o->key, "type") || streq(o->key, "enabled") || streq(o->key, "priority"))
                        continue;
                if ((r = expand(m->ev, strempty(o->value), &v)) < 0)
                        return r;
                if (streq(o->key, "devices")) {
                        if (streq(v, "*"))
                                continue;
                        CpuSet s = {};
                        bool ok = true;
                        _cleanup_free_ char *copy = strdup(v);
                        if (!copy)
                                return -ENOMEM;
                        for (char *sp = NULL, *t = strtok_r(copy, ", ", &sp); t && ok; t = strtok_r(NULL, ", ", &sp)) {
                                long c;
                                ok = startswith(t, "cpu") && py_int(t + 3, strlen(t + 3), &c) && c >= 0;
                                if (ok)
                                        add_range(&s, c, c);
                        }
                        if (!ok || cpu_set_is_empty(&s))
                                r = UNSUPPORTED(m, "devices '%s' is not a list of cpuN", v);
                        else {
                                _cleanup_free_ char *sym = cpu_symbol(m, &s, FORM_CLASS);
                                r = sym ? JSET(cpu, "cpus", json_string(sym)) : -ENOMEM;
                        }
                } else if (streq(o->key, "governor"))
                        r = JSET(cpu, "governor", literal(first_alternative(m, v, buf, sizeof buf)));
                else if (streq(o->key, "energy_perf_bias")) {
                        const char *e = first_alternative(m, v, buf, sizeof buf);
                        if (streq(e, "powersave"))
                                e = "power";
                        r = JSET(cpu, "energy_perf_bias", literal(e));
                } else if (streq(o->key, "force_latency")) {
                        long us;
                        const char *bar = strchr(v, '|');
                        if (py_int(v, strlen(v), &us) && us >= 0)
                                r = JSET(cpu, "pm_qos_latency_us", json_integer(us));
                        else if (startswith(v, "cstate.") && bar && py_int(bar + 1, strlen(bar + 1), &us) && us >= 0) {
                                r = JSET(cpu, "pm_qos_latency_us", json_integer(us));
                                if (r >= 0)
                                        r = NOTE(m,
                                                 "'%s': tuned reads the C-state's exit latency on the host it runs on; "
                                                 "the profile takes the fallback, %ld µs, so that it is the same on "
                                                 "every host",
                                                 v, us);
                        } else if (streq(v, "n/a") || streq(v, "none") || !*v)
                                continue;
                        else
                                r = UNSUPPORTED(m, "force_latency '%s' is not a number of µs or cstate.*:…|N", v);
                } else if (streq(o->key, "no_turbo")) {
                        bool on = streq(v, "1") || strcasecmp(v, "true") == 0 || strcasecmp(v, "y") == 0;
                        r = JSET(cpu, "no_turbo", json_boolean(on));
                } else if (streq(o->key, "min_perf_pct") || streq(o->key, "max_perf_pct"))
                        r = UNSUPPORTED(m,
                                        "%s is intel_pstate's; rtpart's cpu section has the governor, the "
                                        "energy-performance bias and turbo",
                                        o->key);
                else
                        r = UNSUPPORTED(m,
                                        "%s is not one of the cpu settings rtpart has (governor, energy_perf_bias, "
                                        "force_latency, no_turbo)",
                                        o->key);
                if (r < 0)
                        return r;
        }
        if (json_object_size(cpu) == 0)
                (void) json_object_del(m->profile, "cpu");
        return 0;
}

/* sysfs paths of settings tuned has its own plugin for. */
static int set_sysfs(Mapper *m, const char *path, const char *v) {
        json_t *sysfs = obj(m->profile, "sysfs");
        if (!sysfs)
                return -ENOMEM;
        const char *base = strrchr(path, '/');
        base = base ? base + 1 : path;
        if (streq(base, "cpumask") || streq(base, "cpumask_requested") || streq(base, "smp_affinity") ||
            streq(base, "default_smp_affinity")) {
                CpuSet s = {};
                hex_add(&s, v, strlen(v));
                _cleanup_free_ char *sym = cpu_symbol(m, &s, FORM_MASK);
                if (!sym)
                        return -ENOMEM;
                return JSET(sysfs, path, json_string(sym));
        }
        return JSET(sysfs, path, scalar(v));
}

static int map_options(Mapper *m, TunedSection *u, const char *type) {
        for (size_t i = 0; i < u->n_options; i++) {
                TunedOption *o = &u->options[i];
                _cleanup_free_ char *v = NULL;
                int r;
                m->ev->file = o->file;
                m->ev->line = o->line;
                m->ev->option = o->key;
                if (streq(o->key, "type") || streq(o->key, "enabled") || streq(o->key, "priority") ||
                    (streq(o->key, "devices") && o->value && streq(o->value, "*")))
                        continue;
                if ((r = expand(m->ev, strempty(o->value), &v)) < 0)
                        return r;
                if (streq(o->key, "devices"))
                        r = UNSUPPORTED(m, "devices: rtpart's %s settings are host-wide", type);
                else if (streq(type, "sysctl")) {
                        if (streq(o->key, "reapply_sys_config"))
                                r = NOTE(m, "rtpart leaves /etc/sysctl.d alone");
                        else
                                r = JSET(obj(m->profile, "sysctl"), o->key, scalar(v));
                } else if (streq(type, "sysfs")) {
                        if (!startswith(o->key, "/sys/"))
                                r = UNSUPPORTED(m, "'%s' is not under /sys", o->key);
                        else
                                r = set_sysfs(m, o->key, v);
                } else if (streq(type, "vm")) {
                        if (streq(o->key, "transparent_hugepages") || streq(o->key, "transparent_hugepage"))
                                r = set_sysfs(m, "/sys/kernel/mm/transparent_hugepage/enabled", v);
                        else if (streq(o->key, "transparent_hugepage.defrag"))
                                r = set_sysfs(m, "/sys/kernel/mm/transparent_hugepage/defrag", v);
                        else
                                r = UNSUPPORTED(m, "%s is not a vm setting rtpart knows", o->key);
                } else if (streq(type, "selinux")) {
                        if (streq(o->key, "avc_cache_threshold"))
                                r = set_sysfs(m, "/sys/fs/selinux/avc/cache_threshold", v);
                        else
                                r = UNSUPPORTED(m, "%s is not a selinux setting rtpart knows", o->key);
                } else if (streq(type, "irqbalance")) {
                        if (streq(o->key, "banned_cpus"))
                                r = set_cpus(m, obj(m->profile, "irqbalance"), "banned_cpus", v, FORM_CLASS);
                        else
                                r = UNSUPPORTED(m, "%s is not an irqbalance setting rtpart has", o->key);
                } else if (streq(type, "modules")) {
                        _cleanup_free_ char *copy = strdup(v);
                        json_t *mod = NULL;
                        if (!copy)
                                return -ENOMEM;
                        for (char *sp = NULL, *t = strtok_r(copy, " \t", &sp); t && r >= 0;
                             t = strtok_r(NULL, " \t", &sp)) {
                                char *eq = strchr(t, '=');
                                if (streq(t, "+r")) {
                                        r = NOTE(m,
                                                 "+r: rtpart sets parameters at runtime where the module allows, "
                                                 "else in /etc/modprobe.d for its next load");
                                        continue;
                                }
                                if (!eq || eq == t) {
                                        r = UNSUPPORTED(m, "'%s' is not parameter=value", t);
                                        continue;
                                }
                                *eq = 0;
                                if (!boot_value_ok(eq + 1)) {
                                        r = UNSUPPORTED(m,
                                                        "parameter %s: value '%s' has characters rtpart refuses "
                                                        "in module parameters",
                                                        t, eq + 1);
                                        continue;
                                }
                                if (!mod && !(mod = obj(obj(m->profile, "modules"), o->key)))
                                        return -ENOMEM;
                                r = JSET(mod, t, scalar(eq + 1));
                        }
                        if (r >= 0 && !mod)
                                r = UNSUPPORTED(m,
                                                "loading module %s: rtpart sets the parameters of loaded modules "
                                                "only (load it with /etc/modules-load.d)",
                                                o->key);
                } else if (streq(type, "systemd")) {
                        if (streq(o->key, "cpu_affinity"))
                                r = UNSUPPORTED(m,
                                                "CPUAffinity= for every service: rtpart confines cgroups instead "
                                                "(cpuset.confine and cpuset.confine_cpus \"housekeeping\"), which "
                                                "also forbids moving a service onto isolated CPUs; add it by hand "
                                                "where that is wanted");
                        else
                                r = UNSUPPORTED(m, "%s is not a systemd setting rtpart has", o->key);
                } else
                        r = UNSUPPORTED(m, "unsupported");
                if (r < 0)
                        return r;
        }
        return 0;
}

static const char *plugin_reason(const char *type) {
        static const struct {
                const char *type, *why;
        } reasons[] = {
                { "script", "rtpart runs no scripts; express what the script does in the profile" },
                { "net", "NIC settings (ethtool) have no section in rtpart's profile" },
                { "disk", "disk settings (elevator, readahead, APM) have no section in rtpart's profile" },
                { "scsi_host", "SCSI host link power management has no section in rtpart's profile" },
                { "audio", "audio power saving has no section in rtpart's profile" },
                { "video", "graphics power saving has no section in rtpart's profile" },
                { "usb", "USB autosuspend has no section in rtpart's profile" },
                { "eeepc_she", "Eee PC super hybrid engine has no section in rtpart's profile" },
                { "mounts", "mount options have no section in rtpart's profile" },
                { "acpi", "ACPI platform profiles have no section in rtpart's profile" },
                { "rtentsk", "tuned's timestamping socket is a daemon's behaviour, not a setting" },
                { "irq", "per-IRQ rules by name are written in irq.rules by hand" },
        };
        for (size_t i = 0; i < ELEMENTSOF(reasons); i++)
                if (streq(reasons[i].type, type))
                        return reasons[i].why;
        return "rtpart has no section for this tuned plugin";
}

static int map_unit(Mapper *m, TunedSection *u) {
        TunedOption *t = section_option(u, "type");
        const char *type = t && t->value ? t->value : u->name;
        m->ev->section = u->name;
        m->ev->file = u->file;
        m->ev->line = u->line;
        m->ev->option = NULL;

        TunedOption *en = section_option(u, "enabled");
        if (en && en->value && !(streq(en->value, "True") || streq(en->value, "true") || streq(en->value, "1")))
                return NOTE(m, "disabled (enabled=%s): nothing to map", en->value);
        for (size_t i = 0; i < u->n_options; i++) {
                TunedOption *o = &u->options[i];
                if (streq(o->key, "cpuinfo_regex") || streq(o->key, "uname_regex") ||
                    streq(o->key, "devices_udev_regex") || streq(o->key, "script_pre") ||
                    streq(o->key, "script_post")) {
                        m->ev->file = o->file;
                        m->ev->line = o->line;
                        m->ev->option = o->key;
                        return UNSUPPORTED(m,
                                           "[%s] applies only where %s matches; rtpart profiles have no such "
                                           "condition (only vendor overlays): the whole section is left out",
                                           u->name, o->key);
                }
        }
        TunedOption *prio = section_option(u, "priority");
        if (prio) {
                m->ev->file = prio->file;
                m->ev->line = prio->line;
                m->ev->option = "priority";
                int r = NOTE(m, "the order of tuned's plugins; rtpart applies its domains in its own order");
                if (r < 0)
                        return r;
        }
        if (streq(type, "bootloader"))
                return map_bootloader(m, u);
        if (streq(type, "scheduler"))
                return map_scheduler(m, u);
        if (streq(type, "cpu"))
                return map_cpu(m, u);
        if (streq(type, "sysctl") || streq(type, "sysfs") || streq(type, "vm") || streq(type, "selinux") ||
            streq(type, "irqbalance") || streq(type, "modules") || streq(type, "systemd"))
                return map_options(m, u, type);

        const char *why = plugin_reason(type);
        if (u->n_options == 0)
                return UNSUPPORTED(m, "%s", why);
        for (size_t i = 0; i < u->n_options; i++) {
                TunedOption *o = &u->options[i];
                if (streq(o->key, "type") || streq(o->key, "enabled") || streq(o->key, "priority"))
                        continue;
                m->ev->file = o->file;
                m->ev->line = o->line;
                m->ev->option = o->key;
                int r = UNSUPPORTED(m, "%s", why);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int map_main(Mapper *m, TunedSection *u, const char *name) {
        json_t *p = m->profile;
        TunedOption *s = u ? section_option(u, "summary") : NULL;
        TunedOption *d = u ? section_option(u, "description") : NULL;
        _cleanup_free_ char *desc = NULL;
        if (s && s->value)
                if (JSET(p, "summary", literal(s->value)) < 0)
                        return -ENOMEM;
        if (asprintf(&desc, "Imported from tuned's profile %s by rtpartctl import-tuned.%s%s", name,
                     d && d->value ? " " : "", d && d->value ? d->value : "") < 0)
                return -ENOMEM;
        if (JSET(p, "description", literal(desc)) < 0)
                return -ENOMEM;
        for (size_t i = 0; u && i < u->n_options; i++) {
                TunedOption *o = &u->options[i];
                if (streq(o->key, "summary") || streq(o->key, "description"))
                        continue;
                m->ev->section = "main";
                m->ev->file = o->file;
                m->ev->line = o->line;
                m->ev->option = o->key;
                int r = UNSUPPORTED(m, "[main] %s has no equivalent in rtpart's profile", o->key);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The isolated CPUs: [scheduler] isolated_cores, as the host evaluates it. */
static int map_cpus(Mapper *m, TunedIni *merged) {
        for (size_t i = 0; i < merged->n_sections; i++) {
                TunedSection *u = &merged->sections[i];
                TunedOption *t = section_option(u, "type");
                TunedOption *iso = section_option(u, "isolated_cores");
                if (!streq(t && t->value ? t->value : u->name, "scheduler") || !iso || !iso->value)
                        continue;
                m->ev->section = u->name;
                m->ev->file = iso->file;
                m->ev->line = iso->line;
                m->ev->option = "isolated_cores";
                _cleanup_free_ char *v = NULL;
                int r = expand(m->ev, iso->value, &v);
                if (r < 0)
                        return r;
                CpuSet s;
                if (!*v)
                        continue;
                if (!tuned_cpulist_parse(v, &s) || cpu_set_is_empty(&s))
                        return error_set(m->ev->error, iso->file, iso->line,
                                         "isolated_cores '%s' is not a CPU list; set isolated_cores in the "
                                         "profile's variables file",
                                         v);
                CpuSet off = s;
                cpu_set_andnot(&off, &m->online);
                if (!cpu_set_is_empty(&off)) {
                        _cleanup_free_ char *l = cpu_set_format_list(&off);
                        return error_set(m->ev->error, iso->file, iso->line,
                                         "isolated_cores has CPUs this host does not have online: %s", strempty(l));
                }
                m->have_isolated = true;
                m->isolated = s;
                m->housekeeping = m->online;
                cpu_set_andnot(&m->housekeeping, &s);
                json_t *cpus = obj(m->profile, "cpus");
                if (!cpus)
                        return -ENOMEM;
                /* Derived from calc_isolated_cores, it is rtpart's default split, on any host. */
                if (m->ev->calc_used && cpu_set_equal(&m->ev->calc_set, &s)) {
                        if (JSET(cpus, "housekeeping_cores_per_node", json_integer(m->ev->calc_n)) < 0)
                                return -ENOMEM;
                        r = NOTE(m,
                                 "calc_isolated_cores:%u is rtpart's default split with "
                                 "cpus.housekeeping_cores_per_node %u: the first %u core(s) of every NUMA node, with "
                                 "their SMT siblings, are housekeeping (tuned takes the first CPUs of every socket "
                                 "and leaves their SMT siblings isolated)",
                                 m->ev->calc_n, m->ev->calc_n, m->ev->calc_n);
                } else {
                        _cleanup_free_ char *l = cpu_set_format_list(&s);
                        if (!l)
                                return -ENOMEM;
                        if (JSET(cpus, "isolated", json_string(l)) < 0)
                                return -ENOMEM;
                }
                json_t *irq = obj(m->profile, "irq"), *kt = obj(m->profile, "kthreads");
                if (!irq || !kt)
                        return -ENOMEM;
                if (JSET(irq, "affinity", json_string("housekeeping")) < 0)
                        return -ENOMEM;
                if (JSET(irq, "default_affinity", json_string("housekeeping")) < 0)
                        return -ENOMEM;
                if (JSET(kt, "affinity", json_string("housekeeping")) < 0)
                        return -ENOMEM;
                return r;
        }
        return 0;
}

static int read_dir_profile(Loader *l, const char *dir) {
        _cleanup_free_ char *path = NULL;
        size_t n = strlen(dir);
        while (n > 1 && dir[n - 1] == '/')
                n--;
        if (asprintf(&path, "%.*s/tuned.conf", (int) n, dir) < 0)
                return -ENOMEM;
        int r = load_file(l, path, /* host_path= */ false);
        if (r < 0 && r != -EINVAL && r != -ENOMEM) {
                (void) error_set(l->error, path, 0, "cannot read: %s%s", strerror(-r),
                                 r == -ENOENT ? "; give a directory with a tuned.conf" : "");
                return r == -ENOENT ? -EINVAL : r; /* absent: bad usage; unreadable: a failure */
        }
        return r;
}

void tuned_import_done(TunedImport *t) {
        if (!t)
                return;
        json_decref(t->profile);
        for (size_t i = 0; i < t->n_notes; i++) {
                free(t->notes[i].file);
                free(t->notes[i].section);
                free(t->notes[i].option);
                free(t->notes[i].message);
        }
        free(t->notes);
        strv_free(t->files);
        *t = (TunedImport) {};
}

static void eval_done(Eval *ev) {
        for (size_t i = 0; i < ev->n_vars; i++) {
                free(ev->names[i]);
                free(ev->values[i]);
        }
        free(ev->names);
        free(ev->values);
}

int tuned_import(const TunedEnv *env, const char *name, bool dir, TunedImport *ret, TunedError *ret_error) {
        _cleanup_(tuned_import_done) TunedImport out = {};
        Eval ev = { .env = env, .out = &out, .error = ret_error };
        Loader l = { .env = env, .ev = &ev, .error = ret_error };
        Mapper m = { .ev = &ev, .online = env->online };
        _cleanup_free_ char *pname = NULL;
        int r;

        if (dir)
                r = read_dir_profile(&l, name);
        else {
                bool safe = *name != 0;
                for (const char *p = name; *p; p++)
                        safe = safe && (isalnum((unsigned char) *p) || strchr("_.-", *p));
                if (!safe)
                        r = error_set(ret_error, name, 0,
                                      "a tuned profile name is letters, digits and _.- only; give a directory "
                                      "with a path containing '/'");
                else {
                        r = load_names(&l, name, /* from_file= */ NULL, 0);
                }
        }
        if (r < 0)
                goto finish;

        out.profile = json_object();
        if (!out.profile) {
                r = -ENOMEM;
                goto finish;
        }
        r = load_variables(&ev, &l, ini_section(&l.merged, "variables"));
        if (r < 0)
                goto finish;

        m.profile = out.profile;
        const char *base = strrchr(name, '/');
        if (dir) {
                size_t n = strlen(name);
                while (n > 1 && name[n - 1] == '/')
                        n--;
                const char *s = name + n;
                while (s > name && s[-1] != '/')
                        s--;
                pname = strndup(s, (size_t) (name + n - s));
        } else
                pname = strdup(base ? base + 1 : name);
        if (!pname) {
                r = -ENOMEM;
                goto finish;
        }
        if ((r = map_main(&m, ini_section(&l.merged, "main"), pname)) < 0)
                goto finish;
        if ((r = map_cpus(&m, &l.merged)) < 0)
                goto finish;
        for (size_t i = 0; i < l.merged.n_sections; i++) {
                TunedSection *u = &l.merged.sections[i];
                if (streq(u->name, "main") || streq(u->name, "variables"))
                        continue;
                if ((r = map_unit(&m, u)) < 0)
                        goto finish;
        }
        out.files = TAKE_PTR(l.files);
        *ret = out;
        out = (TunedImport) {};
        r = 0;
finish:
        eval_done(&ev);
        tuned_ini_done(&l.merged);
        strv_free(l.files);
        return r;
}
