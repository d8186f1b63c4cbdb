/*
 * kgtool.codec._speedups: the hot loops of the record codec in C.
 *
 * Optional: kgtool/codec/batch.py and summary.py fall back to pure Python twins when this
 * module is missing (or KGTOOL_PURE_PYTHON=1), with identical results; the tests run both.
 *
 *   decode_records_v2(data, start, end, count, base_offset, base_timestamp, base_sequence,
 *                     log_append_time|None) -> (list[tuple], err|None)
 *       DefaultRecord.readFrom for `count` records of an uncompressed records section.
 *       tuple = (offset, timestamp, sequence, key, value, headers, attributes, size_in_bytes);
 *       err = (index, record index, field, reason) at the first bad record.
 *
 *   summarize_records_v2(data, start, end, count, base_offset, base_timestamp,
 *                        log_append_time|None, mode, slow) -> stats tuple | None
 *       The same walk without building records: timestamps, sizes, and (mode 1) the
 *       __consumer_offsets OffsetCommit key/value layouts parsed and validated in C;
 *       records it cannot fully decode are appended to `slow` as (offset, key, value).
 *       None: malformed (the caller re-decodes with decode_records_v2 for the exact error).
 *
 *   summarize_segment(data, i, hi, base_position, verify_crc, mode, slow, producers)
 *       -> (stop index, stats tuple)
 *       Walks the batch chain from index i while batches are v2, uncompressed, not
 *       control, CRC-valid and well-formed, accumulating stats; stops at anything else
 *       (the caller handles that batch on the general path, then calls again).
 *
 *   crc32c(data) -> int   (SSE4.2 when the CPU has it, else a table)
 *
 * Sources: DefaultRecordBatch, DefaultRecord, ByteUtils (varints), OffsetCommitKey/Value
 * JSON schemas in group-coordinator/src/main/resources/common/message/.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* ------------------------------------------------------------------ CRC-32C */

static uint32_t crc_table[8][256];
static int have_sse42 = 0;

static void crc_init(void) {
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        crc_table[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = crc_table[0][n];
        for (int k = 1; k < 8; k++) {
            c = crc_table[0][c & 0xff] ^ (c >> 8);
            crc_table[k][n] = c;
        }
    }
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    have_sse42 = __builtin_cpu_supports("sse4.2");
#endif
}

static uint32_t crc_sw(uint32_t crc, const uint8_t *p, size_t n) {
    while (n >= 8) {
        uint32_t lo, hi;
        memcpy(&lo, p, 4);
        memcpy(&hi, p + 4, 4);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        lo = __builtin_bswap32(lo);
        hi = __builtin_bswap32(hi);
#endif
        lo ^= crc;
        crc = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^
              crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^
              crc_table[3][hi & 0xff] ^ crc_table[2][(hi >> 8) & 0xff] ^
              crc_table[1][(hi >> 16) & 0xff] ^ crc_table[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n--) crc = crc_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return crc;
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("sse4.2")))
static uint32_t crc_hw(uint32_t crc, const uint8_t *p, size_t n) {
    uint64_t c = crc;
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        c = __builtin_ia32_crc32di(c, v);
        p += 8;
        n -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (n--) c32 = __builtin_ia32_crc32qi(c32, *p++);
    return c32;
}
#endif

static uint32_t crc32c_compute(const uint8_t *p, size_t n) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (have_sse42) return crc_hw(0xFFFFFFFFu, p, n) ^ 0xFFFFFFFFu;
#endif
    return crc_sw(0xFFFFFFFFu, p, n) ^ 0xFFFFFFFFu;
}

/* ------------------------------------------------------------------ readers */

static inline int64_t be64(const uint8_t *p) {
    uint64_t v = ((uint64_t)p[0] << 56) | ((uint64_t)p[1] << 48) | ((uint64_t)p[2] << 40) |
                 ((uint64_t)p[3] << 32) | ((uint64_t)p[4] << 24) | ((uint64_t)p[5] << 16) |
                 ((uint64_t)p[6] << 8) | (uint64_t)p[7];
    return (int64_t)v;
}
static inline int32_t be32(const uint8_t *p) {
    return (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3]);
}
static inline int16_t be16(const uint8_t *p) { return (int16_t)(((uint16_t)p[0] << 8) | p[1]); }

