/* cs_conn_out.c — a conn's output queue: copied bytes, file ranges and encrypted file ranges, sent
 * in order with sendmsg (gathering memory items), sendfile(2), and pread + decrypt + send of pieces. */
#define _GNU_SOURCE /* MSG_MORE */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "cs_internal.h"

/* File offsets are handed to sendfile(2) as off_t. */
_Static_assert(sizeof(off_t) == sizeof(int64_t), "64-bit off_t required");
/* A read clamped to whole units of a piece never passes its buffer's end. */
_Static_assert(CS_XTS_PIECE % CS_XTS_UNIT == 0 && CS_XTS_LOOP_READ % CS_XTS_UNIT == 0
                   && CS_XTS_LOOP_READ <= CS_XTS_PIECE,
               "pieces hold whole units");

/* A new memory item's least capacity, so later small writes append in place, not allocate. */
#define MEM_ITEM_MIN (16 * 1024)
/* Memory items gathered into one sendmsg. */
#define IOV_BATCH 64
/* Bytes sent per writable event, so a fast peer cannot starve the loop (the level-triggered poll
 * calls again while the socket stays writable). */
#define FLUSH_BUDGET (2 * 1024 * 1024)
/* Bytes cs_conn_sendfile sends before returning; the rest is queued. */
#define DIRECT_FILE_BUDGET (1024 * 1024)
/* Largest body whose head goes with MSG_MORE (cs_conn_send_head_file). On loopback 16 KiB
 * responses gained 30% req/s (one packet, one wake-up), 64 KiB ones lost 45% (past one 64 KiB
 * segment, twice the CPU, also with TCP_CORK: 21 -> 42 us): only bodies well inside a segment. */
#define CS_SHARED_PACKET_MAX (32 * 1024)

static size_t min_size(size_t a, size_t b)
{
    return a < b ? a : b;
}

static void queue_push(cs_conn *c, cs_out_item *it)
{
    it->next = NULL;
    if (c->tail != NULL)
        c->tail->next = it;
    else
        c->head = it;
    c->tail = it;
    c->drain_pending = 1;
}

/* A piece buffer for an encrypted range: a spare of the loop, or a new one. */
static uint8_t *piece_take(cs_loop *loop)
{
    if (loop->xts_spares > 0)
        return loop->xts_spare[--loop->xts_spares];
    return aligned_alloc(64, CS_XTS_PIECE);
}

static void piece_give(cs_loop *loop, uint8_t *piece)
{
    if (piece == NULL)
        return;
    if (loop->xts_spares < CS_XTS_SPARE_PIECES)
        loop->xts_spare[loop->xts_spares++] = piece;
    else
        free(piece);
}

static void item_free(cs_conn *c, cs_out_item *it)
{
    /* Never with a read-ahead in flight: the conn's close waits for it. */
    piece_give(c->loop, it->piece);
    piece_give(c->loop, it->ahead);
    free(it);
}

void cs__out_free_loop(cs_loop *loop)
{
    while (loop->xts_spares > 0)
        free(loop->xts_spare[--loop->xts_spares]);
    cs_xts_dec_free(loop->xts_dec);
    loop->xts_dec = NULL;
}

static void queue_pop(cs_conn *c)
{
    cs_out_item *it = c->head;
    c->head = it->next;
    if (c->head == NULL)
        c->tail = NULL;
    item_free(c, it);
}

void cs__out_free_all(cs_conn *c)
{
    while (c->head != NULL)
        queue_pop(c);
    c->queued = 0;
}

static int queue_memory(cs_conn *c, const uint8_t *p, size_t len)
{
    cs_out_item *t = c->tail;
    if (t != NULL && t->kind == CS_OUT_MEMORY) {
        size_t used = t->start + t->len;
        size_t k = min_size(t->cap - used, len);
        memcpy(t->data + used, p, k);
        t->len += k;
        c->queued += k;
        p += k;
        len -= k;
    }
    if (len == 0)
        return 0;
    size_t cap = len < MEM_ITEM_MIN ? MEM_ITEM_MIN : len;
    cs_out_item *it = malloc(sizeof *it + cap);
    if (it == NULL)
        return -ENOMEM;
    memset(it, 0, sizeof *it);
    it->cap = cap;
    it->len = len;
    memcpy(it->data, p, len);
    queue_push(c, it);
    c->queued += len;
    return 0;
}

