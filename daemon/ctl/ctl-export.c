/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl.h"
#include "export-ledger.h"
#include "export.h"
#include "journal.h"

/* export libvirt, export nova: the split of the applied (or a named) profile, as the guests'
 * configuration takes it. Works on the host directly: it only reads. */

/* The profile the split comes from, planned for the host: the one named, else the one the journal
 * says is applied (its stored document, as rtpartd uses it). */
int ctl_prepare_applied(Root *root, const char *name, PrepareFlags flags, Prepared *ret) {
        PrepareError pe = {};
        int r;

        if (name) {
                r = prepare_profile(root, name, flags, ret, &pe);
                if (r < 0)
                        return ctl_prepare_failure(root, &pe, r);
                prepare_error_done(&pe);
                return 0;
        }

        _cleanup_(journal_freep) Journal *j = NULL;
        _cleanup_(error_done) Error je = {};
        r = ctl_read_journal(root, &j, &je);
        if (r < 0 && r != -ENOENT) {
                _cleanup_free_ char *why = je.message ? error_format(&je, NULL) : NULL;
                return log_error_errno(r, "cannot read the journal to find the applied profile: %s; name a profile",
                                       why ?: strerror(-r));
        }
        if (r < 0 || !j->profile) {
                log_error("no profile is applied on this host; name the profile whose split to export "
                          "(rtpartctl export libvirt|nova PROFILE)");
                return EXIT_USAGE;
        }
        if (!j->source) {
                /* A journal written before it kept the profile's document: the profile by name. */
                if (profile_is_path(j->profile)) {
                        log_error("the journal names %s but keeps no copy of it; apply it again or name a profile",
                                  j->profile);
                        return EXIT_USAGE;
                }
                r = prepare_profile(root, j->profile, flags, ret, &pe);
        } else {
                json_error_t jerr;
                _cleanup_(json_decrefp) json_t *doc = json_loads(j->source, 0, &jerr);
                Profile *profile = NULL;
                if (!doc) {
                        log_error("the journal's copy of %s is not JSON (%s); apply it again or name a profile",
                                  j->profile, jerr.text);
                        return EXIT_FAILED;
                }
                r = profile_from_document(backend_profile_schema(), j->profile, doc, &profile, &pe.error);
                if (r < 0) {
                        pe.step = PREPARE_STEP_PROFILE;
                        return ctl_prepare_failure(root, &pe, r);
                }
                r = prepare_profile_built(root, profile, flags, ret, &pe);
        }
        if (r < 0)
                return ctl_prepare_failure(root, &pe, r);
        prepare_error_done(&pe);
        return 0;
}

static unsigned count_cores(const Host *h, const CpuSet *cpus) {
        CpuSet cores = {};
        CPU_SET_FOREACH (c, cpus)
                cpu_set_add(&cores,
                            (unsigned) c < h->n_cpu_ids && h->cpus[c].core >= 0 ? (unsigned) h->cpus[c].core
                                                                                : (unsigned) c);
        return cpu_set_count(&cores);
}

/* N vCPUs that do not fit: how many would, and what to change. */
static int refuse_vcpus(const Prepared *p, const ExportSplit *s, unsigned n, unsigned capacity) {
        _cleanup_free_ char *iso = cpu_set_format_list(&s->isolated);
        unsigned n_iso = cpu_set_count(&s->isolated), room = capacity;

        if (s->siblings == EXPORT_SIBLINGS_APART) {
                /* How many would fit with the SMT siblings shared. */
                ExportSplit together = *s;
                ExportReservation unused = {};
                together.siblings = EXPORT_SIBLINGS_TOGETHER;
                (void) export_reserve(p->host, &together, 0, &unused, &room);
        }
        if (room > capacity)
                log_error("%u vCPUs do not fit: profile %s isolates %u CPUs (%s) on %u cores, and with "
                          "cpus.vcpu_siblings \"apart\" (the default) each vCPU has a core of its own, which makes "
                          "room for %u; give --vcpus %u or fewer, set cpus.vcpu_siblings to \"together\" in the "
                          "profile (room for %u, SMT siblings shared), or isolate more CPUs (cpus.isolated)",
                          n, p->resolved->name, n_iso, strempty(iso), count_cores(p->host, &s->isolated), capacity,
                          capacity, room);
        else
                log_error("%u vCPUs do not fit: profile %s isolates %u CPUs (%s), room for %u vCPUs with one CPU "
                          "each; give --vcpus %u or fewer, or isolate more CPUs (cpus.isolated)",
                          n, p->resolved->name, n_iso, strempty(iso), capacity, capacity);
        return EXIT_USAGE;
}

/* A domain file given with --domain, read whole (16 MiB at most). A FIFO, a device or a directory
 * is refused, as a profile is: opened without waiting for a writer, never read. */
