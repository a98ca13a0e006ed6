/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "strv.h"
#include "tuned-internal.h"

/* tuned's files as tuned reads them: the INI syntax (Python's configparser), [main] include with
 * tuned's merge of one profile over another, and the [variables] with their files. */

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

TunedSection *tuned_ini_section(TunedIni *ini, const char *name) {
        for (size_t i = 0; i < ini->n_sections; i++)
                if (streq(ini->sections[i].name, name))
                        return &ini->sections[i];
        return NULL;
}

TunedOption *tuned_section_option(TunedSection *s, const char *key) {
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

/* Sets key (a repeated key keeps its first place and takes the new value, as a Python dict does;
 * with append, a repeated key is added again after the others). */
static int section_put(TunedSection *s, const char *key, const char *value, const char *file, unsigned line,
                       bool append) {
        TunedOption *o = append ? NULL : tuned_section_option(s, key);
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

static int section_set(TunedSection *s, const char *key, const char *value, const char *file, unsigned line) {
        return section_put(s, key, value, file, line, /* append= */ false);
}

static TunedSection *ini_add_section(TunedIni *ini, const char *name, const char *file, unsigned line) {
        TunedSection *s = tuned_ini_section(ini, name);
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

char *tuned_strip_dup(const char *p, size_t n) {
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

int tuned_ini_parse(const char *text, const char *file, bool allow_no_value, TunedIni *ret, Error *ret_error) {
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
                        _cleanup_free_ char *more = tuned_strip_dup(l + indent, value_length(l + indent, n - indent));
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
                                return error_set_line(ret_error, -EINVAL, file, line,
                                                      "section header without a name or ']'");
                        _cleanup_free_ char *name = strndup(l + indent + 1, (size_t) (close - l - indent - 1));
                        if (!name || !(cur = ini_add_section(&ini, name, file, line)))
                                return -ENOMEM;
                        continue;
                }
                if (!cur)
                        return error_set_line(ret_error, -EINVAL, file, line,
                                              "option before the first [section] header");
                const char *eq = memchr(l, '=', n);
                if (!eq && !allow_no_value)
                        return error_set_line(ret_error, -EINVAL, file, line,
                                              "a line that is neither \"[section]\" nor \"key = value\"");
                size_t klen = eq ? (size_t) (eq - l) : value_length(l, n);
                _cleanup_free_ char *key = tuned_strip_dup(l, klen);
                if (!key)
                        return -ENOMEM;
                if (!*key)
                        return error_set_line(ret_error, -EINVAL, file, line, "an option without a name before '='");
                _cleanup_free_ char *value = NULL;
                if (eq) {
                        size_t off = (size_t) (eq + 1 - l);
                        value = tuned_strip_dup(eq + 1, value_length(eq + 1, n - off));
                        if (!value)
                                return -ENOMEM;
                }
                int r = section_set(cur, key, value, file, line);
                if (r < 0)
                        return r;
                open = tuned_section_option(cur, key);
                open_indent = indent;
        }
        *ret = ini;
        ini = (TunedIni) {};
        return 0;
}

/* ---- includes ---- */

static const char * const load_dirs[] = { "/etc/tuned", "/usr/lib/tuned" };

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

bool tuned_true(const char *v) {
        return v && (streq(v, "True") || streq(v, "true") || streq(v, "1"));
}

bool tuned_unit_key(const char *k) {
        return streq(k, "type") || streq(k, "enabled") || streq(k, "devices") || streq(k, "priority");
}

/* tuned's merge of one profile over what came before. */
static int merge_ini(TunedIni *into, TunedIni *add) {
        for (size_t i = 0; i < add->n_sections; i++) {
                TunedSection *s = &add->sections[i];
                TunedOption *rep = tuned_section_option(s, "replace");
                bool replace = rep && tuned_true(rep->value);
                TunedSection *d = tuned_ini_section(into, s->name);
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
                TunedOption *drop = tuned_section_option(s, "drop");
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
                        /* [script] script: the included profile's scripts run first, then this one's. */
                        bool append = streq(s->name, "script") && streq(o->key, "script");
                        int r = section_put(d, o->key, o->value, o->file, o->line, append);
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

        TunedSection *main = tuned_ini_section(&ini, "main");
        TunedOption *inc = main ? tuned_section_option(main, "include") : NULL;
        if (inc && inc->value) {
                _cleanup_free_ char *names = NULL, *ifile = strdup(inc->file);
                unsigned iline = inc->line;
                /* At load, no variable is defined yet: only the functions expand. */
                l->ev->file = inc->file;
                l->ev->line = inc->line;
                l->ev->section = "main";
                l->ev->option = "include";
                r = tuned_expand_functions(l->ev, inc->value, &names);
                if (r < 0)
                        return r;
                (void) section_remove(main, "include");
                if (!ifile)
                        return -ENOMEM;
                if (++l->depth > 32)
                        return error_set_line(l->error, -EINVAL, ifile, iline, "includes nested more than 32 deep");
                r = tuned_load_names(l, names, ifile, iline);
                l->depth--;
                if (r < 0)
                        return r;
        }
        return merge_ini(&l->merged, &ini);
}

int tuned_load_names(Loader *l, const char *names, const char *from_file, unsigned from_line) {
        _cleanup_free_ char *copy = strdup(names);
        if (!copy)
                return -ENOMEM;
        for (char *sp = NULL, *tok = strtok_r(copy, ",;", &sp); tok; tok = strtok_r(NULL, ",;", &sp)) {
                _cleanup_free_ char *name = tuned_strip_dup(tok, strlen(tok));
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
                                        (void) error_set_line(l->error, r, path, 0, "cannot read: %s", strerror(-r));
                                return r;
                        }
                        found = true;
                }
                if (!found && !skipped && !conditional && !from_file)
                        return error_set_line(l->error, -EINVAL, base, 0,
                                              "no tuned profile '%s' in /etc/tuned or /usr/lib/tuned", base);
                if (!found && !skipped && !conditional)
                        return error_set_line(l->error, -EINVAL, from_file, from_line,
                                              "included profile '%s' not found in /etc/tuned or /usr/lib/tuned", base);
        }
        return 0;
}

/* ---- variables ---- */

static int var_add(Eval *ev, const char *name, const char *value, const char *file, unsigned line) {
        bool ok = *name != 0;
        for (const char *p = name; *p; p++)
                ok = ok && tuned_word_char(*p);
        ev->file = file;
        ev->line = line;
        ev->section = "variables";
        ev->option = name;
        if (!ok)
                return tuned_note_add(ev->out, file, line, "variables", name, true,
                                      "a variable's name is letters, digits and '_' only; ignored, as tuned does");
        _cleanup_free_ char *v = NULL;
        int r = tuned_expand(ev, value, &v);
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

int tuned_load_variables(Eval *ev, Loader *l, TunedSection *vars) {
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
                        if ((r = tuned_note_add(ev->out, o->file, o->line, "variables", "include", true,
                                                "variables file %s not found; its variables are undefined", o->value)) <
                            0)
                                return r;
                        continue;
                }
                if (r < 0) {
                        (void) error_set_line(l->error, r, o->value, 0, "cannot read: %s", strerror(-r));
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

int tuned_load_dir(Loader *l, const char *dir) {
        _cleanup_free_ char *path = NULL;
        size_t n = strlen(dir);
        while (n > 1 && dir[n - 1] == '/')
                n--;
        if (asprintf(&path, "%.*s/tuned.conf", (int) n, dir) < 0)
                return -ENOMEM;
        int r = load_file(l, path, /* host_path= */ false);
        if (r < 0 && r != -EINVAL && r != -ENOMEM)
                /* Absent: bad usage; unreadable: a failure. */
                return error_set_line(l->error, r == -ENOENT ? -EINVAL : r, path, 0, "cannot read: %s%s", strerror(-r),
                                      r == -ENOENT ? "; give a directory with a tuned.conf" : "");
        return r;
}
