/*
 * tests/format/test_writer.c — the writer when writing fails: the size limit
 * (-EFBIG, blocks reported through the drop callback, file still valid and
 * the writer still usable), a full device, a write failing halfway through a
 * chunk (RLIMIT_FSIZE) that must be cut off again, and bad paths. And
 * events that repeat themselves: an EVENTS chunk after one that packed 16
 * to one is searched deeper, so the same events take fewer bytes.
 */
#include "gen.h"
#include "format/blocks.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

typedef struct drops {
    int calls;
    uint64_t bytes, events;
    uint64_t last_seq;
} drops;

static void on_drop(void *ctx, const ltr_block_info *info, uint32_t byte_count)
{
    drops *d = ctx;
    d->calls++;
    d->bytes += byte_count;
    d->events += info->event_count;
    d->last_seq = info->seq;
}

static ltr_writer *open_with_meta(const char *path)
{
    ltr_writer *w = gen_open(path);
    assert_non_null(w);
    return w;
}

static int put_block(ltr_writer *w, uint64_t first, size_t count, uint64_t seq, ltr_error *err)
{
    ltr_bytes ev = {0};
    for (size_t k = 0; k < count; k++)
        gen_event(&ev, first + k, gen_ts(first + k));
    ltr_block_info info = {.pid = 100, .tid = 100, .seq = seq, .event_count = (uint32_t)count,
                           .fixed_records = 1};
    int rc = ltr_writer_block(w, &info, ev.data, ev.len, err);
    ltr_bytes_free(&ev);
    return rc;
}

static void read_back(const char *path, uint64_t events, int complete)
{
    ltr_trace *t;
    ltr_error err;
    assert_int_equal(ltr_trace_open(path, &t, &err), 0);
    ltr_trace_summary s;
    assert_int_equal(ltr_trace_scan(t, &s, &err), 0);
    assert_int_equal(s.damage, 0);
    assert_int_equal(s.events, events);
    assert_int_equal(s.complete, complete);
    ltr_trace_close(t);
}

static uint64_t file_size(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return (uint64_t)st.st_size;
}

/* Writes the END chunk with one key/value in it: the trace complete. */
static void put_end(ltr_writer *w, const char *key, const char *value)
{
    ltr_bytes kv = {0};
    ltr_bytes_put_kv(&kv, key, value);
    ltr_error err;
    assert_int_equal(ltr_writer_kv(w, LTR_CHUNK_END, &kv, &err), 0);
    ltr_bytes_free(&kv);
}

static void test_size_limit(void **state)
{
    const char *path = gen_tmp("limit.ltr");
    ltr_writer *w = open_with_meta(path);
    drops d = {0};
    ltr_writer_set_drop_callback(w, on_drop, &d);
    ltr_error err;
    assert_int_equal(put_block(w, 0, 10, 0, &err), 0);
    assert_int_equal(ltr_writer_flush(w, 1, &err), 0);
    uint64_t good = ltr_writer_size(w);
    assert_int_equal(file_size(path), good);
    ltr_writer_set_limit(w, good + 40); /* no room for another chunk */
    assert_int_equal(put_block(w, 10, 10, 1, &err), 0); /* pending, not written yet */
    assert_int_equal(put_block(w, 20, 10, 2, &err), 0);
    assert_int_equal(ltr_writer_flush(w, 0, &err), -EFBIG);
    assert_int_equal(err.code, EFBIG);
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, "size limit"));
    assert_int_equal(d.calls, 2);
    assert_int_equal(d.events, 20);
    assert_int_equal(d.last_seq, 2);
    assert_true(d.bytes > 0);
    assert_int_equal(ltr_writer_size(w), good);
    assert_int_equal(file_size(path), good);
    read_back(path, 10, 0);

    /* still usable: with the limit lifted, END goes in and the trace is complete */
    ltr_writer_set_limit(w, 0);
    put_end(w, "clock.end_ns", "1");
    ltr_writer_close(w);
    read_back(path, 10, 1);
    unlink(path);
}

