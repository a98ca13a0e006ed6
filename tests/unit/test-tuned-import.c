/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* tuned profiles read as tuned reads them (lib/interop/tuned-*.c): the INI syntax, include chains,
 * variables, every built-in function, the kernel command line's "+" and "-", the mapping onto
 * rtpart's schema, and errors that name the file and the line. The files live in memory. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "strv.h"
#include "test-util.h"
#include "tuned-import.h"

typedef struct MemFile {
        const char *path, *text;
} MemFile;

static const MemFile *mem_files;

/* Two NUMA nodes of 4 CPUs, 8 and 9 present but offline. */
static void mem_split(void *userdata, unsigned cores_per_node, CpuSet *ret) {
        cpu_set_zero(ret);
        for (unsigned node = 0; node < 2; node++)
                for (unsigned c = cores_per_node; c < 4; c++)
                        cpu_set_add(ret, node * 4 + c);
}

static int mem_read(void *userdata, const char *path, bool host_path, char **ret) {
        for (const MemFile *f = mem_files; f && f->path; f++)
                if (streq(f->path, path)) {
                        if (!f->text)
                                return -EACCES; /* there, but unreadable */
                        *ret = strdup(f->text);
                        return *ret ? 0 : -ENOMEM;
                }
        return -ENOENT;
}

static TunedEnv mem_env(void) {
        TunedEnv env = { .split = mem_split, .read_file = mem_read };
        cpu_set_add_range(&env.online, 0, 7);
        cpu_set_add_range(&env.present, 0, 9);
        return env;
}

static int import(const MemFile *files, const char *name, TunedImport *ret, Error *ret_error) {
        TunedEnv env = mem_env();
        mem_files = files;
        return tuned_import(&env, name, /* dir= */ strchr(name, '/') != NULL, ret, ret_error);
}

static TunedImport import_ok(const MemFile *files, const char *name) {
        TunedImport t = {};
        Error e = {};
        int r = import(files, name, &t, &e);
        ck_assert_msg(r == 0, "import %s: %d %s:%u: %s", name, r, strempty(e.file), e.line, strempty(e.message));
        return t;
}

static void import_err(const MemFile *files, const char *name, const char *file, unsigned line, const char *msg) {
        TunedImport t = {};
        Error e = {};
        ck_assert_int_eq(import(files, name, &t, &e), -EINVAL);
        ck_assert_str_eq(e.file, file);
        ck_assert_uint_eq(e.line, line);
        ck_assert_msg(strstr(e.message, msg), "'%s' has no '%s'", e.message, msg);
        error_done(&e);
}

/* A value of the profile as text: a string as it is, a number in decimal, true as "true". */
static char *value(json_t *profile, const char *section, const char *key) {
        json_t *s = json_object_get(profile, section);
        json_t *v = s ? json_object_get(s, key) : NULL;
        if (!v)
                return NULL;
        if (json_is_string(v))
                return strdup(json_string_value(v));
        return json_dumps(v, JSON_ENCODE_ANY);
}

static void assert_value(json_t *profile, const char *section, const char *key, const char *want) {
        _cleanup_free_ char *v = value(profile, section, key);
        ck_assert_msg(streq_ptr(v, want), "%s.%s is '%s', want '%s'", section, key, strempty(v), strempty(want));
}

static json_t *boot_args(json_t *profile) {
        return json_object_get(json_object_get(profile, "boot"), "args");
}

static bool has_note(const TunedImport *t, const char *file, unsigned line, const char *option, bool unsupported,
                     const char *fragment) {
        for (size_t i = 0; i < t->n_notes; i++) {
                const TunedNote *n = &t->notes[i];
                if (streq(n->file, file) && n->line == line && streq_ptr(n->option, option) &&
                    n->unsupported == unsupported && strstr(n->message, fragment))
                        return true;
        }
        return false;
}

