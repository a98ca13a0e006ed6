/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config.h"
#include "ctl.h"
#include "strv.h"

/* rtpartctl: the options, the verb table, help, dispatch and the exit status. The verbs live in
 * ctl-*.c (see ctl.h). */

const char *arg_root = "/";
const char *arg_state_dir = NULL;
const char *arg_varlink_socket = NULL;
bool arg_json = false;
bool arg_all = false;
bool arg_summary = false;
bool arg_no_daemon = false;
unsigned arg_seconds = 5;
const char *arg_cpus = NULL;
const char *arg_svg = NULL;
const char *arg_html = NULL;
bool arg_no_osnoise = false;
unsigned arg_vcpus = 0;
const char *arg_domain = NULL;
uint64_t arg_memory_kib = 0;
const char *arg_output = NULL;
bool arg_force = false;
bool arg_active = false;
int arg_node = -1;
const char *arg_emulator = NULL;
unsigned arg_cache = 0;
const char *arg_hugepages = NULL;
static bool arg_help = false;

/* The options, in the order help lists them; a verb's help lists those it takes. */
typedef enum CtlOption {
        OPTION_ROOT = 1 << 0,
        OPTION_JSON = 1 << 1,
        OPTION_ALL = 1 << 2,
        OPTION_NO_DAEMON = 1 << 3,
        OPTION_VARLINK_SOCKET = 1 << 4,
        OPTION_STATE_DIR = 1 << 5,
        OPTION_HELP = 1 << 6,
        OPTION_VERSION = 1 << 7,
        OPTION_SECONDS = 1 << 8,
        OPTION_CPUS = 1 << 9,
        OPTION_SVG = 1 << 10,
        OPTION_NO_OSNOISE = 1 << 11,
        OPTION_VCPUS = 1 << 12,
        OPTION_DOMAIN = 1 << 13,
        OPTION_OUTPUT = 1 << 14,
        OPTION_SUMMARY = 1 << 15,
        OPTION_FORCE = 1 << 16,
        OPTION_ACTIVE = 1 << 17,
        OPTION_HTML = 1 << 18,
        OPTION_MEMORY = 1 << 19,
        OPTION_NODE = 1 << 20,
        OPTION_EMULATOR = 1 << 21,
        OPTION_CACHE = 1 << 22,
        OPTION_HUGEPAGES = 1 << 23,
} CtlOption;

static const struct {
        CtlOption option;
        const char *help;
} option_help[] = {
        { OPTION_ROOT, "  -r, --root=DIR    Operate on the host tree under DIR instead of /\n" },
        { OPTION_JSON, "  -j, --json        Print one JSON document (watch: one object per line)\n" },
        { OPTION_ALL, "  -a, --all         plan: also list knobs already at their desired value\n" },
        { OPTION_SUMMARY, "      --summary     plan: a line of counts per domain instead of every knob\n" },
        { OPTION_NO_DAEMON, "      --no-daemon   Do not contact rtpartd; work on the host directly\n" },
        { OPTION_VARLINK_SOCKET,
          "      --varlink-socket=PATH\n"
          "                    Talk to the rtpartd listening on PATH instead of\n"
          "                    /run/rtpartd/org.rtpart.Manager under the root\n" },
        { OPTION_STATE_DIR,
          "      --state-dir=DIR  Keep the journal in DIR instead of /var/lib/rtpart\n"
          "                    under the root (works on the host directly)\n" },
        { OPTION_SECONDS, "      --seconds=N   audit, check: observe for N seconds (default 5)\n" },
        { OPTION_CPUS, "      --cpus=LIST   audit, check: these CPUs instead of the isolated ones\n" },
        { OPTION_SVG, "      --svg=FILE    check latency: also draw the histograms into FILE\n" },
        { OPTION_HTML, "      --html=FILE   check: also write the report as one HTML file\n" },
        { OPTION_NO_OSNOISE, "      --no-osnoise  audit: do not run the osnoise tracer in the window\n" },
        { OPTION_VCPUS, "      --vcpus=N     export libvirt: pin N vCPUs; vm add: reserve CPUs for N\n" },
        { OPTION_NODE, "      --node=N      vm add: on NUMA node N (default: one with room)\n" },
        { OPTION_EMULATOR,
          "      --emulator=share|isolate\n"
          "                    vm add: emulator threads on housekeeping CPUs (share,\n"
          "                    the default) or on an isolated core of their own\n" },
        { OPTION_CACHE, "      --cache=PERCENT  vm add: its share of the L3 ways kept for guests\n" },
        { OPTION_HUGEPAGES, "      --hugepages=SIZE vm add: the huge page size backing it (2M, 1G)\n" },
        { OPTION_DOMAIN, "      --domain=FILE export libvirt: merge into this domain XML and print it\n" },
        { OPTION_MEMORY,
          "      --memory=SIZE export libvirt: the guest's memory (\"16G\"), for its NUMA\n"
          "                    cells where its vCPUs span nodes (--domain: its <memory>)\n" },
        { OPTION_OUTPUT, "  -o, --output=FILE import-tuned: write the profile to FILE, not stdout\n" },
        { OPTION_ACTIVE, "      --active      import-tuned: the profile tuned has active, not NAME\n" },
        { OPTION_FORCE,
          "      --force       apply: even while tuned runs with a profile that sets\n"
          "                    some of the same knobs\n" },
        { OPTION_HELP, "  -h, --help        Show this help\n" },
        { OPTION_VERSION, "      --version     Show the version\n" },
};