static void test_chunk_target_triggers_writes(void **state)
{
    const char *path = gen_tmp("target.ltr");
    ltr_writer *w = open_with_meta(path);
    ltr_error err;
    uint64_t before = ltr_writer_size(w);
    assert_int_equal(put_block(w, 0, 5, 0, &err), 0);
    assert_int_equal(ltr_writer_size(w), before); /* default 1 MiB target: pending */
    ltr_writer_set_chunk_target(w, 100);
    assert_int_equal(put_block(w, 5, 5, 1, &err), 0);
    assert_true(ltr_writer_size(w) > before); /* past the target: written */
    ltr_writer_close(w);
    read_back(path, 10, 0);
    unlink(path);
}

/* The stored size of each EVENTS chunk of the file at path, in order. */
static size_t events_chunk_sizes(const char *path, uint32_t *sizes, size_t max)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    uint8_t h[LTR_CHUNK_HEADER_SIZE];
    size_t n = 0;
    assert_int_equal(fseek(f, LTR_FILE_HEADER_SIZE, SEEK_SET), 0);
    while (fread(h, 1, sizeof h, f) == sizeof h) {
        uint32_t payload = ltr_get_u32(h + 8);
        if (ltr_get_u16(h + 4) == LTR_CHUNK_EVENTS && n < max)
            sizes[n++] = payload;
        assert_int_equal(fseek(f, payload, SEEK_CUR), 0);
    }
    fclose(f);
    return n;
}

static void test_repeating_events_searched_deeper(void **state)
{
    (void)state;
    const char *path = gen_tmp("repeats.ltr");
    ltr_writer *w = open_with_meta(path);
    ltr_error err;
    for (uint64_t round = 0; round < 3; round++) { /* three chunks of the same events */
        ltr_bytes ev = {0};
        for (uint64_t k = 0; k < 20000; k++) /* a pattern of two, broken every 97 events */
            gen_event(&ev, (k % 97 == 0 ? 3 * (k % 7) : 3 * (k & 1)), gen_ts(k / 50));
        ltr_block_info info = {.pid = 100, .tid = 100, .seq = round, .event_count = 20000, .fixed_records = 1};
        assert_int_equal(ltr_writer_block(w, &info, ev.data, ev.len, &err), 0);
        assert_int_equal(ltr_writer_flush(w, 0, &err), 0);
        ltr_bytes_free(&ev);
    }
    ltr_writer_close(w);
    read_back(path, 60000, 0);
    uint32_t sizes[4];
    assert_int_equal(events_chunk_sizes(path, sizes, 4), 3);
    if (!(sizes[1] < sizes[0] * 0.98 && sizes[2] < sizes[0] * 0.98)) /* the same events but the block's seq */
        fail_msg("EVENTS chunks of %u, %u and %u bytes: the later ones not packed deeper", sizes[0], sizes[1],
                 sizes[2]);
    unlink(path);
}

static void test_end_flushes_pending_events(void **state)
{
    const char *path = gen_tmp("end.ltr");
    ltr_writer *w = open_with_meta(path);
    ltr_error err;
    assert_int_equal(put_block(w, 0, 6, 0, &err), 0); /* pending under the 1 MiB target */
    put_end(w, "session.description", "done");
    ltr_writer_close(w);
    read_back(path, 6, 1);
    ltr_trace *t; /* END comes after the events in the file */
    assert_int_equal(ltr_trace_open(path, &t, &err), 0);
    const ltr_event *ev;
    for (int i = 0; i < 6; i++)
        assert_int_equal(ltr_trace_next(t, &ev, &err), 1);
    assert_false(ltr_trace_complete(t));
    assert_int_equal(ltr_trace_next(t, &ev, &err), 0);
    assert_true(ltr_trace_complete(t));
    ltr_trace_close(t);
    unlink(path);
}

/* Writes meta as one batch of metadata records (a hand-made one, as the
 * recorder hands them over) and empties it for the next batch. */
static void put_meta(ltr_writer *w, ltr_bytes *meta)
{
    ltr_error err;
    assert_int_equal(ltr_writer_metadata(w, meta->data, meta->len, &err), 0);
    ltr_bytes_free(meta);
}