/* A new item for a range of a file (plain: xts NULL), not queued yet. */
static cs_out_item *range_item_new(int kind, int fd, const cs_xts *xts, uint64_t file_id, int64_t offset, size_t len)
{
    cs_out_item *it = calloc(1, sizeof *it);
    if (it == NULL)
        return NULL;
    it->kind = kind;
    it->fd = fd;
    it->offset = offset;
    it->len = len;
    it->xts = xts;
    it->file_id = file_id;
    return it;
}

/* Queues a file range behind what is queued, merged with an adjacent range of the same file and key. */
static int queue_range(cs_conn *c, int kind, int fd, const cs_xts *xts, uint64_t file_id, int64_t offset, size_t len)
{
    cs_out_item *t = c->tail;
    if (t != NULL && t->kind == kind && t->fd == fd && t->xts == xts && t->file_id == file_id
        && t->offset + (int64_t)t->len == offset) {
        t->len += len;
        c->queued += len;
        return 0;
    }
    cs_out_item *it = range_item_new(kind, fd, xts, file_id, offset, len);
    if (it == NULL)
        return -ENOMEM;
    queue_push(c, it);
    c->queued += len;
    return 0;
}

/* Sends a file range until done, the socket full or the budget spent, advancing offset and len.
 * 0 or -errno (-EIO: sendfile returned 0, the file ended before the range). */
static int send_file(cs_conn *c, int fd, int64_t *offset, size_t *len, size_t *budget)
{
    while (*len > 0 && *budget > 0) {
        off_t off = (off_t)*offset;
        ssize_t n = sendfile(c->fd, fd, &off, min_size(*len, *budget));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return 0;
            return -errno;
        }
        if (n == 0)
            return -EIO;
        *offset += n;
        *len -= (size_t)n;
        *budget -= min_size((size_t)n, *budget);
        c->sent += (uint64_t)n;
    }
    return 0;
}

/* Reads and decrypts (cs_xts_read) into piece the encrypted file's bytes from `from`, at most
 * `most` (<= CS_XTS_PIECE) of whole units, not past `end`; *start and *len locate them. */
static int read_piece(cs_xts_dec *dec, int fd, const cs_xts *xts, uint64_t file_id, int64_t from, int64_t end,
                      int64_t most, uint8_t *piece, size_t *start, size_t *len)
{
    int64_t first = from / CS_XTS_UNIT * CS_XTS_UNIT;
    if (end > first + most)
        end = first + most;
    /* With a context of its own, cs_xts_read only reads xts. */
    int r = cs_xts_read((cs_xts *)xts, dec, fd, file_id, from, end, piece, start);
    if (r < 0)
        return r;
    *len = (size_t)(end - from);
    return 0;
}

/* Reads the next piece of an encrypted range on the loop thread. */
static int xts_fill(cs_conn *c, cs_out_item *it)
{
    cs_loop *loop = c->loop;
    if (loop->xts_dec == NULL && (loop->xts_dec = cs_xts_dec_new()) == NULL)
        return -ENOMEM;
    if (it->piece == NULL && (it->piece = piece_take(loop)) == NULL)
        return -ENOMEM;
    return read_piece(loop->xts_dec, it->fd, it->xts, it->file_id, it->offset, it->offset + (int64_t)it->len,
                      CS_XTS_LOOP_READ, it->piece, &it->start, &it->piece_len);
}

/* The read-ahead: while the loop sends a piece of a long range, a pool thread reads and decrypts
 * the next (a second core shares the work). At most one per range (two pieces per connection).
 * The conn's close waits for it (cs__conn_finish_close runs at its end), so its item, descriptor
 * and key stay valid: their owner lets them go only after on_close. */
struct cs_xts_job {
    uv_work_t req;
    cs_conn *conn;
    cs_out_item *item;
    int fd;
    const cs_xts *xts;
    uint64_t file_id;
    int64_t from, end;
    uint8_t *piece;
    size_t start, len;
    int result;
};

static pthread_key_t pool_dec_key;
static pthread_once_t pool_dec_once = PTHREAD_ONCE_INIT;

static void pool_dec_free(void *d)
{
    cs_xts_dec_free(d);
}

static void pool_dec_make_key(void)
{
    pthread_key_create(&pool_dec_key, pool_dec_free);
}

/* A pool thread's own decryption context, made on its first job. */
static cs_xts_dec *pool_dec(void)
{
    pthread_once(&pool_dec_once, pool_dec_make_key);
    cs_xts_dec *d = pthread_getspecific(pool_dec_key);
    if (d == NULL && (d = cs_xts_dec_new()) != NULL && pthread_setspecific(pool_dec_key, d) != 0) {
        cs_xts_dec_free(d);
        d = NULL;
    }
    return d;
}