/* The options given on the command line. */
static CtlOption arg_given = 0;

/* The options only some verbs take, as a refusal names them. */
static const struct {
        CtlOption option;
        const char *name;
} option_names[] = {
        { OPTION_ALL, "--all" },         { OPTION_SUMMARY, "--summary" },
        { OPTION_SECONDS, "--seconds" }, { OPTION_CPUS, "--cpus" },
        { OPTION_SVG, "--svg" },         { OPTION_NO_OSNOISE, "--no-osnoise" },
        { OPTION_VCPUS, "--vcpus" },     { OPTION_DOMAIN, "--domain" },
        { OPTION_OUTPUT, "--output" },   { OPTION_FORCE, "--force" },
        { OPTION_ACTIVE, "--active" },   { OPTION_HTML, "--html" },
        { OPTION_NODE, "--node" },       { OPTION_EMULATOR, "--emulator" },
        { OPTION_CACHE, "--cache" },     { OPTION_HUGEPAGES, "--hugepages" },
        { OPTION_MEMORY, "--memory" },
};

#define OPTIONS_DAEMON (OPTION_ROOT | OPTION_JSON | OPTION_NO_DAEMON | OPTION_VARLINK_SOCKET | OPTION_STATE_DIR)

/* One verb: how it is called, what it does, and the function that does it. */
typedef struct Verb {
        const char *name;
        unsigned min_args, max_args; /* arguments after the verb's name */
        const char *arg;             /* their name in the usage ("PROFILE"), NULL for none */
        const char *summary;         /* the overview's line ('\n' continues it) */
        const char *help;            /* VERB --help, between the usage and the options */
        CtlOption options;           /* the options it takes, listed in its help */
        int (*run)(int argc, char **argv);
        bool prints_document; /* its output is a document (JSON, XML) for programs, not text */
} Verb;

static int verb_help(int argc, char **argv);

