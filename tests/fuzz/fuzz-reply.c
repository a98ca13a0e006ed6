/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target for what rtpartctl prints of the documents it is given (daemon/ctl/ctl-reply.c,
 * ctl-render.c, ctl-text.c): the input is a document's name on the first line (the varlink method
 * whose answer it is: ListProfiles, Plan, Apply, ApplyFailure, Revert, Verify, Status, Watch for an
 * event of the stream; Audit and Latency for the documents rtpartctl makes itself) and the JSON
 * document after it. Each is checked against its shape as rtpartctl checks rtpartd's answers, then
 * printed as rtpartctl prints it, as text and as JSON. What must hold:
 *   - a document refused by its shape comes with a message naming a JSON pointer ("/…: …");
 *   - the renderer of a document it takes (every document, for Audit and Latency) ends, whatever
 *     the values, without a crash or a sanitizer's report;
 *   - the text printed holds no control character but newline and tab, no C1 character and no byte
 *     that is not UTF-8 (the escaping of ctl-text.c), and the JSON printed is one JSON document of
 *     ASCII without control characters but newlines (DEL, which no terminal acts on, aside).
 * Every shape of ctl-reply.c is also read to its end once (a shape that does not parse is a bug of
 * the table, found here). */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ctl.h"

/* What ctl-render.c reads of rtpartctl's options. */
const char *arg_root = "/";
bool arg_json = false;
bool arg_all = false;
bool arg_summary = false;

static const char * const names[] = { "ListProfiles", "Plan",   "Apply", "ApplyFailure", "Revert",
                                      "Verify",       "Status", "Watch", "Audit",        "Latency" };

static Root *root;
static int text_fd = -EBADF, json_fd = -EBADF;
static FILE *text, *json;

static void teardown(void) {
        fclose(text);
        fclose(json);
        close(text_fd);
        close(json_fd);
        root_free(root);
}

static void setup(void) {
        if (root)
                return;
        atexit(teardown);
        if (root_new("/", &root) < 0)
                abort();
        text_fd = memfd_create("text", MFD_CLOEXEC);
        json_fd = memfd_create("json", MFD_CLOEXEC);
        if (text_fd < 0 || json_fd < 0)
                abort();
        text = text_stream_new(text_fd);
        json = fdopen(dup(json_fd), "w");
        FILE *null = fopen("/dev/null", "we");
        if (!text || !json || !null)
                abort();
        stderr = null; /* rtpartctl's messages */
        /* Every shape of the table is read to its end. */
        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                const char *shape = ctl_reply_shape(names[i]);
                char *msg = NULL;
                if (shape && ctl_reply_check_shape(shape, json_null(), &msg) != -EBADMSG)
                        abort();
                free(msg);
        }
}

static void render(size_t which, json_t *doc) {
        switch (which) {
        case 0:
                (void) render_list(doc);
                break;
        case 1:
                (void) render_plan(doc, root);
                break;
        case 2:
                (void) render_apply(doc);
                break;
        case 3:
                (void) render_apply_failure(doc);
                break;
        case 4:
                (void) render_revert(doc);
                break;
        case 5:
                (void) render_verify(doc);
                break;
        case 6:
                (void) render_status(doc);
                break;
        case 7:
                (void) render_watch_event(doc);
                break;
        case 8:
                (void) render_audit(doc);
                break;
        default:
                (void) render_latency(doc);
        }
}

/* What was printed into fd since the last call; the file emptied. */
static char *taken(FILE *f, int fd, size_t *ret_size) {
        struct stat st;
        if (fflush(f) != 0 || fstat(fd, &st) < 0)
                abort();
        char *buf = malloc((size_t) st.st_size + 1);
        if (!buf || pread(fd, buf, (size_t) st.st_size, 0) != st.st_size)
                abort();
        buf[st.st_size] = 0;
        if (ftruncate(fd, 0) < 0 || lseek(fd, 0, SEEK_SET) < 0)
                abort();
        *ret_size = (size_t) st.st_size;
        return buf;
}

static void check_text(const char *s, size_t n) {
        for (size_t i = 0; i < n;) {
                char out[TEXT_ESCAPE_MAX];
                size_t len, k = text_escape_step(s + i, n - i, /* final= */ true, out, &len);
                /* Escaping what was printed changes nothing: nothing in it needed escaping. */
                if (k == 0 || len != k || memcmp(out, s + i, k) != 0)
                        abort();
                i += k;
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const char *nl = memchr(data, '\n', size);
        size_t which, n;

        setup();
        if (!nl)
                return 0;
        for (which = 0; which < ELEMENTSOF(names); which++)
                if (strlen(names[which]) == (size_t) (nl - (const char *) data) &&
                    memcmp(names[which], data, (size_t) (nl - (const char *) data)) == 0)
                        break;
        if (which == ELEMENTSOF(names))
                return 0;
        const char *body = nl + 1;
        json_t *doc = json_loadb(body, size - (size_t) (body - (const char *) data), JSON_DECODE_ANY, NULL);
        if (!doc)
                return 0;

        const char *shape = ctl_reply_shape(names[which]);
        char *msg = NULL;
        int r = shape ? ctl_reply_check_shape(shape, doc, &msg) : 0;
        if (r == -EBADMSG && (!msg || msg[0] != '/' || !strstr(msg, ": ")))
                abort();
        free(msg);
        /* rtpartctl makes an audit or latency document itself: an object (or an array) always. */
        if (r < 0 || (!shape && !json_is_object(doc) && !json_is_array(doc))) {
                json_decref(doc);
                return 0;
        }

        FILE *out = stdout;
        stdout = text;
        arg_json = false;
        arg_all = (size & 1) != 0;
        arg_summary = (size & 2) != 0;
        render(which, doc);
        char *t = taken(text, text_fd, &n);
        check_text(t, n);
        free(t);

        stdout = json;
        arg_json = true;
        render(which, doc);
        t = taken(json, json_fd, &n);
        for (size_t i = 0; i < n; i++)
                if ((t[i] < 0x20 && t[i] != '\n') || (unsigned char) t[i] > 0x7f)
                        abort();
        /* One document, or (a watch event) one a line. */
        json_t *again = which == 7 ? json_loads(t, JSON_DISABLE_EOF_CHECK | JSON_DECODE_ANY, NULL)
                                   : json_loads(t, JSON_DECODE_ANY, NULL);
        if (n > 0 && !again)
                abort();
        json_decref(again);
        free(t);
        stdout = out;
        json_decref(doc);
        return 0;
}
