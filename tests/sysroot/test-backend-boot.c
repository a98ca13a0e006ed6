/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "strv.h"
#include "test-tree.h"
#include "test-util.h"

/* Boot arguments end up in files a shell (GRUB's etc/default/grub.d, sourced by grub-mkconfig as
 * root) or a whitespace-splitting parser (BLS "options", etc/kernel/cmdline) reads: a name or a
 * value that could change that file's syntax is refused at plan time, and again at the write. */

static char *host_dir, *prof_dir;
static Root *root;
static Host *host;

static const char grub_base[] = "GRUB_DEFAULT=0\n"
                                "GRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\n"
                                "GRUB_CMDLINE_LINUX=\"\"\n";

static void setup(void) {
        host_dir = test_mini_host(4, false, 0);
        prof_dir = test_tmpdir();
        test_write(host_dir, "etc/default/grub", grub_base);
        test_open_host(host_dir, &root, &host);
}

static void teardown(void) {
        test_fixture_done(root, host, host_dir, prof_dir);
}

static Plan *plan_ok(const char *json) {
        return test_plan_ok(root, host, prof_dir, "p", json);
}

static void plan_error(const char *json, const char *pointer, const char *fragment) {
        test_plan_err(root, host, prof_dir, "lab", json, pointer, fragment);
}

static char *read_rel(const char *rel) {
        _cleanup_free_ char *path = NULL;
        ck_assert(asprintf(&path, "%s/%s", host_dir, rel) >= 0);
        FILE *f = fopen(path, "re");
        if (!f)
                return NULL;
        char *buf = NULL;
        size_t n = 0;
        ck_assert(getdelim(&buf, &n, 0, f) >= 0 || feof(f));
        fclose(f);
        return buf ? buf : strdup("");
}

static bool exists_rel(const char *rel) {
        _cleanup_free_ char *path = NULL;
        ck_assert(asprintf(&path, "%s/%s", host_dir, rel) >= 0);
        return access(path, F_OK) == 0;
}

/* Values a shell would expand or split, or a parser would read as more than one argument. */
static const char * const bad_values[] = {
        "$(id>/tmp/pwned)",
        "`id`",
        "$HOME",
        "a;reboot",
        "a&b",
        "a|b",
        "a<b",
        "a>b",
        "(x)",
        "{x}",
        "*",
        "a?",
        "[x]",
        "~root",
        "!x",
        "a'b",
        "a\\\\b",
        "#x",
        "a^b",
        "\\u00e9",
        "a\\u0001b",
        "a\\u007fb",
};

START_TEST(test_value_injection_refused) {
        for (size_t i = 0; i < ELEMENTSOF(bad_values); i++) {
                _cleanup_free_ char *json = NULL;
                ck_assert(asprintf(&json, "{\"boot\": {\"args\": {\"x\": \"%s\"}}}", bad_values[i]) >= 0);
                plan_error(json, "/boot/args/x", "kernel parameter values use letters, digits and _.,:=/+@%-");
        }
        plan_error("{\"boot\": {\"args\": {\"x\": \"$(id>/tmp/pwned)\"}}}", "/boot/args/x",
                   "value \"$(id>/tmp/pwned)\" has '$', which the kernel command line and GRUB's shell-sourced "
                   "defaults cannot carry safely");
        plan_error("{\"boot\": {\"args\": {\"x\": \"a\\u0001b\"}}}", "/boot/args/x", "has byte 0x01");
        /* Through a variable, and "$$" (a literal '$' once expanded), past the profile's own checks. */
        plan_error("{\"variables\": {\"cmd\": \"$$(reboot)\"}, \"boot\": {\"args\": {\"nohz_full\": \"1-3${cmd}\"}}}",
                   "/boot/args/nohz_full", "has '$'");
        plan_error("{\"boot\": {\"args\": {\"x\": \"$${IFS}id\"}}}", "/boot/args/x", "has '$'");
        /* What the profile refuses before the plan: whitespace and double quotes. */
        plan_error("{\"boot\": {\"args\": {\"x\": \"a b\"}}}", "/boot/args/x", "");
        plan_error("{\"boot\": {\"args\": {\"x\": \"a\\nexport X=1\"}}}", "/boot/args/x", "");
        plan_error("{\"boot\": {\"args\": {\"x\": \"a\\\"b\"}}}", "/boot/args/x", "");
        /* A value too long for any kernel's command line. */
        _cleanup_free_ char *json = NULL, *longv = malloc(2100);
        ck_assert_ptr_nonnull(longv);
        memset(longv, 'a', 2099);
        longv[2099] = 0;
        ck_assert(asprintf(&json, "{\"boot\": {\"args\": {\"x\": \"%s\"}}}", longv) >= 0);
        plan_error(json, "/boot/args/x", "longer than");
}
END_TEST