/* ByteUtils.readVarint: at most 5 bytes, low 32 bits kept, zig-zag.
 * Returns 0 ok, 1 ran out of data, 2 too long. */
static inline int rd_varint(const uint8_t **pp, const uint8_t *end, int32_t *out) {
    const uint8_t *p = *pp;
    uint32_t v = 0;
    for (int i = 0; i < 5; i++) {
        if (p >= end) return 1;
        uint8_t b = *p++;
        v |= (uint32_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *pp = p;
            *out = (int32_t)((v >> 1) ^ (0u - (v & 1)));
            return 0;
        }
    }
    return 2;
}

static inline int rd_varlong(const uint8_t **pp, const uint8_t *end, int64_t *out) {
    const uint8_t *p = *pp;
    uint64_t v = 0;
    for (int i = 0; i < 10; i++) {
        if (p >= end) return 1;
        uint8_t b = *p++;
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *pp = p;
            *out = (int64_t)((v >> 1) ^ (0ull - (v & 1)));
            return 0;
        }
    }
    return 2;
}

static inline int rd_uvarint(const uint8_t **pp, const uint8_t *end, uint32_t *out) {
    const uint8_t *p = *pp;
    uint32_t v = 0;
    for (int i = 0; i < 5; i++) {
        if (p >= end) return 1;
        uint8_t b = *p++;
        v |= (uint32_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *pp = p;
            *out = v;
            return 0;
        }
    }
    return 2;
}

/* One parsed record: pointers into the buffer. */
typedef struct {
    int8_t attributes;
    int64_t ts_delta;
    int32_t off_delta;
    const uint8_t *key;
    int32_t klen;
    const uint8_t *value;
    int32_t vlen;
    int32_t nheaders;
    const uint8_t *headers; /* start of the first header */
    const uint8_t *end;     /* end of the record body */
} rec_t;

typedef struct {
    const uint8_t *at;
    const char *field;
    char reason[160];
    int hindex; /* header index for header fields, -1 otherwise */
} rerr_t;

static int varint_fail(rerr_t *e, const uint8_t *at, const char *field, int code, const char *what, int maxb) {
    e->at = at;
    e->field = field;
    if (code == 1)
        snprintf(e->reason, sizeof e->reason, "%s runs past the end of the data", what);
    else
        snprintf(e->reason, sizeof e->reason,
                 "%s is too long: the continuation bit is set in byte %d (at most %d bytes)", what, maxb, maxb);
    return -1;
}

