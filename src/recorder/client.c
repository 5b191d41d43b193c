/*
 * recorder/client.c — connecting to a session's control socket by name, one
 * request and its response; and listing the running sessions.
 */
#include "recorder/client.h"
#include "event/registry.h"
#include "recorder/recorder.h" /* ltr_session_name_check */
#include "prim/prim.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* How long a request waits for its answer. A save or a stop writes a whole
 * trace (a big ring takes a while), a flush what is pending, a capturestate
 * waits up to 10 s for the system provider: those wait long. The others are
 * answered by the recorder's loop at once, so one not answered in a few
 * seconds will not be soon: the command says so and goes on (`ltr status`
 * to the other sessions) instead of hanging. */
#define CLIENT_QUICK_S 10
#define CLIENT_LONG_S 600
/* While it waits, how often it looks whether the recorder is stopped
 * (SIGSTOP, a debugger): a stopped one is reported then, also mid-save,
 * not after the whole wait. */
#define CLIENT_LOOK_MS 1000
/* A listener's backlog full (requests pile up before a stopped recorder):
 * connecting again after this long. */
#define CLIENT_RETRY_MS 50

static unsigned answer_limit_s(const ltr_bytes *req)
{
    static const char *const slow[] = {"save", "stop", "flush", "capturestate"};
    char op[32];
    if (ltr_kv_find(req->data, req->len, "op", op, sizeof op))
        for (size_t i = 0; i < sizeof slow / sizeof *slow; i++)
            if (!strcmp(op, slow[i]))
                return CLIENT_LONG_S;
    return CLIENT_QUICK_S;
}

static void nap_ms(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

/* Connects without blocking: a blocking connect to a listener whose backlog
 * is full waits as long as its recorder is stopped. Tries again until
 * end_ns; the socket stays non-blocking (the deadlines bound each wait). */
static int connect_by(const struct sockaddr_un *sa, uint64_t end_ns)
{
    for (;;) {
        int fd = ltr_unix_connect_addr(sa, true);
        if (fd != -EAGAIN || ltr_now_ns() >= end_ns)
            return fd;
        nap_ms(CLIENT_RETRY_MS);
    }
}

/* No recorder listens for session: the error says so, and what there is
 * instead: the session is dead (its recorder killed, with the partial trace
 * it left), or the names of the sessions that do run (a 'ltr stop' without
 * --instance while only named sessions run said only "no session named
 * 'ltr'"). */
static int no_session(const char *session, ltr_error *err)
{
    enum { MAX = 16 };
    ltr_error ignored;
    ltr_dead_session *dead = malloc(sizeof *dead * MAX);
    int n = dead ? ltr_client_dead_sessions(dead, MAX, &ignored) : 0;
    for (int i = 0; i < n && i < MAX; i++) {
        if (strcmp(dead[i].name, session))
            continue;
        char partial[4200] = "";
        if (dead[i].has_partial)
            snprintf(partial, sizeof partial, "; its partial trace is %s", dead[i].output);
        ltr_fail(err, ESRCH, "no session named '%s' is running: its recorder (pid %u) was killed or crashed%s "
                             "('ltr status' tells what is left of it, 'ltr cancel --instance %s' forgets it)",
                 session, dead[i].pid, partial, session);
        free(dead);
        return -ESRCH;
    }
    free(dead);
    char names[MAX][64], list[MAX * 66] = "";
    int m = ltr_client_sessions(names, MAX, &ignored);
    for (int i = 0, used = 0; i < m && i < MAX; i++) {
        int k = snprintf(list + used, sizeof list - (size_t)used, "%s%s", i ? ", " : "", names[i]);
        if (k < 0 || (size_t)k >= sizeof list - (size_t)used)
            break;
        used += k;
    }
    if (m > 0)
        return ltr_fail(err, ESRCH, "no session named '%s' is running (running: %s; name one with --instance)",
                        session, list);
    return ltr_fail(err, ESRCH, "no session named '%s' is running", session);
}

static int connect_to(const char *session, uint64_t end_ns, ltr_error *err)
{
    char dir[4096], name[sizeof ((struct sockaddr_un *)0)->sun_path];
    struct sockaddr_un sa;
    if (ltr_runtime_name(name, sizeof name, session, LTR_RUN_SOCK) != 0)
        return ltr_fail(err, ENAMETOOLONG, "socket path for session '%s' is too long", session);
    int dirfd = ltr_runtime_dir_open(dir, sizeof dir, err);
    if (dirfd < 0)
        return dirfd;
    int rc = ltr_dir_sockaddr(dirfd, dir, name, &sa, err);
    if (rc) {
        close(dirfd);
        return rc;
    }
    /* connected through the directory fd: the one that was checked */
    int fd = connect_by(&sa, end_ns), e = -fd;
    close(dirfd);
    if (fd < 0) {
        if (e == EAGAIN)
            return ltr_fail(err, ETIMEDOUT, "session '%s' did not answer: too many requests wait for it "
                                            "already (its recorder is stopped or hung)", session);
        if (e == ENOENT || e == ECONNREFUSED)
            return no_session(session, err);
        if (e == EACCES || e == EPERM)
            return ltr_fail(err, EACCES, "permission denied: session '%s' belongs to another user",
                            session);
        return ltr_fail(err, e, "cannot reach session '%s': %s", session, strerror(e));
    }
    return fd;
}

/* The recorder at the other end of fd (the process that listens), or 0. */
static pid_t peer_pid(int fd)
{
    struct ucred uc;
    socklen_t len = sizeof uc;
    return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) == 0 ? uc.pid : 0;
}