static int read_domain(const char *path, char **ret, size_t *ret_size) {
        const size_t max = 16 * 1024 * 1024;
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        _cleanup_free_ char *buf = NULL;
        size_t size = 0, cap = 0;
        struct stat st;

        if (fd < 0)
                return log_error_errno(-errno, "--domain %s: cannot open it: %m", path);
        if (fstat(fd, &st) < 0)
                return log_error_errno(-errno, "--domain %s: cannot read it: %m", path);
        if (!S_ISREG(st.st_mode)) {
                log_error("--domain %s: not a regular file (%s); give a libvirt domain XML file "
                          "(virsh dumpxml NAME > FILE)",
                          path,
                          S_ISFIFO(st.st_mode)          ? "a FIFO"
                                  : S_ISDIR(st.st_mode) ? "a directory"
                                                        : "a device or socket");
                return EXIT_USAGE;
        }
        for (;;) {
                if (cap - size < 65536) {
                        if (cap >= max) {
                                log_error("--domain %s: larger than 16 MiB; give a libvirt domain XML file", path);
                                return EXIT_USAGE;
                        }
                        char *n = realloc(buf, cap + 65536 + 1);
                        if (!n)
                                return log_oom();
                        buf = n;
                        cap += 65536;
                }
                ssize_t k = read(fd, buf + size, cap - size);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return log_error_errno(-errno, "--domain %s: cannot read it: %m", path);
                if (k == 0)
                        break;
                size += (size_t) k;
        }
        buf[size] = 0;
        *ret = TAKE_PTR(buf);
        *ret_size = size;
        return 0;
}

/* The domain file of --domain, read and located; 0, or an exit status after a message. */
static int load_domain(char **ret_text, ExportDomain *ret) {
        _cleanup_free_ char *text = NULL, *error = NULL;
        size_t size = 0;
        int r = read_domain(arg_domain, &text, &size);
        if (r != 0)
                return r;
        r = export_domain_parse(text, size, ret, &error);
        if (r == -ENOMEM)
                return log_oom();
        if (r < 0) {
                log_error("--domain %s: %s; give a libvirt domain XML file (virsh dumpxml)", arg_domain, error);
                return EXIT_USAGE;
        }
        if (arg_memory_kib && ret->memory_kib && arg_memory_kib != ret->memory_kib) {
                log_error("--domain %s: <memory> is %llu KiB but --memory is %llu KiB; leave out --memory, or change "
                          "<memory> in the file",
                          arg_domain, (unsigned long long) ret->memory_kib, (unsigned long long) arg_memory_kib);
                return EXIT_USAGE;
        }
        *ret_text = TAKE_PTR(text);
        return 0;
}

/* What the guest's elements leave out or replace, and why. */
static void log_notes(char **notes, const char *prefix) {
        for (char **m = notes; m && *m; m++)
                log_info("note: %s%s%s", strempty(prefix), prefix ? ": " : "", *m);
}

/* The VM name of the ledger, found: 1 and *ret (NULL when the ledger has none of that name: 0). */
static int find_vm(Root *root, const char *name, Ledger **ret_ledger, const LedgerVm **ret) {
        _cleanup_(journal_store_freep) JournalStore *journal = NULL;
        _cleanup_(error_done) Error e = {};
        int r = ctl_open_journal(root, &journal);
        if (r < 0)
                return r;
        r = ledger_load(journal, ret_ledger, &e);
        if (r < 0) {
                _cleanup_free_ char *why = error_format(&e, NULL);
                return log_error_errno(r, "cannot read the ledger: %s", why ?: strerror(-r));
        }
        *ret = ledger_find(*ret_ledger, name);
        return !!*ret;
}

