/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend.h"
#include "strv.h"

/* The "modules" section of a profile: parameters by module; null removes an inherited one. */
static const Schema module_schema = { SCHEMA_MAP, .items = &schema_values };
static const SchemaField module_section = { "modules", &module_schema };

/* Module parameters: "modules": {"kvm": {"halt_poll_ns": 0}} → knob module/kvm/halt_poll_ns on
 * sys/module/kvm/parameters/halt_poll_ns. A parameter the module made read-only at runtime
 * (kvm's kvmclock_periodic_sync, mode 0444) can only be set when the module loads: its knob has
 * reboot=true and the write verb puts it into /etc/modprobe.d/rtpart.conf as
 * "options <module> <param>=<value>"; the desired value is written the same way in both places.
 *
 * For such a load-time parameter the knob's value is the configured one, not the running one:
 * read returns the value of its line in the drop-in (absent without one), write sets or adds the
 * line, and a NULL value removes it, the file with its last line (when only rtpart's header is
 * left) and /etc/modprobe.d with the file if rtpart created it (the header says so). So apply →
 * verify is in sync at once, verify reports the knob as "reboot pending" until the running value
 * (the sysfs file, which the engine compares for reboot knobs) matches, and revert leaves the tree
 * as it was. The running value is shown in the knob's note.
 *
 * Whether a knob is load-time is decided from the sysfs file's mode at each read and write, not
 * only from the knob's reboot flag: the journal's steps and originals do not carry that flag, and
 * rollback and revert must reach the drop-in too. When the module is not loaded (no sysfs file),
 * a knob is load-time if it says so or if the drop-in has a line for it.
 *
 * Boolean parameters read "Y"/"N". A JSON true/false, or a string such as "on"/"off", becomes
 * "Y"/"N" (what the kernel shows) unless the parameter reads as a number, then "1"/"0": either way
 * the value is what the file shows and what param_set_bool()/kstrtobool() take. */

#define MODPROBE_CONF "/etc/modprobe.d/rtpart.conf"
#define DROPIN_DIR "etc/modprobe.d"
#define DROPIN DROPIN_DIR "/rtpart.conf"

/* The first lines of a drop-in rtpart creates; a file of nothing else is removed. */
static const char dropin_header[] =
        "# Module parameters that take effect when the module loads (read-only once it runs).\n"
        "# Written by rtpartctl apply; rtpartctl revert removes the lines it added.\n";
static const char dropin_made_dir[] = "# rtpart created /etc/modprobe.d for this file.\n";

static bool is_yn(const char *s) {
        return s && (streq(s, "Y") || streq(s, "N") || streq(s, "y") || streq(s, "n"));
}

static bool is_number(const char *s) {
        char *end;
        if (!s || !*s)
                return false;
        errno = 0;
        (void) strtoll(s, &end, 0);
        return !errno && end != s && !*end;
}

/* 1 true, 0 false, -1 not a boolean word. */
static int bool_word(const char *s) {
        static const char * const yes[] = { "y", "yes", "true", "on", "1" };
        static const char * const no[] = { "n", "no", "false", "off", "0" };
        for (size_t i = 0; i < ELEMENTSOF(yes); i++) {
                if (strcasecmp(s, yes[i]) == 0)
                        return 1;
                if (strcasecmp(s, no[i]) == 0)
                        return 0;
        }
        return -1;
}

/* The desired value in the form the parameter file shows (see the top of the file). */
static int param_value(json_t *v, const char *cur, char **ret) {
        bool yn = is_yn(cur), numeric = !yn && is_number(cur);
        char *s;

        if (json_is_boolean(v))
                s = strdup(numeric ? (json_is_true(v) ? "1" : "0") : (json_is_true(v) ? "Y" : "N"));
        else if (json_is_string(v)) {
                int b = yn ? bool_word(json_string_value(v)) : -1;
                s = strdup(b < 0 ? json_string_value(v) : b ? "Y" : "N");
        } else if (json_is_integer(v))
                return asprintf(ret, "%lld", (long long) json_integer_value(v)) < 0 ? -ENOMEM : 0;
        else if (json_is_real(v))
                return asprintf(ret, "%g", json_real_value(v)) < 0 ? -ENOMEM : 0;
        else
                return -EINVAL;
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char * const *) a, *(char * const *) b);
}

