/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* floor: the fewest system calls for the file work of one rtpartctl command, as the benchmark's
 * reference. It replays a list (bench/floorlist.py makes it from an strace of rtpartctl doing the
 * command) in one pass, in one process, parsing nothing it reads:
 *
 *   r<TAB>PATH             open(O_RDONLY), read() into a 1 MiB buffer until it returns 0, close
 *   d<TAB>PATH             open(O_DIRECTORY), getdents64() until it returns 0, close
 *   w<TAB>PATH<TAB>HEX     open(O_WRONLY|O_TRUNC), one write() of the bytes, close (a knob file;
 *                          O_TRUNC changes nothing in procfs, sysfs or cgroupfs, and keeps a
 *                          fake host's plain files exact)
 *   f<TAB>PATH<TAB>HEX     open(O_WRONLY|O_CREAT|O_TRUNC), one write(), close (a configuration file)
 *   m<TAB>PATH             mkdir (a cgroup or resctrl group)
 *   x<TAB>PATH             rmdir
 *   u<TAB>PATH             unlink
 *   c<TAB>PATH<TAB>SIZE    one durable commit: open(O_WRONLY|O_CREAT|O_TRUNC), write() SIZE bytes,
 *                          fsync, close, then fsync of the directory holding PATH
 *
 * A failed call counts as done (the kernel did the work of refusing it): a /proc/PID/stat of a
 * task that has exited since the list was made, a write the kernel refuses. It prints one line of
 * counts, name=value, and exits 0; 2 when the list cannot be read or a line is malformed.
 *
 *   floor [-v] LIST        -v: each failed call on stderr, with its errno */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef enum {
        OP_READ,
        OP_DIR,
        OP_WRITE,
        OP_FILE,
        OP_MKDIR,
        OP_RMDIR,
        OP_UNLINK,
        OP_COMMIT,
        _OP_MAX,
} Op;

static const char op_letter[_OP_MAX] = { 'r', 'd', 'w', 'f', 'm', 'x', 'u', 'c' };
static const char * const op_name[_OP_MAX] = { "read", "dir", "write", "file", "mkdir", "rmdir", "unlink", "commit" };

static unsigned done[_OP_MAX], failed[_OP_MAX];
static uint64_t read_bytes, written_bytes;
static bool arg_verbose = false;
static char buf[1 << 20];

static int read_all(int fd) {
        for (;;) {
                ssize_t n = read(fd, buf, sizeof(buf));
                if (n == 0)
                        return 0;
                if (n < 0)
                        return -errno;
                read_bytes += (uint64_t) n;
        }
}

static int list_dir(int fd) {
        for (;;) {
                long n = syscall(SYS_getdents64, fd, buf, sizeof(buf));
                if (n == 0)
                        return 0;
                if (n < 0)
                        return -errno;
        }
}

static int write_all(int fd, const char *data, size_t size) {
        ssize_t n = write(fd, data, size);
        if (n < 0)
                return -errno;
        written_bytes += (uint64_t) n;
        return (size_t) n == size ? 0 : -EIO;
}

static int hexval(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        return -1;
}

/* The bytes of a HEX field, decoded in place (each byte lands before the digits still to be read);
 * their count, or -1 when it is not hex. */
static ssize_t unhex(char *s) {
        size_t n = 0;
        for (const char *p = s; p[0]; p += 2) {
                int hi = hexval(p[0]), lo = p[1] ? hexval(p[1]) : -1;
                if (hi < 0 || lo < 0)
                        return -1;
                s[n++] = (char) (hi << 4 | lo);
        }
        return (ssize_t) n;
}

static int commit(const char *path, size_t size) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0600);
        if (fd < 0)
                return -errno;
        int k = 0;
        memset(buf, 'j', size < sizeof(buf) ? size : sizeof(buf));
        for (size_t left = size; left > 0 && k == 0;) {
                size_t n = left < sizeof(buf) ? left : sizeof(buf);
                k = write_all(fd, buf, n);
                left -= n;
        }
        if (k == 0 && fsync(fd) < 0)
                k = -errno;
        (void) close(fd);
        if (k < 0)
                return k;

        char dir[4096];
        const char *slash = strrchr(path, '/');
        size_t len = slash ? (size_t) (slash - path) : 0;
        if (len >= sizeof(dir))
                return -ENAMETOOLONG;
        memcpy(dir, len ? path : ".", len ? len : 1);
        dir[len ? len : 1] = 0;
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        if (fsync(dfd) < 0)
                k = -errno;
        (void) close(dfd);
        return k;
}

