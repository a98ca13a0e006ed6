/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The ledger's document: read, checked, written; and the changes made under the journal's lock. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ledger.h"
#include "strv.h"

static const char * const emulator_names[_LEDGER_EMULATOR_MAX] = {
        [LEDGER_EMULATOR_SHARE] = "share",
        [LEDGER_EMULATOR_ISOLATE] = "isolate",
};

const char *ledger_emulator_to_string(LedgerEmulator e) {
        return e >= 0 && e < _LEDGER_EMULATOR_MAX ? emulator_names[e] : NULL;
}

LedgerEmulator ledger_emulator_from_string(const char *s) {
        for (int i = 0; s && i < _LEDGER_EMULATOR_MAX; i++)
                if (streq(s, emulator_names[i]))
                        return (LedgerEmulator) i;
        return _LEDGER_EMULATOR_INVALID;
}

void ledger_vm_done(LedgerVm *vm) {
        if (!vm)
                return;
        free(vm->name);
        free(vm->vcpu_cpus);
        free(vm->hugepages);
        free(vm->added);
        *vm = (LedgerVm) {};
}

void ledger_vm_cpus(const LedgerVm *vm, CpuSet *ret) {
        cpu_set_zero(ret);
        for (unsigned i = 0; i < vm->n_vcpus; i++)
                cpu_set_add(ret, vm->vcpu_cpus[i]);
}

Ledger *ledger_free(Ledger *l) {
        if (!l)
                return NULL;
        for (size_t i = 0; i < l->n_vms; i++)
                ledger_vm_done(&l->vms[i]);
        free(l->vms);
        free(l);
        return NULL;
}

const LedgerVm *ledger_find(const Ledger *l, const char *name) {
        for (size_t i = 0; l && i < l->n_vms; i++)
                if (streq(l->vms[i].name, name))
                        return &l->vms[i];
        return NULL;
}

void ledger_reserved(const Ledger *l, CpuSet *ret) {
        cpu_set_zero(ret);
        for (size_t i = 0; l && i < l->n_vms; i++)
                cpu_set_or(ret, &l->vms[i].reserved);
}

bool ledger_name_is_valid(const char *name) {
        size_t n = name ? strlen(name) : 0;
        if (n == 0 || n > LEDGER_NAME_MAX || name[0] == '.' || name[0] == '-')
                return false;
        for (const char *p = name; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                      strchr("_.+-", *p)))
                        return false;
        return true;
}

int ledger_hugepages_normalize(const char *s, char **ret) {
        char *end;
        if (!s || !(*s >= '1' && *s <= '9'))
                return -EINVAL;
        errno = 0;
        unsigned long long n = strtoull(s, &end, 10), kib;
        if (errno || n > (1ULL << 32))
                return -EINVAL;
        switch (*end) {
        case 'k':
        case 'K':
                kib = n;
                break;
        case 'm':
        case 'M':
                kib = n << 10;
                break;
        case 'g':
        case 'G':
                kib = n << 20;
                break;
        default:
                return -EINVAL;
        }
        end++;
        if (!strv_contains((char **) (const char * const[]) { "", "B", "b", "iB", "ib", NULL }, end))
                return -EINVAL;
        int k = kib % (1ULL << 20) == 0 ? asprintf(ret, "%lluG", kib >> 20)
                : kib % 1024 == 0       ? asprintf(ret, "%lluM", kib >> 10)
                                        : asprintf(ret, "%llukB", kib);
        return k < 0 ? -ENOMEM : 0;
}

/* ---- the document ---- */

static int entry_error(Error *e, const char *display, size_t i, const char *key, const char *what) {
        char pointer[64];
        snprintf(pointer, sizeof(pointer), "/vms/%zu%s%s", i, key ? "/" : "", strempty(key));
        return error_set(e, -EBADMSG, display, pointer, "%s; remove the entry with 'rtpartctl vm remove', or the file",
                         what);
}

static int parse_cpus(json_t *o, const char *key, CpuSet *ret) {
        const char *s = json_string_value(json_object_get(o, key));
        return s ? cpu_set_parse_list(s, ret, NULL) : -EINVAL;
}

