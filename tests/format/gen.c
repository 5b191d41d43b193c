/*
 * tests/format/gen.c — the known traces of gen.h.
 */
#include "gen.h"

#include "format/chunk.h"

#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GUID_A "0a1b2c3d-4e5f-4061-8293-a4b5c6d7e8f9"
#define GUID_B "11111111-2222-4333-8444-555555555555"

void gen_header(ltr_bytes *kv)
{
    char buf[64];
    ltr_bytes_put_kv(kv, "format.version", "1");
    ltr_bytes_put_kv(kv, "session.name", "gen-session");
    ltr_bytes_put_kv(kv, "session.mode", "file");
    ltr_bytes_put_kv(kv, "session.buffer_size", "65536");
    ltr_bytes_put_kv(kv, "session.buffers", "8");
    ltr_bytes_put_kv(kv, "session.providers", "Test.Alpha{" GUID_A "}:0xff:5");
    ltr_bytes_put_kv(kv, "host.name", "genhost");
    snprintf(buf, sizeof buf, "%llu", GEN_START_NS);
    ltr_bytes_put_kv(kv, "clock.start_ns", buf);
    snprintf(buf, sizeof buf, "%llu", GEN_WALL_NS);
    ltr_bytes_put_kv(kv, "clock.wall_start_ns", buf);
}

static void put_guid(ltr_bytes *b, const char *text)
{
    ltr_guid g;
    ltr_guid_parse(text, &g);
    ltr_bytes_put_mem(b, g.b, 16);
}

static void put_layout(ltr_bytes *b, uint32_t id, const char *guid, const char *name, const char *fields)
{
    ltr_guid g;
    ltr_guid_parse(guid, &g);
    gen_layout(b, id, &g, (uint16_t)(100 + id), name, fields);
}

void gen_layout(ltr_bytes *b, uint32_t id, const ltr_guid *g, uint16_t event_id, const char *name,
                const char *fields)
{
    /* fields: "TYPE:name,TYPE:name" with TYPE a number */
    size_t r = ltr_bytes_record_begin(b, LTR_META_LAYOUT);
    ltr_bytes_put_u32(b, id);
    ltr_bytes_put_mem(b, g->b, 16);
    ltr_bytes_put_u16(b, event_id);
    ltr_bytes_put_u8(b, 4);
    ltr_bytes_put_u8(b, 0);
    ltr_bytes_put_u64(b, 0x10);
    ltr_bytes_put_str(b, name);
    char copy[256];
    snprintf(copy, sizeof copy, "%s", fields);
    uint16_t n = 0;
    for (const char *p = copy; *p; p++)
        n += *p == ':';
    ltr_bytes_put_u16(b, n);
    for (char *save, *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(tok, ':');
        ltr_bytes_put_u8(b, (uint8_t)atoi(tok));
        ltr_bytes_put_str(b, colon + 1);
    }
    ltr_bytes_record_end(b, r);
}

static void put_process(ltr_bytes *b, uint32_t pid, const char *exe, const char *arg1)
{
    size_t r = ltr_bytes_record_begin(b, LTR_META_PROCESS);
    ltr_bytes_put_u32(b, pid);
    ltr_bytes_put_u32(b, 1);
    ltr_bytes_put_u64(b, GEN_START_NS - 5);
    ltr_bytes_put_str(b, exe);
    ltr_bytes_put_u16(b, 2);
    ltr_bytes_put_str(b, exe);
    ltr_bytes_put_str(b, arg1);
    ltr_bytes_record_end(b, r);
}

void gen_thread(ltr_bytes *b, uint32_t pid, uint32_t tid, const char *name)
{
    size_t r = ltr_bytes_record_begin(b, LTR_META_THREAD);
    ltr_bytes_put_u32(b, pid);
    ltr_bytes_put_u32(b, tid);
    ltr_bytes_put_u64(b, GEN_START_NS);
    ltr_bytes_put_str(b, name);
    ltr_bytes_record_end(b, r);
}

void gen_metadata(ltr_bytes *b)
{
    size_t r = ltr_bytes_record_begin(b, LTR_META_PROVIDER);
    put_guid(b, GUID_A);
    ltr_bytes_put_str(b, "Test.Alpha");
    ltr_bytes_record_end(b, r);
    r = ltr_bytes_record_begin(b, LTR_META_PROVIDER);
    put_guid(b, GUID_B);
    ltr_bytes_put_str(b, "Test.Beta");
    ltr_bytes_record_end(b, r);
    put_layout(b, 1, GUID_A, "Alloc", "4:n,12:addr,3:size,10:tag,7:delta,13:ok");
    put_layout(b, 2, GUID_A, "Mixed", "4:n,1:a,2:b,5:c,6:d,8:e,9:f,11:data,10:name");
    put_layout(b, 3, GUID_B, "Tick", "4:n,14:u,15:i,16:p");
    put_process(b, 100, "/usr/bin/alpha", "--x");
    put_process(b, 200, "/usr/bin/beta", "with space");
    gen_thread(b, 100, 100, "alpha-main");
    gen_thread(b, 100, 101, "alpha-worker");
    gen_thread(b, 200, 200, "beta-main");
}