static void job_run(uv_work_t *req)
{
    cs_xts_job *j = req->data;
    cs_xts_dec *dec = pool_dec();
    j->result = dec == NULL ? -ENOMEM
                            : read_piece(dec, j->fd, j->xts, j->file_id, j->from, j->end, CS_XTS_PIECE, j->piece,
                                         &j->start, &j->len);
}

static void job_done(uv_work_t *req, int status)
{
    cs_xts_job *j = req->data;
    cs_out_item *it = j->item;
    cs_conn *c = j->conn;
    int r = status < 0 ? status : j->result;
    it->job = NULL;
    it->ahead_error = r < 0 ? r : 0;
    if (r < 0) {
        piece_give(c->loop, j->piece);
    } else {
        it->ahead = j->piece;
        it->ahead_start = j->start;
        it->ahead_len = j->len;
    }
    free(j);
    if (--c->xts_jobs == 0 && c->close_waits) {
        cs__conn_finish_close(c);
        return;
    }
    if (c->out_waiting) {
        c->out_waiting = 0;
        if (!c->closing) {
            cs__out_on_writable(c);
            cs__conn_update_poll(c);
        }
    }
}

/* Starts reading the piece after the ready one, if the range goes on; best effort (without memory
 * the loop reads it in turn). Whole units of the range only: its partly held last unit may be
 * re-enciphered meanwhile by a download completing it, and a racing read could see a block half
 * old, half new, so the loop, which does the writes, reads it. (The first piece is the loop's too;
 * every later one starts on a unit boundary.) */
static void read_ahead(cs_conn *c, cs_out_item *it)
{
    int64_t from = it->offset + (int64_t)it->piece_len;
    int64_t end = (it->offset + (int64_t)it->len) / CS_XTS_UNIT * CS_XTS_UNIT;
    if (it->job != NULL || it->ahead != NULL || it->ahead_error != 0 || from >= end)
        return;
    cs_xts_job *j = calloc(1, sizeof *j);
    if (j == NULL || (j->piece = piece_take(c->loop)) == NULL) {
        free(j);
        return;
    }
    j->conn = c;
    j->item = it;
    j->fd = it->fd;
    j->xts = it->xts;
    j->file_id = it->file_id;
    j->from = from;
    j->end = end;
    j->req.data = j;
    if (uv_queue_work(&c->loop->uv, &j->req, job_run, job_done) < 0) {
        piece_give(c->loop, j->piece);
        free(j);
        return;
    }
    it->job = j;
    c->xts_jobs++;
}

/* Sends an encrypted range until done, the socket full, the budget spent or the next piece still
 * read ahead (c->out_waiting); an emptied piece buffer goes back to the loop. 0 or -errno. */
static int send_xts(cs_conn *c, cs_out_item *it, size_t *budget)
{
    int r = 0;
    while (it->len > 0 && *budget > 0) {
        if (it->piece_len == 0) {
            if (it->ahead_error != 0) {
                r = it->ahead_error;
                break;
            }
            if (it->ahead != NULL) {
                piece_give(c->loop, it->piece);
                it->piece = it->ahead;
                it->start = it->ahead_start;
                it->piece_len = it->ahead_len;
                it->ahead = NULL;
            } else if (it->job != NULL) {
                /* The next piece is being read: its job's end flushes again. */
                c->out_waiting = 1;
                break;
            } else if ((r = xts_fill(c, it)) < 0) {
                break;
            }
            read_ahead(c, it);
        }
        ssize_t n = send(c->fd, it->piece + it->start, it->piece_len, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                r = -errno;
            break;
        }
        int full = (size_t)n < it->piece_len;
        it->start += (size_t)n;
        it->piece_len -= (size_t)n;
        it->offset += n;
        it->len -= (size_t)n;
        *budget -= min_size((size_t)n, *budget);
        c->sent += (uint64_t)n;
        if (full) /* the socket took what it had room for: the next send would only fail */
            break;
    }
    if (it->piece_len == 0) {
        piece_give(c->loop, it->piece);
        it->piece = NULL;
    }
    return r;
}

/* Drops n sent bytes from the memory items at the head of the queue. */
static void consume_memory(cs_conn *c, size_t n)
{
    c->queued -= n;
    while (n > 0) {
        cs_out_item *it = c->head;
        if (n < it->len) {
            it->start += n;
            it->len -= n;
            return;
        }
        n -= it->len;
        queue_pop(c);
    }
}

