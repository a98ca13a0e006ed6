/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The one logger of both programs: one line per message on standard error.
 *
 *   rtpartctl (log_setup_tool):   "rtpartctl: MESSAGE", "rtpartctl: warning: MESSAGE"
 *   rtpartd (log_setup_daemon):   "MESSAGE", or "<N>MESSAGE" with the syslog priority N when
 *                                 standard error is the journal (JOURNAL_STREAM), which reads it
 *
 * The log_*_errno() forms take a negative (or positive) errno, which "%m" in the format prints,
 * and return it negative: `return log_error_errno(r, "Cannot open %s: %m", path);`. */

#include <errno.h>
#include <syslog.h>

#include "macro.h"

extern int log_max_level;

/* "PROGRAM: " before every line; "warning: " after it for warnings. */
void log_setup_tool(const char *program);
/* No prefix; "<N>" when standard error is the journal's stream. */
void log_setup_daemon(void);

void log_internal(int level, int error, const char *fmt, ...) _printf_(3, 4);

#define log_full_errno(level, error, ...) \
        ({ \
                int _e = (error); \
                if ((level) <= log_max_level) \
                        log_internal((level), _e, __VA_ARGS__); \
                _e < 0 ? _e : -_e; \
        })
#define log_debug(...) (void) log_full_errno(LOG_DEBUG, 0, __VA_ARGS__)
#define log_info(...) (void) log_full_errno(LOG_INFO, 0, __VA_ARGS__)
#define log_notice(...) (void) log_full_errno(LOG_NOTICE, 0, __VA_ARGS__)
#define log_warning(...) (void) log_full_errno(LOG_WARNING, 0, __VA_ARGS__)
#define log_error(...) (void) log_full_errno(LOG_ERR, 0, __VA_ARGS__)
#define log_debug_errno(e, ...) log_full_errno(LOG_DEBUG, (e), __VA_ARGS__)
#define log_info_errno(e, ...) log_full_errno(LOG_INFO, (e), __VA_ARGS__)
#define log_warning_errno(e, ...) log_full_errno(LOG_WARNING, (e), __VA_ARGS__)
#define log_error_errno(e, ...) log_full_errno(LOG_ERR, (e), __VA_ARGS__)
/* For "out of memory" at the place that decides: -ENOMEM. */
#define log_oom() log_error_errno(-ENOMEM, "out of memory")
