/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "strv.h"
#include "tuned-internal.h"

/* [net]: tuned's net plugin, per NIC of `devices` (every NIC without it): what maps to rtpart's
 * net section (channels, in ethtool -L's words) and to its modules section (nf_conntrack's hash
 * size, which tuned writes as the module's parameter); the rest (ethtool's features, coalescing,
 * rings, pause, Wake-on-LAN; txqueuelen, mtu) has no setting in rtpart. */

/* The words of s between any of sep (a strv; NULL on OOM). */
static char **split(const char *s, const char *sep) {
        _cleanup_free_ char *copy = strdup(s);
        char **l = calloc(1, sizeof(char *)); /* an empty strv where s has no word */
        if (!copy || !l) {
                free(l);
                return NULL;
        }
        for (char *sp = NULL, *t = strtok_r(copy, sep, &sp); t; t = strtok_r(NULL, sep, &sp))
                if (strv_extend(&l, t) < 0) {
                        strv_free(l);
                        return NULL;
                }
        return l;
}

static bool is_count(const char *s) {
        return s && *s && strspn(s, "0123456789") == strlen(s) && strlen(s) < 10;
}

/* "combined 4", "rx 2 tx 2": into rule's channels, rx_channels and tx_channels. */
static int map_channels(Mapper *m, json_t *rule, const char *v) {
        _cleanup_strv_free_ char **w = split(v, " \t");
        if (!w)
                return -ENOMEM;
        size_t n = strv_length(w);
        if (n == 0 || n % 2 != 0)
                return UNSUPPORTED(m, "'%s' is not ethtool -L's words (\"combined N\", \"rx N tx N\")", v);
        for (size_t i = 0; i < n; i += 2) {
                const char *key = streq(w[i], "combined") ? "channels"
                        : streq(w[i], "rx")               ? "rx_channels"
                        : streq(w[i], "tx")               ? "tx_channels"
                                                          : NULL;
                if (!key || !is_count(w[i + 1])) {
                        int r = UNSUPPORTED(m, "'%s %s': rtpart sets combined, rx and tx channels to a count", w[i],
                                            w[i + 1]);
                        if (r < 0)
                                return r;
                        continue;
                }
                int r = JSET(rule, key, json_integer(atoll(w[i + 1])));
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The rule, once per device of `devices` ("eth0, eth1"; a pattern each), into net.nics. */
static int add_rules(Mapper *m, json_t *rule, const char *devices) {
        _cleanup_strv_free_ char **d = split(devices ?: "*", ", \t");
        json_t *nics = json_object_get(tuned_obj(m->profile, "net"), "nics");
        if (!d || !tuned_obj(m->profile, "net"))
                return -ENOMEM;
        if (!nics) {
                nics = json_array();
                if (!nics || JSET(json_object_get(m->profile, "net"), "nics", nics) < 0)
                        return -ENOMEM;
        }
        for (char **x = d; *x; x++) {
                json_t *r = json_deep_copy(rule);
                if (!r || JSET(r, "match", json_string(*x)) < 0 || json_array_append_new(nics, r) < 0)
                        return -ENOMEM;
        }
        return 0;
}

int tuned_map_net(Mapper *m, TunedSection *u) {
        json_t *rule = json_object();
        TunedOption *dev = tuned_section_option(u, "devices");
        int r = rule ? 0 : -ENOMEM;
        for (size_t i = 0; i < u->n_options && r >= 0; i++) {
                TunedOption *o = &u->options[i];
                _cleanup_free_ char *v = NULL;
                if (streq(o->key, "type") || streq(o->key, "enabled") || streq(o->key, "priority") ||
                    streq(o->key, "devices"))
                        continue;
                tuned_map_at(m, u->name, o);
                r = tuned_expand(m->ev, strempty(o->value), &v);
                if (r < 0)
                        break;
                if (streq(o->key, "channels"))
                        r = map_channels(m, rule, v);
                else if (streq(o->key, "nf_conntrack_hashsize") && is_count(v))
                        r = JSET(tuned_obj(tuned_obj(m->profile, "modules"), "nf_conntrack"), "hashsize",
                                 json_integer(atoll(v)));
                else
                        r = UNSUPPORTED(m, "%s is a NIC setting rtpart's net section does not have", o->key);
        }
        if (r >= 0 && json_object_size(rule) > 0)
                r = add_rules(m, rule, dev ? dev->value : NULL);
        json_decref(rule);
        return r;
}
