/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The backend table and what backends share: knob files, the checks of named groups and rules,
 * kernel and module parameter values, the profile document's schema made of every backend's
 * section. */
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "strv.h"

/* The order is the order of application: boot first (nothing at runtime), then what moves work
 * off isolated CPUs (cgroups, NIC queues, IRQs, threads), then the rest. NIC channels come before
 * IRQs: a channel change requests a NIC's IRQs again or moves them (virtio_net), and the irq
 * backend places them after it. */
static const Backend * const backends[] = {
        &backend_boot,    &backend_cpuset, &backend_resctrl, &backend_net, &backend_irq,    &backend_irqbalance,
        &backend_kthread, &backend_sysctl, &backend_sysfs,   &backend_cpu, &backend_module, &backend_hugepages,
};

char *knob_count_phrase(const size_t counts[_DOMAIN_MAX]) {
        size_t parts = 0, done = 0, n_table;
        const Backend * const *table = backend_table(&n_table);
        StrBuf b = {};
        for (size_t i = 0; i < n_table; i++)
                parts += counts[table[i]->domain] > 0;
        for (size_t i = 0; i < n_table; i++) {
                const Backend *be = table[i];
                size_t n = counts[be->domain];
                if (n == 0)
                        continue;
                done++;
                strbuf_appendf(&b, "%s%zu %s%s%s",
                               done == 1               ? ""
                                       : done == parts ? " and "
                                                       : ", ",
                               n, be->knob_noun ?: be->name, be->knob_noun ? "" : " knob", n == 1 ? "" : "s");
        }
        return strbuf_steal(&b);
}

const Backend *backend_for(Domain d) {
        for (size_t i = 0; i < ELEMENTSOF(backends); i++)
                if (backends[i]->domain == d)
                        return backends[i];
        return NULL;
}

const Backend * const *backend_table(size_t *ret_n) {
        *ret_n = ELEMENTSOF(backends);
        return backends;
}

/* The document's schema with every backend's section, in Domain order (the order messages list
 * the known keys in), each with its backend's check. */
static ProfileSchema profile_schema;

static void profile_schema_compose(void) {
        SchemaField sections[_DOMAIN_MAX];
        size_t n = 0;
        for (Domain d = 0; d < _DOMAIN_MAX; d++) {
                const Backend *b = backend_for(d);
                if (!b || !b->schema)
                        continue;
                sections[n] = *b->schema;
                sections[n++].check = b->check;
        }
        profile_schema_init(&profile_schema, sections, n);
}

const Schema *backend_profile_schema(void) {
        static pthread_once_t once = PTHREAD_ONCE_INIT;
        (void) pthread_once(&once, profile_schema_compose);
        return &profile_schema.top;
}

int knob_read_file(Root *root, const Knob *k, char **ret) {
        if (!k->path)
                return -ENOENT;
        return root_read_line(root, k->path, ret);
}

int knob_write_file(Root *root, const Knob *k, const char *value) {
        if (!value)
                return 0; /* the file did not exist before: nothing to put back */
        if (!k->path)
                return -EINVAL;
        _cleanup_free_ char *v = value_for_write(k->kind, value);
        if (!v)
                return -ENOMEM;
        return root_write_value(root, k->path, v);
}

int knob_write_file_verb(Root *root, const Knob *k, const char *value, const KnobKeep *keep, KnobResult *ret) {
        *ret = (KnobResult) {};
        return knob_result_finish(ret, knob_write_file(root, k, value));
}

int knob_watch_file(const Knob *k, char ***ret_paths) {
        char **l = NULL;
        if (k->path && strv_extend(&l, k->path) < 0)
                return -ENOMEM;
        *ret_paths = l;
        return k->path ? 1 : 0;
}

int knob_watch_none(const Knob *k, char ***ret_paths) {
        *ret_paths = NULL;
        return 0;
}