void gen_collector(ltr_bytes *b, const uint64_t *v, int n)
{
    size_t r = ltr_bytes_record_begin(b, LTR_COUNTER_COLLECTOR);
    ltr_bytes_put_u16(b, 0);
    ltr_bytes_put_str(b, "events");
    ltr_bytes_put_u32(b, 65536);
    ltr_bytes_put_u32(b, 8);
    for (int i = 0; i < n; i++)
        ltr_bytes_put_u64(b, v[i]);
    ltr_bytes_record_end(b, r);
}

void gen_counters(ltr_bytes *b)
{
    static const uint64_t v[6] = {10, 20, 30, 40, 50, 60}; /* written, lost, bufs, bufs lost, over, bufs over */
    gen_collector(b, v, 6); /* of a recorder before shm_damage */
    size_t r = ltr_bytes_record_begin(b, LTR_COUNTER_PROCESS_LOST);
    ltr_bytes_put_u16(b, 0);
    ltr_bytes_put_u32(b, 200);
    ltr_bytes_put_u64(b, 7);
    ltr_bytes_put_u64(b, 1);
    ltr_bytes_record_end(b, r);
}

uint64_t gen_ts(uint64_t n) { return GEN_START_NS + 1000 * n + 1; }

static void tag_of(uint64_t n, char *buf, size_t cap)
{
    /* includes a quote, a tab and a non-ASCII letter to exercise escaping */
    snprintf(buf, cap, "t\"%llu\t\xc3\xa9", (unsigned long long)n);
}

/* The payload of event n, in the field order of its layout. */
static void gen_payload(ltr_bytes *b, uint64_t n)
{
    uint32_t layout = (uint32_t)(1 + n % 3);
    ltr_bytes_put_u64(b, n);
    char tag[64];
    tag_of(n, tag, sizeof tag);
    if (layout == 1) {
        ltr_bytes_put_u64(b, 0x7f0000000000ull + n * 16);
        ltr_bytes_put_u32(b, (uint32_t)(n * 3));
        ltr_bytes_put_str(b, tag);
        ltr_bytes_put_u32(b, (uint32_t)(-(int32_t)n));
        ltr_bytes_put_u8(b, (uint8_t)(n & 1));
    } else if (layout == 2) {
        ltr_bytes_put_u8(b, (uint8_t)n);
        ltr_bytes_put_u16(b, (uint16_t)(n * 7));
        ltr_bytes_put_u8(b, (uint8_t)(int8_t)-5);
        ltr_bytes_put_u16(b, (uint16_t)(int16_t)-300);
        ltr_bytes_put_u64(b, (uint64_t)(-(int64_t)n * 1000000007));
        double f = (double)n + 0.5;
        uint64_t fb;
        memcpy(&fb, &f, 8);
        ltr_bytes_put_u64(b, fb);
        uint8_t data[3] = {0xde, 0xad, (uint8_t)n};
        ltr_bytes_put_u32(b, 3);
        ltr_bytes_put_mem(b, data, 3);
        ltr_bytes_put_str(b, tag);
    } else {
        uint8_t v[3 * LTR_VARINT_MAX];
        size_t k = ltr_put_uvar(v, n * 300);
        k += ltr_put_uvar(v + k, ltr_zigzag(-(int64_t)n - 100));
        k += ltr_put_uvar(v + k, 0x7f0000001000ull + n);
        ltr_bytes_put_mem(b, v, k);
    }
}

void gen_event(ltr_bytes *b, uint64_t n, uint64_t ts)
{
    size_t start = b->len;
    ltr_bytes_put_u32(b, 0);
    ltr_bytes_put_u32(b, (uint32_t)(1 + n % 3));
    ltr_bytes_put_u64(b, ts);
    gen_payload(b, n);
    if (!b->failed)
        ltr_put_u32(b->data + start, (uint32_t)(b->len - start));
}

