/*
 * kgtool.offsets._replay: the offset-commit loop of a __consumer_offsets partition replay in C.
 *
 * The twin of kgtool/offsets/store.py `_replay_commits_py` / `_apply_py` (same state, same
 * outputs, same events; the tests run both). Optional: without it the Python loop runs.
 *
 *   replay_commits(lo, hi, source, serial, k, g, key, record_offset, position, timestamp, producer,
 *                  producer_id, version, offset, leader_epoch, commit_ts, expire_ts, metadata,
 *                  out_generation, out_protocol, out_state, out_owners, out_effective,
 *                  out_effective_at, out_note, out_txn_result, out_txn_marker, out_token, out_slot,
 *                  events, p, x, free, meta) -> number of events
 *   end_transaction(producer, result, commit, marker_offset, k, g, p, x, free, meta, events)
 *                  -> number of events, or -(rows needed) when events is too small (nothing changed)
 *
 * k: int64[n_keys, K_FIELDS] and g: int64[n_groups, G_FIELDS] (the column order of K_FIELDS
 * and G_FIELDS in store.py, checked at import by store.py against FIELDS below); inputs are
 * int64 arrays except metadata (int32 codes into the chunk's dictionary, stored with the chunk's
 * serial: Store.settle_metadata resolves them after the chunk); outputs as CommitOutputs; events int64[capacity, EV_WIDTH] with capacity >=
 * hi - lo + 1 (at most one event per commit... except the epoch event, so 2 per commit: the
 * caller gives hi - lo + 16 rows and this function stops early if they run out).
 *
 *   track_moves(owners, last, keys, moved_at, token, k) -> moved: see below.
 *   attribute_keys(keys, owners, codes, intern, k) -> [(tp, key index), ...] unowned: see below.
 *
 * p: int64[capacity, P_FIELDS], the slots of pending transactional commits; x: int64[producers,
 * X_FIELDS], each producer's open transaction as a chain of slots; free: int64[] free slots, the
 * first meta[1]; meta: int64[2] (slots ever used, free slots). store.py makes room for hi - lo
 * more slots than meta[0] before calling replay_commits.
 *
 * Semantics (Kafka 4.x): OffsetMetadataManager.replay (plain commits stored; transactional
 * ones pending, per producer; tombstones remove the offset and the key's pending offsets),
 * OffsetMetadataManager.replayEndTransactionMarker (COMMIT stores each pending offset whose record
 * offset is above the stored one's; ABORT drops them) and the rules comparing a commit with the
 * past (kgtool/offsets/rules.py).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define NULLV INT64_MIN

/* K_FIELDS */
enum {
    K_GID, K_OWNERS, K_ORPHAN, K_MOVED, K_ST_HAS, K_ST_OFFSET, K_ST_RECORD, K_ST_POSITION, K_ST_SOURCE,
    K_ST_TIMESTAMP, K_ST_GENERATION, K_ST_COMMIT_TS, K_ST_EXPIRE_TS, K_MAX_EPOCH, K_TOP_HAS, K_TOP_OFFSET,
    K_TOP_GENERATION, K_TOP_RECORD, K_TOP_POSITION, K_TOP_SOURCE, K_LAST_REMOVAL, K_TXN_LAST, K_TXN_RECORD,
    K_ST_LEADER_EPOCH, K_ST_METADATA_CHUNK, K_ST_METADATA, K_ABORTED_SLOT, K_N
};
/* P_FIELDS */
enum {
    P_KEY, P_PRODUCER, P_PRODUCER_ID, P_RECORD, P_OFFSET, P_LEADER_EPOCH, P_POSITION, P_SOURCE, P_TIMESTAMP,
    P_GENERATION, P_COMMIT_TS, P_EXPIRE_TS, P_STATE, P_METADATA_CHUNK, P_METADATA, P_ORPHAN, P_NEXT, P_RESULT,
    P_MARKER, P_EFFECTIVE_AT, P_NOTE, P_ABORTED, P_DONE, P_N
};
enum { X_HEAD, X_TAIL, X_N };
/* G_FIELDS */
enum { G_GENERATION, G_PROTOCOL, G_STATE, G_TOKEN, G_COUNT, G_EXISTS, G_RECORDS, G_N };
enum { EV_ORPHAN = 1, EV_EPOCH = 2, EV_REWIND = 3, EV_ZOMBIE = 4, EV_TXN_ORPHAN = 5 };
#define EV_WIDTH 12
#define NOTE_RESET 1
#define NOTE_REVOKING 2
#define NOTE_SUPERSEDED 3

