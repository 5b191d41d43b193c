/*
 * prim/prim.c — Linux system calls behind the small interface of prim.h.
 */
#include "prim/prim.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/ioctl.h>
#include <sys/sysinfo.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

uint64_t ltr_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t ltr_wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int ltr_fail(ltr_error *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        err->code = code;
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        /* Messages name paths and programs that others chose (a traced
         * process's executable, its libraries, a trace's contents) and go
         * to root's terminal: no control character of theirs goes along,
         * nor a newline that would forge a line of ltr's (a message is one). */
        size_t n = strnlen(err->msg, sizeof err->msg);
        err->msg[ltr_shown_text(err->msg, n, err->msg, false)] = 0;
    }
    return -code;
}

/* ---- the runtime directory ------------------------------------------------
 * Every check is made on the directory as opened (O_NOFOLLOW, then fstat), and
 * users of it work through the open descriptor, so a path that is swapped
 * after the check cannot redirect them. */

const char *ltr_user_name(uid_t uid, char *buf, size_t size)
{
    struct passwd *pw = getpwuid(uid);
    if (pw)
        snprintf(buf, size, "%s", pw->pw_name);
    else
        snprintf(buf, size, "uid %u", (unsigned)uid);
    return buf;
}

static const char fix_hint[] = "set LTR_RUNTIME_DIR to a directory of yours with mode 0700 "
                               "(or remove it if it is yours and stale)";

/* Refuses what is not ours and closed to everybody else, from its stat. */
static int check_stat(const struct stat *st, const char *dir, ltr_error *err)
{
    char who[64];
    if (st->st_uid != geteuid())
        return ltr_fail(err, EACCES, "permission denied: %s belongs to %s, and ltr sessions are usable "
                                     "by their owner only; %s", dir, ltr_user_name(st->st_uid, who, sizeof who),
                        fix_hint);
    if (st->st_mode & 077)
        return ltr_fail(err, EACCES, "%s is open to other users (mode %03o); ltr needs 0700: "
                                     "chmod 700 it if nobody else has put files there, or %s",
                        dir, (unsigned)(st->st_mode & 0777), fix_hint);
    return 0;
}

/* Why a path that exists could not be opened as the runtime directory (its
 * entry, not followed). */
static int refuse_entry(const char *dir, int e, ltr_error *err)
{
    struct stat st;
    char who[64];
    if (lstat(dir, &st) != 0)
        return ltr_fail(err, e, "%s: %s", dir, strerror(e));
    ltr_user_name(st.st_uid, who, sizeof who);
    if (S_ISLNK(st.st_mode))
        return ltr_fail(err, ELOOP, "%s is a symbolic link (owned by %s), not a directory: ltr does not "
                                    "follow it, since another user may have planted it to catch ltr's "
                                    "sessions; %s", dir, who, fix_hint);
    if (!S_ISDIR(st.st_mode))
        return ltr_fail(err, ENOTDIR, "%s is not a directory (it belongs to %s); %s", dir, who, fix_hint);
    int rc = check_stat(&st, dir, err);
    return rc ? rc : ltr_fail(err, e, "%s: %s", dir, strerror(e));
}

/* Checks an opened directory: ours, and closed to everybody else. */
static int check_opened(int fd, const char *dir, ltr_error *err)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return ltr_fail(err, errno, "%s: %s", dir, strerror(errno));
    return check_stat(&st, dir, err);
}

/* Opens dir (creating it 0700 if asked) and checks it. Returns the fd or -errno. */
static int open_private_dir(const char *dir, bool create, ltr_error *err)
{
    if (create && mkdir(dir, 0700) != 0 && errno != EEXIST)
        return ltr_fail(err, errno, "cannot create %s: %s", dir, strerror(errno));
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno == ELOOP || errno == ENOTDIR || errno == EACCES
                   ? refuse_entry(dir, errno, err)
                   : ltr_fail(err, errno, "%s: %s", dir, strerror(errno));
    int rc = check_opened(fd, dir, err);
    if (rc) {
        close(fd);
        return rc;
    }
    return fd;
}

/* A directory that only we (and root) can change: the place's own entries can
 * then not be swapped under us. */
static bool trusted_parent(const char *dir)
{
    struct stat st;
    return dir && *dir && lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) &&
           (st.st_uid == geteuid() || st.st_uid == 0) && !(st.st_mode & 022);
}