/* Parse one record at *pp (DefaultRecord.readFrom). 0 ok, -1 error (e filled). */
static int parse_record(const uint8_t **pp, const uint8_t *end, rec_t *r, rerr_t *e) {
    const uint8_t *p = *pp;
    int32_t size;
    int c;
    e->hindex = -1;
    if ((c = rd_varint(&p, end, &size))) return varint_fail(e, p, "length", c, "varint", 5);
    if (size < 0) {
        e->at = p; e->field = "length";
        snprintf(e->reason, sizeof e->reason, "negative record length %d", size);
        return -1;
    }
    if ((int64_t)size > end - p) {
        e->at = p; e->field = "length";
        snprintf(e->reason, sizeof e->reason, "record length %d exceeds %lld bytes remaining", size,
                 (long long)(end - p));
        return -1;
    }
    const uint8_t *rend = p + size;
    if (p >= rend) {
        e->at = p; e->field = "attributes";
        snprintf(e->reason, sizeof e->reason, "int8 needs 1 bytes, 0 remaining");
        return -1;
    }
    r->attributes = (int8_t)*p++;
    if ((c = rd_varlong(&p, rend, &r->ts_delta))) return varint_fail(e, p, "timestamp_delta", c, "varlong", 10);
    if ((c = rd_varint(&p, rend, &r->off_delta))) return varint_fail(e, p, "offset_delta", c, "varint", 5);
    if ((c = rd_varint(&p, rend, &r->klen))) return varint_fail(e, p, "key_length", c, "varint", 5);
    if (r->klen >= 0) {
        if ((int64_t)r->klen > rend - p) {
            e->at = p; e->field = "key";
            snprintf(e->reason, sizeof e->reason, "length %d exceeds %lld bytes remaining", r->klen,
                     (long long)(rend - p));
            return -1;
        }
        r->key = p;
        p += r->klen;
    } else {
        r->key = NULL;
    }
    if ((c = rd_varint(&p, rend, &r->vlen))) return varint_fail(e, p, "value_length", c, "varint", 5);
    if (r->vlen >= 0) {
        if ((int64_t)r->vlen > rend - p) {
            e->at = p; e->field = "value";
            snprintf(e->reason, sizeof e->reason, "length %d exceeds %lld bytes remaining", r->vlen,
                     (long long)(rend - p));
            return -1;
        }
        r->value = p;
        p += r->vlen;
    } else {
        r->value = NULL;
    }
    if ((c = rd_varint(&p, rend, &r->nheaders))) return varint_fail(e, p, "header_count", c, "varint", 5);
    if (r->nheaders < 0) {
        e->at = p; e->field = "header_count";
        snprintf(e->reason, sizeof e->reason, "invalid number of record headers %d", r->nheaders);
        return -1;
    }
    if ((int64_t)r->nheaders > rend - p) {
        e->at = p; e->field = "header_count";
        snprintf(e->reason, sizeof e->reason, "%d headers cannot fit in the %lld bytes remaining",
                 r->nheaders, (long long)(rend - p));
        return -1;
    }
    r->headers = p;
    for (int32_t h = 0; h < r->nheaders; h++) {
        int32_t hk, hv;
        e->hindex = h;
        if ((c = rd_varint(&p, rend, &hk))) return varint_fail(e, p, "key_length", c, "varint", 5);
        if (hk < 0) {
            e->at = p; e->field = "key_length";
            snprintf(e->reason, sizeof e->reason, "invalid negative header key size %d", hk);
            return -1;
        }
        if ((int64_t)hk > rend - p) {
            e->at = p; e->field = "key";
            snprintf(e->reason, sizeof e->reason, "length %d exceeds %lld bytes remaining", hk,
                     (long long)(rend - p));
            return -1;
        }
        p += hk;
        if ((c = rd_varint(&p, rend, &hv))) return varint_fail(e, p, "value_length", c, "varint", 5);
        if (hv >= 0) {
            if ((int64_t)hv > rend - p) {
                e->at = p; e->field = "value";
                snprintf(e->reason, sizeof e->reason, "length %d exceeds %lld bytes remaining", hv,
                         (long long)(rend - p));
                return -1;
            }
            p += hv;
        }
    }
    e->hindex = -1;
    if (p != rend) {
        e->at = p; e->field = "length";
        snprintf(e->reason, sizeof e->reason, "record length %d but its fields end after %lld bytes", size,
                 (long long)(size - (rend - p)));
        return -1;
    }
    r->end = rend;
    *pp = rend;
    return 0;
}

static inline int64_t wrap_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }

static inline int32_t increment_sequence(int32_t seq, int32_t inc) {
    /* DefaultRecordBatch.incrementSequence */
    if ((int64_t)seq > (int64_t)INT32_MAX - inc) return (int32_t)((int64_t)inc - ((int64_t)INT32_MAX - seq) - 1);
    return seq + inc;
}

static PyObject *bytes_or_none(const uint8_t *p, int32_t n) {
    if (p == NULL) Py_RETURN_NONE;
    return PyBytes_FromStringAndSize((const char *)p, n);
}

