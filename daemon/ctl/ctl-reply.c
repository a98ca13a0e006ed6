/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "ctl.h"
#include "strv.h"

/* What rtpartctl reads of rtpartd's answers, checked before anything of them is printed: an answer
 * of another shape (another version of rtpartd, or no rtpartd at all) is an error that names the
 * member, never a crash or a half-printed report.
 *
 * A shape is written as the documents are packed (lib/engine/document.c):
 *   s string   i integer   n number   b true or false   D a knob domain's name   * anything
 *   {key:SHAPE, key?:SHAPE, …}   an object with those members (others may be there too); "key?"
 *                               may be absent or null
 *   {*:SHAPE}                   an object whose every member has SHAPE
 *   [SHAPE]                     an array whose every element has SHAPE */

#define DRIFT "{knob:s, domain:s, expected?:s, actual?:s}"
#define WRITE_ERROR "{knob?:s, path?:s, errno?:i, message:s, detail?:s}"
#define VM \
        "{name:s, vcpus:i, cpus:s, reserved:s, emulator:s, emulator_policy:s, nodes:s, cache_percent:i, " \
        "hugepages?:s}"
#define FRESHNESS "freshness?:{*:{age_ms:i, watched:b}}"

static const struct {
        const char *name;
        const char *shape;
} reply_shapes[] = {
        { "ListProfiles", "[{name:s, summary?:s, path?:s, origin?:s, overrides_system?:b}]" },
        { "Plan",
          "{profile:s, cpus:{isolated:s, housekeeping:s}, host:{cpus_online:i, nodes:i, cgroup:s, bootloader?:s, "
          "systemd?:b}, changes:[{knob:s, domain:D, kind?:s, current?:s, desired?:s, note?:s}], unchanged:[{knob:s, "
          "domain:D, kind?:s, value?:s, note?:s}], notes:[s], summary:{changes:i, reboot:i, unchanged:i}}" },
        { "Apply",
          "{profile:s, changed:i, unchanged:i, unmovable:i, skipped:i, restored:i, reboot_changes:i, "
          "reboot_knobs:[s], notes:[s]}" },
        /* The details of Apply's error org.rtpart.Manager.Failed. */
        { "ApplyFailure", "{ok:b, error:" WRITE_ERROR ", rollback_incomplete?:b, notes:[s]}" },
        { "Revert", "{ok:b, restored:i, failed:i, skipped:i, error?:" WRITE_ERROR ", notes:[s]}" },
        { "Verify",
          "{profile?:s, drift:[" DRIFT "], reboot_required:b, reboot_pending:[s], unmovable:[s], checked:i, "
          "transaction_open?:b, daemon?:{live?:b, " FRESHNESS "}}" },
        { "Status",
          "{profile?:s, applied_at?:s, knobs:i, drift:i, drifted?:[" DRIFT "], reboot_required:b, "
          "reboot_pending:[s], unmovable:[s], originals:i, last_error?:{message?:s, at?:s}, transaction_open?:b, "
          "daemon?:{watched_files?:i, interval_s?:i, drift_events?:i, task_check?:b, tasks_on_isolated?:i, "
          "live?:b, " FRESHNESS "}}" },
        { "VmAdd", VM },
        { "VmRemove", VM },
        { "VmList", "{vms:[" VM "]}" },
        { "Watch", "{event:s, time?:s, profile?:s, drift_count?:i, drift?:[" DRIFT "]}" },
};

typedef struct ShapeCheck {
        const char *p; /* the shape, as far as read */
        char *error;   /* the first mismatch: "POINTER: what" */
        bool oom;
} ShapeCheck;

static void shape_skip_blanks(ShapeCheck *c) {
        while (*c->p == ' ')
                c->p++;
}

static void shape_fail(ShapeCheck *c, const char *ptr, const char *what) {
        if (!c->error && !c->oom && asprintf(&c->error, "%s: %s", *ptr ? ptr : "/", what) < 0) {
                c->error = NULL;
                c->oom = true;
        }
}

static const char *type_name(char t) {
        switch (t) {
        case 's':
                return "a string";
        case 'i':
                return "an integer";
        case 'n':
                return "a number";
        case 'b':
                return "true or false";
        case 'D':
                return "a knob domain's name";
        case '{':
                return "an object";
        default:
                return "an array";
        }
}

