/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"

/* Text for people. What rtpartctl prints holds strings it did not write: profile names, summaries
 * and values, rtpartd's answers and messages, file names. A terminal takes some bytes as commands
 * (ESC starts a sequence that may set the window title, rewrite the screen, or with OSC 52 the
 * clipboard; C1 CSI 0x9b does the same in one byte), so the text outputs go through one filter
 * that prints every control character as "\xNN": C0 but newline and tab, DEL, the C1 characters
 * (UTF-8 U+0080..U+009F), and every byte that is not part of valid UTF-8. The documents (--json,
 * show, export, import-tuned) are printed as they are: JSON escapes its control characters. */

size_t text_escape_step(const char *s, size_t n, bool final, char out[static TEXT_ESCAPE_MAX], size_t *ret_len) {
        const unsigned char *u = (const unsigned char *) s;
        size_t len = 0;

        if (n == 0)
                return 0;
        if (u[0] < 0x80) {
                if ((u[0] >= 0x20 && u[0] != 0x7f) || u[0] == '\n' || u[0] == '\t') {
                        out[0] = (char) u[0];
                        *ret_len = 1;
                        return 1;
                }
        } else {
                /* The length of the sequence a lead byte starts, and the range of its second byte
                 * (no overlong forms, no surrogates, nothing past U+10FFFF). */
                unsigned char lo = 0x80, hi = 0xbf;
                if (u[0] >= 0xc2 && u[0] <= 0xdf)
                        len = 2;
                else if (u[0] >= 0xe0 && u[0] <= 0xef) {
                        len = 3;
                        lo = u[0] == 0xe0 ? 0xa0 : 0x80;
                        hi = u[0] == 0xed ? 0x9f : 0xbf;
                } else if (u[0] >= 0xf0 && u[0] <= 0xf4) {
                        len = 4;
                        lo = u[0] == 0xf0 ? 0x90 : 0x80;
                        hi = u[0] == 0xf4 ? 0x8f : 0xbf;
                }
                size_t i = 1;
                for (; len > 0 && i < len && i < n; i++)
                        if (u[i] < (i == 1 ? lo : 0x80) || u[i] > (i == 1 ? hi : 0xbf))
                                break;
                if (len > 0 && i == len && !(u[0] == 0xc2 && u[1] < 0xa0)) { /* valid, and no C1 */
                        memcpy(out, s, len);
                        *ret_len = len;
                        return len;
                }
                if (len > 0 && i == n && n < len && !final)
                        return 0; /* so far valid: the rest is still to come */
                if (len == 2 && i == len) {
                        /* A C1 control character: both bytes shown. */
                        snprintf(out, TEXT_ESCAPE_MAX, "\\x%02x\\x%02x", u[0], u[1]);
                        *ret_len = 8;
                        return 2;
                }
        }
        snprintf(out, TEXT_ESCAPE_MAX, "\\x%02x", u[0]);
        *ret_len = 4;
        return 1;
}

char *text_escape(const char *s) {
        size_t n = strlen(s), done = 0, len = 0;
        char *out = malloc(n * 4 + 1); /* no byte is more than 4 out */
        if (!out)
                return NULL;
        while (done < n) {
                size_t k;
                done += text_escape_step(s + done, n - done, /* final= */ true, out + len, &k);
                len += k;
        }
        out[len] = 0;
        return out;
}

/* A stream that escapes what is written to it, and writes it to fd. A UTF-8 sequence cut between
 * two writes is held until its end comes. */
typedef struct TextStream {
        int fd;
        char held[4];
        size_t n_held;
        char out[4096 + TEXT_ESCAPE_MAX];
        size_t n_out;
} TextStream;

static int text_flush(TextStream *t) {
        size_t off = 0;
        while (off < t->n_out) {
                ssize_t k = write(t->fd, t->out + off, t->n_out - off);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                off += (size_t) k;
        }
        t->n_out = 0;
        return 0;
}

/* Escapes from s as much as can be decided now; returns how much was taken. */
static size_t text_take(TextStream *t, const char *s, size_t n, bool final) {
        size_t done = 0;
        while (done < n) {
                size_t len, k = text_escape_step(s + done, n - done, final, t->out + t->n_out, &len);
                if (k == 0)
                        break;
                done += k;
                t->n_out += len;
                if (t->n_out >= sizeof(t->out) - TEXT_ESCAPE_MAX && text_flush(t) < 0)
                        return SIZE_MAX;
        }
        return done;
}

static ssize_t text_write(void *cookie, const char *buf, size_t size) {
        TextStream *t = cookie;
        size_t i = 0, k;

        /* What was held first, completed from buf a byte at a time. */
        while (t->n_held > 0 && i < size) {
                t->held[t->n_held++] = buf[i++];
                k = text_take(t, t->held, t->n_held, /* final= */ false);
                if (k == SIZE_MAX)
                        return -1;
                memmove(t->held, t->held + k, t->n_held - k);
                t->n_held -= k;
        }
        if (t->n_held == 0) {
                k = text_take(t, buf + i, size - i, /* final= */ false);
                if (k == SIZE_MAX)
                        return -1;
                memcpy(t->held, buf + i + k, size - i - k); /* at most 3 bytes */
                t->n_held = size - i - k;
        }
        return text_flush(t) < 0 ? -1 : (ssize_t) size;
}

static int text_close(void *cookie) {
        TextStream *t = cookie;
        int r = 0;
        if (t->n_held > 0 && text_take(t, t->held, t->n_held, /* final= */ true) == SIZE_MAX)
                r = -1;
        if (text_flush(t) < 0)
                r = -1;
        free(t);
        return r;
}

FILE *text_stream_new(int fd) {
        TextStream *t = calloc(1, sizeof(*t));
        if (!t)
                return NULL;
        t->fd = fd;
        FILE *f = fopencookie(t, "w", (cookie_io_functions_t) { .write = text_write, .close = text_close });
        if (!f)
                free(t);
        return f;
}

static FILE *text_err = NULL, *text_out = NULL, *plain_err = NULL, *plain_out = NULL;

/* At exit, before the C library flushes what is open: a sequence held at the very end is said. */
static void text_streams_close(void) {
        if (text_out && stdout == text_out) {
                (void) fclose(text_out);
                stdout = plain_out;
        }
        if (text_err && stderr == text_err) {
                (void) fclose(text_err);
                stderr = plain_err;
        }
}

int ctl_text_stderr(void) {
        FILE *err = text_stream_new(STDERR_FILENO);
        if (!err)
                return -ENOMEM;
        /* Unbuffered as stderr is: a message is out before what follows it on stdout. */
        setvbuf(err, NULL, _IONBF, 0);
        fflush(stderr);
        plain_err = stderr;
        stderr = text_err = err;
        (void) atexit(text_streams_close);
        return 0;
}

int ctl_text_stdout(void) {
        FILE *out = text_stream_new(STDOUT_FILENO);
        if (!out)
                return -ENOMEM;
        setvbuf(out, NULL, isatty(STDOUT_FILENO) ? _IOLBF : _IOFBF, 0);
        fflush(stdout);
        plain_out = stdout;
        stdout = text_out = out;
        return 0;
}