static PyObject *make_err(Py_ssize_t at, Py_ssize_t index, rerr_t *e) {
    char field[64];
    if (e->hindex >= 0)
        snprintf(field, sizeof field, "headers[%d].%s", e->hindex, e->field);
    else
        snprintf(field, sizeof field, "%s", e->field);
    return Py_BuildValue("(nnss)", at, index, field, e->reason);
}

/* ------------------------------------------------------------------ decode_records_v2 */

static PyObject *py_decode_records_v2(PyObject *self, PyObject *args) {
    Py_buffer buf;
    Py_ssize_t start, end, count;
    long long base_offset, base_ts;
    int base_seq;
    PyObject *lat_obj;
    if (!PyArg_ParseTuple(args, "y*nnnLLiO", &buf, &start, &end, &count, &base_offset, &base_ts, &base_seq,
                          &lat_obj))
        return NULL;
    int has_lat = lat_obj != Py_None;
    long long lat = 0;
    if (has_lat) {
        lat = PyLong_AsLongLong(lat_obj);
        if (lat == -1 && PyErr_Occurred()) { PyBuffer_Release(&buf); return NULL; }
    }
    if (start < 0 || end > buf.len || start > end || count < 0) {
        PyBuffer_Release(&buf);
        PyErr_SetString(PyExc_ValueError, "bad range");
        return NULL;
    }
    const uint8_t *base = (const uint8_t *)buf.buf;
    const uint8_t *p = base + start, *e = base + end;
    PyObject *list = PyList_New(0);
    PyObject *err = NULL;
    if (!list) { PyBuffer_Release(&buf); return NULL; }
    Py_ssize_t i;
    for (i = 0; i < count; i++) {
        rec_t r;
        rerr_t er;
        const uint8_t *before = p;
        if (parse_record(&p, e, &r, &er)) {
            (void)before;
            err = make_err(er.at - base, i, &er);
            break;
        }
        PyObject *headers = PyList_New(r.nheaders);
        if (!headers) goto fail;
        const uint8_t *hp = r.headers;
        for (int32_t h = 0; h < r.nheaders; h++) {
            int32_t hk = 0, hv = -1;
            rd_varint(&hp, r.end, &hk);
            PyObject *k = PyUnicode_DecodeUTF8((const char *)hp, hk, "replace");
            hp += hk;
            rd_varint(&hp, r.end, &hv);
            PyObject *v = bytes_or_none(hv >= 0 ? hp : NULL, hv);
            if (hv > 0) hp += hv;
            if (!k || !v) { Py_XDECREF(k); Py_XDECREF(v); Py_DECREF(headers); goto fail; }
            PyObject *t = PyTuple_Pack(2, k, v);
            Py_DECREF(k);
            Py_DECREF(v);
            if (!t) { Py_DECREF(headers); goto fail; }
            PyList_SET_ITEM(headers, h, t);
        }
        int64_t ts = has_lat ? lat : wrap_add(base_ts, r.ts_delta);
        int32_t seq = base_seq >= 0 ? increment_sequence(base_seq, r.off_delta) : -1;
        PyObject *key = bytes_or_none(r.key, r.klen);
        PyObject *value = bytes_or_none(r.value, r.vlen);
        if (!key || !value) { Py_XDECREF(key); Py_XDECREF(value); Py_DECREF(headers); goto fail; }
        PyObject *t = Py_BuildValue("(LLiNNNin)", (long long)wrap_add(base_offset, r.off_delta), (long long)ts, seq,
                                    key, value, headers, (int)r.attributes, (Py_ssize_t)(r.end - before));
        if (!t) goto fail;
        if (PyList_Append(list, t)) { Py_DECREF(t); goto fail; }
        Py_DECREF(t);
    }
    if (!err && p != e) {
        char reason[160];
        snprintf(reason, sizeof reason, "%lld bytes remain after the %lld records the header declares",
                 (long long)(e - p), (long long)count);
        err = Py_BuildValue("(nnss)", (Py_ssize_t)(p - base), count, "records", reason);
    }
    PyBuffer_Release(&buf);
    if (!err) { err = Py_None; Py_INCREF(err); }
    if (!err) { Py_DECREF(list); return NULL; }
    return Py_BuildValue("(NN)", list, err);
fail:
    PyBuffer_Release(&buf);
    Py_DECREF(list);
    Py_XDECREF(err);
    return NULL;
}

