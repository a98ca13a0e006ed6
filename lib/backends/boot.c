/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend.h"
#include "boot-internal.h"
#include "strv.h"

/* The "boot" section of a profile: kernel arguments, by name. */
static const Schema boot_args_schema = { SCHEMA_MAP, .items = &schema_bootarg };
static const SchemaField boot_fields[] = { { "args", &boot_args_schema }, {} };
static const Schema boot_schema = { SCHEMA_OBJECT, .fields = boot_fields };
static const SchemaField boot_section = { "boot", &boot_schema };

/* Boot arguments: one knob per kernel parameter. Their value is read from, and written to, the
 * bootloader's configuration ("configured"); the running kernel's /proc/cmdline says whether a
 * reboot is still needed. Where they live:
 *   grub:           etc/default/grub.d/rtpart.cfg, a drop-in GRUB sources after etc/default/grub,
 *                   which edits GRUB_CMDLINE_LINUX (and _DEFAULT) as sourced (boot-grub.c); then
 *                   update-grub regenerates grub.cfg;
 *   bls:            the "options" line of every boot/loader/entries/ *.conf;
 *   kernel-install: etc/kernel/cmdline, and the options of existing BLS entries.
 * The plan shows the running kernel's entry (or etc/kernel/cmdline); the files verb names every file
 * an argument lives in, so that the engine journals and restores each file's own value (a knob
 * with .path set is that file's alone). */

#define KERNEL_CMDLINE "etc/kernel/cmdline"

/* ---- quotes ---- */

bool boot_quote_open(const char *b, const char *e) {
        bool open = false;
        for (const char *p = b; p < e; p++)
                open ^= *p == '"';
        return open;
}

int boot_refuse_open_quote(KnobResult *ret, const char *file, const char *what) {
        knob_result_reason(
                ret,
                "%s: %s leaves a '\"' open, so an argument added after it would be part of the quoted one; close the quote",
                file, what);
        return -EBADMSG;
}

/* ---- BLS entries and /etc/kernel/cmdline ---- */

/* key=value as one argument that reads back as value: as it is, else with the value in quotes (an
 * original value put back that had spaces inside quotes); "key" alone for "". -EINVAL if neither
 * reads back (a value with a '"' of its own that would stay open). */
static int format_arg(const char *key, const char *value, char **ret) {
        for (int quoted = 0; quoted < 2; quoted++) {
                _cleanup_free_ char *a = NULL, *name = NULL, *v = NULL;
                if (asprintf(&a, !*value ? "%s" : quoted ? "%s=\"%s\"" : "%s=%s", key, value) < 0)
                        return -ENOMEM;
                const char *e = a + strlen(a), *start, *end = cmdline_next(a, e, &start);
                if (start != a || end != e || boot_quote_open(a, e))
                        continue;
                if (cmdline_parse_arg(a, strlen(a), &name, &v) < 0)
                        return -ENOMEM;
                if (streq(name, key) && streq(strempty(v), value)) {
                        *ret = TAKE_PTR(a);
                        return 0;
                }
        }
        return -EINVAL;
}

/* Edits the arguments in text [b, e) in place: every occurrence of key goes; with a value, the
 * first occurrence is replaced where it stood, or "key=value" is appended; all before a "--" (what
 * follows it is init's, and stays after the kernel's arguments). Everything else —
 * spacing, order, quoting — stays byte for byte. */
