/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <sys/file.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "state-view.h"
#include "strv.h"

void engine_result_done(EngineResult *r) {
        free(r->failed_knob);
        free(r->failed_path);
        free(r->failed_detail);
        strv_free(r->notes);
        *r = (EngineResult) {};
}

void verify_result_done(VerifyResult *v) {
        for (size_t i = 0; i < v->n_drift; i++) {
                free(v->drift[i].knob);
                free(v->drift[i].expected);
                free(v->drift[i].actual);
        }
        free(v->drift);
        free(v->profile);
        free(v->applied_at);
        strv_free(v->reboot_pending);
        strv_free(v->unmovable);
        strv_free(v->vanished);
        *v = (VerifyResult) {};
}

_printf_(2, 3)
static void note(EngineResult *r, const char *fmt, ...) {
        char *s;
        va_list ap;
        va_start(ap, fmt);
        int n = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (n >= 0 && !strv_contains(r->notes, s))
                (void) strv_push(&r->notes, s);
        else if (n >= 0)
                free(s);
}

static int write_knob(Root *root, const Knob *k, const char *value) {
        const Backend *b = backend_for(k->domain);
        if (!b || !b->write)
                return KNOB_SKIPPED;
        return b->write(root, k, value);
}

/* The kernel's (or systemd's) own reason for a refused write, where its backend keeps one; NULL
 * if none. Read it before the next write replaces it. */
static char *write_detail(const Knob *k) {
        const Backend *b = backend_for(k->domain);
        const char *st = b && b->last_status ? b->last_status() : NULL;
        return st && *st ? strdup(st) : NULL;
}

/* Notes a knob that could not be put back, with the reason. */
static void note_not_restored(EngineResult *res, const Knob *k, int err, char **ret_detail) {
        _cleanup_free_ char *detail = write_detail(k);
        note(res, "could not restore %s (%s): %s%s%s%s", k->id, strempty(k->path), strerror(-err),
             detail ? " (" : "", strempty(detail), detail ? ")" : "");
        if (ret_detail && !*ret_detail)
                *ret_detail = TAKE_PTR(detail);
}

static void flush_domains(Root *root, const Host *host, const bool touched[_DOMAIN_MAX], EngineResult *res) {
        for (int d = 0; d < _DOMAIN_MAX; d++) {
                const Backend *b = backend_for((Domain) d);
                if (!touched[d] || !b || !b->flush)
                        continue;
                char *msg = NULL;
                int k = b->flush(root, host, &msg);
                if (k < 0)
                        note(res, "%s: %s%s%s", b->name, msg ? msg : "could not make the change take effect: ",
                             msg ? "" : strerror(-k), "");
                else if (msg)
                        note(res, "%s: %s", b->name, msg);
                free(msg);
        }
}

/* Undoes steps [0, n) in reverse: each gets its "before" value back. */
static size_t undo_steps(Root *root, json_t *steps, size_t n, bool touched[_DOMAIN_MAX], EngineResult *res) {
        size_t failures = 0;
        for (size_t i = n; i-- > 0;) {
                json_t *st = json_array_get(steps, i);
                Knob k;
                if (state_entry_knob(st, NULL, &k) < 0) {
                        failures++;
                        continue;
                }
                json_t *before = json_object_get(st, "before");
                int r = write_knob(root, &k, json_string_value(before));
                if (r < 0) {
                        failures++;
                        note_not_restored(res, &k, r, NULL);
                } else
                        touched[k.domain] = true;
        }
        return failures;
}

static void drop_new_originals(json_t *state, json_t *tx) {
        json_t *originals = json_object_get(state, "originals");
        size_t i;
        json_t *id;
        json_array_foreach(json_object_get(tx, "new_originals"), i, id)
                json_object_del(originals, json_string_value(id));
}