START_TEST(test_ini) {
        TunedIni ini = {};
        Error e = {};
        static const char text[] = "# comment\n"
                                   "; also a comment\n"
                                   "[main]\n"
                                   "summary = a profile   # inline comment\n"
                                   "url=http://x/#frag\n"
                                   "[sysctl]\n"
                                   "a = 1\n"
                                   "b=2\n"
                                   "long = first\n"
                                   "  second\n"
                                   "a = 3\n"
                                   "[main]\n"
                                   "extra=yes\n";
        ck_assert_int_eq(tuned_ini_parse(text, "f.conf", false, &ini, &e), 0);
        ck_assert_uint_eq(ini.n_sections, 2);
        ck_assert_str_eq(ini.sections[0].name, "main");
        ck_assert_uint_eq(ini.sections[0].n_options, 3); /* a repeated section adds to the first */
        ck_assert_str_eq(ini.sections[0].options[0].value, "a profile");
        ck_assert_str_eq(ini.sections[0].options[1].value, "http://x/#frag"); /* '#' after no space */
        TunedSection *s = &ini.sections[1];
        ck_assert_uint_eq(s->n_options, 3);
        ck_assert_str_eq(s->options[0].key, "a"); /* a repeated key keeps its place, takes the value */
        ck_assert_str_eq(s->options[0].value, "3");
        ck_assert_uint_eq(s->options[0].line, 11);
        ck_assert_str_eq(s->options[2].value, "first\nsecond");
        tuned_ini_done(&ini);

        static const struct {
                const char *text;
                unsigned line;
                const char *msg;
        } bad[] = {
                { "a=1\n", 1, "before the first [section]" },
                { "[main]\n\nsummary\n", 3, "neither" },
                { "[main]\n[sysctl\n", 2, "section header" },
                { "[x]\n = 2\n", 2, "without a name" },
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                ck_assert_int_eq(tuned_ini_parse(bad[i].text, "bad.conf", false, &ini, &e), -EINVAL);
                ck_assert_str_eq(e.file, "bad.conf");
                ck_assert_uint_eq(e.line, bad[i].line);
                ck_assert_msg(strstr(e.message, bad[i].msg), "%s", e.message);
                error_done(&e);
        }
        /* A variables file: no header, keys without values. */
        ck_assert_int_eq(tuned_ini_parse("x=1\nflag\n", "v.conf", true, &ini, &e), 0);
        ck_assert_uint_eq(ini.sections[0].n_options, 2);
        ck_assert_ptr_null(ini.sections[0].options[1].value);
        tuned_ini_done(&ini);
}
END_TEST

START_TEST(test_cpulist) {
        static const struct {
                const char *in, *out; /* out NULL: tuned gives an empty list */
        } cases[] = {
                { "1-3,5", "1-3,5" },
                { "'1,2'", "1-2" },
                { "0x0f", "0-3" },
                { "0x00000001,00000000", "32" },
                { "0xf,,6", "0-3,6" },
                { "0-7,^2", "0-1,3-7" },
                { "0-7,!2-3", "0-1,4-7" },
                { " 4 , 6", "4,6" },
                { "", "" },
                { "a", NULL },
                { "1-x", NULL },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                CpuSet s;
                bool ok = tuned_cpulist_parse(cases[i].in, &s);
                _cleanup_free_ char *l = cpu_set_format_list(&s);
                ck_assert_msg(ok == (cases[i].out != NULL), "%s", cases[i].in);
                ck_assert_msg(streq(l, strempty(cases[i].out)), "%s gives %s", cases[i].in, l);
        }
}
END_TEST

