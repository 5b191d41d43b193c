/*
 * tests/util/testutil.c — see testutil.h.
 */
#include "util/testutil.h"

#include <ltr/trace.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char sandbox[256];

/* LTR_TEST_ONLY=PATTERN runs only the cases of a test program whose names
 * match it (cmocka's filter, '*' and '?'): one racy case, run many times
 * under load, without the rest of its file. Weak: the library links into
 * programs without cmocka too. */
void cmocka_set_test_filter(const char *pattern) __attribute__((weak));

__attribute__((constructor)) static void tu_filter_cases(void)
{
    const char *only = getenv("LTR_TEST_ONLY");
    if (only && *only && cmocka_set_test_filter) {
        cmocka_set_test_filter(only);
        fprintf(stderr, "LTR_TEST_ONLY=%s: only the cases of that name run\n", only); /* not a whole run */
    }
}

const char *tu_sandbox(void)
{
    snprintf(sandbox, sizeof sandbox, "/tmp/ltr-test-XXXXXX");
    if (!mkdtemp(sandbox))
        abort();
    char rt[300];
    snprintf(rt, sizeof rt, "%s/run", sandbox);
    setenv("LTR_RUNTIME_DIR", rt, 1);
    setenv("TMPDIR", sandbox, 1);
    return sandbox;
}

void tu_sandbox_end(void)
{
    if (!sandbox[0])
        return;
    if (getenv("LTR_TEST_KEEP")) { /* to look at a failure: logs and traces stay */
        fprintf(stderr, "kept %s\n", sandbox);
        sandbox[0] = 0;
        return;
    }
    char cmd[1024];
    /* Sessions a failed test left running would outlive it. */
    snprintf(cmd, sizeof cmd,
             "for s in %s/run/*.sock; do [ -e \"$s\" ] && %s cancel --instance \"$(basename \"$s\" .sock)\"; "
             "done >/dev/null 2>&1; rm -rf %s",
             sandbox, tu_ltr(), sandbox);
    if (system(cmd) != 0) {
        /* best effort */
    }
    sandbox[0] = 0;
}

int tu_setup_sandbox(void **state)
{
    *state = (void *)tu_sandbox();
    return 0;
}

int tu_teardown_sandbox(void **state)
{
    (void)state;
    tu_sandbox_end();
    return 0;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return strdup("");
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    size_t got = fread(buf, 1, (size_t)n, f);
    buf[got] = 0;
    fclose(f);
    return buf;
}

tu_result tu_run(const char *fmt, ...)
{
    char cmd[8192], full[9000], out[300], err[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    /* outside a sandbox, files of this process's own: test programs run in
     * parallel, and a shared /tmp/.out mixed their outputs */
    if (sandbox[0]) {
        snprintf(out, sizeof out, "%s/.out", sandbox);
        snprintf(err, sizeof err, "%s/.err", sandbox);
    } else { /* new files no one can have planted: the shell's > would follow a symlink */
        snprintf(out, sizeof out, "/tmp/ltr-test-out-XXXXXX");
        snprintf(err, sizeof err, "/tmp/ltr-test-err-XXXXXX");
        int fo = mkstemp(out), fe = mkstemp(err);
        if (fo < 0 || fe < 0)
            abort();
        close(fo);
        close(fe);
    }
    snprintf(full, sizeof full, "( %s ) >%s 2>%s </dev/null", cmd, out, err);
    int st = system(full);
    tu_result r;
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    r.out = slurp(out);
    r.err = slurp(err);
    if (!sandbox[0]) {
        unlink(out);
        unlink(err);
    }
    if (getenv("LTR_TEST_VERBOSE"))
        fprintf(stderr, "$ %s\n[%d]\n%s%s", cmd, r.status, r.out, r.err);
    return r;
}

void tu_free(tu_result *r)
{
    free(r->out);
    free(r->err);
}

const char *tu_ltr(void)
{
    const char *b = getenv("LTR_BIN");
    return b ? b : "ltr";
}

const char *tu_test_bin(const char *name)
{
    static char path[4][1024];
    static int k;
    const char *dir = getenv("LTR_TEST_BIN");
    k = (k + 1) % 4;
    snprintf(path[k], sizeof path[k], "%s/%s", dir ? dir : ".", name);
    return path[k];
}

const char *tu_own_program(const char *dir, const char *prog, const char *prefix, const char **name)
{
    static char path[1024];
    snprintf(path, sizeof path, "%s/%s-%d", dir, prefix, (int)getpid());
    if (name)
        *name = strrchr(path, '/') + 1;
    tu_result r = tu_run("[ -x '%s' ] || cp '%s' '%s'", path, tu_test_bin(prog), path);
    if (r.status != 0) {
        fprintf(stderr, "cannot copy %s to %s: %s", prog, path, r.err);
        abort();
    }
    tu_free(&r);
    return path;
}

const char *tu_demo_dir(void)
{
    static char dir[4096];
    snprintf(dir, sizeof dir, "%s", tu_ltr()); /* build/bin/ltr -> build/demo */
    for (int i = 0; i < 2; i++) {
        char *slash = strrchr(dir, '/');
        if (slash)
            *slash = 0;
    }
    strncat(dir, "/demo", sizeof dir - strlen(dir) - 1);
    return dir;
}

long long tu_source_line(const char *path, const char *text)
{
    FILE *f = fopen(path, "r");
    char buf[1024];
    long long n = 0, found = -1;
    while (f && found < 0 && fgets(buf, sizeof buf, f)) {
        n++;
        if (strstr(buf, text))
            found = n;
    }
    if (f)
        fclose(f);
    return found;
}

long tu_session_pid(const char *instance, const char *key)
{
    tu_result st = tu_run("%s status --instance %s", tu_ltr(), instance);
    const char *p = strstr(st.out, key);
    long pid = p ? atol(p + strlen(key)) : 0;
    tu_free(&st);
    return pid;
}

long long tu_field(const char *text, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "%s=", key);
    const char *p = strstr(text, pat);
    return p ? atoll(p + strlen(pat)) : -1;
}

