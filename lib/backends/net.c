/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "netdev.h"
#include "strv.h"

/* The "net" section of a profile: per NIC (matched by name or driver, the first rule wins) how many
 * channels it keeps and where its queues steer packets (RPS) and pick their transmit queue (XPS);
 * and the size of the global flow table of RFS. A NIC's queue IRQs are the irq section's.
 *
 * Knobs: net/IF/channels (the counts "rx R tx T other O combined C", through ethtool's generic
 * netlink family at the Root seam), net/IF/rx-N/rps_cpus, net/IF/rx-N/rps_flow_cnt,
 * net/IF/tx-N/xps_cpus (sys/class/net/IF/queues/…) and net/rps_sock_flow_entries
 * (proc/sys/net/core/rps_sock_flow_entries).
 *
 * A channel change adds or removes queues, and the driver may set the masks of the ones that stay
 * (virtio_net sets every queue's XPS again). So a NIC's channels are planned, and written, before
 * its queues, and its queues are the ones it has after the change: one the change brings is there
 * when its turn comes (absent now, absent again when put back), one the change takes is not
 * planned. Put back, in reverse, the queue masks come first and the channels last, which would
 * bring the queues the change took back with the kernel's defaults: so when rtpart first changes
 * a NIC's channels it keeps the counts, and the masks of every queue a change takes away (KnobKeep:
 * a file per NIC, keep_update()), and the write that brings the counts back to the kept ones writes
 * those masks back, byte for byte, and drops the file. A queue file that is not there when written
 * (a refused change brought no queue, the NIC went) is skipped, not owned. A driver that sets the
 * masks of the queues that stay when its channels change (virtio_net its XPS) gives them its own
 * values when they come back, as it did when it probed. Where a driver refuses the count (recorded as
 * refused, as a managed IRQ is), the queues beyond the profile's count keep their masks; their
 * IRQs are on housekeeping CPUs all the same. The NIC's IRQs, which a channel change may request
 * again or move (virtio_net gives each queue's IRQ its CPUs), are placed after it: net is before
 * irq in the backend table. */

#define NET_QUEUE_GONE "its queue is not there (its NIC did not take the channel count, or went)"
#define NET_NIC_GONE "the NIC is gone"
#define NET_REFUSAL "the NIC's driver refuses this channel count (fixed queues)"
#define NET_FLOW_MAX (1L << 29) /* what the kernel takes for rps_sock_flow_entries */

static const Schema net_flow_schema = { SCHEMA_INT, .min = 0, .max = NET_FLOW_MAX };
static const SchemaField net_nic_fields[] = {
        { "match", &schema_string },       { "driver", &schema_string },         { "channels", &schema_scalar },
        { "rx_channels", &schema_scalar }, { "tx_channels", &schema_scalar },    { "rps_cpus", &schema_cpus },
        { "xps_cpus", &schema_cpus },      { "rps_flow_cnt", &net_flow_schema }, {}
};
static const Schema net_nic_schema = { SCHEMA_OBJECT, .fields = net_nic_fields };
static const Schema net_nics_schema = { SCHEMA_ARRAY, .items = &net_nic_schema };
static const SchemaField net_fields[] = { { "nics", &net_nics_schema },
                                          { "rps_sock_flow_entries", &net_flow_schema },
                                          {} };
static const Schema net_schema = { SCHEMA_OBJECT, .fields = net_fields };
static const SchemaField net_section = { "net", &net_schema };

static const char * const channel_keys[] = { "channels", "rx_channels", "tx_channels" };

/* ---- channel values: "rx 0 tx 0 other 1 combined 16" ---- */

static char *channels_format(const NetChannels *c) {
        char *s;
        return asprintf(&s, "rx %u tx %u other %u combined %u", c->rx, c->tx, c->other, c->combined) < 0 ? NULL : s;
}