static int parse_vm(json_t *o, const char *display, size_t i, LedgerVm *ret, Error *e) {
        _cleanup_(ledger_vm_done) LedgerVm vm = {};
        const char *name = json_string_value(json_object_get(o, "name"));
        json_t *vcpus = json_object_get(o, "vcpus"), *cache = json_object_get(o, "cache_percent");
        json_t *huge = json_object_get(o, "hugepages");
        CpuSet cpus;

        if (!json_is_object(o))
                return entry_error(e, display, i, NULL, "is not an object");
        if (!ledger_name_is_valid(name))
                return entry_error(e, display, i, "name", "is no VM name");
        if (parse_cpus(o, "cpus", &cpus) < 0 || cpu_set_is_empty(&cpus))
                return entry_error(e, display, i, "cpus", "is no CPU list");
        if (!json_is_integer(vcpus) || json_integer_value(vcpus) != (json_int_t) cpu_set_count(&cpus))
                return entry_error(e, display, i, "vcpus", "is not the number of CPUs in cpus");
        if (parse_cpus(o, "reserved", &vm.reserved) < 0 || !cpu_set_is_subset(&cpus, &vm.reserved))
                return entry_error(e, display, i, "reserved", "is no CPU list holding cpus");
        if (parse_cpus(o, "emulator", &vm.emulator) < 0 || parse_cpus(o, "nodes", &vm.nodes) < 0)
                return entry_error(e, display, i, "emulator", "emulator or nodes is no CPU list");
        vm.emulator_policy = ledger_emulator_from_string(json_string_value(json_object_get(o, "emulator_policy")));
        if (vm.emulator_policy < 0)
                return entry_error(e, display, i, "emulator_policy", "is neither \"share\" nor \"isolate\"");
        if (cache && (!json_is_integer(cache) || json_integer_value(cache) < 0 || json_integer_value(cache) > 100))
                return entry_error(e, display, i, "cache_percent", "is no percentage");
        if (huge && !json_is_null(huge) && !json_is_string(huge))
                return entry_error(e, display, i, "hugepages", "is neither a size nor null");

        vm.n_vcpus = cpu_set_count(&cpus);
        vm.vcpu_cpus = calloc(vm.n_vcpus, sizeof(unsigned));
        vm.name = strdup(name);
        vm.added = strdup(json_string_value(json_object_get(o, "added")) ?: "");
        if (!vm.vcpu_cpus || !vm.name || !vm.added)
                return -ENOMEM;
        unsigned k = 0;
        CPU_SET_FOREACH (c, &cpus)
                vm.vcpu_cpus[k++] = (unsigned) c;
        vm.cache_percent = cache ? (unsigned) json_integer_value(cache) : 0;
        if (json_is_string(huge) && !(vm.hugepages = strdup(json_string_value(huge))))
                return -ENOMEM;
        *ret = vm;
        vm = (LedgerVm) {};
        return 0;
}

int ledger_parse(const char *text, size_t size, const char *display, Ledger **ret, Error *e) {
        _cleanup_(ledger_freep) Ledger *l = calloc(1, sizeof(Ledger));
        json_error_t jerr;
        if (!l)
                return -ENOMEM;
        if (!text) {
                *ret = TAKE_PTR(l);
                return 0;
        }
        _cleanup_(json_decrefp) json_t *doc = json_loadb(text, size, 0, &jerr);
        if (!doc)
                return error_set_line(e, -EBADMSG, display, (unsigned) jerr.line,
                                      "is not JSON (%s); remove it to start an empty ledger", jerr.text);
        json_t *vms = json_object_get(doc, "vms");
        json_t *version = json_object_get(doc, "version");
        if (!json_is_integer(version) || json_integer_value(version) != LEDGER_VERSION)
                return error_set(e, -EBADMSG, display, "/version",
                                 "is not %d: written by another rtpart; use that one, or remove the file",
                                 LEDGER_VERSION);
        if (!json_is_array(vms))
                return error_set(e, -EBADMSG, display, "/vms", "is not an array; remove the file");
        l->vms = calloc(json_array_size(vms) ?: 1, sizeof(LedgerVm));
        if (!l->vms)
                return -ENOMEM;
        CpuSet held = {};
        for (size_t i = 0; i < json_array_size(vms); i++) {
                LedgerVm *vm = &l->vms[l->n_vms];
                int r = parse_vm(json_array_get(vms, i), display, i, vm, e);
                if (r < 0)
                        return r;
                l->n_vms++;
                if (ledger_find(l, vm->name) != vm)
                        return entry_error(e, display, i, "name", "names a VM listed before it");
                if (cpu_set_intersects(&held, &vm->reserved))
                        return entry_error(e, display, i, "reserved", "overlaps a VM listed before it");
                cpu_set_or(&held, &vm->reserved);
        }
        *ret = TAKE_PTR(l);
        return 0;
}

