/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "strv.h"
#include "tuned-internal.h"

/* The [script] plugin: tuned runs each script= with "start" when it applies the profile. The
 * import never runs it: it reads the script's start() and maps the calls of tuned's own shell
 * library (/usr/lib/tuned/functions) that it knows onto the knobs that do the same; every other
 * statement is listed as unsupported, at its line of the script. stop() undoes start() (rtpart's
 * revert does that for every knob) and verify() checks it (rtpart's verify). */

static int note_at(Mapper *m, const char *file, unsigned line, bool unsupported, const char *fmt, ...) _printf_(5, 6);
static int note_at(Mapper *m, const char *file, unsigned line, bool unsupported, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = tuned_note_addv(m->ev->out, file, line, "script", NULL, unsupported, fmt, ap);
        va_end(ap);
        return r;
}

static int set_module(json_t *modules, const char *module, const char *param, json_t *value) {
        json_t *mod = tuned_obj(modules, module);
        if (!mod) {
                json_decref(value);
                return -ENOMEM;
        }
        return JSET(mod, param, value);
}

/* setup_kvm_mod_low_latency: "options kvm kvmclock_periodic_sync=0", "options kvm nx_huge_pages=0"
 * and "options kvm_intel ple_gap=0" in /etc/modprobe.d/kvm.rt.tuned.conf, each where `modinfo -p`
 * lists the parameter; rtpart's realtime-virtual-host sets the same. */
static int map_kvm_low_latency(Mapper *m, const char *file, unsigned line, const char *statement) {
        json_t *modules = tuned_obj(m->profile, "modules");
        json_t *intel = tuned_obj(tuned_obj(tuned_obj(m->profile, "vendor"), "intel"), "modules");
        if (!modules || !intel)
                return -ENOMEM;
        int r = set_module(modules, "kvm", "kvmclock_periodic_sync", json_false());
        if (r >= 0)
                r = set_module(modules, "kvm", "nx_huge_pages", json_false());
        if (r >= 0)
                r = set_module(intel, "kvm_intel", "ple_gap", json_integer(0));
        if (r < 0)
                return r;
        return note_at(m, file, line, false,
                       "'%s': kvm's kvmclock_periodic_sync and nx_huge_pages off (modules.kvm) and kvm_intel's "
                       "ple_gap 0 (vendor.intel.modules.kvm_intel); tuned puts them in "
                       "/etc/modprobe.d/kvm.rt.tuned.conf for the modules' next load, where `modinfo -p` lists "
                       "them, and rtpart sets nx_huge_pages at once and the two read-only ones in "
                       "/etc/modprobe.d/rtpart.conf (a parameter the loaded module lacks is an error of the plan)",
                       statement);
}

/* disable_ksm: masks ksm.service and ksmtuned.service, then "echo 2 > /sys/kernel/mm/ksm/run". */
static int map_ksm(Mapper *m, const char *file, unsigned line, const char *statement) {
        json_t *sysfs = tuned_obj(m->profile, "sysfs");
        if (!sysfs)
                return -ENOMEM;
        int r = JSET(sysfs, "/sys/kernel/mm/ksm/run", json_integer(2));
        if (r < 0)
                return r;
        return note_at(m, file, line, false,
                       "'%s': KSM stopped and its pages unmerged (sysfs /sys/kernel/mm/ksm/run 2); tuned also "
                       "masks ksm.service and ksmtuned.service, which rtpart leaves alone: rtpartd reports the "
                       "knob as drift if they start KSM again",
                       statement);
}

typedef int (*ScriptMap)(Mapper *m, const char *file, unsigned line, const char *statement);

/* tuned's shell functions: what rtpart does instead, or why it has nothing for them. */
static const struct {
        const char *function;
        ScriptMap map;
        const char *why;
} script_functions[] = {
        { "setup_kvm_mod_low_latency", map_kvm_low_latency, NULL },
        { "disable_ksm", map_ksm, NULL },
        { "enable_wifi_powersave", NULL, "Wi-Fi power saving has no section in rtpart's profile" },
        { "disable_wifi_powersave", NULL, "Wi-Fi power saving has no section in rtpart's profile" },
        { "enable_usb_autosuspend", NULL, "USB autosuspend has no section in rtpart's profile" },
        { "disable_usb_autosuspend", NULL, "USB autosuspend has no section in rtpart's profile" },
        { "disable_bluetooth", NULL, "Bluetooth has no section in rtpart's profile" },
        { "enable_bluetooth", NULL, "Bluetooth has no section in rtpart's profile" },
        { "disable_logs_syncing", NULL, "the system logger's settings have no section in rtpart's profile" },
        { "remount_partitions", NULL, "mount options have no section in rtpart's profile" },
        { "set_cpu_governor", NULL, "write the governor as cpu.governor" },
        { "enable_transparent_hugepages", NULL,
          "write /sys/kernel/mm/transparent_hugepage/enabled in the sysfs section" },
};

/* The first word of a statement, in buf. */
static const char *first_word(const char *s, char *buf, size_t size) {
        size_t n = 0;
        while (s[n] && !isspace((unsigned char) s[n]) && s[n] != ';')
                n++;
        snprintf(buf, size, "%.*s", (int) MIN(n, size - 1), s);
        return buf;
}

