/*
 * recorder/client.c — connecting to a session's control socket by name, one
 * request and its response; and listing the running sessions.
 */
#include "recorder/client.h"
#include "event/registry.h"
#include "prim/prim.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

static int connect_to(const char *session, ltr_error *err)
{
    char dir[4096], name[sizeof ((struct sockaddr_un *)0)->sun_path];
    struct sockaddr_un sa;
    if (ltr_runtime_name(name, sizeof name, session, LTR_RUN_SOCK) != 0)
        return ltr_fail(err, ENAMETOOLONG, "socket path for session '%s' is too long", session);
    int dirfd = ltr_runtime_dir_open(dir, sizeof dir, err);
    if (dirfd < 0)
        return dirfd;
    int fd = -1, rc = ltr_dir_sockaddr(dirfd, dir, name, &sa, err);
    if (!rc && (fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
        rc = ltr_fail(err, errno, "socket: %s", strerror(errno));
    if (rc) {
        close(dirfd);
        return rc;
    }
    /* connected through the directory fd: the one that was checked */
    rc = connect(fd, (struct sockaddr *)&sa, sizeof sa);
    int e = errno;
    close(dirfd);
    if (rc != 0) {
        close(fd);
        if (e == ENOENT || e == ECONNREFUSED)
            return ltr_fail(err, ESRCH, "no session named '%s' is running", session);
        if (e == EACCES || e == EPERM)
            return ltr_fail(err, EACCES, "permission denied: session '%s' belongs to another user",
                            session);
        return ltr_fail(err, e, "cannot reach session '%s': %s", session, strerror(e));
    }
    /* A save of a big ring can take a while; a dead recorder must not hang us. */
    struct timeval tv = {.tv_sec = 600};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
}

int ltr_client_request(const char *session, const ltr_bytes *req, ltr_kvlist *resp, ltr_error *err)
{
    memset(resp, 0, sizeof *resp);
    int fd = connect_to(session, err);
    if (fd < 0)
        return fd;
    int rc = ltr_send_msg(fd, req->data, req->len, NULL, 0);
    uint8_t *body = NULL;
    ssize_t n = rc ? rc : ltr_recv_msg(fd, &body, NULL, NULL, 16u << 20);
    close(fd);
    if (n < 0)
        return ltr_fail(err, (int)-n, "session '%s' did not answer: %s", session,
                        n == -EPIPE ? "the recorder closed the connection" : strerror((int)-n));
    resp->data = body;
    resp->len = (size_t)n;
    char ok[4], msg[sizeof err->msg];
    if (!ltr_kvlist_get(resp, "ok", ok, sizeof ok) || ok[0] != '1') {
        if (!ltr_kvlist_get(resp, "error", msg, sizeof msg))
            snprintf(msg, sizeof msg, "session '%s' refused the request", session);
        int code = EIO;
        char c[16];
        if (ltr_kvlist_get(resp, "errno", c, sizeof c))
            code = atoi(c);
        return ltr_fail(err, code, "%s", msg);
    }
    return 0;
}

void ltr_kvlist_free(ltr_kvlist *kv)
{
    free(kv->data);
    kv->data = NULL;
    kv->len = 0;
}

const char *ltr_kvlist_get(const ltr_kvlist *kv, const char *key, char *buf, size_t size)
{
    return ltr_kv_find(kv->data, kv->len, key, buf, size);
}

int ltr_client_sessions(char names[][64], int max, ltr_error *err)
{
    ltr_registry *reg = ltr_registry_get(err);
    if (!reg)
        return -err->code;
    ltr_registry_lock();
    ltr_registry_reap(reg);
    int n = 0;
    for (unsigned s = 0; s < LTR_MAX_SESSIONS && n < max; s++)
        if (atomic_load(&reg->sessions[s].incarnation))
            snprintf(names[n++], 64, "%.*s", LTR_SESSION_NAME_MAX - 1, reg->sessions[s].name);
    ltr_registry_unlock();
    return n;
}