/* The memory items at the head in one sendmsg: 1 when all were taken, 0 when full, or -errno. */
static int send_memory(cs_conn *c, size_t *budget)
{
    struct iovec iov[IOV_BATCH];
    size_t total = 0;
    int n = 0;
    cs_out_item *it = c->head;
    for (; it != NULL && it->kind == CS_OUT_MEMORY && n < IOV_BATCH; it = it->next, n++) {
        iov[n].iov_base = it->data + it->start;
        iov[n].iov_len = it->len;
        total += it->len;
    }
    struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)n};
    /* More queued data follows (a body after its head): a partial segment may wait to share a packet. */
    int flags = MSG_NOSIGNAL | (it != NULL ? MSG_MORE : 0);
    ssize_t w;
    do {
        w = sendmsg(c->fd, &msg, flags);
    } while (w < 0 && errno == EINTR);
    if (w < 0)
        return (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -errno;
    c->sent += (uint64_t)w;
    *budget -= min_size((size_t)w, *budget);
    consume_memory(c, (size_t)w);
    return (size_t)w == total ? 1 : 0;
}

/* Sends queued items in order: 0 (done, socket full or budget spent) or -errno. */
static int flush(cs_conn *c)
{
    size_t budget = FLUSH_BUDGET;
    while (c->head != NULL && budget > 0) {
        cs_out_item *it = c->head;
        if (it->kind == CS_OUT_MEMORY) {
            int r = send_memory(c, &budget);
            if (r <= 0)
                return r;
            continue;
        }
        size_t before = it->len;
        int r = it->kind == CS_OUT_FILE ? send_file(c, it->fd, &it->offset, &it->len, &budget)
                                        : send_xts(c, it, &budget);
        c->queued -= before - it->len;
        if (r < 0)
            return r;
        if (it->len > 0)
            return 0;
        queue_pop(c);
    }
    return 0;
}

void cs__out_on_writable(cs_conn *c)
{
    int r = flush(c);
    if (r < 0) {
        cs__conn_begin_close(c, r);
        return;
    }
    if (c->head != NULL) {
        if (c->out_waiting) /* no writable events until the read-ahead ends */
            cs__conn_update_poll(c);
        return;
    }
    if (!c->drain_pending)
        return;
    c->drain_pending = 0;
    if (cs__conn_update_poll(c) < 0)
        return;
    if (c->drain_close)
        cs__conn_begin_linger(c);
    else if (c->cbs.on_drain != NULL)
        c->cbs.on_drain(c->ctx);
}

/* After queueing (r: its result): the poll wants writable events, or the conn closes on failure. */
static int queued(cs_conn *c, int r)
{
    if (r == 0)
        r = cs__conn_update_poll(c);
    if (r < 0)
        cs__conn_begin_close(c, r);
    return r;
}

/* Whether new output may go at once rather than queue behind others. */
static int can_send_now(const cs_conn *c)
{
    return c->head == NULL && !c->connecting;
}

/* Sends head then body (either may be empty) in one sendmsg while the socket takes them; the
 * rest is queued. */
static int write_two(cs_conn *conn, const void *head, size_t head_len, const void *body, size_t body_len, int flags)
{
    if (conn->closing || conn->drain_close)
        return -EPIPE;
    const uint8_t *a = head, *b = body;
    if (can_send_now(conn)) {
        while (head_len + body_len > 0) {
            struct iovec iov[2];
            int n_iov = 0;
            if (head_len > 0)
                iov[n_iov++] = (struct iovec){(void *)a, head_len};
            if (body_len > 0)
                iov[n_iov++] = (struct iovec){(void *)b, body_len};
            struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)n_iov};
            ssize_t n = sendmsg(conn->fd, &msg, MSG_NOSIGNAL | flags);
            if (n < 0) {
                if (errno == EINTR)
                    continue;
                if (errno == EAGAIN || errno == EWOULDBLOCK)
                    break;
                int r = -errno;
                cs__conn_begin_close(conn, r);
                return r;
            }
            conn->sent += (uint64_t)n;
            size_t k = min_size((size_t)n, head_len);
            a += k;
            head_len -= k;
            b += (size_t)n - k;
            body_len -= (size_t)n - k;
        }
    }
    if (head_len + body_len == 0)
        return 0;
    int r = head_len > 0 ? queue_memory(conn, a, head_len) : 0;
    if (r == 0 && body_len > 0)
        r = queue_memory(conn, b, body_len);
    return queued(conn, r);
}

int cs_conn_write(cs_conn *conn, const void *data, size_t len)
{
    return write_two(conn, data, len, NULL, 0, 0);
}

int cs_conn_write2(cs_conn *conn, const void *head, size_t head_len, const void *body, size_t body_len)
{
    return write_two(conn, head, head_len, body, body_len, 0);
}