/* One statement of start(). */
static int map_statement(Mapper *m, const char *file, unsigned line, const char *s) {
        char word[64];
        first_word(s, word, sizeof(word));
        if (streq(word, "return") || streq(word, "true") || streq(word, ":"))
                return 0;
        for (size_t i = 0; i < ELEMENTSOF(script_functions); i++) {
                if (!streq(script_functions[i].function, word))
                        continue;
                if (!script_functions[i].map)
                        return note_at(m, file, line, true, "'%s': %s", s, script_functions[i].why);
                /* Called as tuned's profiles call them, alone on their line; anything more (a
                 * condition, a pipeline, arguments) is the script's own logic. */
                if (streq(s, word))
                        return script_functions[i].map(m, file, line, s);
                break;
        }
        if (strstr(s, "TUNED_tmpdir"))
                return note_at(m, file, line, true,
                               "'%s': a file for tuned's own initramfs image (the bootloader plugin's "
                               "initrd_add_dir); rtpart adds no initramfs: it sets the workqueue masks at runtime "
                               "(sysfs) and keeps services off isolated CPUs with cpuset.confine",
                               s);
        return note_at(m, file, line, true,
                       "'%s': rtpart runs no scripts; express what this does in the profile, or run it where "
                       "the host needs it",
                       s);
}

/* "NAME() {", "NAME()", "function NAME {": the function's name, or false. */
static bool function_header(const char *s, char *buf, size_t size) {
        bool keyword = startswith(s, "function ");
        if (keyword)
                s += strlen("function ");
        while (*s == ' ')
                s++;
        size_t n = 0;
        while (tuned_word_char(s[n]))
                n++;
        if (n == 0 || n >= size)
                return false;
        const char *p = s + n;
        while (*p == ' ')
                p++;
        if (startswith(p, "()"))
                p += 2;
        else if (!keyword || *p != '{')
                return false;
        while (*p == ' ' || *p == '{')
                p++;
        if (*p && *p != '#')
                return false;
        snprintf(buf, size, "%.*s", (int) n, s);
        return true;
}

/* A statement outside every function: those of tuned's own scripts are sourcing the library,
 * assignments and the call of its dispatcher. */
static int map_top_level(Mapper *m, const char *file, unsigned line, const char *s) {
        char word[64];
        first_word(s, word, sizeof(word));
        if (streq(word, ".") || streq(word, "source") || streq(word, "process"))
                return 0;
        const char *eq = strchr(s, '=');
        bool assignment = eq && eq > s;
        for (const char *p = s; assignment && p < eq; p++)
                assignment = tuned_word_char(*p);
        if (assignment)
                return 0;
        return map_statement(m, file, line, s);
}

static int map_script_text(Mapper *m, const char *file, const char *text) {
        char function[64] = "";
        bool in_function = false;
        unsigned line = 0;
        int r = 0;

        for (const char *p = text; *p && r >= 0;) {
                const char *e = strchrnul(p, '\n');
                _cleanup_free_ char *s = tuned_strip_dup(p, (size_t) (e - p));
                p = *e ? e + 1 : e;
                line++;
                if (!s)
                        return -ENOMEM;
                if (!*s || s[0] == '#' || streq(s, "{"))
                        continue;
                if (in_function && streq(s, "}")) {
                        in_function = false;
                        continue;
                }
                if (!in_function && function_header(s, function, sizeof(function))) {
                        in_function = true;
                        continue;
                }
                if (!in_function)
                        r = map_top_level(m, file, line, s);
                else if (streq(function, "start"))
                        r = map_statement(m, file, line, s);
        }
        return r;
}

/* A script's path in the user's namespace (the directory the user gave), else the host's. */
static bool host_path(Mapper *m, const char *path) {
        return !m->user_dir || !startswith(path, m->user_dir) || path[strlen(m->user_dir)] != '/';
}

int tuned_map_script(Mapper *m, TunedSection *u) {
        for (size_t i = 0; i < u->n_options; i++) {
                TunedOption *o = &u->options[i];
                _cleanup_free_ char *path = NULL, *text = NULL;
                tuned_map_at(m, u->name, o);
                if (tuned_unit_key(o->key))
                        continue;
                if (!streq(o->key, "script")) {
                        int r = UNSUPPORTED(m, "%s is not a script plugin option", o->key);
                        if (r < 0)
                                return r;
                        continue;
                }
                int r = tuned_expand(m->ev, strempty(o->value), &path);
                if (r < 0)
                        return r;
                r = m->ev->env->read_file(m->ev->env->userdata, path, host_path(m, path), &text);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        r = UNSUPPORTED(m,
                                        "%s cannot be read (%s): rtpart runs no scripts; express what it does in "
                                        "the profile",
                                        path, strerror(-r));
                else if (strv_extend(&m->ev->out->files, path) < 0)
                        r = -ENOMEM;
                else if ((r = NOTE(m,
                                   "%s is not run: what its start() does is listed at its lines; its stop() is "
                                   "rtpart's revert, its verify() rtpart's verify",
                                   path)) >= 0)
                        r = map_script_text(m, path, text);
                if (r < 0)
                        return r;
        }
        return 0;
}