/* Closes w and reads the trace at path back whole: the reader's tables are
 * what the metadata tests check; the caller closes it. */
static ltr_trace *close_and_scan(ltr_writer *w, const char *path, ltr_trace_summary *sum)
{
    ltr_writer_close(w);
    ltr_trace *t;
    ltr_error err;
    assert_int_equal(ltr_trace_open(path, &t, &err), 0);
    assert_int_equal(ltr_trace_scan(t, sum, &err), 0);
    return t;
}

/* A PROCESS_END record of pid at ts, as the recorder writes it. */
static void put_process_end(ltr_bytes *meta, uint32_t pid, uint64_t ts)
{
    size_t rec = ltr_bytes_record_begin(meta, LTR_META_PROCESS_END);
    ltr_bytes_put_u32(meta, pid);
    ltr_bytes_put_u64(meta, ts);
    ltr_bytes_record_end(meta, rec);
}

/* A process's end comes after the events pending when it came, which may
 * hold its last buffers (a reader of a file-mode trace lets go of the
 * process there); other metadata of the batch still goes before them. */
static void test_process_end_after_pending_blocks(void **state)
{
    (void)state;
    const char *path = gen_tmp("ends.ltr");
    ltr_writer *w = open_with_meta(path);
    ltr_error err;
    assert_int_equal(put_block(w, 0, 6, 0, &err), 0); /* pid 100's, pending */
    ltr_bytes meta = {0};
    put_process_end(&meta, 100, gen_ts(6));
    put_meta(w, &meta);
    assert_int_equal(put_block(w, 6, 4, 1, &err), 0);
    put_end(w, "clock.end_ns", "1");
    ltr_writer_close(w);
    ltr_trace *t;
    assert_int_equal(ltr_trace_open(path, &t, &err), 0);
    const ltr_event *ev;
    for (int i = 0; i < 10; i++) {
        int rc = ltr_trace_next(t, &ev, &err);
        if (rc != 1)
            fail_msg("event %d: %d %s", i, rc, err.msg);
        assert_int_equal(ltr_trace_process_end_count(t), 0); /* not before an event it came after */
    }
    assert_int_equal(ltr_trace_next(t, &ev, &err), 0);
    assert_int_equal(ltr_trace_process_end_count(t), 1);
    assert_int_equal(ltr_trace_process_end_at(t, 0)->pid, 100);
    ltr_trace_close(t);
    unlink(path);
}

static void put_process(ltr_bytes *meta, uint32_t pid, uint64_t start)
{
    size_t rec = ltr_bytes_record_begin(meta, LTR_META_PROCESS);
    ltr_bytes_put_u32(meta, pid);
    ltr_bytes_put_u32(meta, 1);
    ltr_bytes_put_u64(meta, start);
    ltr_bytes_put_str(meta, "/bin/prog");
    ltr_bytes_put_u16(meta, 0);
    ltr_bytes_record_end(meta, rec);
}

static void put_exec_end(ltr_bytes *meta, uint32_t pid, uint64_t ts, uint64_t image_start)
{
    size_t rec = ltr_bytes_record_begin(meta, LTR_META_EXEC_END);
    ltr_bytes_put_u32(meta, pid);
    ltr_bytes_put_u64(meta, ts);
    ltr_bytes_put_u64(meta, image_start);
    ltr_bytes_record_end(meta, rec);
}

static void put_module_load(ltr_bytes *meta, uint32_t pid, const char *path, uint64_t start, uint64_t end)
{
    size_t rec = ltr_bytes_record_begin(meta, LTR_META_MODULE);
    ltr_bytes_put_u32(meta, pid);
    ltr_bytes_put_u64(meta, 1500);
    ltr_bytes_put_u8(meta, 1); /* loaded */
    ltr_bytes_put_u64(meta, start);
    ltr_bytes_put_str(meta, path);
    ltr_bytes_put_u8(meta, 0); /* no build-id */
    ltr_bytes_put_u16(meta, 1);
    ltr_bytes_put_u64(meta, start);
    ltr_bytes_put_u64(meta, end);
    ltr_bytes_put_u64(meta, 0);
    ltr_bytes_put_u8(meta, 5); /* r-x */
    ltr_bytes_record_end(meta, rec);
}