int engine_recover(Root *root, const Host *host, EngineResult *res) {
        json_t *state = NULL;
        int k = state_load(root, &state);
        if (k < 0)
                return k;
        json_t *tx = json_object_get(state, "transaction");
        if (!json_is_object(tx)) {
                json_decref(state);
                return 0;
        }

        bool touched[_DOMAIN_MAX] = {};
        json_t *steps = json_object_get(tx, "steps");
        size_t fails = undo_steps(root, steps, json_array_size(steps), touched, res);
        drop_new_originals(state, tx);
        const char *op = json_string_value(json_object_get(tx, "op")),
                   *prof = json_string_value(json_object_get(tx, "profile")),
                   *started = json_string_value(json_object_get(tx, "started"));
        _cleanup_free_ char *now = state_now_iso8601(), *msg = NULL;
        /* Only what the journal says: a transaction without its op, profile or start time (an
         * older or hand-edited journal) is still named sensibly. */
        StrBuf b = {};
        strbuf_appendf(&b, "an interrupted %s", op && *op ? op : "transaction");
        if (prof && *prof)
                strbuf_appendf(&b, " of %s", prof);
        if (started && *started)
                strbuf_appendf(&b, " (started %s)", started);
        strbuf_appendf(&b, " was rolled back%s", fails ? "; some values could not be restored" : "");
        msg = strbuf_steal(&b);
        json_object_set_new(state, "last_error", json_pack("{s:s?, s:s?}", "message", msg, "at", now));
        json_object_set_new(state, "transaction", json_null());
        k = state_save(root, state);
        json_decref(state);
        if (k < 0)
                return k;
        flush_domains(root, host, touched, res);
        res->recovered = true;
        if (msg)
                note(res, "%s", msg);
        return 0;
}

static json_t *step_new(const Knob *k, const char *before, const char *after) {
        json_t *s = state_entry_new(k, NULL, NULL);
        if (!s)
                return NULL;
        json_object_set_new(s, "knob", json_string(k->id));
        json_object_set_new(s, "before", before ? json_string(before) : json_null());
        json_object_set_new(s, "after", after ? json_string(after) : json_null());
        return s;
}

static const char *refusal_reason(Domain d) {
        switch (d) {
        case DOMAIN_IRQ:
                return "the kernel manages this IRQ's affinity (managed or per-CPU interrupt)";
        case DOMAIN_KTHREAD:
                return "the kernel pins this thread to its CPU";
        default:
                return "the kernel refused the value";
        }
}

static int fail(Root *root, json_t *state, json_t *tx, const Knob *k, int err, size_t done, bool touched[_DOMAIN_MAX],
                const Host *host, EngineResult *res) {
        /* Read the kernel's reason before the undo writes replace it. */
        _cleanup_free_ char *detail = write_detail(k);
        json_t *steps = json_object_get(tx, "steps");
        size_t fails = undo_steps(root, steps, done, touched, res);
        drop_new_originals(state, tx);
        _cleanup_free_ char *now = state_now_iso8601(), *msg = NULL;
        if (asprintf(&msg, "writing %s failed: %s%s%s%s; every change of this run was undone%s", k->id, strerror(-err),
                     detail ? " (kernel: " : "", strempty(detail), detail ? ")" : "",
                     fails ? " except the ones noted" : "") < 0)
                msg = NULL;
        json_object_set_new(state, "last_error", json_pack("{s:s, s:s?, s:i, s:s?, s:s?, s:s?}", "knob", k->id, "path", k->path,
                                                           "errno", -err, "detail", detail, "message", msg, "at", now));
        json_object_set_new(state, "transaction", json_null());
        int r = state_save(root, state);
        flush_domains(root, host, touched, res);
        res->rolled_back = true;
        res->rollback_incomplete = fails > 0;
        res->failed_knob = strdup(k->id);
        res->failed_path = k->path ? strdup(k->path) : NULL;
        res->failed_errno = -err;
        res->failed_detail = TAKE_PTR(detail);
        return r < 0 ? r : err;
}

static bool in_filter(const json_t *only, const char *id) {
        return !only || json_object_get(only, id);
}

/* What apply and revert start with: an interrupted transaction rolled back, then the journal. */
static int recover_and_load(Root *root, const Host *host, EngineResult *res, json_t **ret) {
        int k = engine_recover(root, host, res);
        if (k < 0)
                return k;
        return state_load(root, ret);
}