/* ------------------------------------------------------------------ summaries */

typedef struct {
    long long batches, records, bytes, key_bytes, value_bytes, null_keys, null_values;
    long long min_ts, max_ts, first_offset, last_offset;
    long long offset_commits[2], offset_tombstones[2], slow, transactional_batches;
    long long compression[5], control_records, markers[2];
    int have_ts, have_offset;
} stats_t;

static void stats_init(stats_t *s) {
    memset(s, 0, sizeof *s);
    s->min_ts = s->max_ts = -1;
    s->first_offset = s->last_offset = -1;
}

static PyObject *stats_tuple(stats_t *s) {
    return Py_BuildValue(
        "{sLsLsLsLsLsLsLsLsLsLsLsLsLsLsLsLsLs(LLLLL)sLsLsL}",
        "batches", s->batches, "records", s->records, "bytes", s->bytes, "key_bytes", s->key_bytes,
        "value_bytes", s->value_bytes, "null_keys", s->null_keys, "null_values", s->null_values,
        "min_ts", s->have_ts ? s->min_ts : -1LL, "max_ts", s->have_ts ? s->max_ts : -1LL,
        "first_offset", s->have_offset ? s->first_offset : -1LL,
        "last_offset", s->have_offset ? s->last_offset : -1LL,
        "offset_commits_0", s->offset_commits[0], "offset_commits_1", s->offset_commits[1],
        "offset_tombstones_0", s->offset_tombstones[0], "offset_tombstones_1", s->offset_tombstones[1],
        "slow", s->slow, "transactional_batches", s->transactional_batches,
        "compression", s->compression[0], s->compression[1], s->compression[2], s->compression[3],
        s->compression[4],
        "control_records", s->control_records, "abort_markers", s->markers[0], "commit_markers", s->markers[1]);
}

/* Strict UTF-8 validation (what Python's strict decoder accepts). */
static int utf8_ok(const uint8_t *s, int32_t n) {
    int32_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        if (c < 0x80) { i++; continue; }
        if (c >= 0xC2 && c <= 0xDF) {
            if (i + 1 >= n || (s[i + 1] & 0xC0) != 0x80) return 0;
            i += 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            if (i + 2 >= n) return 0;
            uint8_t c1 = s[i + 1], c2 = s[i + 2];
            if ((c1 & 0xC0) != 0x80 || (c2 & 0xC0) != 0x80) return 0;
            if (c == 0xE0 && c1 < 0xA0) return 0;          /* overlong */
            if (c == 0xED && c1 > 0x9F) return 0;          /* surrogates */
            i += 3;
        } else if (c >= 0xF0 && c <= 0xF4) {
            if (i + 3 >= n) return 0;
            uint8_t c1 = s[i + 1], c2 = s[i + 2], c3 = s[i + 3];
            if ((c1 & 0xC0) != 0x80 || (c2 & 0xC0) != 0x80 || (c3 & 0xC0) != 0x80) return 0;
            if (c == 0xF0 && c1 < 0x90) return 0;
            if (c == 0xF4 && c1 > 0x8F) return 0;
            i += 4;
        } else {
            return 0;
        }
    }
    return 1;
}

/* int16-length string (non-null). Advances *pp. */
static int rd_string16(const uint8_t **pp, const uint8_t *end) {
    const uint8_t *p = *pp;
    if (end - p < 2) return 0;
    int16_t n = be16(p);
    p += 2;
    if (n < 0 || n > end - p) return 0;
    if (!utf8_ok(p, n)) return 0;
    *pp = p + n;
    return 1;
}

/* OffsetCommitKey v0-1: group string, topic string, partition int32 (exactly). */
static int offset_commit_key_ok(const uint8_t *k, int32_t n) {
    if (n < 2) return 0;
    int16_t version = be16(k);
    if (version != 0 && version != 1) return 0;
    const uint8_t *p = k + 2, *e = k + n;
    if (!rd_string16(&p, e)) return 0;
    if (!rd_string16(&p, e)) return 0;
    if (e - p != 4) return 0;
    return 1;
}