/* Whether pid is stopped: 'T' (SIGSTOP), 't' (held by a tracer), or 0
 * (running, or not known). */
static char stop_state(pid_t pid)
{
    char path[64], stat[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    if (pid <= 0 || ltr_read_small_file(path, stat, sizeof stat) <= 0)
        return 0;
    const char *p = strrchr(stat, ')'); /* past the name, which may hold anything */
    return p && p[1] == ' ' && (p[2] == 'T' || p[2] == 't') ? p[2] : 0;
}

/* A tracer holds its tracee in 't' at every system call when it is strace,
 * for microseconds each: one look that saw 't' does not make a recorder
 * under strace, busy with a long save, a stopped one. A debugger's stop
 * lasts: 't' at this many looks in a row (CLIENT_LOOK_MS apart) is one. */
#define CLIENT_TRACED_LOOKS 3

/* Waits for the answer to arrive on fd until end_ns, looking meanwhile
 * whether the recorder is stopped. 0, or -ETIMEDOUT with err naming the
 * session and why. */
static int await_answer(int fd, const char *session, uint64_t end_ns, unsigned limit_s, ltr_error *err)
{
    pid_t rec = peer_pid(fd);
    unsigned traced = 0; /* looks in a row that saw it held by a tracer */
    for (;;) {
        uint64_t now = ltr_now_ns();
        if (now >= end_ns)
            return ltr_fail(err, ETIMEDOUT, "session '%s' did not answer within %u s: its recorder (pid %d) "
                            "is busy or hung", session, limit_s, (int)rec);
        uint64_t left_ms = (end_ns - now) / 1000000 + 1;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int n = poll(&p, 1, left_ms < CLIENT_LOOK_MS ? (int)left_ms : CLIENT_LOOK_MS);
        if (n > 0)
            return 0;
        if (n < 0 && errno != EINTR)
            return ltr_fail(err, errno, "session '%s': %s", session, strerror(errno));
        char st = n == 0 ? stop_state(rec) : 0;
        traced = st == 't' ? traced + 1 : 0;
        if (st == 'T' || traced >= CLIENT_TRACED_LOOKS)
            return ltr_fail(err, ETIMEDOUT, "session '%s' did not answer: its recorder (pid %d) is stopped "
                            "(SIGSTOP or a debugger); nothing was done: 'kill -CONT %d' lets it go on, then ask "
                            "again", session, (int)rec, (int)rec);
    }
}

int ltr_client_request(const char *session, const ltr_bytes *req, ltr_kvlist *resp, ltr_error *err)
{
    memset(resp, 0, sizeof *resp);
    unsigned limit_s = answer_limit_s(req);
    uint64_t end_ns = ltr_now_ns() + (uint64_t)limit_s * 1000000000u;
    int fd = connect_to(session, ltr_now_ns() + (uint64_t)CLIENT_QUICK_S * 1000000000u, err);
    if (fd < 0)
        return fd;
    int rc = ltr_send_msg_by(fd, req->data, req->len, NULL, 0, end_ns);
    if (rc == 0 && (rc = await_answer(fd, session, end_ns, limit_s, err)) != 0) {
        close(fd);
        return rc;
    }
    uint8_t *body = NULL;
    ssize_t n = rc ? rc : ltr_recv_msg_by(fd, &body, NULL, NULL, 16u << 20, end_ns);
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

int ltr_client_op(const char *session, const char *op, const char *path, const char *text, bool force,
                  ltr_kvlist *resp, ltr_error *err)
{
    ltr_bytes req = {0};
    ltr_bytes_put_kv(&req, "op", op);
    if (path)
        ltr_bytes_put_kv(&req, "path", path);
    if (text)
        ltr_bytes_put_kv(&req, "text", text);
    if (force)
        ltr_bytes_put_kv(&req, "force", "1");
    ltr_kvlist local = {0};
    if (!resp)
        resp = &local;
    memset(resp, 0, sizeof *resp);
    int rc = req.failed ? ltr_fail(err, ENOMEM, "out of memory") : ltr_client_request(session, &req, resp, err);
    ltr_bytes_free(&req);
    ltr_kvlist_free(&local);
    return rc;
}

int ltr_client_save_keeping(const char *session, const char *path, char *kept, size_t size, ltr_error *err)
{
    ltr_bytes req = {0};
    ltr_bytes_put_kv(&req, "op", "save");
    ltr_bytes_put_kv(&req, "path", path);
    ltr_bytes_put_kv(&req, "keep", "1");
    ltr_kvlist resp = {0};
    int rc = req.failed ? ltr_fail(err, ENOMEM, "out of memory") : ltr_client_request(session, &req, &resp, err);
    if (size)
        kept[0] = 0;
    if (rc == -EEXIST && !ltr_kvlist_get(&resp, "kept", kept, size) && size)
        kept[0] = 0; /* an older recorder, or a name taken before it wrote: nothing left */
    ltr_bytes_free(&req);
    ltr_kvlist_free(&resp);
    return rc;
}

static uint64_t kv_u64(const ltr_kvlist *kv, const char *key)
{
    char buf[32];
    return ltr_kvlist_get(kv, key, buf, sizeof buf) ? strtoull(buf, NULL, 10) : 0;
}

int ltr_client_flush(const char *session, ltr_flush_result *out, ltr_error *err)
{
    memset(out, 0, sizeof *out);
    if (ltr_session_name_check(session, err))
        return -err->code;
    ltr_kvlist resp = {0};
    int rc = ltr_client_op(session, "flush", NULL, NULL, false, &resp, err);
    if (!rc) {
        ltr_kvlist_get(&resp, "output", out->output, sizeof out->output);
        out->file_size = kv_u64(&resp, "file_size");
        out->dropped = kv_u64(&resp, "dropped");
        out->held = kv_u64(&resp, "held");
        ltr_kvlist_get(&resp, "write_error", out->write_error, sizeof out->write_error);
        out->full = kv_u64(&resp, "full") == 1;
    }
    ltr_kvlist_free(&resp);
    return rc;
}

int ltr_client_capture_state(const char *session, ltr_capture_result *out, ltr_error *err)
{
    memset(out, 0, sizeof *out);
    if (ltr_session_name_check(session, err))
        return -err->code;
    ltr_kvlist resp = {0};
    int rc = ltr_client_op(session, "capturestate", NULL, NULL, false, &resp, err);
    if (!rc) {
        out->system = kv_u64(&resp, "system") == 1;
        out->processes = kv_u64(&resp, "processes");
        out->threads = kv_u64(&resp, "threads");
        out->modules = kv_u64(&resp, "modules");
        out->producers = kv_u64(&resp, "producers");
        out->metadata_bytes = kv_u64(&resp, "metadata_bytes");
        out->named_threads = kv_u64(&resp, "named_threads");
    }
    ltr_kvlist_free(&resp);
    return rc;
}

const char *ltr_client_reply_log(const ltr_kvlist *resp, char *buf, size_t size)
{
    return ltr_kvlist_get(resp, "log", buf, size);
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
    ltr_client_reap(reg);
    int n = 0;
    for (unsigned s = 0; s < LTR_MAX_SESSIONS && n < max; s++)
        if (atomic_load(&reg->sessions[s].incarnation) && ltr_reg_session_name(&reg->sessions[s], names[n]))
            n++; /* a name that is none was cleared by the reap, or written since: no session */
    ltr_registry_unlock();
    return n;
}

static void kv_str(const ltr_kvlist *kv, const char *key, char *buf, size_t size)
{
    if (!ltr_kvlist_get(kv, key, buf, size))
        buf[0] = 0;
}

static void collector_parse(const ltr_kvlist *kv, unsigned c, ltr_collector_status *cs, uint64_t now_ns,
                            uint64_t uptime_ns)
{
    char key[64];
#define COL(field) (snprintf(key, sizeof key, "collector.%u." #field, c), kv_u64(kv, key))
    snprintf(key, sizeof key, "collector.%u.name", c);
    kv_str(kv, key, cs->name, sizeof cs->name);
    cs->buffer_size = COL(buffer_size);
    cs->buffers = COL(buffers);
    cs->buffers_free = COL(buffers_free);
    cs->events_recorded = COL(events_recorded);
    cs->events_lost = COL(events_lost);
    cs->events_overwritten = COL(events_overwritten);
    cs->buffers_lost = COL(buffers_lost);
    cs->shm_damage = COL(shm_damage);
    uint64_t oldest = COL(oldest_ns);
    cs->reach_ns = oldest && oldest <= now_ns ? now_ns - oldest : uptime_ns;
#undef COL
}

/* "12,345" into pids. */
static unsigned pid_list(const ltr_kvlist *kv, const char *key, uint32_t *pids)
{
    char text[LTR_STATUS_PIDS * 12 + 1];
    unsigned n = 0;
    if (!ltr_kvlist_get(kv, key, text, sizeof text))
        return 0;
    for (char *p = text; *p && n < LTR_STATUS_PIDS;) {
        char *end;
        unsigned long v = strtoul(p, &end, 10);
        if (end == p)
            break;
        pids[n++] = (uint32_t)v;
        p = *end == ',' ? end + 1 : end;
    }
    return n;
}

void ltr_session_status_parse(const ltr_kvlist *kv, ltr_session_status *st)
{
    memset(st, 0, sizeof *st);
    kv_str(kv, "name", st->name, sizeof st->name);
    kv_str(kv, "mode", st->mode, sizeof st->mode);
    st->file_mode = !strcmp(st->mode, "file");
    st->pid = kv_u64(kv, "pid");
    st->uptime_ns = kv_u64(kv, "uptime_ns");
    st->processes = kv_u64(kv, "processes");
    st->untraced = kv_u64(kv, "untraced");
    st->metadata_lost = kv_u64(kv, "metadata_lost");
    st->metadata_kept = kv_u64(kv, "metadata_kept");
    st->metadata_dropped = kv_u64(kv, "metadata_dropped");
    if (!ltr_kvlist_get(kv, "untraced_why", st->untraced_why, sizeof st->untraced_why))
        snprintf(st->untraced_why, sizeof st->untraced_why, "not among its --pid or names");
    kv_str(kv, "profiles", st->profiles, sizeof st->profiles);
    kv_str(kv, "names", st->names, sizeof st->names);
    st->has_output = ltr_kvlist_get(kv, "output", st->output, sizeof st->output) != NULL;
    st->output_temp = kv_u64(kv, "output_temp") == 1;
    st->file_size = kv_u64(kv, "file_size");
    st->max_file_size = kv_u64(kv, "max_file_size");
    kv_str(kv, "write_error", st->write_error, sizeof st->write_error);
    uint64_t n = kv_u64(kv, "collectors");
    st->ncollectors = n < LTR_MAX_COLLECTORS ? (unsigned)n : LTR_MAX_COLLECTORS;
    for (unsigned c = 0; c < st->ncollectors; c++)
        collector_parse(kv, c, &st->collectors[c], kv_u64(kv, "now_ns"), st->uptime_ns);
    st->nattached = pid_list(kv, "attached", st->attached);
    st->nwanted = pid_list(kv, "wanted", st->wanted);
    st->njoined = pid_list(kv, "joined", st->joined);
    st->heap = kv_u64(kv, "heap") == 1;
}

int ltr_client_status(const char *session, ltr_session_status *st, ltr_error *err)
{
    ltr_bytes req = {0};
    ltr_bytes_put_kv(&req, "op", "status");
    ltr_kvlist kv;
    int rc = ltr_client_request(session, &req, &kv, err);
    ltr_bytes_free(&req);
    if (!rc)
        ltr_session_status_parse(&kv, st);
    ltr_kvlist_free(&kv);
    return rc;
}

ltr_collector_status ltr_session_status_total(const ltr_session_status *st)
{
    ltr_collector_status t = {0};
    for (unsigned c = 0; c < st->ncollectors; c++) {
        const ltr_collector_status *cs = &st->collectors[c];
        t.buffer_size += cs->buffer_size;
        t.buffers += cs->buffers;
        t.buffers_free += cs->buffers_free;
        t.events_recorded += cs->events_recorded;
        t.events_lost += cs->events_lost;
        t.events_overwritten += cs->events_overwritten;
        t.buffers_lost += cs->buffers_lost;
        t.shm_damage += cs->shm_damage;
    }
    return t;
}

uint64_t ltr_collector_events_kept(const ltr_collector_status *c)
{
    return c->events_recorded > c->events_overwritten ? c->events_recorded - c->events_overwritten : 0;
}

uint64_t ltr_collector_events_emitted(const ltr_collector_status *c)
{
    return c->events_recorded + c->events_lost;
}