/* A line of the list split: its op, PATH and the field after it (NULL for ops without one). */
static int parse_line(char *line, Op *ret_op, char **ret_path, char **ret_arg) {
        if (!line[0] || line[1] != '\t')
                return -EINVAL;
        const char *letter = memchr(op_letter, line[0], sizeof(op_letter));
        if (!letter)
                return -EINVAL;
        Op op = (Op) (letter - op_letter);
        char *path = line + 2, *arg = strchr(path, '\t');
        bool has_arg = op == OP_WRITE || op == OP_FILE || op == OP_COMMIT;
        if (!*path || (arg != NULL) != has_arg)
                return -EINVAL;
        if (arg)
                *arg++ = 0;
        *ret_op = op;
        *ret_path = path;
        *ret_arg = arg;
        return 0;
}

/* One op done: 0, or the kernel's negative errno. -EBADMSG: its field is malformed. */
static int run_op(Op op, const char *path, char *arg) {
        int fd, k = 0;
        ssize_t n;
        switch (op) {
        case OP_READ:
        case OP_DIR:
                fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | (op == OP_DIR ? O_DIRECTORY : 0));
                if (fd < 0)
                        return -errno;
                k = op == OP_DIR ? list_dir(fd) : read_all(fd);
                (void) close(fd);
                return k;
        case OP_WRITE:
        case OP_FILE:
                n = unhex(arg);
                if (n < 0)
                        return -EBADMSG;
                fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY | O_TRUNC | (op == OP_FILE ? O_CREAT : 0), 0644);
                if (fd < 0)
                        return -errno;
                k = write_all(fd, arg, (size_t) n);
                (void) close(fd);
                return k;
        case OP_MKDIR:
                return mkdir(path, 0755) < 0 ? -errno : 0;
        case OP_RMDIR:
                return rmdir(path) < 0 ? -errno : 0;
        case OP_UNLINK:
                return unlink(path) < 0 ? -errno : 0;
        case OP_COMMIT: {
                char *end;
                errno = 0;
                unsigned long long size = strtoull(arg, &end, 10);
                if (errno || end == arg || *end || size > (1ULL << 30))
                        return -EBADMSG;
                return commit(path, (size_t) size);
        }
        default:
                return -EBADMSG;
        }
}

int main(int argc, char **argv) {
        int i = 1;
        if (i < argc && strcmp(argv[i], "-v") == 0) {
                arg_verbose = true;
                i++;
        }
        if (i + 1 != argc || argv[i][0] == '-') {
                fprintf(stderr, "usage: floor [-v] LIST\n");
                return 2;
        }
        const char *list = argv[i];

        /* The list: one read into memory, then walked line by line, each line done as it comes. */
        int fd = open(list, O_RDONLY | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0) {
                fprintf(stderr, "floor: %s: %m\n", list);
                return 2;
        }
        char *text = malloc((size_t) st.st_size + 1);
        size_t len = 0;
        while (text && len < (size_t) st.st_size) {
                ssize_t n = read(fd, text + len, (size_t) st.st_size - len);
                if (n <= 0)
                        break;
                len += (size_t) n;
        }
        (void) close(fd);
        if (!text || len != (size_t) st.st_size) {
                fprintf(stderr, "floor: %s: could not read the whole list\n", list);
                free(text);
                return 2;
        }
        text[len] = 0;

        unsigned lineno = 0;
        for (char *line = text, *next; line && *line; line = next) {
                lineno++;
                next = strchr(line, '\n');
                if (next)
                        *next++ = 0;
                if (!*line || *line == '#')
                        continue;
                Op op = _OP_MAX;
                char *path = NULL, *arg = NULL;
                int k = parse_line(line, &op, &path, &arg);
                if (k >= 0)
                        k = run_op(op, path, arg);
                if (op == _OP_MAX || k == -EBADMSG) {
                        fprintf(stderr, "floor: %s:%u: not a line of the list (ops and fields: bench/floor.c)\n", list,
                                lineno);
                        free(text);
                        return 2;
                }
                done[op]++;
                if (k < 0) {
                        failed[op]++;
                        if (arg_verbose)
                                fprintf(stderr, "floor: %s %s: %s\n", op_name[op], path, strerror(-k));
                }
        }
        free(text);

        for (Op op = 0; op < _OP_MAX; op++)
                printf("%s=%u %s_failed=%u ", op_name[op], done[op], op_name[op], failed[op]);
        printf("read_bytes=%" PRIu64 " written_bytes=%" PRIu64 "\n", read_bytes, written_bytes);
        return 0;
}