static const Verb verbs[] = {
        {
                "list",
                0,
                0,
                NULL,
                "List the installed profiles",
                "Lists the installed profiles, one a line: the name, the profile's summary, and\n"
                "\"[user]\" for a profile found in /etc/rtpart/profiles (\"[user, overrides shipped]\"\n"
                "when it hides a shipped one).\n",
                OPTION_ROOT | OPTION_JSON | OPTION_NO_DAEMON | OPTION_VARLINK_SOCKET,
                verb_list,
        },
        {
                "show",
                1,
                1,
                "PROFILE",
                "Print PROFILE resolved for this host, as JSON",
                "Prints PROFILE resolved for this host, always as JSON: its includes merged,\n"
                "the vendor overlay applied, variables expanded, CPU classes and expressions\n"
                "replaced by CPU lists.\n",
                OPTION_ROOT | OPTION_STATE_DIR,
                verb_show,
                /* prints_document= */ true,
        },
        {
                "plan",
                1,
                1,
                "PROFILE",
                "Show what applying PROFILE would change; changes nothing",
                "Shows what applying PROFILE would change, one line per knob under a heading per\n"
                "domain (with --summary, a line of counts per domain), and changes nothing.\n",
                OPTIONS_DAEMON | OPTION_ALL | OPTION_SUMMARY,
                verb_plan,
        },
        {
                "apply",
                1,
                1,
                "PROFILE",
                "Apply PROFILE: all or nothing, originals journalled",
                "Makes the host what PROFILE says, all or nothing: the original value of every\n"
                "knob is journalled before the first write, and a failed write undoes the run.\n"
                "Refuses (status 2) while tuned runs with a profile that sets some of the same\n"
                "knobs, unless --force.\n",
                OPTIONS_DAEMON | OPTION_FORCE,
                verb_apply,
        },
        {
                "verify",
                0,
                0,
                NULL,
                "Check every knob of the applied profile; exit 3 on drift,\n"
                "4 when only a reboot is pending for boot arguments",
                "Re-reads every knob of the applied profile and compares it with the value the\n"
                "profile gave it. Exits with status 3 on drift, 4 when only a reboot is pending\n"
                "for boot arguments.\n",
                OPTIONS_DAEMON,
                verb_verify,
        },
        {
                "revert",
                0,
                0,
                NULL,
                "Put back every original value and forget the profile",
                "Writes back the original value of every knob in the journal and forgets the\n"
                "applied profile; what cannot be restored stays in the journal for a later revert.\n",
                OPTIONS_DAEMON,
                verb_revert,
        },
        {
                "status",
                0,
                0,
                NULL,
                "Show the applied profile, drift, pending reboot, unmovable items",
                "Shows the applied profile and when it was applied, its knobs and their drift,\n"
                "whether a reboot is needed, the unmovable items and the last error.\n",
                OPTIONS_DAEMON,
                verb_status,
        },
        {
                "watch",
                0,
                0,
                NULL,
                "Print drift as rtpartd sees it, one line per knob, until\n"
                "interrupted (needs rtpartd)",
                "Prints drift as rtpartd sees it, one line per knob, as it happens, until\n"
                "interrupted (SIGINT or SIGTERM). Needs rtpartd.\n",
                OPTION_ROOT | OPTION_JSON | OPTION_VARLINK_SOCKET,
                verb_watch,
        },
        {
                "audit",
                0,
                0,
                NULL,
                "Observe the isolated CPUs and say what disturbs them;\n"
                "exit 3 when one is noisy",
                "Observes the isolated CPUs (the applied profile's, else the kernel's isolated\n"
                "and nohz_full CPUs, else --cpus) for --seconds and reports, per CPU: the\n"
                "interrupts by source, softirqs, whether the scheduler tick stopped, and the\n"
                "threads that ran there or may run there outside the profile's partitions;\n"
                "a verdict (quiet or noisy), and for each source what in the profile would\n"
                "remove it; where the kernel has the osnoise tracer, its noise figures too\n"
                "(tracefs is put back after). Exits with status 3 when a CPU is noisy.\n",
                OPTION_ROOT | OPTION_JSON | OPTION_STATE_DIR | OPTION_SECONDS | OPTION_CPUS | OPTION_NO_OSNOISE,
                verb_audit,
        },
        {
                "check",
                0,
                1,
                "hardware|latency",
                "Check the isolated CPUs: hardware, audit and latency in one\n"
                "report; exit 3 over the profile's check limits",
                "check hardware: the kernel's hwlat tracer on the CPUs for --seconds (the largest\n"
                "gap the hardware or firmware took, SMIs counted through MSR_SMI_COUNT), and the\n"
                "settings that limit latency (SMT, idle states, turbo, the frequency driver and\n"
                "governor, the TSC and clocksource, the NMI watchdog, irqbalance, transparent\n"
                "hugepages, PREEMPT_RT, kvm.nx_huge_pages), each with a verdict and its fix.\n"
                "check latency: wake-up latency with the kernel's timerlat tracer, or cyclictest\n"
                "where the kernel has none: per CPU min/avg/p99/max of IRQ and thread latency.\n"
                "check: hardware, then audit, then latency, one report (--html: also as one HTML\n"
                "file), against check.hwlat_max_us, check.noise_max_percent and\n"
                "check.latency_max_us (defaults where the profile sets none). The CPUs are the\n"
                "isolated ones, as audit chooses them. tracefs is put back as it was, also when\n"
                "interrupted. Exits with status 3 when a limit is passed (or a setting is bad),\n"
                "1 when a measurement could not run (the report says why); check latency only\n"
                "against the profile's check.latency_max_us.\n",
                OPTION_ROOT | OPTION_JSON | OPTION_STATE_DIR | OPTION_SECONDS | OPTION_CPUS | OPTION_SVG | OPTION_HTML,
                verb_check,
        },
        {
                "export",
                1,
                2,
                "libvirt|nova [NAME|PROFILE]",
                "Print a realtime guest's libvirt domain, or nova's and kubelet's settings",
                "libvirt: a realtime guest of --vcpus vCPUs as libvirt's kvm-realtime guide\n"
                "has it: <vcpu> and <cputune> (vCPUs pinned one per isolated CPU, NUMA-local,\n"
                "SCHED_FIFO 1; emulator and I/O threads on housekeeping CPUs; <cachetune> of\n"
                "the L3 ways the profile keeps for guests), <numatune> strict, <memoryBacking>\n"
                "(the profile's huge pages, locked, unshared), <cpu mode='host-passthrough'>\n"
                "(tsc-deadline required where the host has it; NUMA cells where the vCPUs span\n"
                "nodes), <pmu state='off'/> and <memballoon model='none'/>; with --domain,\n"
                "merged into that domain XML, printed whole, what it replaced named on stderr.\n"
                "Exits with status 2 when the vCPUs do not fit the isolated CPUs. nova:\n"
                "nova.conf's reserved_huge_pages and [compute] cpu_dedicated_set and\n"
                "cpu_shared_set, a realtime flavor's `openstack flavor set` line, and kubelet's\n"
                "reservedSystemCPUs (with --json, as one JSON document). The split is\n"
                "PROFILE's planned for this host, else the applied profile's. export libvirt\n"
                "NAME, a VM of the ledger (vm add): that VM's guest, its vCPUs on its\n"
                "reservation.\n",
                OPTION_ROOT | OPTION_JSON | OPTION_STATE_DIR | OPTION_VCPUS | OPTION_DOMAIN | OPTION_MEMORY,
                verb_export,
                /* prints_document= */ true,
        },
        {
                "import-tuned",
                0,
                1,
                "NAME|DIR",
                "Convert a tuned profile into an rtpart profile",
                "Reads the tuned profile NAME (/etc/tuned/NAME, then /usr/lib/tuned/NAME, under\n"
                "--root) or the one in directory DIR, with its includes, variables and functions\n"
                "evaluated on the host, and prints it as an rtpart profile; with --active, the\n"
                "profile tuned has active (/etc/tuned/active_profile). Every option that has\n"
                "no place in an rtpart profile is listed on stderr (file, line, section, option\n"
                "and why), and the exit status is then 5; the profile has the rest.\n",
                OPTION_ROOT | OPTION_OUTPUT | OPTION_ACTIVE,
                verb_import_tuned,
                /* prints_document= */ true,
        },
        {
                "vm",
                1,
                2,
                "add|remove|list [NAME]",
                "Reserve isolated CPUs for a VM, free them, list the ledger",
                "The ledger of which VM holds which isolated CPUs of the applied profile.\n"
                "add NAME --vcpus N: reserves a core per vCPU (SMT siblings held idle, unless\n"
                "the profile's cpus.vcpu_siblings is \"together\"), on one NUMA node whenever\n"
                "one has room (--node: that one), never another VM's; the emulator on the\n"
                "housekeeping CPUs of its node (--emulator isolate: an isolated core of its\n"
                "own). Exits with status 2 when they do not fit, naming how many cores are\n"
                "free on which nodes. remove NAME: frees them. list: every VM and its CPUs.\n"
                "Through rtpartd when it runs; add and remove need root.\n",
                OPTIONS_DAEMON | OPTION_VCPUS | OPTION_NODE | OPTION_EMULATOR | OPTION_CACHE | OPTION_HUGEPAGES,
                verb_vm,
        },
        {
                "help",
                0,
                1,
                "VERB",
                "Show this help, or VERB's usage and options",
                "Shows the overview of the commands, or VERB's usage and options (as\n"
                "'rtpartctl VERB --help' does).\n",
                0,
                verb_help,
        },
};