static int channels_parse(const char *s, NetChannels *ret) {
        NetChannels c = {};
        unsigned seen = 0;
        const char *p = s;
        for (;;) {
                char word[16];
                unsigned v;
                int used;
                while (isspace((unsigned char) *p))
                        p++;
                if (!*p)
                        break;
                if (sscanf(p, "%15s %u%n", word, &v, &used) != 2)
                        return -EINVAL;
                p += used;
                uint32_t *f = streq(word, "rx")   ? &c.rx
                        : streq(word, "tx")       ? &c.tx
                        : streq(word, "other")    ? &c.other
                        : streq(word, "combined") ? &c.combined
                                                  : NULL;
                if (!f)
                        return -EINVAL;
                *f = v;
                seen++;
        }
        if (seen != 4)
                return -EINVAL;
        *ret = c;
        return 0;
}

static bool channels_same(const NetChannels *a, const NetChannels *b) {
        return a->rx == b->rx && a->tx == b->tx && a->other == b->other && a->combined == b->combined;
}

/* "net/eth1/…" → "eth1". */
static char *knob_ifname(const Knob *k) {
        const char *s = k->id + strlen("net/"), *e = strchr(s, '/');
        return e ? strndup(s, (size_t) (e - s)) : NULL;
}

static bool is_channels(const Knob *k) {
        size_t n = strlen(k->id), s = strlen("/channels");
        return startswith(k->id, "net/") && n > s && streq(k->id + n - s, "/channels");
}

/* ---- plan ---- */

/* The rule of nics that d takes: the first whose "match" (name) and "driver" patterns, those it
 * has, fit d. -1: none. */
static ssize_t rule_for(json_t *nics, const NetDev *d) {
        size_t i;
        json_t *r;
        json_array_foreach (nics, i, r) {
                const char *m = json_string_value(json_object_get(r, "match"));
                const char *drv = json_string_value(json_object_get(r, "driver"));
                if (m && fnmatch(m, d->name, 0) != 0)
                        continue;
                if (drv && (!d->driver || fnmatch(drv, d->driver, 0) != 0))
                        continue;
                return (ssize_t) i;
        }
        return -1;
}

/* A count of a rule: "housekeeping" is the housekeeping CPUs on the NIC's NUMA node (all of them
 * when it has none there, or no node); else a number. */
static int rule_count(PlanCtx *ctx, const NetDev *d, json_t *v, size_t rule, const char *key, unsigned *ret) {
        const char *s = json_string_value(v);
        if (s && streq(s, "housekeeping")) {
                CpuSet node, hk = ctx->resolved->housekeeping;
                if (d->node >= 0 && host_node_cpus(ctx->host, (unsigned) d->node, &node)) {
                        cpu_set_and(&node, &hk);
                        if (!cpu_set_is_empty(&node))
                                hk = node;
                }
                *ret = cpu_set_count(&hk);
                return 0;
        }
        char *end = NULL;
        long long n = json_is_integer(v) ? json_integer_value(v) : s ? strtoll(s, &end, 10) : -1;
        if ((end && (*end || end == s)) || n < 1 || n > 65535)
                return plan_fail_item(ctx, "/net/nics", rule, key,
                                      "\"%s\" is not a channel count; use \"housekeeping\" or a number from 1",
                                      s ?: "(not a string)");
        *ret = (unsigned) n;
        return 0;
}

/* The counts rule asks of a NIC that has cur (and may have at most cur's maxima). */
static int rule_channels(PlanCtx *ctx, const NetDev *d, json_t *r, size_t rule, const NetChannels *cur,
                         NetChannels *ret) {
        NetChannels want = *cur;
        for (size_t i = 0; i < ELEMENTSOF(channel_keys); i++) {
                json_t *v = json_object_get(r, channel_keys[i]);
                unsigned n;
                if (!v)
                        continue;
                int k = rule_count(ctx, d, v, rule, channel_keys[i], &n);
                if (k < 0)
                        return k;
                bool combined = i == 0 && cur->max_combined > 0;
                if (combined)
                        want.combined = MIN(n, cur->max_combined);
                if (i == 1 || (i == 0 && !combined))
                        want.rx = MIN(n, cur->max_rx);
                if (i == 2 || (i == 0 && !combined))
                        want.tx = MIN(n, cur->max_tx);
                if ((combined && n > cur->max_combined) || (!combined && n > MAX(cur->max_rx, cur->max_tx)))
                        (void) plan_note(ctx, "net: %s takes at most %u channels; it gets that many, not %u", d->name,
                                         combined ? cur->max_combined : MAX(cur->max_rx, cur->max_tx), n);
        }
        if (want.combined + want.rx == 0 || want.combined + want.tx == 0)
                return plan_fail_item(ctx, "/net/nics", rule, NULL,
                                      "%s would have no receive or no transmit channel; give it a count from 1",
                                      d->name);
        *ret = want;
        return 0;
}

