/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* rtpartctl's parts, one file per job:
 *
 *   rtpartctl.c    options, the verb table, help, dispatch, main (the exit status, once)
 *   ctl-profile.c  list, show, plan
 *   ctl-change.c   apply, revert
 *   ctl-state.c    verify, status, watch
 *   ctl-audit.c    audit (and the CPUs it and check observe)
 *   ctl-check.c    check hardware, check latency, check (the three in one report)
 *   ctl-export.c   export libvirt, export nova
 *   ctl-import.c   import-tuned
 *   ctl-vm.c       vm add, vm remove, vm list: the ledger
 *   ctl-daemon.c   the documents asked of rtpartd, and working without it when it refuses
 *   ctl-local.c    working on the host directly: the root, the prepare pipeline, the lock
 *   ctl-render.c   the documents printed, as text or JSON
 *   ctl-reply.c    the shape of rtpartd's answers, checked before they are printed
 *   ctl-text.c     text for people: control characters escaped on the way out
 *
 * Every command that rtpartd serves is a document: built here (working on the host directly) or
 * by rtpartd (lib/engine/document.c either way), then printed by the same renderer, as JSON or as
 * text. Talking to rtpartd or not, the output and the exit status are the same.
 *
 * Functions return 0 when done; a negative errno when they failed, after saying why (exit status
 * 1); or a positive ExitStatus that the command decided on (bad usage or an invalid profile,
 * drift, a reboot pending; or a failure that a document tells). main() turns that into the exit
 * status, once. */

#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

#include "audit.h"
#include "journal.h"
#include "log.h"
#include "prepare.h"
#include "root.h"

/* The contract of rtpartctl(1), EXIT STATUS. */
typedef enum ExitStatus {
        EXIT_OK = 0,      /* done; in sync */
        EXIT_FAILED = 1,  /* the operation failed */
        EXIT_USAGE = 2,   /* bad usage or invalid profile */
        EXIT_DRIFT = 3,   /* verify found drift */
        EXIT_REBOOT = 4,  /* in sync, but boot-time knobs need a reboot */
        EXIT_PARTIAL = 5, /* import-tuned: written, without the options listed as not imported */
        _EXIT_STATUS_MAX,
        _EXIT_STATUS_INVALID = -EINVAL,
} ExitStatus;

/* The options (rtpartctl.c). */
extern const char *arg_root;
extern const char *arg_state_dir;
extern const char *arg_varlink_socket;
extern bool arg_json;
extern bool arg_all;
extern bool arg_summary;
extern bool arg_no_daemon;
extern unsigned arg_seconds;
extern const char *arg_cpus;
extern const char *arg_svg;
extern const char *arg_html;
extern bool arg_no_osnoise;
extern unsigned arg_vcpus;
extern const char *arg_domain;
extern uint64_t arg_memory_kib;
extern const char *arg_output;
extern bool arg_force;
extern bool arg_active;
extern int arg_node;
extern const char *arg_emulator;
extern unsigned arg_cache;
extern const char *arg_hugepages;

/* The verbs: argv[0] is the verb's name; the argument count is checked before. */
int verb_list(int argc, char **argv);
int verb_show(int argc, char **argv);
int verb_plan(int argc, char **argv);
int verb_apply(int argc, char **argv);
int verb_revert(int argc, char **argv);
int verb_verify(int argc, char **argv);
int verb_status(int argc, char **argv);
int verb_watch(int argc, char **argv);
int verb_audit(int argc, char **argv);
int verb_check(int argc, char **argv);
int verb_export(int argc, char **argv);
int verb_import_tuned(int argc, char **argv);
int verb_vm(int argc, char **argv);

/* ---- ctl-local.c ---- */

/* The root of --root, with --state-dir: EXIT_USAGE after a message when it cannot be used. */
int ctl_open_root(Root **ret);
/* The host's topology without its IRQs (for revert), or a negative errno after a message. */
int ctl_discover(Root *root, Host **ret);
/* The prepare pipeline's failure said (pe cleared): EXIT_USAGE for the profile's content or a
 * name not found, else r. */
int ctl_prepare_failure(Root *root, PrepareError *pe, int r);
/* The root's journal opened, once per command (a negative errno after a message). */
int ctl_open_journal(Root *root, JournalStore **ret);
/* The root's journal read, for a command that reads it once: journal_store_load()'s answer. */
int ctl_read_journal(Root *root, Journal **ret, Error *ret_error);
/* The journal's lock, waiting (and saying so) while another holder changes the host; held by the
 * journal until it is freed. */
int ctl_take_lock(JournalStore *journal);
/* Rolls back a transaction a crash left open, before a command works on the host directly
 * (rtpartd does so itself when it serves the command). */
void ctl_recover(Root *root, JournalStore *journal);

/* ---- ctl-audit.c ---- */

/* The CPUs audit and check observe (audit_target()), the journal read for it; EXIT_USAGE after a
 * message when there are none (or_online: then every online CPU) or cpus is no CPU list. */
int ctl_scope(Root *root, const char *cpus, bool or_online, AuditTarget *ret);
/* What disturbed x's CPUs over --seconds (audit_document()), with osnoise's figures where the
 * kernel has the tracer (and not --no-osnoise); a failure or an interruption is said and returned. */
int ctl_audit_measure(Root *root, AuditTarget *x, json_t **ret_doc);

/* ---- ctl-export.c ---- */

/* The profile a VM's CPUs come from, prepared for the host: name, else the applied one (the
 * journal's stored document). EXIT_USAGE after a message when none is applied. */