static const MemFile chain[] = {
        { "/usr/lib/tuned/base/tuned.conf",
          "[main]\nsummary=base\n[sysctl]\na=1\nb=1\nc=1\n[cpu]\ngovernor=powersave\n"
          "[bootloader]\ncmdline_base=+quiet foo=1 skew_tick=1\n[vm]\ntransparent_hugepages=always\n" },
        { "/usr/lib/tuned/child/tuned.conf",
          "[main]\nsummary=child\ninclude=base, -missing\n[sysctl]\nb=2\ndrop=c\n[cpu]\nreplace=true\n"
          "energy_perf_bias=performance|normal\n[bootloader]\ncmdline_child=-quiet foo=1\ncmdline_more=bar\n" },
        /* /etc/tuned/base hides /usr/lib/tuned/base and includes it. */
        { "/etc/tuned/base/tuned.conf", "[main]\ninclude=base\n[sysctl]\na=9\n" },
        { "/usr/lib/tuned/broken/tuned.conf", "[main]\ninclude=child\n\ninclude=nosuch\n" },
        { "/usr/lib/tuned/loop/tuned.conf", "[main]\ninclude=loop\n[sysctl]\nz=1\n" },
        /* Functions in an include, evaluated at load (before any variable). */
        { "/usr/lib/tuned/virt/tuned.conf", "[main]\ninclude=${f:virt_check:child:base}, -x${f:cpulist_present:1}\n" },
        {},
};

START_TEST(test_include_chain) {
        _cleanup_(tuned_import_done) TunedImport t = import_ok(chain, "child");
        ck_assert_str_eq(json_string_value(json_object_get(t.profile, "summary")), "child");
        assert_value(t.profile, "sysctl", "a", "9"); /* /etc/tuned/base over /usr/lib/tuned/base */
        assert_value(t.profile, "sysctl", "b", "2");
        assert_value(t.profile, "sysctl", "c", NULL);     /* dropped */
        assert_value(t.profile, "cpu", "governor", NULL); /* [cpu] replaced */
        assert_value(t.profile, "cpu", "energy_perf_bias", "performance");
        ck_assert(has_note(&t, "/usr/lib/tuned/child/tuned.conf", 9, "energy_perf_bias", false, "first"));
        assert_value(t.profile, "sysfs", "/sys/kernel/mm/transparent_hugepage/enabled", "always");
        ck_assert_uint_eq(strv_length(t.files), 3);
        ck_assert_str_eq(t.files[0], "/usr/lib/tuned/child/tuned.conf");
        ck_assert_str_eq(t.files[1], "/etc/tuned/base/tuned.conf");
        ck_assert_str_eq(t.files[2], "/usr/lib/tuned/base/tuned.conf");

        /* "+" adds, "-" takes away what was added before, a plain value adds. */
        json_t *args = boot_args(t.profile);
        ck_assert_uint_eq(json_object_size(args), 2);
        assert_value(json_object_get(t.profile, "boot"), "args", "skew_tick", "1");
        ck_assert(json_is_true(json_object_get(args, "bar")));
        ck_assert_uint_eq(t.n_unsupported, 0);

        import_err(chain, "broken", "/usr/lib/tuned/broken/tuned.conf", 4, "'nosuch' not found");
        import_err(chain, "nosuch", "nosuch", 0, "no tuned profile 'nosuch'");
        import_err(chain, "bad name", "bad name", 0, "letters, digits");
        /* A profile that includes itself: the file already read is skipped, as tuned does. */
        _cleanup_(tuned_import_done) TunedImport l = import_ok(chain, "loop");
        assert_value(l.profile, "sysctl", "z", "1");

        _cleanup_(tuned_import_done) TunedImport v = import_ok(chain, "virt");
        assert_value(v.profile, "sysctl", "b", "1"); /* base's, not child's */
        ck_assert(has_note(&v, "/usr/lib/tuned/virt/tuned.conf", 2, "include", true, "bare-metal branch 'base'"));
        ck_assert_uint_eq(v.n_unsupported, 1);
}
END_TEST