/* net/IF/channels, planned when the rule asks for a count; *ret_rx and *ret_tx: how many receive
 * and transmit queues the NIC has after it (as it has now when it keeps its channels). */
static int plan_channels(PlanCtx *ctx, const NetDev *d, json_t *r, size_t rule, unsigned *ret_rx, unsigned *ret_tx) {
        bool asked = false;
        for (size_t i = 0; i < ELEMENTSOF(channel_keys); i++)
                asked = asked || json_object_get(r, channel_keys[i]);
        *ret_rx = d->n_rx;
        *ret_tx = d->n_tx;
        if (!asked)
                return 0;
        NetChannels cur = {}, want = {};
        _cleanup_free_ char *why = NULL;
        int k = root_channels_get(ctx->root, d->name, &cur, &why);
        if (k == -EOPNOTSUPP || k == -ENODEV)
                return plan_note(ctx, "net: %s: %s; its channels stay as they are", d->name,
                                 why
                                         ?: k == -ENODEV ? NET_NIC_GONE
                                                         : "its driver has no channels");
        if (k < 0)
                return plan_note(ctx, "net: %s: its channels cannot be read (%s%s%s); they stay as they are", d->name,
                                 strerror(-k), why ? ": " : "", strempty(why));
        k = rule_channels(ctx, d, r, rule, &cur, &want);
        if (k < 0)
                return k;
        _cleanup_free_ char *id = NULL, *c = channels_format(&cur), *w = channels_format(&want);
        if (!c || !w || asprintf(&id, "net/%s/channels", d->name) < 0)
                return -ENOMEM;
        k = plan_add(ctx, id, VALUE_AUTO, NULL, c, w, false, NULL);
        if (k < 0)
                return k;
        if (!channels_same(&cur, &want)) {
                /* Each kind of queue: those of the combined channels and those of its own. */
                *ret_rx = want.combined + want.rx;
                *ret_tx = want.combined + want.tx;
        }
        return 0;
}

/* One queue file's knob: queue is "rx-3", file "rps_cpus"; want already in the file's form. A
 * queue the NIC has now without the file (XPS of a single-queue NIC, a kernel without RPS) is left
 * out; one it will have only after its channel change is planned as absent now. */
static int plan_queue_file(PlanCtx *ctx, const NetDev *d, const char *queue, bool exists, const char *file,
                           ValueKind kind, const char *want, bool *missing) {
        _cleanup_free_ char *id = NULL, *path = NULL, *cur = NULL;
        if (asprintf(&id, "net/%s/%s/%s", d->name, queue, file) < 0 ||
            asprintf(&path, "sys/class/net/%s/queues/%s/%s", d->name, queue, file) < 0)
                return -ENOMEM;
        if (exists) {
                int k = root_read_line(ctx->root, path, &cur);
                if (k == -ENOMEM)
                        return k;
                if (k < 0) {
                        *missing = true;
                        return 0;
                }
        }
        return plan_add(ctx, id, kind, path, cur, want, false, NULL);
}

/* A power of two at least n (the kernel rounds flow table sizes so); 0 stays 0. */
static long long flow_round(long long n) {
        long long p = 1;
        while (p < n)
                p <<= 1;
        return n ? p : 0;
}

