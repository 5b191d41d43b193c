/*
 * recorder/saveorder.c — memory mode: the order a save writes an exec'd
 * process's images in.
 *
 * A reader tells a process's images apart by the file's order: the blocks
 * before the new image's PROCESS record are the old image's, read against
 * its frame nodes (docs/trace-format.md; the new image numbers its nodes
 * from 1 again). A file-mode trace is written in that order as it goes. A
 * save wrote all the metadata it kept first, then every buffer: every
 * block of an exec'd process came after its last image's PROCESS record,
 * and the old image's allocations took the new image's frames (heap-target
 * exec under a memory-mode session: its 3 400 bytes from mode_exec and 3 500
 * from main, both shown under main).
 *
 * So a save goes in rounds. A process's PROCESS records number its images
 * (0, 1, ...); each kept record of a process is of the image whose PROCESS
 * record is the last before it, every other record of image 0. Round g
 * writes the records of image g, then the buffers of the attachments whose
 * PROCESS record began an image g. The attachment of a record is known from
 * the recorder's own list (r->owners: it writes the PROCESS records), a
 * buffer's from the ring (ltr_ring_buf.owner). Without an exec in what is
 * kept, one round: as before. An image's second producer (the heap agent
 * beside libltr-provider.so) shares the first's record: its buffers go in
 * that record's round (r->aliases), not the process's first image's, where
 * the reader took them for the image before an exec.
 */
#include "recorder/internal.h"
#include "base/hmap.h"
#include "prim/prim.h"

#include <stdlib.h>
#include <string.h>

typedef struct pid_images {
    uint64_t key;   /* pid + 1 */
    uint32_t count; /* its PROCESS records so far */
} pid_images;

typedef struct owner_image {
    uint64_t key; /* owner + 1 */
    uint32_t image;
} owner_image;

/* The image of the record at off, and the PROCESS count of its pid bumped
 * if it is one (with its owner's image noted); -1 without memory. */
static int64_t record_image(rec_save_rounds *sr, const struct rec_owner *owners, size_t nowners, size_t *next_owner,
                            const uint8_t *rec, uint32_t size)
{
    /* LAYOUT and PROVIDER records name the process that described them
     * (kept.c lets them go with it), but a layout id is the session's, one
     * for good: they go first, before every buffer, as before they named
     * it. A process's second producer (the heap agent beside
     * libltr-provider.so) is a PROCESS record of its own, a round of its
     * own: the agent's layouts described after it went with that round,
     * after the agent's buffers, whose events then had no layout. */
    uint16_t kind = ltr_get_u16(rec);
    int64_t pid = kind == LTR_META_LAYOUT || kind == LTR_META_PROVIDER ? -1 : rec_record_pid(rec, size);
    if (pid < 0)
        return 0;
    pid_images *p = an_hmap_put(&sr->pids, (uint64_t)pid + 1, NULL);
    if (!p)
        return -1;
    if (ltr_get_u16(rec) != LTR_META_PROCESS || size < LTR_RECORD_HEADER_SIZE + 16)
        return p->count ? p->count - 1 : 0;
    uint32_t image = p->count++;
    uint64_t ts = ltr_get_u64(rec + LTR_RECORD_HEADER_SIZE + 8);
    size_t j = *next_owner; /* in the same order as the records (kept.c) */
    while (j < nowners && !(owners[j].pid == (uint32_t)pid && owners[j].ts == ts))
        j++;
    if (j < nowners) {
        owner_image *o = an_hmap_put(&sr->owners, (uint64_t)owners[j].owner + 1, NULL);
        if (!o)
            return -1;
        o->image = image;
        *next_owner = j + 1;
    }
    return image;
}

int rec_save_rounds_plan(recorder *r, rec_save_rounds *sr)
{
    memset(sr, 0, sizeof *sr);
    an_hmap_init(&sr->pids, sizeof(pid_images));
    an_hmap_init(&sr->owners, sizeof(owner_image));
    sr->rounds = 1;
    const uint8_t *d = r->meta_kept.data;
    size_t next_owner = 0;
    /* first: how many rounds (an image past 0 anywhere?) */
    uint32_t most = 0;
    for (size_t off = 0; off + LTR_RECORD_HEADER_SIZE <= r->meta_kept.len; off += ltr_get_u32(d + off + 4)) {
        int64_t image = record_image(sr, r->owners, r->nowners, &next_owner, d + off, ltr_get_u32(d + off + 4));
        if (image < 0)
            return -1;
        most = (uint32_t)image > most ? (uint32_t)image : most;
    }
    sr->scanned = r->meta_kept.len;
    if (!most)
        return 0;
    sr->rounds = most + 1;
    sr->meta = calloc(sr->rounds, sizeof *sr->meta);
    if (!sr->meta)
        return -1;
    for (size_t i = 0; i < r->naliases; i++) {
        const owner_image *of = an_hmap_get(&sr->owners, (uint64_t)r->aliases[i].of + 1);
        if (!of)
            continue; /* its record's owner not kept: the first image's round, as any unknown */
        uint32_t image = of->image; /* before the put, which may move the entries */
        owner_image *o = an_hmap_put(&sr->owners, (uint64_t)r->aliases[i].owner + 1, NULL);
        if (!o)
            return -1;
        o->image = image;
    }
    /* again, each record into its round's bytes, in order */
    an_hmap_free(&sr->pids);
    an_hmap_init(&sr->pids, sizeof(pid_images));
    next_owner = 0;
    for (size_t off = 0; off < sr->scanned; off += ltr_get_u32(d + off + 4)) {
        uint32_t size = ltr_get_u32(d + off + 4);
        int64_t image = record_image(sr, r->owners, r->nowners, &next_owner, d + off, size);
        if (image < 0)
            return -1;
        ltr_bytes_put_mem(&sr->meta[image], d + off, size);
        if (sr->meta[image].failed)
            return -1;
    }
    return 1;
}

unsigned rec_round_of(const rec_save_rounds *sr, uint32_t owner)
{
    const owner_image *o = sr->rounds > 1 ? an_hmap_get(&sr->owners, (uint64_t)owner + 1) : NULL;
    return o ? o->image : 0; /* an attachment not known: the process's first image */
}

void rec_add_alias(recorder *r, uint32_t owner, uint32_t of)
{
    if (r->cfg.mode != LTR_MODE_FILE &&
        ltr_reserve((void **)&r->aliases, &r->capaliases, r->naliases, sizeof *r->aliases, 16) == 0)
        r->aliases[r->naliases++] = (struct rec_owner_alias){owner, of};
}

void rec_save_rounds_free(rec_save_rounds *sr)
{
    for (unsigned g = 0; sr->meta && g < sr->rounds; g++)
        ltr_bytes_free(&sr->meta[g]);
    free(sr->meta);
    an_hmap_free(&sr->pids);
    an_hmap_free(&sr->owners);
    memset(sr, 0, sizeof *sr);
}
