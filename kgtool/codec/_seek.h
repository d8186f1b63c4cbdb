/* ListOffsets by timestamp and the timestamp at an offset, for many questions of one segment in one
 * forward walk (included by _speedups.c; the pure-Python twin is kgtool.lag.list_offsets'
 * PartitionLog.end_at and timestamp_at, which answer whatever this walk declines).
 *
 * seek_sweep(buffer, mode, keys, starts, start_offsets, check_offsets, check_timestamps[, checked])
 *     -> bytes, or (bytes, bytes) with checked
 *   Every argument after mode is a buffer of native int64, one per question, keys ascending.
 *   checked (optional): the positions of batches whose CRC an earlier walk of this segment
 *     checked, ascending (not checked again); then the positions this walk checked come back
 *     too, ascending.
 *   mode 0 (UnifiedLog.fetchOffsetByTimestamp, FileRecords.searchForTimestamp): key T; the answer
 *     is the offset of the first record, from starts[i] on, whose timestamp is at least T (the
 *     batch's max timestamp for LogAppendTime). Before scanning, the time index entry the start
 *     came from (check_offsets[i], check_timestamps[i]; offset -1: none) is held to the log as
 *     LogSegment does (the batch holding its offset has that max timestamp).
 *   mode 1: key O; the answer is the timestamp of the first record at or after offset O of a data
 *     batch (control batches skipped): the next record a consumer at O reads.
 *   start_offsets[i]: the offset index entry starts[i] came from (-1: none, start 0); the batch
 *   there must begin at or before it (OffsetIndex.lookup, checked as PartitionLog does).
 * Returns the answers, int64 each; SEEK_ASK_PYTHON where this walk declines: a compressed or
 * legacy batch, a CRC or record that does not check out, an index entry that does not match, or
 * the end of the segment reached (the answer lies in a later segment, or nowhere). The walk is
 * linear in the segment: answers are monotone in the keys, so each scan starts at the later of
 * its start and the previous answer's batch. */

#include <sys/mman.h>
#include <unistd.h>

#define SEEK_ASK_PYTHON INT64_MIN

typedef struct {
    const uint8_t *base;
    int64_t size;
} seg_t;

/* The v2 batch header at pos: 0 ok (fields set), 1 not a whole v2 batch there. */
typedef struct {
    int64_t base_offset, last_offset, base_ts, max_ts, total;
    int16_t attributes;
    int32_t count;
} bhead_t;

/* a + b into *sum, or 1 where it does not fit an int64: the Python reader's integers have no
 * bound, so the walk declines there (and adds nothing past int64, which C leaves undefined) */
static inline int seek_add(int64_t a, int64_t b, int64_t *sum) {
    if ((b > 0 && a > INT64_MAX - b) || (b < 0 && a < INT64_MIN - b)) return 1;
    *sum = a + b;
    return 0;
}

/* (the bounds are taken as size - pos: a position near INT64_MAX, a caller's start, must not
 * wrap past the check, as it did under the fuzz campaign's sanitizer run) */
static int seek_head(const seg_t *s, int64_t pos, bhead_t *h) {
    if (pos < 0 || pos > s->size - 61) return 1;
    const uint8_t *p = s->base + pos;
    int32_t length = be32(p + 8);
    if (length < 49 || (int64_t)length > s->size - pos - 12 || p[16] != 2) return 1;
    h->total = 12 + (int64_t)length;
    h->base_offset = be64(p);
    h->attributes = be16(p + 21);
    if (seek_add(h->base_offset, be32(p + 23), &h->last_offset)) return 1;
    h->base_ts = be64(p + 27);
    h->max_ts = be64(p + 35);
    h->count = be32(p + 57);
    return 0;
}

/* The first record of the (plain, CRC-checked) batch at pos meeting the key: mode 0, timestamp
 * >= key, gives its offset; mode 1, offset >= key, gives its timestamp. 0 found, 1 none in the
 * batch, 2 declined. */
/* Where the previous answer's record lies, to resume from for a larger key in the same batch:
 * every record before it is below the previous key, so below this one. */
typedef struct {
    int64_t pos;        /* its batch (-1: none) */
    const uint8_t *rec; /* the record */
    int32_t index;      /* its index in the batch */
} resume_t;