void gen_cevent(ltr_bytes *b, uint64_t n, uint64_t ts, uint64_t prev_ts)
{
    ltr_bytes payload = {0};
    gen_payload(&payload, n);
    uint8_t h[LTR_CEVENT_HEADER_MAX];
    size_t hn = ltr_put_cevent_header(h, (uint32_t)(1 + n % 3), ts, prev_ts, (uint32_t)payload.len);
    ltr_bytes_put_mem(b, h, hn);
    ltr_bytes_put_mem(b, payload.data, payload.len);
    b->failed |= payload.failed;
    ltr_bytes_free(&payload);
}

void gen_block_ids(size_t i, uint32_t *pid, uint32_t *tid)
{
    static const uint32_t ids[3][2] = {{100, 100}, {100, 101}, {200, 200}};
    *pid = ids[i % 3][0];
    *tid = ids[i % 3][1];
}

#define CHECK(cond) do { if (!(cond)) return __LINE__; } while (0)

static int check_alloc(const ltr_event *ev, uint64_t n)
{
    uint64_t u;
    int64_t i;
    const char *s;
    size_t len;
    char tag[64];
    tag_of(n, tag, sizeof tag);
    CHECK(ltr_event_get_u64(ev, "addr", &u) == 0 && u == 0x7f0000000000ull + n * 16);
    CHECK(ltr_event_get_u64(ev, "size", &u) == 0 && u == n * 3);
    CHECK(ltr_event_get_str(ev, "tag", &s, &len) == 0 && len == strlen(tag) && !memcmp(s, tag, len));
    CHECK(ltr_event_get_i64(ev, "delta", &i) == 0 && i == -(int64_t)n);
    CHECK(ltr_event_get_u64(ev, "ok", &u) == 0 && u == (n & 1));
    return 0;
}

static int check_mixed(const ltr_event *ev, uint64_t n)
{
    uint64_t u;
    int64_t i;
    double f;
    const uint8_t *p;
    size_t len;
    CHECK(ltr_event_get_u64(ev, "a", &u) == 0 && u == (uint8_t)n);
    CHECK(ltr_event_get_u64(ev, "b", &u) == 0 && u == (uint16_t)(n * 7));
    CHECK(ltr_event_get_i64(ev, "c", &i) == 0 && i == -5);
    CHECK(ltr_event_get_i64(ev, "d", &i) == 0 && i == -300);
    CHECK(ltr_event_get_i64(ev, "e", &i) == 0 && i == -(int64_t)n * 1000000007);
    CHECK(ltr_event_get_f64(ev, "f", &f) == 0 && f == (double)n + 0.5);
    CHECK(ltr_event_get_blob(ev, "data", &p, &len) == 0 && len == 3 && p[0] == 0xde && p[2] == (uint8_t)n);
    CHECK(ltr_event_get_u64(ev, "c", &u) == -EINVAL);
    return 0;
}

static int check_tick(const ltr_event *ev, uint64_t n)
{
    uint64_t u;
    int64_t i;
    ltr_trace_value v;
    CHECK(ltr_event_get_u64(ev, "u", &u) == 0 && u == n * 300);
    CHECK(ltr_event_get_i64(ev, "i", &i) == 0 && i == -(int64_t)n - 100);
    CHECK(ltr_event_get_u64(ev, "p", &u) == 0 && u == 0x7f0000001000ull + n);
    CHECK(ltr_event_field(ev, 3, &v) == 0 && v.type == LTR_TYPE_POINTER);
    CHECK(ev->layout->fields[3].type == LTR_TYPE_PVAR);
    return 0;
}

int gen_check_event(const ltr_event *ev, uint64_t n)
{
    uint64_t got;
    CHECK(ev->layout && ev->layout->id == 1 + n % 3);
    CHECK(ev->ts == gen_ts(n));
    CHECK(ltr_event_get_u64(ev, "n", &got) == 0 && got == n);
    CHECK(ev->layout->provider && !strcmp(ev->layout->provider->name, n % 3 == 2 ? "Test.Beta" : "Test.Alpha"));
    if (n % 3 == 0)
        return check_alloc(ev, n);
    if (n % 3 == 1)
        return check_mixed(ev, n);
    return check_tick(ev, n);
}

static void mark(ltr_writer *w, gen_marks *m, uint64_t events)
{
    if (m && m->n < GEN_MAX_MARKS && (m->n == 0 || m->size[m->n - 1] != ltr_writer_size(w))) {
        m->size[m->n] = ltr_writer_size(w);
        m->events[m->n++] = events;
    }
}

/* ltr_writer_index writes two chunks (INDEX, then SPANS): the mark between
 * them, from the first one's header in the file at its start, from. */