static int edit_args(StrBuf *out, const char *b, const char *e, const char *key, const char *value) {
        bool placed = false;
        const char *p = b, *last_end = b, *init = NULL;
        _cleanup_free_ char *arg = NULL;
        StrBuf o = {};

        if (value) {
                int k = format_arg(key, value, &arg);
                if (k < 0)
                        return k;
        }

        while (p < e) {
                const char *ws = p, *t;
                p = cmdline_next(p, e, &t);
                if (t == p)
                        break;
                if (cmdline_arg_ends_kernel(t, (size_t) (p - t))) {
                        init = t; /* "--" and init's arguments stay as they are, after the kernel's */
                        break;
                }
                _cleanup_free_ char *tok = strndup(t, (size_t) (p - t));
                if (!tok) {
                        strbuf_done(&o);
                        return -ENOMEM;
                }
                if (!cmdline_arg_is(tok, key)) {
                        if (o.len)
                                strbuf_appendf(&o, "%.*s", (int) (p - ws), ws);
                        else /* the first argument kept: no separator before it */
                                strbuf_appendf(&o, "%.*s", (int) (p - t), t);
                        last_end = p;
                        continue;
                }
                if (value && !placed) {
                        strbuf_appendf(&o, "%.*s", (int) (t - ws), ws);
                        strbuf_append(&o, arg);
                        placed = true;
                }
                last_end = p;
        }
        if (value && !placed)
                strbuf_appendf(&o, "%s%s", o.len ? " " : "", arg);
        if (init) {
                const char *from = o.len ? last_end : init;
                if (o.len && from == init)
                        strbuf_append(&o, " ");
                strbuf_appendf(&o, "%.*s", (int) (e - from), from);
        } else
                strbuf_appendf(&o, "%.*s", (int) (e - last_end), last_end); /* trailing spaces */
        if (o.oom) {
                strbuf_done(&o);
                return -ENOMEM;
        }
        strbuf_append(out, o.s ? o.s : "");
        strbuf_done(&o);
        return 0;
}

static bool is_options_line(const char *line) {
        return startswith(line, "options") && (line[7] == ' ' || line[7] == '\t');
}

/* The arguments in a file's text, which is cut at the end of their line: the options line of an
 * entry, or the first line of a one-line file; "" when there are none. */
static const char *text_options(char *text, bool whole_file) {
        for (char *line = text, *next; line && *line; line = next) {
                next = strchr(line, '\n');
                if (next)
                        *next++ = 0;
                if (whole_file || is_options_line(line))
                        return whole_file ? line : line + 8;
        }
        return "";
}

/* The arguments of a file, as a list (NULL on OOM). */
static char **file_args(const char *text, bool whole_file) {
        _cleanup_free_ char *copy = strdup(text);
        char **l = NULL;
        if (!copy)
                return NULL;
        return cmdline_split(text_options(copy, whole_file), &l) < 0 ? NULL : l;
}

static bool same_args(char **a, char **b) {
        if (strv_length(a) != strv_length(b))
                return false;
        strv_sort(a);
        strv_sort(b);
        for (size_t i = 0; a[i]; i++)
                if (!streq(a[i], b[i]))
                        return false;
        return true;
}

/* Before rtpart first edits a bootloader file it keeps a copy where the engine lets it keep things
 * (beside the journal); once the file's arguments are back to the copy's (in any order), the copy
 * itself is put back, byte for byte. NULL: nowhere to keep it. */
static char *backup_path(const KnobKeep *keep, const char *path) {
        _cleanup_free_ char *flat = strdup(path);
        char *s;
        if (!keep || !flat)
                return NULL;
        for (char *c = flat; *c; c++)
                if (*c == '/')
                        *c = '%';
        return asprintf(&s, "%s/%s", keep->dir, flat) < 0 ? NULL : s;
}