/* engine_apply(), or with `only` (a set of knob ids) engine_apply_knobs(): the knobs of the plan
 * named there are written and recorded; the rest of the journal stays as it is. */
static int apply_core(Root *root, const Host *host, const Resolved *resolved, const Plan *plan, const json_t *only,
                      EngineResult *res) {
        json_t *state = NULL;
        int k;

        k = recover_and_load(root, host, res, &state);
        if (k < 0)
                return k;
        _cleanup_(json_decrefp) json_t *state_ref = state;

        json_t *originals = json_object_get(state, "originals");
        json_t *unmovable = json_object_get(state, "unmovable");
        json_t *steps = json_array(), *new_originals = json_array();
        /* Hash sets beside the arrays: 10k+ knobs on a big host make pairwise scans quadratic. */
        _cleanup_(json_decrefp) json_t *new_set = json_object(), *plan_ids = json_object();
        if (!new_set || !plan_ids)
                return -ENOMEM;
        for (size_t j = 0; j < plan->n_knobs; j++)
                json_object_set_new(plan_ids, plan->knobs[j].id, json_true());
        _cleanup_(json_decrefp) json_t *tx = json_pack("{s:s, s:s, s:s?, s:o, s:o}", "op", "apply", "profile", plan->profile,
                                                       "started", NULL, "steps", steps, "new_originals", new_originals);
        _cleanup_free_ char *now = state_now_iso8601();
        if (!tx || !now)
                return -ENOMEM;
        json_object_set_new(tx, "started", json_string(now));

        /* 1. What this run will write: every changed knob, and every knob of the previous profile
         *    that this one no longer manages (back to its original). */
        json_t *prev = json_object_get(state, "applied");
        /* Restores first, last applied first: a resctrl group goes before the default group it
         * shrank, a cgroup before the slices it needed room from, and new values find them gone. */
        for (size_t i = only ? 0 : json_array_size(prev); i-- > 0;) {
                json_t *e = json_array_get(prev, i);
                const char *id = json_string_value(json_object_get(e, "knob"));
                bool still = id && json_object_get(plan_ids, id);
                json_t *orig = id ? json_object_get(originals, id) : NULL;
                Knob kn;
                if (still || !orig || state_entry_knob(orig, id, &kn) < 0)
                        continue;
                const Backend *b = backend_for(kn.domain);
                _cleanup_free_ char *cur = NULL;
                if (b && b->read)
                        (void) b->read(root, &kn, &cur);
                const char *ov = json_string_value(json_object_get(orig, "value"));
                if (value_equal(kn.kind, cur, ov))
                        continue;
                if (!cur && (kn.domain == DOMAIN_IRQ || kn.domain == DOMAIN_KTHREAD)) {
                        /* Gone with its device or thread: nothing left to put back. */
                        json_object_del(originals, id);
                        continue;
                }
                json_t *st = step_new(&kn, cur, ov);
                json_object_set_new(st, "restore", json_true());
                json_array_append_new(steps, st);
                res->restored++;
        }

        for (size_t i = 0; i < plan->n_knobs; i++) {
                const Knob *kn = &plan->knobs[i];
                if (!in_filter(only, kn->id))
                        continue;
                if (!kn->changed) {
                        res->unchanged++;
                        continue;
                }
                if (json_object_get(unmovable, kn->id))
                        continue; /* the kernel said no before; it will again */
                json_array_append_new(steps, step_new(kn, kn->current, kn->desired));
                if (!json_object_get(originals, kn->id)) {
                        json_object_set_new(originals, kn->id, state_entry_new(kn, "value", kn->current));
                        json_array_append_new(new_originals, json_string(kn->id));
                        json_object_set_new(new_set, kn->id, json_true());
                }
        }
        /* 2. Journal the transaction before the first write. */
        bool touched[_DOMAIN_MAX] = {};
        if (json_array_size(steps) > 0) {
                json_object_set(state, "transaction", tx);
                k = state_save(root, state);
                if (k < 0)
                        return k;
        }

        /* 3. Write. */
        size_t i;
        json_t *e;
        _cleanup_(json_decrefp) json_t *skipped = json_object(), *forget = json_array();
        if (!skipped || !forget)
                return -ENOMEM;
        json_array_foreach(steps, i, e) {
                Knob kn;
                if (state_entry_knob(e, NULL, &kn) < 0)
                        return -EBADMSG;
                k = write_knob(root, &kn, json_string_value(json_object_get(e, "after")));
                if (k == KNOB_REFUSED) {
                        json_object_set_new(unmovable, kn.id, json_string(refusal_reason(kn.domain)));
                        res->refused++;
                        continue;
                }
                if (k == KNOB_SKIPPED) {
                        /* Not written, so not owned: no original to keep, nothing to verify. */
                        json_object_set_new(skipped, kn.id, json_true());
                        res->skipped++;
                        continue;
                }
                if (k == -ENOENT && json_is_true(json_object_get(e, "restore"))) {
                        /* The previous profile's object vanished between read and write. */
                        json_array_append_new(forget, json_string(kn.id));
                        continue;
                }
                if (k < 0)
                        return fail(root, state, tx, &kn, k, i, touched, host, res);
                touched[kn.domain] = true;
                if (json_is_true(json_object_get(e, "restore")))
                        /* Back at its original and no longer managed: forgotten on commit (a
                         * rollback still needs it). */
                        json_array_append_new(forget, json_string(kn.id));
                else
                        res->written++;
        }
        if (res->written > 0 || res->restored > 0)
                flush_domains(root, host, touched, res);
        if (res->skipped > 0) {
                StrBuf b = {};
                const char *id;
                json_t *v;
                bool seen[_DOMAIN_MAX] = {};
                json_object_foreach(skipped, id, v) {
                        const char *slash = strchr(id, '/');
                        _cleanup_free_ char *dom = slash ? strndup(id, (size_t) (slash - id)) : strdup(id);
                        Domain d = dom ? domain_from_string(dom) : _DOMAIN_INVALID;
                        if (d >= 0 && !seen[d]) {
                                seen[d] = true;
                                strbuf_appendf(&b, "%s%s", b.len ? ", " : "", dom);
                        }
                }
                _cleanup_free_ char *list = strbuf_steal(&b);
                note(res, "%zu knob%s left as they are and not recorded as applied (%s): their backend cannot write them %s",
                     res->skipped, res->skipped == 1 ? "" : "s", strempty(list),
                     root_is_system(root) ? "on this host" : "under --root (thread scheduling needs the real host)");
        }

        /* 4. Commit: the profile, what it wants of every knob, and no open transaction. */
        json_array_foreach(forget, i, e)
                json_object_del(originals, json_string_value(e));
        json_t *applied = json_array(), *fresh = only ? json_object() : NULL;
        for (size_t j = 0; j < plan->n_knobs; j++) {
                const Knob *kn = &plan->knobs[j];
                if (!in_filter(only, kn->id))
                        continue;
                if (json_object_get(unmovable, kn->id)) {
                        if (only)
                                json_object_set_new(fresh, kn->id, json_null()); /* no longer applied */
                        continue;
                }
                if (json_object_get(skipped, kn->id)) {
                        /* Not written: an original first recorded by this run goes again. */
                        if (json_object_get(new_set, kn->id))
                                json_object_del(originals, kn->id);
                        if (only)
                                json_object_set_new(fresh, kn->id, json_null());
                        continue;
                }
                json_t *a = state_entry_new(kn, "desired", kn->desired);
                json_object_set_new(a, "knob", json_string(kn->id));
                json_object_set_new(a, "reboot", json_boolean(kn->reboot));
                if (only)
                        json_object_set_new(fresh, kn->id, a);
                else
                        json_array_append_new(applied, a);
        }
        if (only) {
                /* The journal's knobs in their order, those of the subset renewed (or gone, when
                 * the kernel refused them or they cannot be written here; kept as they were when
                 * the plan does not have them); new ones after. */
                json_array_foreach(prev, i, e) {
                        const char *id = json_string_value(json_object_get(e, "knob"));
                        json_t *n = id ? json_object_get(fresh, id) : NULL;
                        if (!n)
                                json_array_append(applied, e);
                        else if (json_is_object(n))
                                json_array_append(applied, n);
                        if (n)
                                json_object_del(fresh, id);
                }
                for (size_t j = 0; j < plan->n_knobs; j++) {
                        json_t *n = json_object_get(fresh, plan->knobs[j].id);
                        if (json_is_object(n))
                                json_array_append(applied, n);
                }
                json_decref(fresh);
                json_object_set_new(state, "applied", applied);
                json_object_set_new(state, "transaction", json_null());
                json_object_set_new(state, "last_error", json_null());
                return state_save(root, state);
        }
        _cleanup_free_ char *hash = state_hash(resolved->doc);
        const char *old_hash = json_string_value(json_object_get(state, "hash"));
        bool same = streq_ptr(json_string_value(json_object_get(state, "profile")), plan->profile) && streq_ptr(old_hash, hash);
        json_object_set_new(state, "profile", json_string(plan->profile));
        /* What rtpartd applies again (at start, to new IRQs and threads, to correct drift) is the
         * profile as it is now, merged over its includes, never the file it came from: that may
         * change or go. The path is for people; a profile built from "source" keeps it. */
        const Profile *prof = resolved->profile;
        if (!prof || prof->path) {
                _cleanup_free_ char *real = prof ? realpath(prof->path, NULL) : NULL;
                const char *ppath = real ? real : prof ? prof->path : NULL;
                json_object_set_new(state, "profile_path", ppath ? json_string(ppath) : json_null());
        }
        json_object_set_new(state, "source", prof && prof->doc ? json_deep_copy(prof->doc) : json_null());
        json_object_set_new(state, "hash", hash ? json_string(hash) : json_null());
        if (!same || res->written > 0 || !json_string_value(json_object_get(state, "applied_at")))
                json_object_set_new(state, "applied_at", json_string(now));
        json_object_set_new(state, "applied", applied);
        json_object_set_new(state, "transaction", json_null());
        json_object_set_new(state, "last_error", json_null());
        return state_save(root, state);
}

