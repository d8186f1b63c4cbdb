/* decode-batch's printer: plain v2 batches to JSON Lines (or one JSON array, or kafka-dump-log's
 * text layout) without a Python object per record. Included by _speedups.c (it uses that file's
 * readers: be32, parse_record, utf8_ok, the OffsetCommit layout checks, vbatch_open).
 *
 * The objects are kgtool.codec.lines' schema; what is written here equals, byte for byte, what
 * the pure-Python writer (kgtool.cli.dump_log) writes for the same batches: json.dumps with
 * ensure_ascii=False and the run's separators (tests/codec/test_dump_twin.py). Anything this
 * writer does not know how to print exactly (a legacy batch, a control record other than an
 * ABORT/COMMIT marker, a damaged batch, a huge one, a payload the OffsetCommit layout does not cover, bytes that are not UTF-8 where text is
 * printed) stops the walk at that batch; the Python writer prints it and the walk resumes after.
 */

typedef struct {
    char *p;
    size_t n, cap;
} ob_t;

static int ob_reserve(ob_t *o, size_t more) {
    if (o->n + more <= o->cap) return 0;
    size_t cap = o->cap ? o->cap : (size_t)1 << 16;
    while (cap < o->n + more) cap *= 2;
    char *q = (char *)PyMem_Realloc(o->p, cap);
    if (!q) { PyErr_NoMemory(); return -1; }
    o->p = q;
    o->cap = cap;
    return 0;
}

/* The writes below assume ob_reserve made room for them. */
static inline void ob_put(ob_t *o, const char *s, size_t n) { memcpy(o->p + o->n, s, n); o->n += n; }
static inline void ob_ch(ob_t *o, char c) { o->p[o->n++] = c; }
#define OB_LIT(o, lit) ob_put((o), (lit), sizeof(lit) - 1)

static const char digits2[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/* Decimal, two digits per division. */
static void ob_i64(ob_t *o, int64_t v) {
    char tmp[24];
    char *e = tmp + sizeof tmp, *q = e;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    while (u >= 100) {
        unsigned k = (unsigned)(u % 100) * 2;
        u /= 100;
        *--q = digits2[k + 1];
        *--q = digits2[k];
    }
    if (u >= 10) {
        unsigned k = (unsigned)u * 2;
        *--q = digits2[k + 1];
        *--q = digits2[k];
    } else {
        *--q = (char)('0' + u);
    }
    if (v < 0) *--q = '-';
    memcpy(o->p + o->n, q, (size_t)(e - q));
    o->n += (size_t)(e - q);
}

static const char b64_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void ob_b64(ob_t *o, const uint8_t *p, size_t n) {
    char *d = o->p + o->n;
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = ((uint32_t)p[i] << 16) | ((uint32_t)p[i + 1] << 8) | p[i + 2];
        d[0] = b64_alphabet[v >> 18]; d[1] = b64_alphabet[(v >> 12) & 63];
        d[2] = b64_alphabet[(v >> 6) & 63]; d[3] = b64_alphabet[v & 63];
        d += 4;
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)p[i] << 16;
        d[0] = b64_alphabet[v >> 18]; d[1] = b64_alphabet[(v >> 12) & 63]; d[2] = '='; d[3] = '=';
        d += 4;
    } else if (n - i == 2) {
        uint32_t v = ((uint32_t)p[i] << 16) | ((uint32_t)p[i + 1] << 8);
        d[0] = b64_alphabet[v >> 18]; d[1] = b64_alphabet[(v >> 12) & 63]; d[2] = b64_alphabet[(v >> 6) & 63];
        d[3] = '=';
        d += 4;
    }
    o->n = (size_t)(d - o->p);
}

static void ob_hex(ob_t *o, const uint8_t *p, size_t n) {
    static const char hx[] = "0123456789abcdef";
    char *d = o->p + o->n;
    for (size_t i = 0; i < n; i++) { d[2 * i] = hx[p[i] >> 4]; d[2 * i + 1] = hx[p[i] & 15]; }
    o->n += 2 * n;
}

/* A JSON string of valid UTF-8, escaped as json.dumps(ensure_ascii=False) escapes it ("\u001f",
 * lowercase; hexdigits "0123456789ABCDEF" gives Jackson's, for the text layout). At most 6n+2. */
static void ob_jstr_body(ob_t *o, const uint8_t *p, size_t n, const char *hexdigits) {
    char *d = o->p + o->n;
    for (size_t i = 0; i < n; i++) {
        uint8_t c = p[i];
        if (c >= 0x20 && c != '"' && c != '\\') { *d++ = (char)c; continue; }
        *d++ = '\\';
        switch (c) {
        case '"': *d++ = '"'; break;
        case '\\': *d++ = '\\'; break;
        case '\n': *d++ = 'n'; break;
        case '\r': *d++ = 'r'; break;
        case '\t': *d++ = 't'; break;
        case '\b': *d++ = 'b'; break;
        case '\f': *d++ = 'f'; break;
        default:
            *d++ = 'u'; *d++ = '0'; *d++ = '0';
            *d++ = hexdigits[c >> 4]; *d++ = hexdigits[c & 15];
        }
    }
    o->n = (size_t)(d - o->p);
}

