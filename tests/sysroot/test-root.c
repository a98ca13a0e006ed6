/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The sysroot's confinement: every open under a fake root stays inside it, with openat2 and with
 * the walk in user space that stands in for it on kernels before 5.6, and a refusal of one file
 * (an immutable knob, a seccomp filter) never turns into an open outside the tree.
 *
 * Each test builds BASE/tree (the root) beside BASE/marker, a file outside it; "marker" inside
 * the tree holds "inside". Run with the argument "immutable" for the test that needs chattr +i
 * (root, a filesystem with FS_IOC_SETFLAGS): it exits 77 with the reason when it cannot. */

#include <check.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/filter.h>
#include <linux/fs.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "root.h"
#include "test-util.h"

/* On the build directory's filesystem: /tmp or /dev/shm may be tmpfs, which has no immutable
 * flag before Linux 6.0. */
static char base_dir[PATH_MAX];

static const RootResolve modes[] = { ROOT_RESOLVE_KERNEL, ROOT_RESOLVE_USERSPACE };

static void base_setup(void) {
        snprintf(base_dir, sizeof(base_dir), "%s/tests/root-test-XXXXXX", BUILD_DIR);
        ck_assert_ptr_nonnull(mkdtemp(base_dir));
}

static int set_immutable(const char *path, bool on) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
        int flags;
        if (fd < 0)
                return -errno;
        if (ioctl(fd, FS_IOC_GETFLAGS, &flags) < 0)
                return -errno;
        flags = on ? flags | FS_IMMUTABLE_FL : flags & ~(FS_IMMUTABLE_FL | FS_APPEND_FL);
        return ioctl(fd, FS_IOC_SETFLAGS, &flags) < 0 ? -errno : 0;
}

static int unset_immutable_cb(const char *path, const struct stat *st, int type, struct FTW *ftw) {
        (void) ftw;
        if (type == FTW_F && S_ISREG(st->st_mode))
                (void) set_immutable(path, false);
        return 0;
}

/* In the parent, after every test of the case, whether it passed or not. */
static void base_teardown(void) {
        _cleanup_free_ char *cmd = NULL;
        if (!base_dir[0])
                return;
        (void) nftw(base_dir, unset_immutable_cb, 16, FTW_PHYS);
        ck_assert(asprintf(&cmd, "rm -rf '%s'", base_dir) >= 0);
        (void) system(cmd);
        base_dir[0] = 0;
}

/* A fresh BASE/N/{tree,marker} for one test. */
static char *make_base(void) {
        static unsigned counter;
        char *b;
        ck_assert(asprintf(&b, "%s/%d-%u", base_dir, (int) getpid(), counter++) >= 0);
        ck_assert_int_eq(mkdir(b, 0755), 0);
        test_write(b, "marker", "outside\n");
        test_write(b, "tree/marker", "inside\n");
        test_write(b, "tree/a/b/file", "file\n");
        return b;
}

static void tree_link(const char *base, const char *rel, const char *target) {
        _cleanup_free_ char *p = NULL;
        ck_assert(asprintf(&p, "%s/tree/%s", base, rel) >= 0);
        ck_assert_msg(symlink(target, p) == 0, "symlink %s: %m", p);
}

static char *slurp_fd(int fd) {
        char buf[256];
        ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
        ck_assert_int_ge(n, 0);
        buf[n] = 0;
        return strdup(buf);
}

static char *slurp_path(const char *base, const char *rel) {
        _cleanup_free_ char *p = NULL;
        ck_assert(asprintf(&p, "%s/%s", base, rel) >= 0);
        _cleanup_close_ int fd = open(p, O_RDONLY | O_CLOEXEC);
        return fd < 0 ? NULL : slurp_fd(fd);
}

static Root *open_tree(const char *base, RootResolve mode) {
        _cleanup_free_ char *t = NULL;
        Root *r;
        ck_assert(asprintf(&t, "%s/tree", base) >= 0);
        ck_assert_int_eq(root_new_full(t, mode, &r), 0);
        ck_assert_int_eq(r->resolve, mode);
        return r;
}