static const Verb *verb_find(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (streq(verbs[i].name, name))
                        return &verbs[i];
        return NULL;
}

static void print_options(CtlOption options) {
        for (size_t i = 0; i < ELEMENTSOF(option_help); i++)
                if (options & option_help[i].option)
                        fputs(option_help[i].help, stdout);
}

static void help_overview(void) {
        printf("Usage: rtpartctl [OPTIONS] COMMAND [ARG]\n"
               "\n"
               "Partition and tune a realtime (KVM) host from a JSON profile.\n"
               "\n"
               "Commands:\n");
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++) {
                const Verb *v = &verbs[i];
                char call[64];
                snprintf(call, sizeof(call), "%s%s%s%s%s", v->name, v->arg ? " " : "",
                         v->arg && v->min_args == 0 ? "[" : "", strempty(v->arg),
                         v->arg && v->min_args == 0 ? "]" : "");
                /* A call longer than its column gets a line of its own. */
                printf(strlen(call) < 18 ? "  %-18s" : "  %s\n                    ", call);
                for (const char *s = v->summary; *s; s++)
                        if (*s == '\n')
                                fputs("\n                    ", stdout);
                        else
                                fputc(*s, stdout);
                fputc('\n', stdout);
        }
        printf("\n"
               "PROFILE is a name (looked up in /etc/rtpart/profiles, then\n"
               "/usr/share/rtpart/profiles, both under --root) or a path to a .json file.\n"
               "When rtpartd runs, the commands go through it; else they work on the host\n"
               "directly, with the same output. 'rtpartctl COMMAND --help' shows a command's\n"
               "usage and options.\n"
               "\n"
               "Options:\n");
        print_options(~0U);
        printf("\n"
               "Exit status: 0 done, 1 failed, 2 bad usage or invalid profile,\n"
               "3 verify found drift, 4 a reboot is needed for boot-time knobs,\n"
               "5 import-tuned wrote the profile without the options it listed.\n"
               "See rtpartctl(1), rtpart.profile(5) and rtpartd(8).\n");
}