int engine_apply(Root *root, const Host *host, const Resolved *resolved, const Plan *plan, EngineResult *res) {
        return apply_core(root, host, resolved, plan, NULL, res);
}

int engine_revert(Root *root, const Host *host, EngineResult *res) {
        json_t *state = NULL;
        int k;

        k = recover_and_load(root, host, res, &state);
        if (k < 0)
                return k;
        _cleanup_(json_decrefp) json_t *state_ref = state;
        json_t *originals = json_object_get(state, "originals");

        json_t *steps = json_array();
        _cleanup_free_ char *now = state_now_iso8601();
        _cleanup_(json_decrefp) json_t *tx = json_pack("{s:s, s:O, s:s?, s:o, s:[]}", "op", "revert", "profile",
                                                       json_object_get(state, "profile"), "started", now, "steps", steps,
                                                       "new_originals");
        if (!tx)
                return -ENOMEM;
        const char *id;
        json_t *orig;
        json_object_foreach(originals, id, orig) {
                Knob kn;
                if (state_entry_knob(orig, id, &kn) < 0)
                        continue;
                const Backend *b = backend_for(kn.domain);
                _cleanup_free_ char *cur = NULL;
                if (b && b->read)
                        (void) b->read(root, &kn, &cur);
                json_array_append_new(steps, step_new(&kn, cur, json_string_value(json_object_get(orig, "value"))));
        }

        bool touched[_DOMAIN_MAX] = {};
        if (json_array_size(steps) > 0) {
                json_object_set(state, "transaction", tx);
                k = state_save(root, state);
                if (k < 0)
                        return k;
        }

        /* Revert does not stop at the first failure: it restores all it can, keeps what it could
         * not in the journal (a later revert retries them) and says which. Reverse order: the
         * last knob changed is the first put back. */
        int first_err = 0;
        for (size_t i = json_array_size(steps); i-- > 0;) {
                json_t *e = json_array_get(steps, i);
                Knob kn;
                if (state_entry_knob(e, NULL, &kn) < 0)
                        continue;
                k = write_knob(root, &kn, json_string_value(json_object_get(e, "after")));
                if (k < 0) {
                        res->failed++;
                        if (!first_err) {
                                first_err = k;
                                res->failed_knob = strdup(kn.id);
                                res->failed_path = kn.path ? strdup(kn.path) : NULL;
                                res->failed_errno = -k;
                        }
                        note_not_restored(res, &kn, k, &res->failed_detail);
                        continue;
                }
                if (k == KNOB_SKIPPED)
                        res->skipped++;
                else if (k == 0) {
                        touched[kn.domain] = true;
                        res->written++;
                        }
                json_object_del(originals, kn.id);
        }
        flush_domains(root, host, touched, res);

        json_object_set_new(state, "profile", json_null());
        json_object_set_new(state, "profile_path", json_null());
        json_object_set_new(state, "source", json_null());
        json_object_set_new(state, "hash", json_null());
        json_object_set_new(state, "applied_at", json_null());
        json_object_set_new(state, "applied", json_array());
        json_object_set_new(state, "unmovable", json_object());
        json_object_set_new(state, "transaction", json_null());
        k = state_save(root, state);
        if (k < 0)
                return k;
        return first_err;
}