START_TEST(test_name_refused) {
        plan_error("{\"boot\": {\"args\": {\"-x\": true}}}", "/boot/args/-x", "not a kernel parameter name");
        plan_error("{\"boot\": {\"args\": {\".x\": \"1\"}}}", "/boot/args/.x", "not a kernel parameter name");
        plan_error("{\"boot\": {\"args\": {\"--\": true}}}", "/boot/args/--", "not a kernel parameter name");
        plan_error("{\"boot\": {\"args\": {\"x;id\": true}}}", "/boot/args/x;id", "not a kernel parameter name");
        plan_error("{\"boot\": {\"args\": {\"x=y\": true}}}", "/boot/args/x=y", "not a kernel parameter name");
        plan_error("{\"boot\": {\"args\": {\"a\\nb\": true}}}", "/boot/args/a\nb", "not a kernel parameter name");
        char name[80];
        memset(name, 'n', 65);
        name[65] = 0;
        _cleanup_free_ char *json = NULL, *ptr = NULL;
        ck_assert(asprintf(&json, "{\"boot\": {\"args\": {\"%s\": true}}}", name) >= 0);
        ck_assert(asprintf(&ptr, "/boot/args/%s", name) >= 0);
        plan_error(json, ptr, "not a kernel parameter name");
}
END_TEST

/* Real parameters of realtime hosts: every one must plan, with its value as written. */
static const char * const good[][2] = {
        { "isolcpus", "managed_irq,domain,1-3" },
        { "nohz_full", "1-3" },
        { "rcu_nocbs", "1-3" },
        { "irqaffinity", "0" },
        { "console", "ttyS0,115200n8" },
        { "root", "UUID=0d3c1e5a-7f4b-4c1e-9a55-2b8f3c6d7e10" },
        { "intel_pstate", "disable" },
        { "processor.max_cstate", "1" },
        { "idle", "poll" },
        { "hugepagesz", "1G" },
        { "default_hugepagesz", "1G" },
        { "hugepages", "16" },
        { "tsc", "reliable" },
        { "skew_tick", "1" },
        { "mitigations", "off" },
        { "nosoftlockup", "" },
        { "intel_iommu", "on" },
        { "iommu", "pt" },
        { "kvm-intel.nested", "0" },
        { "systemd.cpu_affinity", "0,8" },
        { "crashkernel", "512M@16M" },
        { "rd.lvm.lv", "vg0/root" },
        { "resume", "/dev/disk/by-path/pci-0000:00:1f.2-ata-1-part2" },
        { "8250.nr_uarts", "4" },
        { "loglevel", "7" },
        { "video", "efifb:off" },
        { "trace_event", "sched:sched_switch,+irq" },
};

static char *good_profile(void) {
        StrBuf b = {};
        strbuf_append(&b, "{\"boot\": {\"args\": {");
        for (size_t i = 0; i < ELEMENTSOF(good); i++)
                if (*good[i][1])
                        strbuf_appendf(&b, "%s\"%s\": \"%s\"", i ? ", " : "", good[i][0], good[i][1]);
                else
                        strbuf_appendf(&b, "%s\"%s\": true", i ? ", " : "", good[i][0]);
        strbuf_append(&b, "}}}");
        char *s = strbuf_steal(&b);
        ck_assert_ptr_nonnull(s);
        return s;
}