static void verb_usage(const Verb *v, FILE *f) {
        fprintf(f, "Usage: rtpartctl %s [OPTIONS]%s%s%s%s\n", v->name, v->arg ? " " : "",
                v->arg && v->min_args == 0 ? "[" : "", strempty(v->arg), v->arg && v->min_args == 0 ? "]" : "");
}

static void verb_print_help(const Verb *v) {
        verb_usage(v, stdout);
        printf("\n%s\nOptions:\n", v->help);
        print_options(v->options | OPTION_HELP | OPTION_VERSION);
        printf("\nSee rtpartctl(1).\n");
}

static int verb_help(int argc, char **argv) {
        if (argc < 2) {
                help_overview();
                return 0;
        }
        const Verb *v = verb_find(argv[1]);
        if (!v) {
                log_error("unknown command '%s'; try 'rtpartctl help'", argv[1]);
                return EXIT_USAGE;
        }
        verb_print_help(v);
        return 0;
}

/* "status does not take --seconds (audit's and check's), --output (import-tuned's)": each option
 * given that v does not take, and the verbs that do. */
static void refuse_options(const Verb *v, CtlOption wrong) {
        StrBuf b = {};
        for (size_t i = 0; i < ELEMENTSOF(option_names); i++) {
                CtlOption o = option_names[i].option;
                size_t n_takers = 0, k = 0;
                if (!(wrong & o))
                        continue;
                for (size_t j = 0; j < ELEMENTSOF(verbs); j++)
                        n_takers += !!(verbs[j].options & o);
                strbuf_appendf(&b, "%s%s (", b.len > 0 ? ", " : "", option_names[i].name);
                for (size_t j = 0; j < ELEMENTSOF(verbs); j++)
                        if (verbs[j].options & o)
                                strbuf_appendf(&b, "%s%s's",
                                               k == 0                      ? ""
                                                       : k + 1 == n_takers ? " and "
                                                                           : ", ",
                                               verbs[j].name),
                                        k++;
                strbuf_append(&b, ")");
        }
        _cleanup_free_ char *list = strbuf_steal(&b);
        log_error("%s does not take %s", v->name, strempty(list));
}