/* OffsetCommitValue v0-4 (v4 flexible: compact string metadata, tagged fields). */
static int offset_commit_value_ok(const uint8_t *v, int32_t n) {
    if (n < 2) return 0;
    int16_t version = be16(v);
    const uint8_t *p = v + 2, *e = v + n;
    if (version < 0 || version > 4) return 0;
    if (e - p < 8) return 0;
    p += 8; /* offset */
    if (version >= 3) {
        if (e - p < 4) return 0;
        p += 4; /* leader epoch */
    }
    if (version <= 3) {
        if (!rd_string16(&p, e)) return 0;
    } else {
        uint32_t len1;
        if (rd_uvarint(&p, e, &len1)) return 0;
        if (len1 == 0) return 0; /* null metadata: not valid for a non-nullable string */
        uint32_t len = len1 - 1;
        if ((int64_t)len > e - p || !utf8_ok(p, (int32_t)len)) return 0;
        p += len;
    }
    if (e - p < 8) return 0;
    p += 8; /* commit timestamp */
    if (version == 1) {
        if (e - p < 8) return 0;
        p += 8; /* expire timestamp */
    }
    if (version >= 4) {
        uint32_t ntags;
        if (rd_uvarint(&p, e, &ntags)) return 0;
        /* OffsetCommitValue defines no tagged field: any tag is unknown, and the Python decoder
         * reports it (a warning), so such values take the slow path. */
        if (ntags != 0) return 0;
    }
    return p == e;
}

/* Walk `count` records of [p, e): accumulate; -1 on malformed data. */
static int summarize_records(const uint8_t *p, const uint8_t *e, int64_t count, int64_t base_offset,
                             int64_t base_ts, int has_lat, int64_t lat, int mode, PyObject *slow, stats_t *s) {
    for (int64_t i = 0; i < count; i++) {
        rec_t r;
        rerr_t er;
        if (parse_record(&p, e, &r, &er)) return -1;
        int64_t ts = has_lat ? lat : wrap_add(base_ts, r.ts_delta);
        int64_t off = wrap_add(base_offset, r.off_delta);
        s->records++;
        if (ts >= 0) {
            if (!s->have_ts) { s->min_ts = s->max_ts = ts; s->have_ts = 1; }
            else { if (ts < s->min_ts) s->min_ts = ts; if (ts > s->max_ts) s->max_ts = ts; }
        }
        if (!s->have_offset) { s->first_offset = off; s->have_offset = 1; }
        s->last_offset = off;
        if (r.key) s->key_bytes += r.klen; else s->null_keys++;
        if (r.value) s->value_bytes += r.vlen; else s->null_values++;
        if (mode == 0) continue;
        if (mode == 1 && r.key && offset_commit_key_ok(r.key, r.klen)) {
            int kt = r.key[1]; /* record type 0 (legacy) or 1: checked by offset_commit_key_ok */
            if (!r.value) { s->offset_tombstones[kt]++; continue; }
            if (offset_commit_value_ok(r.value, r.vlen)) { s->offset_commits[kt]++; continue; }
        }
        PyObject *k = bytes_or_none(r.key, r.klen);
        PyObject *v = bytes_or_none(r.value, r.vlen);
        PyObject *t = (k && v) ? Py_BuildValue("(LNN)", (long long)off, k, v) : NULL;
        if (!t) { Py_XDECREF(k); Py_XDECREF(v); return -2; }
        if (PyList_Append(slow, t)) { Py_DECREF(t); return -2; }
        Py_DECREF(t);
        s->slow++;
    }
    return p == e ? 0 : -1;
}

