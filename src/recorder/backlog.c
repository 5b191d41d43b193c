/*
 * recorder/backlog.c — the private backlog's FIFO (backlog.h says why).
 * One malloc per entry: blocks are whole buffers (16 KiB by default), and
 * a copy costs about 2 microseconds beside the 100 or so that writing it
 * does, so nothing cleverer is needed.
 */
#include "recorder/backlog.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int rec_backlog_push(rec_backlog *b, enum rec_backlog_kind kind, const ltr_block_info *info, const uint8_t *data,
                     uint32_t len)
{
    if (!rec_backlog_fits(b, len))
        return -ENOSPC;
    rec_backlog_entry *e = malloc(sizeof *e + len);
    if (!e)
        return -ENOMEM;
    e->next = NULL;
    e->info = *info;
    e->len = len;
    e->kind = (uint8_t)kind;
    if (len)
        memcpy(e->data, data, len);
    if (b->tail)
        b->tail->next = e;
    else
        b->head = e;
    b->tail = e;
    b->bytes += sizeof *e + len;
    b->pushed++;
    if (b->bytes > b->peak)
        b->peak = b->bytes;
    return 0;
}

void rec_backlog_drop(rec_backlog *b)
{
    rec_backlog_entry *e = b->head;
    if (!e)
        return;
    b->head = e->next;
    if (!b->head)
        b->tail = NULL;
    b->bytes -= sizeof *e + e->len;
    b->dropped++;
    free(e);
}

void rec_backlog_free(rec_backlog *b)
{
    while (b->head)
        rec_backlog_drop(b);
}