static json_t *cpus_json(const CpuSet *s) {
        _cleanup_free_ char *t = cpu_set_format_list(s);
        return t ? json_string(t) : NULL;
}

json_t *ledger_vm_to_json(const LedgerVm *vm) {
        CpuSet cpus;
        ledger_vm_cpus(vm, &cpus);
        return json_pack("{s:s, s:i, s:o*, s:o*, s:o*, s:s, s:o*, s:i, s:s?, s:s}", "name", vm->name, "vcpus",
                         (json_int_t) vm->n_vcpus, "cpus", cpus_json(&cpus), "reserved", cpus_json(&vm->reserved),
                         "emulator", cpus_json(&vm->emulator), "emulator_policy",
                         ledger_emulator_to_string(vm->emulator_policy), "nodes", cpus_json(&vm->nodes),
                         "cache_percent", (json_int_t) vm->cache_percent, "hugepages", vm->hugepages, "added",
                         strempty(vm->added));
}

json_t *ledger_to_json(const Ledger *l) {
        _cleanup_(json_decrefp) json_t *vms = json_array();
        if (!vms)
                return NULL;
        for (size_t i = 0; l && i < l->n_vms; i++) {
                json_t *o = ledger_vm_to_json(&l->vms[i]);
                if (!o || json_array_append_new(vms, o) < 0)
                        return NULL;
        }
        return json_pack("{s:i, s:O}", "version", (json_int_t) LEDGER_VERSION, "vms", vms);
}

/* ---- the file ---- */

int ledger_load(JournalStore *s, Ledger **ret, Error *e) {
        _cleanup_free_ char *text = NULL, *display = NULL;
        size_t size = 0;
        _cleanup_free_ char *rel = journal_store_path(s, LEDGER_FILE);
        if (!rel || !(display = root_display_path(journal_store_root(s), rel)))
                return -ENOMEM;
        int r = journal_store_read_beside(s, LEDGER_FILE, &text, &size, e);
        if (r < 0)
                return r;
        return ledger_parse(text, size, display, ret, e);
}

int ledger_save(JournalStore *s, const Ledger *l) {
        _cleanup_(json_decrefp) json_t *doc = ledger_to_json(l);
        if (!doc)
                return -ENOMEM;
        /* Indented: a ledger people read. */
        _cleanup_free_ char *text = json_dumps(doc, JSON_INDENT(1) | JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (!text)
                return -ENOMEM;
        size_t n = strlen(text);
        char *t = realloc(text, n + 2);
        if (!t)
                return -ENOMEM;
        text = t;
        memcpy(text + n, "\n", 2);
        return journal_store_write_beside(s, LEDGER_FILE, text, n + 1);
}

int ledger_add(JournalStore *s, const Host *h, const LedgerSplit *split, const LedgerRequest *req, json_t **ret,
               Error *e) {
        _cleanup_(ledger_freep) Ledger *l = NULL;
        LedgerVm vm = {};
        int r = ledger_load(s, &l, e);
        if (r < 0)
                return r;
        r = ledger_place(l, h, split, req, &vm, e);
        if (r < 0)
                return r;
        LedgerVm *vms = realloc(l->vms, (l->n_vms + 1) * sizeof(LedgerVm));
        if (!vms) {
                ledger_vm_done(&vm);
                return -ENOMEM;
        }
        l->vms = vms;
        l->vms[l->n_vms++] = vm;
        r = ledger_save(s, l);
        if (r < 0)
                return r;
        if (ret && !(*ret = ledger_vm_to_json(&l->vms[l->n_vms - 1])))
                return -ENOMEM;
        return 0;
}

int ledger_remove(JournalStore *s, const char *name, json_t **ret, Error *e) {
        _cleanup_(ledger_freep) Ledger *l = NULL;
        int r = ledger_load(s, &l, e);
        if (r < 0)
                return r;
        const LedgerVm *vm = ledger_find(l, name);
        if (!vm)
                return error_set(e, -ENOENT, NULL, NULL, "no VM '%s' in the ledger; 'rtpartctl vm list' lists them",
                                 name);
        size_t i = (size_t) (vm - l->vms);
        _cleanup_(json_decrefp) json_t *doc = ledger_vm_to_json(vm);
        if (!doc)
                return -ENOMEM;
        ledger_vm_done(&l->vms[i]);
        memmove(&l->vms[i], &l->vms[i + 1], (l->n_vms - i - 1) * sizeof(LedgerVm));
        l->n_vms--;
        r = ledger_save(s, l);
        if (r < 0)
                return r;
        if (ret)
                *ret = TAKE_PTR(doc);
        return 0;
}
