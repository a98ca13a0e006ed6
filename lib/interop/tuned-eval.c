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
#include "tuned-internal.h"

/* The values of a tuned profile as tuned computes them: "${name}", the "${f:function:arg:…}"
 * built-ins of tuned 2.20 (evaluated on the host of the import, never running a command), and
 * CPU lists in tuned's spellings. */

/* ---- CPU lists, as tuned writes and reads them ---- */

bool tuned_py_int(const char *s, size_t n, long *ret) {
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

void tuned_add_range(CpuSet *s, long a, long b) {
        for (long c = MAX(a, 0); c <= b && c < (long) CPU_SET_MAX; c++)
                cpu_set_add(s, (unsigned) c);
}

/* A hex mask, commas ignored, as tuned's hex2cpulist: invalid gives no CPUs. */
void tuned_hex_add(CpuSet *s, const char *p, size_t n) {
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
                                tuned_hex_add(&set, hex, (size_t) (q - 1 - hex));
                                hex = NULL;
                        }
                } else if (len >= 2 && q[0] == '0' && (q[1] == 'x' || q[1] == 'X'))
                        hex = q;
                else if (len > 0 && (q[0] == '^' || q[0] == '!')) {
                        const char *dash = memchr(q + 1, '-', len - 1);
                        long a, b;
                        if (dash) {
                                if (!tuned_py_int(q + 1, (size_t) (dash - q - 1), &a) ||
                                    !tuned_py_int(dash + 1, (size_t) (ee - dash - 1), &b))
                                        return false;
                        } else if (!tuned_py_int(q + 1, len - 1, &a))
                                return false;
                        else
                                b = a;
                        tuned_add_range(&neg, a, b);
                } else if (len > 0) {
                        const char *dash = memchr(q, '-', len);
                        long a, b;
                        if (dash) {
                                const char *dash2 = memchr(dash + 1, '-', (size_t) (ee - dash - 1));
                                if (!tuned_py_int(q, (size_t) (dash - q), &a) ||
                                    !tuned_py_int(dash + 1, (size_t) ((dash2 ?: ee) - dash - 1), &b))
                                        return false;
                        } else if (!tuned_py_int(q, len, &a))
                                return false;
                        else
                                b = a;
                        tuned_add_range(&set, a, b);
                }
                if (!c)
                        break;
                q = c + 1;
        }
        if (hex)
                tuned_hex_add(&set, hex, (size_t) (end - hex));
        cpu_set_andnot(&set, &neg);
        *ret = set;
        return true;
}

/* "1,2,3" (prefix "cpu": "cpu1,cpu2,cpu3"), as tuned's list functions give them. */
static char *format_each(const CpuSet *s, const char *prefix) {
        StrBuf b = {};
        strbuf_append(&b, "");
        CPU_SET_FOREACH (c, s)
                strbuf_appendf(&b, "%s%s%d", b.len ? "," : "", prefix, c);
        return strbuf_steal(&b);
}

static char *format_unpacked(const CpuSet *s) {
        return format_each(s, "");
}