/* Masks of a rule (rps_cpus, xps_cpus) in the form of the queue files, with the host's width. */
static int rule_mask(PlanCtx *ctx, json_t *r, const char *key, char **ret) {
        const char *list = json_string_value(json_object_get(r, key));
        CpuSet set;
        *ret = NULL;
        if (!list)
                return 0;
        if (cpu_set_parse_list(list, &set, NULL) < 0)
                return -EINVAL; /* resolved: a canonical list */
        *ret = cpu_set_format_mask(&set, ctx->host->n_cpu_ids);
        return *ret ? 0 : -ENOMEM;
}

static int plan_queues(PlanCtx *ctx, const NetDev *d, json_t *r, unsigned n_rx, unsigned n_tx) {
        _cleanup_free_ char *rps = NULL, *xps = NULL, *flow = NULL;
        json_t *fv = json_object_get(r, "rps_flow_cnt");
        int k;
        if ((k = rule_mask(ctx, r, "rps_cpus", &rps)) < 0 || (k = rule_mask(ctx, r, "xps_cpus", &xps)) < 0)
                return k;
        if (fv && asprintf(&flow, "%lld", flow_round(json_integer_value(fv))) < 0)
                return -ENOMEM;
        bool missing = false;
        for (unsigned q = 0; q < n_rx && (rps || flow); q++) {
                char queue[32];
                snprintf(queue, sizeof(queue), "rx-%u", q);
                if (rps &&
                    (k = plan_queue_file(ctx, d, queue, q < d->n_rx, "rps_cpus", VALUE_CPU_MASK, rps, &missing)) < 0)
                        return k;
                if (flow &&
                    (k = plan_queue_file(ctx, d, queue, q < d->n_rx, "rps_flow_cnt", VALUE_AUTO, flow, &missing)) < 0)
                        return k;
        }
        for (unsigned q = 0; q < n_tx && xps; q++) {
                char queue[32];
                snprintf(queue, sizeof(queue), "tx-%u", q);
                if ((k = plan_queue_file(ctx, d, queue, q < d->n_tx, "xps_cpus", VALUE_CPU_MASK, xps, &missing)) < 0)
                        return k;
        }
        if (missing)
                return plan_note(ctx,
                                 "net: %s: some of its queues have no RPS or XPS file (a single-queue NIC has no "
                                 "XPS); those are left alone",
                                 d->name);
        return 0;
}

static int plan_flow_entries(PlanCtx *ctx, json_t *sec) {
        json_t *v = json_object_get(sec, "rps_sock_flow_entries");
        const char *path = "proc/sys/net/core/rps_sock_flow_entries";
        _cleanup_free_ char *cur = NULL, *want = NULL;
        if (!v)
                return 0;
        int k = root_read_line(ctx->root, path, &cur);
        if (k == -ENOENT)
                return plan_note(ctx, "net: this kernel has no rps_sock_flow_entries (built without RPS); skipped");
        if (k == -ENOMEM || asprintf(&want, "%lld", flow_round(json_integer_value(v))) < 0)
                return -ENOMEM;
        return plan_add(ctx, "net/rps_sock_flow_entries", VALUE_AUTO, path, cur, want, false, NULL);
}

static int net_plan(PlanCtx *ctx) {
        json_t *sec = json_object_get(ctx->resolved->doc, "net");
        json_t *nics = json_object_get(sec, "nics");
        NetDev *devs = NULL;
        size_t n = 0, matched = 0;
        int k;
        if (!sec)
                return 0;
        if ((k = plan_flow_entries(ctx, sec)) < 0)
                return k;
        if (json_array_size(nics) == 0)
                return 0;
        if ((k = netdev_discover(ctx->root, &devs, &n)) < 0)
                return k;
        for (size_t i = 0; i < n && k >= 0; i++) {
                ssize_t rule = rule_for(nics, &devs[i]);
                if (rule < 0)
                        continue;
                matched++;
                json_t *r = json_array_get(nics, (size_t) rule);
                unsigned n_rx, n_tx;
                k = plan_channels(ctx, &devs[i], r, (size_t) rule, &n_rx, &n_tx);
                if (k >= 0)
                        k = plan_queues(ctx, &devs[i], r, n_rx, n_tx);
        }
        netdev_free_many(devs, n);
        if (k >= 0 && matched == 0)
                k = plan_note(ctx, "net: no NIC on this host matches /net/nics (%zu NIC%s)", n, n == 1 ? "" : "s");
        return k;
}