/* Loads over a module still loaded: over a library, the later one is the
 * one there (its unload was lost when the region was full: a review's
 * dlopen of libb where liba's dlclose did not fit read libb's frames as
 * liba's, and the trace "damaged"); over the main program, another
 * program's: damage, left out. */
static void test_module_load_over_a_loaded_one(void **state)
{
    (void)state;
    const char *path = gen_tmp("modover.ltr");
    ltr_writer *w = open_with_meta(path);
    ltr_bytes meta = {0};
    put_process(&meta, 7, 1000); /* its executable: /bin/prog */
    put_module_load(&meta, 7, "/bin/prog", 0x400000, 0x500000);
    put_module_load(&meta, 7, "/lib/liba.so", 0x7f0000000000, 0x7f0000010000);
    put_module_load(&meta, 7, "/lib/libb.so", 0x7f0000000000, 0x7f0000010000);
    put_module_load(&meta, 7, "/usr/bin/ls", 0x400000, 0x500000);
    put_meta(w, &meta);
    ltr_trace_summary sum;
    ltr_trace *t = close_and_scan(w, path, &sum);
    assert_int_equal(sum.damage, 1); /* ls over prog */
    const ltr_damage *d = ltr_trace_damage_at(t, 0);
    char said[256]; /* named by its chunk, as every record's damage is */
    snprintf(said, sizeof said, "chunk %lld: a MODULE load of /usr/bin/ls for pid 7 over its main program /bin/prog, "
             "which only an exec ends: left out (another traced program's?)", (long long)d->chunk_seq);
    assert_string_equal(d->detail, said);
    int libb = 0, ls = 0;
    for (size_t i = 0; i < ltr_trace_module_count(t); i++) {
        libb += !strcmp(ltr_trace_module_at(t, i)->path, "/lib/libb.so");
        ls += !strcmp(ltr_trace_module_at(t, i)->path, "/usr/bin/ls");
    }
    assert_int_equal(libb, 1);
    assert_int_equal(ls, 0);
    ltr_trace_close(t);
    unlink(path);
}

/* EXEC_END names the image it ends by its PROCESS record's start: pid 7's
 * current image (an end, image 0); one read before its image's PROCESS
 * record (pid 8: a save writes an image's records as one batch, its ends
 * first) waits for it; one naming an older image that no stacks told
 * apart from the newest (pid 9: its model is the newest's) ends nothing,
 * nor does one naming a start no PROCESS record had. */
static void test_exec_end_names_its_image(void **state)
{
    (void)state;
    const char *path = gen_tmp("execend.ltr");
    ltr_writer *w = open_with_meta(path);
    ltr_bytes meta = {0};
    put_process(&meta, 7, 1000);
    put_exec_end(&meta, 7, 1500, 1000);
    put_exec_end(&meta, 8, 2500, 2000);
    put_process(&meta, 8, 2000);
    put_process(&meta, 9, 3000);
    put_process(&meta, 9, 3100);
    put_exec_end(&meta, 9, 3200, 3000);
    put_exec_end(&meta, 9, 3300, 2999);
    put_meta(w, &meta);
    ltr_trace_summary sum;
    ltr_trace *t = close_and_scan(w, path, &sum);
    assert_int_equal(ltr_trace_process_end_count(t), 2);
    const ltr_process_end *a = ltr_trace_process_end_at(t, 0), *b = ltr_trace_process_end_at(t, 1);
    assert_true(a->pid == 7 && a->ts == 1500 && a->exec_image == 1);
    assert_true(b->pid == 8 && b->ts == 2500 && b->exec_image == 1);
    ltr_trace_close(t);
    unlink(path);
}

/* A pid used again while its process's end waits for the blocks pending:
 * the new process's PROCESS record (in the same batch, after the end) goes
 * after the end too, since a PROCESS record never waits (deferrable): were
 * it written with the batch's other records before the blocks, the reader
 * would take it for an exec of the ended process. */
