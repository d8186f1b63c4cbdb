/*
 * kgtool.offsets._replay: the offset-commit loop of a __consumer_offsets partition replay in C.
 *
 * The twin of kgtool/offsets/store.py `_replay_commits_py` / `_apply_py` (same state, same
 * outputs, same events; the tests run both). Optional: without it the Python loop runs.
 *
 *   replay_commits(lo, hi, source, serial, k, g, key, record_offset, position, timestamp, producer_id,
 *                  version, offset, leader_epoch, commit_ts, expire_ts, metadata,
 *                  out_generation, out_protocol, out_state, out_owners, out_effective,
 *                  out_effective_at, out_note, out_txn_result, out_txn_marker, out_token,
 *                  events) -> number of events
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
 * Semantics (Kafka 4.x): OffsetMetadataManager.replay (plain commits stored; transactional
 * ones pending; tombstones remove the offset and the key's pending offsets) and the rules
 * comparing a commit with the past (kgtool/offsets/rules.py).
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
    K_TOP_GENERATION, K_TOP_RECORD, K_TOP_POSITION, K_TOP_SOURCE, K_LAST_REMOVAL, K_PENDING, K_TXN_RECORD,
    K_ST_LEADER_EPOCH, K_ST_METADATA_CHUNK, K_ST_METADATA, K_N
};
/* G_FIELDS */
enum { G_GENERATION, G_PROTOCOL, G_STATE, G_TOKEN, G_COUNT, G_EXISTS, G_RECORDS, G_N };
enum { EV_ORPHAN = 1, EV_EPOCH = 2, EV_REWIND = 3, EV_ZOMBIE = 4, EV_TXN = 5, EV_TOMBSTONE = 6 };
#define EV_WIDTH 12
#define NOTE_RESET 1
#define NOTE_REVOKING 2

static const char *K_NAMES =
    "gid owners orphan moved st_has st_offset st_record st_position st_source st_timestamp st_generation "
    "st_commit_ts st_expire_ts max_epoch top_has top_offset top_generation top_record top_position top_source "
    "last_removal pending txn_record st_leader_epoch st_metadata_chunk st_metadata";
static const char *G_NAMES = "generation protocol state token count exists records";

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