static int edit_options_file(Root *root, const KnobKeep *keep, const char *path, bool whole_file, const char *key,
                             const char *value, KnobResult *ret) {
        _cleanup_free_ char *text = NULL, *bpath = NULL, *backup = NULL;
        int k = root_read_file(root, path, &text, NULL);
        if (k < 0)
                return k;
        bpath = backup_path(keep, path);
        if (keep && !bpath)
                return -ENOMEM;
        if (bpath && root_read_file(keep->root, bpath, &backup, NULL) == -ENOENT) {
                k = root_write_file_atomic(keep->root, bpath, text, strlen(text), 0600);
                if (k < 0)
                        return k;
        }

        StrBuf b = {};
        bool done = false;
        for (char *line = text, *next; line && *line; line = next) {
                next = strchr(line, '\n');
                if (next)
                        *next++ = 0;
                if ((whole_file && !done) || (!whole_file && !done && is_options_line(line))) {
                        size_t skip = whole_file ? 0 : 7;
                        const char *args = line + skip;
                        if (!whole_file) {
                                strbuf_append(&b, "options");
                                /* keep the separator as it was */
                                const char *a = args;
                                while (*a == ' ' || *a == '\t')
                                        a++;
                                strbuf_appendf(&b, "%.*s", (int) (a - args), args);
                                if (a == args)
                                        strbuf_append(&b, " ");
                                args = a;
                        }
                        if (boot_quote_open(args, args + strlen(args))) {
                                strbuf_done(&b);
                                return boot_refuse_open_quote(ret, path,
                                                              whole_file ? "the command line" : "the options line");
                        }
                        k = edit_args(&b, args, args + strlen(args), key, value);
                        if (k < 0) {
                                strbuf_done(&b);
                                return k;
                        }
                        strbuf_append(&b, next ? "\n" : "");
                        done = true;
                        continue;
                }
                strbuf_appendf(&b, "%s%s", line, next ? "\n" : "");
        }
        if (!done) {
                if (b.len && b.s[b.len - 1] != '\n')
                        strbuf_append(&b, "\n");
                strbuf_append(&b, whole_file ? "" : "options ");
                k = edit_args(&b, "", "", key, value);
                if (k < 0) {
                        strbuf_done(&b);
                        return k;
                }
                strbuf_append(&b, "\n");
        }
        _cleanup_free_ char *out = strbuf_steal(&b);
        if (!out)
                return -ENOMEM;

        /* Back to the original arguments? Then the original bytes. */
        if (bpath && !backup && root_read_file(keep->root, bpath, &backup, NULL) < 0)
                backup = NULL;
        if (backup) {
                _cleanup_strv_free_ char **now = file_args(out, whole_file), **was = file_args(backup, whole_file);
                if (now && was && same_args(now, was)) {
                        free(out);
                        out = TAKE_PTR(backup);
                        (void) root_unlink(keep->root, bpath);
                }
        }
        struct stat st;
        mode_t mode = root_stat(root, path, &st) >= 0 ? st.st_mode & 07777 : 0644;
        return root_write_file_atomic(root, path, out, strlen(out), mode);
}

/* The files boot arguments live in, for the engine to journal each one's originals: /etc/kernel/cmdline
 * and every BLS entry, or the entries alone. GRUB's are one place: the drop-in, which edits what
 * /etc/default/grub gives (rtpart never edits that file). */
static int boot_files(Root *root, const Knob *k, char ***ret_paths) {
        _cleanup_strv_free_ char **l = NULL, **entries = NULL;
        BootLoader b;
        int r = host_find_bootloader(root, &b, &entries);
        if (r < 0)
                return r;
        *ret_paths = NULL;
        if (b != BOOTLOADER_BLS && b != BOOTLOADER_KERNEL_CMDLINE)
                return 0;
        if (b == BOOTLOADER_KERNEL_CMDLINE && strv_extend(&l, KERNEL_CMDLINE) < 0)
                return -ENOMEM;
        for (char **e = entries; e && *e; e++)
                if (strv_extend(&l, *e) < 0)
                        return -ENOMEM;
        size_t n = strv_length(l);
        *ret_paths = TAKE_PTR(l);
        return (int) n;
}

/* Whether path is one of the files boot arguments live in now (a knob's path comes from the
 * journal: nothing else is read or written through it). */
static int boot_file_known(Root *root, const char *path) {
        _cleanup_strv_free_ char **l = NULL;
        int r = boot_files(root, NULL, &l);
        return r < 0 ? r : strv_contains(l, path);
}