static void test_pid_used_again_after_its_end(void **state)
{
    (void)state;
    const char *path = gen_tmp("again.ltr");
    ltr_writer *w = open_with_meta(path);
    ltr_bytes meta = {0};
    put_process(&meta, 100, 1000);
    size_t nodes = ltr_bytes_record_begin(&meta, LTR_META_FRAME_NODES); /* a stack: images told apart */
    ltr_bytes_put_u32(&meta, 100);
    ltr_bytes_put_u32(&meta, 0);
    ltr_bytes_put_u16(&meta, 1);
    ltr_bytes_put_u32(&meta, 1);
    ltr_bytes_put_u64(&meta, 0x401000);
    ltr_bytes_record_end(&meta, nodes);
    put_meta(w, &meta);
    ltr_error err;
    assert_int_equal(put_block(w, 0, 6, 0, &err), 0); /* pid 100's, pending */
    put_process_end(&meta, 100, gen_ts(6));
    put_process(&meta, 100, gen_ts(7)); /* another process, the same pid */
    put_meta(w, &meta);
    ltr_trace_summary sum;
    ltr_trace *t = close_and_scan(w, path, &sum);
    assert_int_equal(ltr_trace_process_end_count(t), 1);
    assert_int_equal(ltr_trace_image_count(t), 1);
    if (!ltr_trace_image_at(t, 0)->reused)
        fail_msg("the pid used again read as an exec of the ended process");
    ltr_trace_close(t);
    unlink(path);
}

static void test_block_too_large(void **state)
{
    const char *path = gen_tmp("big.ltr");
    ltr_writer *w = open_with_meta(path);
    drops d = {0};
    ltr_writer_set_drop_callback(w, on_drop, &d);
    ltr_error err;
    static const uint8_t tiny[1];
    ltr_block_info info = {.pid = 1, .tid = 1, .event_count = 3};
    /* the writer refuses on the length alone, before reading the events */
    assert_int_equal(ltr_writer_block(w, &info, tiny, LTR_CHUNK_MAX_RAW, &err), -E2BIG);
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.events, 3);
    ltr_writer_close(w);
    unlink(path);
}