int engine_lock(Root *root, bool wait) {
        const char *dir;
        Root *sr = state_root(root, &dir);
        _cleanup_free_ char *lock = NULL;
        if (asprintf(&lock, "%s/lock", dir) < 0)
                return -ENOMEM;
        int k = root_mkdir_p(sr, dir, 0755);
        if (k < 0)
                return k;
        int fd = root_open(sr, lock, O_RDWR | O_CREAT | O_NOFOLLOW, 0600);
        if (fd < 0)
                return fd;
        if (flock(fd, LOCK_EX | (wait ? 0 : LOCK_NB)) < 0) {
                k = -errno;
                close(fd);
                return k;
        }
        return fd;
}

bool engine_transaction_open(Root *root) {
        json_t *state = NULL;
        if (state_load(root, &state) < 0)
                return false;
        bool open = json_is_object(json_object_get(state, "transaction"));
        json_decref(state);
        return open;
}

static int index_cmp(const void *a, const void *b) {
        uint32_t x = *(const uint32_t *) a, y = *(const uint32_t *) b;
        return x < y ? -1 : x > y;
}

/* engine_verify() of a journal (all), or engine_verify_knobs(): the knobs of ids only, found by id,
 * checked in journal order. */
static int verify_core(Root *root, const StateView *state, const char *running_cmdline, bool all, char * const *ids,
                       size_t n_ids, VerifyResult *ret) {
        _cleanup_free_ uint32_t *pick = NULL;
        size_t n = state->n_applied;
        int k;

        if (!all) {
                pick = malloc(MAX(n_ids, (size_t) 1) * sizeof(uint32_t));
                if (!pick)
                        return -ENOMEM;
                n = 0;
                for (size_t i = 0; i < n_ids; i++) {
                        const StateViewKnob *e = ids[i] ? state_view_find(state, ids[i]) : NULL;
                        if (e)
                                pick[n++] = (uint32_t) (e - state->applied);
                }
                qsort(pick, n, sizeof(uint32_t), index_cmp);
        }

        VerifyResult v = {};
        v.profile = state->profile ? strdup(state->profile) : NULL;
        v.applied_at = state->applied_at ? strdup(state->applied_at) : NULL;
        v.transaction_open = state->transaction_open;
        for (size_t i = 0; i < state->n_unmovable; i++) {
                char *s;
                if (asprintf(&s, "%s: %s", state->unmovable[i].id, strempty(state->unmovable[i].reason)) >= 0)
                        (void) strv_push(&v.unmovable, s);
        }

        for (size_t i = 0; i < n; i++) {
                if (pick && i > 0 && pick[i] == pick[i - 1])
                        continue; /* an id given twice */
                const StateViewKnob *e = &state->applied[pick ? pick[i] : i];
                Knob kn = state_view_knob(e);
                const Backend *b = backend_for(kn.domain);
                const char *want = e->desired;
                _cleanup_free_ char *cur = NULL;
                v.checked++;
                if (!b || !b->read)
                        continue;
                k = b->read(root, &kn, &cur);
                if ((k == -ENOENT || (k >= 0 && !cur)) && (kn.domain == DOMAIN_IRQ || kn.domain == DOMAIN_KTHREAD)) {
                        /* The IRQ went with its device, the thread exited: nothing to hold, nothing
                         * drifted. */
                        (void) strv_extend(&v.vanished, kn.id);
                        continue;
                }
                if (k < 0 && k != -ENOENT)
                        cur = NULL;
                if (!value_equal(kn.kind, cur, want)) {
                        Drift *d = realloc(v.drift, (v.n_drift + 1) * sizeof(Drift));
                        if (!d) {
                                verify_result_done(&v);
                                return -ENOMEM;
                        }
                        v.drift = d;
                        v.drift[v.n_drift++] = (Drift) {
                                .knob = strdup(kn.id),
                                .domain = kn.domain,
                                .expected = want ? strdup(want) : NULL,
                                .actual = cur ? strdup(cur) : NULL,
                        };
                        continue;
                }
                if (kn.domain == DOMAIN_BOOT || kn.reboot) {
                        /* Configured as wanted; is it what the running system uses? */
                        _cleanup_free_ char *running = NULL;
                        bool live;
                        if (kn.domain == DOMAIN_BOOT) {
                                (void) cmdline_get(running_cmdline, kn.id + strlen("boot/"), &running);
                                live = value_equal(kn.kind, running, want);
                        } else
                                live = kn.path && root_read_line(root, kn.path, &running) >= 0 &&
                                       value_equal(kn.kind, running, want);
                        if (!live)
                                (void) strv_extend(&v.reboot_pending, kn.id);
                }
        }
        *ret = v;
        return 0;
}