/* The options of the running kernel's entry if there is one, else of the newest. */
static int bls_configured(Root *root, char **entries, char **ret) {
        _cleanup_free_ char *release = NULL, *text = NULL;
        if (strv_length(entries) == 0)
                return -ENOENT;
        (void) root_read_line(root, "proc/sys/kernel/osrelease", &release);
        const char *pick = entries[strv_length(entries) - 1];
        for (char **e = entries; release && *e; e++)
                if (strstr(*e, release))
                        pick = *e;
        int k = root_read_file(root, pick, &text, NULL);
        if (k < 0)
                return k;
        *ret = strdup(text_options(text, /* whole_file= */ false));
        return *ret ? 0 : -ENOMEM;
}

/* What the bootloader's configuration gives the kernel, read once for a plan or a read. */
typedef struct BootConfig {
        BootLoader loader;
        char *line; /* BLS: the options of the running kernel's entry; kernel-install: etc/kernel/cmdline */
        Grub grub;
} BootConfig;

static void boot_config_done(BootConfig *c) {
        free(c->line);
        grub_done(&c->grub);
}

/* -ENOENT: no configuration; -EBADMSG: GRUB's cannot be read, *ret_why says why. */
static int boot_config_load(Root *root, BootConfig *ret, char **ret_why) {
        _cleanup_strv_free_ char **entries = NULL;
        int k = host_find_bootloader(root, &ret->loader, &entries);
        if (k < 0)
                return k;
        switch (ret->loader) {
        case BOOTLOADER_GRUB:
                return grub_load(root, &ret->grub, ret_why);
        case BOOTLOADER_BLS:
                return bls_configured(root, entries, &ret->line);
        case BOOTLOADER_KERNEL_CMDLINE:
                return root_read_line(root, KERNEL_CMDLINE, &ret->line);
        default:
                return -ENOENT;
        }
}

static int boot_config_get(const BootConfig *c, const char *key, char **ret) {
        return c->loader == BOOTLOADER_GRUB ? grub_get(&c->grub, key, ret) : cmdline_get(c->line, key, ret);
}

/* ---- verbs ---- */

/* The knob of /boot/args/name (v: its value in the profile). config NULL: the running kernel's
 * command line stands for what is configured. */
static int plan_arg(PlanCtx *ctx, const BootConfig *config, const char *name, json_t *v) {
        _cleanup_free_ char *id = NULL, *current = NULL, *running = NULL;
        const char *desired;
        int k;

        if (json_is_string(v))
                desired = json_string_value(v);
        else if (json_is_true(v))
                desired = "";
        else
                desired = NULL; /* false/null: the argument must not be there */

        /* Both end up in files a shell or a line parser reads (the top of the file, and backend.c for
         * the rules). */
        _cleanup_free_ char *ptr = json_pointer_append("/boot/args", name);
        if (!ptr)
                return -ENOMEM;
        if (!bootarg_name_valid(name))
                return plan_fail(ctx, ptr,
                                 "\"%s\" is not a kernel parameter name; a name is letters, digits and '_', "
                                 "then also '.' (module.param) and '-', at most %d characters, e.g. \"nohz_full\"",
                                 name, BOOTARG_NAME_MAX);
        k = plan_check_param_value(ctx, ptr, "kernel", "the kernel command line and GRUB's shell-sourced defaults",
                                   desired);
        if (k < 0)
                return k;

        if (asprintf(&id, "boot/%s", name) < 0)
                return -ENOMEM;
        k = config ? boot_config_get(config, name, &current) : cmdline_get(ctx->host->cmdline, name, &current);
        if (k >= 0)
                k = cmdline_get(ctx->host->cmdline, name, &running);
        if (k < 0)
                return k;
        Knob *kn;
        k = plan_add(ctx, id, VALUE_BOOTARG, NULL, current, desired, /* reboot= */ true, &kn);
        if (k < 0)
                return k;
        if (config && !value_equal(VALUE_BOOTARG, current, running)) {
                _cleanup_free_ char *disp = value_display(VALUE_BOOTARG, running);
                if (asprintf(&kn->note, "running kernel: %s", strempty(disp)) < 0)
                        return -ENOMEM;
        }
        return 0;
}