const char *tu_acted_on(const char *text)
{
    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        if ((*p < 0x20 && *p != '\n' && *p != '\t') || *p == 0x7f || (*p >= 0x80 && *p <= 0x9f) ||
            (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) ||
            (p[0] == 0xe2 && ((p[1] == 0x80 && p[2] >= 0xaa && p[2] <= 0xae) ||
                              (p[1] == 0x81 && p[2] >= 0xa6 && p[2] <= 0xa9))))
            return (const char *)p;
    return NULL;
}

tu_trace tu_read_trace(const char *path, const char *provider)
{
    tu_trace r = {0};
    r.seq_min = UINT64_MAX;
    ltr_trace *t;
    ltr_error err;
    if (ltr_trace_open(path, &t, &err) != 0)
        return r;
    const ltr_event *ev;
    int rc;
    while ((rc = ltr_trace_next(t, &ev, &err)) > 0) {
        r.events++;
        const char *pname = ev->layout->provider->name;
        if (provider && pname && !strcmp(pname, provider)) {
            r.provider_events++;
            uint64_t seq;
            if (ltr_event_get_u64(ev, "seq", &seq) == 0) {
                r.seq_min = seq < r.seq_min ? seq : r.seq_min;
                r.seq_max = seq > r.seq_max ? seq : r.seq_max;
            }
        }
        if (pname && !strcmp(pname, "ltr") && !strcmp(ev->layout->name, "Marker"))
            r.markers++;
    }
    r.ok = rc == 0;
    r.complete = ltr_trace_complete(t);
    r.has_counters = ltr_trace_has_counters(t);
    for (size_t i = 0; i < ltr_trace_collector_count(t); i++) {
        const ltr_collector_counters *c = ltr_trace_collector_at(t, i);
        r.events_lost += c->events_lost;
        r.events_overwritten += c->events_overwritten;
        r.buffers_lost += c->buffers_lost;
        r.events_written += c->events_written;
        r.shm_damage += c->shm_damage;
    }
    for (size_t i = 0; i < ltr_trace_process_lost_count(t); i++) {
        const ltr_process_lost *pl = ltr_trace_process_lost_at(t, i);
        r.process_events_lost += pl->events_lost;
        r.process_buffers_lost += pl->buffers_lost;
    }
    ltr_trace_summary sum;
    ltr_trace_summarize(t, &sum);
    r.damage = sum.damage;
    const char *d = ltr_trace_kv(t, LTR_KV_END, "session.description");
    snprintf(r.description, sizeof r.description, "%s", d ? d : "");
    ltr_trace_close(t);
    return r;
}

