/* test_shmseg.c: what vt__shm_open (shmseg.c) does with what it finds under
 * the segment's name. Nothing there: it creates the segment (0600, one
 * name). A FIFO, a symbolic link, a directory, a file with a second name:
 * never followed, opened for I/O or removed, the open refused with
 * opts.refused set (the caller warns); a file of ours with another mode:
 * replaced. Without root every planted thing is this user's own, which the
 * rules treat as another user's (only a regular one-name file of ours is a
 * segment); test_shared_security.py plants as another uid. Each test works
 * in a fresh directory under /dev/shm (VSITUNE_SHM_DIR's role). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shm/shmseg.h"

static char dir[64];
static char path[128];
static char target[128];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/dev/shm/vt-shmseg-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(path, sizeof path, "%s/vsitune-%u-seg", dir, (unsigned)geteuid());
    snprintf(target, sizeof target, "%s/target", dir);
    return 0;
}

static int teardown(void **state)
{
    char other[160];
    (void)state;
    snprintf(other, sizeof other, "%s/second-name", dir);
    unlink(other);
    unlink(target);
    unlink(path);
    rmdir(path);
    return rmdir(dir);
}

/* vt__shm_open in dir; *refused gets opts.refused. */
static vt_shm *open_seg(int *refused, char *why, size_t whylen)
{
    vt_shm_opts o = {.dir = dir, .pool = "seg", .budget = 16u << 20,
                     .block_size = 64 * 1024, .refused = refused};
    *refused = 0;
    return vt__shm_open(&o, why, whylen);
}

static void write_file(const char *p, const char *text, mode_t mode)
{
    int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, mode);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    assert_int_equal(chmod(p, mode), 0);
}

/* Refused, *why names the file, and nothing changed at the name. */
static void assert_refused_untouched(const char *kind)
{
    struct stat before, after;
    char why[512];
    int refused;

    assert_int_equal(lstat(path, &before), 0);
    assert_null(open_seg(&refused, why, sizeof why));
    assert_int_equal(refused, 1);
    assert_non_null(strstr(why, path));
    assert_non_null(strstr(why, kind));
    assert_int_equal(lstat(path, &after), 0);
    assert_int_equal(before.st_ino, after.st_ino);
    assert_int_equal(before.st_mode, after.st_mode);
    assert_int_equal(before.st_size, after.st_size);
}

static void test_nothing_there_is_created(void **state)
{
    struct stat st;
    char why[512];
    int refused;
    vt_shm *s;
    (void)state;
    s = open_seg(&refused, why, sizeof why);
    assert_non_null(s);
    assert_int_equal(refused, 0);
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0600);
    assert_int_equal(st.st_nlink, 1);
    vt__shm_close(s);
    assert_int_equal(access(path, F_OK), -1); /* the last one removed it */
}

static void test_fifo_is_not_opened(void **state)
{
    (void)state;
    assert_int_equal(mkfifo(path, 0600), 0);
    assert_refused_untouched("a FIFO"); /* and returned: nothing blocked */
}

static void test_symlink_is_not_followed(void **state)
{
    char buf[64] = {0};
    int fd;
    (void)state;
    write_file(target, "the user's own bytes", 0600);
    assert_int_equal(symlink(target, path), 0);
    assert_refused_untouched("a symbolic link");
    fd = open(target, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(read(fd, buf, sizeof buf - 1), 20);
    close(fd);
    assert_string_equal(buf, "the user's own bytes");
}

static void test_directory_is_refused(void **state)
{
    (void)state;
    assert_int_equal(mkdir(path, 0700), 0);
    assert_refused_untouched("a directory");
}

static void test_file_with_a_second_name_is_refused(void **state)
{
    char other[160];
    (void)state;
    write_file(path, "not a segment", 0600);
    snprintf(other, sizeof other, "%s/second-name", dir);
    assert_int_equal(link(path, other), 0);
    assert_refused_untouched("2 names");
    assert_int_equal(access(other, F_OK), 0);
}

static void test_own_file_of_another_mode_is_replaced(void **state)
{
    struct stat before, after;
    char why[512];
    int refused;
    vt_shm *s;
    (void)state;
    write_file(path, "an old file of ours", 0644);
    assert_int_equal(lstat(path, &before), 0);
    s = open_seg(&refused, why, sizeof why);
    assert_non_null(s);
    assert_int_equal(refused, 0);
    assert_int_equal(lstat(path, &after), 0);
    assert_true(after.st_ino != before.st_ino);
    assert_int_equal(after.st_mode & 07777, 0600);
    vt__shm_close(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_nothing_there_is_created, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fifo_is_not_opened, setup, teardown),
        cmocka_unit_test_setup_teardown(test_symlink_is_not_followed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_directory_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_file_with_a_second_name_is_refused, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_own_file_of_another_mode_is_replaced, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