/* ---- read, write ---- */

static int net_read(Root *root, const Knob *k, char **ret) {
        if (!is_channels(k))
                return knob_read_file(root, k, ret);
        _cleanup_free_ char *ifname = knob_ifname(k);
        NetChannels c;
        if (!ifname)
                return -EINVAL;
        int r = root_channels_get(root, ifname, &c, NULL);
        if (r == -ENODEV)
                return -ENOENT; /* the NIC went: vanished, not drifted */
        if (r < 0)
                return r;
        *ret = channels_format(&c);
        return *ret ? 0 : -ENOMEM;
}

/* What is kept of a NIC: a file per NIC in keep->dir, made when rtpart first changes its channels,
 * with the counts it had then ("channels rx 0 tx 0 other 1 combined 16"), and a line for each
 * queue file a change took away ("rx-5/rps_cpus 00000000"), as it read just before, the first
 * time that queue went. The queues that stay keep their files, which their own knobs put back;
 * a queue that goes holds its original then (a knob of it that the profile no longer sets was put
 * back first, as apply restores before it writes), so no value rtpart wrote ends up kept, even
 * when a rollback takes queues away again. */
static const char * const queue_files[] = { "rps_cpus", "rps_flow_cnt", "xps_cpus" };

static char *keep_path(const KnobKeep *keep, const char *ifname) {
        char *s;
        return keep && asprintf(&s, "%s/%s", keep->dir, ifname) >= 0 ? s : NULL;
}

/* Appends to b the queue files of d from queue `from` on that b does not have yet. */
static void keep_queues(Root *root, const NetDev *d, bool rx, unsigned from, StrBuf *b) {
        for (unsigned q = from; q < (rx ? d->n_rx : d->n_tx); q++)
                for (size_t f = rx ? 0 : 2; f < (rx ? 2 : ELEMENTSOF(queue_files)); f++) {
                        _cleanup_free_ char *key = NULL, *v = NULL;
                        /* "\nrx-5/rps_cpus ": every entry follows the counts' line */
                        if (asprintf(&key, "\n%s-%u/%s ", rx ? "rx" : "tx", q, queue_files[f]) < 0) {
                                b->oom = true;
                                return;
                        }
                        if ((b->s && strstr(b->s, key)) ||
                            root_read_linef(root, &v, "sys/class/net/%s/queues/%.*s", d->name, (int) strlen(key) - 2,
                                            key + 1) < 0)
                                continue;
                        strbuf_appendf(b, "%s%s\n", key + 1, v);
                }
}

/* Before a change from cur to want: the file made (*ret_made) or what the change takes away added. */
static int keep_update(Root *root, const KnobKeep *keep, const char *path, const char *ifname, const NetChannels *cur,
                       const NetChannels *want, bool *ret_made) {
        _cleanup_(netdev_done) NetDev d = { .node = -1 };
        _cleanup_free_ char *old = NULL, *counts = channels_format(cur);
        StrBuf b = {};
        int k = root_read_file(keep->root, path, &old, NULL);
        if (k < 0 && k != -ENOENT)
                return k;
        if ((k = netdev_get(root, ifname, &d)) < 0)
                return k;
        if (old)
                strbuf_append(&b, old);
        else
                strbuf_appendf(&b, "channels %s\n", strempty(counts));
        size_t before = old ? b.len : 0;
        keep_queues(root, &d, true, want->combined + want->rx, &b);
        keep_queues(root, &d, false, want->combined + want->tx, &b);
        _cleanup_free_ char *text = strbuf_steal(&b);
        if (!counts || !text)
                return -ENOMEM;
        *ret_made = !old;
        if (old && strlen(text) == before)
                return 0;
        return root_write_file_atomic(keep->root, path, text, strlen(text), 0600);
}