static void ob_jstr(ob_t *o, const uint8_t *p, size_t n, const char *hexdigits) {
    ob_ch(o, '"');
    ob_jstr_body(o, p, n, hexdigits);
    ob_ch(o, '"');
}

static const char HEX_LOWER[] = "0123456789abcdef";
static const char HEX_UPPER[] = "0123456789ABCDEF";

enum { DUMP_JSONL = 0, DUMP_JSON = 1, DUMP_TEXT = 2 };
enum { BYTES_BASE64 = 0, BYTES_HEX = 1, BYTES_UTF8 = 2 };

/* Every key the writer prints (kgtool.codec.lines' names, the payload's, the control's). */
#define DUMP_KEYS(X) \
    X(attributes) \
    X(base_offset) \
    X(base_sequence) \
    X(base_timestamp) \
    X(batch_length) \
    X(commit_timestamp) \
    X(compression) \
    X(control) \
    X(coordinator_epoch) \
    X(crc) \
    X(crc_valid) \
    X(delete_horizon_ms) \
    X(expire_timestamp) \
    X(group) \
    X(headers) \
    X(is_control) \
    X(is_transactional) \
    X(key) \
    X(kind) \
    X(last_offset) \
    X(last_offset_delta) \
    X(last_sequence) \
    X(leader_epoch) \
    X(magic) \
    X(max_timestamp) \
    X(metadata) \
    X(offset) \
    X(partition) \
    X(partition_leader_epoch) \
    X(payload) \
    X(position) \
    X(producer_epoch) \
    X(producer_id) \
    X(record_count) \
    X(record_type) \
    X(size_in_bytes) \
    X(timestamp) \
    X(timestamp_type) \
    X(tombstone) \
    X(topic) \
    X(topic_id) \
    X(type) \
    X(type_name) \
    X(value) \
    X(value_version) \
    X(version)

enum {
#define X(n) DK_##n,
    DUMP_KEYS(X)
#undef X
    DK_COUNT
};

static const char *const key_names[DK_COUNT] = {
#define X(n) #n,
    DUMP_KEYS(X)
#undef X
};

#define FRAG 32

typedef struct {
    int fmt, bytes, offsets, verify_crc;
    const char *comma, *colon, *pre, *post, *head;
    Py_ssize_t ncomma, ncolon, npre, npost, nhead;
    /* ,"name": with the run's separators, built once per call: at most FRAG bytes (a name of
     * at most 22, separators of at most 4), copied FRAG at a time (the reserve has room) */
    char frag[DK_COUNT][FRAG + 8];
    uint8_t nfrag[DK_COUNT];
} dctx_t;

static inline void ob_frag(ob_t *o, const char *f, size_t n) {
    memcpy(o->p + o->n, f, FRAG);
    o->n += n;
}
#define KEY(o, c, name) ob_frag((o), (c)->frag[DK_##name], (c)->nfrag[DK_##name])
/* "name": (the first key of an object) */
#define KEY1(o, c, name) ob_frag((o), (c)->frag[DK_##name] + (c)->ncomma, (size_t)((c)->nfrag[DK_##name] - (c)->ncomma))

/* Length of the well-formed UTF-8 sequence at p[0..n), 0 when it is not one. */
static inline int utf8_seq(const uint8_t *p, size_t n) {
    uint8_t c = p[0];
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) return n >= 2 && (p[1] & 0xC0) == 0x80 ? 2 : 0;
    uint8_t lo = 0x80, hi = 0xBF;
    int len;
    if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else {
        return 0;
    }
    if (n < (size_t)len || p[1] < lo || p[1] > hi) return 0;
    for (int k = 2; k < len; k++)
        if ((p[k] & 0xC0) != 0x80) return 0;
    return len;
}

/* How many bytes one U+FFFD replaces at p (bytes.decode("utf-8", "replace"): the maximal
 * subpart of an ill-formed sequence, at least one byte). */
static inline size_t utf8_bad(const uint8_t *p, size_t n) {
    uint8_t c = p[0];
    uint8_t lo = 0x80, hi = 0xBF;
    size_t len;
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c >= 0xE0 && c <= 0xEF) { len = 3; if (c == 0xE0) lo = 0xA0; if (c == 0xED) hi = 0x9F; }
    else if (c >= 0xF0 && c <= 0xF4) { len = 4; if (c == 0xF0) lo = 0x90; if (c == 0xF4) hi = 0x8F; }
    else return 1;
    size_t k = 1;
    if (k < n && p[k] >= lo && p[k] <= hi) {
        k++;
        while (k < len && k < n && (p[k] & 0xC0) == 0x80) k++;
    }
    return k;
}

/* Bytes as text, invalid sequences as U+FFFD (bytes.decode("utf-8", "replace")): JSON-escaped
 * (json) or as they are (kafka-dump-log's StringDecoder). At most 6n+2. */