int tu_ok(tu_result r)
{
    int status = r.status;
    if (status != 0)
        fprintf(stderr, "unexpected failure %d:\n%s%s", status, r.out, r.err);
    tu_free(&r);
    return status;
}

pid_t tu_fifo_writer(const char *path)
{
    pid_t writer = fork();
    if (writer == 0) {
        alarm(2); /* still waiting then: no one opened the FIFO */
        _exit(open(path, O_WRONLY) >= 0 ? 0 : 1);
    }
    usleep(200 * 1000); /* the writer waits in open() */
    return writer;
}

int tu_fifo_opened(pid_t writer)
{
    int st;
    if (writer <= 0 || waitpid(writer, &st, 0) != writer)
        return 1; /* no writer to tell: as if opened, so that the test fails */
    return !WIFSIGNALED(st) || WTERMSIG(st) != SIGALRM;
}

double tu_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

pid_t tu_start_argv(char *const argv[])
{
    int ran[2];
    if (pipe2(ran, O_CLOEXEC) != 0)
        abort();
    pid_t pid = fork();
    if (pid < 0)
        abort();
    if (pid == 0) {
        execvp(argv[0], argv);
        _exit(127);
    }
    close(ran[1]);
    char c;
    while (read(ran[0], &c, 1) < 0 && errno == EINTR)
        continue; /* EOF: its exec closed the write end (or it exited) */
    close(ran[0]);
    return pid;
}

char *tu_read_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    size_t len = 0, cap = 256;
    char *buf = malloc(cap);
    for (size_t n; buf && (n = fread(buf + len, 1, cap - len - 1, f)) > 0;) {
        len += n;
        if (len + 1 == cap) {
            char *bigger = realloc(buf, cap *= 2);
            if (!bigger)
                free(buf);
            buf = bigger;
        }
    }
    fclose(f);
    if (buf)
        buf[len] = 0;
    return buf;
}

void tu_write_file(const char *dir, const char *name, const char *text)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        abort();
    }
}

const char tu_ns_worker_py[] =
    "import ctypes, os, sys, threading, time\n"
    "def work():\n"
    "    x = [str(i) for i in range(1000)]\n"
    "    ctypes.CDLL(None).prctl(15, b'ns-worker', 0, 0, 0)\n"
    "    open(sys.argv[1] + '/tid', 'w').write(str(threading.get_native_id()))\n"
    "    end = time.time() + 120  # a failed test's leftover ends by itself\n"
    "    while not os.path.exists(sys.argv[1] + '/exit') and time.time() < end: time.sleep(0.05)\n"
    "threading.Thread(target=work).start()\n";

bool tu_drawn_by_the_plain_build(void)
{
#if defined(__SANITIZE_ADDRESS__)
    printf("the page's drawing in chromium is checked by the plain build\n");
    return true;
#else
    return false;
#endif
}

bool tu_pid_namespaces_allowed(void)
{
    tu_result r = tu_run("command -v unshare >/dev/null && unshare --pid --fork --mount-proc true || exit 77");
    int status = r.status;
    tu_free(&r);
    if (status != 0)
        printf("skipped: no pid namespace of our own here\n");
    return status == 0;
}

long long tu_pid_again(const char *fmt, ...)
{
    char cmd[16384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    tu_result r = tu_run("%s", cmd);
    if (r.status == 77) {
        printf("skipped: no pid namespace of our own here\n");
        tu_free(&r);
        return 0;
    }
    if (r.status != 0) {
        fprintf(stderr, "status %d: %s%s", r.status, r.out, r.err);
        tu_free(&r);
        return -1;
    }
    long long a = tu_field(r.out, "A"), b = tu_field(r.out, "B");
    tu_free(&r);
    if (a != b || a <= 0) {
        printf("skipped: the namespace gave pid %lld, not %lld again\n", b, a);
        return 0;
    }
    return a;
}

long tu_status_kb(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    size_t n = strlen(field);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, field, n) && line[n] == ':')
            kb = atol(line + n + 1);
    if (f)
        fclose(f);
    return kb;
}

int tu_peak_reset(void)
{
    FILE *reset = fopen("/proc/self/clear_refs", "w"); /* "5": the peak starts again from now */
    int done = reset && fputs("5", reset) >= 0;
    if (reset)
        done &= fclose(reset) == 0;
    return done;
}