static const char *K_NAMES =
    "gid owners orphan moved st_has st_offset st_record st_position st_source st_timestamp st_generation "
    "st_commit_ts st_expire_ts max_epoch top_has top_offset top_generation top_record top_position top_source "
    "last_removal txn_last txn_record st_leader_epoch st_metadata_chunk st_metadata aborted_slot";
static const char *G_NAMES = "generation protocol state token count exists records";
static const char *P_NAMES =
    "key producer producer_id record offset leader_epoch position source timestamp generation commit_ts expire_ts "
    "state metadata_chunk metadata orphan next result marker effective_at note aborted done";

typedef struct {
    Py_buffer b;
    int ok;
} buf_t;

static int get(PyObject *o, buf_t *x, Py_ssize_t itemsize, const char *what) {
    x->ok = 0;
    if (PyObject_GetBuffer(o, &x->b, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return -1;
    x->ok = 1;
    if (x->b.itemsize != itemsize) {
        PyErr_Format(PyExc_TypeError, "%s: expected items of %zd bytes, got %zd", what, itemsize, x->b.itemsize);
        return -1;
    }
    return 0;
}

static void rel(buf_t *x) {
    if (x->ok) PyBuffer_Release(&x->b);
    x->ok = 0;
}

typedef struct {
    int64_t *ev;
    Py_ssize_t n, cap;
} events_t;

static inline int64_t *ev_push(events_t *E, int64_t kind, int64_t row, int64_t key) {
    if (E->n >= E->cap) return NULL;
    int64_t *e = E->ev + E->n * EV_WIDTH;
    memset(e, 0, sizeof(int64_t) * EV_WIDTH);
    e[0] = kind;
    e[1] = row;
    e[2] = key;
    E->n++;
    return e;
}

/* offset, record, position, source, generation of the stored (st) or top commit */
static inline void previous(const int64_t *r, int top, int64_t *dst) {
    if (!r[top ? K_TOP_HAS : K_ST_HAS]) {
        dst[0] = dst[1] = dst[2] = dst[3] = dst[4] = NULLV;
        return;
    }
    if (top) {
        dst[0] = r[K_TOP_OFFSET]; dst[1] = r[K_TOP_RECORD]; dst[2] = r[K_TOP_POSITION];
        dst[3] = r[K_TOP_SOURCE]; dst[4] = r[K_TOP_GENERATION];
    } else {
        dst[0] = r[K_ST_OFFSET]; dst[1] = r[K_ST_RECORD]; dst[2] = r[K_ST_POSITION];
        dst[3] = r[K_ST_SOURCE]; dst[4] = r[K_ST_GENERATION];
    }
}

/* apply: the commit becomes the key's offset, and the rules comparing it with the past (the twin
 * of store.py _apply_py). Returns 1 for a reset while Empty (its note), 0, or -1 when the events
 * ran out. */
static int apply(int64_t *r, int64_t k, int64_t row, int64_t offset, int64_t epoch, int64_t record,
                 int64_t position, int64_t source, int64_t timestamp, int64_t generation, int64_t commit_ts,
                 int64_t expire_ts, int64_t token, int64_t state, int64_t metadata_chunk, int64_t metadata,
                 events_t *E) {
    int reset = 0;
    if (epoch >= 0) {
        int64_t best = r[K_MAX_EPOCH];
        if (best >= 0 && epoch < best) {
            int64_t *e = ev_push(E, EV_EPOCH, row, k);
            if (!e) return -1;
            e[3] = epoch;
            e[4] = best;
            previous(r, 0, e + 5);
        }
        if (best < 0 || epoch > best) r[K_MAX_EPOCH] = epoch;
    }
    if (r[K_ST_HAS] && offset < r[K_ST_OFFSET]) {
        if (state == 0) {
            reset = 1; /* a reset while Empty */
        } else {
            int zombie = r[K_MOVED] != NULLV && r[K_TOP_HAS] && r[K_TOP_OFFSET] > offset;
            int64_t *e = ev_push(E, zombie ? EV_ZOMBIE : EV_REWIND, row, k);
            if (!e) return -1;
            previous(r, zombie, e + 3);
        }
    }
    r[K_ST_HAS] = 1;
    r[K_ST_OFFSET] = offset;
    r[K_ST_RECORD] = record;
    r[K_ST_POSITION] = position;
    r[K_ST_SOURCE] = source;
    r[K_ST_TIMESTAMP] = timestamp;
    r[K_ST_GENERATION] = generation;
    r[K_ST_COMMIT_TS] = commit_ts;
    r[K_ST_EXPIRE_TS] = expire_ts;
    r[K_ST_LEADER_EPOCH] = epoch;
    r[K_ST_METADATA_CHUNK] = metadata_chunk;
    r[K_ST_METADATA] = metadata;
    int64_t moved = r[K_MOVED];
    if (moved != NULLV && token >= 0 && token >= moved) {
        if (!r[K_TOP_HAS] || offset > r[K_TOP_OFFSET]) {
            r[K_TOP_HAS] = 1;
            r[K_TOP_OFFSET] = offset;
            r[K_TOP_GENERATION] = generation;
            r[K_TOP_RECORD] = record;
            r[K_TOP_POSITION] = position;
            r[K_TOP_SOURCE] = source;
        }
    }
    return reset;
}

/* The slot table and its free list: (p, x, free, meta) as buffers. */
typedef struct {
    int64_t *P, *X, *free, *meta;
    Py_ssize_t n_slots, n_producers, n_free_cap;
} slots_t;

static int get_slots(PyObject **o, buf_t *b, slots_t *S, const char *what) {
    for (int i = 0; i < 4; i++) {
        if (get(o[i], &b[i], 8, what) < 0) return -1;
    }
    if (b[0].b.len % (8 * P_N) || b[1].b.len % (8 * X_N) || b[3].b.len < 16) {
        PyErr_Format(PyExc_ValueError, "%s: slot tables of the wrong width", what);
        return -1;
    }
    S->P = b[0].b.buf;
    S->X = b[1].b.buf;
    S->free = b[2].b.buf;
    S->meta = b[3].b.buf;
    S->n_slots = b[0].b.len / (8 * P_N);
    S->n_producers = b[1].b.len / (8 * X_N);
    S->n_free_cap = b[2].b.len / 8;
    if (S->meta[0] < 0 || S->meta[0] > S->n_slots || S->meta[1] < 0 || S->meta[1] > S->n_free_cap) {
        PyErr_Format(PyExc_ValueError, "%s: slot counts out of range", what);
        return -1;
    }
    return 0;
}

static int64_t slot_alloc(slots_t *S) {
    if (S->meta[1] > 0) {
        int64_t s = S->free[--S->meta[1]];
        if (s >= 0 && s < S->meta[0]) return s;
        return -1;
    }
    if (S->meta[0] >= S->n_slots) return -1;
    return S->meta[0]++;
}

static PyObject *py_replay_commits(PyObject *self, PyObject *args) {
    Py_ssize_t lo, hi;
    long long source, serial;
    PyObject *o[30];
    if (!PyArg_ParseTuple(args, "nnLLOOOOOOOOOOOOOOOOOOOOOOOOOOOOOO", &lo, &hi, &source, &serial, &o[0], &o[1],
                          &o[2], &o[3], &o[4], &o[5], &o[6], &o[7], &o[8], &o[9], &o[10], &o[11], &o[12], &o[13],
                          &o[14], &o[15], &o[16], &o[17], &o[18], &o[19], &o[20], &o[21], &o[22], &o[23], &o[24],
                          &o[25], &o[26], &o[27], &o[28], &o[29]))
        return NULL;
    /* o: 0 k, 1 g, 2 key, 3 record_offset, 4 position, 5 timestamp, 6 producer (code), 7 producer_id,
     * 8 version, 9 offset, 10 leader_epoch, 11 commit_ts, 12 expire_ts, 13 metadata(i32), 14 out_generation,
     * 15 out_protocol(i8), 16 out_state(i8), 17 out_owners, 18 out_effective(bool), 19 out_effective_at,
     * 20 out_note(i8), 21 out_txn_result(i8), 22 out_txn_marker, 23 out_token, 24 out_slot, 25 events,
     * 26 p, 27 x, 28 free, 29 meta */
    static const Py_ssize_t sizes[26] = {8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 4, 8, 1, 1, 8, 1, 8, 1, 1, 8, 8, 8, 8};
    buf_t b[30];
    memset(b, 0, sizeof b);
    PyObject *result = NULL;
    slots_t S;
    if (serial < 0) {
        PyErr_SetString(PyExc_ValueError, "replay_commits: the chunk serial must be >= 0");
        return NULL;
    }
    for (int i = 0; i < 26; i++) {
        if (get(o[i], &b[i], sizes[i], "replay_commits") < 0) goto done;
    }
    if (get_slots(o + 26, b + 26, &S, "replay_commits") < 0) goto done;
    int64_t *K = (int64_t *)b[0].b.buf, *G = (int64_t *)b[1].b.buf;
    Py_ssize_t n_keys = b[0].b.len / (8 * K_N), n_groups = b[1].b.len / (8 * G_N);
    if (b[0].b.len % (8 * K_N) || b[1].b.len % (8 * G_N)) {
        PyErr_SetString(PyExc_ValueError, "replay_commits: state matrices of the wrong width");
        goto done;
    }
    Py_ssize_t n = b[2].b.len / 8;
    for (int i = 3; i < 25; i++) {
        if (b[i].b.len / b[i].b.itemsize != n) {
            PyErr_Format(PyExc_ValueError, "replay_commits: column %d has %zd rows, expected %zd", i,
                         b[i].b.len / b[i].b.itemsize, n);
            goto done;
        }
    }
    if (lo < 0 || hi > n || lo > hi) {
        PyErr_SetString(PyExc_ValueError, "replay_commits: bad range");
        goto done;
    }
    const int64_t *key = b[2].b.buf, *rec = b[3].b.buf, *pos = b[4].b.buf, *ts = b[5].b.buf, *prod = b[6].b.buf,
                  *pid = b[7].b.buf, *ver = b[8].b.buf, *off = b[9].b.buf, *le = b[10].b.buf, *cts = b[11].b.buf,
                  *ets = b[12].b.buf;
    const int32_t *meta = b[13].b.buf;
    int64_t *o_gen = b[14].b.buf, *o_owners = b[17].b.buf, *o_eff_at = b[19].b.buf, *o_token = b[23].b.buf,
            *o_slot = b[24].b.buf;
    int8_t *o_proto = b[15].b.buf, *o_state = b[16].b.buf, *o_note = b[20].b.buf, *o_txn = b[21].b.buf;
    uint8_t *o_eff = b[18].b.buf;
    (void)b[22]; /* txn marker: filled by Store.resolve from the slot */
    events_t E = {(int64_t *)b[25].b.buf, 0, b[25].b.len / (8 * EV_WIDTH)};
    Py_ssize_t j;
    int overflow = 0;
    for (j = lo; j < hi && !overflow; j++) {
        int64_t k = key[j];
        if (k < 0 || k >= n_keys) {
            PyErr_Format(PyExc_ValueError, "replay_commits: key %lld out of range", (long long)k);
            goto done;
        }
        int64_t *r = K + k * K_N;
        int64_t gid = r[K_GID];
        if (gid < 0 || gid >= n_groups) {
            PyErr_SetString(PyExc_ValueError, "replay_commits: group out of range");
            goto done;
        }
        int64_t *g = G + gid * G_N;
        int64_t generation = g[G_GENERATION], state = g[G_STATE], token = g[G_TOKEN];
        o_gen[j] = generation;
        o_proto[j] = (int8_t)g[G_PROTOCOL];
        o_state[j] = (int8_t)state;
        o_owners[j] = r[K_OWNERS];
        o_token[j] = token;
        g[G_RECORDS]++;
        if (g[G_PROTOCOL]) g[G_COUNT]++;
        int64_t record = rec[j];
        if (ver[j] < 0) {
            /* OffsetMetadataManager.replay, tombstone: the offset and the key's pending
             * transactional offsets are removed. */
            r[K_ST_HAS] = 0;
            r[K_MAX_EPOCH] = -1;
            r[K_TOP_HAS] = 0;
            r[K_LAST_REMOVAL] = record; /* (pending slots written before it no longer count) */
            continue;
        }
        g[G_EXISTS] = 1;
        if (pid[j] != -1) {
            /* transactional: pending until its producer's marker, in a slot of its transaction */
            if (r[K_TXN_RECORD] == NULLV || record > r[K_TXN_RECORD]) r[K_TXN_RECORD] = record;
            int64_t c = prod[j];
            if (c < 0 || c >= S.n_producers) {
                PyErr_Format(PyExc_ValueError, "replay_commits: producer code %lld out of range", (long long)c);
                goto done;
            }
            int64_t s = slot_alloc(&S);
            if (s < 0) {
                PyErr_SetString(PyExc_RuntimeError, "replay_commits: no free slot");
                goto done;
            }
            int64_t *pr = S.P + s * P_N;
            pr[P_KEY] = k; pr[P_PRODUCER] = c; pr[P_PRODUCER_ID] = pid[j]; pr[P_RECORD] = record;
            pr[P_OFFSET] = off[j]; pr[P_LEADER_EPOCH] = le[j]; pr[P_POSITION] = pos[j]; pr[P_SOURCE] = source;
            pr[P_TIMESTAMP] = ts[j]; pr[P_GENERATION] = generation; pr[P_COMMIT_TS] = cts[j];
            pr[P_EXPIRE_TS] = ets[j]; pr[P_STATE] = state; pr[P_METADATA_CHUNK] = serial; pr[P_METADATA] = meta[j];
            pr[P_ORPHAN] = r[K_ORPHAN] == 1; pr[P_NEXT] = -1; pr[P_RESULT] = 0; pr[P_MARKER] = NULLV;
            pr[P_EFFECTIVE_AT] = NULLV; pr[P_NOTE] = r[K_ORPHAN] == 2 ? NOTE_REVOKING : 0; pr[P_ABORTED] = 0;
            pr[P_DONE] = 0;
            int64_t *x = S.X + c * X_N;
            if (x[X_TAIL] >= 0) S.P[x[X_TAIL] * P_N + P_NEXT] = s;
            else x[X_HEAD] = s;
            x[X_TAIL] = s;
            o_txn[j] = 1; /* PENDING until its marker */
            o_slot[j] = s;
            if (r[K_ORPHAN] == 1) {
                int64_t *e = ev_push(&E, EV_TXN_ORPHAN, j, k);
                if (!e) overflow = 1;
                else e[3] = s;
            } else if (r[K_ORPHAN] == 2) {
                o_note[j] = NOTE_REVOKING;
            }
            continue;
        }
        if (r[K_ORPHAN] == 1) {
            if (!ev_push(&E, EV_ORPHAN, j, k)) { overflow = 1; continue; }
        } else if (r[K_ORPHAN] == 2) {
            o_note[j] = NOTE_REVOKING;
        }
        o_eff[j] = 1;
        o_eff_at[j] = record;
        int reset = apply(r, k, j, off[j], le[j], record, pos[j], source, ts[j], generation, cts[j], ets[j], token,
                          state, serial, meta[j], &E);
        if (reset < 0) overflow = 1;
        else if (reset) o_note[j] = NOTE_RESET;
    }
    if (overflow) {
        PyErr_SetString(PyExc_RuntimeError, "replay_commits: event buffer too small");
        goto done;
    }
    result = PyLong_FromSsize_t(E.n);
done:
    for (int i = 0; i < 30; i++) rel(&b[i]);
    return result;
}

/* end_transaction(producer, result, commit, marker_offset, k, g, p, x, free, meta, events)
 *
 * The twin of store.py _end_transaction_py (OffsetMetadataManager.replayEndTransactionMarker): every
 * slot of the producer's open transaction takes the marker (result, marker offset); the last slot
 * of each key, unless a tombstone of the key came after it, is then stored (COMMIT, where its
 * record offset is above the stored one's; else its note says superseded) or becomes its key's
 * last aborted commit (ABORT). Events as replay_commits', their row being the slot. */
static PyObject *py_end_transaction(PyObject *self, PyObject *args) {
    long long code, result_code, marker;
    int commit;
    PyObject *o[7];
    if (!PyArg_ParseTuple(args, "LLpLOOOOOOO", &code, &result_code, &commit, &marker, &o[0], &o[1], &o[2], &o[3],
                          &o[4], &o[5], &o[6]))
        return NULL;
    buf_t b[7];
    memset(b, 0, sizeof b);
    PyObject *result = NULL;
    slots_t S;
    if (get(o[0], &b[0], 8, "end_transaction") < 0 || get(o[1], &b[1], 8, "end_transaction") < 0 ||
        get_slots(o + 2, b + 2, &S, "end_transaction") < 0 || get(o[6], &b[6], 8, "end_transaction") < 0)
        goto done;
    int64_t *K = b[0].b.buf, *G = b[1].b.buf;
    Py_ssize_t n_keys = b[0].b.len / (8 * K_N), n_groups = b[1].b.len / (8 * G_N);
    if (b[0].b.len % (8 * K_N) || b[1].b.len % (8 * G_N)) {
        PyErr_SetString(PyExc_ValueError, "end_transaction: state matrices of the wrong width");
        goto done;
    }
    if (code < 0 || code >= S.n_producers) {
        PyErr_SetString(PyExc_ValueError, "end_transaction: producer code out of range");
        goto done;
    }
    events_t E = {(int64_t *)b[6].b.buf, 0, b[6].b.len / (8 * EV_WIDTH)};
    int64_t *x = S.X + code * X_N;
    /* first pass: check the chain, count it (at most 3 events per slot: orphan, epoch, rewind) */
    Py_ssize_t length = 0;
    for (int64_t s = x[X_HEAD]; s >= 0; s = S.P[s * P_N + P_NEXT]) {
        if (s >= S.meta[0] || length > S.meta[0]) {
            PyErr_SetString(PyExc_ValueError, "end_transaction: broken slot chain");
            goto done;
        }
        int64_t k = S.P[s * P_N + P_KEY];
        if (k < 0 || k >= n_keys || K[k * K_N + K_GID] < 0 || K[k * K_N + K_GID] >= n_groups) {
            PyErr_SetString(PyExc_ValueError, "end_transaction: slot key out of range");
            goto done;
        }
        length++;
    }
    if (3 * length > E.cap) {
        result = PyLong_FromSsize_t(-(3 * length + 16));
        goto done;
    }
    for (int64_t s = x[X_HEAD]; s >= 0; s = S.P[s * P_N + P_NEXT]) {
        int64_t *pr = S.P + s * P_N;
        pr[P_RESULT] = result_code;
        pr[P_MARKER] = marker;
        K[pr[P_KEY] * K_N + K_TXN_LAST] = s; /* the key's last commit in the transaction wins */
    }
    int64_t s = x[X_HEAD];
    x[X_HEAD] = x[X_TAIL] = -1;
    for (; s >= 0; s = S.P[s * P_N + P_NEXT]) {
        int64_t *pr = S.P + s * P_N;
        int64_t k = pr[P_KEY];
        int64_t *r = K + k * K_N;
        if (r[K_TXN_LAST] != s) continue; /* replaced by a later commit of the key in the transaction */
        if (r[K_LAST_REMOVAL] != NULLV && pr[P_RECORD] < r[K_LAST_REMOVAL]) continue; /* a tombstone came after */
        if (!commit) {
            int64_t old = r[K_ABORTED_SLOT];
            if (old >= 0) {
                S.P[old * P_N + P_ABORTED] = 0;
                if (S.P[old * P_N + P_DONE]) { /* its row is written out: free it */
                    if (S.meta[1] >= S.n_free_cap) {
                        PyErr_SetString(PyExc_RuntimeError, "end_transaction: free list full");
                        goto done;
                    }
                    S.P[old * P_N + P_KEY] = -1;
                    S.free[S.meta[1]++] = old;
                }
            }
            r[K_ABORTED_SLOT] = s;
            pr[P_ABORTED] = 1;
            continue;
        }
        /* replayEndTransactionMarker: only a higher record offset than the stored one wins */
        if (r[K_ST_HAS] && pr[P_RECORD] <= r[K_ST_RECORD]) {
            pr[P_NOTE] = NOTE_SUPERSEDED;
            continue;
        }
        if (pr[P_ORPHAN] && !ev_push(&E, EV_ORPHAN, s, k)) goto overflow;
        pr[P_EFFECTIVE_AT] = marker;
        /* the zombie rule: the generation in effect at the COMMIT marker (the oracle's rule) */
        int64_t now = G[r[K_GID] * G_N + G_TOKEN];
        int reset = apply(r, k, s, pr[P_OFFSET], pr[P_LEADER_EPOCH], pr[P_RECORD], pr[P_POSITION], pr[P_SOURCE],
                          pr[P_TIMESTAMP], pr[P_GENERATION], pr[P_COMMIT_TS], pr[P_EXPIRE_TS], now, pr[P_STATE],
                          pr[P_METADATA_CHUNK], pr[P_METADATA], &E);
        if (reset < 0) goto overflow;
        if (reset) pr[P_NOTE] = NOTE_RESET;
    }
    result = PyLong_FromSsize_t(E.n);
    goto done;
overflow:
    PyErr_SetString(PyExc_RuntimeError, "end_transaction: event buffer too small");
done:
    for (int i = 0; i < 7; i++) rel(&b[i]);
    return result;
}

/* The key state matrix k (int64[n, K_N], C order) as a writable buffer: its rows, or -1. */
static Py_ssize_t key_rows(PyObject *k, buf_t *kb, const char *what) {
    if (get(k, kb, 8, what) < 0) return -1;
    if (kb->b.len % (8 * K_N)) {
        PyErr_Format(PyExc_ValueError, "%s: key state matrix of the wrong width", what);
        return -1;
    }
    return kb->b.len / (8 * K_N);
}

/* The row of a key index from a dict, bounds-checked; NULL with an exception otherwise. */
static int64_t *key_row(int64_t *K, Py_ssize_t n_keys, PyObject *index) {
    Py_ssize_t i = PyLong_AsSsize_t(index);
    if (i == -1 && PyErr_Occurred()) return NULL;
    if (i < 0 || i >= n_keys) {
        PyErr_Format(PyExc_IndexError, "key index %zd out of range (%zd keys)", i, n_keys);
        return NULL;
    }
    return K + i * K_N;
}

/* track_moves(owners, last, keys, moved_at, token, k) -> moved
 *
 * The twin of kgtool/offsets/generations.py track_moves_py (GroupState._track_moves, the zombie
 * rule's moves): a partition whose owners in the new generation (owners: {tp: owner tuple})
 * differ from its last known ones (last) moved; last is updated, moved_at[tp] = token for each
 * moved partition, and the rows of k of the moved partitions that have commits (keys: {tp: key
 * index}) get moved = token, top_has = 0. Returns the number of moved partitions. Runs once per
 * generation record, over every assigned partition. */
static PyObject *py_track_moves(PyObject *self, PyObject *args) {
    PyObject *owners, *last, *keys, *moved_at, *token, *kobj;
    if (!PyArg_ParseTuple(args, "O!O!O!O!OO", &PyDict_Type, &owners, &PyDict_Type, &last, &PyDict_Type, &keys,
                          &PyDict_Type, &moved_at, &token, &kobj))
        return NULL;
    long long token_value = PyLong_AsLongLong(token);
    if (token_value == -1 && PyErr_Occurred()) return NULL;
    buf_t kb;
    Py_ssize_t n_keys = key_rows(kobj, &kb, "track_moves");
    PyObject *result = NULL;
    if (n_keys < 0) goto done;
    int64_t *K = (int64_t *)kb.b.buf;
    Py_ssize_t pos = 0, n = 0;
    PyObject *tp, *now;
    while (PyDict_Next(owners, &pos, &tp, &now)) {
        PyObject *old = PyDict_GetItemWithError(last, tp);
        if (!old) {
            if (PyErr_Occurred() || PyDict_SetItem(last, tp, now)) goto done;
            continue;  /* a partition seen for the first time: no move */
        }
        int same = PyObject_RichCompareBool(old, now, Py_EQ);
        if (same < 0) goto done;
        if (same) continue;
        n++;
        if (PyDict_SetItem(moved_at, tp, token) || PyDict_SetItem(last, tp, now)) goto done;
        PyObject *index = PyDict_GetItemWithError(keys, tp);
        if (index) {
            int64_t *r = key_row(K, n_keys, index);
            if (!r) goto done;
            r[K_MOVED] = token_value;
            r[K_TOP_HAS] = 0;
        } else if (PyErr_Occurred()) {
            goto done;
        }
    }
    result = PyLong_FromSsize_t(n);
done:
    rel(&kb);
    return result;
}

/* attribute_keys(keys, owners, codes, intern, k) -> [(tp, key index), ...]
 *
 * The twin of kgtool/offsets/generations.py attribute_keys_py (GroupState.snapshot): every
 * partition with commits (keys: {tp: key index}) is attributed to the owners the generation
 * gives it (owners: {tp: sorted owner tuple}, () when absent): its row of k gets owners = the
 * code of that tuple (codes: {tuple: code}; intern(tuple) -> code adds a new one) and
 * orphan = 0. Returns the partitions without an owner, whose orphan state the caller decides.
 * Runs once per generation record, over every partition with commits. */
static PyObject *py_attribute_keys(PyObject *self, PyObject *args) {
    PyObject *keys, *owners, *codes, *intern, *kobj;
    if (!PyArg_ParseTuple(args, "O!O!O!OO", &PyDict_Type, &keys, &PyDict_Type, &owners, &PyDict_Type, &codes, &intern,
                          &kobj))
        return NULL;
    buf_t kb;
    Py_ssize_t n_keys = key_rows(kobj, &kb, "attribute_keys");
    PyObject *unowned = NULL, *empty = NULL;
    if (n_keys < 0) goto fail;
    int64_t *K = (int64_t *)kb.b.buf;
    if (!(unowned = PyList_New(0)) || !(empty = PyTuple_New(0))) goto fail;
    Py_ssize_t pos = 0;
    PyObject *tp, *index;
    while (PyDict_Next(keys, &pos, &tp, &index)) {
        int64_t *r = key_row(K, n_keys, index);
        if (!r) goto fail;
        PyObject *o = PyDict_GetItemWithError(owners, tp);
        if (!o) {
            if (PyErr_Occurred()) goto fail;
            o = empty;
        }
        Py_INCREF(o);  /* intern() runs Python code: hold the tuple */
        PyObject *code = PyDict_GetItemWithError(codes, o);
        if (code) {
            Py_INCREF(code);
        } else if (PyErr_Occurred() || !(code = PyObject_CallOneArg(intern, o))) {
            Py_DECREF(o);
            goto fail;
        }
        long long value = PyLong_AsLongLong(code);
        Py_DECREF(code);
        int owned = PyObject_IsTrue(o);
        Py_DECREF(o);
        if ((value == -1 && PyErr_Occurred()) || owned < 0) goto fail;
        r[K_OWNERS] = value;
        r[K_ORPHAN] = 0;
        if (!owned) {
            PyObject *pair = PyTuple_Pack(2, tp, index);
            if (!pair || PyList_Append(unowned, pair)) {
                Py_XDECREF(pair);
                goto fail;
            }
            Py_DECREF(pair);
        }
    }
    Py_DECREF(empty);
    rel(&kb);
    return unowned;
fail:
    Py_XDECREF(unowned);
    Py_XDECREF(empty);
    rel(&kb);
    return NULL;
}

static PyMethodDef methods[] = {
    {"replay_commits", py_replay_commits, METH_VARARGS, "Replay offset commits into the partition state."},
    {"end_transaction", py_end_transaction, METH_VARARGS, "Replay a COMMIT or ABORT marker of one producer."},
    {"track_moves", py_track_moves, METH_VARARGS, "The partitions whose owners changed (the zombie rule's moves)."},
    {"attribute_keys", py_attribute_keys, METH_VARARGS, "Attribute the keys to the owners of a generation."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, "_replay", "kgtool offsets replay hot loop", -1, methods};

PyMODINIT_FUNC PyInit__replay(void) {
    PyObject *m = PyModule_Create(&moddef);
    if (!m) return NULL;
    if (PyModule_AddStringConstant(m, "K_FIELDS", K_NAMES) < 0 || PyModule_AddStringConstant(m, "G_FIELDS", G_NAMES) < 0 ||
        PyModule_AddStringConstant(m, "P_FIELDS", P_NAMES) < 0 ||
        PyModule_AddIntConstant(m, "EV_WIDTH", EV_WIDTH) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