static PyObject *py_summarize_records_v2(PyObject *self, PyObject *args) {
    Py_buffer buf;
    Py_ssize_t start, end, count;
    long long base_offset, base_ts;
    PyObject *lat_obj, *slow;
    int mode;
    if (!PyArg_ParseTuple(args, "y*nnnLLOiO!", &buf, &start, &end, &count, &base_offset, &base_ts, &lat_obj, &mode,
                          &PyList_Type, &slow))
        return NULL;
    int has_lat = lat_obj != Py_None;
    long long lat = has_lat ? PyLong_AsLongLong(lat_obj) : 0;
    if (start < 0 || end > buf.len || start > end || count < 0) {
        PyBuffer_Release(&buf);
        PyErr_SetString(PyExc_ValueError, "bad range");
        return NULL;
    }
    stats_t s;
    stats_init(&s);
    const uint8_t *b = (const uint8_t *)buf.buf;
    Py_ssize_t before = PyList_GET_SIZE(slow);
    int rc = summarize_records(b + start, b + end, count, base_offset, base_ts, has_lat, lat, mode, slow, &s);
    PyBuffer_Release(&buf);
    if (rc == -2) return NULL;
    if (rc == -1) {
        /* drop what this call appended: the caller re-decodes the batch */
        if (PyList_SetSlice(slow, before, PyList_GET_SIZE(slow), NULL)) return NULL;
        Py_RETURN_NONE;
    }
    return stats_tuple(&s);
}

/* Control records of an end-transaction-marker batch (ControlRecordType.parse,
 * EndTransactionMarker.deserializeValue): 0 ok (markers counted), -1 anything else. */
static int summarize_control(const uint8_t *p, const uint8_t *e, int64_t count, int64_t base_offset, int64_t base_ts,
                             int has_lat, int64_t lat, stats_t *s) {
    for (int64_t i = 0; i < count; i++) {
        rec_t r;
        rerr_t er;
        if (parse_record(&p, e, &r, &er)) return -1;
        if (!r.key || r.klen < 4 || be16(r.key) < 0) return -1;
        int16_t type = be16(r.key + 2);
        if (type != 0 && type != 1) return -1;
        if (!r.value || r.vlen < 6 || be16(r.value) < 0) return -1;
        int64_t ts = has_lat ? lat : wrap_add(base_ts, r.ts_delta);
        int64_t off = wrap_add(base_offset, r.off_delta);
        s->records++;
        s->control_records++;
        s->markers[type]++;
        if (ts >= 0) {
            if (!s->have_ts) { s->min_ts = s->max_ts = ts; s->have_ts = 1; }
            else { if (ts < s->min_ts) s->min_ts = ts; if (ts > s->max_ts) s->max_ts = ts; }
        }
        if (!s->have_offset) { s->first_offset = off; s->have_offset = 1; }
        s->last_offset = off;
        s->key_bytes += r.klen;
        s->value_bytes += r.vlen;
    }
    return p == e ? 0 : -1;
}

/* summarize_segment(data, i, hi, verify_crc, mode, slow, producers, decompress|None)
 * decompress(codec, memoryview) -> bytes: the Python codec (with its size cap). */