/* Back at the kept counts: every kept queue file written back, then the file dropped. A queue the
 * NIC does not have is skipped (a later write that brings it will not find the file again). */
static int keep_restore(Root *root, const KnobKeep *keep, const char *path, const char *ifname,
                        const NetChannels *now) {
        _cleanup_free_ char *text = NULL;
        int k = root_read_file(keep->root, path, &text, NULL);
        if (k == -ENOENT)
                return 0;
        if (k < 0)
                return k;
        NetChannels kept;
        char *line = text, *next = strchr(text, '\n');
        if (next)
                *next++ = 0;
        if (!startswith(line, "channels ") || channels_parse(line + strlen("channels "), &kept) < 0)
                return -EBADMSG;
        if (!channels_same(&kept, now))
                return 0;
        for (line = next; line && *line; line = next) {
                next = strchr(line, '\n');
                if (next)
                        *next++ = 0;
                char *sp = strchr(line, ' ');
                if (!sp || strstr(line, ".."))
                        return -EBADMSG;
                *sp = 0;
                _cleanup_free_ char *rel = NULL;
                if (asprintf(&rel, "sys/class/net/%s/queues/%s", ifname, line) < 0)
                        return -ENOMEM;
                k = root_write_value(root, rel, sp + 1);
                if (k < 0 && k != -ENOENT)
                        return k;
        }
        return root_unlink(keep->root, path);
}

/* Sets a NIC's channels, keeping what putting them back needs (see above). */
static int channels_write(Root *root, const Knob *k, const char *value, const KnobKeep *keep, KnobResult *ret) {
        _cleanup_free_ char *ifname = knob_ifname(k), *why = NULL, *kp = NULL;
        NetChannels want, cur;
        if (!value)
                return 0; /* nothing to put back */
        if (!ifname || channels_parse(value, &want) < 0)
                return -EINVAL;
        kp = keep_path(keep, ifname);
        if (keep && !kp)
                return -ENOMEM;
        int r = root_channels_get(root, ifname, &cur, &why);
        if (r == -ENODEV) {
                knob_result_reason(ret, NET_NIC_GONE);
                return KNOB_SKIPPED;
        }
        if (r < 0) {
                if (why)
                        knob_result_reason(ret, "%s", why);
                return r == -EOPNOTSUPP ? KNOB_REFUSED : r;
        }
        bool kept_now = false;
        if (!channels_same(&cur, &want)) {
                if (kp && (r = keep_update(root, keep, kp, ifname, &cur, &want, &kept_now)) < 0)
                        return r == -ENOENT ? KNOB_SKIPPED : r;
                r = root_channels_set(root, ifname, &want, &why);
                if (r < 0) {
                        if (kept_now)
                                (void) root_unlink(keep->root, kp);
                        if (why)
                                knob_result_reason(ret, "%s", why);
                        switch (r) {
                        case -EOPNOTSUPP: /* the driver has no set_channels: fixed queues */
                        case -EINVAL:     /* the driver or the core refuses the count (the RSS table, XDP,
                                           * AF_XDP zero-copy queues need more) */
                                if (!why)
                                        knob_result_reason(ret, NET_REFUSAL);
                                return KNOB_REFUSED;
                        case -ENODEV:
                                knob_result_reason(ret, NET_NIC_GONE);
                                return KNOB_SKIPPED;
                        }
                        return r;
                }
        }
        return kp ? keep_restore(root, keep, kp, ifname, &want) : 0;
}

static int net_write(Root *root, const Knob *k, const char *value, const KnobKeep *keep, KnobResult *ret) {
        *ret = (KnobResult) {};
        if (is_channels(k))
                return knob_result_finish(ret, channels_write(root, k, value, keep, ret));
        int r = knob_write_file(root, k, value);
        if (r == -ENOENT && startswith(k->path, "sys/class/net/")) {
                knob_result_reason(ret, NET_QUEUE_GONE);
                r = KNOB_SKIPPED;
        }
        return knob_result_finish(ret, r);
}

