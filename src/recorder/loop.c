/*
 * recorder/loop.c — the recorder's one thread: a poll loop over the control
 * socket, the producers' connections (a closed one means the process is
 * gone), the wake-up eventfd and signals; and the control requests.
 */
#include "recorder/internal.h"
#include "event/event.h"
#include "prim/prim.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define FLUSH_INTERVAL_NS 1000000000ull /* file mode: partial buffers reach the file */
#define STOP_GRACE_US 20000              /* writers already past the state check finish */

void rec_log(const char *fmt, ...)
{
    char when[32];
    time_t now = time(NULL);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", localtime(&now));
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s recorder[%d]: ", when, (int)getpid());
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* ---- replies --------------------------------------------------------------- */

static void reply(int fd, ltr_bytes *kv, const int *fds, int nfds)
{
    if (!kv->failed)
        ltr_send_msg(fd, kv->data, kv->len, fds, nfds);
}

static void reply_error(int fd, const ltr_error *err)
{
    ltr_bytes kv = {0};
    char code[16];
    snprintf(code, sizeof code, "%d", err->code);
    ltr_bytes_put_kv(&kv, "ok", "0");
    ltr_bytes_put_kv(&kv, "errno", code);
    ltr_bytes_put_kv(&kv, "error", err->msg);
    reply(fd, &kv, NULL, 0);
    ltr_bytes_free(&kv);
}

static void reply_ok(int fd)
{
    ltr_bytes kv = {0};
    ltr_bytes_put_kv(&kv, "ok", "1");
    reply(fd, &kv, NULL, 0);
    ltr_bytes_free(&kv);
}

static void put_u64(ltr_bytes *kv, const char *key, uint64_t v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
    ltr_bytes_put_kv(kv, key, buf);
}

/* ---- requests -------------------------------------------------------------- */

/* The collectors a process may not write into: those limited to listed pids,
 * when it is not one of them. */
static uint32_t collectors_denied(const ltr_session_config *cfg, pid_t pid, const char *wants)
{
    if (cfg->exclusive && strcmp(wants, cfg->name) != 0)
        return UINT32_MAX; /* not one of the processes launched for this session */
    if (!cfg->npids)
        return 0;
    for (unsigned i = 0; i < cfg->npids; i++)
        if (cfg->pids[i] == (uint32_t)pid)
            return 0;
    return cfg->pid_collectors;
}

static bool handle_attach(recorder *r, int fd, const uint8_t *req, size_t len)
{
    char pidtext[16];
    pid_t pid = ltr_kv_find(req, len, "pid", pidtext, sizeof pidtext) ? atoi(pidtext) : 0;
    if (r->nconns == r->conns_cap) {
        unsigned cap = r->conns_cap ? r->conns_cap * 2 : 16;
        producer_conn *n = realloc(r->conns, sizeof *n * cap);
        if (!n)
            return false;
        r->conns = n;
        r->conns_cap = cap;
    }
    producer_conn *pc = &r->conns[r->nconns++];
    pc->fd = fd;
    pc->pid = pid;
    pc->owner = r->next_owner++;
    rec_add_process(r, pid, &pc->proc_slot);
    ltr_bytes kv = {0};
    ltr_bytes_put_kv(&kv, "ok", "1");
    put_u64(&kv, "incarnation", r->incarnation);
    put_u64(&kv, "size", r->shm_size);
    put_u64(&kv, "owner", pc->owner);
    put_u64(&kv, "proc", pc->proc_slot);
    char wants[LTR_SESSION_NAME_MAX];
    if (!ltr_kv_find(req, len, "session", wants, sizeof wants))
        wants[0] = 0;
    put_u64(&kv, "deny", collectors_denied(&r->cfg, pid, wants));
    int fds[2] = {r->memfd, r->wakefd};
    reply(fd, &kv, fds, 2);
    ltr_bytes_free(&kv);
    return true;
}

static void handle_status(recorder *r, int fd)
{
    ltr_bytes kv = {0};
    ltr_bytes_put_kv(&kv, "ok", "1");
    ltr_bytes_put_kv(&kv, "name", r->cfg.name);
    ltr_bytes_put_kv(&kv, "mode", r->cfg.mode == LTR_MODE_FILE ? "file" : "memory");
    put_u64(&kv, "pid", (uint64_t)getpid());
    put_u64(&kv, "uptime_ns", ltr_now_ns() - r->start_ns);
    put_u64(&kv, "processes", r->nconns);
    ltr_bytes_put_kv(&kv, "profiles", r->cfg.profiles);
    if (r->cfg.mode == LTR_MODE_FILE) {
        ltr_bytes_put_kv(&kv, "output", r->cfg.output);
        put_u64(&kv, "file_size", ltr_writer_size(r->writer));
        put_u64(&kv, "max_file_size", r->cfg.max_file_size);
        if (r->write_err.code)
            ltr_bytes_put_kv(&kv, "write_error", r->write_err.msg);
    }
    put_u64(&kv, "collectors", r->cfg.ncollectors);
    for (unsigned c = 0; c < r->cfg.ncollectors; c++) {
        collector_state *cs = &r->col[c];
        char key[64];
#define COL(field, value) (snprintf(key, sizeof key, "collector.%u." field, c), put_u64(&kv, key, (value)))
        snprintf(key, sizeof key, "collector.%u.name", c);
        ltr_bytes_put_kv(&kv, key, r->cfg.collectors[c].name);
        COL("buffer_size", cs->ring->buffer_size);
        COL("buffers", cs->ring->nbuf);
        COL("buffers_free", atomic_load(&cs->ring->free_count));
        COL("events_recorded", rec_events_recorded(r, c));
        COL("events_lost", rec_events_lost(r, c));
        COL("events_overwritten", atomic_load(&cs->ring->events_overwritten));
        COL("buffers_lost", cs->buffers_lost);
#undef COL
    }
    reply(fd, &kv, NULL, 0);
    ltr_bytes_free(&kv);
}

/* Moves the finished file-mode trace to where `stop` asked for it. */
static int move_output(const char *from, const char *to, ltr_error *err)
{
    if (!strcmp(from, to) || rename(from, to) == 0)
        return 0;
    if (errno != EXDEV)
        return ltr_fail(err, errno, "cannot move the trace %s to %s: %s", from, to, strerror(errno));
    int in = open(from, O_RDONLY | O_CLOEXEC);
    int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int rc = in < 0 || out < 0 ? -errno : 0;
    char buf[1 << 16];
    ssize_t n;
    while (!rc && (n = read(in, buf, sizeof buf)) > 0)
        rc = ltr_write_all(out, buf, (size_t)n);
    if (in >= 0)
        close(in);
    if (out >= 0 && close(out) != 0 && !rc)
        rc = -errno;
    if (rc) {
        unlink(to);
        return ltr_fail(err, -rc, "cannot copy the trace %s to %s: %s (it stays at %s)", from, to,
                        strerror(-rc), from);
    }
    unlink(from);
    return 0;
}

/* Events the writer could not write, over all collectors. */
static uint64_t dropped(const recorder *r)
{
    uint64_t n = 0;
    for (unsigned c = 0; c < r->cfg.ncollectors; c++)
        n += r->col[c].events_dropped;
    return n;
}

/* A stop or save that failed leaves the recording as it was: the user is told
 * so, and how to end it. */
static void reply_still_running(int fd, ltr_error *err)
{
    ltr_error e = *err;
    ltr_fail(&e, err->code, "%s; the session is still running: stop it again with a writable path, "
                            "or 'ltr cancel'", err->msg);
    reply_error(fd, &e);
}

/* Can the trace go to path? A stop whose file cannot be written must not end
 * the session first: its recording would be gone. */
static int can_write_to(const char *path, ltr_error *err)
{
    char dir[4200];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *(slash == dir ? slash + 1 : slash) = 0;
    if (access(slash ? dir : ".", W_OK | X_OK) != 0)
        return ltr_fail(err, errno, "cannot write %s: %s", path, strerror(errno));
    return 0;
}

static void handle_stop(recorder *r, int fd, const char *path, const char *description)
{
    ltr_error err = {0};
    int rc = can_write_to(path, &err);
    /* Memory mode saves before it ends anything: a save that fails (a full
     * disk) keeps the buffers and the session. */
    if (!rc && r->cfg.mode == LTR_MODE_MEMORY)
        rc = rec_save(r, path, description, &err);
    if (rc) {
        reply_still_running(fd, &err);
        return;
    }
    rec_unpublish(r);
    if (r->cfg.mode == LTR_MODE_FILE) {
        usleep(STOP_GRACE_US);
        rc = rec_finish_file(r, description, &err);
        ltr_writer_close(r->writer);
        r->writer = NULL;
        ltr_error why = err;
        if (rc)
            ltr_fail(&err, why.code, "%s: the trace is incomplete, %llu events could not be written to it; "
                     "what was written stays in %s", why.msg, (unsigned long long)dropped(r), r->cfg.output);
        else
            rc = move_output(r->cfg.output, path, &err);
        if (!rc && r->write_err.code)
            rc = ltr_fail(&err, r->write_err.code, "the trace %s is complete but lacks %llu events that could "
                          "not be written to it: %s", path, (unsigned long long)dropped(r), r->write_err.msg);
    }
    if (rc) {
        reply_error(fd, &err);
        r->exit_status = 1;
    } else {
        reply_ok(fd);
    }
    r->done = true;
}

static void handle_cancel(recorder *r, int fd)
{
    rec_unpublish(r);
    if (r->cfg.mode == LTR_MODE_FILE) {
        ltr_writer_close(r->writer);
        r->writer = NULL;
        unlink(r->cfg.output);
    }
    reply_ok(fd);
    r->done = true;
}

static void handle_marker(recorder *r, int fd, const char *text)
{
    const ltr_value v[] = {LTR_STR(text)};
    int rc = ltr_event_write_to(r->slot, 0, &ltr_marker_event, v, 1);
    if (rc == 0)
        ltr_flush_thread(); /* so that it is in the next flush or save */
    ltr_error err;
    if (rc)
        ltr_fail(&err, -rc, "the marker could not be written (%s)", strerror(-rc));
    if (rc)
        reply_error(fd, &err);
    else
        reply_ok(fd);
}

/* Handles one request; returns true if fd now belongs to a producer. */
static bool handle_request(recorder *r, int fd, const uint8_t *req, size_t len)
{
    char op[32], path[4200], text[8192];
    ltr_error err;
    if (!ltr_kv_find(req, len, "op", op, sizeof op))
        op[0] = 0;
    const char *p = ltr_kv_find(req, len, "path", path, sizeof path);
    const char *t = ltr_kv_find(req, len, "text", text, sizeof text);
    if (!strcmp(op, "attach"))
        return handle_attach(r, fd, req, len);
    if (!strcmp(op, "status")) {
        handle_status(r, fd);
    } else if (!strcmp(op, "save") && p) {
        if (r->cfg.mode != LTR_MODE_MEMORY) {
            ltr_fail(&err, EINVAL, "session '%s' is in file mode: its trace is written as it goes; "
                                   "'ltr stop FILE' ends it", r->cfg.name);
            reply_error(fd, &err);
        } else if (rec_save(r, p, t, &err) != 0) {
            reply_still_running(fd, &err);
        } else {
            reply_ok(fd);
        }
    } else if (!strcmp(op, "stop") && p) {
        handle_stop(r, fd, p, t);
    } else if (!strcmp(op, "cancel")) {
        handle_cancel(r, fd);
    } else if (!strcmp(op, "marker") && t) {
        handle_marker(r, fd, t);
    } else {
        ltr_fail(&err, EPROTO, "unknown request '%s'", op);
        reply_error(fd, &err);
    }
    return false;
}

static void accept_one(recorder *r)
{
    int fd = accept4(r->listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0)
        return;
    /* A client that connects and says nothing must not stall the session for
     * long; a slow one (a loaded machine) must still be served. */
    struct timeval tv = {.tv_sec = 10};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    uint8_t *req = NULL;
    ssize_t n = ltr_recv_msg(fd, &req, NULL, NULL, 1u << 20);
    bool kept = n >= 0 && handle_request(r, fd, req, (size_t)n);
    free(req);
    if (!kept)
        close(fd);
}

static void producer_gone(recorder *r, unsigned i)
{
    rec_harvest_owner(r, r->conns[i].owner);
    close(r->conns[i].fd);
    r->conns[i] = r->conns[--r->nconns];
}

static void on_signal(recorder *r)
{
    struct signalfd_siginfo si;
    if (read(r->signal_fd, &si, sizeof si) != sizeof si)
        return;
    rec_log("signal %u: ending the session", si.ssi_signo);
    rec_unpublish(r);
    usleep(STOP_GRACE_US);
    if (r->cfg.mode == LTR_MODE_FILE) {
        ltr_error err;
        if (rec_finish_file(r, "ended by a signal", &err) == 0)
            rec_log("trace left at %s", r->cfg.output);
    }
    r->done = true;
}

static void run_loop(recorder *r)
{
    uint64_t last_flush = ltr_now_ns();
    while (!r->done) {
        unsigned n = 3 + r->nconns;
        struct pollfd pfd[n];
        pfd[0] = (struct pollfd){.fd = r->listen_fd, .events = POLLIN};
        pfd[1] = (struct pollfd){.fd = r->wakefd, .events = POLLIN};
        pfd[2] = (struct pollfd){.fd = r->signal_fd, .events = POLLIN};
        for (unsigned i = 0; i < r->nconns; i++)
            pfd[3 + i] = (struct pollfd){.fd = r->conns[i].fd, .events = POLLIN};
        int ready = poll(pfd, n, 50);
        if (ready < 0 && errno != EINTR)
            break;
        uint64_t junk;
        if (ready > 0 && (pfd[1].revents & POLLIN) && read(r->wakefd, &junk, sizeof junk) < 0) {
            /* nothing: the counter was reset by another read */
        }
        uint64_t now = ltr_now_ns();
        bool flush = now - last_flush >= FLUSH_INTERVAL_NS;
        rec_drain(r, flush);
        if (flush)
            last_flush = now;
        /* Producers first: a process that ended before a stop has its buffers in. */
        for (unsigned i = r->nconns; ready > 0 && i-- > 0;)
            if (pfd[3 + i].revents & (POLLIN | POLLHUP | POLLERR))
                producer_gone(r, i);
        if (ready > 0 && (pfd[2].revents & POLLIN))
            on_signal(r);
        if (!r->done && ready > 0 && (pfd[0].revents & POLLIN))
            accept_one(r);
    }
}

static void redirect_log(const ltr_session_config *cfg)
{
    char dir[4096], path[4300];
    ltr_error err;
    int fd = -1;
    if (ltr_runtime_dir(dir, sizeof dir, &err) == 0) {
        snprintf(path, sizeof path, "%s/%s.log", dir, cfg->name);
        fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    }
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    dup2(null, 0);
    dup2(null, 1);
    dup2(fd >= 0 ? fd : null, 2);
    if (fd >= 0)
        close(fd);
    close(null);
}

int ltr_recorder_run(const ltr_session_config *cfg, int ready_fd)
{
    static recorder r; /* big: keep it off the stack */
    ltr_error err = {0};
    redirect_log(cfg);
    int rc = rec_setup(&r, cfg, &err);
    char msg[sizeof err.msg + 16];
    if (rc)
        snprintf(msg, sizeof msg, "%d %s", err.code ? err.code : EIO, err.msg);
    else
        snprintf(msg, sizeof msg, "OK");
    if (ltr_write_all(ready_fd, msg, strlen(msg)) != 0) {
        /* `ltr start` is gone: go on; the session is there for status/stop. */
    }
    close(ready_fd);
    if (rc) {
        rec_unpublish(&r);
        rec_teardown(&r);
        return 1;
    }
    rec_log("session '%s' started (%s mode)", cfg->name, cfg->mode == LTR_MODE_FILE ? "file" : "memory");
    run_loop(&r);
    rec_unpublish(&r);
    rec_teardown(&r);
    rec_log("session '%s' ended", cfg->name);
    return r.exit_status;
}