/* root_open(rel) reads `want`, or fails with -want_err. */
static void expect_open(Root *r, const char *rel, int flags, const char *want, int want_err) {
        int fd = root_open(r, rel, flags, 0);
        if (want_err) {
                ck_assert_msg(fd == -want_err, "%s (mode %d): expected -%s, got %d", rel, r->resolve,
                              strerrorname_np(want_err), fd);
                return;
        }
        ck_assert_msg(fd >= 0, "%s (mode %d): %s", rel, r->resolve, strerror(-fd));
        _cleanup_free_ char *got = slurp_fd(fd);
        close(fd);
        ck_assert_msg(streq(got, want), "%s (mode %d): read '%s', expected '%s'", rel, r->resolve, got, want);
}

START_TEST(test_dotdot_clamped) {
        _cleanup_free_ char *b = make_base();
        _cleanup_(root_freep) Root *r = open_tree(b, modes[_i]);

        expect_open(r, "../marker", O_RDONLY, "inside\n", 0);
        expect_open(r, "../../../../marker", O_RDONLY, "inside\n", 0);
        expect_open(r, "a/b/../../../../marker", O_RDONLY, "inside\n", 0);
        expect_open(r, "a/./b/../b/file", O_RDONLY, "file\n", 0);
        expect_open(r, "a/b/file/", O_RDONLY, NULL, ENOTDIR);
        expect_open(r, "marker/x", O_RDONLY, NULL, ENOTDIR);
        expect_open(r, "a/nothing/file", O_RDONLY, NULL, ENOENT);
        int fd = root_open(r, "a/b/..", O_RDONLY | O_DIRECTORY, 0);
        ck_assert_int_ge(fd, 0);
        struct stat st1, st2;
        ck_assert_int_eq(fstat(fd, &st1), 0);
        close(fd);
        ck_assert_int_eq(root_stat(r, "a", &st2), 0);
        ck_assert(st1.st_ino == st2.st_ino && st1.st_dev == st2.st_dev);
}
END_TEST

START_TEST(test_symlinks) {
        _cleanup_free_ char *b = make_base(), *outside = NULL;
        _cleanup_(root_freep) Root *r = open_tree(b, modes[_i]);

        ck_assert(asprintf(&outside, "%s/marker", b) >= 0);
        tree_link(b, "a/abs", "/marker"); /* absolute: from the root */
        tree_link(b, "a/absdir", "/a/b");
        tree_link(b, "a/rel", "b/file"); /* relative: from its directory */
        tree_link(b, "a/up", "../marker");
        tree_link(b, "a/esc", "../../../../marker"); /* climbs out: stops at the root */
        tree_link(b, "a/out", outside);              /* the real outside path: not in the tree */
        tree_link(b, "a/b/chain", "../absdir/../rel");
        tree_link(b, "a/dangling", "/created-through-link");

        expect_open(r, "a/abs", O_RDONLY, "inside\n", 0);
        expect_open(r, "a/absdir/file", O_RDONLY, "file\n", 0);
        expect_open(r, "a/absdir/../../marker", O_RDONLY, "inside\n", 0);
        expect_open(r, "a/rel", O_RDONLY, "file\n", 0);
        expect_open(r, "a/up", O_RDONLY, "inside\n", 0);
        expect_open(r, "a/esc", O_RDONLY, "inside\n", 0);
        expect_open(r, "a/out", O_RDONLY, NULL, ENOENT);
        expect_open(r, "a/out", O_WRONLY | O_TRUNC, NULL, ENOENT);
        expect_open(r, "a/b/chain", O_RDONLY, "file\n", 0);
        /* The caller's O_NOFOLLOW holds for the last component only. */
        expect_open(r, "a/abs", O_RDONLY | O_NOFOLLOW, NULL, ELOOP);
        expect_open(r, "a/absdir/file", O_RDONLY | O_NOFOLLOW, "file\n", 0);
        int fd = root_open(r, "a/abs", O_PATH | O_NOFOLLOW, 0);
        ck_assert_int_ge(fd, 0);
        struct stat st;
        ck_assert_int_eq(fstatat(fd, "", &st, AT_EMPTY_PATH), 0);
        ck_assert(S_ISLNK(st.st_mode));
        close(fd);

        /* O_CREAT through a dangling absolute link creates the file in the tree. */
        fd = root_open(r, "a/dangling", O_WRONLY | O_CREAT, 0644);
        ck_assert_msg(fd >= 0, "%s", strerror(-fd));
        close(fd);
        ck_assert(root_exists(r, "created-through-link"));
        ck_assert_int_ne(access("/created-through-link", F_OK), 0);

        /* Writers go through the same resolution. */
        ck_assert_int_eq(root_write_value(r, "a/out", "1"), -ENOENT);
        tree_link(b, "etc", b); /* an absolute link to the directory holding the tree */
        _cleanup_free_ char *in_tree = NULL, *placeholder = NULL;
        ck_assert(asprintf(&in_tree, "tree%s/marker", b) >= 0);
        ck_assert(asprintf(&placeholder, "tree%s/placeholder", b) >= 0);
        test_write(b, placeholder, ""); /* the link's target, as the tree sees it */
        ck_assert_int_eq(root_write_file_atomic(r, "etc/marker", "x\n", 2, 0644), 0);
        _cleanup_free_ char *landed = slurp_path(b, in_tree), *out = slurp_path(b, "marker");
        ck_assert_str_eq(landed, "x\n");
        ck_assert_str_eq(out, "outside\n");
}
END_TEST

