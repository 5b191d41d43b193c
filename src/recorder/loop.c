/*
 * recorder/loop.c — the recorder's one thread: a poll loop over the control
 * socket, the producers' connections (a closed one means the process is
 * gone), the wake-up eventfd and signals; and the control requests.
 */
#include "recorder/internal.h"
#include "byname/byname.h"
#include "recorder/client.h" /* LTR_STATUS_PIDS */
#include "recorder/heaprun.h" /* ltr_session_traces_heap */
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
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define FLUSH_INTERVAL_NS 1000000000ull /* file mode: partial buffers reach the file */
#define STOP_GRACE_US 20000              /* writers already past the state check finish */

/* The recorder's log (its stderr), RUNTIME/NAME.log. One created by this
 * recorder is removed at a clean end unless a problem was logged: a log per
 * `ltr record` would otherwise pile up. */
static struct {
    int dirfd;
    char name[LTR_SESSION_NAME_MAX + 8];
    bool created;
    unsigned problems;
} logfile = {.dirfd = -1};

static void log_line(const char *fmt, va_list ap)
{
    char when[32];
    time_t now = time(NULL);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", localtime(&now));
    fprintf(stderr, "%s recorder[%d]: ", when, (int)getpid());
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

void rec_log(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_line(fmt, ap);
    va_end(ap);
    logfile.problems++;
}

void rec_note(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_line(fmt, ap);
    va_end(ap);
}

const char *rec_log_name(void)
{
    return logfile.dirfd >= 0 ? logfile.name : NULL;
}

/* Names the log in a reply when it is kept: something went wrong. */
static void put_log(ltr_bytes *kv)
{
    char dir[4096], path[4200];
    if (logfile.problems && logfile.dirfd >= 0 && ltr_runtime_dir(dir, sizeof dir, NULL) == 0) {
        snprintf(path, sizeof path, "%s/%s", dir, logfile.name);
        ltr_bytes_put_kv(kv, "log", path);
    }
}

/* ---- replies --------------------------------------------------------------- */

/* fd -1: the recorder acts on its own (its controller is gone), no one to answer. */
static void reply(int fd, ltr_bytes *kv, const int *fds, int nfds)
{
    if (!kv->failed && fd >= 0)
        ltr_send_msg(fd, kv->data, kv->len, fds, nfds);
}

/* key, value (NULL: none): "kept", a save's finished temporary left for the
 * client to name; "written", a stop's trace written whole but lacking events
 * (the client adds no names to it, and says so). */
static void reply_failure(int fd, const ltr_error *err, const char *key, const char *value)
{
    ltr_bytes kv = {0};
    char code[16];
    snprintf(code, sizeof code, "%d", err->code);
    ltr_bytes_put_kv(&kv, "ok", "0");
    ltr_bytes_put_kv(&kv, "errno", code);
    ltr_bytes_put_kv(&kv, "error", err->msg);
    if (key && value)
        ltr_bytes_put_kv(&kv, key, value);
    put_log(&kv);
    reply(fd, &kv, NULL, 0);
    ltr_bytes_free(&kv);
}

static void reply_error(int fd, const ltr_error *err)
{
    reply_failure(fd, err, NULL, NULL);
}

static void reply_ok(int fd)
{
    ltr_bytes kv = {0};
    ltr_bytes_put_kv(&kv, "ok", "1");
    put_log(&kv);
    reply(fd, &kv, NULL, 0);
    ltr_bytes_free(&kv);
}

static void put_u64(ltr_bytes *kv, const char *key, uint64_t v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
    ltr_bytes_put_kv(kv, key, buf);
}

/* A stop's answer: with the events its trace's counters tell, so that
 * `ltr record` says what the trace holds ('ltr status' asked before the stop
 * missed what an attached process allocated until it: '10451 heap events'
 * of a trace of 10452), without reading the trace again. */
static void reply_stopped(const recorder *r, int fd)
{
    ltr_bytes kv = {0};
    ltr_bytes_put_kv(&kv, "ok", "1");
    put_u64(&kv, "events_written", r->counted_written);
    put_u64(&kv, "events_lost", r->counted_lost);
    put_u64(&kv, "events_overwritten", r->counted_overwritten);
    put_u64(&kv, "events_unattached", r->counted_unattached);
    put_u64(&kv, "events_unwritten", r->counted_unwritten);
    put_u64(&kv, "attaches_refused", r->attaches_refused);
    put_u64(&kv, "attaches_pidless", r->attaches_pidless);
    if (r->output_was_taken)
        ltr_bytes_put_kv(&kv, "output_taken", "1");
    put_log(&kv);
    reply(fd, &kv, NULL, 0);
    ltr_bytes_free(&kv);
}

/* ---- requests -------------------------------------------------------------- */

/* The kernel's word for the pid of the process at the other end of fd
 * (SO_PEERCRED), not what it sent: 0 if it cannot be had. */
static pid_t peer_pid(int fd)
{
    struct ucred cred;
    socklen_t len = sizeof cred;
    return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.pid > 0 ? cred.pid : 0;
}

/* Is process pid one of the names the session enables? Its executable is
 * read from /proc. */
static bool named(const ltr_session_config *cfg, pid_t pid)
{
    char exe[LTR_BYNAME_NAME_MAX + 1];
    if (!cfg->nnames || ltr_exe_name(pid, exe, sizeof exe) != 0)
        return false;
    for (unsigned i = 0; i < cfg->nnames; i++)
        if (!strcmp(cfg->names[i], exe))
            return true;
    return false;
}

/* Is process pid one the session names by --pid: that pid, and the same
 * process (its start time), not another that got the pid since. */
static bool listed(const recorder *r, uint32_t pid)
{
    for (unsigned i = 0; i < r->cfg.npids; i++)
        if (r->cfg.pids[i] == pid)
            return !r->pid_start[i] || ltr_proc_start_time(pid) == r->pid_start[i];
    return false;
}

/* A traced connection of pid: a --pid it is has joined (pid_joined). */
static void note_joined(recorder *r, uint32_t pid)
{
    for (unsigned i = 0; i < r->cfg.npids; i++)
        if (r->cfg.pids[i] == pid && listed(r, pid))
            r->pid_joined[i] = true;
}

/* Was process pid forked from a listed one (a prefork server's workers,
 * for a session that names the server)? It holds the agent its parent got
 * by an attach, and nothing else would trace it: 'ltr record --pid' listed
 * such children with no event. Up the chain of parents a few steps (a
 * worker's own helper); a parent gone is no longer told. */
#define ANCESTORS_ASKED 8
static bool forked_from_listed(const recorder *r, pid_t pid)
{
    uint32_t p = (uint32_t)pid;
    for (int up = 0; r->cfg.npids && up < ANCESTORS_ASKED && (p = ltr_proc_ppid(p)) > 1; up++)
        if (listed(r, p))
            return true;
    return false;
}

/* The collectors a process may not write into: those limited to listed pids
 * and names, when it is none of them. A session that lists none takes any
 * process with the agent, but for one that got it by an attach (injected):
 * an agent stays in a process once attached, and a service attached to once
 * joined every heap session started after, unrelated ones too (a review's
 * `ltr start heap` for a sqlite3 run recorded a node service, whose name the
 * pprof export then gave the profile). Such a process is traced by a
 * session that names it. The process is told by the kernel's pid for it
 * (fd's peer), not by the one it sent (claimed), which serves only where the
 * kernel does not say (a process in another pid namespace sends its own). */
static uint32_t collectors_denied(const recorder *r, pid_t claimed, int fd, const char *wants, bool injected)
{
    const ltr_session_config *cfg = &r->cfg;
    if (cfg->exclusive && strcmp(wants, cfg->name) != 0)
        return UINT32_MAX; /* not one of the processes launched for this session */
    if (!cfg->npids && !cfg->nnames)
        return injected ? cfg->pid_collectors : 0;
    pid_t pid = peer_pid(fd);
    /* The recorder's own connection (the system provider's thread) writes
     * the targets' memory counters and CPU samples, not events of its own:
     * the pids and names do not limit it. ltr watch limits every collector,
     * the system one too, to the target, and the trigger's trace lost the
     * target's memory counters (0 Ltr.System events, none said lost). By
     * the kernel's pid: a claim of ours from another process is refused
     * before (claim_is_peer). */
    if (pid && pid == getpid())
        return 0;
    pid = pid ? pid : claimed;
    return listed(r, (uint32_t)pid) || named(cfg, pid) || forked_from_listed(r, pid) ? 0 : cfg->pid_collectors;
}

/* A traced connection of the same process image (pid and image token) that
 * the session described already: a program writing its own events through
 * libltr-provider under the heap agent attaches twice, and a second PROCESS
 * record was taken for an exec (the analysis said an exec replaced the
 * program, and the stacks of the first image's nodes were lost to it: a
 * review's both.c, all 12 stacks "(no stack recorded)"). A traced exec's
 * new image has a token of its own. */
static const producer_conn *described_image(const recorder *r, pid_t pid, uint64_t token)
{
    for (unsigned k = 0; token && k < r->nconns; k++)
        if (r->conns[k].pid == pid && r->conns[k].image == token && r->conns[k].start_ts)
            return &r->conns[k];
    return NULL;
}

/* Whether the pid an attach claims is its process's: the kernel's pid of
 * the peer (SO_PEERCRED), or that process's pid in its own namespace (the
 * last of /proc/PEER/status's NSpid: a container's agent sends getpid()).
 * A producer that lies is refused. Where the kernel cannot tell, the claim
 * names the PROCESS record, the process's end and the memory-mode pruning
 * of its records: a producer claiming another traced process's pid
 * had the recorder write a second PROCESS record for it (every stack of the
 * victim read "(no stack recorded)", the trace saying no damage), and held
 * its end back for as long as the forged connection stayed open (the victim
 * "replaced by an exec" after it exited). True when it cannot be told (no
 * peer pid: another pid namespace that does not see the peer). */
static bool claim_is_peer(int fd, pid_t claimed)
{
    pid_t kp = peer_pid(fd);
    return !kp || kp == claimed || (claimed > 0 && ltr_proc_own_pid((uint32_t)kp) == (uint32_t)claimed);
}

/* Whether the process asking is still there and is the pid it claims
 * (*claimed): an attach to refuse otherwise. */
static bool attach_genuine(recorder *r, int fd, const uint8_t *req, size_t len, pid_t *claimed)
{
    /* A producer that waited too long (this recorder was stopped) may have
     * gone since it asked: its closed connection is not a process to add. */
    struct pollfd gone = {.fd = fd, .events = POLLRDHUP};
    if (poll(&gone, 1, 0) > 0 && (gone.revents & (POLLRDHUP | POLLHUP | POLLERR)))
        return false;
    char pidtext[16];
    *claimed = ltr_kv_find(req, len, "pid", pidtext, sizeof pidtext) ? atoi(pidtext) : 0;
    if (claim_is_peer(fd, *claimed))
        return true;
    rec_log("an attach claimed pid %d, which is not its process's (%d): refused%s", (int)*claimed,
            (int)peer_pid(fd), *claimed <= 0 ? " (its getpid() failed: a seccomp filter denying it?)" : "");
    r->attaches_refused++;
    r->attaches_pidless += *claimed <= 0;
    return false;
}

/* The answer to an attach: where the session's memory is, the process's
 * owner and slot, what it may not write, and the pid it writes. */
static void reply_attached(const recorder *r, int fd, const producer_conn *pc, uint32_t denied)
{
    ltr_bytes kv = {0};
    ltr_bytes_put_kv(&kv, "ok", "1");
    put_u64(&kv, "incarnation", r->incarnation);
    put_u64(&kv, "size", r->shm_size);
    put_u64(&kv, "owner", pc->owner);
    put_u64(&kv, "proc", pc->proc_slot);
    put_u64(&kv, "deny", denied);
    put_u64(&kv, "trace_pid", (uint64_t)pc->pid);
    int fds[2] = {r->memfd, r->wakefd};
    reply(fd, &kv, fds, 2);
    ltr_bytes_free(&kv);
}

static bool handle_attach(recorder *r, int fd, const uint8_t *req, size_t len)
{
    pid_t claimed;
    if (!attach_genuine(r, fd, req, len, &claimed))
        return false;
    /* The pid the process is to write in this session's trace: ours for it
     * (what ps and --pid say here), not its own namespace's, in which two
     * containers' pid 1 traced at once were one process with two heaps
     * (hRev25). Its own only where we do not see it (it is in a namespace
     * above ours). Sent back: it writes this one (trace_pid). */
    pid_t kp = peer_pid(fd), pid = kp > 0 ? kp : claimed;
    if (r->nconns == r->conns_cap) {
        unsigned cap = r->conns_cap ? r->conns_cap * 2 : 16;
        producer_conn *n = realloc(r->conns, sizeof *n * cap);
        if (!n)
            return false;
        r->conns = n;
        r->conns_cap = cap;
    }
    char wants[LTR_SESSION_NAME_MAX];
    if (!ltr_kv_find(req, len, "session", wants, sizeof wants))
        wants[0] = 0;
    char flag[4];
    bool injected = ltr_kv_find(req, len, "injected", flag, sizeof flag) && !strcmp(flag, "1");
    uint32_t denied = collectors_denied(r, claimed, fd, wants, injected), all = (1u << r->cfg.ncollectors) - 1;
    char image[24];
    uint64_t token = ltr_kv_find(req, len, "image", image, sizeof image) ? strtoull(image, NULL, 10) : 0;
    const producer_conn *same = described_image(r, pid, token);
    producer_conn *pc = &r->conns[r->nconns++];
    pc->fd = fd;
    pc->pid = pid;
    pc->owner = r->next_owner++;
    pc->image = token;
    pc->traced = (denied & all) != all;
    if (pc->traced)
        note_joined(r, pid);
    rec_add_process(r, pid, pc->owner, pc->traced && !same, &pc->proc_slot, &pc->start_ts);
    pc->describer = pc->owner;
    pc->pidfd = kp > 0 ? (int)syscall(SYS_pidfd_open, kp, 0) : -1; /* close-on-exec, as every pidfd */
    if (same && pc->traced) {
        pc->start_ts = same->start_ts;
        pc->describer = same->describer;
        rec_add_alias(r, pc->owner, pc->describer);
    }
    if (pc->traced)
        ltr_system_add_target(r->system, (uint32_t)pid);
    reply_attached(r, fd, pc, denied);
    return true;
}

/* which processes the session traces, and which --pid it was given (ltr
 * status warns about those not attached); a process the session's --pid or
 * names deny everything joined (any process with the agent joins every heap
 * session) but is not traced: counted apart, not listed (a review took them
 * for traced); the recorder itself, which writes the system provider's
 * events through a connection of its own, is neither (a review read its pid
 * as the --pid's) */
static void status_processes(recorder *r, ltr_bytes *kv)
{
    char list[LTR_STATUS_PIDS * 12 + 1] = "";
    size_t at = 0;
    unsigned traced = 0, listed = 0, own = 0;
    for (unsigned i = 0; i < r->nconns; i++) {
        if (r->conns[i].pid == getpid()) {
            own++;
            continue;
        }
        if (!r->conns[i].traced)
            continue;
        traced++;
        if (listed++ < LTR_STATUS_PIDS)
            at += (size_t)snprintf(list + at, sizeof list - at, "%s%d", at ? "," : "", (int)r->conns[i].pid);
    }
    put_u64(kv, "processes", traced);
    put_u64(kv, "untraced", r->nconns - own - traced);
    ltr_bytes_put_kv(kv, "untraced_why", r->cfg.exclusive ? "not started for this session"
                                         : r->cfg.npids || r->cfg.nnames
                                             ? "not among its --pid or names"
                                             : "given the agent by an attach, they join only sessions "
                                               "that name them (--pid, --name)");
    ltr_bytes_put_kv(kv, "attached", list);
}

/* The session's --pid (all of them, or those that joined) as KEY's list */
static void status_pids(recorder *r, ltr_bytes *kv, const char *key, bool joined_only)
{
    char list[LTR_STATUS_PIDS * 12 + 1] = "";
    size_t at = 0;
    for (unsigned i = 0; i < r->cfg.npids && i < LTR_STATUS_PIDS; i++)
        if (!joined_only || r->pid_joined[i])
            at += (size_t)snprintf(list + at, sizeof list - at, "%s%u", at ? "," : "", r->cfg.pids[i]);
    ltr_bytes_put_kv(kv, key, list);
}

static void status_output(recorder *r, ltr_bytes *kv)
{
    ltr_bytes_put_kv(kv, "output", r->cfg.output);
    if (r->cfg.output_temp) /* a name of ltr's making: `ltr stop` needs a FILE to move it to */
        ltr_bytes_put_kv(kv, "output_temp", "1");
    put_u64(kv, "file_size", ltr_writer_size(r->writer));
    put_u64(kv, "max_file_size", r->cfg.max_file_size);
    if (r->write_err.code)
        ltr_bytes_put_kv(kv, "write_error", r->write_err.msg);
}

static void status_collectors(recorder *r, ltr_bytes *kv)
{
    put_u64(kv, "collectors", r->cfg.ncollectors);
    for (unsigned c = 0; c < r->cfg.ncollectors; c++) {
        collector_state *cs = &r->col[c];
        char key[64];
#define COL(field, value) (snprintf(key, sizeof key, "collector.%u." field, c), put_u64(kv, key, (value)))
        snprintf(key, sizeof key, "collector.%u.name", c);
        ltr_bytes_put_kv(kv, key, r->cfg.collectors[c].name);
        uint32_t nfree = atomic_load(&cs->ring.shared->free_count);
        COL("buffer_size", cs->ring.buffer_size);
        COL("buffers", cs->ring.nbuf);
        COL("buffers_free", nfree < cs->ring.nbuf ? nfree : cs->ring.nbuf);
        COL("events_recorded", rec_events_recorded(r, c));
        COL("events_lost", rec_events_lost(r, c));
        COL("events_overwritten", cs->overwritten.total);
        COL("buffers_lost", cs->buffers_lost);
        COL("shm_damage", rec_shm_damage(r, c));
        COL("oldest_ns", rec_oldest_event_ns(r, c));
#undef COL
    }
}


static void handle_status(recorder *r, int fd)
{
    ltr_bytes kv = {0};
    ltr_bytes_put_kv(&kv, "ok", "1");
    ltr_bytes_put_kv(&kv, "name", r->cfg.name);
    ltr_bytes_put_kv(&kv, "mode", r->cfg.mode == LTR_MODE_FILE ? "file" : "memory");
    put_u64(&kv, "pid", (uint64_t)getpid());
    put_u64(&kv, "uptime_ns", ltr_now_ns() - r->start_ns);
    put_u64(&kv, "now_ns", ltr_now_ns()); /* what the collectors' oldest_ns count from */
    rec_sample_counters(r);
    put_u64(&kv, "metadata_lost", r->meta_lost.total + r->meta_refused);
    if (r->cfg.mode != LTR_MODE_FILE) { /* what every save writes, and what went (kept.c) */
        put_u64(&kv, "metadata_kept", r->meta_kept.len);
        put_u64(&kv, "metadata_dropped", r->meta_kept_dropped);
    }
    status_processes(r, &kv);
    /* the heap provider enabled: --pid processes join by their agent only
     * then; with the system provider alone they are whose counters it
     * records, and 'ltr status' said of a pid allocating all along that it
     * "has not allocated since the session began" */
    if (ltr_session_traces_heap(&r->cfg))
        ltr_bytes_put_kv(&kv, "heap", "1");
    status_pids(r, &kv, "wanted", false);
    status_pids(r, &kv, "joined", true);
    ltr_bytes_put_kv(&kv, "profiles", r->cfg.profiles);
    if (r->cfg.nnames) { /* '/' is in no file name */
        char names[LTR_MAX_SESSION_NAMES * 256] = "";
        size_t at = 0;
        for (unsigned i = 0; i < r->cfg.nnames; i++)
            at += (size_t)snprintf(names + at, sizeof names - at, "%s%s", i ? "/" : "", r->cfg.names[i]);
        ltr_bytes_put_kv(&kv, "names", names);
    }
    if (r->cfg.mode == LTR_MODE_FILE)
        status_output(r, &kv);
    status_collectors(r, &kv);
    reply(fd, &kv, NULL, 0);
    ltr_bytes_free(&kv);
}

/* Copies the trace read from in (at its start; closed here) to a new
 * temporary beside `to` (another filesystem, or a name taken from it); its
 * name on success, in tmp. */
static int copy_beside(int in, const char *to, char *tmp, size_t size)
{
    int out = ltr_temp_name(tmp, size, to) < 0 ? -ENAMETOOLONG : in < 0 ? -EBADF : ltr_create_temp(tmp);
    if (out < 0) {
        if (in >= 0)
            close(in);
        return out;
    }
    int rc = 0;
    char buf[1 << 16];
    ssize_t n;
    while (!rc && (n = read(in, buf, sizeof buf)) > 0)
        rc = ltr_write_all(out, buf, (size_t)n);
    close(in);
    if (close(out) != 0 && !rc)
        rc = -errno;
    if (rc)
        unlink(tmp);
    return rc;
}

/* Moves the finished file-mode trace to where `stop` asked for it, replacing
 * nothing unless forced. */
static int move_output(const char *from, const char *to, bool force, ltr_error *err)
{
    if (!strcmp(from, to))
        return 0;
    int rc = ltr_publish(from, to, force);
    if (rc == -EXDEV) {
        char tmp[4200];
        int in = open(from, O_RDONLY | O_CLOEXEC);
        rc = in < 0 ? -errno : copy_beside(in, to, tmp, sizeof tmp);
        if (rc)
            return ltr_fail(err, -rc, "cannot copy the trace %s to %s: %s (it stays at %s)", from, to,
                            strerror(-rc), from);
        rc = ltr_publish(tmp, to, force);
        if (rc)
            unlink(tmp);
        else
            unlink(from);
    }
    if (rc == -EEXIST || rc == -EPERM) { /* a file there, or what --force never replaces */
        if (rc == -EEXIST || ltr_replaceable(to, err) == 0)
            ltr_fail_exists(err, to);
        char why[sizeof err->msg];
        snprintf(why, sizeof why, "%s", err->msg);
        return ltr_fail(err, -rc, "%s; the trace stays at %s", why, from);
    }
    if (rc)
        return ltr_fail(err, -rc, "cannot move the trace %s to %s: %s (it stays at %s)", from, to,
                        strerror(-rc), from);
    return 0;
}

/* Whether the file-mode trace's name no longer names the file the session
 * writes: removed, or another file put there while it recorded ('ltr save
 * --instance other --force' to it). Its stop then moved that other file to
 * the stop's FILE and said "trace written to FILE", the recording lost. */
static bool output_taken(const recorder *r)
{
    struct stat st;
    return r->cfg.mode == LTR_MODE_FILE && r->output_ino &&
           (lstat(r->cfg.output, &st) != 0 || st.st_dev != r->output_dev || st.st_ino != r->output_ino);
}

/* The finished trace of a session whose name was taken (output_taken),
 * written to `to` from its own file, read again through the descriptor the
 * writer still holds (in: /proc/self/fd, opened before the writer closed). */
static int write_out_own(recorder *r, int in, const char *to, bool force, ltr_error *err)
{
    char tmp[4200];
    int rc = copy_beside(in, to, tmp, sizeof tmp);
    if (rc)
        return ltr_fail(err, -rc, "%s no longer names this session's trace (another file took the name, or it "
                        "was removed, while it recorded), and the trace could not be copied to %s: %s",
                        r->cfg.output, to, strerror(-rc));
    rc = ltr_publish(tmp, to, force);
    if (rc) {
        unlink(tmp);
        return rc == -EEXIST ? ltr_fail_exists(err, to)
                             : ltr_fail(err, -rc, "cannot write the trace to %s: %s", to, strerror(-rc));
    }
    rec_log("%s no longer named this session's trace (another file took the name, or it was removed, while it "
            "recorded): the trace was written to %s from the recorder's own descriptor", r->cfg.output, to);
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
 * so, and what to do (a failed save was told to stop again, or cancel). */
static void reply_still_running(int fd, ltr_error *err, bool stopping, const char *kept)
{
    ltr_error e = *err;
    if (stopping)
        ltr_fail(&e, err->code, "%s; the session is still running: stop it again with a writable path, "
                                "or 'ltr cancel'", err->msg);
    else
        ltr_fail(&e, err->code, "%s; the session is still running, as it was: save again to a writable path",
                 err->msg);
    reply_failure(fd, &e, "kept", kept);
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

static void check_orphans(recorder *r);

/* A session of `ltr record` ended by another command's request ('ltr stop'
 * or 'ltr cancel' on the connection fd): ltr record finds it gone when its
 * command ends, and only this note tells it where the trace went (it said
 * "no session named 'record-N' is running"). One line, "0 text" or "1 text"
 * (no trace), sent without waiting: record may be gone. Record's own
 * requests come from the process at the other end of the pair. */
/* Whether the request on fd comes from ltr record, the session's controller. */
static bool from_controller(const recorder *r, int fd)
{
    pid_t theirs = fd >= 0 && r->controller_fd >= 0 ? peer_pid(fd) : 0;
    return theirs && theirs == peer_pid(r->controller_fd);
}

static void note_for_controller(const recorder *r, int fd, bool written, const char *fmt, ...)
{
    if (!r->cfg.stop_output[0] || r->controller_fd < 0 || fd < 0)
        return;
    if (from_controller(r, fd))
        return;
    char text[4600];
    va_list ap;
    va_start(ap, fmt);
    int n = snprintf(text, sizeof text, "%d ", written ? 0 : 1);
    vsnprintf(text + n, sizeof text - (size_t)n - 1, fmt, ap);
    va_end(ap);
    strcat(text, "\n");
    if (send(r->controller_fd, text, strlen(text), MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
        rec_log("the note for ltr record could not be sent: %s", strerror(errno));
}

/* Refused before anything ends: the session goes on (rec_save and
 * move_output refuse again, atomically, if the name is taken meanwhile).
 * *taken: the session's own output name was taken by another file. */
static int stop_refused(recorder *r, const char *path, bool force, bool *taken, ltr_error *err)
{
    int rc = 0;
    if (strcmp(path, r->cfg.output) != 0 && ltr_path_taken(path))
        rc = ltr_replaceable(path, err) != 0 ? -err->code : !force ? ltr_fail_exists(err, path) : 0;
    /* its own name taken by another file: written back there only if forced */
    *taken = output_taken(r);
    if (!rc && *taken && !strcmp(path, r->cfg.output) && !force && ltr_path_taken(path))
        rc = ltr_fail(err, EEXIST, "%s is no longer this session's trace: another file took the name while it "
                      "recorded (not overwritten); stop it into another FILE, the trace goes there whole", path);
    return rc ? rc : can_write_to(path, err);
}

/* Memory mode saves before it ends anything: a save that fails (a full
 * disk) keeps the buffers and the session. Its trace ends where the stop
 * came: producers take no event from then on (and those already past
 * the state check finish). Taking them on during the save, the events
 * committed after its last look at the buffers were in neither the trace
 * nor its counters (a program writing through 'ltr stop': 200 to 411
 * of its events in 3 of 3 stops). */
static int stop_save_memory(recorder *r, const char *path, const char *description, bool force, ltr_error *err)
{
    rec_count_refusals(r);
    rec_take_events(r, false);
    usleep(STOP_GRACE_US);
    char kept[4200];
    int rc = rec_save(r, path, description, force, kept, sizeof kept, err);
    if (rc) {
        rec_take_events(r, true);
        usleep(STOP_GRACE_US); /* writers refused just before count it */
        rec_count_refusals(r);
        rec_log("the stop's save failed, the session goes on: the events its programs emitted while it "
                "was tried are not in it, counted as lost");
    }
    return rc;
}

/* File mode: the trace finished and moved to PATH (or written there from
 * the session's own file, when another file took its name); *lacking: it
 * is whole but without events a write error cost */
static int stop_file(recorder *r, const char *path, const char *description, bool force, bool taken,
                     bool *lacking, ltr_error *err)
{
    usleep(STOP_GRACE_US);
    int rc = rec_finish_file(r, description, err);
    char own[64];
    snprintf(own, sizeof own, "/proc/self/fd/%d", ltr_writer_fd(r->writer));
    int in = !rc && taken ? open(own, O_RDONLY | O_CLOEXEC) : -1;
    ltr_writer_close(r->writer);
    r->writer = NULL;
    ltr_error why = *err;
    if (rc)
        ltr_fail(err, why.code, "%s: the trace is incomplete, %llu events could not be written to it; "
                 "what was written stays in %s", why.msg, (unsigned long long)dropped(r), r->cfg.output);
    else if (taken)
        r->output_was_taken = (rc = write_out_own(r, in, path, force, err)) == 0;
    else
        rc = move_output(r->cfg.output, path, force, err);
    *lacking = !rc && r->write_err.code;
    if (*lacking)
        rc = ltr_fail(err, r->write_err.code, "the trace %s is complete but lacks %llu events that could "
                      "not be written to it: %s", path, (unsigned long long)dropped(r), r->write_err.msg);
    return rc;
}

static void handle_stop(recorder *r, int fd, const char *path, const char *description, bool force)
{
    ltr_error err = {0};
    check_orphans(r); /* a process that closed its connection on its way out: its buffers in */
    bool taken;
    int rc = stop_refused(r, path, force, &taken, &err);
    if (!rc && r->cfg.mode == LTR_MODE_MEMORY)
        rc = stop_save_memory(r, path, description, force, &err);
    if (rc) {
        r->controller_stop_failed |= from_controller(r, fd);
        reply_still_running(fd, &err, true, NULL);
        return;
    }
    rec_unpublish(r);
    bool lacking = false; /* written whole, with events it could not take */
    if (r->cfg.mode == LTR_MODE_FILE)
        rc = stop_file(r, path, description, force, taken, &lacking, &err);
    /* the note before the reply: ltr record finds it once the stop returned */
    if (rc)
        note_for_controller(r, fd, false, "its session was stopped by another command ('ltr stop --instance %s'), "
                            "which failed: %s", r->cfg.name, err.msg);
    else
        note_for_controller(r, fd, true, "its session was stopped by another command ('ltr stop --instance %s'): "
                            "the trace was written to %s", r->cfg.name, path);
    if (rc) {
        reply_failure(fd, &err, "written", lacking ? path : NULL);
        r->exit_status = 1;
    } else {
        reply_stopped(r, fd);
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
    note_for_controller(r, fd, false, "its session was cancelled by another command ('ltr cancel --instance "
                            "%s'): no trace was written", r->cfg.name);
    reply_ok(fd);
    r->done = true;
}

static void handle_marker(recorder *r, int fd, const char *text)
{
    ltr_error err;
    if (rec_marker(r, text, &err) != 0)
        reply_error(fd, &err);
    else
        reply_ok(fd);
}

/* `ltr flush`: the trace file readable, with everything committed so far,
 * when the answer comes. */
static void handle_flush(recorder *r, int fd)
{
    ltr_error err = {0};
    if (r->cfg.mode != LTR_MODE_FILE) {
        ltr_fail(&err, EINVAL, "session '%s' is in memory mode: nothing is written until asked; "
                               "'ltr save FILE' writes what it holds now", r->cfg.name);
        reply_error(fd, &err);
        return;
    }
    if (rec_flush_file(r, &err) != 0) {
        rec_write_failed(r, &err);
        reply_error(fd, &err);
        return;
    }
    ltr_bytes kv = {0};
    ltr_bytes_put_kv(&kv, "ok", "1");
    ltr_bytes_put_kv(&kv, "output", r->cfg.output);
    put_u64(&kv, "file_size", ltr_writer_size(r->writer));
    put_u64(&kv, "dropped", dropped(r));
    put_u64(&kv, "held", r->flush_held);
    if (r->write_err.code)
        ltr_bytes_put_kv(&kv, "write_error", r->write_err.msg);
    if (r->file_full)
        ltr_bytes_put_kv(&kv, "full", "1");
    put_log(&kv);
    reply(fd, &kv, NULL, 0);
    ltr_bytes_free(&kv);
}

/* `ltr capturestate`: the state the session's events would have said long
 * ago, written again now. What the producers write as metadata (heap
 * agents' modules and stacks; providers' layouts and processes) is kept
 * whole by the recorder and needs nothing; their threads' names are taken
 * again from /proc (a name set without the agent seeing it); the system
 * provider's processes, threads and modules are events, which a ring
 * overwrites: its thread writes them again. */
#define CAPTURE_TIMEOUT_MS 10000

static void handle_capturestate(recorder *r, int fd)
{
    ltr_error err = {0};
    ltr_system_capture c = {0};
    if (r->system && ltr_system_capture_state(r->system, CAPTURE_TIMEOUT_MS, &c) != 0) {
        ltr_fail(&err, ETIMEDOUT, "the system provider did not write its state within %d s (the recorder "
                 "is overloaded?); the session goes on", CAPTURE_TIMEOUT_MS / 1000);
        reply_error(fd, &err);
        return;
    }
    unsigned named = rec_capture_threads(r);
    ltr_error ferr;
    if (r->cfg.mode != LTR_MODE_FILE) /* the records taken */
        rec_drain(r, false);
    else if (rec_flush_file(r, &ferr) != 0) /* and in file mode written, the backlog's too */
        rec_log("capturestate: %s", ferr.msg);
    ltr_bytes kv = {0};
    ltr_bytes_put_kv(&kv, "ok", "1");
    ltr_bytes_put_kv(&kv, "system", r->system ? "1" : "0");
    put_u64(&kv, "named_threads", named);
    put_u64(&kv, "processes", c.processes);
    put_u64(&kv, "threads", c.threads);
    put_u64(&kv, "modules", c.modules);
    put_u64(&kv, "producers", r->nconns);
    put_u64(&kv, "metadata_bytes", r->meta_pulled);
    put_log(&kv);
    reply(fd, &kv, NULL, 0);
    ltr_bytes_free(&kv);
}

/* `ltr providers --details`: the layouts of the provider whose GUID is text. */
static void handle_layouts(recorder *r, int fd, const char *text)
{
    ltr_guid g;
    ltr_error err;
    if (ltr_guid_parse(text, &g) != 0) {
        ltr_fail(&err, EINVAL, "'%s' is not a GUID", text);
        reply_error(fd, &err);
        return;
    }
    ltr_bytes lines = {0}, kv = {0};
    rec_layouts_text(r, &g, &lines);
    ltr_bytes_put_kv(&kv, "ok", "1");
    ltr_bytes_put_kv(&kv, "layouts", lines.failed ? "" : (const char *)lines.data);
    reply(fd, &kv, NULL, 0);
    ltr_bytes_free(&kv);
    ltr_bytes_free(&lines);
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
    char flag[4];
    bool force = ltr_kv_find(req, len, "force", flag, sizeof flag) && !strcmp(flag, "1");
    /* a save whose path is taken meanwhile leaves its file for the client
     * to name (ltr watch: the next free name, without a save again) */
    bool keep = ltr_kv_find(req, len, "keep", flag, sizeof flag) && !strcmp(flag, "1");
    char kept[4200];
    if (!strcmp(op, "attach"))
        return handle_attach(r, fd, req, len);
    if (!strcmp(op, "status")) {
        handle_status(r, fd);
    } else if (!strcmp(op, "save") && p) {
        check_orphans(r);
        if (r->cfg.mode != LTR_MODE_MEMORY) {
            ltr_fail(&err, EINVAL, "session '%s' is in file mode: its trace is written as it goes%s%s; %s ends it",
                     r->cfg.name, r->cfg.output_temp ? "" : " to ", r->cfg.output_temp ? "" : r->cfg.output,
                     r->cfg.output_temp ? "'ltr stop FILE'" : "'ltr stop'");
            reply_error(fd, &err);
        } else if (rec_save(r, p, t, force, keep ? kept : NULL, sizeof kept, &err) != 0) {
            /* keep is ltr watch's: what becomes of its session after a
             * failed save is its to say ('still running ... save again'
             * was printed by a watch that then cancelled the session) */
            if (keep)
                reply_failure(fd, &err, "kept", err.code == EEXIST ? kept : NULL);
            else
                reply_still_running(fd, &err, false, NULL);
        } else {
            reply_ok(fd);
        }
    } else if (!strcmp(op, "stop") && p) {
        handle_stop(r, fd, p, t, force);
    } else if (!strcmp(op, "cancel")) {
        handle_cancel(r, fd);
    } else if (!strcmp(op, "marker") && t) {
        handle_marker(r, fd, t);
    } else if (!strcmp(op, "flush")) {
        handle_flush(r, fd);
    } else if (!strcmp(op, "capturestate")) {
        handle_capturestate(r, fd);
    } else if (!strcmp(op, "layouts") && t) {
        handle_layouts(r, fd, t);
    } else {
        ltr_fail(&err, EPROTO, "unknown request '%s'", op);
        reply_error(fd, &err);
    }
    return false;
}

/* ---- requests, read as their bytes come ----
 *
 * The recorder has one thread: waiting on a client (10 s for each byte,
 * before) let one that sends a byte every 5 s hold the session (an attacker
 * review: 96 715 of 160 101 events lost, `ltr status` and `ltr run` refused,
 * no process could attach). A connection's request is read as its bytes
 * come (ltr_msg_in_read), between everything else the loop does; one not
 * whole REQUEST_MAX_NS after it connected is closed.
 *
 * And a save writes the whole ring (a second and more under load): a
 * process that starts meanwhile waits 250 ms for the answer to its attach
 * (producer.c), then writes nothing until it comes (a review's sqlite3,
 * started during a save, lost 583 038 events, counted, with 600 buffers
 * free). So the save looks at the socket every MEANWHILE_NS
 * (rec_meanwhile): an attach only adds a process (whose records the save
 * then writes too), a status only reads; both are answered at once.
 * Anything else (a marker, another save, a stop) is answered once the save
 * ends, in the order it came. */
#define REQUEST_MAX_NS (10 * 1000000000ull)
#define REQUEST_MAX_BYTES (1u << 20)
#define MEANWHILE_NS (5 * 1000000ull)

typedef struct pending_req {
    int fd;
    ltr_msg_in in;
    uint64_t deadline_ns;
    bool whole;
    short revents; /* what poll said of it, this round */
} pending_req;

static void keep_pending(recorder *r, pending_req p)
{
    if (r->npending == r->pending_cap) {
        unsigned cap = r->pending_cap ? 2 * r->pending_cap : 8;
        pending_req *v = realloc(r->pending, cap * sizeof *v);
        if (!v) {
            ltr_msg_in_free(&p.in);
            close(p.fd); /* its command says the recorder closed the connection */
            return;
        }
        r->pending = v;
        r->pending_cap = cap;
    }
    r->pending[r->npending++] = p;
}

/* Reads what arrived: true while the connection is good (p->whole once
 * its request is in); false when it was closed (an error, its end). */
static bool read_more(pending_req *p)
{
    if (p->whole)
        return true;
    int rc = ltr_msg_in_read(p->fd, &p->in, REQUEST_MAX_BYTES);
    if (rc < 0) {
        close(p->fd);
        return false;
    }
    p->whole = rc == 1;
    return true;
}

/* Answers a whole request: the connection blocking again for the answer
 * (and for the producer an attach keeps), the request freed. */
/* Whether the requester hung up already: its command gave up waiting (the
 * recorder was stopped: "'kill -CONT' lets it go on") and said nothing was
 * done. A save carried out after a SIGCONT wrote a file its command had
 * said nothing of, and the same save asked again then found it there. An
 * attach checks its own (handle_attach). */
static bool requester_gone(const pending_req *p)
{
    char op[16];
    struct pollfd gone = {.fd = p->fd, .events = POLLRDHUP};
    return ltr_kv_find(p->in.body, p->in.len, "op", op, sizeof op) && strcmp(op, "attach") &&
           poll(&gone, 1, 0) > 0 && (gone.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

static void serve(recorder *r, pending_req *p)
{
    if (requester_gone(p)) {
        char op[16] = "";
        ltr_kv_find(p->in.body, p->in.len, "op", op, sizeof op);
        rec_log("a '%s' request whose command stopped waiting for it (this recorder was stopped?): not done", op);
        close(p->fd);
        ltr_msg_in_free(&p->in);
        return;
    }
    fcntl(p->fd, F_SETFL, fcntl(p->fd, F_GETFL) & ~O_NONBLOCK);
    bool kept = handle_request(r, p->fd, p->in.body, p->in.len);
    if (!kept)
        close(p->fd);
    ltr_msg_in_free(&p->in);
}

/* The new connections: each answered now if its request came whole with
 * it, else kept, to be read as it comes. */
static void accept_new(recorder *r)
{
    int fd;
    while ((fd = accept4(r->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0) {
        pending_req p = {.fd = fd, .deadline_ns = ltr_now_ns() + REQUEST_MAX_NS};
        if (read_more(&p))
            keep_pending(r, p);
    }
}

/* A whole request answered at once even while a save is written: an
 * attach only adds a process, a status only reads. */
static bool quick(const pending_req *p)
{
    char op[32];
    if (!ltr_kv_find(p->in.body, p->in.len, "op", op, sizeof op))
        return false;
    return !strcmp(op, "attach") || !strcmp(op, "status");
}

/* An attach of a pid one of whose connections closed and was not seen go
 * yet waits for the loop's next round, which sees it go first: its end (or
 * its image's) then comes before the new PROCESS record. Answered first
 * (during a long drain, by rec_meanwhile, or in the round the close came
 * after the poll), the new connection made the old one's process not
 * "alone" at its close: no end at all, and the pid used again read as an
 * exec of it. (test_analyze's test_pid_used_again_is_no_exec failed for
 * another cause, fixed by the pidfd; this order is not forced by a test.) */
/* The pid an attach request names, or 0 (another request). */
static pid_t attach_pid(const pending_req *p)
{
    char op[16], pidtext[16];
    if (!ltr_kv_find(p->in.body, p->in.len, "op", op, sizeof op) || strcmp(op, "attach") ||
        !ltr_kv_find(p->in.body, p->in.len, "pid", pidtext, sizeof pidtext))
        return 0;
    return atoi(pidtext);
}

static bool attach_waits(const recorder *r, const pending_req *p)
{
    pid_t pid = attach_pid(p);
    if (!pid)
        return false;
    for (unsigned k = 0; k < r->nconns; k++) {
        struct pollfd c = {.fd = r->conns[k].fd, .events = POLLIN | POLLRDHUP};
        if (r->conns[k].pid == pid && poll(&c, 1, 0) > 0 &&
            (c.revents & (POLLIN | POLLHUP | POLLERR | POLLRDHUP)))
            return true;
    }
    return false;
}

/* During a save (memory mode), an attach of a pid an earlier process of
 * which has a PROCESS record kept waits for the save's end: answered now,
 * its PROCESS record went into the save before the buffers of the earlier
 * process still to be written, which the reader then took for the new
 * one's (a process ended, its pid used again during a save: 1.7 M to 5.8 M
 * of the first's 4 M to 9 M events read with the second's stacks and
 * command line, in each of five runs, 62339f4 as well). Such an attach
 * waits as an exec's does (attach_waits). */
static bool pid_kept(const recorder *r, const pending_req *p)
{
    pid_t pid = attach_pid(p);
    for (size_t k = 0; pid && k < r->nowners; k++)
        if (r->owners[k].pid == (uint32_t)pid)
            return true;
    return false;
}

void rec_meanwhile(recorder *r)
{
    uint64_t now = ltr_now_ns();
    if (now - r->meanwhile_ns < MEANWHILE_NS)
        return;
    r->meanwhile_ns = now;
    atomic_store_explicit(&r->reg->sessions[r->slot].unanswered, 0, memory_order_relaxed);
    accept_new(r);
    unsigned kept = 0;
    for (unsigned i = 0; i < r->npending; i++) {
        pending_req p = r->pending[i];
        if (!read_more(&p))
            continue;
        if (p.whole && quick(&p) && !attach_waits(r, &p) && !pid_kept(r, &p))
            serve(r, &p);
        else
            r->pending[kept++] = p;
    }
    r->npending = kept;
}

/* After a poll round: reads what came, answers the whole requests in the
 * order they came (taken out first: one of them may be a save, during which
 * rec_meanwhile looks at the rest), drops those past their time. */
static void serve_pending(recorder *r)
{
    uint64_t now = ltr_now_ns();
    pending_req *whole = NULL;
    unsigned nwhole = 0, kept = 0;
    for (unsigned i = 0; i < r->npending; i++) {
        pending_req p = r->pending[i];
        if (p.revents && !read_more(&p))
            continue;
        p.revents = 0;
        if (!p.whole && now > p.deadline_ns) {
            ltr_msg_in_free(&p.in);
            close(p.fd);
            continue;
        }
        pending_req *v = p.whole && !r->done ? realloc(whole, (nwhole + 1) * sizeof *v) : NULL;
        if (v) {
            whole = v;
            whole[nwhole++] = p;
        } else {
            r->pending[kept++] = p;
        }
    }
    r->npending = kept;
    /* attaches and status first: one that came in the round of a save would
     * otherwise wait for all of it (a review), the attach's process losing
     * its events meanwhile */
    for (int first = 1; first >= 0; first--)
        for (unsigned i = 0; i < nwhole; i++) {
            if (whole[i].fd < 0 || quick(&whole[i]) != (first == 1))
                continue;
            if (r->done) { /* the session ended meanwhile: its command hears it closed */
                ltr_msg_in_free(&whole[i].in);
                close(whole[i].fd);
            } else if (attach_waits(r, &whole[i])) {
                keep_pending(r, whole[i]); /* kept whole: the next round's poll does not wait */
            } else {
                serve(r, &whole[i]);
            }
            whole[i].fd = -1;
        }
    free(whole);
}

static void close_pending(recorder *r)
{
    for (unsigned i = 0; i < r->npending; i++) {
        ltr_msg_in_free(&r->pending[i].in);
        close(r->pending[i].fd);
    }
    free(r->pending);
    r->pending = NULL;
    r->npending = r->pending_cap = 0;
}

/* Whether process pid is gone, or going: no memory of its own any more
 * (/proc/PID/exe unreadable: an exiting process loses its memory before its
 * descriptors close; a zombie or a reaped one has none), so no event of it
 * can follow. A connection also closes when the process execs (the new
 * image connects anew, often after the recorder saw the old one go) or
 * leaves the session: the process runs on, its blocks still live, and its
 * end there would make them outstanding and their frees unseen. When it
 * cannot be told (another user's process), it is not taken as gone. */
static bool process_gone(pid_t pid, int pidfd)
{
    char path[64], target[16];
    snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
    if (readlink(path, target, sizeof target) < 0 && errno == ENOENT)
        return true;
    /* Exited, its pid used again already by another process, whose /proc
     * that is: its pidfd says so (an exec does not end it). Start times,
     * in clock ticks, could not tell a shell's next fork child from the
     * program that had just exited under that pid (test_analyze,
     * test_pid_used_again_is_no_exec). */
    struct pollfd p = {.fd = pidfd, .events = POLLIN};
    return pidfd >= 0 && poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR));
}

/* Whether process pid still maps the session's shared memory (memfd
 * inode ino): a daemon that closes every fd after the agent attached (its
 * close-all, after reading its configuration) closes the connection and
 * runs on, writing into the buffers it holds. Taken as gone, its buffers
 * were finished under it and given to others: the recorder logged the
 * shared memory written over, and its later events were neither in the
 * trace nor counted lost (2 000 of a test program's 4 200). An exec or an
 * exit unmaps it. False when its maps cannot be read (another user's). */
static bool still_writes(pid_t pid, ino_t ino)
{
    char path[64], line[4352];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    FILE *f = fopen(path, "re");
    bool found = false;
    while (f && !found && fgets(line, sizeof line, f)) {
        unsigned long long inode = 0;
        /* lo-hi perms offset dev inode name */
        if (sscanf(line, "%*s %*s %*s %*s %llu", &inode) == 1 && inode == (unsigned long long)ino &&
            strstr(line, "memfd:ltr-session"))
            found = true;
    }
    if (f)
        fclose(f);
    return found;
}

static bool session_mapped_by(recorder *r, pid_t kernel_pid)
{
    struct stat mst;
    return kernel_pid > 0 && fstat(r->memfd, &mst) == 0 && still_writes(kernel_pid, mst.st_ino);
}

/* A producer's buffers finished (its connection closed, and its process
 * no longer maps the session): and when its process ended, the analysis
 * told (PROCESS_END) and the writer's tables for it gone, where they stayed
 * until 64 later processes pushed them out; not while another producer of
 * that process writes.
 *
 * A process that lives on without the session mapped exec'd a program that
 * did not join it (perl's system("sh", ...) under --pid or ltr watch, whose
 * children inherit no preload): its traced image ended too, and the end
 * names that image (its PROCESS record's start_ts). Without it the analysis
 * kept such a child's blocks outstanding to the trace's end, a live process
 * to the report. A traced exec's new image that attached already is another
 * connection of the pid (not alone: no end); one that attaches later comes
 * after this end in the file, an image of its own (the reader takes an
 * exec's end followed by the pid's PROCESS record as the exec it was). */
static void owner_done(recorder *r, uint32_t owner, int32_t pid, pid_t kernel_pid, uint32_t slot, uint64_t seen_ns,
                       uint64_t start_ts, int pidfd)
{
    rec_harvest_owner(r, owner);
    rec_release_slot(r, slot, pid);
    bool alone = true;
    for (unsigned k = 0; k < r->nconns; k++)
        alone &= r->conns[k].pid != pid;
    bool described = start_ts != 0; /* a process the session does not trace has no PROCESS record, nor ends */
    if (pid > 0 && alone && described && process_gone(kernel_pid ? kernel_pid : pid, pidfd))
        rec_end_process(r, pid, seen_ns, 0); /* after its buffers: the analysis ends its model there */
    else if (pid > 0 && alone && described && kernel_pid > 0 && !session_mapped_by(r, kernel_pid))
        rec_end_process(r, pid, seen_ns, start_ts);
    if (pid > 0 && alone)
        rec_forget_process(r, (uint32_t)pid);
}

/* The orphans whose process no longer maps the session: done (at each
 * flush, and before a save or a stop, so that a process that closed its
 * connection on its way out has its buffers in). */
static void check_orphans(recorder *r)
{
    for (unsigned i = 0; i < r->norphans;) {
        struct rec_orphan o = r->orphans[i];
        if (!process_gone(o.kernel_pid, o.pidfd) && session_mapped_by(r, o.kernel_pid)) {
            i++;
            continue;
        }
        r->orphans[i] = r->orphans[--r->norphans];
        owner_done(r, o.owner, o.pid, o.kernel_pid, o.proc_slot, ltr_now_ns(), o.start_ts, o.pidfd);
        if (o.pidfd >= 0)
            close(o.pidfd);
    }
}

/* seen_ns: when the poll that said so returned, before that round's drain
 * (the process's end in the trace): taken after the drain, it came behind
 * the next program's first blocks once in CI (test_analyze,
 * test_ended_processes_leave_the_peak: one program's 8 MB and the next's
 * first 1 MB at once). */
static void producer_gone(recorder *r, unsigned i, uint64_t seen_ns)
{
    producer_conn c = r->conns[i];
    pid_t kernel_pid = peer_pid(c.fd); /* /proc's; c.pid too unless the peer is in a namespace above */
    close(c.fd);
    r->conns[i] = r->conns[--r->nconns];
    /* the pid used again already maps it too: a fork child of a traced
     * shell inherits the mapping (its process is another: not this one's) */
    bool mapped = !process_gone(kernel_pid, c.pidfd) && session_mapped_by(r, kernel_pid);
    if (mapped && r->norphans < sizeof r->orphans / sizeof *r->orphans) {
        /* its buffers stay its own: the flushes write what it commits, as
         * for any producer, and the session's end stops it (the shared
         * state); done once it no longer maps the session */
        r->orphans[r->norphans++] =
            (struct rec_orphan){c.owner, c.pid, kernel_pid, c.proc_slot, c.start_ts, c.pidfd};
        rec_note("process %d closed its connection to the session and still maps it (a daemon closing "
                    "every fd?): its buffers stay its own while it does", (int)c.pid);
        return;
    }
    /* past the orphans kept, one that still maps the session keeps its
     * loss slot: it may still count into it (a review) */
    owner_done(r, c.owner, c.pid, kernel_pid, mapped ? UINT32_MAX : c.proc_slot, seen_ns, c.start_ts, c.pidfd);
    if (c.pidfd >= 0)
        close(c.pidfd);
}

static void on_signal(recorder *r)
{
    struct signalfd_siginfo si;
    if (read(r->signal_fd, &si, sizeof si) != sizeof si)
        return;
    /* `ltr record`'s session is ended by ltr record, which gets the same
     * signal from a `systemctl stop` (the whole cgroup) or a kill of the
     * group, passes it on to its command and stops the session when the
     * command is gone: ended here, the trace was left at its .part and
     * record said "did not answer" (SIGTERM to record, recorder and program
     * at once). Should ltr record go too, controller_gone ends it. */
    if (r->cfg.stop_output[0] && r->controller_fd >= 0) {
        rec_log("signal %u: the session is ltr record's, which stops it when its command ends: "
                "not ended here", si.ssi_signo);
        return;
    }
    rec_log("signal %u: ending the session", si.ssi_signo);
    check_orphans(r);
    rec_unpublish(r);
    usleep(STOP_GRACE_US);
    if (r->cfg.mode == LTR_MODE_FILE) {
        ltr_error err;
        if (rec_finish_file(r, "ended by a signal", &err) == 0)
            rec_log("trace left at %s", r->cfg.output);
    }
    r->done = true;
}

/* `ltr record` ended without stopping its session (it was killed): the
 * session was its, so it ends now, and its trace goes where record would
 * have written it. The traced command runs on, no longer traced. */
static void controller_gone(recorder *r)
{
    close(r->controller_fd);
    r->controller_fd = -1;
    check_orphans(r);
    if (!r->cfg.stop_output[0]) { /* ltr watch: what it saved is saved; nothing more is written */
        rec_log("the command that controls this session (ltr watch) is gone: cancelling it");
        handle_cancel(r, -1);
        return;
    }
    /* its own stop failed (a full disk): it said the session goes on, for
     * 'ltr stop --instance NAME FILE'; stopped here again into the same
     * FILE, the session ended unwritten as record exited, its log saying
     * "trace written" (a memory-mode 'ltr record -o' on a full disk) */
    if (r->controller_stop_failed) {
        rec_log("the command that controls this session (ltr record) is gone after its stop failed: the "
                "session goes on, for 'ltr stop --instance %s FILE' or 'ltr cancel --instance %s'",
                r->cfg.name, r->cfg.name);
        return;
    }
    rec_log("the command that controls this session (ltr record) is gone: stopping it, "
            "the trace goes to %s", r->cfg.stop_output);
    handle_stop(r, -1, r->cfg.stop_output, NULL, r->cfg.stop_force);
    if (!r->done) { /* the stop could not begin: the recording goes on, as a stop's failure leaves it */
        rec_log("the trace could not be written to %s: the session goes on, for 'ltr stop --instance %s "
                "FILE' or 'ltr cancel --instance %s'", r->cfg.stop_output, r->cfg.name, r->cfg.name);
        return;
    }
    rec_log(r->exit_status ? "the trace could not be written" : "trace written to %s",
            r->cfg.stop_output);
}

static void run_loop(recorder *r)
{
    uint64_t last_flush = ltr_now_ns();
    _Atomic uint32_t *unanswered = &r->reg->sessions[r->slot].unanswered;
    while (!r->done) {
        unsigned n = 4 + r->nconns, np = r->npending;
        struct pollfd pfd[n + np];
        pfd[0] = (struct pollfd){.fd = r->listen_fd, .events = POLLIN};
        pfd[1] = (struct pollfd){.fd = r->wakefd, .events = POLLIN};
        pfd[2] = (struct pollfd){.fd = r->signal_fd, .events = POLLIN};
        pfd[3] = (struct pollfd){.fd = r->controller_fd, .events = POLLIN}; /* -1: ignored */
        for (unsigned i = 0; i < r->nconns; i++)
            pfd[4 + i] = (struct pollfd){.fd = r->conns[i].fd, .events = POLLIN};
        bool waiting = rec_backlog_waiting(r); /* or a whole request, kept during a save */
        for (unsigned i = 0; i < np; i++) { /* requests on their way */
            pfd[n + i] = (struct pollfd){.fd = r->pending[i].whole ? -1 : r->pending[i].fd, .events = POLLIN};
            waiting |= r->pending[i].whole;
        }
        int ready = poll(pfd, n + np, waiting ? 0 : 50);
        for (unsigned i = 0; ready > 0 && i < np; i++)
            r->pending[i].revents = pfd[n + i].revents;
        if (ready < 0 && errno != EINTR)
            break;
        if (atomic_load_explicit(unanswered, memory_order_relaxed)) /* running: answering again */
            atomic_store_explicit(unanswered, 0, memory_order_relaxed);
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
            if (pfd[4 + i].revents & (POLLIN | POLLHUP | POLLERR))
                producer_gone(r, i, now);
        if (flush && r->norphans)
            check_orphans(r);
        if (ready > 0 && (pfd[2].revents & POLLIN))
            on_signal(r);
        if (!r->done && ready > 0 && (pfd[3].revents & (POLLIN | POLLHUP | POLLERR)))
            controller_gone(r);
        if (!r->done && ready > 0 && (pfd[0].revents & POLLIN))
            accept_new(r);
        if (!r->done && r->npending)
            serve_pending(r);
    }
    close_pending(r); /* what came as the session ended: closed */
}

static void redirect_log(const ltr_session_config *cfg)
{
    char dir[4096];
    int fd = -1;
    logfile.dirfd = ltr_runtime_dir_open(dir, sizeof dir, NULL);
    if (logfile.dirfd >= 0) {
        ltr_runtime_name(logfile.name, sizeof logfile.name, cfg->name, LTR_RUN_LOG);
        int flags = O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC;
        fd = openat(logfile.dirfd, logfile.name, flags | O_EXCL, 0600);
        logfile.created = fd >= 0;
        if (fd < 0 && errno == EEXIST) /* an earlier session's: appended to, left as it is */
            fd = openat(logfile.dirfd, logfile.name, flags, 0600);
        if (fd < 0) {
            close(logfile.dirfd);
            logfile.dirfd = -1;
        }
    }
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    dup2(null, 0);
    dup2(null, 1);
    dup2(fd >= 0 ? fd : null, 2);
    if (fd >= 0)
        close(fd);
    close(null);
}

static void end_log(int exit_status)
{
    if (logfile.dirfd < 0)
        return;
    if (logfile.created && !logfile.problems && exit_status == 0)
        unlinkat(logfile.dirfd, logfile.name, 0);
    close(logfile.dirfd);
    logfile.dirfd = -1;
}

int ltr_recorder_run(const ltr_session_config *cfg, int ready_fd, int controller_fd)
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
        end_log(0); /* `ltr start` has the reason */
        return 1;
    }
    if (cfg->mode == LTR_MODE_FILE) /* its name may be random: here is where to find it */
        rec_note("session '%s' started (file mode), writing %s", cfg->name, r.cfg.output);
    else
        rec_note("session '%s' started (memory mode)", cfg->name);
    r.controller_fd = controller_fd;
    rec_system_start(&r);
    run_loop(&r);
    rec_unpublish(&r);
    rec_teardown(&r);
    rec_note("session '%s' ended", cfg->name);
    end_log(r.exit_status);
    return r.exit_status;
}