int cs_conn_send_head_file(cs_conn *conn, const void *head, size_t head_len, int fd, int64_t offset, size_t len)
{
    if (fd < 0 || offset < 0)
        return -EINVAL;
    /* MSG_MORE only with a body to follow at once: the sendfile below (now, or queued and flushed
     * without MSG_MORE at its end) pushes the held head out. */
    int flags = len > 0 && len <= CS_SHARED_PACKET_MAX ? MSG_MORE : 0;
    int r = write_two(conn, head, head_len, NULL, 0, flags);
    if (r < 0)
        return r;
    return cs_conn_sendfile(conn, fd, offset, len);
}

int cs_conn_sendfile(cs_conn *conn, int fd, int64_t offset, size_t len)
{
    if (conn->closing || conn->drain_close)
        return -EPIPE;
    if (fd < 0 || offset < 0)
        return -EINVAL;
    if (len == 0)
        return 0;
    if (can_send_now(conn)) {
        size_t budget = DIRECT_FILE_BUDGET;
        int r = send_file(conn, fd, &offset, &len, &budget);
        if (r < 0) {
            cs__conn_begin_close(conn, r);
            return r;
        }
        if (len == 0)
            return 0;
    }
    return queued(conn, queue_range(conn, CS_OUT_FILE, fd, NULL, 0, offset, len));
}

/* A head (may be empty) and an encrypted range. With nothing queued, the first piece is decrypted
 * and leaves with the head in one sendmsg, then as much more as the socket takes; the rest queues. */
static int send_head_xts(cs_conn *conn, const uint8_t *head, size_t head_len, int fd, const cs_xts *xts,
                         uint64_t file_id, int64_t offset, size_t len)
{
    if (conn->closing || conn->drain_close)
        return -EPIPE;
    if (fd < 0 || offset < 0 || xts == NULL)
        return -EINVAL;
    if (len == 0 || !can_send_now(conn)) {
        int r = head_len > 0 ? write_two(conn, head, head_len, NULL, 0, 0) : 0;
        if (r == 0 && len > 0)
            r = queued(conn, queue_range(conn, CS_OUT_XTS, fd, xts, file_id, offset, len));
        return r;
    }
    cs_out_item *it = range_item_new(CS_OUT_XTS, fd, xts, file_id, offset, len);
    if (it == NULL) {
        cs__conn_begin_close(conn, -ENOMEM);
        return -ENOMEM;
    }
    size_t head_sent = head_len;
    int full = 0;
    int r = xts_fill(conn, it);
    if (r == 0) {
        read_ahead(conn, it);
        if (head_len > 0) {
            struct iovec iov[2] = {{(void *)head, head_len}, {it->piece + it->start, it->piece_len}};
            struct msghdr msg = {.msg_iov = iov, .msg_iovlen = 2};
            ssize_t n;
            do {
                n = sendmsg(conn->fd, &msg, MSG_NOSIGNAL);
            } while (n < 0 && errno == EINTR);
            if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
                r = -errno;
            if (n < 0)
                n = 0;
            conn->sent += (uint64_t)n;
            full = (size_t)n < head_len + it->piece_len;
            head_sent = min_size((size_t)n, head_len);
            size_t body = (size_t)n - head_sent;
            it->start += body;
            it->piece_len -= body;
            it->offset += (int64_t)body;
            it->len -= body;
        }
    }
    if (r == 0 && head_sent < head_len) {
        r = queue_memory(conn, head + head_sent, head_len - head_sent);
    } else if (r == 0 && it->len > 0 && !full) {
        size_t budget = DIRECT_FILE_BUDGET;
        r = send_xts(conn, it, &budget);
    }
    if (r == 0 && it->len == 0) {
        item_free(conn, it);
        return 0;
    }
    /* Queued even on failure: a read-ahead in flight uses it until the close frees the queue. */
    queue_push(conn, it);
    conn->queued += it->len;
    return queued(conn, r);
}

int cs_conn_send_xts(cs_conn *conn, int fd, const cs_xts *xts, uint64_t file_id, int64_t offset, size_t len)
{
    return send_head_xts(conn, NULL, 0, fd, xts, file_id, offset, len);
}

int cs_conn_send_head_xts(cs_conn *conn, const void *head, size_t head_len, int fd, const cs_xts *xts,
                          uint64_t file_id, int64_t offset, size_t len)
{
    return send_head_xts(conn, head, head_len, fd, xts, file_id, offset, len);
}

size_t cs_conn_queued(const cs_conn *conn)
{
    return conn->queued;
}

uint64_t cs_conn_bytes_sent(const cs_conn *conn)
{
    return conn->sent;
}
