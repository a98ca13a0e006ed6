/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The ledger: which VM holds which isolated CPUs. One document beside the journal
 * (var/lib/rtpart/ledger.json, or ledger.json in the --state-dir), replaced atomically as the
 * journal is, under the journal's lock, so that it survives a crash and a reboot:
 *
 *   { "version": 1,
 *     "vms": [ { "name": "rt1", "vcpus": 4,
 *                "cpus": "2,4,6,8",          vCPU i runs on the i-th CPU of the list
 *                "reserved": "2-9",          every CPU it holds: cpus, their idle SMT siblings,
 *                                            an isolated emulator core
 *                "emulator": "0,1",          where the emulator and I/O threads run
 *                "emulator_policy": "share" | "isolate",
 *                "nodes": "0",               the NUMA nodes of cpus
 *                "cache_percent": 0,         its share of the L3 ways kept for guests (0: none)
 *                "hugepages": "1G" | null,   the huge page size backing its memory
 *                "added": "2026-12-06T05:00:00Z" } ] }
 *
 * A reservation never overlaps another's reserved CPUs. Placement takes the isolated CPUs of the
 * applied profile: a whole core per vCPU (its other isolated SMT siblings held idle) unless the
 * profile's cpus.vcpu_siblings is "together", on one NUMA node whenever one has room (the
 * lowest-numbered), else spread over the nodes with the most room first. */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "cpu-set.h"
#include "error.h"
#include "host.h"
#include "journal.h"

#define LEDGER_FILE "ledger.json"
#define LEDGER_VERSION 1
/* libvirt's own limit on a domain name is larger; a ledger name is also a file name and a
 * qemu -name guest= value, so it keeps to what both take as they are. */
#define LEDGER_NAME_MAX 64

typedef enum LedgerEmulator {
        LEDGER_EMULATOR_SHARE,   /* on the housekeeping CPUs of the vCPUs' nodes */
        LEDGER_EMULATOR_ISOLATE, /* on an isolated core of its own, reserved with the vCPUs */
        _LEDGER_EMULATOR_MAX,
        _LEDGER_EMULATOR_INVALID = -EINVAL,
} LedgerEmulator;

const char *ledger_emulator_to_string(LedgerEmulator e);
LedgerEmulator ledger_emulator_from_string(const char *s);

typedef struct LedgerVm {
        char *name;
        unsigned n_vcpus;
        unsigned *vcpu_cpus; /* host CPU of vCPU i, n_vcpus long */
        CpuSet reserved;     /* every CPU it holds */
        CpuSet emulator;
        LedgerEmulator emulator_policy;
        CpuSet nodes;
        unsigned cache_percent;
        char *hugepages; /* "2M", "1G"; NULL: none asked */
        char *added;
} LedgerVm;

void ledger_vm_done(LedgerVm *vm);
/* The vCPUs' CPUs as a set. */
void ledger_vm_cpus(const LedgerVm *vm, CpuSet *ret);

typedef struct Ledger {
        LedgerVm *vms; /* in the order they were added */
        size_t n_vms;
} Ledger;

Ledger *ledger_free(Ledger *l);
DEFINE_TRIVIAL_CLEANUP_FUNC(Ledger *, ledger_free);
const LedgerVm *ledger_find(const Ledger *l, const char *name);
/* Every CPU some VM holds. */
void ledger_reserved(const Ledger *l, CpuSet *ret);

/* Whether name may name a VM: 1 to LEDGER_NAME_MAX of [A-Za-z0-9_.+-], not starting with '.' or '-'. */
bool ledger_name_is_valid(const char *name);

/* A huge page size as a person writes it ("2M", "2MB", "1G", "1GiB", "2048kB"), in the form the
 * ledger keeps ("2M", "1G", "64kB"): -EINVAL when it is no size. */
int ledger_hugepages_normalize(const char *s, char **ret);

/* The document those bytes make (an empty ledger for NULL). -EBADMSG with e naming the file
 * (display), the entry ("/vms/1/cpus") and what is wrong. */