/* The verb's argument count is checked here, once, for every verb. */
static int dispatch(int argc, char **argv) {
        const Verb *v = verb_find(argv[0]);
        unsigned n = (unsigned) argc - 1;

        if (!v) {
                log_error("unknown command '%s'; try 'rtpartctl --help'", argv[0]);
                return EXIT_USAGE;
        }
        /* Text for people is escaped on its way out (ctl-text.c); documents are printed as they are. */
        if (!arg_json && !v->prints_document && ctl_text_stdout() < 0)
                return log_oom();
        if (arg_help) {
                verb_print_help(v);
                return 0;
        }
        CtlOption wrong = 0;
        for (size_t i = 0; i < ELEMENTSOF(option_names); i++)
                if (arg_given & option_names[i].option & ~v->options)
                        wrong |= option_names[i].option;
        if (wrong) {
                refuse_options(v, wrong);
                return EXIT_USAGE;
        }
        if (n < v->min_args || n > v->max_args) {
                if (v->max_args == 0)
                        log_error("%s takes no argument", v->name);
                else if (v->min_args == v->max_args && islower((unsigned char) v->arg[0]))
                        log_error("%s needs exactly one argument: %s", v->name, v->arg); /* a word */
                else if (v->min_args == v->max_args)
                        log_error("%s needs exactly one %s", v->name, v->arg);
                else if (n < v->min_args)
                        log_error("%s needs %s", v->name, v->arg);
                else if (strchr(v->arg, ' '))
                        log_error("%s takes at most %u arguments: %s", v->name, v->max_args, v->arg);
                else
                        log_error("%s takes at most one %s", v->name, v->arg);
                verb_usage(v, stderr);
                return EXIT_USAGE;
        }
        return v->run(argc, argv);
}

/* A whole number from 1 to max, digits only. */
static bool parse_count(const char *s, unsigned long max, unsigned *ret) {
        char *end;
        errno = 0;
        unsigned long v = strtoul(s, &end, 10);
        if (!*s || *end || errno || v < 1 || v > max || s[0] == '-')
                return false;
        *ret = (unsigned) v;
        return true;
}

/* A size with a binary unit (K, M, G, T, optionally followed by "iB" or "B"; KiB without one),
 * in KiB, 1 KiB to 1 PiB. */
static bool parse_size_kib(const char *s, uint64_t *ret) {
        static const char units[] = "KMGT";
        char *end;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        const char *u = *end ? strchr(units, toupper((unsigned char) *end)) : units;
        if (end == s || s[0] == '-' || errno || !u || v == 0)
                return false;
        if (*end && !streq(end + 1, "") && strcasecmp(end + 1, "iB") != 0 && strcasecmp(end + 1, "B") != 0)
                return false;
        for (const char *p = units; p < u; p++)
                v = v > (1ULL << 40) ? 0 : v * 1024;
        if (v == 0 || v > (1ULL << 40))
                return false;
        *ret = v;
        return true;
}

/* getopt_long()'s values for the long options that have no short one. */
enum {
        ARG_NO_DAEMON = 0x100,
        ARG_VERSION,
        ARG_STATE_DIR,
        ARG_VARLINK,
        ARG_SECONDS,
        ARG_CPUS,
        ARG_SVG,
        ARG_NO_OSNOISE,
        ARG_VCPUS,
        ARG_DOMAIN,
        ARG_SUMMARY,
        ARG_FORCE,
        ARG_ACTIVE,
        ARG_HTML,
        ARG_NODE,
        ARG_EMULATOR,
        ARG_CACHE,
        ARG_HUGEPAGES,
        ARG_MEMORY,
};