/* "a, b, c": the parameters the module has, sorted. */
static int list_params(Root *root, const char *dir, char **ret) {
        _cleanup_strv_free_ char **names = NULL;
        DIR *d;
        int k;

        k = root_opendir(root, dir, &d);
        if (k < 0)
                return k;
        for (struct dirent *de; (de = readdir(d));) {
                if (de->d_name[0] == '.')
                        continue;
                k = strv_extend(&names, de->d_name);
                if (k < 0) {
                        closedir(d);
                        return k;
                }
        }
        closedir(d);
        size_t n = strv_length(names);
        if (n > 1)
                qsort(names, n, sizeof(char *), cmp_str);
        StrBuf b = {};
        for (size_t i = 0; i < n; i++)
                strbuf_appendf(&b, "%s%s", i ? ", " : "", names[i]);
        char *s = n ? strbuf_steal(&b) : strdup("none");
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

/* The current value; NULL if the module went away or the parameter cannot be read back
 * (write-only, mode 0200, or a getter that fails). */
static int read_param(Root *root, const char *path, char **ret) {
        int k = root_read_line(root, path, ret);
        if (k == -ENOENT || k == -EACCES || k == -EPERM || k == -EIO || k == -EINVAL) {
                *ret = NULL;
                return 0;
        }
        return k;
}

static int dropin_get(Root *root, const char *mod, const char *param, char **ret);

static bool has_params(json_t *params) {
        const char *key;
        json_t *v;
        json_object_foreach (params, key, v)
                if (!json_is_null(v))
                        return true;
        return false;
}

static int plan_param(PlanCtx *ctx, const char *mod, const char *dir, const char *key, const char *param, json_t *v) {
        _cleanup_free_ char *path = NULL, *id = NULL, *cur = NULL, *running = NULL, *want = NULL;
        _cleanup_free_ char *ptr = json_pointer_append("/modules", key);
        _cleanup_free_ char *pointer = ptr ? json_pointer_append(ptr, param) : NULL;
        struct stat st;
        int k;

        if (!pointer)
                return -ENOMEM;
        /* The name goes into a sysfs path and, for a load-time parameter, onto an "options" line. */
        if (!bootarg_name_valid(param))
                return plan_fail(ctx, pointer,
                                 "\"%s\" is not a parameter name; use the name from /sys/module/%s/parameters", param,
                                 mod);
        if (asprintf(&path, "%s/%s", dir, param) < 0 || asprintf(&id, "module/%s/%s", mod, param) < 0)
                return -ENOMEM;

        k = root_stat(ctx->root, path, &st);
        if (k == -ENOENT) {
                _cleanup_free_ char *names = NULL;
                k = list_params(ctx->root, dir, &names);
                if (k < 0)
                        return k;
                return plan_fail(ctx, pointer, "module %s has no parameter \"%s\"; its parameters are: %s", mod, param,
                                 names);
        }
        if (k < 0)
                return k;

        k = read_param(ctx->root, path, &running);
        if (k < 0)
                return k;
        /* In the form the running module shows. */
        k = param_value(v, running, &want);
        if (k < 0)
                return k;
        /* Checked for every parameter, not only load-time ones: a runtime knob goes to the drop-in
         * too when its module is unloaded and the drop-in has a line for it (is_load_time()). */
        k = plan_check_param_value(ctx, pointer, "module",
                                   "/etc/modprobe.d (one line per option; kmod hands options to install commands' "
                                   "shell as $CMDLINE_OPTS)",
                                   want);
        if (k < 0)
                return k;

        /* Read-only at runtime: the module takes it at load time only, and the knob's value is the
         * configured one (the top of the file). */
        bool reboot = !(st.st_mode & S_IWUSR);
        if (reboot) {
                k = dropin_get(ctx->root, mod, param, &cur);
                if (k < 0)
                        return k;
        }
        Knob *kn;
        k = plan_add(ctx, id, VALUE_AUTO, path, reboot ? cur : running, want, reboot, &kn);
        if (k < 0)
                return k;
        if (reboot &&
            asprintf(&kn->note,
                     "read-only at runtime (running: %s): goes to " MODPROBE_CONF
                     ", applied at the next load of %s (reboot)",
                     running ? running : "unreadable", mod) < 0) {
                kn->note = NULL;
                return -ENOMEM;
        }
        return 0;
}

static int module_plan(PlanCtx *ctx) {
        json_t *sec = json_object_get(ctx->resolved->doc, "modules");
        const char *key;
        json_t *params;
        int k;

        json_object_foreach (sec, key, params) {
                if (!json_is_object(params) || !has_params(params))
                        continue;
                /* modprobe treats '-' and '_' alike; sysfs shows '_'. */
                _cleanup_free_ char *mod = strdup(key), *dir = NULL;
                if (!mod)
                        return -ENOMEM;
                for (char *c = mod; *c; c++)
                        if (*c == '-')
                                *c = '_';
                if (asprintf(&dir, "sys/module/%s/parameters", mod) < 0)
                        return -ENOMEM;
                if (!root_is_dir(ctx->root, dir)) {
                        k = plan_note(ctx, "module: %s is not loaded (no /%s); its parameters are skipped", mod, dir);
                        if (k < 0)
                                return k;
                        continue;
                }
                const char *param;
                json_t *v;
                json_object_foreach (params, param, v) {
                        if (json_is_null(v))
                                continue; /* removed by an including profile */
                        k = plan_param(ctx, mod, dir, key, param, v);
                        if (k < 0)
                                return k;
                }
        }
        return 0;
}

/* ---- the drop-in ---- */

/* One "param=value" of an "options <module> …" line: byte offsets in the text. */
typedef struct Match {
        size_t line, line_end; /* the line, without its newline */
        size_t tok, tok_end;   /* "param=value" */
        size_t val;            /* just after '=' */
        unsigned n_params;     /* parameters on this line */
} Match;

static bool same_module(const char *a, size_t n, const char *mod) {
        if (strlen(mod) != n)
                return false;
        for (size_t i = 0; i < n; i++) {
                char x = a[i] == '-' ? '_' : a[i], y = mod[i] == '-' ? '_' : mod[i];
                if (x != y)
                        return false;
        }
        return true;
}

/* Next whitespace-separated token in [*p, end); double quotes keep spaces inside a token. */
static bool next_token(const char *text, size_t *p, size_t end, size_t *ret_start, size_t *ret_end) {
        size_t i = *p;
        while (i < end && (text[i] == ' ' || text[i] == '\t'))
                i++;
        if (i >= end)
                return false;
        size_t start = i;
        bool quoted = false;
        for (; i < end; i++) {
                if (text[i] == '"')
                        quoted = !quoted;
                else if (!quoted && (text[i] == ' ' || text[i] == '\t'))
                        break;
        }
        *ret_start = start;
        *ret_end = i;
        *p = i;
        return true;
}

/* The last "param=value" for mod in the text; returns how many there are. */
static size_t dropin_find(const char *text, const char *mod, const char *param, Match *ret_last) {
        size_t n = 0, plen = strlen(param);
        for (size_t line = 0; text[line];) {
                size_t end = strcspn(text + line, "\n") + line, p = line, a, b;
                if (next_token(text, &p, end, &a, &b) && b - a == 7 && strncmp(text + a, "options", 7) == 0 &&
                    next_token(text, &p, end, &a, &b) && same_module(text + a, b - a, mod)) {
                        size_t first = p;
                        unsigned params = 0;
                        while (next_token(text, &p, end, &a, &b))
                                params++;
                        p = first;
                        while (next_token(text, &p, end, &a, &b)) {
                                if (b - a > plen && strncmp(text + a, param, plen) == 0 && text[a + plen] == '=') {
                                        n++;
                                        if (ret_last)
                                                *ret_last = (Match) {
                                                        .line = line,
                                                        .line_end = end,
                                                        .tok = a,
                                                        .tok_end = b,
                                                        .val = a + plen + 1,
                                                        .n_params = params,
                                                };
                                }
                        }
                }
                line = text[end] ? end + 1 : end;
        }
        return n;
}

/* The drop-in's text ("" and *ret_mode 0 if there is none). */
static int dropin_load(Root *root, char **ret, mode_t *ret_mode) {
        struct stat st;
        int k = root_stat(root, DROPIN, &st);
        if (k == -ENOENT || k == -ENOTDIR) {
                *ret_mode = 0;
                *ret = strdup("");
                return *ret ? 0 : -ENOMEM;
        }
        if (k < 0)
                return k;
        if (!S_ISREG(st.st_mode))
                return -EISDIR; /* not ours to read or replace */
        k = root_read_file(root, DROPIN, ret, NULL);
        if (k < 0)
                return k;
        *ret_mode = st.st_mode & 07777;
        return 0;
}

/* The configured value of mod's param: the last line's (what modprobe passes last wins), NULL if
 * no line sets it. Surrounding double quotes are not part of the value. */
static int dropin_get(Root *root, const char *mod, const char *param, char **ret) {
        _cleanup_free_ char *text = NULL;
        mode_t mode;
        Match m;
        int k = dropin_load(root, &text, &mode);
        if (k < 0)
                return k;
        if (dropin_find(text, mod, param, &m) == 0) {
                *ret = NULL;
                return 0;
        }
        size_t a = m.val, b = m.tok_end;
        if (b - a >= 2 && text[a] == '"' && text[b - 1] == '"') {
                a++;
                b--;
        }
        char *v = strndup(text + a, b - a);
        if (!v)
                return -ENOMEM;
        *ret = v;
        return 0;
}

static bool dropin_value_ok(const char *v) {
        return !strpbrk(v, "\"#\\") && !bootarg_has_control(v);
}

/* Replaces [a, b) of *text with repl. */
static int text_splice(char **text, size_t a, size_t b, const char *repl) {
        size_t len = strlen(*text), rl = strlen(repl);
        char *n = malloc(len - (b - a) + rl + 1);
        if (!n)
                return -ENOMEM;
        memcpy(n, *text, a);
        memcpy(n + a, repl, rl);
        memcpy(n + a + rl, *text + b, len - b + 1);
        free(*text);
        *text = n;
        return 0;
}

/* Sets (value) or removes (NULL) mod's param in the drop-in; see the top of the file. */
static int dropin_set(Root *root, const char *mod, const char *param, const char *value) {
        _cleanup_free_ char *text = NULL, *orig = NULL, *tok = NULL;
        mode_t mode;
        Match m;
        int k;

        if (value && !dropin_value_ok(value))
                return -EINVAL; /* a quote, a control character (newline), '#' or a backslash would change
                                 * the file's syntax; the plan refused them (and shell syntax) already */
        k = dropin_load(root, &text, &mode);
        if (k < 0)
                return k;
        orig = strdup(text);
        if (!orig)
                return -ENOMEM;
        bool quote = value && strpbrk(value, " \t");
        if (value && asprintf(&tok, quote ? "%s=\"%s\"" : "%s=%s", param, value) < 0)
                return -ENOMEM;

        if (!value) {
                /* Every line that sets it goes (a NULL value means none did when rtpart came). */
                while (dropin_find(text, mod, param, &m) > 0) {
                        if (m.n_params <= 1) {
                                size_t end = text[m.line_end] ? m.line_end + 1 : m.line_end;
                                k = text_splice(&text, m.line, end, "");
                        } else {
                                size_t a = m.tok;
                                while (a > m.line && (text[a - 1] == ' ' || text[a - 1] == '\t'))
                                        a--;
                                k = text_splice(&text, a, m.tok_end, "");
                        }
                        if (k < 0)
                                return k;
                }
        } else if (dropin_find(text, mod, param, &m) > 0) {
                k = text_splice(&text, m.tok, m.tok_end, tok);
                if (k < 0)
                        return k;
        } else {
                StrBuf b = {};
                if (mode == 0) {
                        strbuf_append(&b, dropin_header);
                        if (!root_is_dir(root, DROPIN_DIR))
                                strbuf_append(&b, dropin_made_dir);
                } else {
                        strbuf_append(&b, text);
                        if (*text && text[strlen(text) - 1] != '\n')
                                strbuf_append(&b, "\n");
                }
                strbuf_appendf(&b, "options %s %s\n", mod, tok);
                char *n = strbuf_steal(&b);
                if (!n)
                        return -ENOMEM;
                free(text);
                text = n;
        }

        if (streq(text, orig) && (mode != 0 || !*text))
                return 0;

        /* Only rtpart's header left: the file goes, and the directory if rtpart made it. */
        bool made_dir = false;
        if (mode != 0 && startswith(text, dropin_header)) {
                const char *rest = text + strlen(dropin_header);
                made_dir = streq(rest, dropin_made_dir);
                if (!*rest || made_dir) {
                        k = root_unlink(root, DROPIN);
                        if (k < 0 && k != -ENOENT)
                                return k;
                        if (made_dir) {
                                k = root_rmdir(root, DROPIN_DIR);
                                if (k < 0 && k != -ENOTEMPTY && k != -EEXIST && k != -ENOENT)
                                        return k;
                        }
                        return 0;
                }
        }
        return root_write_file_atomic(root, DROPIN, text, strlen(text), mode ? mode : 0644);
}

/* ---- verbs ---- */

/* "module/<mod>/<param>" → mod and param. */
static int parse_id(const char *id, char **ret_mod, char **ret_param) {
        if (!startswith(id, "module/"))
                return -EINVAL;
        const char *mod = id + strlen("module/"), *slash = strchr(mod, '/');
        if (!slash || slash == mod || !slash[1] || strchr(slash + 1, '/'))
                return -EINVAL;
        char *m = strndup(mod, (size_t) (slash - mod)), *p = strdup(slash + 1);
        if (!m || !p) {
                free(m);
                free(p);
                return -ENOMEM;
        }
        *ret_mod = m;
        *ret_param = p;
        return 0;
}

/* Does this knob take its value when the module loads (drop-in) rather than now (sysfs)? */
static int is_load_time(Root *root, const Knob *k, const char *mod, const char *param) {
        struct stat st;
        int r = root_stat(root, k->path, &st);
        if (r >= 0)
                return k->reboot || !(st.st_mode & S_IWUSR);
        if (r != -ENOENT && r != -ENOTDIR)
                return r;
        if (k->reboot)
                return 1;
        /* The module is not loaded: load-time if the drop-in has it. */
        _cleanup_free_ char *v = NULL;
        r = dropin_get(root, mod, param, &v);
        if (r < 0)
                return r;
        return v != NULL;
}

/* A knob's module and parameter, and whether it is load-time (1) or runtime (0). */
static int module_knob(Root *root, const Knob *k, char **ret_mod, char **ret_param) {
        if (!k->path)
                return -EINVAL;
        int r = parse_id(k->id, ret_mod, ret_param);
        if (r < 0)
                return r;
        return is_load_time(root, k, *ret_mod, *ret_param);
}

static int module_read(Root *root, const Knob *k, char **ret) {
        _cleanup_free_ char *mod = NULL, *param = NULL;
        int r = module_knob(root, k, &mod, &param);
        if (r < 0)
                return r;
        if (r > 0)
                return dropin_get(root, mod, param, ret);
        return read_param(root, k->path, ret);
}

/* Load-time: the drop-in (value NULL removes the line). Runtime: the sysfs file; a value of NULL
 * (the file could not be read when rtpart came: write-only or missing) leaves it, and a module
 * that is no longer loaded takes nothing (KNOB_SKIPPED; it starts with its defaults when loaded
 * again). */
static int module_write_value(Root *root, const Knob *k, const char *value) {
        _cleanup_free_ char *mod = NULL, *param = NULL;
        int r = module_knob(root, k, &mod, &param);
        if (r < 0)
                return r;
        if (r > 0)
                return dropin_set(root, mod, param, value);
        if (!value)
                return 0;
        r = root_write_value(root, k->path, value);
        if (r == -ENOENT)
                return KNOB_SKIPPED;
        return r;
}

static int module_write(Root *root, const Knob *k, const char *value, const KnobKeep *keep, KnobResult *ret) {
        *ret = (KnobResult) {};
        return knob_result_finish(ret, module_write_value(root, k, value));
}

/* Keys are module names. */
static int module_check(const char *file, json_t *section, const char *pointer, Error *e) {
        const char *key;
        json_t *v;
        json_object_foreach (section, key, v)
                for (const char *c = key; *c; c++)
                        if (!isalnum((unsigned char) *c) && *c != '_' && *c != '-') {
                                _cleanup_free_ char *pk = json_pointer_append(pointer, key);
                                return error_set(e, -EINVAL, file, pk,
                                                 "\"%s\" is not a module name, e.g. \"kvm_intel\"", key);
                        }
        return 0;
}

static const char * const module_replaces[] = { DROPIN, NULL };

const Backend backend_module = {
        .domain = DOMAIN_MODULE,
        .name = "module",
        .schema = &module_section,
        .check = module_check,
        .plan = module_plan,
        .read = module_read,
        .write = module_write,
        .replaces = module_replaces,
        .watch = knob_watch_file,
        .knob_noun = "module parameter",
};