int ledger_parse(const char *text, size_t size, const char *display, Ledger **ret, Error *e);
json_t *ledger_vm_to_json(const LedgerVm *vm);
/* {"vms": [...]}, also what `vm list --json` prints and VmList answers (with "version"). */
json_t *ledger_to_json(const Ledger *l);

/* ledger.json of the journal's directory, read (an empty ledger when there is none) and replaced.
 * Changes are made under the journal's lock, which the caller holds. */
int ledger_load(JournalStore *s, Ledger **ret, Error *e);
int ledger_save(JournalStore *s, const Ledger *l);

/* What a VM asks for. */
typedef struct LedgerRequest {
        const char *name;
        unsigned n_vcpus;
        int node; /* -1: any */
        LedgerEmulator emulator_policy;
        unsigned cache_percent;
        const char *hugepages; /* NULL: none */
} LedgerRequest;

/* What the VMs are placed on: the applied profile's split. */
typedef struct LedgerSplit {
        CpuSet isolated, housekeeping;
        bool split_siblings; /* cpus.vcpu_siblings "together": a vCPU per isolated CPU */
} LedgerSplit;

/* The split of a resolved profile (its CPU classes and cpus.vcpu_siblings). */
void ledger_split_from_resolved(const json_t *doc, const CpuSet *isolated, const CpuSet *housekeeping,
                                LedgerSplit *ret);

/* Places req among l's VMs on host h: 0 and *ret. -EINVAL with e for a request that is wrong in
 * itself (a name taken or invalid, a node the host does not have, a cache share beyond what is
 * left); -ENOSPC with e naming how many cores (or CPUs) are free, on which nodes, and the fix. */
int ledger_place(const Ledger *l, const Host *h, const LedgerSplit *split, const LedgerRequest *req, LedgerVm *ret,
                 Error *e);

/* Under the journal's lock (held by the caller): the ledger loaded, req placed and added, the
 * ledger saved. *ret (optional) is the new VM's document. */
int ledger_add(JournalStore *s, const Host *h, const LedgerSplit *split, const LedgerRequest *req, json_t **ret,
               Error *e);
/* The same for removing the VM name: -ENOENT with e when the ledger has none of that name. */
int ledger_remove(JournalStore *s, const char *name, json_t **ret, Error *e);

/* ---- running VMs (ledger-vcpu.c) ---- */

/* The vCPU index of a qemu vCPU thread's name ("CPU 3/KVM", "CPU 3/TCG"): -EINVAL for another. */
int ledger_vcpu_parse_comm(const char *comm, unsigned *ret);
/* The guest's name in qemu's command line (proc/PID/cmdline: NUL-separated arguments), from
 * "-name guest=NAME,…" or "-name NAME" (",," is a comma): -ENOENT when it names none. */
int ledger_guest_parse_cmdline(const char *buf, size_t size, char **ret);

typedef struct LedgerVcpuThread {
        const LedgerVm *vm; /* l's */
        unsigned vcpu;
        int cpu; /* where the ledger puts it; -1: the VM runs more vCPUs than it reserved */
} LedgerVcpuThread;

/* Whether the thread tid, named comm, is a vCPU thread of a qemu process whose guest is a VM of
 * l: 1 and *ret, else 0 (a thread of anything else, or gone). */
int ledger_vcpu_thread(const Ledger *l, Root *root, int tid, const char *comm, LedgerVcpuThread *ret);

/* A vCPU thread of a running VM of the ledger, as found. */
typedef struct LedgerRunning {
        const LedgerVm *vm; /* the ledger's */
        unsigned vcpu;
        int cpu; /* where the ledger puts it; -1: none reserved */
        int tid;
        CpuSet cpus; /* where it may run now */
} LedgerRunning;

/* Every vCPU thread of every process whose guest is a VM of l (proc/ under the root). */
int ledger_running(const Ledger *l, Root *root, LedgerRunning **ret, size_t *ret_n);
/* Whether it may run elsewhere than on its vCPU's CPU. */
bool ledger_running_drifted(const LedgerRunning *t);
/* ledger_to_json(), each VM with "vcpu_threads": [{vcpu, tid, cpus, drift}] of its running qemu
 * ([] when it does not run, or what runs cannot be read). */
json_t *ledger_to_json_running(const Ledger *l, Root *root);