static PyObject *py_summarize_segment(PyObject *self, PyObject *args) {
    PyObject *data_obj;
    Py_buffer buf;
    Py_ssize_t i, hi;
    int verify_crc, mode;
    PyObject *slow, *producers, *decompress;
    if (!PyArg_ParseTuple(args, "OnnpiO!O!O", &data_obj, &i, &hi, &verify_crc, &mode, &PyList_Type, &slow,
                          &PySet_Type, &producers, &decompress))
        return NULL;
    if (PyObject_GetBuffer(data_obj, &buf, PyBUF_SIMPLE)) return NULL;
    const uint8_t *b = (const uint8_t *)buf.buf;
    Py_ssize_t n = buf.len;
    PyObject *mv = NULL;
    stats_t s;
    stats_init(&s);
    long long last_pid = -2;
    if (hi > n) hi = n;
    while (i < hi) {
        if (n - i < 61) break;
        const uint8_t *h = b + i;
        int32_t length = be32(h + 8);
        int64_t size = (int64_t)length + 12;
        if (h[16] != 2 || size < 61 || size > n - i) break;
        int16_t attributes = be16(h + 21);
        int codec = attributes & 0x07;
        if (codec > 4) break;
        int is_control = (attributes & 0x20) != 0;
        int32_t count = be32(h + 57);
        if (count < 0) break;
        if (verify_crc) {
            uint32_t stored = (uint32_t)be32(h + 17);
            if (crc32c_compute(h + 21, (size_t)(size - 21)) != stored) break;
        }
        int64_t base_offset = be64(h);
        int64_t base_ts = be64(h + 27);
        int64_t max_ts = be64(h + 35);
        int64_t pid = be64(h + 43);
        int has_lat = (attributes & 0x08) != 0;
        stats_t t = s;
        Py_ssize_t before = PyList_GET_SIZE(slow);
        const uint8_t *rp = h + 61, *re = h + size;
        PyObject *plain = NULL;
        if (codec) {
            if (decompress == Py_None) break;
            if (!mv) {
                mv = PyMemoryView_FromObject(data_obj);
                if (!mv) goto error;
            }
            PyObject *slice = PySequence_GetSlice(mv, i + 61, i + (Py_ssize_t)size);
            if (!slice) goto error;
            plain = PyObject_CallFunction(decompress, "iO", codec, slice);
            Py_DECREF(slice);
            if (!plain) {
                PyErr_Clear(); /* the general path reports it, with position */
                break;
            }
            if (!PyBytes_Check(plain)) { Py_DECREF(plain); break; }
            rp = (const uint8_t *)PyBytes_AS_STRING(plain);
            re = rp + PyBytes_GET_SIZE(plain);
        }
        int rc;
        if (count > re - rp) rc = -1;
        else if (is_control) rc = summarize_control(rp, re, count, base_offset, base_ts, has_lat, max_ts, &t);
        else rc = summarize_records(rp, re, count, base_offset, base_ts, has_lat, max_ts, mode, slow, &t);
        Py_XDECREF(plain);
        if (rc == -2) goto error;
        if (rc == -1) {
            if (PyList_SetSlice(slow, before, PyList_GET_SIZE(slow), NULL)) goto error;
            break;
        }
        s = t;
        s.batches++;
        s.bytes += size;
        s.compression[codec]++;
        if (attributes & 0x10) s.transactional_batches++;
        if (pid >= 0 && pid != last_pid) {
            PyObject *o = PyLong_FromLongLong(pid);
            if (!o || PySet_Add(producers, o)) { Py_XDECREF(o); goto error; }
            Py_DECREF(o);
            last_pid = pid;
        }
        i += (Py_ssize_t)size;
    }
    Py_XDECREF(mv);
    PyBuffer_Release(&buf);
    PyObject *st = stats_tuple(&s);
    if (!st) return NULL;
    return Py_BuildValue("(nN)", i, st);
error:
    Py_XDECREF(mv);
    PyBuffer_Release(&buf);
    return NULL;
}

static PyObject *py_crc32c(PyObject *self, PyObject *args) {
    Py_buffer buf;
    if (!PyArg_ParseTuple(args, "y*", &buf)) return NULL;
    uint32_t c = crc32c_compute((const uint8_t *)buf.buf, (size_t)buf.len);
    PyBuffer_Release(&buf);
    return PyLong_FromUnsignedLong(c);
}

static PyMethodDef methods[] = {
    {"decode_records_v2", py_decode_records_v2, METH_VARARGS, "Decode the records of a v2 records section."},
    {"summarize_records_v2", py_summarize_records_v2, METH_VARARGS, "Summarize the records of a records section."},
    {"summarize_segment", py_summarize_segment, METH_VARARGS, "Summarize plain v2 batches from an index."},
    {"crc32c", py_crc32c, METH_VARARGS, "CRC-32C (Castagnoli)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, "_speedups", "kgtool codec hot loops", -1, methods};

PyMODINIT_FUNC PyInit__speedups(void) {
    crc_init();
    return PyModule_Create(&moddef);
}