static PyObject *py_replay_commits(PyObject *self, PyObject *args) {
    Py_ssize_t lo, hi;
    long long source, serial;
    PyObject *o[24];
    if (!PyArg_ParseTuple(args, "nnLLOOOOOOOOOOOOOOOOOOOOOOOO", &lo, &hi, &source, &serial, &o[0], &o[1], &o[2],
                          &o[3], &o[4], &o[5], &o[6], &o[7], &o[8], &o[9], &o[10], &o[11], &o[12], &o[13], &o[14],
                          &o[15], &o[16], &o[17], &o[18], &o[19], &o[20], &o[21], &o[22], &o[23]))
        return NULL;
    /* o: 0 k, 1 g, 2 key, 3 record_offset, 4 position, 5 timestamp, 6 producer_id, 7 version, 8 offset,
     * 9 leader_epoch, 10 commit_ts, 11 expire_ts, 12 metadata(i32), 13 out_generation, 14 out_protocol(i8),
     * 15 out_state(i8), 16 out_owners, 17 out_effective(bool), 18 out_effective_at, 19 out_note(i8),
     * 20 out_txn_result(i8), 21 out_txn_marker, 22 out_token, 23 events */
    static const Py_ssize_t sizes[24] = {8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 4, 8, 1, 1, 8, 1, 8, 1, 1, 8, 8, 8};
    buf_t b[24];
    memset(b, 0, sizeof b);
    PyObject *result = NULL;
    if (serial < 0) {
        PyErr_SetString(PyExc_ValueError, "replay_commits: the chunk serial must be >= 0");
        return NULL;
    }
    for (int i = 0; i < 24; i++) {
        if (get(o[i], &b[i], sizes[i], "replay_commits") < 0) goto done;
    }
    int64_t *K = (int64_t *)b[0].b.buf, *G = (int64_t *)b[1].b.buf;
    Py_ssize_t n_keys = b[0].b.len / (8 * K_N), n_groups = b[1].b.len / (8 * G_N);
    if (b[0].b.len % (8 * K_N) || b[1].b.len % (8 * G_N)) {
        PyErr_SetString(PyExc_ValueError, "replay_commits: state matrices of the wrong width");
        goto done;
    }
    Py_ssize_t n = b[2].b.len / 8;
    for (int i = 3; i < 23; i++) {
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
    const int64_t *key = b[2].b.buf, *rec = b[3].b.buf, *pos = b[4].b.buf, *ts = b[5].b.buf, *pid = b[6].b.buf,
                  *ver = b[7].b.buf, *off = b[8].b.buf, *le = b[9].b.buf, *cts = b[10].b.buf, *ets = b[11].b.buf;
    const int32_t *meta = b[12].b.buf;
    int64_t *o_gen = b[13].b.buf, *o_owners = b[16].b.buf, *o_eff_at = b[18].b.buf, *o_token = b[22].b.buf;
    int8_t *o_proto = b[14].b.buf, *o_state = b[15].b.buf, *o_note = b[19].b.buf;
    uint8_t *o_eff = b[17].b.buf;
    (void)b[20]; (void)b[21]; /* txn result / marker: filled by Python (EV_TXN) */
    events_t E = {(int64_t *)b[23].b.buf, 0, b[23].b.len / (8 * EV_WIDTH)};
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
            r[K_LAST_REMOVAL] = record;
            if (r[K_PENDING] && !ev_push(&E, EV_TOMBSTONE, j, k)) overflow = 1;
            continue;
        }
        g[G_EXISTS] = 1;
        if (pid[j] != -1) {
            /* transactional: pending until its producer's marker (handled in Python) */
            r[K_PENDING] = 1;
            if (r[K_TXN_RECORD] == NULLV || record > r[K_TXN_RECORD]) r[K_TXN_RECORD] = record;
            if (!ev_push(&E, EV_TXN, j, k)) overflow = 1;
            continue;
        }
        if (r[K_ORPHAN] == 1) {
            if (!ev_push(&E, EV_ORPHAN, j, k)) { overflow = 1; continue; }
        } else if (r[K_ORPHAN] == 2) {
            o_note[j] = NOTE_REVOKING;
        }
        /* apply: the commit becomes the key's offset; the rules comparing with the past */
        int64_t offset = off[j], epoch = le[j];
        o_eff[j] = 1;
        o_eff_at[j] = record;
        if (epoch >= 0) {
            int64_t best = r[K_MAX_EPOCH];
            if (best >= 0 && epoch < best) {
                int64_t *e = ev_push(&E, EV_EPOCH, j, k);
                if (!e) { overflow = 1; continue; }
                e[3] = epoch;
                e[4] = best;
                previous(r, 0, e + 5);
            }
            if (best < 0 || epoch > best) r[K_MAX_EPOCH] = epoch;
        }
        if (r[K_ST_HAS] && offset < r[K_ST_OFFSET]) {
            if (state == 0) {
                o_note[j] = NOTE_RESET; /* a reset while Empty */
            } else {
                int zombie = r[K_MOVED] != NULLV && r[K_TOP_HAS] && r[K_TOP_OFFSET] > offset;
                int64_t *e = ev_push(&E, zombie ? EV_ZOMBIE : EV_REWIND, j, k);
                if (!e) { overflow = 1; continue; }
                previous(r, zombie, e + 3);
            }
        }
        r[K_ST_HAS] = 1;
        r[K_ST_OFFSET] = offset;
        r[K_ST_RECORD] = record;
        r[K_ST_POSITION] = pos[j];
        r[K_ST_SOURCE] = source;
        r[K_ST_TIMESTAMP] = ts[j];
        r[K_ST_GENERATION] = generation;
        r[K_ST_COMMIT_TS] = cts[j];
        r[K_ST_EXPIRE_TS] = ets[j];
        r[K_ST_LEADER_EPOCH] = epoch;
        r[K_ST_METADATA_CHUNK] = serial;
        r[K_ST_METADATA] = meta[j];
        int64_t moved = r[K_MOVED];
        if (moved != NULLV && token >= 0 && token >= moved) {
            if (!r[K_TOP_HAS] || offset > r[K_TOP_OFFSET]) {
                r[K_TOP_HAS] = 1;
                r[K_TOP_OFFSET] = offset;
                r[K_TOP_GENERATION] = generation;
                r[K_TOP_RECORD] = record;
                r[K_TOP_POSITION] = pos[j];
                r[K_TOP_SOURCE] = source;
            }
        }
    }
    if (overflow) {
        PyErr_SetString(PyExc_RuntimeError, "replay_commits: event buffer too small");
        goto done;
    }
    result = PyLong_FromSsize_t(E.n);
done:
    for (int i = 0; i < 24; i++) rel(&b[i]);
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
 * The twin of kgtool/offsets/groups.py _track_moves_py (GroupState._track_moves, the zombie
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
 * The twin of kgtool/offsets/groups.py _attribute_keys_py (GroupState.snapshot): every
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
    {"replay_commits", py_replay_commits, METH_VARARGS, "Replay plain offset commits into the partition state."},
    {"track_moves", py_track_moves, METH_VARARGS, "The partitions whose owners changed (the zombie rule's moves)."},
    {"attribute_keys", py_attribute_keys, METH_VARARGS, "Attribute the keys to the owners of a generation."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, "_replay", "kgtool offsets replay hot loop", -1, methods};

PyMODINIT_FUNC PyInit__replay(void) {
    PyObject *m = PyModule_Create(&moddef);
    if (!m) return NULL;
    if (PyModule_AddStringConstant(m, "K_FIELDS", K_NAMES) < 0 || PyModule_AddStringConstant(m, "G_FIELDS", G_NAMES) < 0 ||
        PyModule_AddIntConstant(m, "EV_WIDTH", EV_WIDTH) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