/* ---- kernel and module parameters in files a shell or a config parser reads ----
 *
 * The kernel splits its command line with next_arg() (lib/base/cmdline.c, kernel/params.c): arguments
 * are separated by whitespace, double quotes keep spaces inside one and cannot be escaped, the
 * first '=' ends the name, '-' and '_' are alike in names, and "module.param" reaches a built-in
 * module's parameter. So a name is [A-Za-z0-9_][A-Za-z0-9_.-]*, which is what parse_args()
 * matches against a parameter table (and "-", "--" or "=x" never are).
 *
 * Values are more than the kernel needs: rtpart writes them in etc/default/grub.d/rtpart.cfg,
 * which grub-mkconfig sources as root (inside '…' there, but a value must mean the same wherever a
 * shell might read it), in a
 * BLS entry's "options" line and in /etc/kernel/cmdline (whitespace-separated, one line), and in
 * /etc/modprobe.d (one "options" line; kmod passes a module's configured options to the shell of
 * an "install" command through $CMDLINE_OPTS). The set below is what the parameters of a realtime
 * host take, and nothing any of those readers gives a meaning:
 *   letters, digits   nohz_full=1-3, hugepagesz=1G, console=ttyS0,115200n8, idle=poll
 *   , -               isolcpus=managed_irq,domain,1-3 (Documentation/admin-guide/kernel-parameters.txt,
 *                     "cpu lists"), systemd.cpu_affinity=0,8
 *   _ .               rcu_nocb_poll, processor.max_cstate=1 (and values such as 8250.nr_uarts)
 *   = : /             root=UUID=…, root=/dev/disk/by-path/pci-0000:00:1f.2-ata-1, video=efifb:off
 *   +                 trace_event=sched:sched_switch,+irq; ftrace filters
 *   @ %               crashkernel=512M@16M, memmap=…@…; '%' is inert in every reader
 * Refused: whitespace and control characters (another argument, another line), non-ASCII, and
 * every shell metacharacter: $ ` \ " ' ; & | < > ( ) { } * ? [ ] ~ ! # ^. (memmap=nn$ss and
 * nn#ss need '$' and '#', which GRUB's own documentation says to escape by hand: not for a
 * profile.) */

bool bootarg_name_valid(const char *name) {
        size_t n = name ? strlen(name) : 0;
        if (n == 0 || n > BOOTARG_NAME_MAX || name[0] == '-' || name[0] == '.')
                return false;
        for (const char *c = name; *c; c++)
                if (!isascii((unsigned char) *c) || (!isalnum((unsigned char) *c) && !strchr("_.-", *c)))
                        return false;
        return true;
}

const char *bootarg_value_invalid(const char *value) {
        for (const char *c = value; c && *c; c++)
                if (!isascii((unsigned char) *c) || (!isalnum((unsigned char) *c) && !strchr(BOOTARG_VALUE_PUNCT, *c)))
                        return c;
        return NULL;
}

bool bootarg_has_control(const char *value) {
        for (const char *c = value; c && *c; c++)
                if ((unsigned char) *c < 0x20 || *c == 0x7f)
                        return true;
        return false;
}

int backend_check_named_groups(const char *file, json_t *list, const char *list_ptr, const char * const *reserved,
                               Error *e) {
        size_t i;
        json_t *v;
        json_array_foreach (list, i, v) {
                const char *name = json_string_value(json_object_get(v, "name"));
                _cleanup_free_ char *p = json_pointer_append_index(list_ptr, i);
                if (!p)
                        return -ENOMEM;
                if (!name)
                        return error_set(e, -EINVAL, file, p, "missing \"name\"");
                for (const char *c = name; *c; c++)
                        if (!isalnum((unsigned char) *c) && !strchr("._-", *c))
                                return error_set(e, -EINVAL, file, p,
                                                 "name \"%s\" may hold only letters, digits, '.', '_' and '-'", name);
                bool taken = !*name || streq(name, ".") || streq(name, "..");
                for (const char * const *rn = reserved; !taken && rn && *rn; rn++)
                        taken = streq(name, *rn);
                if (taken)
                        return error_set(e, -EINVAL, file, p, "\"%s\" cannot be used as a group name", name);
                if (!json_object_get(v, "cpus"))
                        return error_set(e, -EINVAL, file, p, "missing \"cpus\"");
                for (size_t j = 0; j < i; j++)
                        if (streq_ptr(name, json_string_value(json_object_get(json_array_get(list, j), "name"))))
                                return error_set(e, -EINVAL, file, p, "name \"%s\" is used twice", name);
        }
        return 0;
}

int backend_check_rules(const char *file, json_t *list, const char *list_ptr, const char *missing_cpus,
                        const char *alternative, const char *missing_either, Error *e) {
        size_t i;
        json_t *v;
        json_array_foreach (list, i, v) {
                _cleanup_free_ char *p = json_pointer_append_index(list_ptr, i);
                if (!p)
                        return -ENOMEM;
                if (!json_object_get(v, "match"))
                        return error_set(e, -EINVAL, file, p,
                                         "missing \"match\" (a shell pattern such as \"eth1-TxRx-*\")");
                if (json_object_get(v, "cpus") || (alternative && json_object_get(v, alternative)))
                        continue;
                return error_set(e, -EINVAL, file, p, "%s", alternative ? missing_either : missing_cpus);
        }
        return 0;
}