static const struct option long_options[] = { { "root", required_argument, NULL, 'r' },
                                              { "json", no_argument, NULL, 'j' },
                                              { "all", no_argument, NULL, 'a' },
                                              { "summary", no_argument, NULL, ARG_SUMMARY },
                                              { "no-daemon", no_argument, NULL, ARG_NO_DAEMON },
                                              { "varlink-socket", required_argument, NULL, ARG_VARLINK },
                                              { "state-dir", required_argument, NULL, ARG_STATE_DIR },
                                              { "help", no_argument, NULL, 'h' },
                                              { "version", no_argument, NULL, ARG_VERSION },
                                              { "seconds", required_argument, NULL, ARG_SECONDS },
                                              { "cpus", required_argument, NULL, ARG_CPUS },
                                              { "svg", required_argument, NULL, ARG_SVG },
                                              { "html", required_argument, NULL, ARG_HTML },
                                              { "no-osnoise", no_argument, NULL, ARG_NO_OSNOISE },
                                              { "vcpus", required_argument, NULL, ARG_VCPUS },
                                              { "domain", required_argument, NULL, ARG_DOMAIN },
                                              { "output", required_argument, NULL, 'o' },
                                              { "force", no_argument, NULL, ARG_FORCE },
                                              { "active", no_argument, NULL, ARG_ACTIVE },
                                              { "node", required_argument, NULL, ARG_NODE },
                                              { "emulator", required_argument, NULL, ARG_EMULATOR },
                                              { "cache", required_argument, NULL, ARG_CACHE },
                                              { "hugepages", required_argument, NULL, ARG_HUGEPAGES },
                                              { "memory", required_argument, NULL, ARG_MEMORY },
                                              {} };

/* vm add's options: false when c is none of them; else true and *ret 0, or EXIT_USAGE after a
 * message for a wrong value. */
static bool parse_vm_option(int c, int *ret) {
        *ret = EXIT_USAGE;
        switch (c) {
        case ARG_NODE: {
                unsigned n;
                if (!(streq(optarg, "0") ? (n = 0, true) : parse_count(optarg, 4095, &n))) {
                        log_error("--node takes a NUMA node number from 0 to 4095, not '%s'", optarg);
                        return true;
                }
                arg_node = (int) n;
                arg_given |= OPTION_NODE;
                break;
        }
        case ARG_EMULATOR:
                if (!streq(optarg, "share") && !streq(optarg, "isolate")) {
                        log_error("--emulator takes share or isolate, not '%s'", optarg);
                        return true;
                }
                arg_emulator = optarg;
                arg_given |= OPTION_EMULATOR;
                break;
        case ARG_CACHE:
                if (!parse_count(optarg, 100, &arg_cache)) {
                        log_error("--cache takes a percentage from 1 to 100, not '%s'", optarg);
                        return true;
                }
                arg_given |= OPTION_CACHE;
                break;
        case ARG_HUGEPAGES:
                arg_hugepages = optarg;
                arg_given |= OPTION_HUGEPAGES;
                break;
        default:
                return false;
        }
        *ret = 0;
        return true;
}

/* One option of getopt_long(): 0, -1 when done (--version), or EXIT_USAGE after a message. */
/* The options of export libvirt (--vcpus, --domain, --memory): true when c is one of them, with
 * *ret 0 or the exit status of a bad value. */
static bool parse_export_option(int c, int *ret) {
        *ret = 0;
        switch (c) {
        case ARG_VCPUS:
                if (!parse_count(optarg, 4096, &arg_vcpus)) {
                        log_error("--vcpus takes a number of vCPUs from 1 to 4096, not '%s'", optarg);
                        *ret = EXIT_USAGE;
                        return true;
                }
                arg_given |= OPTION_VCPUS;
                break;
        case ARG_DOMAIN:
                arg_domain = optarg;
                arg_given |= OPTION_DOMAIN;
                break;
        case ARG_MEMORY:
                if (!parse_size_kib(optarg, &arg_memory_kib)) {
                        log_error(
                                "--memory takes a size such as \"16G\", \"512M\" or \"1048576K\" (KiB without a unit), "
                                "not '%s'",
                                optarg);
                        *ret = EXIT_USAGE;
                        return true;
                }
                arg_given |= OPTION_MEMORY;
                break;
        default:
                return false;
        }
        return true;
}