/* The journal as the verifiers read it. */
static int load_view(Root *root, StateView **ret) {
        _cleanup_(json_decrefp) json_t *state = NULL;
        int k = state_load(root, &state);
        if (k < 0)
                return k;
        return state_view_new(state, ret);
}

int engine_verify(Root *root, const char *running_cmdline, VerifyResult *ret) {
        _cleanup_(state_view_freep) StateView *view = NULL;
        int k = load_view(root, &view);
        if (k < 0)
                return k;
        return verify_core(root, view, running_cmdline, /* all= */ true, NULL, 0, ret);
}

int engine_verify_knobs_in(Root *root, const StateView *journal, const char *running_cmdline, char * const *ids, size_t n,
                           VerifyResult *ret) {
        return verify_core(root, journal, running_cmdline, /* all= */ false, ids, ids ? n : 0, ret);
}

int engine_verify_knobs(Root *root, const char *running_cmdline, char * const *ids, size_t n, VerifyResult *ret) {
        _cleanup_(state_view_freep) StateView *view = NULL;
        int k = load_view(root, &view);
        if (k < 0)
                return k;
        return engine_verify_knobs_in(root, view, running_cmdline, ids, n, ret);
}

static int id_set(char * const *ids, size_t n, json_t **ret) {
        json_t *set = json_object();
        if (!set)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (ids[i] && json_object_set_new(set, ids[i], json_true()) < 0) {
                        json_decref(set);
                        return -ENOMEM;
                }
        *ret = set;
        return 0;
}

int engine_apply_knobs(Root *root, const Host *host, const Plan *plan, char * const *ids, size_t n, EngineResult *res) {
        _cleanup_(json_decrefp) json_t *only = NULL, *state = NULL;
        int k = state_load(root, &state);
        if (k < 0)
                return k;
        if (!streq_ptr(json_string_value(json_object_get(state, "profile")), plan->profile))
                return -ESTALE; /* a subset of another profile than the applied one */
        k = id_set(ids, n, &only);
        if (k < 0)
                return k;
        return apply_core(root, host, NULL, plan, only, res);
}