static void mark_index(ltr_writer *w, gen_marks *m, const char *path, uint64_t from, uint64_t events)
{
    uint8_t hdr[LTR_CHUNK_HEADER_SIZE];
    ltr_chunk_header h;
    FILE *f = m && ltr_writer_size(w) > from ? fopen(path, "rb") : NULL;
    if (f && !fseek(f, (long)from, SEEK_SET) && fread(hdr, 1, sizeof hdr, f) == sizeof hdr &&
        ltr_chunk_header_decode(hdr, &h) == LTR_CHUNK_OK && m->n < GEN_MAX_MARKS &&
        from + LTR_CHUNK_HEADER_SIZE + h.payload_size < ltr_writer_size(w)) {
        m->size[m->n] = from + LTR_CHUNK_HEADER_SIZE + h.payload_size;
        m->events[m->n++] = events;
    }
    if (f)
        fclose(f);
}

static int write_blocks(ltr_writer *w, const gen_opts *o, gen_marks *m, ltr_error *err)
{
    uint64_t n = 0;
    for (size_t i = 0; i < o->blocks; i++) {
        ltr_bytes ev = {0};
        for (size_t k = 0; k < o->events_per_block; k++, n++)
            if (o->fixed)
                gen_event(&ev, n, gen_ts(n));
            else
                gen_cevent(&ev, n, gen_ts(n), k ? gen_ts(n - 1) : 0);
        ltr_block_info info = {.collector = 0, .seq = i, .event_count = (uint32_t)o->events_per_block,
                               .fixed_records = (uint8_t)o->fixed};
        gen_block_ids(i, &info.pid, &info.tid);
        int rc = ltr_writer_block(w, &info, ev.data, ev.len, err);
        ltr_bytes_free(&ev);
        if (rc == 0 && o->chunk_target == 0)
            rc = ltr_writer_flush(w, 0, err);
        if (rc < 0)
            return rc;
        mark(w, m, n);
    }
    int rc = ltr_writer_flush(w, 0, err);
    mark(w, m, n);
    return rc;
}

static int write_kv(ltr_writer *w, uint16_t type, void (*fill)(ltr_bytes *), ltr_error *err)
{
    ltr_bytes b = {0};
    fill(&b);
    int rc = ltr_writer_kv(w, type, &b, err);
    ltr_bytes_free(&b);
    return rc;
}

static void fill_end(ltr_bytes *b)
{
    ltr_bytes_put_kv(b, "clock.end_ns", "1000002000000");
    ltr_bytes_put_kv(b, "session.description", "gen \"desc\"");
}

static int write_records(ltr_writer *w, int (*fn)(ltr_writer *, const void *, size_t, ltr_error *),
                         void (*fill)(ltr_bytes *), ltr_error *err)
{
    ltr_bytes b = {0};
    fill(&b);
    int rc = fn(w, b.data, b.len, err);
    ltr_bytes_free(&b);
    return rc;
}

int gen_write(const char *path, const gen_opts *o, gen_marks *m)
{
    ltr_writer *w;
    ltr_error err;
    if (m)
        m->n = 0;
    int rc = ltr_writer_open(&w, path, &err);
    if (rc < 0)
        return rc;
    ltr_writer_set_chunk_target(w, o->chunk_target ? o->chunk_target : (1u << 30));
    mark(w, m, 0);
    rc = write_kv(w, LTR_CHUNK_HEADER, gen_header, &err);
    mark(w, m, 0);
    if (rc == 0)
        rc = write_records(w, ltr_writer_metadata, gen_metadata, &err);
    mark(w, m, 0);
    if (rc == 0)
        rc = write_blocks(w, o, m, &err);
    if (rc == 0 && o->with_end) {
        rc = write_records(w, ltr_writer_counters, gen_counters, &err);
        mark(w, m, o->blocks * o->events_per_block);
        uint64_t from = ltr_writer_size(w);
        if (rc == 0)
            rc = ltr_writer_index(w, &err); /* chunks of their own, marked as each is */
        mark_index(w, m, path, from, o->blocks * o->events_per_block);
        mark(w, m, o->blocks * o->events_per_block);
        if (rc == 0)
            rc = write_kv(w, LTR_CHUNK_END, fill_end, &err);
        mark(w, m, o->blocks * o->events_per_block);
    }
    ltr_writer_close(w);
    return rc;
}