/* The batches whose CRC is known good: those an earlier walk checked (ascending, visited in
 * order by a cursor: a walk's positions rise), and those this walk checks (appended). */
typedef struct {
    const int64_t *before;
    Py_ssize_t n_before, at;
    int64_t *now;
    Py_ssize_t n_now, cap_now;
    int keep;   /* the caller asked for the positions checked */
    int failed; /* out of memory */
} checked_t;

static int checked_before(checked_t *c, int64_t pos) {
    if (!c->n_before) return 0;
    if (c->at > 0 && c->before[c->at - 1] > pos) c->at = 0; /* a walk that went back: start over */
    while (c->at < c->n_before && c->before[c->at] < pos) c->at++;
    return c->at < c->n_before && c->before[c->at] == pos;
}

static void checked_add(checked_t *c, int64_t pos) {
    if (!c->keep || c->failed) return;
    if (c->n_now == c->cap_now) {
        Py_ssize_t cap = c->cap_now ? 2 * c->cap_now : 256;
        int64_t *grown = realloc(c->now, (size_t)cap * 8);
        if (!grown) { c->failed = 1; return; }
        c->now = grown;
        c->cap_now = cap;
    }
    c->now[c->n_now++] = pos;
}

static int seek_records(const seg_t *s, int64_t pos, const bhead_t *h, int mode, int64_t key, int64_t *out,
                        int64_t *verified, resume_t *at, checked_t *ck) {
    const uint8_t *p = s->base + pos;
    if (h->attributes & 7) return 2; /* compressed: the Python reader decompresses */
    if (*verified != pos && checked_before(ck, pos)) *verified = pos;
    if (*verified != pos) { /* the CRC once per batch, however many questions it answers */
        /* the whole batch is read: one request for its pages, not a fault at a time (what the
         * caller's prefetch did not already ask for) */
        static long page = 0;
        if (!page) page = sysconf(_SC_PAGESIZE);
        uintptr_t a = (uintptr_t)p & ~(uintptr_t)(page - 1);
        (void)madvise((void *)a, (size_t)((uintptr_t)p + (uintptr_t)h->total - a), MADV_WILLNEED);
        if ((uint32_t)be32(p + 17) != crc32c_compute(p + 21, (size_t)(h->total - 21))) return 2;
        /* and every record whole, as the Python reader decodes the batch (DefaultRecord.readFrom,
         * its count of them filling the batch exactly): an answer from a batch it calls
         * undecodable would differ from its own (the seek fuzz target's finding) */
        const uint8_t *q = p + 61, *qe = p + h->total;
        for (int32_t i = 0; i < h->count; i++) {
            rec_t rec;
            rerr_t err;
            if (parse_record(&q, qe, &rec, &err)) return 2;
        }
        if (q != qe) return 2;
        *verified = pos;
        checked_add(ck, pos);
    }
    int lat = (h->attributes & 8) != 0;
    const uint8_t *r = p + 61, *e = p + h->total;
    int32_t i0 = 0;
    if (at->pos == pos) {
        r = at->rec;
        i0 = at->index;
    }
    for (int32_t i = i0; i < h->count; i++) {
        const uint8_t *start = r;
        int32_t len;
        if (rd_varint(&r, e, &len) || len < 0 || len > e - r) return 2;
        const uint8_t *q = r + 1, *next = r + len; /* past the record's attributes */
        int64_t tsd;
        int32_t offd;
        if (next > e || rd_varlong(&q, next, &tsd) || rd_varint(&q, next, &offd)) return 2;
        int64_t ts = lat ? h->max_ts : wrap_add(h->base_ts, tsd);
        int64_t off;
        if (seek_add(h->base_offset, offd, &off)) return 2;
        if (mode == 0 ? ts >= key : off >= key) {
            *out = mode == 0 ? off : ts;
            at->pos = pos;
            at->rec = start;
            at->index = i;
            return 0;
        }
        r = next;
    }
    return 1;
}

/* The holder of a time index entry: the batch from pos whose last offset reaches off must begin
 * at or before it and have max timestamp ts. 0 ok, 1 not. */
static int seek_holder_ok(const seg_t *s, int64_t pos, int64_t off, int64_t ts) {
    bhead_t h;
    while (!seek_head(s, pos, &h)) {
        if (h.last_offset >= off) return !(h.base_offset <= off && h.max_ts == ts);
        pos += h.total;
    }
    return 1;
}

