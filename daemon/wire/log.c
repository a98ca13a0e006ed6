/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

int log_max_level = LOG_INFO;

static const char *log_program = NULL; /* rtpartctl's prefix; NULL for rtpartd */
static bool log_prefix_priority = false;

void log_setup_tool(const char *program) {
        log_program = program;
        log_prefix_priority = false;
}

/* systemd sets JOURNAL_STREAM=DEVICE:INODE for a service whose standard error is the journal's
 * stream; a standard error that was redirected since is another file. */
static bool stderr_is_journal(void) {
        const char *e = getenv("JOURNAL_STREAM");
        unsigned long long dev, ino;
        struct stat st;

        if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2)
                return false;
        if (fstat(STDERR_FILENO, &st) < 0)
                return false;
        return (unsigned long long) st.st_dev == dev && (unsigned long long) st.st_ino == ino;
}

void log_setup_daemon(void) {
        log_program = NULL;
        log_prefix_priority = stderr_is_journal();
}

void log_internal(int level, int error, const char *fmt, ...) {
        char buf[2048];
        va_list ap;

        errno = error < 0 ? -error : error; /* for "%m" */
        va_start(ap, fmt);
        (void) vsnprintf(buf, sizeof(buf), fmt, ap);
        va_end(ap);
        if (log_prefix_priority)
                fprintf(stderr, "<%d>%s\n", level, buf);
        else if (log_program)
                fprintf(stderr, "%s: %s%s\n", log_program, level == LOG_WARNING ? "warning: " : "", buf);
        else
                fprintf(stderr, "%s\n", buf);
}