static void ob_utf8(ob_t *o, const uint8_t *p, size_t n, int json) {
    if (json) ob_ch(o, '"');
    size_t i = 0;
    while (i < n) {
        size_t j = i;
        while (j < n) { /* the longest valid run */
            int k = utf8_seq(p + j, n - j);
            if (!k) break;
            j += (size_t)k;
        }
        if (j > i) {
            if (json) ob_jstr_body(o, p + i, j - i, HEX_LOWER);
            else ob_put(o, (const char *)p + i, j - i);
            i = j;
        }
        if (i < n) {
            OB_LIT(o, "\xef\xbf\xbd");
            i += utf8_bad(p + i, n - i);
        }
    }
    if (json) ob_ch(o, '"');
}

/* Key, value or header value per --bytes (utf8: invalid sequences as U+FFFD). */
static int ob_bytes(ob_t *o, const dctx_t *c, const uint8_t *p, int32_t n) {
    if (!p) { OB_LIT(o, "null"); return 1; }
    if (c->bytes == BYTES_UTF8) {
        ob_utf8(o, p, (size_t)n, 1);
        return 1;
    }
    ob_ch(o, '"');
    if (c->bytes == BYTES_HEX) ob_hex(o, p, (size_t)n);
    else ob_b64(o, p, (size_t)n);
    ob_ch(o, '"');
    return 1;
}

/* int16-length string at *pp (checked by offset_commit_key_ok / _value_ok): JSON-escaped. */
static void ob_str16(ob_t *o, const uint8_t **pp, const char *hexdigits) {
    int16_t n = be16(*pp);
    ob_jstr(o, *pp + 2, (size_t)n, hexdigits);
    *pp += 2 + n;
}

/* A plain OffsetCommitValue (offset_commit_value_ok): its fields, read once for either dialect. */
typedef struct {
    int16_t version;
    int64_t offset, commit, expire;
    int32_t epoch;
    const uint8_t *metadata;
    size_t nmetadata;
    const uint8_t *topic_id; /* v4's TopicId tag (4.1+), NULL when absent or the zero uuid */
} ocv_t;