START_TEST(test_loops) {
        _cleanup_free_ char *b = make_base();
        _cleanup_(root_freep) Root *r = open_tree(b, modes[_i]);

        tree_link(b, "l1", "l2");
        tree_link(b, "l2", "/l1");
        tree_link(b, "self", "self/x");
        tree_link(b, "dotdot", "../../dotdot");
        expect_open(r, "l1", O_RDONLY, NULL, ELOOP);
        expect_open(r, "self", O_RDONLY, NULL, ELOOP);
        expect_open(r, "dotdot", O_RDONLY, NULL, ELOOP);
        /* The kernel's limit, 40 links in one resolution: the 40th resolves, the 41st is ELOOP. */
        for (unsigned i = 0; i < 41; i++) {
                char name[32], target[32];
                snprintf(name, sizeof(name), "c%u", i);
                snprintf(target, sizeof(target), i == 0 ? "marker" : "c%u", i - 1);
                tree_link(b, name, target);
        }
        expect_open(r, "c39", O_RDONLY, "inside\n", 0);
        expect_open(r, "c40", O_RDONLY, NULL, ELOOP);
}
END_TEST

/* root_openat is RESOLVE_BENEATH: nothing above its directory, an absolute link included. */
START_TEST(test_openat_beneath) {
        _cleanup_free_ char *b = make_base();
        _cleanup_(root_freep) Root *r = open_tree(b, modes[_i]);

        tree_link(b, "a/abs", "/marker");
        tree_link(b, "a/rel", "b/file");
        tree_link(b, "a/up", "../marker");
        tree_link(b, "a/b/down", "../rel");
        _cleanup_close_ int dfd = root_open(r, "a", O_RDONLY | O_DIRECTORY, 0);
        ck_assert_int_ge(dfd, 0);

        const struct {
                const char *rel;
                int err;
        } cases[] = {
                { "b/file", 0 },       { "rel", 0 },           { "b/down", 0 },
                { "b/../b/file", 0 },  { "../marker", EXDEV }, { "b/../../marker", EXDEV },
                { "up", EXDEV },       { "abs", EXDEV },       { "/marker", EXDEV },
                { "nothing", ENOENT },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                int fd = root_openat(r, dfd, cases[i].rel, O_RDONLY);
                if (cases[i].err) {
                        ck_assert_msg(fd == -cases[i].err, "%s (mode %d): expected -%s, got %d", cases[i].rel,
                                      r->resolve, strerrorname_np(cases[i].err), fd);
                        continue;
                }
                ck_assert_msg(fd >= 0, "%s (mode %d): %s", cases[i].rel, r->resolve, strerror(-fd));
                _cleanup_free_ char *got = slurp_fd(fd);
                close(fd);
                ck_assert_str_eq(got, "file\n");
        }
}
END_TEST

/* A seccomp filter answering openat2 with errno `err`, in this forked test process only. */
static void filter_openat2(int err) {
        struct sock_filter f[] = {
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat2, 0, 1),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ((unsigned) err & SECCOMP_RET_DATA)),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        struct sock_fprog prog = { .len = ELEMENTSOF(f), .filter = f };
        ck_assert_int_eq(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
        ck_assert_int_eq(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog), 0);
}