int ctl_prepare_applied(Root *root, const char *name, PrepareFlags flags, Prepared *ret);

/* ---- ctl-import.c ---- */

/* Before apply: EXIT_USAGE after a message when tuned runs with a profile that sets knobs of
 * PROFILE's plan too (or which it sets cannot be told), else 0 (also with --force). */
int ctl_tuned_check(const char *profile);

/* ---- ctl-check.c ---- */

/* Where the root's tracefs is (mounted at sys/kernel/tracing for the run when it is not and the
 * root can mount: *ret_mounted, and ctl_tracefs_done() unmounts it), NULL when there is none. */
const char *ctl_tracefs(Root *root, bool *ret_mounted);
void ctl_tracefs_done(Root *root, bool mounted);
/* Puts tracefs back as a killed run left it (and says so): 0, or a failure said. */
int ctl_tracefs_recover(Root *root);
/* SIGINT and SIGTERM set the flag returned (cleared first) instead of ending the process, until
 * called with false. */
volatile sig_atomic_t *ctl_catch_interrupts(bool on);

/* ---- ctl-daemon.c ---- */

#define CTL_VARLINK_INTERFACE "org.rtpart.Manager"

/* A command's document made on the host directly: 0 and *ret_doc; or a negative errno or an exit
 * status after a message and, when the failure has one (a failed apply or revert), *ret_doc. */
typedef int (*LocalFunc)(Root *root, JournalStore *journal, const char *arg, json_t **ret_doc);

/* The document of a command: from rtpartd when it runs (and use_daemon), else made by local.
 * Returns as LocalFunc does; rtpartd's errors are said as rtpartctl says its own. */
int ctl_get_document(Root *root, const char *method, const char *arg, bool use_daemon, LocalFunc local,
                     json_t **ret_doc);

/* The same for a method whose parameters are params (sent as they are), arg handed to local. */
int ctl_get_document_params(Root *root, const char *method, json_t *params, const char *arg, LocalFunc local,
                            json_t **ret_doc);

/* A command that is one document: the root of the options opened (*ret_root, for the renderer)
 * and the document got as ctl_get_document() gets it. */
int ctl_document(const char *method, const char *arg, bool use_daemon, LocalFunc local, Root **ret_root,
                 json_t **ret_doc);

typedef struct VarlinkClient VarlinkClient;
/* 1 and the connection; 0 when rtpartd is not to be used or does not listen (the caller works on
 * the host directly); a negative errno after a message. */
int ctl_daemon_connect(Root *root, bool needed, VarlinkClient **ret);
/* A varlink error of rtpartd's said: EXIT_USAGE for an invalid profile, else -EIO (or, for a
 * failed apply or revert, -EIO and its document in *ret_doc, to be printed). */
int ctl_daemon_error(const char *method, const char *error, json_t *params, json_t **ret_doc);

/* ---- ctl-reply.c: the shape of rtpartd's answers ---- */

/* The shape rtpartctl reads of rtpartd's answer named name (the method's: "Plan", "Watch" for an
 * event of its stream, "ApplyFailure" for the details of a failed Apply), NULL for none. */
const char *ctl_reply_shape(const char *name);
/* 0 when doc has shape; -EBADMSG and "POINTER: what is wrong" in *ret_message; -ENOMEM; -EINVAL
 * when shape is none. */
int ctl_reply_check_shape(const char *shape, json_t *doc, char **ret_message);
/* 0 when rtpartd's answer name has its shape; else a negative errno after a message naming the
 * member. */
int ctl_reply_check(const char *name, json_t *doc);

/* ---- ctl-text.c: text for people ---- */

/* The most one step of text_escape_step() writes, with its NUL. */
#define TEXT_ESCAPE_MAX 16
/* One character of s (n bytes, n > 0) as a person's terminal may show it: a control character
 * (C0 but newline and tab, DEL, C1) or a byte that is not valid UTF-8 as "\xNN" (a C1 character's
 * two bytes so), anything else as it is. Returns the bytes taken from s, and the bytes written to
 * out in *ret_len; 0 (nothing written) when s ends inside a sequence that may still be valid and
 * final is false. */
size_t text_escape_step(const char *s, size_t n, bool final, char out[static TEXT_ESCAPE_MAX], size_t *ret_len);
/* The whole of s so, NUL-terminated; NULL on OOM. */
char *text_escape(const char *s);
/* A stream writing to fd what is written to it, escaped so. */
FILE *text_stream_new(int fd);
/* Makes stderr, or stdout, such a stream for the rest of the run (closed at exit). */
int ctl_text_stderr(void);
int ctl_text_stdout(void);

/* ---- ctl-render.c: each prints a document, as text or (--json) as JSON ---- */

int render_json(json_t *doc);
int render_list(json_t *doc);
int render_plan(json_t *doc, Root *root);
int render_apply(json_t *doc);
int render_apply_failure(json_t *doc); /* always EXIT_FAILED */
int render_revert(json_t *doc);        /* EXIT_FAILED when the revert failed */
int render_verify(json_t *doc);        /* EXIT_DRIFT, EXIT_REBOOT or 0 */
int render_status(json_t *doc);
int render_audit(json_t *doc);   /* EXIT_DRIFT when a CPU is noisy */
int render_latency(json_t *doc); /* EXIT_DRIFT when over the profile's limit */
/* One event of rtpartd's Watch stream: a line per knob of a drift or correction, one per apply
 * or revert. */
int render_watch_event(json_t *event);

/* Members of a document. */
const char *jstr(json_t *o, const char *key);
size_t jsize(json_t *o, const char *key);
bool jtrue(json_t *o, const char *key);