ltr_writer *gen_open(const char *path)
{
    ltr_writer *w;
    ltr_error err;
    if (ltr_writer_open(&w, path, &err) < 0)
        return NULL;
    ltr_bytes b = {0};
    gen_header(&b);
    int rc = ltr_writer_kv(w, LTR_CHUNK_HEADER, &b, &err);
    b.len = 0;
    gen_metadata(&b);
    if (rc == 0)
        rc = ltr_writer_metadata(w, b.data, b.len, &err);
    ltr_bytes_free(&b);
    if (rc < 0) {
        ltr_writer_close(w);
        return NULL;
    }
    return w;
}

static char tmp_dir[400];
static pid_t tmp_owner;

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

/* The directory goes with the process that made it (not with a child it
 * forked): each test program of tests/format left one in /tmp, 12 a run of
 * the suite, with the traces it wrote. LTR_TEST_KEEP keeps it, as it keeps
 * the sandboxes (testutil.c). */
static void remove_tmp_dir(void)
{
    if (getpid() == tmp_owner && !getenv("LTR_TEST_KEEP"))
        nftw(tmp_dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

const char *gen_tmp(const char *name)
{
    static char buf[8][512];
    static int k;
    char *dir = tmp_dir;
    if (!dir[0]) { /* a directory of this process's own: a name with only its pid in it was taken again by a
                    * later test process with that pid (pid_max 32768 here), whose writer then refused it */
        const char *base = getenv("TMPDIR");
        snprintf(dir, sizeof tmp_dir, "%s/ltr-test-XXXXXX", base && *base ? base : "/tmp");
        if (mkdtemp(dir)) {
            tmp_owner = getpid();
            atexit(remove_tmp_dir);
        } else {
            snprintf(dir, sizeof tmp_dir, "%s", base && *base ? base : "/tmp");
        }
    }
    char *out = buf[k++ % 8];
    snprintf(out, 512, "%s/%d-%s", dir, k, name);
    return out;
}

uint8_t *gen_slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = malloc(n > 0 ? (size_t)n : 1);
    if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
        free(p);
        p = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return p;
}

int gen_spit(const char *path, const void *p, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t n = fwrite(p, 1, len, f);
    return fclose(f) == 0 && n == len ? 0 : -1;
}

gen_file *gen_file_new(const char *name, const char *work_name, const gen_opts *o)
{
    gen_file *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->path = strdup(gen_tmp(name));
    f->work = strdup(gen_tmp(work_name));
    if (!f->path || !f->work || gen_write(f->path, o, &f->m) < 0 || !(f->data = gen_slurp(f->path, &f->len))) {
        gen_file_free(f);
        return NULL;
    }
    return f;
}

void gen_file_free(gen_file *f)
{
    if (!f)
        return;
    if (f->path)
        unlink(f->path);
    if (f->work)
        unlink(f->work);
    free((void *)f->path);
    free((void *)f->work);
    free(f->data);
    free(f);
}

void gen_process(ltr_bytes *b, uint32_t pid)
{
    size_t r = ltr_bytes_record_begin(b, LTR_META_PROCESS);
    ltr_bytes_put_u32(b, pid);
    ltr_bytes_put_u32(b, 1);
    ltr_bytes_put_u64(b, GEN_START_NS);
    ltr_bytes_put_str(b, "/bin/x");
    ltr_bytes_put_u16(b, 0);
    ltr_bytes_record_end(b, r);
}

int gen_raw_chunks(const char *path, uint32_t version, const ltr_bytes *chunks, const uint16_t *types, size_t n)
{
    ltr_bytes f = {0};
    uint8_t *h = ltr_bytes_grow(&f, LTR_FILE_HEADER_SIZE);
    memset(h, 0, LTR_FILE_HEADER_SIZE);
    memcpy(h, LTR_FILE_MAGIC, 8);
    ltr_put_u32(h + 8, version);
    for (size_t i = 0; i < n; i++) {
        ltr_chunk_header c = {.type = types ? types[i] : LTR_CHUNK_METADATA, .payload_size = (uint32_t)chunks[i].len,
                              .raw_size = (uint32_t)chunks[i].len, .seq = i,
                              .payload_crc = ltr_crc32(chunks[i].data, chunks[i].len)};
        ltr_chunk_header_encode(&c, ltr_bytes_grow(&f, LTR_CHUNK_HEADER_SIZE));
        ltr_bytes_put_mem(&f, chunks[i].data, chunks[i].len);
    }
    int rc = f.failed ? -1 : gen_spit(path, f.data, f.len);
    ltr_bytes_free(&f);
    return rc;
}

int gen_raw_trace(const char *path, uint32_t version, const ltr_bytes *meta, size_t n)
{
    return gen_raw_chunks(path, version, meta, NULL, n);
}
