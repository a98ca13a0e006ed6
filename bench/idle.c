/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* idle: the memory floor of a daemon built as rtpartd is. It links the libraries rtpartd links
 * (libsystemd, jansson), makes the objects rtpartd makes first of each (an event loop, a JSON
 * object) and waits: what the dynamic loader, the C library and those
 * libraries make resident before a line of rtpart runs. bench/bench.py starts it beside each
 * rtpartd it measures and prints its RSS, Pss and private memory as rtpartd's floor. It ends on
 * SIGTERM. Never installed. */
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <systemd/sd-event.h>
#include <unistd.h>

int main(void) {
        sd_event *e = NULL;
        if (sd_event_default(&e) < 0)
                return 1;
        json_t *j = json_object();
        if (!j)
                return 1;
        printf("ready\n");
        fflush(stdout);
        pause();
        json_decref(j);
        sd_event_unref(e);
        return 0;
}