static int parse_option(int c) {
        int r;
        if (parse_vm_option(c, &r) || parse_export_option(c, &r))
                return r;
        switch (c) {
        case 'r':
                arg_root = optarg;
                break;
        case 'j':
                arg_json = true;
                arg_given |= OPTION_JSON;
                break;
        case 'a':
                arg_all = true;
                arg_given |= OPTION_ALL;
                break;
        case ARG_SUMMARY:
                arg_summary = true;
                arg_given |= OPTION_SUMMARY;
                break;
        case ARG_NO_DAEMON:
                arg_no_daemon = true;
                break;
        case ARG_VARLINK:
                if (optarg[0] != '/') {
                        log_error("--varlink-socket needs an absolute path, not '%s'", optarg);
                        return EXIT_USAGE;
                }
                arg_varlink_socket = optarg;
                break;
        case ARG_STATE_DIR:
                arg_state_dir = optarg;
                break;
        case ARG_SECONDS:
                if (!parse_count(optarg, 86400, &arg_seconds)) {
                        log_error("--seconds takes whole seconds from 1 to 86400, not '%s'", optarg);
                        return EXIT_USAGE;
                }
                arg_given |= OPTION_SECONDS;
                break;
        case ARG_CPUS:
                arg_cpus = optarg;
                arg_given |= OPTION_CPUS;
                break;
        case ARG_SVG:
                arg_svg = optarg;
                arg_given |= OPTION_SVG;
                break;
        case ARG_HTML:
                arg_html = optarg;
                arg_given |= OPTION_HTML;
                break;
        case ARG_NO_OSNOISE:
                arg_no_osnoise = true;
                arg_given |= OPTION_NO_OSNOISE;
                break;
        case 'o':
                arg_output = optarg;
                arg_given |= OPTION_OUTPUT;
                break;
        case ARG_FORCE:
                arg_force = true;
                arg_given |= OPTION_FORCE;
                break;
        case ARG_ACTIVE:
                arg_active = true;
                arg_given |= OPTION_ACTIVE;
                break;
        case 'h':
                arg_help = true;
                break;
        case ARG_VERSION:
                printf("rtpartctl %s\n", PACKAGE_VERSION);
                return -1; /* done */
        default:
                fprintf(stderr, "Try 'rtpartctl --help'.\n");
                return EXIT_USAGE;
        }
        return 0;
}

static int parse_argv(int argc, char **argv) {
        int c, r;

        /* GNU getopt permutes: options may come before or after the command. */
        while ((c = getopt_long(argc, argv, "r:jaho:", long_options, NULL)) >= 0)
                if ((r = parse_option(c)) != 0)
                        return r;

        if (arg_help && optind >= argc) {
                help_overview();
                return -1;
        }
        if (optind >= argc) {
                log_error("missing command; try 'rtpartctl --help'");
                return EXIT_USAGE;
        }
        if (arg_all && arg_summary && !arg_help) {
                log_error("--all lists every knob and --summary none; give one of them");
                return EXIT_USAGE;
        }
        if (arg_no_daemon && arg_varlink_socket && !arg_help) {
                log_error("--no-daemon and --varlink-socket contradict each other");
                return EXIT_USAGE;
        }
        return 0;
}

int main(int argc, char **argv) {
        int r;

        log_setup_tool("rtpartctl");
        if (ctl_text_stderr() < 0)
                return EXIT_FAILED;
        r = parse_argv(argc, argv);
        if (r != 0)
                return r < 0 ? EXIT_OK : r;
        r = dispatch(argc - optind, argv + optind);
        /* The one place an error becomes the exit status. */
        if (r < 0)
                return EXIT_FAILED;
        return r < _EXIT_STATUS_MAX ? r : EXIT_FAILED;
}
