/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The parts of tuned_import() (tuned-import.h), one job each:
 *
 *   tuned-parse.c       the files: the INI syntax, [main] include, the merge of sections, the
 *                       [variables] and their files
 *   tuned-eval.c        the values: ${name}, tuned's ${f:...} functions, CPU lists as tuned
 *                       reads and writes them, and the notes
 *   tuned-map.c         tuned's options onto rtpart's profile keys, and tuned_import() itself
 *   tuned-map-sched.c   the [scheduler] plugin's options (group.*, ps_blacklist, …)
 *   tuned-script.c      the [script] plugin: what a profile's script does, read from its start()
 *                       and mapped where it calls tuned's own shell functions, never run */

#include <jansson.h>
#include <stdarg.h>

#include "error.h"
#include "tuned-import.h"

/* The values of a profile: its variables, and where the value being expanded was written. */
typedef struct Eval {
        const TunedEnv *env;
        char **names, **values; /* the variables, in the order defined */
        size_t n_vars;
        TunedImport *out;
        const char *file, *section, *option;
        unsigned line;
        /* calc_isolated_cores: its argument and result, when called. */
        bool calc_used;
        unsigned calc_n;
        CpuSet calc_set;
        Error *error;
} Eval;

/* The files of a profile, read in include order. */
typedef struct Loader {
        const TunedEnv *env;
        Eval *ev;        /* for the functions of [main] include, evaluated at load */
        TunedIni merged; /* the sections, "main" among them, merged in include order */
        char **files;
        unsigned depth;
        Error *error;
} Loader;

/* ---- tuned-parse.c ---- */

TunedSection *tuned_ini_section(TunedIni *ini, const char *name);
TunedOption *tuned_section_option(TunedSection *s, const char *key);
/* p[0..n) without the whitespace around it. */
char *tuned_strip_dup(const char *p, size_t n);
/* "True", "true" or "1", as tuned's boolean options take it. */
bool tuned_true(const char *v);
/* Options of every unit that say how tuned runs it (type, enabled, devices, priority). */
bool tuned_unit_key(const char *k);
/* The profiles names (",;"-separated) read with their includes into l->merged; from_file and
 * from_line: the include that names them (NULL: the user did). */
int tuned_load_names(Loader *l, const char *names, const char *from_file, unsigned from_line);
/* The profile in directory dir (its tuned.conf), with its includes. */
int tuned_load_dir(Loader *l, const char *dir);
/* The [variables] section's variables and variables files, defined in order. */
int tuned_load_variables(Eval *ev, Loader *l, TunedSection *vars);

/* ---- tuned-eval.c ---- */

/* Variables that refer to others twice double at each step: a value is bounded (a longer one is
 * an error). */
#define TUNED_VALUE_MAX (64U * 1024U)

int tuned_note_add(TunedImport *t, const char *file, unsigned line, const char *section, const char *option,
                   bool unsupported, const char *fmt, ...) _printf_(7, 8);
int tuned_note_addv(TunedImport *t, const char *file, unsigned line, const char *section, const char *option,
                    bool unsupported, const char *fmt, va_list ap) _printf_(7, 0);
#define EV_NOTE(ev, unsupported, ...) \
        ((ev) ? tuned_note_add((ev)->out, (ev)->file, (ev)->line, (ev)->section, (ev)->option, (unsupported), \
                               __VA_ARGS__) \
              : 0)

/* An integer as Python's int() reads it from s[0..n). */
bool tuned_py_int(const char *s, size_t n, long *ret);
bool tuned_word_char(char c);
void tuned_add_range(CpuSet *s, long a, long b);
/* A hex mask, commas ignored, as tuned's hex2cpulist: invalid gives no CPUs. */
void tuned_hex_add(CpuSet *s, const char *p, size_t n);
/* tuned's cpulist2hex: 8 hex digits a group, as few groups as the highest CPU needs. */
char *tuned_format_hex(const CpuSet *s);
/* The ${f:...} calls of value evaluated (ev NULL: no host, the include line at load). */
int tuned_expand_functions(Eval *ev, const char *value, char **ret);
/* value with its variables and then its functions expanded: -EINVAL (in ev->error) when it grows
 * past TUNED_VALUE_MAX or an assertion fails. */
int tuned_expand(Eval *ev, const char *value, char **ret);
/* Defines a variable, its value expanded. */
int tuned_var_add(Eval *ev, const char *name, const char *value, const char *file, unsigned line);
void tuned_eval_done(Eval *ev);

/* ---- tuned-map.c ---- */

typedef struct Mapper {
        Eval *ev;
        json_t *profile;
        const char *user_dir; /* the directory the user gave (its files are in the user's namespace) */
        bool have_isolated;
        CpuSet isolated, housekeeping, online;
} Mapper;

/* Sets key (NULL parent or value: out of memory): 0 or -ENOMEM. */
#define JSET(o, k, v) (json_object_set_new((o), (k), (v)) < 0 ? -ENOMEM : 0)
#define UNSUPPORTED(m, ...) EV_NOTE((m)->ev, true, __VA_ARGS__)
#define NOTE(m, ...) EV_NOTE((m)->ev, false, __VA_ARGS__)

/* parent's object member key, made when missing; NULL on OOM. */
json_t *tuned_obj(json_t *parent, const char *key);
/* A string of the profile that rtpart must not expand: "$$" for a "$" before "{" or "$". */
json_t *tuned_literal(const char *s);
/* An integer where the value is one, as rtpart's shipped profiles write them; else a string. */
json_t *tuned_scalar(const char *v);
/* m->ev's place set to option o of unit u. */
void tuned_map_at(Mapper *m, const char *section, const TunedOption *o);

typedef enum CpuForm {
        FORM_CLASS, /* "isolated": a CPU expression */
        FORM_LIST,  /* "${isolated}": a string with a CPU list */
        FORM_MASK,  /* "${isolated_mask}" */
} CpuForm;

/* The CPUs s names, in rtpart's own terms where it is one of the profile's classes. */
char *tuned_cpu_symbol(Mapper *m, const CpuSet *s, CpuForm form);
int tuned_set_cpus(Mapper *m, json_t *o, const char *key, const char *value, CpuForm form);

/* ---- tuned-map-sched.c ---- */

int tuned_map_scheduler(Mapper *m, TunedSection *u);

/* ---- tuned-script.c ---- */

/* [script] script=PATH…: what each script's start() does. */
int tuned_map_script(Mapper *m, TunedSection *u);