static int place(char *out, size_t size, const char *fmt, const char *a, unsigned uid, ltr_error *err)
{
    int n = snprintf(out, size, fmt, a, uid);
    if (n < 0 || (size_t)n >= size)
        return ltr_fail(err, ENAMETOOLONG, "runtime directory path is too long");
    return 0;
}

/* The directory of this format, opened (created if missing, unless
 * look_only) and checked. */
static int open_place(char *out, size_t size, const char *fmt, const char *a, bool look_only, ltr_error *err)
{
    int rc = place(out, size, fmt, a, (unsigned)geteuid(), err);
    return rc ? rc : open_private_dir(out, !look_only, err);
}

/* /tmp/ltr-UID is taken by someone else: a directory of a random name, which
 * nobody can take first, recorded in a file of our home directory so that all
 * our processes find the same one. */
static int private_fallback(const ltr_rundir_places *p, char *out, size_t size, ltr_error *err)
{
    ltr_error first = *err;
    char rec[4200];
    if (!p->home || !*p->home || place(rec, sizeof rec, "%s/.ltr-runtime-dir", p->home, 0, err))
        return ltr_fail(err, first.code, "%s", first.msg);
    int rfd = open(rec, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    struct stat st;
    if (rfd < 0 || fstat(rfd, &st) != 0 || st.st_uid != geteuid() || (st.st_mode & 022) ||
        !S_ISREG(st.st_mode)) {
        if (rfd >= 0)
            close(rfd);
        return ltr_fail(err, first.code, "%s (and %s, where ltr would record a private one, is "
                                         "not usable)", first.msg, rec);
    }
    while (flock(rfd, LOCK_EX) != 0 && errno == EINTR)
        ;
    char known[4096];
    ssize_t n = pread(rfd, known, sizeof known - 1, 0);
    known[n > 0 ? n : 0] = 0;
    int fd = -1;
    ltr_error ignored;
    if (known[0] == '/' && (fd = open_private_dir(known, false, &ignored)) >= 0) {
        snprintf(out, size, "%s", known);
    } else if (place(out, size, "%s/ltr-%u-XXXXXX", p->tmp, (unsigned)geteuid(), err) == 0) {
        if (!mkdtemp(out))
            fd = ltr_fail(err, errno, "cannot create a private directory in %s: %s", p->tmp, strerror(errno));
        else if ((fd = open_private_dir(out, false, err)) >= 0 &&
                 (ftruncate(rfd, 0) != 0 || ltr_pwrite_all(rfd, out, strlen(out), 0) != 0)) {
            close(fd);
            fd = ltr_fail(err, errno, "cannot record the runtime directory in %s: %s", rec, strerror(errno));
        }
    } else {
        fd = -err->code;
    }
    close(rfd); /* and its lock */
    if (fd >= 0) {
        err->code = 0;
        snprintf(err->msg, sizeof err->msg, "ltr uses %.150s instead (recorded in %.150s): %.170s", out, rec,
                 first.msg);
    }
    return fd;
}

int ltr_runtime_dir_in(const ltr_rundir_places *p, char *out, size_t size, ltr_error *err)
{
    struct stat st;
    err->code = 0;
    err->msg[0] = 0;
    if (p->explicit_dir && *p->explicit_dir)
        return open_place(out, size, "%s", p->explicit_dir, p->look_only, err);
    if (p->user_dir && *p->user_dir && stat(p->user_dir, &st) == 0 && S_ISDIR(st.st_mode) &&
        st.st_uid == geteuid())
        return open_place(out, size, "%s/ltr", p->user_dir, p->look_only, err);
    if (geteuid() == 0 && trusted_parent(p->system_dir))
        return open_place(out, size, "%s/ltr", p->system_dir, p->look_only, err);
    int fd = open_place(out, size, "%s/ltr-%u", p->tmp, p->look_only, err);
    if (fd >= 0 || (fd != -EACCES && fd != -ELOOP && fd != -ENOTDIR) || p->look_only)
        return fd;
    return private_fallback(p, out, size, err); /* someone else's, or not a directory */
}

int ltr_runtime_dir_open(char *out, size_t size, ltr_error *err)
{
    char user_dir[64];
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    snprintf(user_dir, sizeof user_dir, "/run/user/%u", (unsigned)geteuid());
    ltr_rundir_places p = {.explicit_dir = getenv("LTR_RUNTIME_DIR"),
                           .user_dir = xdg && *xdg ? xdg : user_dir,
                           .system_dir = "/run",
                           .tmp = "/tmp",
                           .home = getenv("HOME")};
    ltr_error local;
    return ltr_runtime_dir_in(&p, out, size, err ? err : &local);
}

int ltr_runtime_dir(char *out, size_t size, ltr_error *err)
{
    int fd = ltr_runtime_dir_open(out, size, err);
    if (fd < 0)
        return fd;
    close(fd);
    return 0;
}

int ltr_runtime_name(char *out, size_t size, const char *session, const char *suffix)
{
    int n = snprintf(out, size, "%s%s", session, suffix);
    return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

int ltr_dir_sockaddr(int dirfd, const char *dir, const char *name, struct sockaddr_un *sa, ltr_error *err)
{
    memset(sa, 0, sizeof *sa);
    sa->sun_family = AF_UNIX;
    char via_fd[64];
    snprintf(via_fd, sizeof via_fd, "/proc/self/fd/%d", dirfd);
    /* Without /proc mounted: the path, checked a moment ago. */
    const char *base = access(via_fd, X_OK) == 0 ? via_fd : dir;
    int n = snprintf(sa->sun_path, sizeof sa->sun_path, "%s/%s", base, name);
    if (n < 0 || (size_t)n >= sizeof sa->sun_path)
        return ltr_fail(err, ENAMETOOLONG, "socket path %s/%s is too long", dir, name);
    return 0;
}

int ltr_write_all(int fd, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int ltr_pwrite_all(int fd, const void *buf, size_t len, uint64_t offset)
{
    const uint8_t *p = buf;
    while (len) {
        ssize_t n = pwrite(fd, p, len, (off_t)offset);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (n == 0)
            return -EIO;
        p += n;
        len -= (size_t)n;
        offset += (uint64_t)n;
    }
    return 0;
}

int ltr_read_all(int fd, void *buf, size_t len)
{
    uint8_t *p = buf;
    while (len) {
        ssize_t n = read(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (n == 0)
            return -EPIPE;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Waits until fd is ready for events or the deadline (ltr_now_ns's clock)
 * passes; deadline 0: no wait here, the call itself blocks. Once past the
 * deadline, what is ready already is still taken (one poll without waiting). */
static int wait_ready(int fd, short events, uint64_t deadline_ns)
{
    if (!deadline_ns)
        return 0;
    for (;;) {
        uint64_t now = ltr_now_ns();
        int ms = now >= deadline_ns ? 0 : (int)((deadline_ns - now + 999999) / 1000000);
        struct pollfd p = {.fd = fd, .events = events};
        int n = poll(&p, 1, ms);
        if (n > 0)
            return 0; /* readable, writable, or an error the call will report */
        if (n == 0 && ms == 0)
            return -ETIMEDOUT;
        if (n < 0 && errno != EINTR)
            return -errno;
    }
}

/* With a deadline, calls do not block (MSG_DONTWAIT) and wait_ready waits. */
static bool retry_io(ssize_t n, uint64_t deadline_ns)
{
    return n < 0 && (errno == EINTR || (deadline_ns && (errno == EAGAIN || errno == EWOULDBLOCK)));
}

static int send_all_by(int sock, const uint8_t *p, size_t len, uint64_t deadline_ns)
{
    int flags = MSG_NOSIGNAL | (deadline_ns ? MSG_DONTWAIT : 0);
    while (len) {
        int rc = wait_ready(sock, POLLOUT, deadline_ns);
        if (rc)
            return rc;
        ssize_t n = send(sock, p, len, flags);
        if (retry_io(n, deadline_ns))
            continue;
        if (n < 0)
            return -errno;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int recv_all_by(int sock, uint8_t *p, size_t len, uint64_t deadline_ns)
{
    int flags = deadline_ns ? MSG_DONTWAIT : MSG_WAITALL;
    while (len) {
        int rc = wait_ready(sock, POLLIN, deadline_ns);
        if (rc)
            return rc;
        ssize_t n = recv(sock, p, len, flags);
        if (retry_io(n, deadline_ns))
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            return -EPIPE;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int ltr_send_msg_by(int sock, const void *buf, size_t len, const int *fds, int nfds,
                    uint64_t deadline_ns)
{
    uint32_t hdr = (uint32_t)len;
    struct iovec iov[2] = {{&hdr, sizeof hdr}, {(void *)buf, len}};
    union {
        char buf[CMSG_SPACE(sizeof(int) * 4)];
        struct cmsghdr align;
    } ctl;
    struct msghdr msg = {.msg_iov = iov, .msg_iovlen = 2};
    if (nfds > 0) {
        memset(&ctl, 0, sizeof ctl);
        msg.msg_control = ctl.buf;
        msg.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
        memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
    }
    ssize_t n;
    do {
        int rc = wait_ready(sock, POLLOUT, deadline_ns);
        if (rc)
            return rc;
        n = sendmsg(sock, &msg, MSG_NOSIGNAL | (deadline_ns ? MSG_DONTWAIT : 0));
    } while (retry_io(n, deadline_ns));
    if (n < 0)
        return -errno;
    size_t sent = (size_t)n, total = sizeof hdr + len;
    if (sent < total) { /* the fds went with the first byte; the rest is plain */
        if (sent < sizeof hdr)
            return -EIO;
        return send_all_by(sock, (const uint8_t *)buf + (sent - sizeof hdr), total - sent, deadline_ns);
    }
    return 0;
}

int ltr_send_msg(int sock, const void *buf, size_t len, const int *fds, int nfds)
{
    return ltr_send_msg_by(sock, buf, len, fds, nfds, 0);
}

/* Keeps the fds of one received control message, up to *nfds of them in
 * fds (counted in *got); closes the rest. */
static void take_fds(struct msghdr *msg, int *fds, int *nfds, int *got)
{
    for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR(msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        int tmp[4];
        memcpy(tmp, CMSG_DATA(c), sizeof(int) * (size_t)k);
        for (int i = 0; i < k; i++) {
            if (fds && nfds && *got < *nfds)
                fds[(*got)++] = tmp[i];
            else
                close(tmp[i]);
        }
    }
}

/* The 4-byte length of a framed message, and the fds that came with it. */
static int recv_header(int sock, uint32_t *hdr, int *fds, int *nfds, uint64_t deadline_ns)
{
    union {
        char buf[CMSG_SPACE(sizeof(int) * 4)];
        struct cmsghdr align;
    } ctl;
    int flags = MSG_CMSG_CLOEXEC | (deadline_ns ? MSG_DONTWAIT : MSG_WAITALL);
    size_t have = 0;
    int got = 0, rc = 0;
    while (!rc && have < sizeof *hdr) {
        struct iovec iov = {(uint8_t *)hdr + have, sizeof *hdr - have};
        struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                             .msg_controllen = sizeof ctl.buf};
        rc = wait_ready(sock, POLLIN, deadline_ns);
        if (rc)
            break;
        ssize_t n = recvmsg(sock, &msg, flags);
        if (retry_io(n, deadline_ns))
            continue;
        if (n < 0)
            rc = -errno;
        else if (n == 0)
            rc = have ? -EPROTO : -EPIPE;
        else
            take_fds(&msg, fds, nfds, &got);
        have += n > 0 ? (size_t)n : 0;
    }
    if (nfds)
        *nfds = got;
    return rc == -ETIMEDOUT && have ? -EPROTO : rc; /* cut: the stream is out of step */
}

ssize_t ltr_recv_msg_by(int sock, uint8_t **body, int *fds, int *nfds, size_t max_len,
                        uint64_t deadline_ns)
{
    uint32_t hdr;
    int rc = recv_header(sock, &hdr, fds, nfds, deadline_ns);
    if (rc)
        return rc;
    if (hdr > max_len)
        return -EMSGSIZE;
    uint8_t *p = malloc(hdr + 1u);
    if (!p)
        return -ENOMEM;
    rc = recv_all_by(sock, p, hdr, deadline_ns);
    if (rc) {
        free(p);
        return rc == -ETIMEDOUT ? -EPROTO : rc;
    }
    p[hdr] = 0;
    *body = p;
    return (ssize_t)hdr;
}

void ltr_msg_in_free(ltr_msg_in *m)
{
    free(m->body);
    memset(m, 0, sizeof *m);
}

int ltr_msg_in_read(int sock, ltr_msg_in *m, size_t max_len)
{
    for (;;) {
        bool head = m->hdr_got < sizeof m->hdr;
        uint8_t *to = head ? m->hdr + m->hdr_got : m->body + m->got;
        size_t want = head ? sizeof m->hdr - m->hdr_got : m->len - m->got;
        if (!head && !want) {
            m->body[m->len] = 0;
            return 1;
        }
        ssize_t n = recv(sock, to, want, MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        if (n <= 0) {
            int e = n < 0 ? errno : EPIPE;
            ltr_msg_in_free(m);
            return -e;
        }
        if (!head) {
            m->got += (uint32_t)n;
            continue;
        }
        if ((m->hdr_got += (uint32_t)n) < sizeof m->hdr)
            continue;
        memcpy(&m->len, m->hdr, sizeof m->len);
        if (m->len > max_len || !(m->body = malloc((size_t)m->len + 1))) {
            int e = m->len > max_len ? EMSGSIZE : ENOMEM;
            ltr_msg_in_free(m);
            return -e;
        }
    }
}

ssize_t ltr_recv_msg(int sock, uint8_t **body, int *fds, int *nfds, size_t max_len)
{
    return ltr_recv_msg_by(sock, body, fds, nfds, max_len, 0);
}

int ltr_unix_connect_addr(const struct sockaddr_un *sa, bool nonblock)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0);
    if (fd < 0)
        return -errno;
    int rc;
    do
        rc = connect(fd, (const struct sockaddr *)sa, sizeof *sa) == 0 ? 0 : -errno;
    while (rc == -EINTR && !nonblock);
    if (rc) {
        close(fd);
        return rc == -EINPROGRESS || rc == -EINTR ? -EAGAIN : rc;
    }
    return fd;
}

int ltr_unix_connect(const char *path, bool nonblock)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path) >= (int)sizeof sa.sun_path)
        return -ENAMETOOLONG;
    return ltr_unix_connect_addr(&sa, nonblock);
}

int ltr_unix_listen(const struct sockaddr_un *sa, int backlog)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -errno;
    mode_t old = umask(077); /* the socket is the owner's only: 0600 */
    int rc = bind(fd, (const struct sockaddr *)sa, sizeof *sa);
    umask(old);
    if (rc != 0 || listen(fd, backlog) != 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    return fd;
}

int ltr_sock_recv_timeout(int sock, unsigned seconds)
{
    struct timeval tv = {.tv_sec = seconds};
    return setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) == 0 ? 0 : -errno;
}

int ltr_set_nonblock(int fd)
{
    int flags = fcntl(fd, F_GETFL);
    return flags >= 0 && fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0 ? 0 : -errno;
}

/* The floor of a producer's descriptors. A traced program expects the
 * lowest free numbers (its first open() is 3; 'exec 3<' in a shell; a test
 * comparing fd numbers), so a descriptor the agent keeps goes high, as
 * valgrind does with its own (the soft limit's top). Past 1024 when the
 * limit allows: select() cannot watch a descriptor of 1024 or more
 * (FD_SETSIZE), so a program using it keeps below, and one that raised its
 * limit for more files mostly gets the low ones first. Not the top of a
 * large limit: the kernel's fd table grows to the highest number in use and
 * a fork copies it, 8 bytes a slot (at 1024 it is 2048 slots, 16 KiB; the
 * top of a container's 1048576 would be 8 MiB a process). Under a limit of
 * 1024 or less: its top, less FD_RESERVE, room for what a producer keeps
 * (the registry, libunwind's pipe, a socket and an eventfd per session of
 * LTR_MAX_SESSIONS 32: 67) in the common 1024 case. */
#define FD_HIGH_FLOOR 1024
#define FD_RESERVE 96

int ltr_fd_floor(void)
{
    struct rlimit lim;
    if (getrlimit(RLIMIT_NOFILE, &lim) != 0)
        return 0;
    if (lim.rlim_cur == RLIM_INFINITY || lim.rlim_cur >= FD_HIGH_FLOOR + FD_RESERVE)
        return FD_HIGH_FLOOR;
    return lim.rlim_cur >= 2 * FD_RESERVE ? (int)lim.rlim_cur - FD_RESERVE : 0;
}

int ltr_fd_move_high(int fd)
{
    int floor = fd < 0 ? 0 : ltr_fd_floor();
    if (floor == 0 || fd >= floor)
        return fd;
    int high = fcntl(fd, F_DUPFD_CLOEXEC, floor);
    if (high < 0)
        return fd;
    close(fd);
    return high;
}

int ltr_flock_by(int fd, uint64_t deadline_ns)
{
    for (unsigned pause_us = 500;;) {
        if (flock(fd, LOCK_EX | (deadline_ns ? LOCK_NB : 0)) == 0)
            return 0;
        if (errno == EINTR)
            continue;
        if (errno != EWOULDBLOCK || !deadline_ns)
            return -errno;
        if (ltr_now_ns() >= deadline_ns)
            return -ETIMEDOUT;
        usleep(pause_us); /* flock has no timed wait: poll, a little slower each time */
        pause_us = pause_us < 8000 ? pause_us * 2 : pause_us;
    }
}

static struct sigaction sigxfsz_given;
static bool sigxfsz_saved;

void ltr_ignore_sigxfsz(void)
{
    struct sigaction ign = {.sa_handler = SIG_IGN};
    if (sigxfsz_saved) /* keep what the process was given, not our own */
        sigaction(SIGXFSZ, &ign, NULL);
    else
        sigxfsz_saved = sigaction(SIGXFSZ, &ign, &sigxfsz_given) == 0;
}

void ltr_restore_sigxfsz(void)
{
    if (sigxfsz_saved)
        sigaction(SIGXFSZ, &sigxfsz_given, NULL);
}

int ltr_size_shared_file(int fd, size_t size)
{
    struct rlimit lim;
    bool raise = false;
    if (getrlimit(RLIMIT_FSIZE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < size) {
        if (!sigxfsz_saved || (lim.rlim_max != RLIM_INFINITY && lim.rlim_max < size))
            return -EFBIG; /* a traced program, or a hard limit: no signal either way */
        raise = setrlimit(RLIMIT_FSIZE, &(struct rlimit){lim.rlim_max, lim.rlim_max}) == 0;
    }
    int rc = ftruncate(fd, (off_t)size) == 0 ? 0 : -errno;
    if (raise)
        setrlimit(RLIMIT_FSIZE, &lim);
    return rc;
}

int ltr_memfd_create(const char *name, size_t size, ltr_error *err)
{
    int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return ltr_fail(err, errno, "memfd_create: %s", strerror(errno));
    int sized = ltr_size_shared_file(fd, size);
    if (sized != 0) {
        int e = -sized;
        close(fd);
        return ltr_fail(err, e, "cannot size shared memory to %zu bytes: %s%s", size, strerror(e),
                        e == EFBIG ? " (the file size limit, 'ulimit -f', is lower: raise it or "
                                     "ask for fewer or smaller buffers)" : "");
    }
    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
    return fd;
}

int ltr_map_shared(int fd, size_t size, void **addr)
{
    void *mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (mem == MAP_FAILED)
        return -errno;
    *addr = mem;
    return 0;
}

void ltr_unmap(void *addr, size_t size)
{
    munmap(addr, size);
}

/* The zeros are a new memfd's, of the process's own: private anonymous
 * pages that can be written are charged to the commit limit as they are
 * mapped, and under vm.overcommit_memory=2 a session's size for each
 * process that leaves (128 MB for `ltr record` on 8 CPUs) would have been
 * taken from what the program may allocate; a memfd's pages are charged
 * only as they are written. Without memfd_create (an older kernel, a
 * seccomp filter), or past the file size limit, private pages. */
bool ltr_map_zeros(void *addr, size_t size)
{
    int saved = errno;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size = (size + page - 1) & ~(page - 1);
    int fd = memfd_create("ltr-left", MFD_CLOEXEC);
    bool done = fd >= 0 && ltr_size_shared_file(fd, size) == 0 &&
                mmap(addr, size, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_SHARED, fd, 0) == addr;
    if (fd >= 0)
        close(fd);
    if (!done)
        done = mmap(addr, size, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                    -1, 0) == addr;
    errno = saved;
    return done;
}

size_t ltr_grown_capacity(size_t cap, size_t n, size_t first)
{
    size_t ncap = cap ? cap * 2 : first;
    while (ncap <= n)
        ncap *= 2;
    return ncap;
}

int ltr_reserve(void **v, size_t *cap, size_t n, size_t elem, size_t first)
{
    if (n < *cap)
        return 0;
    size_t ncap = ltr_grown_capacity(*cap, n, first);
    void *nv = realloc(*v, ncap * elem);
    if (!nv)
        return -ENOMEM;
    *v = nv;
    *cap = ncap;
    return 0;
}

bool ltr_pid_alive(pid_t pid)
{
    if (pid <= 0 || (kill(pid, 0) != 0 && errno != EPERM))
        return false;
    /* A killed process whose parent has not reaped it yet is a zombie: gone. */
    char path[64], stat[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    if (ltr_read_small_file(path, stat, sizeof stat) <= 0)
        return true;
    const char *close_paren = strrchr(stat, ')');
    return !(close_paren && close_paren[1] == ' ' && (close_paren[2] == 'Z' || close_paren[2] == 'X'));
}

/* /proc/PID/stat of pid (0: this process) into stat, and where its fields
 * after the command start (its closing ')': the command may hold spaces and
 * parentheses); NULL when it cannot be read. */
static const char *proc_stat_fields(uint32_t pid, char *stat, size_t size)
{
    char path[64];
    if (pid)
        snprintf(path, sizeof path, "/proc/%u/stat", pid);
    else
        snprintf(path, sizeof path, "/proc/self/stat");
    return ltr_read_small_file(path, stat, size) > 0 ? strrchr(stat, ')') : NULL;
}

uint64_t ltr_proc_start_time(uint32_t pid)
{
    char stat[1024];
    const char *f = proc_stat_fields(pid, stat, sizeof stat);
    for (int field = 2; f && field < 22; field++)
        f = strchr(f + 1, ' ');
    return f ? strtoull(f + 1, NULL, 10) : 0;
}

bool ltr_pid_stopped(uint32_t pid)
{
    char stat[1024];
    const char *f = proc_stat_fields(pid, stat, sizeof stat); /* ") S ..." */
    return f && f[1] == ' ' && (f[2] == 'T' || f[2] == 't');
}

uint32_t ltr_proc_ppid(uint32_t pid)
{
    char stat[1024];
    uint32_t ppid = 0;
    const char *f = proc_stat_fields(pid, stat, sizeof stat); /* then the state and the parent */
    if (f)
        sscanf(f + 2, "%*c %u", &ppid);
    return ppid;
}

/* The last id of the NSpid line of the status file at path (a process's or
 * a thread's), its id in its own pid namespace; id itself on a kernel
 * before 4.1, which shows none; 0 when it cannot be read. */
static uint32_t own_ns_id(const char *path, uint32_t id)
{
    char status[16384];
    if (ltr_read_small_file(path, status, sizeof status) <= 0)
        return 0;
    const char *ns = strstr(status, "\nNSpid:");
    if (!ns)
        return id;
    ns += 7;
    unsigned long last = 0;
    for (char *end;;) {
        while (*ns == ' ' || *ns == '\t')
            ns++;
        if (*ns < '0' || *ns > '9')
            break;
        last = strtoul(ns, &end, 10);
        ns = end;
    }
    return last <= UINT32_MAX ? (uint32_t)last : 0;
}

uint32_t ltr_proc_own_pid(uint32_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%u/status", pid);
    return own_ns_id(path, pid);
}

uint32_t ltr_task_own_tid(uint32_t pid, uint32_t tid)
{
    char path[80];
    snprintf(path, sizeof path, "/proc/%u/task/%u/status", pid, tid);
    return own_ns_id(path, tid);
}

uint64_t ltr_total_ram(void)
{
    struct sysinfo si;
    if (sysinfo(&si) != 0)
        return 0;
    return (uint64_t)si.totalram * si.mem_unit;
}

unsigned ltr_terminal_width(int fd)
{
    if (!isatty(fd))
        return 0;
    const char *env = getenv("COLUMNS");
    if (env && atoi(env) > 0)
        return (unsigned)atoi(env);
    struct winsize ws;
    return ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col ? ws.ws_col : 80;
}

int ltr_boot_id(char *out, size_t size)
{
    ssize_t n = ltr_read_small_file("/proc/sys/kernel/random/boot_id", out, size);
    if (n <= 0)
        return n < 0 ? (int)n : -ENODATA;
    out[strcspn(out, "\n")] = 0;
    return out[0] ? 0 : -ENODATA;
}

static __thread uint32_t cached_tid;

uint32_t ltr_gettid(void)
{
    if (!cached_tid)
        cached_tid = (uint32_t)syscall(SYS_gettid);
    return cached_tid;
}

void ltr_gettid_forget(void)
{
    cached_tid = 0;
}

ssize_t ltr_read_small_file(const char *path, char *buf, size_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    size_t used = 0;
    while (used + 1 < size) {
        ssize_t n = read(fd, buf + used, size - 1 - used);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        used += (size_t)n;
    }
    close(fd);
    buf[used] = 0;
    return (ssize_t)used;
}
