/*
 * analyze/files.c — the file model (files.h): two hash maps, descriptors to
 * the path of their last open, and (process, path) to its figures.
 */
#include "analyze/files.h"

#include <stdlib.h>

typedef struct an_fd_path {
    uint64_t key;
    uint32_t path;
} an_fd_path;

void an_files_init(an_files *f)
{
    an_hmap_init(&f->fds, sizeof(an_fd_path));
    an_hmap_init(&f->stats, sizeof(an_file_stat));
}

void an_files_free(an_files *f)
{
    an_hmap_free(&f->fds);
    an_hmap_free(&f->stats);
}

static uint64_t fd_key(uint32_t pid, int64_t fd)
{
    return (uint64_t)pid << 32 | (uint32_t)fd;
}

static an_file_stat *stat_of(an_files *f, uint32_t pid, uint32_t path)
{
    int created;
    an_file_stat *s = an_hmap_put(&f->stats, (uint64_t)pid << 32 | path, &created);
    if (!s)
        f->oom = 1;
    return s;
}

void an_files_open(an_files *f, uint32_t pid, uint64_t ts, int64_t fd, uint32_t path, uint64_t error)
{
    if (ts > f->to)
        return;
    if (fd >= 0) {
        int created;
        an_fd_path *e = an_hmap_put(&f->fds, fd_key(pid, fd), &created);
        if (!e) {
            f->oom = 1;
            return;
        }
        e->path = path;
    }
    if (ts < f->from)
        return;
    an_file_stat *s = stat_of(f, pid, path);
    if (s) {
        s->opens++;
        s->failed += fd < 0 || error;
    }
}

void an_files_close(an_files *f, uint32_t pid, uint64_t ts, int64_t fd, uint64_t rbytes, uint64_t wbytes,
                    int closed)
{
    if (ts > f->to)
        return;
    uint64_t key = fd_key(pid, fd);
    an_fd_path *e = fd >= 0 ? an_hmap_get(&f->fds, key) : NULL;
    uint32_t path = e ? e->path : 0;
    if (e && closed)
        an_hmap_del(&f->fds, key);
    if (ts < f->from || (!rbytes && !wbytes))
        return;
    an_file_stat *s = stat_of(f, pid, path);
    if (s) {
        s->rbytes += rbytes;
        s->wbytes += wbytes;
    }
}

static int by_bytes(const void *x, const void *y)
{
    const an_file_stat *a = x, *b = y;
    if (a->key >> 32 != b->key >> 32)
        return a->key >> 32 < b->key >> 32 ? -1 : 1;
    uint64_t ba = a->rbytes + a->wbytes, bb = b->rbytes + b->wbytes;
    if (ba != bb)
        return ba > bb ? -1 : 1;
    if (a->opens != b->opens)
        return a->opens > b->opens ? -1 : 1;
    return a->key < b->key ? -1 : a->key > b->key;
}

an_file_stat *an_files_ranked(const an_files *f, size_t *n)
{
    *n = 0;
    an_file_stat *v = f->stats.n ? malloc(f->stats.n * sizeof *v) : NULL;
    if (!v)
        return NULL;
    size_t pos = 0;
    an_file_stat *s;
    while ((s = an_hmap_next(&f->stats, &pos)))
        v[(*n)++] = *s;
    qsort(v, *n, sizeof *v, by_bytes);
    return v;
}