static void test_device_full(void **state)
{
    ltr_writer *w = (ltr_writer *)1;
    ltr_error err = {0};
    int fd = open("/dev/full", O_WRONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(ltr_writer_open_fd(&w, fd, "/dev/full", &err), -ENOSPC);
    assert_null(w);
    assert_int_equal(err.code, ENOSPC);
    assert_string_equal(err.msg, "writing /dev/full: No space left on device");
}

static void test_bad_path(void **state)
{
    ltr_writer *w;
    ltr_error err = {0};
    assert_int_equal(ltr_writer_open(&w, "/nonexistent/dir/t.ltr", &err), -ENOENT);
    assert_string_equal(err.msg, "creating /nonexistent/dir/t.ltr: No such file or directory");
}

static char *slurp_text(const char *path)
{
    static char buf[256];
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

static void write_text(const char *path, const char *text, mode_t mode)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    chmod(path, mode);
}

/* Whatever has the name already, the writer neither truncates it nor writes
 * through it: a trace is only ever a new file of mode 0600. */
static void test_only_new_files(void **state)
{
    const char *victim = gen_tmp("victim"), *planted = gen_tmp("planted.ltr"), *link = gen_tmp("link.ltr");
    const char *fresh = gen_tmp("fresh.ltr");
    write_text(victim, "root only", 0600);
    write_text(planted, "", 0666);
    assert_int_equal(symlink(victim, link), 0);
    ltr_writer *w = (ltr_writer *)1;
    ltr_error err = {0};
    assert_int_equal(ltr_writer_open(&w, link, &err), -EEXIST);
    assert_null(w);
    assert_non_null(strstr(err.msg, link));
    assert_string_equal(slurp_text(victim), "root only");
    assert_int_equal(ltr_writer_open(&w, planted, &err), -EEXIST);
    struct stat st;
    assert_int_equal(stat(planted, &st), 0);
    assert_int_equal(st.st_size, 0);
    /* A dangling symlink is refused too: it would create the file it names. */
    unlink(victim);
    assert_int_equal(ltr_writer_open(&w, link, &err), -EEXIST);
    assert_int_equal(access(victim, F_OK), -1);
    umask(0);
    assert_int_equal(ltr_writer_open(&w, fresh, &err), 0);
    ltr_writer_close(w);
    umask(022);
    assert_int_equal(lstat(fresh, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    unlink(fresh);
    unlink(planted);
    unlink(link);
}

static void fill_random(ltr_bytes *b, size_t n)
{
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        ltr_bytes_put_u8(b, (uint8_t)x);
    }
}

/* A write that fails after part of a chunk went out (the file size limit of
 * the process, like a disk filling up): the part is cut off again. */
static void test_failed_write_is_cut_off(void **state)
{
    const char *path = gen_tmp("fsize.ltr");
    ltr_writer *w = open_with_meta(path);
    drops d = {0};
    ltr_writer_set_drop_callback(w, on_drop, &d);
    ltr_error err;
    assert_int_equal(put_block(w, 0, 4, 0, &err), 0);
    assert_int_equal(ltr_writer_flush(w, 0, &err), 0);
    uint64_t good = ltr_writer_size(w);

    /* an incompressible event payload of 8 KiB in one blob event */
    ltr_bytes ev = {0};
    ltr_bytes_put_u32(&ev, 0);
    ltr_bytes_put_u32(&ev, 2);
    ltr_bytes_put_u64(&ev, gen_ts(4));
    fill_random(&ev, 8192);
    ltr_put_u32(ev.data, (uint32_t)ev.len);
    ltr_block_info info = {.pid = 100, .tid = 100, .seq = 1, .event_count = 1, .fixed_records = 1};

    struct rlimit old, lim;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, SIG_IGN);
    lim = old;
    lim.rlim_cur = good + 1000; /* the header and part of the payload fit */
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    assert_int_equal(ltr_writer_block(w, &info, ev.data, ev.len, &err), 0);
    int rc = ltr_writer_flush(w, 0, &err);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    assert_int_equal(rc, -EFBIG);
    assert_non_null(strstr(err.msg, "writing "));
    assert_non_null(strstr(err.msg, path));
    assert_int_equal(d.calls, 1);
    assert_int_equal(file_size(path), good);
    assert_int_equal(ltr_writer_size(w), good);
    read_back(path, 4, 0);

    /* space is back: the next chunk is written and readable, with no damage */
    assert_int_equal(put_block(w, 4, 3, 2, &err), 0);
    assert_int_equal(ltr_writer_flush(w, 1, &err), 0);
    ltr_writer_close(w);
    ltr_bytes_free(&ev);
    ltr_trace *t;
    assert_int_equal(ltr_trace_open(path, &t, &err), 0);
    const ltr_event *e;
    uint64_t want[] = {0, 1, 2, 3, 4, 5, 6}, k = 0, n;
    while (ltr_trace_next(t, &e, &err) > 0) {
        assert_int_equal(ltr_event_get_u64(e, "n", &n), 0);
        assert_int_equal(n, want[k++]);
    }
    assert_int_equal(k, 7);
    assert_int_equal(ltr_trace_damage_count(t), 0);
    ltr_trace_close(t);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_size_limit),
        cmocka_unit_test(test_chunk_target_triggers_writes),
        cmocka_unit_test(test_end_flushes_pending_events),
        cmocka_unit_test(test_repeating_events_searched_deeper),
        cmocka_unit_test(test_exec_end_names_its_image),
        cmocka_unit_test(test_module_load_over_a_loaded_one),
        cmocka_unit_test(test_process_end_after_pending_blocks),
        cmocka_unit_test(test_pid_used_again_after_its_end),
        cmocka_unit_test(test_block_too_large),
        cmocka_unit_test(test_device_full),
        cmocka_unit_test(test_bad_path),
        cmocka_unit_test(test_only_new_files),
        cmocka_unit_test(test_failed_write_is_cut_off),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