START_TEST(test_legitimate_accepted) {
        _cleanup_free_ char *json = good_profile();
        _cleanup_(plan_freep) Plan *p = plan_ok(json);
        for (size_t i = 0; i < ELEMENTSOF(good); i++) {
                _cleanup_free_ char *id = NULL;
                ck_assert(asprintf(&id, "boot/%s", good[i][0]) >= 0);
                const Knob *k = plan_find(p, id);
                ck_assert_msg(k, "no knob %s", id);
                ck_assert_str_eq(k->desired, good[i][1]);
                ck_assert(k->reboot);
        }
        /* CPU lists through the default split's variables stay accepted. */
        _cleanup_(plan_freep) Plan *q =
                plan_ok("{\"cpus\": {\"isolated\": \"1-3\"}, \"boot\": {\"args\": "
                        "{\"isolcpus\": \"managed_irq,domain,${isolated}\", \"nohz_full\": \"${isolated}\"}}}");
        ck_assert_str_eq(plan_find(q, "boot/isolcpus")->desired, "managed_irq,domain,1-3");
        ck_assert_str_eq(plan_find(q, "boot/nohz_full")->desired, "1-3");
}
END_TEST

static void write_all(const Plan *p) {
        for (size_t i = 0; i < p->n_knobs; i++) {
                const Knob *k = &p->knobs[i];
                int r = backend_write(&backend_boot, root, k, k->desired);
                ck_assert_msg(r == 0, "write %s: %d", k->id, r);
        }
}

static void revert_all(const Plan *p) {
        for (size_t i = p->n_knobs; i > 0; i--) {
                const Knob *k = &p->knobs[i - 1];
                int r = backend_write(&backend_boot, root, k, k->current);
                ck_assert_msg(r == 0, "revert %s: %d", k->id, r);
        }
}

static char *read_arg(const char *key) {
        _cleanup_free_ char *id = NULL;
        char *v = NULL;
        ck_assert(asprintf(&id, "boot/%s", key) >= 0);
        Knob k = { .id = id, .domain = DOMAIN_BOOT, .kind = VALUE_BOOTARG, .reboot = true };
        ck_assert_int_ge(backend_boot.read(root, &k, &v), 0);
        return v;
}

/* What grub-mkconfig gets: etc/default/grub and the drop-ins sourced with /bin/sh (set -e, as it
 * does), in an empty directory of their own, with nothing in the environment: GRUB_CMDLINE_LINUX
 * and GRUB_CMDLINE_LINUX_DEFAULT as "L[…]\nD[…]\n". Fails if sourcing ran a command (the directory
 * is no longer empty: each attack below runs "touch pwned"). */
static char *grub_source(void) {
        _cleanup_free_ char *sandbox = test_tmpdir(), *out = NULL, *ls = NULL;
        int st = tree_sh(&out,
                         "cd '%s' && env -i PATH=/usr/bin:/bin /bin/sh -c 'set -e; . \"$0/etc/default/grub\"; "
                         "for f in \"$0\"/etc/default/grub.d/*.cfg; do if [ -e \"$f\" ]; then . \"$f\"; fi; done; "
                         "printf \"L[%%s]\\nD[%%s]\\n\" \"$GRUB_CMDLINE_LINUX\" \"$GRUB_CMDLINE_LINUX_DEFAULT\"' '%s'",
                         sandbox, host_dir);
        ck_assert_msg(st == 0, "sourcing failed (%d): %s", st, out);
        ck_assert_int_eq(tree_sh(&ls, "ls -A '%s'", sandbox), 0);
        ck_assert_msg(streq(ls, ""), "sourcing GRUB's defaults ran a command: %s", ls);
        test_rmtree(sandbox);
        return TAKE_PTR(out);
}

/* The words the kernel gets from what grub_source() printed (GRUB_CMDLINE_LINUX, then _DEFAULT),
 * one a line. */
static char *grub_words(const char *sourced) {
        const char *l = strstr(sourced, "L["), *d = strstr(sourced, "\nD[");
        ck_assert(l && d);
        _cleanup_free_ char *line = NULL;
        ck_assert(asprintf(&line, "%.*s %.*s", (int) (d - l - 3), l + 2, (int) (strlen(d + 3) - 2), d + 3) >= 0);
        _cleanup_strv_free_ char **w = NULL;
        ck_assert_int_eq(cmdline_split(line, &w), 0);
        StrBuf b = {};
        for (char **i = w; *i; i++)
                strbuf_appendf(&b, "%s\n", *i);
        char *out = strbuf_steal(&b);
        return out ? out : strdup("");
}