static void shape_value(ShapeCheck *c, json_t *v, const char *ptr);

/* The members of an object shape, c->p after its '{'. v NULL: only read past the shape. */
static void shape_object(ShapeCheck *c, json_t *v, const char *ptr) {
        for (;;) {
                shape_skip_blanks(c);
                if (*c->p == '}') {
                        c->p++;
                        return;
                }
                size_t n = strcspn(c->p, "?:");
                _cleanup_free_ char *key = strndup(c->p, n);
                if (!key) {
                        c->oom = true;
                        return;
                }
                c->p += n;
                bool optional = *c->p == '?';
                c->p += optional ? 2 : 1;
                if (streq(key, "*")) { /* every member */
                        const char *member_shape = c->p, *k;
                        json_t *m;
                        json_object_foreach (v, k, m) {
                                _cleanup_free_ char *p = json_pointer_append(ptr, k);
                                c->p = member_shape;
                                shape_value(c, p ? m : NULL, p ? p : "");
                                c->oom = c->oom || !p;
                        }
                        c->p = member_shape;
                        shape_value(c, NULL, ptr);
                } else {
                        json_t *m = json_object_get(v, key);
                        _cleanup_free_ char *p = json_pointer_append(ptr, key);
                        c->oom = c->oom || !p;
                        if (v && (!m || json_is_null(m)) && !optional)
                                shape_fail(c, p ? p : ptr, "missing");
                        shape_value(c, v && m && !json_is_null(m) ? m : NULL, p ? p : ptr);
                }
                shape_skip_blanks(c);
                if (*c->p == ',')
                        c->p++;
        }
}

static void shape_value(ShapeCheck *c, json_t *v, const char *ptr) {
        char t;

        shape_skip_blanks(c);
        t = *c->p++;
        bool ok = !v || (t == 's' && json_is_string(v)) || (t == 'i' && json_is_integer(v)) ||
                (t == 'n' && json_is_number(v)) || (t == 'b' && json_is_boolean(v)) || t == '*' ||
                (t == 'D' && domain_from_string(strempty(json_string_value(v))) >= 0) ||
                (t == '{' && json_is_object(v)) || (t == '[' && json_is_array(v));
        if (!ok) {
                char what[64];
                snprintf(what, sizeof(what), "%s belongs here", type_name(t));
                shape_fail(c, ptr, what);
                v = NULL;
        }
        if (t == '{')
                shape_object(c, v, ptr);
        else if (t == '[') {
                const char *item_shape = c->p;
                size_t i;
                json_t *e;
                json_array_foreach (v, i, e) {
                        _cleanup_free_ char *p = json_pointer_append_index(ptr, i);
                        c->oom = c->oom || !p;
                        c->p = item_shape;
                        shape_value(c, p ? e : NULL, p ? p : ptr);
                }
                c->p = item_shape;
                shape_value(c, NULL, ptr);
                shape_skip_blanks(c);
                c->p++; /* ']' */
        }
}

int ctl_reply_check_shape(const char *shape, json_t *doc, char **ret_message) {
        ShapeCheck c = { .p = shape };
        shape_value(&c, doc, "");
        shape_skip_blanks(&c);
        if (*c.p != 0) { /* not a shape: a bug of the table */
                free(c.error);
                return -EINVAL;
        }
        if (c.oom) {
                free(c.error);
                return -ENOMEM;
        }
        if (c.error) {
                *ret_message = c.error;
                return -EBADMSG;
        }
        return 0;
}

const char *ctl_reply_shape(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(reply_shapes); i++)
                if (streq(reply_shapes[i].name, name))
                        return reply_shapes[i].shape;
        return NULL;
}

int ctl_reply_check(const char *name, json_t *doc) {
        const char *shape = ctl_reply_shape(name);
        _cleanup_free_ char *msg = NULL;
        if (!shape)
                return 0;
        int r = ctl_reply_check_shape(shape, doc, &msg);
        if (r == -ENOMEM)
                return log_oom();
        if (r < 0)
                return log_error_errno(r,
                                       "rtpartd's answer to %s is not what rtpartctl reads (%s); nothing of it is "
                                       "printed. rtpartd and rtpartctl must be the same version: restart rtpartd "
                                       "after an upgrade, or use --no-daemon",
                                       streq(name, "ApplyFailure") ? "Apply" : name, msg);
        return 0;
}