/* Kafka's Uuid.toString(): url-safe base64 of the 16 bytes, no padding (22 characters). */
static void ob_uuid(ob_t *o, const uint8_t *u) {
    static const char A[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    char out[24];
    int j = 0;
    for (int i = 0; i < 15; i += 3) {
        uint32_t w = (uint32_t)u[i] << 16 | (uint32_t)u[i + 1] << 8 | u[i + 2];
        out[j++] = A[w >> 18 & 63]; out[j++] = A[w >> 12 & 63]; out[j++] = A[w >> 6 & 63]; out[j++] = A[w & 63];
    }
    out[j++] = A[u[15] >> 2];
    out[j++] = A[(u[15] & 3) << 4];
    ob_put(o, "\"", 1);
    ob_put(o, out, (size_t)j);
    ob_put(o, "\"", 1);
}

static void ocv_read(const uint8_t *v, int32_t vlen, ocv_t *x) {
    const uint8_t *p = v + 2;
    x->version = be16(v);
    x->offset = be64(p);
    p += 8;
    if (x->version >= 3) { x->epoch = be32(p); p += 4; }
    if (x->version <= 3) {
        x->nmetadata = (size_t)be16(p);
        p += 2;
    } else {
        uint32_t len1 = 1; /* compact string: length + 1 */
        rd_uvarint(&p, v + vlen, &len1);
        x->nmetadata = len1 - 1;
    }
    x->metadata = p;
    p += x->nmetadata;
    x->commit = be64(p);
    p += 8;
    if (x->version == 1) x->expire = be64(p);
    x->topic_id = NULL;
    if (x->version >= 4 && v + vlen - p == 19) { /* offset_commit_value_ok: 01 00 10 + the uuid */
        int zero = 1;
        for (int b = 3; b < 19; b++) zero &= p[b] == 0;
        if (!zero) x->topic_id = p + 3;
    }
}

/* The payload of a plain OffsetCommit record (offset_commit_key_ok, value null or
 * offset_commit_value_ok): the OffsetsRecord.to_json() object of kgtool.coordinator.records. */
static void ob_offset_commit(ob_t *o, const dctx_t *c, const uint8_t *k, const uint8_t *v, int32_t vlen) {
    int16_t type = be16(k);
    const uint8_t *p = k + 2;
    OB_LIT(o, "{");
    KEY1(o, c, record_type); ob_i64(o, type);
    KEY(o, c, kind);
    if (type == 0) OB_LIT(o, "\"legacy_offset_commit\""); else OB_LIT(o, "\"offset_commit\"");
    KEY(o, c, tombstone); if (v) OB_LIT(o, "false"); else OB_LIT(o, "true");
    KEY(o, c, key); OB_LIT(o, "{");
    KEY1(o, c, group); ob_str16(o, &p, HEX_LOWER);
    KEY(o, c, topic); ob_str16(o, &p, HEX_LOWER);
    KEY(o, c, partition); ob_i64(o, be32(p));
    OB_LIT(o, "}");
    KEY(o, c, value_version);
    if (!v) {
        OB_LIT(o, "null");
        KEY(o, c, value); OB_LIT(o, "null");
        OB_LIT(o, "}");
        return;
    }
    ocv_t x;
    ocv_read(v, vlen, &x);
    ob_i64(o, x.version);
    KEY(o, c, value); OB_LIT(o, "{");
    KEY1(o, c, offset); ob_i64(o, x.offset);
    if (x.version >= 3) { KEY(o, c, leader_epoch); ob_i64(o, x.epoch); }
    KEY(o, c, metadata); ob_jstr(o, x.metadata, x.nmetadata, HEX_LOWER);
    KEY(o, c, commit_timestamp); ob_i64(o, x.commit);
    if (x.version == 1) { KEY(o, c, expire_timestamp); ob_i64(o, x.expire); }
    if (x.topic_id) { KEY(o, c, topic_id); ob_uuid(o, x.topic_id); }
    OB_LIT(o, "}}");
}

/* kafka-dump-log's OffsetsMessageParser for an OffsetCommit record (type 1): the key as
 * {"type":"1","data":{...}} and the value as {"version":"N","data":{...}} (the generated
 * JsonConverters: Kafka's field names, Jackson's escapes), "<DELETE>" for a tombstone. */
static void txt_offset_commit(ob_t *o, const uint8_t *k, const uint8_t *v, int32_t vlen) {
    const uint8_t *p = k + 2;
    OB_LIT(o, " key: {\"type\":\"1\",\"data\":{\"group\":"); ob_str16(o, &p, HEX_UPPER);
    OB_LIT(o, ",\"topic\":"); ob_str16(o, &p, HEX_UPPER);
    OB_LIT(o, ",\"partition\":"); ob_i64(o, be32(p));
    OB_LIT(o, "}} payload: ");
    if (!v) { OB_LIT(o, "<DELETE>"); return; }
    ocv_t x;
    ocv_read(v, vlen, &x);
    OB_LIT(o, "{\"version\":\""); ob_i64(o, x.version); OB_LIT(o, "\",\"data\":{\"offset\":"); ob_i64(o, x.offset);
    if (x.version >= 3) { OB_LIT(o, ",\"leaderEpoch\":"); ob_i64(o, x.epoch); }
    OB_LIT(o, ",\"metadata\":"); ob_jstr(o, x.metadata, x.nmetadata, HEX_UPPER);
    OB_LIT(o, ",\"commitTimestamp\":"); ob_i64(o, x.commit);
    if (x.version == 1) { OB_LIT(o, ",\"expireTimestamp\":"); ob_i64(o, x.expire); }
    if (x.topic_id) { OB_LIT(o, ",\"topicId\":"); ob_uuid(o, x.topic_id); }
    OB_LIT(o, "}}");
}

typedef struct {
    int64_t position, base_offset, base_ts, max_ts, pid;
    int32_t base_seq;
    int has_lat, control;
} vhead_t;

static const char *ts_labels[3] = {" CreateTime: ", " LogAppendTime: ", " NoTimestampType: "};

/* One record line: the record at `offset` with timestamp `ts` (and `seq`), of a batch at
 * `position` of format `magic` whose timestamp type is ts_labels[label]. 1 written, 0 this
 * writer cannot print it exactly (o is left as it was), -1 Python error. */
static int dump_line(ob_t *o, const dctx_t *c, int64_t position, int64_t offset, int64_t ts, int64_t seq,
                     int magic, int label, int control, const rec_t *r) {
    size_t mark = o->n;
    int16_t ctype = 0, cversion = 0;
    int32_t cepoch = 0;
    if (control) {
        /* ControlRecordType.parse + EndTransactionMarker (batch.parse_control_record): only
         * ABORT and COMMIT markers are printed here */
        if (!r->key || r->klen < 4 || be16(r->key) < 0) return 0;
        cversion = be16(r->key);
        ctype = be16(r->key + 2);
        if (ctype != 0 && ctype != 1) return 0;
        if (!r->value || r->vlen < 6 || be16(r->value) < 0) return 0;
        cepoch = be32(r->value + 2);
    }
    int plain_offsets = 0;
    if (c->offsets && !control) {
        /* OffsetsMessageParser / decode_offsets_record: a key is required; plain OffsetCommit only */
        if (!r->key || !offset_commit_key_ok(r->key, r->klen)) return 0;
        if (r->value && !offset_commit_value_ok(r->value, r->vlen)) return 0;
        if (c->fmt == DUMP_TEXT && be16(r->key) != 1) return 0;
        plain_offsets = 1;
    }
    /* room: fixed text, the escaped/encoded key, value and headers (at most 6 bytes per byte),
     * the payload's strings again */
    size_t span = (size_t)(r->end - r->headers) + (r->key ? (size_t)r->klen : 0) + (r->value ? (size_t)r->vlen : 0);
    if (ob_reserve(o, 1024 + 14 * span + 40 * (size_t)r->nheaders)) return -1;
    if (c->fmt == DUMP_TEXT) {
        OB_LIT(o, "| offset: "); ob_i64(o, offset);
        ob_put(o, ts_labels[label], strlen(ts_labels[label]));
        ob_i64(o, ts);
        OB_LIT(o, " keySize: "); ob_i64(o, r->key ? r->klen : -1);
        OB_LIT(o, " valueSize: "); ob_i64(o, r->value ? r->vlen : -1);
        if (magic >= 2) {
            OB_LIT(o, " sequence: "); ob_i64(o, seq);
            OB_LIT(o, " headerKeys: [");
            const uint8_t *hp = r->headers;
            for (int32_t i = 0; i < r->nheaders; i++) {
                int32_t hk = 0, hv = 0;
                rd_varint(&hp, r->end, &hk);
                if (!utf8_ok(hp, hk)) { o->n = mark; return 0; }
                if (i) ob_ch(o, ',');
                ob_put(o, (const char *)hp, (size_t)hk);
                hp += hk;
                rd_varint(&hp, r->end, &hv);
                if (hv > 0) hp += hv;
            }
            ob_ch(o, ']');
        }
        if (control) {
            if (ctype == 1) OB_LIT(o, " endTxnMarker: COMMIT coordinatorEpoch: ");
            else OB_LIT(o, " endTxnMarker: ABORT coordinatorEpoch: ");
            ob_i64(o, cepoch);
        } else if (plain_offsets) {
            txt_offset_commit(o, r->key, r->value, r->vlen);
        } else {
            /* StringDecoder: the bytes as UTF-8 text */
            if (r->key) { OB_LIT(o, " key: "); ob_utf8(o, r->key, (size_t)r->klen, 0); }
            if (r->value) { OB_LIT(o, " payload: "); ob_utf8(o, r->value, (size_t)r->vlen, 0); }
        }
        ob_ch(o, '\n');
        return 1;
    }
    ob_put(o, c->pre, (size_t)c->npre);
    OB_LIT(o, "{"); KEY1(o, c, type); OB_LIT(o, "\"record\"");
    KEY(o, c, position); ob_i64(o, position);
    KEY(o, c, offset); ob_i64(o, offset);
    KEY(o, c, timestamp); ob_i64(o, ts);
    KEY(o, c, key);
    if (!ob_bytes(o, c, r->key, r->klen)) { o->n = mark; return 0; }
    KEY(o, c, value);
    if (!ob_bytes(o, c, r->value, r->vlen)) { o->n = mark; return 0; }
    KEY(o, c, headers); ob_ch(o, '[');
    const uint8_t *hp = r->headers;
    for (int32_t i = 0; i < r->nheaders; i++) {
        int32_t hk = 0, hv = 0;
        rd_varint(&hp, r->end, &hk);
        if (!utf8_ok(hp, hk)) { o->n = mark; return 0; } /* the Python codec decodes header keys strictly */
        if (i) ob_put(o, c->comma, (size_t)c->ncomma);
        OB_LIT(o, "{"); KEY1(o, c, key); ob_jstr(o, hp, (size_t)hk, HEX_LOWER);
        hp += hk;
        rd_varint(&hp, r->end, &hv);
        KEY(o, c, value);
        if (!ob_bytes(o, c, hv >= 0 ? hp : NULL, hv)) { o->n = mark; return 0; }
        if (hv > 0) hp += hv;
        OB_LIT(o, "}");
    }
    ob_ch(o, ']');
    if (control) {
        KEY(o, c, control); OB_LIT(o, "{");
        KEY1(o, c, type); ob_i64(o, ctype);
        KEY(o, c, type_name); if (ctype == 1) OB_LIT(o, "\"COMMIT\""); else OB_LIT(o, "\"ABORT\"");
        KEY(o, c, version); ob_i64(o, cversion);
        KEY(o, c, coordinator_epoch); ob_i64(o, cepoch);
        OB_LIT(o, "}");
    }
    if (plain_offsets) {
        KEY(o, c, payload);
        ob_offset_commit(o, c, r->key, r->value, r->vlen);
    }
    ob_ch(o, '}');
    ob_put(o, c->post, (size_t)c->npost);
    return 1;
}

/* A record of a v2 batch (its offset, timestamp and sequence from the batch's bases). */
static int dump_record(ob_t *o, const dctx_t *c, const vhead_t *h, const rec_t *r) {
    int64_t offset, ts;
    /* Python's integers do not wrap: a sum past int64 is the Python writer's */
    if (__builtin_add_overflow(h->base_offset, (int64_t)r->off_delta, &offset)) return 0;
    if (h->has_lat) ts = h->max_ts;
    else if (__builtin_add_overflow(h->base_ts, r->ts_delta, &ts)) return 0;
    int64_t seq = h->base_seq == -1 ? -1 : increment_sequence(h->base_seq, r->off_delta);
    return dump_line(o, c, h->position, offset, ts, seq, 2, h->has_lat, h->control, r);
}

static const char *compression_name[5] = {"none", "gzip", "snappy", "lz4", "zstd"};

/* One batch line (v2). */
static int dump_batch_line(ob_t *o, const dctx_t *c, const uint8_t *h, int64_t position, int64_t size) {
    if (ob_reserve(o, 2048 + (size_t)c->nhead)) return -1;
    int16_t attributes = be16(h + 21);
    int32_t lod = be32(h + 23);
    int64_t base_offset = be64(h);
    int32_t base_seq = be32(h + 53);
    int32_t last_seq = base_seq == -1 ? -1 : increment_sequence(base_seq, lod);
    int codec = attributes & 0x07;
    int lat = (attributes & 0x08) != 0;
    if (c->fmt == DUMP_TEXT) {
        OB_LIT(o, "baseOffset: "); ob_i64(o, base_offset);
        OB_LIT(o, " lastOffset: "); ob_i64(o, wrap_add(base_offset, lod));
        OB_LIT(o, " count: "); ob_i64(o, be32(h + 57));
        OB_LIT(o, " baseSequence: "); ob_i64(o, base_seq);
        OB_LIT(o, " lastSequence: "); ob_i64(o, last_seq);
        OB_LIT(o, " producerId: "); ob_i64(o, be64(h + 43));
        OB_LIT(o, " producerEpoch: "); ob_i64(o, be16(h + 51));
        OB_LIT(o, " partitionLeaderEpoch: "); ob_i64(o, be32(h + 12));
        OB_LIT(o, " isTransactional: "); if (attributes & 0x10) OB_LIT(o, "true"); else OB_LIT(o, "false");
        OB_LIT(o, " isControl: "); if (attributes & 0x20) OB_LIT(o, "true"); else OB_LIT(o, "false");
        OB_LIT(o, " deleteHorizonMs: OptionalLong.empty position: "); ob_i64(o, position);
        if (lat) OB_LIT(o, " LogAppendTime: "); else OB_LIT(o, " CreateTime: ");
        ob_i64(o, be64(h + 35));
        OB_LIT(o, " size: "); ob_i64(o, size);
        OB_LIT(o, " magic: 2 compresscodec: "); ob_put(o, compression_name[codec], strlen(compression_name[codec]));
        OB_LIT(o, " crc: "); ob_i64(o, (uint32_t)be32(h + 17));
        OB_LIT(o, " isvalid: "); if (c->verify_crc) OB_LIT(o, "true"); else OB_LIT(o, "unchecked");
        ob_ch(o, '\n');
        return 0;
    }
    ob_put(o, c->pre, (size_t)c->npre);
    ob_put(o, c->head, (size_t)c->nhead); /* {"type":"batch","source":...[,"topic":...,"partition":...] */
    KEY(o, c, position); ob_i64(o, position);
    KEY(o, c, base_offset); ob_i64(o, base_offset);
    KEY(o, c, last_offset); ob_i64(o, wrap_add(base_offset, lod));
    KEY(o, c, batch_length); ob_i64(o, be32(h + 8));
    KEY(o, c, size_in_bytes); ob_i64(o, size);
    KEY(o, c, partition_leader_epoch); ob_i64(o, be32(h + 12));
    KEY(o, c, magic); OB_LIT(o, "2");
    KEY(o, c, crc); ob_i64(o, (uint32_t)be32(h + 17));
    KEY(o, c, crc_valid); if (c->verify_crc) OB_LIT(o, "true"); else OB_LIT(o, "null");
    KEY(o, c, attributes); ob_i64(o, attributes);
    KEY(o, c, compression); ob_ch(o, '"');
    ob_put(o, compression_name[codec], strlen(compression_name[codec])); ob_ch(o, '"');
    KEY(o, c, timestamp_type); if (lat) OB_LIT(o, "\"LOG_APPEND_TIME\""); else OB_LIT(o, "\"CREATE_TIME\"");
    KEY(o, c, is_transactional); if (attributes & 0x10) OB_LIT(o, "true"); else OB_LIT(o, "false");
    KEY(o, c, is_control); if (attributes & 0x20) OB_LIT(o, "true"); else OB_LIT(o, "false");
    KEY(o, c, delete_horizon_ms); OB_LIT(o, "null");
    KEY(o, c, last_offset_delta); ob_i64(o, lod);
    KEY(o, c, base_timestamp); ob_i64(o, be64(h + 27));
    KEY(o, c, max_timestamp); ob_i64(o, be64(h + 35));
    KEY(o, c, producer_id); ob_i64(o, be64(h + 43));
    KEY(o, c, producer_epoch); ob_i64(o, be16(h + 51));
    KEY(o, c, base_sequence); ob_i64(o, base_seq);
    KEY(o, c, last_sequence); ob_i64(o, last_seq);
    KEY(o, c, record_count); ob_i64(o, be32(h + 57));
    ob_ch(o, '}');
    ob_put(o, c->post, (size_t)c->npost);
    return 0;
}

static int dctx_parse(PyObject *opts, dctx_t *c) {
    /* (fmt, bytes, offsets, verify_crc, comma, colon, pre, post, head) */
    if (!PyArg_ParseTuple(opts, "iiiis#s#s#s#s#", &c->fmt, &c->bytes, &c->offsets, &c->verify_crc, &c->comma,
                          &c->ncomma, &c->colon, &c->ncolon, &c->pre, &c->npre, &c->post, &c->npost, &c->head,
                          &c->nhead))
        return 0;
    if (c->ncomma > 4 || c->ncolon > 4) {
        PyErr_SetString(PyExc_ValueError, "separators of at most 4 bytes");
        return 0;
    }
    memset(c->frag, 0, sizeof c->frag);
    for (int k = 0; k < DK_COUNT; k++) {
        size_t n = strlen(key_names[k]); /* at most 22: partition_leader_epoch */
        char *f = c->frag[k];
        memcpy(f, c->comma, (size_t)c->ncomma);
        f += c->ncomma;
        *f++ = '"';
        memcpy(f, key_names[k], n);
        f += n;
        *f++ = '"';
        memcpy(f, c->colon, (size_t)c->ncolon);
        f += c->ncolon;
        c->nfrag[k] = (uint8_t)(f - c->frag[k]);
    }
    return 1;
}

#define DUMP_MAX_RECORDS (1 << 16) /* a bigger batch is the Python writer's (chunk by chunk) */

/* dump_segment(data, i, hi, base_position, opts, decompress, max_out) ->
 *   (index reached, batches, bytes of them, output bytes)
 * Walks plain v2 batches from index i while they start before hi and the output is under
 * max_out bytes; stops before the first batch it cannot print exactly (see the top). */
static PyObject *py_dump_segment(PyObject *self, PyObject *args) {
    PyObject *data_obj, *opts, *decompress;
    Py_ssize_t i, hi, max_out;
    long long base_position;
    dctx_t c;
    if (!PyArg_ParseTuple(args, "OnnLOOn", &data_obj, &i, &hi, &base_position, &opts, &decompress, &max_out))
        return NULL;
    if (!dctx_parse(opts, &c)) return NULL;
    Py_buffer buf;
    if (PyObject_GetBuffer(data_obj, &buf, PyBUF_SIMPLE)) return NULL;
    const uint8_t *b = (const uint8_t *)buf.buf;
    Py_ssize_t n = buf.len;
    PyObject *mv = NULL;
    ob_t o = {NULL, 0, 0};
    long long batches = 0, bytes = 0;
    if (hi > n) hi = n;
    while (i < hi && (Py_ssize_t)o.n < max_out) {
        if (n - i < 61) break;
        const uint8_t *h = b + i;
        int64_t size = (int64_t)be32(h + 8) + 12;
        if (h[16] != 2 || size < 61 || size > n - i) break;
        int16_t attributes = be16(h + 21);
        int64_t last_offset;
        if (__builtin_add_overflow(be64(h), (int64_t)be32(h + 23), &last_offset)) break;
        if (attributes & 0x40) break;         /* a delete horizon: the Python writer's */
        if ((attributes & 0x07) > 4) break;
        int32_t count = be32(h + 57);
        if (count < 0 || count > DUMP_MAX_RECORDS) break;
        vbatch_t v;
        int rc = vbatch_open(&v, data_obj, &mv, b, n, i, base_position, decompress, c.verify_crc);
        if (rc < 0) goto error;
        if (rc == 0) break;
        vhead_t hd = {v.pos, v.base_offset, v.base_ts, v.max_ts, v.pid, be32(h + 53), v.has_lat, v.control};
        size_t mark = o.n;
        if (dump_batch_line(&o, &c, h, v.pos, size)) { Py_XDECREF(v.plain); goto error; }
        const uint8_t *p = v.rp;
        int ok = 1;
        for (int32_t k = 0; k < count; k++) {
            rec_t r;
            rerr_t er;
            if (parse_record(&p, v.re, &r, &er)) { ok = 0; break; }
            int w = dump_record(&o, &c, &hd, &r);
            if (w < 0) { Py_XDECREF(v.plain); goto error; }
            if (w == 0) { ok = 0; break; }
        }
        if (ok && p != v.re) ok = 0; /* bytes after the last record: the Python codec reports them */
        Py_XDECREF(v.plain);
        if (!ok) { o.n = mark; break; }
        batches++;
        bytes += size;
        i += (Py_ssize_t)size;
    }
    Py_XDECREF(mv);
    PyBuffer_Release(&buf);
    PyObject *out = PyBytes_FromStringAndSize(o.p ? o.p : "", (Py_ssize_t)o.n);
    PyMem_Free(o.p);
    if (!out) return NULL;
    return Py_BuildValue("(nLLN)", i, batches, bytes, out);
error:
    Py_XDECREF(mv);
    PyBuffer_Release(&buf);
    PyMem_Free(o.p);
    return NULL;
}

/* dump_records(buf, start, end, count, base_offset, base_ts, log_append_time | None, base_sequence,
 *              position, opts, max_out)
 *   -> (output bytes, records printed, index after them, end of the record declined or -1)
 * The records of one v2 batch (or one chunk of a big one, already checked by the codec) as
 * record lines; stops after max_out bytes of output or before a record it cannot print
 * exactly (the Python writer prints that one, then calls again from the index after it). */
static PyObject *py_dump_records(PyObject *self, PyObject *args) {
    PyObject *buf_obj, *lat_obj, *opts;
    Py_ssize_t start, end, count, max_out;
    long long base_offset, base_ts, position;
    int base_seq;
    dctx_t c;
    if (!PyArg_ParseTuple(args, "OnnnLLOiLOn", &buf_obj, &start, &end, &count, &base_offset, &base_ts, &lat_obj,
                          &base_seq, &position, &opts, &max_out))
        return NULL;
    if (!dctx_parse(opts, &c)) return NULL;
    vhead_t hd = {position, base_offset, base_ts, 0, 0, base_seq, lat_obj != Py_None, 0};
    if (hd.has_lat) {
        hd.max_ts = PyLong_AsLongLong(lat_obj);
        if (hd.max_ts == -1 && PyErr_Occurred()) return NULL;
    }
    Py_buffer buf;
    if (PyObject_GetBuffer(buf_obj, &buf, PyBUF_SIMPLE)) return NULL;
    if (end > buf.len) end = buf.len;
    if (start < 0 || start > end) start = end;
    const uint8_t *b = (const uint8_t *)buf.buf;
    const uint8_t *p = b + start, *e = b + end;
    ob_t o = {NULL, 0, 0};
    Py_ssize_t done = 0, declined_end = -1;
    while (done < count && (Py_ssize_t)o.n < max_out) {
        const uint8_t *q = p;
        rec_t r;
        rerr_t er;
        if (parse_record(&q, e, &r, &er)) break;
        int w = dump_record(&o, &c, &hd, &r);
        if (w < 0) { PyBuffer_Release(&buf); PyMem_Free(o.p); return NULL; }
        if (w == 0) { declined_end = q - b; break; }
        p = q;
        done++;
    }
    PyBuffer_Release(&buf);
    PyObject *out = PyBytes_FromStringAndSize(o.p ? o.p : "", (Py_ssize_t)o.n);
    PyMem_Free(o.p);
    if (!out) return NULL;
    return Py_BuildValue("(Nnnn)", out, done, (Py_ssize_t)(p - b), declined_end);
}

static int tuple_i64(PyObject *o, int64_t *out) {
    if (!PyLong_Check(o)) return 0;
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow || (v == -1 && PyErr_Occurred())) { PyErr_Clear(); return 0; }
    *out = v;
    return 1;
}