/* The drop-in for legitimate values: rtpart's arguments added, "quiet" taken out where the user's
 * file has it, nothing of the user's text in it but the word it takes out (quoted); revert removes
 * it. */
START_TEST(test_grub_dropin) {
        _cleanup_(plan_freep) Plan *p =
                plan_ok("{\"boot\": {\"args\": {\"isolcpus\": \"managed_irq,domain,1-3\", "
                        "\"nohz_full\": \"1-3\", \"console\": \"ttyS0,115200n8\", "
                        "\"kvm-intel.nested\": \"0\", \"nosoftlockup\": true, \"quiet\": false}}}");
        write_all(p);
        _cleanup_free_ char *drop = read_rel("etc/default/grub.d/rtpart.cfg");
        ck_assert_ptr_nonnull(drop);
        ck_assert_str_eq(
                drop,
                "# Kernel arguments managed by rtpart; 'rtpartctl revert' removes this file.\n"
                "# Do not edit: rtpart rewrites it. The lines below record what rtpart set.\n"
                "# rtpart-format: 2\n"
                "# rtpart-set: isolcpus=managed_irq,domain,1-3\n"
                "# rtpart-set: nohz_full=1-3\n"
                "# rtpart-set: console=ttyS0,115200n8\n"
                "# rtpart-set: kvm-intel.nested=0\n"
                "# rtpart-set: nosoftlockup\n"
                "# rtpart-unset: quiet\n"
                "# rtpart-was: quiet\n"
                "# rtpart-takes: GRUB_CMDLINE_LINUX_DEFAULT quiet\n"
                "# The values etc/default/grub and the drop-ins before this one gave, without the words\n"
                "# rtpart takes out; rtpart's arguments go at the end of GRUB_CMDLINE_LINUX (before a \"--\").\n"
                "rtpart_v=\" ${GRUB_CMDLINE_LINUX-} \"\n"
                "rtpart_t=\n"
                "case $rtpart_v in *' -- '*) rtpart_t=' -- '${rtpart_v#*' -- '}; rtpart_v=${rtpart_v%%' -- '*}' ' ;; "
                "esac\n"
                "rtpart_v=${rtpart_v# }\n"
                "rtpart_v=${rtpart_v% }\n"
                "GRUB_CMDLINE_LINUX=${rtpart_v:+$rtpart_v }'isolcpus=managed_irq,domain,1-3 nohz_full=1-3 "
                "console=ttyS0,115200n8 kvm-intel.nested=0 nosoftlockup'${rtpart_t% }\n"
                "rtpart_v=\" ${GRUB_CMDLINE_LINUX_DEFAULT-} \"\n"
                "while :; do case $rtpart_v in *' quiet '*) rtpart_v=${rtpart_v%%' quiet '*}' '${rtpart_v#*' quiet '} "
                ";; *) break ;; esac; done\n"
                "rtpart_v=${rtpart_v# }\n"
                "GRUB_CMDLINE_LINUX_DEFAULT=${rtpart_v% }\n"
                "unset rtpart_v rtpart_t\n");
        _cleanup_free_ char *sourced = grub_source();
        ck_assert_str_eq(sourced,
                         "L[isolcpus=managed_irq,domain,1-3 nohz_full=1-3 console=ttyS0,115200n8 kvm-intel.nested=0 "
                         "nosoftlockup]\nD[]\n");
        revert_all(p);
        ck_assert(!exists_rel("etc/default/grub.d/rtpart.cfg"));
        _cleanup_free_ char *base = read_rel("etc/default/grub");
        ck_assert_str_eq(base, grub_base);
}
END_TEST

/* The user's GRUB_CMDLINE_LINUX keeps the meaning it has in their file: text a shell would expand
 * or split, inert there inside single quotes, stays inert and the same words once rtpart's drop-in
 * is sourced after it, also where rtpart takes an argument out of it. */