/* ENOSYS (a kernel before 5.6) is the one answer that changes the mode, and to the confined walk. */
START_TEST(test_enosys_walks) {
        _cleanup_free_ char *b = make_base();
        _cleanup_(root_freep) Root *r = open_tree(b, ROOT_RESOLVE_KERNEL);

        tree_link(b, "a/abs", "/marker");
        filter_openat2(ENOSYS);
        expect_open(r, "a/abs", O_RDONLY, "inside\n", 0);
        ck_assert_int_eq(r->resolve, ROOT_RESOLVE_USERSPACE);
        expect_open(r, "a/b/../../../marker", O_RDONLY, "inside\n", 0);
}
END_TEST

/* Whether openat2 answers here before any filter: valgrind's memcheck does not know the system
 * call and answers ENOSYS for it. */
static bool have_openat2(void) {
        struct {
                uint64_t flags, mode, resolve;
        } how = { .flags = O_RDONLY | O_CLOEXEC };
        int fd = (int) syscall(SYS_openat2, AT_FDCWD, ".", &how, sizeof(how));
        if (fd >= 0)
                close(fd);
        return fd >= 0 || errno != ENOSYS;
}

/* Any other refusal is that file's result: with openat2 refused for every file (a seccomp
 * profile answering EPERM), every open fails, and none escapes. */
START_TEST(test_eperm_stays_confined) {
        if (!have_openat2()) {
                test_skip("openat2 answers ENOSYS before any filter (a kernel before 5.6, or memcheck, which "
                          "does not know it): a refusal other than ENOSYS not tested");
                return;
        }
        _cleanup_free_ char *b = make_base(), *outside = NULL;
        _cleanup_(root_freep) Root *r = open_tree(b, ROOT_RESOLVE_KERNEL);

        ck_assert(asprintf(&outside, "%s/marker", b) >= 0);
        tree_link(b, "a/out", outside);
        filter_openat2(EPERM);
        ck_assert_int_eq(root_write_value(r, "marker", "1"), -EPERM);
        ck_assert_int_eq(root_write_value(r, "a/out", "1"), -EPERM);
        ck_assert_int_eq(r->resolve, ROOT_RESOLVE_KERNEL);
        _cleanup_free_ char *out = slurp_path(b, "marker");
        ck_assert_str_eq(out, "outside\n");
}
END_TEST

/* Finding 5: an immutable knob file refused a write with EPERM, after which every open of the
 * process was a plain openat, and a rollback followed an absolute link out of the tree. */
START_TEST(test_immutable_knob) {
        _cleanup_free_ char *b = make_base(), *outside = NULL, *imm = NULL;
        _cleanup_(root_freep) Root *r = open_tree(b, modes[_i]);

        ck_assert(asprintf(&outside, "%s/outside-file", b) >= 0);
        test_write(b, "outside-file", "0\n");
        test_write(b, "tree/proc/sys/kernel/imm", "0\n");
        tree_link(b, "proc/sys/kernel/x", outside);
        ck_assert(asprintf(&imm, "%s/tree/proc/sys/kernel/imm", b) >= 0);
        ck_assert_int_eq(set_immutable(imm, true), 0);

        ck_assert_int_eq(root_write_value(r, "proc/sys/kernel/imm", "1"), -EPERM);
        int k = root_write_value(r, "proc/sys/kernel/x", "1");
        ck_assert_msg(k == -ENOENT, "write through the absolute link: %d", k);
        ck_assert_int_eq(root_write_value(r, "proc/sys/kernel/imm", "1"), -EPERM);
        ck_assert_int_eq(r->resolve, modes[_i]);

        _cleanup_free_ char *out = slurp_path(b, "outside-file"), *in = slurp_path(b, "tree/proc/sys/kernel/imm");
        ck_assert_str_eq(out, "0\n");
        ck_assert_str_eq(in, "0\n");
}
END_TEST

/* The name root_write_file_atomic() gives its temporary first, in this process. */
static char *first_temp_name(const char *base, const char *dir_rel, const char *file) {
        char *p;
        ck_assert(asprintf(&p, "%s/tree/%s/.#%s.%d.tmp", base, dir_rel, file, (int) getpid()) >= 0);
        return p;
}

/* Issue 22.6: a FIFO planted at the temporary's name (in a directory a user's group may write)
 * blocked the writer until someone read it, and then the FIFO itself became the file. */
