/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "backend.h"
#include "strv.h"

/* Module parameters: "modules": {"kvm": {"halt_poll_ns": 0}} → knob module/kvm/halt_poll_ns on
 * sys/module/kvm/parameters/halt_poll_ns. A parameter the module made read-only at runtime
 * (kvm's kvmclock_periodic_sync, mode 0444) can only be set when the module loads: its knob has
 * reboot=true and the write verb puts it into /etc/modprobe.d/rtpart.conf as
 * "options <module> <param>=<value>"; the desired value is written the same way in both places.
 *
 * Boolean parameters read "Y"/"N". A JSON true/false, or a string such as "on"/"off", becomes
 * "Y"/"N" (what the kernel shows) unless the parameter reads as a number, then "1"/"0": either way
 * the value is what the file shows and what param_set_bool()/kstrtobool() take. */

#define MODPROBE_CONF "/etc/modprobe.d/rtpart.conf"

static bool is_yn(const char *s) {
        return s && (streq(s, "Y") || streq(s, "N") || streq(s, "y") || streq(s, "n"));
}

static bool is_number(const char *s) {
        char *end;
        if (!s || !*s)
                return false;
        errno = 0;
        (void) strtoll(s, &end, 0);
        return !errno && end != s && !*end;
}

/* 1 true, 0 false, -1 not a boolean word. */
static int bool_word(const char *s) {
        static const char * const yes[] = { "y", "yes", "true", "on", "1" };
        static const char * const no[] = { "n", "no", "false", "off", "0" };
        for (size_t i = 0; i < ELEMENTSOF(yes); i++) {
                if (strcasecmp(s, yes[i]) == 0)
                        return 1;
                if (strcasecmp(s, no[i]) == 0)
                        return 0;
        }
        return -1;
}

/* The desired value in the form the parameter file shows (see the top of the file). */
static int param_value(json_t *v, const char *cur, char **ret) {
        bool yn = is_yn(cur), numeric = !yn && is_number(cur);
        char *s;

        if (json_is_boolean(v))
                s = strdup(numeric ? (json_is_true(v) ? "1" : "0") : (json_is_true(v) ? "Y" : "N"));
        else if (json_is_string(v)) {
                int b = yn ? bool_word(json_string_value(v)) : -1;
                s = strdup(b < 0 ? json_string_value(v) : b ? "Y" : "N");
        } else if (json_is_integer(v))
                return asprintf(ret, "%lld", (long long) json_integer_value(v)) < 0 ? -ENOMEM : 0;
        else if (json_is_real(v))
                return asprintf(ret, "%g", json_real_value(v)) < 0 ? -ENOMEM : 0;
        else
                return -EINVAL;
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char * const *) a, *(char * const *) b);
}