/* vm (NULL: none) gives the guest its reservation; else n vCPUs are placed on the split. */
static int export_libvirt(const Prepared *p, ExportSplit *s, const LedgerVm *vm) {
        _cleanup_free_ char *text = NULL, *out = NULL;
        _cleanup_(export_domain_done) ExportDomain d = {};
        _cleanup_(export_reservation_done) ExportReservation res = {};
        _cleanup_(export_elements_done) ExportElements e = {};
        unsigned n = arg_vcpus, capacity = 0;
        int r;

        if (arg_domain) {
                r = load_domain(&text, &d);
                if (r != 0)
                        return r;
                if (n == 0)
                        n = d.vcpus;
                else if (d.vcpus != 0 && d.vcpus != n) {
                        log_error("--domain %s: <vcpu> is %u but --vcpus is %u; give --vcpus %u, or change <vcpu> "
                                  "in the file",
                                  arg_domain, d.vcpus, n, d.vcpus);
                        return EXIT_USAGE;
                }
        }
        if (vm && n != 0 && n != vm->n_vcpus) {
                log_error("VM %s has %u vCPUs in the ledger, but %s %u; %s", vm->name, vm->n_vcpus,
                          arg_vcpus ? "--vcpus is" : "the domain's <vcpu> is", n,
                          arg_vcpus ? "leave out --vcpus" : "change <vcpu> in the file, or add the VM again");
                return EXIT_USAGE;
        }
        if (vm)
                n = vm->n_vcpus;
        if (n == 0) {
                log_error("export libvirt needs the number of vCPUs: --vcpus N%s",
                          arg_domain ? " (the domain file has no <vcpu>)" : "");
                return EXIT_USAGE;
        }

        r = vm ? export_reservation_from_vm(s, vm, &res) : export_reserve(p->host, s, n, &res, &capacity);
        if (r == -ENOSPC)
                return refuse_vcpus(p, s, n, capacity);
        if (r < 0)
                return log_oom();
        ExportXmlOptions o = { .domain = arg_domain ? &d : NULL, .memory_kib = arg_memory_kib };
        if (export_libvirt_elements(p->host, s, &res, &o, &e) < 0)
                return log_oom();
        log_notes(s->notes, NULL);
        log_notes(e.notes, arg_domain);
        if (arg_domain) {
                if (d.n_iothreads == 0)
                        log_info("%s has no I/O threads: its disks' I/O runs in the emulator thread, pinned with "
                                 "<emulatorpin>",
                                 arg_domain);
                out = export_domain_merge(&d, &e);
                if (!out)
                        return log_oom();
                fputs(out, stdout);
                return 0;
        }
        out = export_elements_fragment(&e, "  ");
        if (!out)
                return log_oom();
        /* A comment holds no "--": a profile name with one is left out. */
        bool named = !strstr(p->resolved->name, "--");
        printf("<!-- rtpartctl export libvirt: %s%s%s%u vCPUs. These elements go inside <domain>, replacing\n"
               "     its own <vcpu>, <iothreads>, <cputune>, <numatune>, <memoryBacking> and <cpu>; <pmu/> goes\n"
               "     into its <features> and <memballoon/> into its <devices>, replacing the one there\n"
               "     (export libvirt with a domain FILE makes this merge itself). -->\n"
               "%s",
               named ? "profile " : "", named ? p->resolved->name : "", named ? ", " : "", n, out);
        return 0;
}

int verb_export(int argc, char **argv) {
        _cleanup_(root_freep) Root *root = NULL;
        _cleanup_(prepared_done) Prepared p = {};
        _cleanup_(export_split_done) ExportSplit s = {};
        bool libvirt = streq(argv[1], "libvirt");
        int r;

        if (!libvirt && !streq(argv[1], "nova")) {
                log_error("export makes libvirt or nova configuration, not '%s'; give 'libvirt' or 'nova'", argv[1]);
                return EXIT_USAGE;
        }
        if (!libvirt && (arg_vcpus || arg_domain || arg_memory_kib)) {
                log_error("--vcpus, --domain and --memory are export libvirt's; export nova takes none of them");
                return EXIT_USAGE;
        }
        if (libvirt && arg_json) {
                log_error("export libvirt prints libvirt's domain XML, which has no JSON form; leave out --json "
                          "(export nova --json prints its CPU sets as JSON)");
                return EXIT_USAGE;
        }
        if ((r = ctl_open_root(&root)) != 0)
                return r;
        /* export libvirt NAME: a VM of the ledger, on the applied profile; else NAME is a profile. */
        _cleanup_(ledger_freep) Ledger *ledger = NULL;
        const LedgerVm *vm = NULL;
        if (libvirt && argc > 2 && ledger_name_is_valid(argv[2]) && (r = find_vm(root, argv[2], &ledger, &vm)) < 0)
                return r;
        r = ctl_prepare_applied(root, argc > 2 && !vm ? argv[2] : NULL, PREPARE_PLAN, &p);
        if (r != 0)
                return r;
        _cleanup_free_ char *message = NULL;
        r = export_split_from_plan(root, p.host, p.plan, p.resolved->doc, &s, &message);
        if (r == -EINVAL) {
                log_error("%s: /hugepages: %s; see rtpart.profile(5)", p.resolved->name, strempty(message));
                return EXIT_USAGE;
        }
        if (r < 0)
                return log_oom();
        if (libvirt)
                return export_libvirt(&p, &s, vm);

        _cleanup_(export_nova_done) ExportNova nova = {};
        if (export_nova_make(&s, &nova) < 0)
                return log_oom();
        if (arg_json) {
                _cleanup_(json_decrefp) json_t *doc = export_nova_document(&nova, p.resolved->name);
                return doc ? render_json(doc) : log_oom();
        }
        _cleanup_free_ char *out = export_nova(&nova, p.resolved->name);
        if (!out)
                return log_oom();
        fputs(out, stdout);
        return 0;
}