START_TEST(test_replace_planted_fifo) {
        _cleanup_free_ char *b = make_base(), *fifo = first_temp_name(b, "etc", "out.prom"), *out = NULL;
        _cleanup_(root_freep) Root *r = open_tree(b, modes[_i]);
        test_write(b, "tree/etc/keep", "");
        ck_assert_int_eq(mkfifo(fifo, 0666), 0);
        alarm(20); /* a writer blocked on the FIFO fails the test, not the suite's timeout */
        ck_assert_int_eq(root_write_file_atomic(r, "etc/out.prom", "new\n", 4, 0644), 0);
        alarm(0);
        ck_assert(asprintf(&out, "%s/tree/etc/out.prom", b) >= 0);
        struct stat st, fst;
        ck_assert_int_eq(lstat(out, &st), 0);
        ck_assert_msg(S_ISREG(st.st_mode), "the file is not a regular file (mode %o)", st.st_mode);
        ck_assert_int_eq(st.st_uid, geteuid());
        ck_assert_int_eq(st.st_mode & 07777, 0644);
        _cleanup_free_ char *text = slurp_path(b, "tree/etc/out.prom");
        ck_assert_str_eq(text, "new\n");
        /* The planted name is left as it was: never opened, never reused. */
        ck_assert_int_eq(lstat(fifo, &fst), 0);
        ck_assert(S_ISFIFO(fst.st_mode));
}
END_TEST

/* Issue 22.6: a file planted at the temporary's name was truncated, written and renamed into place:
 * the result was the planter's inode (their file, owned by them). Here the planted file has a
 * second link, so the inode that became the file can be told apart. */
START_TEST(test_replace_planted_file) {
        _cleanup_free_ char *b = make_base(), *planted = first_temp_name(b, "etc", "out.prom"), *link2 = NULL,
                            *out = NULL;
        _cleanup_(root_freep) Root *r = open_tree(b, modes[_i]);
        test_write(b, "tree/etc/out.prom", "old\n");
        int fd = open(planted, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, "planted\n", 8), 8);
        close(fd);
        ck_assert(asprintf(&link2, "%s/planted-link", b) >= 0);
        ck_assert_int_eq(link(planted, link2), 0);
        ck_assert_int_eq(root_write_file_atomic(r, "etc/out.prom", "new\n", 4, 0644), 0);

        struct stat st, pst;
        ck_assert(asprintf(&out, "%s/tree/etc/out.prom", b) >= 0);
        ck_assert_int_eq(lstat(out, &st), 0);
        ck_assert_int_eq(lstat(link2, &pst), 0);
        ck_assert_msg(st.st_ino != pst.st_ino, "the planted file became the file");
        ck_assert_int_eq(st.st_nlink, 1);
        _cleanup_free_ char *text = slurp_path(b, "tree/etc/out.prom"), *p = slurp_path(b, "planted-link");
        ck_assert_str_eq(text, "new\n");
        ck_assert_str_eq(p, "planted\n");
        ck_assert_int_eq(access(planted, F_OK), 0); /* still there: not rtpart's to remove */
}
END_TEST

/* A temporary left by a process that died (any other PID, either name) is removed beside the
 * files a pattern names, in every directory its directory part matches; this process's own, the
 * files themselves and other names are not. */
START_TEST(test_remove_temporaries) {
        _cleanup_free_ char *b = make_base();
        _cleanup_(root_freep) Root *r = open_tree(b, modes[_i]);
        _cleanup_free_ char *mine = NULL;
        ck_assert(asprintf(&mine, "tree/boot/loader/entries/.#a.conf.%d.tmp", (int) getpid()) >= 0);
        test_write(b, "tree/boot/loader/entries/a.conf", "a\n");
        test_write(b, "tree/boot/loader/entries/.#a.conf.1.tmp", "");
        test_write(b, "tree/boot/loader/entries/.#b.conf.77-0badf00d.tmp", "");
        test_write(b, "tree/efi/loader/entries/.#c.conf.12.tmp", "");
        test_write(b, "tree/boot/loader/entries/.#a.conf.x.tmp", "");    /* not a PID: not ours */
        test_write(b, "tree/boot/loader/entries/.#notes.txt.5.tmp", ""); /* not a .conf */
        test_write(b, mine, "");
        ck_assert_int_eq(root_remove_temporaries(r, "*/loader/entries/*.conf"), 3);
        ck_assert_int_eq(root_remove_temporaries(r, "*/loader/entries/*.conf"), 0);
        _cleanup_free_ char *a = slurp_path(b, "tree/boot/loader/entries/a.conf"), *m = slurp_path(b, mine),
                            *x = slurp_path(b, "tree/boot/loader/entries/.#a.conf.x.tmp"),
                            *n = slurp_path(b, "tree/boot/loader/entries/.#notes.txt.5.tmp");
        ck_assert_ptr_nonnull(a);
        ck_assert_ptr_nonnull(m);
        ck_assert_ptr_nonnull(x);
        ck_assert_ptr_nonnull(n);
        ck_assert_int_eq(root_remove_temporaries(r, "missing/dir/file"), 0);
}
END_TEST