static const MemFile vars[] = {
        { "/usr/lib/tuned/v/tuned.conf",
          "[main]\nsummary=v\n[variables]\ninclude=/etc/tuned/v-variables.conf\n"
          "b = ${a}-b\nc = \\${a}\nesc=\\\\${a}\n"
          "[sysctl]\nk.a = ${a}\nk.b = ${b}\nk.c = ${c}\nk.esc = ${esc}\nk.undef = ${nope}\n"
          "k.dollar = $${x}\n" },
        { "/etc/tuned/v-variables.conf", "# header-less\na=1\nflag\n" },
        /* Each variable four times the one before: h would be 256 KiB. */
        { "/usr/lib/tuned/big/tuned.conf",
          "[variables]\na=0123456789abcdef\nb=${a}${a}${a}${a}\nc=${b}${b}${b}${b}\nd=${c}${c}${c}${c}\n"
          "e=${d}${d}${d}${d}\nf=${e}${e}${e}${e}\ng=${f}${f}${f}${f}\nh=${g}${g}${g}${g}\n" },
        {},
};

START_TEST(test_variables) {
        _cleanup_(tuned_import_done) TunedImport t = import_ok(vars, "v");
        assert_value(t.profile, "sysctl", "k.a", "1");
        assert_value(t.profile, "sysctl", "k.b", "1-b");
        assert_value(t.profile, "sysctl", "k.c", "$${a}");        /* "\${a}" is not expanded; rtpart's "$$" */
        assert_value(t.profile, "sysctl", "k.esc", "$${a}");      /* unescaped once per expansion */
        assert_value(t.profile, "sysctl", "k.undef", "$${nope}"); /* left as written, as tuned does */
        assert_value(t.profile, "sysctl", "k.dollar", "$$$${x}");
        ck_assert_uint_eq(strv_length(t.files), 2);

        import_err(vars, "big", "/usr/lib/tuned/big/tuned.conf", 9, "the value of h expands to more than 65536 bytes");
}
END_TEST

static const MemFile funcs[] = {
        { "/usr/lib/tuned/f/tuned.conf",
          "[variables]\n"
          "iso=${f:calc_isolated_cores:1}\n"
          "[sysctl]\n"
          "calc = ${f:calc_isolated_cores:2}\n"
          "inv = ${f:cpulist_invert:1-3,5-7}\n"
          "hex = ${f:cpulist2hex:1-3,32}\n"
          "hexinv = ${f:cpulist2hex_invert:1-7}\n"
          "unpack = ${f:cpulist_unpack:1-3,0x10}\n"
          "pack = ${f:cpulist_pack:1,2,3,5}\n"
          "online = ${f:cpulist_online:6-9}\n"
          "present = ${f:cpulist_present:6-12}\n"
          "devs = ${f:cpulist2devs:1-2}\n"
          "h2l = ${f:hex2cpulist:0x5}\n"
          "tern_y = ${f:regex_search_ternary:Y:\\b[y,Y,1]\\b:managed_irq,domain,:}\n"
          "tern_n = ${f:regex_search_ternary:N:\\b[y,Y,1]\\b:yes:no}\n"
          "strip = ${f:strip:  padded  }\n"
          "nested = ${f:cpulist_pack:${f:cpulist_invert:${iso}}}\n"
          "colon = ${f:strip:a\\:b}\n"
          "s2kb = ${f:s2kb:7}\n"
          "kb2s = ${f:kb2s:7}\n"
          "queues = ${f:check_net_queue_count:4}\n"
          "ok = ${f:assertion:same:x:x}${f:assertion_non_equal:differ:x:y}\n"
          "escaped = \\${f:strip: x }\n"
          "unknown = ${f:no_such_function:1}\n"
          "exec = ${f:exec:mktemp:-d}\n"
          "virt = ${f:virt_check:guest:metal}\n" },
        { "/usr/lib/tuned/assert/tuned.conf",
          "[variables]\nisolated_cores_check=\\\\${isolated_cores}\n\n"
          "a=${f:assertion_non_equal:isolated_cores are set:${isolated_cores}:${isolated_cores_check}}\n" },
        {},
};