/* "a, b, c": the parameters the module has, sorted. */
static int list_params(Root *root, const char *dir, char **ret) {
        _cleanup_strv_free_ char **names = NULL;
        DIR *d;
        int k;

        k = root_opendir(root, dir, &d);
        if (k < 0)
                return k;
        for (struct dirent *de; (de = readdir(d));) {
                if (de->d_name[0] == '.')
                        continue;
                k = strv_extend(&names, de->d_name);
                if (k < 0) {
                        closedir(d);
                        return k;
                }
        }
        closedir(d);
        size_t n = strv_length(names);
        if (n > 1)
                qsort(names, n, sizeof(char *), cmp_str);
        StrBuf b = {};
        for (size_t i = 0; i < n; i++)
                strbuf_appendf(&b, "%s%s", i ? ", " : "", names[i]);
        char *s = n ? strbuf_steal(&b) : strdup("none");
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

/* The current value; NULL if the module went away or the parameter cannot be read back
 * (write-only, mode 0200, or a getter that fails). */
static int read_param(Root *root, const char *path, char **ret) {
        int k = root_read_line(root, path, ret);
        if (k == -ENOENT || k == -EACCES || k == -EPERM || k == -EIO || k == -EINVAL) {
                *ret = NULL;
                return 0;
        }
        return k;
}

static bool has_params(json_t *params) {
        const char *key;
        json_t *v;
        json_object_foreach(params, key, v)
                if (!json_is_null(v))
                        return true;
        return false;
}

static int plan_param(PlanCtx *ctx, const char *mod, const char *dir, const char *key, const char *param, json_t *v) {
        _cleanup_free_ char *path = NULL, *id = NULL, *cur = NULL, *want = NULL;
        _cleanup_free_ char *ptr = json_pointer_append("/modules", key);
        _cleanup_free_ char *pointer = ptr ? json_pointer_append(ptr, param) : NULL;
        struct stat st;
        int k;

        if (!pointer)
                return -ENOMEM;
        if (!*param || strchr(param, '/') || streq(param, ".") || streq(param, ".."))
                return plan_fail(ctx, pointer,
                                 "\"%s\" is not a parameter name; use the name from /sys/module/%s/parameters",
                                 param, mod);
        if (asprintf(&path, "%s/%s", dir, param) < 0 || asprintf(&id, "module/%s/%s", mod, param) < 0)
                return -ENOMEM;

        k = root_stat(ctx->root, path, &st);
        if (k == -ENOENT) {
                _cleanup_free_ char *names = NULL;
                k = list_params(ctx->root, dir, &names);
                if (k < 0)
                        return k;
                return plan_fail(ctx, pointer, "module %s has no parameter \"%s\"; its parameters are: %s", mod, param,
                                 names);
        }
        if (k < 0)
                return k;

        k = read_param(ctx->root, path, &cur);
        if (k < 0)
                return k;
        k = param_value(v, cur, &want);
        if (k < 0)
                return k;

        /* Read-only at runtime: the module takes it at load time only. */
        bool reboot = !(st.st_mode & S_IWUSR);
        Knob *kn;
        k = plan_add(ctx, id, VALUE_AUTO, path, cur, want, reboot, &kn);
        if (k < 0)
                return k;
        if (reboot && asprintf(&kn->note, "read-only at runtime: goes to " MODPROBE_CONF
                               ", applied at the next load of %s (reboot)", mod) < 0) {
                kn->note = NULL;
                return -ENOMEM;
        }
        return 0;
}

static int module_plan(PlanCtx *ctx) {
        json_t *sec = json_object_get(ctx->resolved->doc, "modules");
        const char *key;
        json_t *params;
        int k;

        json_object_foreach(sec, key, params) {
                if (!json_is_object(params) || !has_params(params))
                        continue;
                /* modprobe treats '-' and '_' alike; sysfs shows '_'. */
                _cleanup_free_ char *mod = strdup(key), *dir = NULL;
                if (!mod)
                        return -ENOMEM;
                for (char *c = mod; *c; c++)
                        if (*c == '-')
                                *c = '_';
                if (asprintf(&dir, "sys/module/%s/parameters", mod) < 0)
                        return -ENOMEM;
                if (!root_is_dir(ctx->root, dir)) {
                        k = plan_note(ctx, "module: %s is not loaded (no /%s); its parameters are skipped", mod, dir);
                        if (k < 0)
                                return k;
                        continue;
                }
                const char *param;
                json_t *v;
                json_object_foreach(params, param, v) {
                        if (json_is_null(v))
                                continue; /* removed by an including profile */
                        k = plan_param(ctx, mod, dir, key, param, v);
                        if (k < 0)
                                return k;
                }
        }
        return 0;
}

static int module_read(Root *root, const Knob *k, char **ret) {
        if (!k->path)
                return -EINVAL;
        return read_param(root, k->path, ret);
}

const Backend backend_module = {
        .domain = DOMAIN_MODULE,
        .name = "module",
        .plan = module_plan,
        .read = module_read,
};