static PyObject *py_seek_sweep(PyObject *self, PyObject *args) {
    Py_buffer data, keys, starts, soffs, coffs, cts, before;
    int mode;
    memset(&before, 0, sizeof before);
    if (!PyArg_ParseTuple(args, "y*iy*y*y*y*y*|y*", &data, &mode, &keys, &starts, &soffs, &coffs, &cts, &before))
        return NULL;
    PyObject *result = NULL, *answers = NULL;
    checked_t ck = {NULL, 0, 0, NULL, 0, 0, 0, 0};
    Py_ssize_t n = keys.len / 8;
    if ((mode != 0 && mode != 1) || keys.len % 8 || starts.len != keys.len || soffs.len != keys.len ||
        coffs.len != keys.len || cts.len != keys.len || before.len % 8) {
        PyErr_SetString(PyExc_ValueError, "seek_sweep: mode 0 or 1 and five int64 arrays of one length");
        goto done;
    }
    if (before.obj) {
        ck.before = before.buf;
        ck.n_before = before.len / 8;
        ck.keep = 1;
    }
    answers = PyBytes_FromStringAndSize(NULL, n * 8);
    if (!answers) goto done;
    result = answers;
    int64_t *out = (int64_t *)PyBytes_AS_STRING(answers);
    const int64_t *k = keys.buf, *st = starts.buf, *so = soffs.buf, *co = coffs.buf, *ct = cts.buf;
    seg_t s = {(const uint8_t *)data.buf, (int64_t)data.len};
    int64_t cursor = -1;   /* the batch of the previous answer */
    int64_t verified = -1; /* the last batch whose CRC checked out */
    resume_t at = {-1, NULL, 0};
    /* the index entries of the previous question and whether they held */
    int64_t held_st = -1, held_so = -1, held_co = -1, held_ct = 0;
    int held = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t pos = st[i];
        out[i] = SEEK_ASK_PYTHON;
        /* the entries a question came from are held to the log even where the cursor is past
         * its start: the Python reader checks them for every question and notes one that does
         * not hold, so such a question is declined to it (the seek fuzz target found a note
         * missing); questions of one entry share the check */
        if (i == 0 || st[i] != held_st || so[i] != held_so || (mode == 0 && (co[i] != held_co || ct[i] != held_ct))) {
            bhead_t h0;
            held = !(so[i] >= 0 && (seek_head(&s, pos, &h0) || h0.base_offset > so[i])) &&
                   !(mode == 0 && co[i] >= 0 && seek_holder_ok(&s, pos, co[i], ct[i]));
            held_st = st[i], held_so = so[i], held_co = co[i], held_ct = ct[i];
        }
        if (!held) continue;
        if (cursor > pos) pos = cursor;
        bhead_t h;
        while (!seek_head(&s, pos, &h)) {
            int skip = mode == 0 ? h.max_ts < k[i] : (h.last_offset < k[i] || (h.attributes & 0x20));
            if (!skip) {
                int64_t v;
                int c = seek_records(&s, pos, &h, mode, k[i], &v, &verified, &at, &ck);
                if (c == 2) break;
                if (c == 0) {
                    out[i] = v;
                    cursor = pos;
                    break;
                }
            }
            pos += h.total;
        }
    }
    Py_END_ALLOW_THREADS
    if (before.obj) {
        if (ck.failed) {
            Py_CLEAR(answers);
            result = PyErr_NoMemory();
            goto done;
        }
        /* ascending but where a question's start went back before the batches checked for
         * the one before: the caller sorts them */
        PyObject *now = PyBytes_FromStringAndSize((const char *)ck.now, ck.n_now * 8);
        result = now ? PyTuple_Pack(2, answers, now) : NULL;
        Py_XDECREF(now);
        Py_DECREF(answers);
    }
done:
    free(ck.now);
    if (before.obj) PyBuffer_Release(&before);
    PyBuffer_Release(&data);
    PyBuffer_Release(&keys);
    PyBuffer_Release(&starts);
    PyBuffer_Release(&soffs);
    PyBuffer_Release(&coffs);
    PyBuffer_Release(&cts);
    return result;
}