static int boot_plan(PlanCtx *ctx) {
        json_t *args = json_object_get(json_object_get(ctx->resolved->doc, "boot"), "args");
        _cleanup_(boot_config_done) BootConfig config = {};
        _cleanup_free_ char *why = NULL;
        const char *name;
        json_t *v;

        if (!json_object_size(args))
                return 0;
        int k = boot_config_load(ctx->root, &config, &why);
        if (k == -ENOENT)
                k = plan_note(ctx,
                              "boot: no bootloader configuration found (GRUB, BLS entries or /etc/kernel/cmdline); "
                              "the running kernel's command line is shown, and apply cannot write boot arguments");
        else if (k == -EBADMSG)
                k = plan_note(ctx,
                              "boot: %s; until then the running kernel's command line is shown, and apply cannot "
                              "write boot arguments",
                              why);
        else if (k >= 0)
                k = 1;
        if (k < 0)
                return k;
        json_object_foreach (args, name, v) {
                int r = plan_arg(ctx, k > 0 ? &config : NULL, name, v);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int boot_read(Root *root, const Knob *k, char **ret) {
        _cleanup_(boot_config_done) BootConfig config = {};
        _cleanup_free_ char *text = NULL, *why = NULL;
        int r;
        if (k->path) {
                /* One file's own value (boot_files()). */
                r = boot_file_known(root, k->path);
                if (r <= 0)
                        return r < 0 ? r : -ENOENT;
                r = root_read_file(root, k->path, &text, NULL);
                if (r < 0)
                        return r;
                return cmdline_get(text_options(text, streq(k->path, KERNEL_CMDLINE)), k->id + strlen("boot/"), ret);
        }
        r = boot_config_load(root, &config, &why);
        if (r < 0)
                return r;
        return boot_config_get(&config, k->id + strlen("boot/"), ret);
}

static int boot_write_args(Root *root, const Knob *k, const char *value, const KnobKeep *keep, KnobResult *ret) {
        const char *key = k->id + strlen("boot/");
        _cleanup_strv_free_ char **entries = NULL;
        BootLoader b;
        int r;

        /* The plan refused these already; a name or a newline that still got here (a journal
         * edited by hand) must not reach a file where it would start another line. Quotes and
         * spaces stay possible: an original value put back as the user wrote it. */
        if (!bootarg_name_valid(key) || bootarg_has_control(value))
                return -EINVAL;

        if (k->path) {
                /* One file (boot_files()): an entry removed since has nothing left to put back. */
                r = boot_file_known(root, k->path);
                if (r <= 0)
                        return r;
                return edit_options_file(root, keep, k->path, streq(k->path, KERNEL_CMDLINE), key, value, ret);
        }
        r = host_find_bootloader(root, &b, &entries);
        if (r < 0)
                return r;
        if (b == BOOTLOADER_GRUB)
                return grub_write(root, key, value, ret);
        if (b == BOOTLOADER_NONE)
                return KNOB_SKIPPED;
        if (b == BOOTLOADER_KERNEL_CMDLINE &&
            (r = edit_options_file(root, keep, KERNEL_CMDLINE, true, key, value, ret)) < 0)
                return r;
        for (char **e = entries; *e; e++) {
                r = edit_options_file(root, keep, *e, false, key, value, ret);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int boot_write(Root *root, const Knob *k, const char *value, const KnobKeep *keep, KnobResult *ret) {
        *ret = (KnobResult) {};
        return knob_result_finish(ret, boot_write_args(root, k, value, keep, ret));
}

static int boot_flush(Root *root, const Host *host, char **ret_note) {
        BootLoader b = host_detect_bootloader(root);
        int r;

        if (b == BOOTLOADER_BLS)
                return 0; /* the entries are the configuration */
        if (!root_can(root, ROOT_CAN_UPDATE_BOOTLOADER))
                return asprintf(ret_note, "%s not regenerated: %s is not this system's root; run %s inside it",
                                b == BOOTLOADER_GRUB ? "grub.cfg" : "boot entries", root->path,
                                b == BOOTLOADER_GRUB ? "update-grub" : "kernel-install") < 0
                        ? -ENOMEM
                        : 0;
        if (b == BOOTLOADER_KERNEL_CMDLINE)
                return asprintf(ret_note,
                                "existing boot entries were updated; unified kernel images built from "
                                "/etc/kernel/cmdline need rebuilding (kernel-install add)") < 0
                        ? -ENOMEM
                        : 0;
        r = root_update_bootloader(
                root,
                "if command -v update-grub >/dev/null; then update-grub; "
                "elif command -v grub-mkconfig >/dev/null; then grub-mkconfig -o /boot/grub/grub.cfg; "
                "else grub2-mkconfig -o /boot/grub2/grub.cfg; fi");
        if (r < 0)
                return asprintf(ret_note,
                                "regenerating grub.cfg failed (update-grub); run it by hand before rebooting") < 0
                        ? -ENOMEM
                        : r;
        return asprintf(ret_note, "grub.cfg regenerated; the new kernel arguments take effect at the next boot") < 0
                ? -ENOMEM
                : 0;
}

static int boot_running(const Knob *k, const char *running_cmdline, char **ret) {
        if (!startswith(k->id, "boot/"))
                return -EINVAL;
        return cmdline_get(running_cmdline, k->id + strlen("boot/"), ret);
}

static char *boot_heading(json_t *host) {
        char *s;
        return asprintf(&s, "boot (kernel command line, effective after reboot; bootloader: %s)",
                        strempty(json_string_value(json_object_get(host, "bootloader")))) < 0
                ? NULL
                : s;
}

/* "args": a kernel parameter's name as the key, its value alone (one parameter a key). */
static int boot_check(const char *file, json_t *section, const char *pointer, Error *e) {
        const char *key;
        json_t *v;
        _cleanup_free_ char *p = json_pointer_append(pointer, "args");
        if (!p)
                return -ENOMEM;
        json_object_foreach (json_object_get(section, "args"), key, v) {
                _cleanup_free_ char *pk = json_pointer_append(p, key);
                for (const char *c = key; *c; c++)
                        if (!isalnum((unsigned char) *c) && !strchr("._-", *c))
                                return error_set(
                                        e, -EINVAL, file, pk,
                                        "\"%s\" is not a kernel parameter name; use the name alone as the key and its value as the value, e.g. \"nohz_full\": \"${isolated}\"",
                                        key);
                if (json_is_string(v))
                        for (const char *c = json_string_value(v); *c; c++)
                                if (isspace((unsigned char) *c) || *c == '"')
                                        return error_set(
                                                e, -EINVAL, file, pk,
                                                "the value must not contain spaces or quotes; give each kernel parameter its own key");
        }
        return 0;
}

/* Replaced whole by its writes: the drop-in, the kernel-install command line, the BLS entries (the
 * copies kept of them are beside the journal, whose recovery sweeps them). */
static const char * const boot_replaces[] = {
        GRUB_DROPIN, KERNEL_CMDLINE, "boot/loader/entries/*.conf", "boot/efi/loader/entries/*.conf", NULL,
};

const Backend backend_boot = {
        .domain = DOMAIN_BOOT,
        .name = "boot",
        .schema = &boot_section,
        .check = boot_check,
        .plan = boot_plan,
        .files = boot_files,
        .read = boot_read,
        .write = boot_write,
        .replaces = boot_replaces,
        .flush = boot_flush,
        .flags = BACKEND_REBOOT_ONLY,
        .running = boot_running,
        .heading = boot_heading,
        .knob_noun = "boot argument",
        .watch = knob_watch_none, /* bootloader files: verified at start and by the timer */
};