static int tuple_bytes(PyObject *o, const uint8_t **p, int32_t *n) {
    if (o == Py_None) { *p = NULL; *n = -1; return 1; }
    if (!PyBytes_Check(o) || PyBytes_GET_SIZE(o) > INT32_MAX) return 0;
    *p = (const uint8_t *)PyBytes_AS_STRING(o);
    *n = (int32_t)PyBytes_GET_SIZE(o);
    return 1;
}

/* dump_tuples(records, start, position, magic, label, opts, max_out) -> (output bytes, index reached)
 * Records the codec handed to Python (a list of field tuples (offset, timestamp, sequence, key,
 * value, headers, ...) of a batch that is not a control batch) as record lines, from index
 * `start`, until max_out bytes of output; it stops at a record with headers or one it cannot
 * print exactly, which the Python writer then prints. */
static PyObject *py_dump_tuples(PyObject *self, PyObject *args) {
    PyObject *items, *opts;
    Py_ssize_t k, max_out;
    long long position;
    int magic, label;
    dctx_t c;
    if (!PyArg_ParseTuple(args, "O!nLiiOn", &PyList_Type, &items, &k, &position, &magic, &label, &opts, &max_out))
        return NULL;
    if (!dctx_parse(opts, &c)) return NULL;
    if (label < 0 || label > 2) label = 2;
    ob_t o = {NULL, 0, 0};
    Py_ssize_t n = PyList_GET_SIZE(items);
    for (; k < n && (Py_ssize_t)o.n < max_out; k++) {
        PyObject *t = PyList_GET_ITEM(items, k);
        if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) < 6) break;
        PyObject *h = PyTuple_GET_ITEM(t, 5);
        if (!PyList_Check(h) || PyList_GET_SIZE(h) != 0) break;
        int64_t offset, ts, seq;
        rec_t r;
        memset(&r, 0, sizeof r);
        if (!tuple_i64(PyTuple_GET_ITEM(t, 0), &offset) || !tuple_i64(PyTuple_GET_ITEM(t, 1), &ts) ||
            !tuple_i64(PyTuple_GET_ITEM(t, 2), &seq) || !tuple_bytes(PyTuple_GET_ITEM(t, 3), &r.key, &r.klen) ||
            !tuple_bytes(PyTuple_GET_ITEM(t, 4), &r.value, &r.vlen))
            break;
        int w = dump_line(&o, &c, position, offset, ts, seq, magic, label, 0, &r);
        if (w < 0) { PyMem_Free(o.p); return NULL; }
        if (w == 0) break;
    }
    PyObject *out = PyBytes_FromStringAndSize(o.p ? o.p : "", (Py_ssize_t)o.n);
    PyMem_Free(o.p);
    if (!out) return NULL;
    return Py_BuildValue("(Nn)", out, k);
}
