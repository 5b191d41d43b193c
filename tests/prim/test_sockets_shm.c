/*
 * tests/prim/test_sockets_shm.c — prim's Unix sockets and shared memory, as
 * the recorder, its clients and producers use them: a listener only its
 * owner can reach, connecting to it by address, receive timeouts and
 * non-blocking fds set as asked, and two mappings of one memfd that see
 * each other's writes.
 */
#include "prim/prim.h"
#include "util/testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

static struct sockaddr_un address_in(const char *dir, const char *name)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s/%s", dir, name);
    return sa;
}

static void test_listen_and_connect(void **state)
{
    const char *dir = *state;
    struct sockaddr_un sa = address_in(dir, "s.sock");
    mode_t before = umask(022);
    int l = ltr_unix_listen(&sa, 4);
    mode_t after = umask(before);
    assert_true(l >= 0);
    assert_int_equal(after, 022); /* the process's umask is given back */
    struct stat st;
    assert_int_equal(stat(sa.sun_path, &st), 0);
    assert_true(S_ISSOCK(st.st_mode));
    assert_int_equal(st.st_mode & 077, 0); /* nobody but its owner */
    assert_true(fcntl(l, F_GETFL) & O_NONBLOCK);
    assert_true(fcntl(l, F_GETFD) & FD_CLOEXEC);
    assert_int_equal(accept(l, NULL, NULL), -1); /* non-blocking: nobody yet */
    assert_int_equal(errno, EAGAIN);
    int c = ltr_unix_connect_addr(&sa, false);
    assert_true(c >= 0);
    int a = accept(l, NULL, NULL);
    assert_true(a >= 0);
    assert_int_equal(write(c, "hi", 2), 2);
    char buf[2];
    assert_int_equal(read(a, buf, 2), 2);
    assert_memory_equal(buf, "hi", 2);
    /* the name is taken: a second listener is refused, with the reason */
    assert_int_equal(ltr_unix_listen(&sa, 4), -EADDRINUSE);
    close(a);
    close(c);
    close(l);
    struct sockaddr_un none = address_in(dir, "none.sock");
    assert_int_equal(ltr_unix_connect_addr(&none, false), -ENOENT);
}

static void test_timeout_and_nonblock(void **state)
{
    (void)state;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    assert_int_equal(ltr_sock_recv_timeout(sv[0], 7), 0);
    struct timeval tv;
    socklen_t len = sizeof tv;
    assert_int_equal(getsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, &len), 0);
    assert_int_equal(tv.tv_sec, 7);
    assert_false(fcntl(sv[1], F_GETFL) & O_NONBLOCK);
    assert_int_equal(ltr_set_nonblock(sv[1]), 0);
    assert_true(fcntl(sv[1], F_GETFL) & O_NONBLOCK);
    char c;
    assert_int_equal(read(sv[1], &c, 1), -1);
    assert_int_equal(errno, EAGAIN);
    close(sv[0]);
    close(sv[1]);
    assert_int_equal(ltr_set_nonblock(sv[1]), -EBADF);
    assert_int_equal(ltr_sock_recv_timeout(sv[0], 1), -EBADF);
}

static void test_map_shared(void **state)
{
    (void)state;
    ltr_error err;
    int fd = ltr_memfd_create("prim-test", 8192, &err);
    assert_true(fd >= 0);
    void *a, *b;
    assert_int_equal(ltr_map_shared(fd, 8192, &a), 0);
    assert_int_equal(ltr_map_shared(fd, 8192, &b), 0);
    assert_ptr_not_equal(a, b);
    memcpy((char *)a + 5000, "shared", 7);
    assert_string_equal((char *)b + 5000, "shared");
    ltr_unmap(a, 8192);
    ltr_unmap(b, 8192);
    close(fd);
    void *c = NULL;
    assert_int_equal(ltr_map_shared(-1, 4096, &c), -EBADF);
    assert_null(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_listen_and_connect, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test(test_timeout_and_nonblock),
        cmocka_unit_test(test_map_shared),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