START_TEST(test_functions) {
        _cleanup_(tuned_import_done) TunedImport t = import_ok(funcs, "f");
        static const struct {
                const char *key, *want;
        } cases[] = {
                { "calc", "2,3,6,7" },
                { "inv", "0,4" },
                { "hex", "00000001,0000000e" },
                { "hexinv", "00000001" },
                { "unpack", "1,2,3,4" },
                { "pack", "1-3,5" },
                { "online", "6,7" },
                { "present", "6,7,8,9" },
                { "devs", "cpu1,cpu2" },
                { "h2l", "0,2" },
                { "tern_y", "managed_irq,domain," },
                { "tern_n", "no" },
                { "strip", "padded" },
                { "nested", "0,4" }, /* innermost first */
                { "colon", "a:b" },
                { "s2kb", "4" },
                { "kb2s", "14" },
                { "queues", "4" },
                { "ok", "$${f:assertion:same:x:x}$${f:assertion_non_equal:differ:x:y}" }, /* None: as written */
                { "escaped", "$${f:strip: x }" },
                { "unknown", "$${f:no_such_function:1}" },
                { "exec", "" },
                { "virt", "metal" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                assert_value(t.profile, "sysctl", cases[i].key, cases[i].want);
        ck_assert(has_note(&t, "/usr/lib/tuned/f/tuned.conf", 24, "unknown", true, "no_such_function"));
        ck_assert(has_note(&t, "/usr/lib/tuned/f/tuned.conf", 25, "exec", true, "runs no commands"));
        ck_assert(has_note(&t, "/usr/lib/tuned/f/tuned.conf", 26, "virt", true, "bare-metal branch 'metal'"));
        ck_assert_uint_eq(t.n_unsupported, 3);

        /* The assertion tuned's realtime profiles make when isolated_cores is not set. */
        import_err(funcs, "assert", "/usr/lib/tuned/assert/tuned.conf", 4, "assertion 'isolated_cores are set' failed");
}
END_TEST

static const MemFile rt[] = {
        { "/usr/lib/tuned/rt/tuned.conf",
          "[main]\nsummary=rt\n"
          "[variables]\ninclude=/etc/tuned/rt-variables.conf\n"
          "non_isolated=${f:cpulist_invert:${isolated_cores}}\n"
          "mask=${f:cpulist2hex_invert:${isolated_cores}}\n"
          "managed=${f:regex_search_ternary:Y:\\b[y,Y]\\b:managed_irq,domain,:}\n"
          "[bootloader]\n"
          "cmdline_rt=+isolcpus=${managed}${isolated_cores} nohz_full=${isolated_cores} "
          "irqaffinity=${non_isolated} nosoftlockup\n"
          "initrd_add_dir=/tmp\n"
          "[sysfs]\n/sys/devices/virtual/workqueue/cpumask = ${mask}\n"
          "[irqbalance]\nbanned_cpus=${isolated_cores}\n"
          "[scheduler]\nisolated_cores=${isolated_cores}\n"
          "group.ksoftirqd=0:f:2:*:^\\[ksoftirqd\n"
          "group.ktimers=0:f:2:*:^\\[ktimers\n"
          "group.ktimersoftd=0:f:3:*:^\\[ktimersoftd\n"
          "group.early=-1:r:5:0x1:^\\[early\\]$\n"
          "group.app=0:f:50:*:^myapp\n"
          "ps_blacklist=^\\[ksoftirqd;.*pmd.*;^DPDK\n"
          "sched_min_granularity_ns=100\n"
          "[cpu]\nforce_latency=cstate.id_no_zero:1|3\n"
          "[modules]\nkvm=+r halt_poll_ns=0\n"
          "[net]\nchannels=combined 4\n"
          "[rtentsk]\n" },
        { "/etc/tuned/rt-variables.conf", "isolated_cores=${f:calc_isolated_cores:1}\n" },
        {},
};

START_TEST(test_mapping) {
        _cleanup_(tuned_import_done) TunedImport t = import_ok(rt, "rt");
        const char *f = "/usr/lib/tuned/rt/tuned.conf";

        /* calc_isolated_cores is rtpart's default split: portable. */
        assert_value(t.profile, "cpus", "housekeeping_cores_per_node", "1");
        assert_value(t.profile, "cpus", "isolated", NULL);
        json_t *boot = json_object_get(t.profile, "boot");
        assert_value(boot, "args", "isolcpus", "managed_irq,domain,${isolated}");
        assert_value(boot, "args", "nohz_full", "${isolated}");
        assert_value(boot, "args", "irqaffinity", "${housekeeping}");
        ck_assert(json_is_true(json_object_get(boot_args(t.profile), "nosoftlockup")));
        assert_value(t.profile, "sysfs", "/sys/devices/virtual/workqueue/cpumask", "${housekeeping_mask}");
        assert_value(t.profile, "irqbalance", "banned_cpus", "isolated");
        assert_value(t.profile, "irq", "affinity", "housekeeping");
        assert_value(t.profile, "irq", "default_affinity", "housekeeping");
        assert_value(t.profile, "kthreads", "affinity", "housekeeping");
        assert_value(t.profile, "cpu", "pm_qos_latency_us", "3");
        json_t *kvm = json_object_get(json_object_get(t.profile, "modules"), "kvm");
        ck_assert_int_eq(json_integer_value(json_object_get(kvm, "halt_poll_ns")), 0);

        /* The last tuned rule that matches wins, the first rtpart rule does: reversed, by
         * rule_prio. */
        json_t *rules = json_object_get(json_object_get(t.profile, "kthreads"), "rules");
        ck_assert_uint_eq(json_array_size(rules), 4);
        static const char * const order[] = { "ktimersoftd*", "ktimers*", "ksoftirqd*", "early" };
        for (size_t i = 0; i < 4; i++)
                ck_assert_str_eq(json_string_value(json_object_get(json_array_get(rules, i), "match")), order[i]);
        json_t *early = json_array_get(rules, 3);
        ck_assert_str_eq(json_string_value(json_object_get(early, "policy")), "rr");
        ck_assert_str_eq(json_string_value(json_object_get(early, "cpus")), "0");
        json_t *allow = json_object_get(json_object_get(t.profile, "drift"), "task_allow");
        ck_assert_uint_eq(json_array_size(allow), 2);
        ck_assert_str_eq(json_string_value(json_array_get(allow, 0)), "*pmd*");
        ck_assert_str_eq(json_string_value(json_array_get(allow, 1)), "DPDK*");

        /* What does not map is named with its file and line. */
        ck_assert(has_note(&t, f, 10, "initrd_add_dir", true, "initrd"));
        ck_assert(has_note(&t, f, 21, "group.app", true, "user processes"));
        ck_assert(has_note(&t, f, 23, "sched_min_granularity_ns", true, "scheduler settings"));
        ck_assert(has_note(&t, f, 29, "channels", true, "NIC"));
        ck_assert(has_note(&t, f, 30, NULL, true, "timestamping"));
        ck_assert(has_note(&t, f, 25, "force_latency", false, "fallback"));
        ck_assert_uint_eq(t.n_unsupported, 5);

        /* An explicit list stays a list; what derives from it is still named by class. */
        MemFile fixed[ELEMENTSOF(rt)];
        memcpy(fixed, rt, sizeof(rt));
        fixed[1].text = "isolated_cores=2-3\n";
        _cleanup_(tuned_import_done) TunedImport x = import_ok(fixed, "rt");
        assert_value(x.profile, "cpus", "isolated", "2-3");
        assert_value(x.profile, "cpus", "housekeeping_cores_per_node", NULL);
        assert_value(json_object_get(x.profile, "boot"), "args", "irqaffinity", "${housekeeping}");
        assert_value(x.profile, "irqbalance", "banned_cpus", "isolated");
}
END_TEST

START_TEST(test_dir) {
        static const MemFile files[] = {
                { "/home/u/mine/tuned.conf", "[main]\ninclude=rt\n[variables]\nisolated_cores=1\n" },
                { "/usr/lib/tuned/rt/tuned.conf",
                  "[sysctl]\nx=${isolated_cores}\n[scheduler]\nisolated_cores=${isolated_cores}\n"
                  "default_irq_smp_affinity=ignore\n" },
                { "/home/u/locked/tuned.conf", NULL },
                { "/home/u/vars/tuned.conf", "[variables]\ninclude=/etc/tuned/locked.conf\n" },
                { "/etc/tuned/locked.conf", NULL },
                {},
        };
        _cleanup_(tuned_import_done) TunedImport t = import_ok(files, "/home/u/mine/");
        assert_value(t.profile, "sysctl", "x", "1");
        assert_value(t.profile, "cpus", "isolated", "1");
        assert_value(t.profile, "irq", "affinity", "housekeeping");
        assert_value(t.profile, "irq", "default_affinity", NULL); /* "ignore": left alone */
        ck_assert(strstr(json_string_value(json_object_get(t.profile, "description")), "profile mine "));
        import_err(files, "/home/u/other", "/home/u/other/tuned.conf", 0, "give a directory with a tuned.conf");

        /* A file that is there but cannot be read is a failure, not a bad profile. */
        static const char * const locked[][2] = { { "/home/u/locked", "/home/u/locked/tuned.conf" },
                                                  { "/home/u/vars", "/etc/tuned/locked.conf" } };
        for (size_t i = 0; i < ELEMENTSOF(locked); i++) {
                TunedImport x = {};
                Error e = {};
                ck_assert_int_eq(import(files, locked[i][0], &x, &e), -EACCES);
                ck_assert_str_eq(e.file, locked[i][1]);
                ck_assert(strstr(e.message, "cannot read: Permission denied"));
                error_done(&e);
        }
}
END_TEST

/* tuned's "<N" and ">N" (at most, at least): a write that depends on the host's value when tuned
 * starts; never written as that text. */
static const MemFile comparisons[] = {
        { "/usr/lib/tuned/cmp/tuned.conf",
          "[sysctl]\nnet.core.somaxconn=>2048\nkernel.pid_max = <4096\nvm.swappiness=10\n"
          "[sysfs]\n/sys/kernel/mm/ksm/run=>1\n[selinux]\navc_cache_threshold=>8192\n" },
        {},
};

START_TEST(test_comparisons) {
        _cleanup_(tuned_import_done) TunedImport t = import_ok(comparisons, "cmp");
        const char *f = "/usr/lib/tuned/cmp/tuned.conf";
        json_t *sysctl = json_object_get(t.profile, "sysctl");
        ck_assert_uint_eq(json_object_size(sysctl), 1);
        assert_value(t.profile, "sysctl", "vm.swappiness", "10");
        ck_assert_ptr_null(json_object_get(t.profile, "sysfs"));
        ck_assert(has_note(&t, f, 2, "net.core.somaxconn", true, "\"at least 2048\""));
        ck_assert(has_note(&t, f, 2, "net.core.somaxconn", true, "{\"net.core.somaxconn\": 2048}"));
        ck_assert(has_note(&t, f, 3, "kernel.pid_max", true, "\"at most 4096\""));
        ck_assert(has_note(&t, f, 6, "/sys/kernel/mm/ksm/run", true, "tuned writes it as it is"));
        ck_assert(has_note(&t, f, 8, "avc_cache_threshold", true, "\"at least 8192\""));
        ck_assert_uint_eq(t.n_unsupported, 4);
}
END_TEST

/* [script]: what start() calls of tuned's shell functions, mapped; every other statement listed at
 * its line; the included profile's script first (tuned concatenates them). */
static const MemFile scripts[] = {
        { "/usr/lib/tuned/rvh/tuned.conf",
          "[main]\ninclude=base\n[script]\nscript=${i:PROFILE_DIR}/script.sh\n"
          "[bootloader]\ncmdline_network_latency=skew_tick=1 rcupdate.rcu_normal_after_boot=1\n" },
        { "/usr/lib/tuned/rvh/script.sh",
          "#!/bin/bash\n\n. /usr/lib/tuned/functions\n\nstart() {\n    setup_kvm_mod_low_latency\n"
          "    disable_ksm\n    cp x \"${TUNED_tmpdir}/etc\"\n    [ \"$X\" = 1 ] && enable_usb_autosuspend\n"
          "    enable_wifi_powersave\n    return 0\n}\n\nstop() {\n    teardown_kvm_mod_low_latency\n}\n\n"
          "verify() {\n    tuna -c 1 -P\n}\n\nprocess $@\n" },
        { "/usr/lib/tuned/base/tuned.conf", "[script]\nscript=${i:PROFILE_DIR}/script.sh\n" },
        { "/usr/lib/tuned/base/script.sh", "start()\n{\n        return 0\n}\nprocess $@\n" },
        { "/usr/lib/tuned/gone/tuned.conf", "[script]\nscript=${i:PROFILE_DIR}/script.sh\n" },
        {},
};

START_TEST(test_script) {
        _cleanup_(tuned_import_done) TunedImport t = import_ok(scripts, "rvh");
        const char *s = "/usr/lib/tuned/rvh/script.sh";
        json_t *modules = json_object_get(t.profile, "modules");
        json_t *kvm = json_object_get(modules, "kvm");
        ck_assert(json_is_false(json_object_get(kvm, "kvmclock_periodic_sync")));
        ck_assert(json_is_false(json_object_get(kvm, "nx_huge_pages")));
        json_t *intel = json_object_get(json_object_get(json_object_get(t.profile, "vendor"), "intel"), "modules");
        ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(intel, "kvm_intel"), "ple_gap")), 0);
        ck_assert_ptr_null(json_object_get(modules, "kvm_intel")); /* Intel's module on Intel hosts only */
        assert_value(t.profile, "sysfs", "/sys/kernel/mm/ksm/run", "2");

        ck_assert(has_note(&t, s, 6, NULL, false, "'setup_kvm_mod_low_latency'"));
        ck_assert(has_note(&t, s, 7, NULL, false, "masks ksm.service"));
        ck_assert(has_note(&t, s, 8, NULL, true, "initramfs"));
        ck_assert(has_note(&t, s, 9, NULL, true, "'[ \"$X\" = 1 ] && enable_usb_autosuspend'"));
        ck_assert(has_note(&t, s, 10, NULL, true, "Wi-Fi"));
        ck_assert_uint_eq(t.n_unsupported, 3); /* stop(), verify() and the rest are not start() */
        /* Both scripts were read, the included profile's first. */
        ck_assert_uint_eq(strv_length(t.files), 4);
        ck_assert_str_eq(t.files[2], "/usr/lib/tuned/base/script.sh");
        ck_assert_str_eq(t.files[3], s);
        /* What a later tuned has on network-latency's command line, and this one lacks. */
        ck_assert(has_note(&t, "/usr/lib/tuned/rvh/tuned.conf", 6, "cmdline_network_latency", false,
                           "also put rcutree.nohz_full_patience_delay=1000 here"));

        _cleanup_(tuned_import_done) TunedImport g = import_ok(scripts, "gone");
        ck_assert(has_note(&g, "/usr/lib/tuned/gone/tuned.conf", 2, "script", true, "cannot be read"));
        ck_assert_uint_eq(g.n_unsupported, 1);
}
END_TEST

int main(void) {
        Suite *s = suite_create("tuned-import");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_ini);
        tcase_add_test(tc, test_cpulist);
        tcase_add_test(tc, test_include_chain);
        tcase_add_test(tc, test_variables);
        tcase_add_test(tc, test_functions);
        tcase_add_test(tc, test_mapping);
        tcase_add_test(tc, test_dir);
        tcase_add_test(tc, test_comparisons);
        tcase_add_test(tc, test_script);
        suite_add_tcase(s, tc);
        return test_run(s);
}