START_TEST(test_grub_user_quoting) {
        static const struct {
                const char *line;  /* GRUB_CMDLINE_LINUX=… as the user wrote it */
                const char *words; /* the kernel's words after apply */
        } cases[] = {
                { "'console=ttyS0 x=$(touch pwned) isolcpus=7'",
                  "console=ttyS0\nx=$(touch\npwned)\nisolcpus=1-3\nskew_tick=1\n" },
                { "'quiet y=\"$(touch pwned)\" isolcpus=7'", "y=\"$(touch pwned)\"\nisolcpus=1-3\nskew_tick=1\n" },
                { "'console=ttyS0 isolcpus=7 a='\"'\"'z;touch pwned;'\"'\"",
                  "console=ttyS0\na='z;touch\npwned;'\nisolcpus=1-3\nskew_tick=1\n" },
                { "'dyndbg=\"file a.c +p\" quiet'", "dyndbg=\"file a.c +p\"\nisolcpus=1-3\nskew_tick=1\n" },
                { "\"x=\\$(touch pwned) \\`touch pwned\\` quiet\"",
                  "x=$(touch\npwned)\n`touch\npwned`\nisolcpus=1-3\nskew_tick=1\n" },
                { "'isolcpus=7 '\"'\"'$(touch pwned)'\"'\"' -- single'",
                  "'$(touch\npwned)'\nisolcpus=1-3\nskew_tick=1\n--\nsingle\n" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *grub = NULL, *before = NULL, *words = NULL, *sourced = NULL;
                ck_assert(asprintf(&grub, "GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX=%s\nGRUB_CMDLINE_LINUX_DEFAULT=\"\"\n",
                                   cases[i].line) >= 0);
                test_write(host_dir, "etc/default/grub", grub);
                _cleanup_(plan_freep) Plan *p = plan_ok(
                        "{\"boot\": {\"args\": {\"isolcpus\": \"1-3\", \"skew_tick\": \"1\", \"quiet\": false}}}");
                before = grub_source();
                write_all(p);
                sourced = grub_source();
                words = grub_words(sourced);
                ck_assert_msg(streq(words, cases[i].words), "case %zu: %s: words\n%s, expected\n%s", i, cases[i].line,
                              words, cases[i].words);
                _cleanup_free_ char *iso = read_arg("isolcpus"), *quiet = read_arg("quiet");
                ck_assert_str_eq(iso, "1-3");
                ck_assert_ptr_null(quiet);
                revert_all(p);
                ck_assert(!exists_rel("etc/default/grub.d/rtpart.cfg"));
                _cleanup_free_ char *after = grub_source();
                ck_assert_str_eq(after, before);
        }
}
END_TEST

/* The user's later edits to GRUB_CMDLINE_LINUX take effect; one that sets an argument rtpart owns
 * to another value is what GRUB reads for it (drift); revert keeps them. */
START_TEST(test_grub_later_edits) {
        test_write(host_dir, "etc/default/grub",
                   "GRUB_CMDLINE_LINUX=\"hugepages=16 isolcpus=1\"\nGRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\n");
        _cleanup_(plan_freep) Plan *p = plan_ok("{\"boot\": {\"args\": {\"isolcpus\": \"1-3\", \"quiet\": false}}}");
        write_all(p);
        _cleanup_free_ char *s1 = grub_source();
        ck_assert_str_eq(s1, "L[hugepages=16 isolcpus=1-3]\nD[]\n");

        test_write(host_dir, "etc/default/grub",
                   "GRUB_CMDLINE_LINUX=\"hugepages=32 isolcpus=1\"\nGRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\n");
        _cleanup_free_ char *s2 = grub_source(), *iso = read_arg("isolcpus"), *hp = read_arg("hugepages");
        ck_assert_str_eq(s2, "L[hugepages=32 isolcpus=1-3]\nD[]\n");
        ck_assert_str_eq(iso, "1-3");
        ck_assert_str_eq(hp, "32");

        /* isolcpus is rtpart's: the user's own value for it is a conflict, read as theirs. */
        test_write(host_dir, "etc/default/grub",
                   "GRUB_CMDLINE_LINUX=\"hugepages=32 isolcpus=5\"\nGRUB_CMDLINE_LINUX_DEFAULT=\"quiet splash\"\n");
        _cleanup_free_ char *iso2 = read_arg("isolcpus"), *quiet = read_arg("quiet");
        ck_assert_str_eq(iso2, "5");
        ck_assert_ptr_null(quiet);
        revert_all(p);
        ck_assert(!exists_rel("etc/default/grub.d/rtpart.cfg"));
        _cleanup_free_ char *s3 = grub_source();
        ck_assert_str_eq(s3, "L[hugepages=32 isolcpus=5]\nD[quiet splash]\n");
}
END_TEST

/* What rtpart cannot take out or know without running the file is refused, with the reason, before
 * anything is written: a value from a command substitution, an argument separated by a tab. */
START_TEST(test_grub_refusals) {
        Knob k = { .id = (char *) "boot/isolcpus", .domain = DOMAIN_BOOT, .kind = VALUE_BOOTARG, .reboot = true };
        KnobResult w = {};
        test_write(host_dir, "etc/default/grub", "GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX=\"$(cat /etc/cmdline) quiet\"\n");
        _cleanup_(plan_freep) Plan *p = plan_ok("{\"boot\": {\"args\": {\"isolcpus\": \"1-3\"}}}");
        ck_assert(plan_has_note(p,
                                "/etc/default/grub, line 2: a command substitution ($(…)): GRUB_CMDLINE_LINUX's "
                                "value cannot be known without running the file"));
        ck_assert_int_eq(backend_boot.write(root, &k, "1-3", /* keep= */ NULL, &w), -EBADMSG);
        ck_assert_ptr_nonnull(strstr(w.reason, "write the kernel arguments there literally"));
        knob_result_done(&w);
        ck_assert(!exists_rel("etc/default/grub.d/rtpart.cfg"));

        test_write(host_dir, "etc/default/grub", "GRUB_CMDLINE_LINUX=\"quiet\tisolcpus=7\"\n");
        ck_assert_int_eq(backend_boot.write(root, &k, "1-3", /* keep= */ NULL, &w), -EBADMSG);
        ck_assert_ptr_nonnull(strstr(w.reason, "separate the arguments with spaces"));
        knob_result_done(&w);
        ck_assert(!exists_rel("etc/default/grub.d/rtpart.cfg"));
}
END_TEST

/* A drop-in an older rtpart wrote, which restated the variables: read as it was, and rewritten
 * in the new form by the next write; revert takes it away. */
START_TEST(test_grub_older_dropin) {
        test_write(host_dir, "etc/default/grub.d/rtpart.cfg",
                   "# Kernel arguments managed by rtpart; 'rtpartctl revert' removes this file.\n"
                   "# Do not edit: rtpart rewrites it. The lines below record what rtpart set.\n"
                   "# rtpart-set: isolcpus=1-3\n"
                   "# rtpart-unset: quiet\n"
                   "GRUB_CMDLINE_LINUX=\"isolcpus=1-3\"\n"
                   "GRUB_CMDLINE_LINUX_DEFAULT=\"\"\n");
        _cleanup_free_ char *iso = read_arg("isolcpus"), *quiet = read_arg("quiet");
        ck_assert_str_eq(iso, "1-3");
        ck_assert_ptr_null(quiet);
        Knob k = { .id = (char *) "boot/nohz_full", .domain = DOMAIN_BOOT, .kind = VALUE_BOOTARG, .reboot = true };
        ck_assert_int_eq(backend_write(&backend_boot, root, &k, "1-3"), 0);
        _cleanup_free_ char *sourced = grub_source(), *drop = read_rel("etc/default/grub.d/rtpart.cfg");
        ck_assert_str_eq(sourced, "L[isolcpus=1-3 nohz_full=1-3]\nD[]\n");
        ck_assert_ptr_nonnull(strstr(drop, "# rtpart-format: 2\n"));
        Knob ki = { .id = (char *) "boot/isolcpus", .domain = DOMAIN_BOOT, .kind = VALUE_BOOTARG, .reboot = true };
        Knob kq = { .id = (char *) "boot/quiet", .domain = DOMAIN_BOOT, .kind = VALUE_BOOTARG, .reboot = true };
        ck_assert_int_eq(backend_write(&backend_boot, root, &k, NULL), 0);
        ck_assert_int_eq(backend_write(&backend_boot, root, &ki, NULL), 0);
        ck_assert_int_eq(backend_write(&backend_boot, root, &kq, ""), 0);
        ck_assert(!exists_rel("etc/default/grub.d/rtpart.cfg"));
}
END_TEST

/* The same through rtpartctl on a fake GRUB host: apply, a later edit of the user's that takes
 * effect (verify in sync), one that conflicts with an argument rtpart owns (verify 3, naming it),
 * revert (the user's file as they left it, rtpart's drop-in gone). */
START_TEST(test_grub_verify_drift) {
        _cleanup_free_ char *dir = tree_copy_host("intel-2s"), *prof = NULL, *out = NULL;
        test_write(dir, "etc/default/grub",
                   "GRUB_CMDLINE_LINUX=\"hugepages=16\"\nGRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\n");
        prof = test_profile(prof_dir, "edits", "{\"boot\": {\"args\": {\"isolcpus\": \"1-3\", \"skew_tick\": \"1\"}}}");
        _cleanup_free_ char *apply = NULL;
        ck_assert(asprintf(&apply, "apply '%s'", prof) >= 0);
        ck_assert_int_eq(tree_ctl(dir, &out, apply), 0);
        free(out);
        ck_assert_int_eq(tree_ctl(dir, &out, "verify"), 4); /* in sync, a reboot pending */
        free(out);

        static const char edited[] = "GRUB_CMDLINE_LINUX=\"hugepages=32\"\nGRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\n";
        test_write(dir, "etc/default/grub", edited);
        ck_assert_int_eq(tree_ctl(dir, &out, "verify"), 4);
        free(out);
        static const char conflict[] =
                "GRUB_CMDLINE_LINUX=\"hugepages=32 isolcpus=5\"\nGRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\n";
        test_write(dir, "etc/default/grub", conflict);
        ck_assert_int_eq(tree_ctl(dir, &out, "verify"), 3);
        ck_assert_msg(strstr(out, "boot/isolcpus"), "verify does not name the argument: %s", out);
        free(out);
        ck_assert_int_eq(tree_ctl(dir, &out, "--json verify"), 3);
        ck_assert_msg(strstr(out, "\"knob\": \"boot/isolcpus\"") && strstr(out, "\"actual\": \"5\""), "%s", out);
        ck_assert_int_eq(tree_ctl(dir, NULL, "revert"), 0);
        tree_assert_file(dir, "etc/default/grub", conflict);
        ck_assert(!tree_exists(dir, "etc/default/grub.d/rtpart.cfg"));
        tree_remove(dir);
}
END_TEST

/* Defence in depth: the write verb itself refuses what the plan would have, before touching a file
 * (a journal or a caller that bypassed the plan). */
START_TEST(test_write_refuses_unsafe) {
        Knob k = { .id = (char *) "boot/x", .domain = DOMAIN_BOOT, .kind = VALUE_BOOTARG, .reboot = true };
        ck_assert_int_eq(backend_write(&backend_boot, root, &k, "$(id>/tmp/pwned)"), -EINVAL);
        ck_assert_int_eq(backend_write(&backend_boot, root, &k, "`id`"), -EINVAL);
        ck_assert_int_eq(backend_write(&backend_boot, root, &k, "a\nGRUB_CMDLINE_LINUX=x"), -EINVAL);
        ck_assert(!exists_rel("etc/default/grub.d/rtpart.cfg"));
        Knob bad_name = { .id = (char *) "boot/x;id", .domain = DOMAIN_BOOT, .kind = VALUE_BOOTARG, .reboot = true };
        ck_assert_int_eq(backend_write(&backend_boot, root, &bad_name, "1"), -EINVAL);
        ck_assert(!exists_rel("etc/default/grub.d/rtpart.cfg"));

        /* BLS: a newline would start a new line of the entry ("linux /evil"). */
        static const char entry[] = "title Debian\nlinux /vmlinuz\noptions root=/dev/vda ro quiet\n";
        test_write(host_dir, "boot/loader/entries/debian.conf", entry);
        ck_assert_int_eq(backend_write(&backend_boot, root, &k, "1\nlinux /evil"), -EINVAL);
        _cleanup_free_ char *now = read_rel("boot/loader/entries/debian.conf");
        ck_assert_str_eq(now, entry);
        /* A legitimate value still goes in, and reverting restores the entry byte for byte. */
        ck_assert_int_eq(backend_write(&backend_boot, root, &k, "1"), 0);
        _cleanup_free_ char *set = read_rel("boot/loader/entries/debian.conf");
        ck_assert_str_eq(set, "title Debian\nlinux /vmlinuz\noptions root=/dev/vda ro quiet x=1\n");
        ck_assert_int_eq(backend_write(&backend_boot, root, &k, NULL), 0);
        _cleanup_free_ char *back = read_rel("boot/loader/entries/debian.conf");
        ck_assert_str_eq(back, entry);
}
END_TEST

/* What follows "--" is init's: arguments go before it, and init's own stay as they are. A line
 * that leaves a quote open is not edited (the argument would become part of the quoted one). An
 * original value with blanks inside quotes goes back quoted. */
START_TEST(test_edit_init_args_and_quotes) {
        Knob k = { .id = (char *) "boot/x", .domain = DOMAIN_BOOT, .kind = VALUE_BOOTARG, .reboot = true };
        static const char entry[] = "title Debian\noptions root=/dev/vda ro -- single x=2\n";
        test_write(host_dir, "boot/loader/entries/debian.conf", entry);
        ck_assert_int_eq(backend_write(&backend_boot, root, &k, "1"), 0);
        _cleanup_free_ char *set = read_rel("boot/loader/entries/debian.conf");
        ck_assert_str_eq(set, "title Debian\noptions root=/dev/vda ro x=1 -- single x=2\n");
        _cleanup_free_ char *v = read_arg("x");
        ck_assert_str_eq(v, "1");
        ck_assert_int_eq(backend_write(&backend_boot, root, &k, NULL), 0);
        _cleanup_free_ char *back = read_rel("boot/loader/entries/debian.conf");
        ck_assert_str_eq(back, entry);

        static const char open_quote[] = "title Debian\noptions root=/dev/vda \"foo=a b\n";
        test_write(host_dir, "boot/loader/entries/debian.conf", open_quote);
        ck_assert_int_eq(backend_write(&backend_boot, root, &k, "1"), -EBADMSG);
        _cleanup_free_ char *same = read_rel("boot/loader/entries/debian.conf");
        ck_assert_str_eq(same, open_quote);

        test_write(host_dir, "boot/loader/entries/debian.conf", "title Debian\noptions root=/dev/vda \"foo=a b\"\n");
        Knob foo = { .id = (char *) "boot/foo", .domain = DOMAIN_BOOT, .kind = VALUE_BOOTARG, .reboot = true };
        _cleanup_free_ char *orig = read_arg("foo");
        ck_assert_str_eq(orig, "a b");
        ck_assert_int_eq(backend_write(&backend_boot, root, &foo, "1"), 0);
        ck_assert_int_eq(backend_write(&backend_boot, root, &foo, orig), 0);
        _cleanup_free_ char *reverted = read_arg("foo");
        ck_assert_str_eq(reverted, "a b");
        _cleanup_free_ char *root_arg = read_arg("root");
        ck_assert_str_eq(root_arg, "/dev/vda");

        /* GRUB: GRUB_CMDLINE_LINUX as sourced keeps "--" and init's arguments last. */
        _cleanup_free_ char *entry_path = NULL;
        ck_assert(asprintf(&entry_path, "%s/boot/loader/entries/debian.conf", host_dir) >= 0);
        ck_assert_int_eq(unlink(entry_path), 0);
        test_write(host_dir, "etc/default/grub", "GRUB_CMDLINE_LINUX=\"ro -- single x=2\"\n");
        ck_assert_int_eq(backend_write(&backend_boot, root, &k, "1"), 0);
        _cleanup_free_ char *sourced = grub_source();
        ck_assert_str_eq(sourced, "L[ro x=1 -- single x=2]\nD[]\n");
        _cleanup_free_ char *g = read_arg("x");
        ck_assert_str_eq(g, "1");
}
END_TEST

static Suite *suite(void) {
        Suite *s = suite_create("backend-boot");
        TCase *tc = tcase_create("plan");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, test_value_injection_refused);
        tcase_add_test(tc, test_name_refused);
        tcase_add_test(tc, test_legitimate_accepted);
        tcase_add_test(tc, test_grub_dropin);
        tcase_add_test(tc, test_grub_user_quoting);
        tcase_add_test(tc, test_grub_later_edits);
        tcase_add_test(tc, test_grub_verify_drift);
        tcase_add_test(tc, test_grub_refusals);
        tcase_add_test(tc, test_grub_older_dropin);
        tcase_add_test(tc, test_write_refuses_unsafe);
        tcase_add_test(tc, test_edit_init_args_and_quotes);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        return test_run(suite());
}