/* tuned's cpulist2hex: 8 hex digits a group, as few groups as the highest CPU needs. */
char *tuned_format_hex(const CpuSet *s) {
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

/* ---- notes, variables ---- */

int tuned_note_addv(TunedImport *t, const char *file, unsigned line, const char *section, const char *option,
                    bool unsupported, const char *fmt, va_list ap) {
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
        if (vasprintf(&x->message, fmt, ap) < 0)
                x->message = NULL;
        t->n_notes++;
        if (unsupported)
                t->n_unsupported++;
        if (!x->file || !x->section || (option && !x->option) || !x->message)
                return -ENOMEM;
        return 0;
}

int tuned_note_add(TunedImport *t, const char *file, unsigned line, const char *section, const char *option,
                   bool unsupported, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = tuned_note_addv(t, file, line, section, option, unsupported, fmt, ap);
        va_end(ap);
        return r;
}

static const char *var_get(Eval *ev, const char *name, size_t n) {
        for (size_t i = ev ? ev->n_vars : 0; i > 0; i--)
                if (strlen(ev->names[i - 1]) == n && strncmp(ev->names[i - 1], name, n) == 0)
                        return ev->values[i - 1];
        return NULL;
}

bool tuned_word_char(char c) {
        return isalnum((unsigned char) c) || c == '_';
}

/* ${name} of a defined variable replaced in one pass (not preceded by '\'), then "\${name}"
 * unescaped. */
static char *expand_static(Eval *ev, const char *v) {
        StrBuf b = {};
        strbuf_append(&b, "");
        for (const char *p = v; *p && b.len <= TUNED_VALUE_MAX;) {
                if (p[0] == '$' && p[1] == '{' && (p == v || p[-1] != '\\')) {
                        size_t n = 0;
                        while (tuned_word_char(p[2 + n]))
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
                        while (tuned_word_char(p[3 + n]))
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

/* ---- tuned's functions ---- */

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

/* A function's arguments are args[0..n); each returns 1 and *ret its value, 0 when the call is
 * left as written (tuned's None), or a negative errno (-EINVAL: a failed assertion, in
 * ev->error). ev is NULL for the include line at load, where there is no host yet. */
typedef int (*FunctionCall)(Eval *ev, const char *name, char **args, size_t n, char **ret);

static int ret_string(char *s, char **ret) {
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 1;
}

static int fn_assertion(Eval *ev, const char *name, char **args, size_t n, char **ret) {
        bool eq = streq(args[1], args[2]);
        if (eq == streq(name, "assertion"))
                return 0;
        return error_set_line(ev ? ev->error : NULL, -EINVAL, ev ? ev->file : "", ev ? ev->line : 0,
                              "assertion '%s' failed: '%s' %s '%s'%s", args[0], args[1], eq ? "==" : "!=", args[2],
                              strstr(args[0], "isolated_cores") ? "; set isolated_cores in the profile's variables file"
                                                                : "");
}

static int fn_calc_isolated_cores(Eval *ev, const char *name, char **args, size_t n, char **ret) {
        long k = 1;
        CpuSet s;
        if (n > 0 && (!tuned_py_int(args[0], strlen(args[0]), &k) || k < 0 || !isdigit((unsigned char) args[0][0])))
                return 0;
        if (!ev || !ev->env->split)
                return 0;
        ev->env->split(ev->env->userdata, (unsigned) k, &s);
        ev->calc_used = true;
        ev->calc_n = (unsigned) k;
        ev->calc_set = s;
        return ret_string(format_unpacked(&s), ret);
}

static int fn_check_net_queue_count(Eval *ev, const char *name, char **args, size_t n, char **ret) {
        bool digits = *args[0] != 0;
        for (const char *p = args[0]; *p; p++)
                digits = digits && isdigit((unsigned char) *p);
        if (digits)
                return ret_string(strdup(args[0]), ret);
        return asprintf(ret, "%u", ev ? cpu_set_count(&ev->env->online) : 1) < 0 ? -ENOMEM : 1;
}

static int fn_cpuinfo_check(Eval *ev, const char *name, char **args, size_t n, char **ret) {
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
                        return ret_string(strdup(args[i + 1]), ret);
        }
        return ret_string(strdup(n % 2 ? args[n - 1] : ""), ret);
}

static int fn_exec(Eval *ev, const char *name, char **args, size_t n, char **ret) {
        (void) EV_NOTE(ev, true, "${f:exec:%s...}: rtpartctl runs no commands from a profile; taken as \"\"", args[0]);
        return ret_string(strdup(""), ret);
}

static int fn_virt_check(Eval *ev, const char *name, char **args, size_t n, char **ret) {
        (void) EV_NOTE(ev, true,
                       "virt_check runs virt-what, and an rtpart profile has no condition on virtualization; took "
                       "the bare-metal branch '%s'",
                       args[1]);
        return ret_string(strdup(args[1]), ret);
}

static int fn_regex_search_ternary(Eval *ev, const char *name, char **args, size_t n, char **ret) {
        bool m;
        if (regex_search(ev, args[1], args[0], false, &m) < 0)
                return 0;
        return ret_string(strdup(m ? args[2] : args[3]), ret);
}

static int fn_strip(Eval *ev, const char *name, char **args, size_t n, char **ret) {
        _cleanup_free_ char *j = join(args, "");
        if (!j)
                return -ENOMEM;
        return ret_string(tuned_strip_dup(j, strlen(j)), ret);
}

static int fn_s2kb_kb2s(Eval *ev, const char *name, char **args, size_t n, char **ret) {
        long v;
        if (!tuned_py_int(args[0], strlen(args[0]), &v) || v > LONG_MAX / 2 || v < LONG_MIN / 2)
                return 0;
        /* s2kb rounds half to even, as Python's round() does. */
        long r = streq(name, "kb2s") ? v * 2 : (v % 2 == 0 ? v / 2 : ((v / 2) % 2 == 0 ? v / 2 : v / 2 + 1));
        return asprintf(ret, "%ld", r) < 0 ? -ENOMEM : 1;
}

static int fn_hex2cpulist(Eval *ev, const char *name, char **args, size_t n, char **ret) {
        CpuSet s = {};
        tuned_hex_add(&s, args[0], strlen(args[0]));
        return ret_string(format_unpacked(&s), ret);
}

/* The CPU list functions: their arguments are one list, joined by ",," (a mask may end at ",,")
 * or by "," (cpulist_online, cpulist2devs). */
static int fn_cpulist(Eval *ev, const char *name, char **args, size_t n, char **ret) {
        bool single = streq(name, "cpulist_online") || streq(name, "cpulist2devs");
        _cleanup_free_ char *joined = join(args, single ? "," : ",,");
        CpuSet s, online = ev ? ev->env->online : (CpuSet) {}, present = ev ? ev->env->present : (CpuSet) {};
        if (!joined)
                return -ENOMEM;
        (void) tuned_cpulist_parse(joined, &s);
        if (streq(name, "cpulist_unpack"))
                return ret_string(format_unpacked(&s), ret);
        if (streq(name, "cpulist_pack"))
                return ret_string(cpu_set_format_list(&s), ret); /* "1-3" style */
        if (streq(name, "cpulist2hex"))
                return ret_string(tuned_format_hex(&s), ret);
        if (streq(name, "cpulist2devs"))
                return ret_string(format_each(&s, "cpu"), ret);
        if (streq(name, "cpulist_invert") || streq(name, "cpulist2hex_invert")) {
                CpuSet inv = online;
                cpu_set_andnot(&inv, &s);
                return ret_string(streq(name, "cpulist_invert") ? format_unpacked(&inv) : tuned_format_hex(&inv), ret);
        }
        cpu_set_and(&s, streq(name, "cpulist_online") ? &online : &present);
        return ret_string(format_unpacked(&s), ret);
}

typedef struct Function {
        const char *name;
        int min, max; /* argument counts; max 0: any */
        FunctionCall call;
} Function;

static const Function functions[] = {
        { "assertion", 3, 3, fn_assertion },
        { "assertion_non_equal", 3, 3, fn_assertion },
        { "calc_isolated_cores", 0, 1, fn_calc_isolated_cores },
        { "check_net_queue_count", 1, 1, fn_check_net_queue_count },
        { "cpuinfo_check", 0, 0, fn_cpuinfo_check },
        { "cpulist2devs", 0, 0, fn_cpulist },
        { "cpulist2hex", 0, 0, fn_cpulist },
        { "cpulist2hex_invert", 0, 0, fn_cpulist },
        { "cpulist_invert", 0, 0, fn_cpulist },
        { "cpulist_online", 0, 0, fn_cpulist },
        { "cpulist_pack", 0, 0, fn_cpulist },
        { "cpulist_present", 0, 0, fn_cpulist },
        { "cpulist_unpack", 0, 0, fn_cpulist },
        { "exec", 1, 0, fn_exec },
        { "hex2cpulist", 1, 1, fn_hex2cpulist },
        { "kb2s", 1, 1, fn_s2kb_kb2s },
        { "regex_search_ternary", 4, 4, fn_regex_search_ternary },
        { "s2kb", 1, 1, fn_s2kb_kb2s },
        { "strip", 0, 0, fn_strip },
        { "virt_check", 2, 2, fn_virt_check },
};

/* One function call, as the FunctionCall above. */
static int call_function(Eval *ev, const char *name, char **args, char **ret) {
        size_t n = strv_length(args);
        for (size_t i = 0; i < ELEMENTSOF(functions); i++) {
                const Function *f = &functions[i];
                if (!streq(f->name, name))
                        continue;
                if ((int) n < f->min || (f->max > 0 && (int) n > f->max)) {
                        /* tuned logs this and goes on; so does the import. */
                        (void) EV_NOTE(ev, false,
                                       "function '%s' called with %zu arguments (an argument with an unescaped "
                                       "':'?); left as written, as tuned does",
                                       name, n);
                        return 0;
                }
                return f->call(ev, name, args, n, ret);
        }
        (void) EV_NOTE(ev, true, "function '%s' is not one tuned 2.20 has; left as written", name);
        return 0;
}

typedef struct Frame {
        bool esc;
        size_t pos;
} Frame;

/* The ${f:...} calls, innermost first, left to right; "\${" is not a call. Then the first
 * "\${f:" is unescaped, as tuned does. ev NULL: no host (the include line at load). */
int tuned_expand_functions(Eval *ev, const char *value, char **ret) {
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
                                        word = tuned_word_char(*p);
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

int tuned_expand(Eval *ev, const char *value, char **ret) {
        _cleanup_free_ char *st = expand_static(ev, value), *out = NULL;
        if (!st)
                return -ENOMEM;
        if (strlen(st) <= TUNED_VALUE_MAX) {
                int r = tuned_expand_functions(ev, st, &out);
                if (r < 0)
                        return r;
        }
        if (!out || strlen(out) > TUNED_VALUE_MAX)
                return error_set_line(ev->error, -EINVAL, ev->file, ev->line,
                                      "the value of %s expands to more than %u bytes", strempty(ev->option),
                                      TUNED_VALUE_MAX);
        *ret = TAKE_PTR(out);
        return 0;
}

void tuned_eval_done(Eval *ev) {
        for (size_t i = 0; i < ev->n_vars; i++) {
                free(ev->names[i]);
                free(ev->values[i]);
        }
        free(ev->names);
        free(ev->values);
}