/* Queue files are watched; channels have no file: the daemon reads them again on its timer. */
static int net_watch(const Knob *k, char ***ret_paths) {
        return is_channels(k) ? knob_watch_none(k, ret_paths) : knob_watch_file(k, ret_paths);
}

/* ---- the daemon's part: what to apply again when a NIC is reset or new ---- */

static bool plan_has(const Plan *plan, const char *id) {
        for (size_t i = 0; i < plan->n_knobs; i++)
                if (streq(plan->knobs[i].id, id))
                        return true;
        return false;
}

static int net_interface_knobs(Root *root, const Plan *plan, const char *ifname, char ***ret_ids) {
        _cleanup_strv_free_ char **ids = NULL;
        _cleanup_free_ char *prefix = NULL;
        _cleanup_(netdev_done) NetDev d = { .node = -1 };
        _cleanup_free_ unsigned *irqs = NULL;
        size_t n_irqs = 0;
        if (asprintf(&prefix, "net/%s/", ifname) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < plan->n_knobs; i++)
                if (startswith(plan->knobs[i].id, prefix) && strv_extend(&ids, plan->knobs[i].id) < 0)
                        return -ENOMEM;
        /* Its device's IRQs: a reset requests them again, where their affinity starts over. */
        int k = netdev_get(root, ifname, &d);
        if (k >= 0)
                k = netdev_irqs(root, &d, &irqs, &n_irqs);
        if (k < 0 && k != -ENOENT)
                return k;
        for (size_t i = 0; i < n_irqs; i++) {
                char id[64];
                snprintf(id, sizeof(id), "irq/%u/affinity", irqs[i]);
                if (plan_has(plan, id) && strv_extend(&ids, id) < 0)
                        return -ENOMEM;
        }
        int n = (int) strv_length(ids);
        *ret_ids = TAKE_PTR(ids);
        return n;
}

/* ---- the section's checks ---- */

static int net_check(const char *file, json_t *section, const char *pointer, Error *e) {
        _cleanup_free_ char *list = json_pointer_append(pointer, "nics");
        size_t i;
        json_t *r;
        if (!list)
                return -ENOMEM;
        json_array_foreach (json_object_get(section, "nics"), i, r) {
                _cleanup_free_ char *p = json_pointer_append_index(list, i);
                if (!p)
                        return -ENOMEM;
                if (!json_object_get(r, "match") && !json_object_get(r, "driver"))
                        return error_set(e, -EINVAL, file, p,
                                         "missing \"match\" (a shell pattern of interface names such as \"eth*\") "
                                         "or \"driver\" (such as \"ixgbe\"); \"*\" matches every NIC");
                for (size_t c = 0; c < ELEMENTSOF(channel_keys); c++) {
                        json_t *v = json_object_get(r, channel_keys[c]);
                        const char *s = json_string_value(v);
                        if (!v ||
                            (json_is_integer(v) && json_integer_value(v) >= 1 && json_integer_value(v) <= 65535) ||
                            (s && (streq(s, "housekeeping") || strstr(s, "${"))))
                                continue;
                        _cleanup_free_ char *pc = json_pointer_append(p, channel_keys[c]);
                        return error_set(e, -EINVAL, file, pc,
                                         "a channel count is \"housekeeping\" (the housekeeping CPUs on the NIC's "
                                         "NUMA node) or a number from 1 to 65535");
                }
        }
        return 0;
}

const Backend backend_net = {
        .domain = DOMAIN_NET,
        .name = "net",
        .schema = &net_section,
        .check = net_check,
        .plan = net_plan,
        .read = net_read,
        .write = net_write,
        .refusal_reason = NET_REFUSAL,
        /* NICs come and go with their drivers; virtio_net sets its queues' XPS again when a CPU
         * comes or goes. */
        .flags = BACKEND_OBJECTS_VANISH | BACKEND_HOTPLUG_MOVES | BACKEND_KERNEL_SETS,
        .watch = net_watch,
        .interface_knobs = net_interface_knobs,
        .knob_noun = "NIC setting",
};