/* Whether chattr +i works here; NULL, or why not. */
static const char *immutable_unsupported(void) {
        static char why[PATH_MAX + 128];
        if (geteuid() != 0)
                return "chattr +i needs root (CAP_LINUX_IMMUTABLE)";
        char dir[PATH_MAX], file[PATH_MAX + 8];
        snprintf(dir, sizeof(dir), "%s/tests/root-probe-XXXXXX", BUILD_DIR);
        if (!mkdtemp(dir))
                return "cannot create a directory in the build directory";
        snprintf(file, sizeof(file), "%s/f", dir);
        int fd = open(file, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (fd >= 0)
                close(fd);
        int k = fd < 0 ? -errno : set_immutable(file, true);
        (void) set_immutable(file, false);
        (void) unlink(file);
        (void) rmdir(dir);
        if (k < 0) {
                snprintf(why, sizeof(why), "the filesystem of %s has no immutable flag (FS_IOC_SETFLAGS: %s)",
                         BUILD_DIR, strerror(-k));
                return why;
        }
        return NULL;
}

int main(int argc, char *argv[]) {
        Suite *s = suite_create("root");

        if (argc > 1 && streq(argv[1], "immutable")) {
                const char *why = immutable_unsupported();
                if (why) {
                        fprintf(stderr, "skipped: %s\n", why);
                        return 77;
                }
                TCase *tc = tcase_create("immutable");
                tcase_add_unchecked_fixture(tc, base_setup, base_teardown);
                tcase_add_loop_test(tc, test_immutable_knob, 0, ELEMENTSOF(modes));
                suite_add_tcase(s, tc);
                return test_run(s);
        }

        TCase *tc = tcase_create("walk");
        tcase_add_unchecked_fixture(tc, base_setup, base_teardown);
        tcase_add_loop_test(tc, test_dotdot_clamped, 0, ELEMENTSOF(modes));
        tcase_add_loop_test(tc, test_symlinks, 0, ELEMENTSOF(modes));
        tcase_add_loop_test(tc, test_loops, 0, ELEMENTSOF(modes));
        tcase_add_loop_test(tc, test_openat_beneath, 0, ELEMENTSOF(modes));
        suite_add_tcase(s, tc);

        tc = tcase_create("replace");
        tcase_add_unchecked_fixture(tc, base_setup, base_teardown);
        tcase_add_loop_test(tc, test_replace_planted_fifo, 0, ELEMENTSOF(modes));
        tcase_add_loop_test(tc, test_replace_planted_file, 0, ELEMENTSOF(modes));
        tcase_add_loop_test(tc, test_remove_temporaries, 0, ELEMENTSOF(modes));
        suite_add_tcase(s, tc);

        /* A seccomp filter outlives the test: each in a process of its own, even where CK_FORK=no
         * (meson's valgrind setup) runs the others in this one. */
        Suite *sec = suite_create("root-seccomp");
        tc = tcase_create("openat2-refused");
        tcase_add_unchecked_fixture(tc, base_setup, base_teardown);
        tcase_add_test(tc, test_enosys_walks);
        tcase_add_test(tc, test_eperm_stays_confined);
        suite_add_tcase(sec, tc);
        int r = test_run(s);
        int k = test_run_forked(sec);
        return r == EXIT_FAILURE || k == EXIT_FAILURE ? EXIT_FAILURE : r != EXIT_SUCCESS ? r : k;
}
