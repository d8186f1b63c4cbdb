/* The lag table's rows and Burrow's verdicts for every (group, topic, partition) of one data
 * partition, in one pass over arrays (included by _replay.c). The pure-Python twin is
 * kgtool.lag.timeline.lag_rows with kgtool.lag.burrow.CommitWindow, which this follows
 * step for step (tests/lag/test_lag_kernel.py holds them equal):
 *
 * lag_rows(seq_bounds, when, offset, instants, ends, offs, stamps, stamps_known,
 *          owner_bounds, owner_times, owner_ids, step_ms, until, has_until, end, has_end,
 *          intervals, min_distance_ms,
 *          out_seq, out_t, out_committed, out_end, out_lag, out_lag_ms, out_status, out_owner,
 *          out_last) -> (table rows, end rows)
 *
 * Inputs (native arrays): sequence s is commits seq_bounds[s] .. seq_bounds[s+1]-1, in the order
 * they took effect: when (ms), offset (LAG_DELETED: the committed offset was deleted).
 * instants / ends: every instant asked about (each commit's among them), ascending, and end(T)
 * at each; offs / stamps / stamps_known: every committed offset, ascending, and the timestamp of
 * the record there (the next one read from it), when known.
 * Owners of sequence s: owner_bounds[s] .. owner_bounds[s+1]-1, times ascending, ids (-1: none).
 * Rows (outputs, the "room"): the lag table's rows (an instant: a commit, or a step after the
 * first commit and before the last one or end, whichever is later, at most until) from the front, in sequence order then time; the
 * states at end only (the offsets table, the episodes' last point) from the back, the first
 * sequence's last. out_last[s]: the row of the room holding the state at end, or -1.
 * out_status: a Burrow status (burrow.Status), or LAG_POLLS + the status to take when one of
 * the recent polls saw the consumer caught up (checkIfRecentLagZero: the caller looks).
 *
 * lag_runs(...): the runs of one status over each sequence's points (its rows, then its state at
 * end), for the episodes and the peaks; see py_lag_runs. */

#define LAG_DELETED INT64_MIN
#define LAG_POLLS 16
enum { ST_OK = 1, ST_WARN = 2, ST_STOP = 4, ST_STALL = 5, ST_REWIND = 6 };
#define LAG_MAX_INTERVALS 64

/* A (group, topic, partition)'s window of its last commits (burrow.CommitWindow), as a ring,
 * with what calculatePartitionStatus asks of it kept as counts, each commit changing them in
 * constant time: the entries whose lag is zero, and the neighbouring pairs whose offset went
 * back, whose offset changed, whose lag went down. */
#define LAG_RING 64 /* LAG_MAX_INTERVALS, a power of two */
typedef struct {
    int64_t offset[LAG_RING], ts[LAG_RING], lag[LAG_RING];
    int head, n, intervals;
    int64_t min_distance;
    int zero_lag, went_back, changed, lag_down;
} window_t;

#define W_AT(w, i) (((w)->head + (i)) & (LAG_RING - 1))

static inline void window_reset(window_t *w) {
    w->head = w->n = 0;
    w->zero_lag = w->went_back = w->changed = w->lag_down = 0;
}

/* the pair (entry i-1, entry i) counted in (sign 1) or out (sign -1) */
static inline void window_pair(window_t *w, int i, int sign) {
    int a = W_AT(w, i - 1), b = W_AT(w, i);
    w->went_back += sign * (w->offset[b] < w->offset[a]);
    w->changed += sign * (w->offset[b] != w->offset[a]);
    w->lag_down += sign * (w->lag[b] < w->lag[a]);
}

/* inmemory.go addConsumerOffset / mergeFrequentCommitIntoPrevious (burrow.CommitWindow.add) */
static void window_add(window_t *w, int64_t offset, int64_t ts, int64_t broker) {
    int64_t lag = broker > offset ? broker - offset : 0;
    if (w->n && ts - w->ts[W_AT(w, w->n - 1)] < w->min_distance) {
        int last = W_AT(w, w->n - 1);
        if (w->n > 1) window_pair(w, w->n - 1, -1);
        w->zero_lag -= w->lag[last] == 0;
        w->offset[last] = offset;
        w->lag[last] = lag;
        w->zero_lag += lag == 0;
        if (w->n > 1) window_pair(w, w->n - 1, 1);
        return;
    }
    if (w->n == w->intervals) { /* the oldest goes */
        if (w->n > 1) window_pair(w, 1, -1);
        w->zero_lag -= w->lag[w->head] == 0;
        w->head = (w->head + 1) & (LAG_RING - 1);
        w->n--;
    }
    int at = W_AT(w, w->n);
    w->offset[at] = offset;
    w->ts[at] = ts;
    w->lag[at] = lag;
    w->n++;
    w->zero_lag += lag == 0;
    if (w->n > 1) window_pair(w, w->n - 1, 1);
}

static inline int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/* caching.go calculatePartitionStatus (burrow.CommitWindow.status): the status, or LAG_POLLS +
 * the status without STOP when STOP depends on the recent polls. */
static int window_status(const window_t *w, int64_t log_end, int64_t now_ms) {
    if (!w->n) return ST_OK;
    int last = W_AT(w, w->n - 1);
    int64_t current = log_end > w->offset[last] ? log_end - w->offset[last] : 0;
    if (current <= 0) return ST_OK;
    int64_t first_ts = w->ts[w->head], last_ts = w->ts[last];
    int stopped = floor_div(now_ms, 1000) * 1000 - last_ts > last_ts - first_ts;
    int rest = ST_OK;
    if (!w->zero_lag) /* every lag of the window non-zero */
        rest = w->went_back ? ST_REWIND : !w->changed ? ST_STALL : !w->lag_down ? ST_WARN : ST_OK;
    return stopped ? LAG_POLLS + rest : rest;
}

/* The buffers an argument parse filled (the rest zeroed), released. */
static void lag_release(Py_buffer *b, int n) {
    for (int i = 0; i < n; i++)
        if (b[i].obj) PyBuffer_Release(&b[i]);
}

/* The first place in a[0..m) holding x or more (a ascending): the search gallops from the last
 * place found (*at), as a sequence's instants and committed offsets mostly rise, before it
 * halves. */
static inline Py_ssize_t lag_find(const int64_t *a, Py_ssize_t m, int64_t x, Py_ssize_t *at) {
    Py_ssize_t lo = *at, hi, step = 1;
    if (lo < 0 || lo >= m || a[lo] > x) {
        lo = 0;
        hi = m;
    } else {
        hi = lo + 1;
        while (hi < m && a[hi] < x) {
            lo = hi;
            hi += step;
            step <<= 1;
        }
        if (hi > m) hi = m;
    }
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if (a[mid] < x) lo = mid + 1; else hi = mid;
    }
    *at = lo;
    return lo;
}

/* end(t), t among the instants asked about. */
static inline int64_t lag_end_at(const int64_t *instants, const int64_t *ends, Py_ssize_t m, int64_t t,
                                 Py_ssize_t *at) {
    Py_ssize_t i = lag_find(instants, m, t, at);
    return i < m ? ends[i] : ends[m - 1];
}

static PyObject *py_lag_rows(PyObject *self, PyObject *args) {
    Py_buffer b[20];
    long long step, until, end;
    int has_until, has_end, intervals;
    long long min_distance;
    memset(b, 0, sizeof b);
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*y*y*y*y*LLiLiiLw*w*w*w*w*w*w*w*w*", &b[0], &b[1], &b[2], &b[3], &b[4],
                          &b[5], &b[6], &b[7], &b[8], &b[9], &b[10], &step, &until, &has_until, &end, &has_end,
                          &intervals, &min_distance, &b[11], &b[12], &b[13], &b[14], &b[15], &b[16], &b[17], &b[18],
                          &b[19]))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t S = b[0].len / 8 - 1, N = b[1].len / 8, M = b[3].len / 8, U = b[5].len / 8, cap = b[11].len / 4,
               O = b[9].len / 8; /* the owner changes */
    if (S < 0 || b[2].len != b[1].len || b[4].len != b[3].len || b[6].len != b[5].len || b[7].len != U ||
        b[8].len != b[0].len || b[10].len * 2 != b[9].len || intervals < 1 || intervals > LAG_MAX_INTERVALS ||
        b[12].len != cap * 8 || b[13].len != cap * 8 || b[14].len != cap * 8 || b[15].len != cap * 8 ||
        b[16].len != cap * 8 || b[17].len != cap || b[18].len != cap * 4 || b[19].len != S * 8 || (N && !M)) {
        PyErr_SetString(PyExc_ValueError, "lag_rows: arrays of mismatched lengths");
        goto done;
    }
    const int64_t *bounds = b[0].buf, *when = b[1].buf, *off = b[2].buf, *inst = b[3].buf, *ends = b[4].buf,
                  *offs = b[5].buf, *stamps = b[6].buf;
    const uint8_t *known = b[7].buf;
    const int64_t *obounds = b[8].buf, *otimes = b[9].buf;
    const int32_t *oids = b[10].buf;
    int32_t *o_seq = b[11].buf, *o_owner = b[18].buf;
    int64_t *o_t = b[12].buf, *o_comm = b[13].buf, *o_end = b[14].buf, *o_lag = b[15].buf, *o_lms = b[16].buf,
            *o_last = b[19].buf;
    uint8_t *o_status = b[17].buf;
    Py_ssize_t r = 0, tail = cap; /* table rows [0, r), states at end [tail, cap) */
    int overflow = 0;
    window_t w;
    for (Py_ssize_t s = 0; s < S && !overflow; s++) {
        Py_ssize_t c0 = bounds[s], c1 = bounds[s + 1];
        o_last[s] = -1;
        if (c0 < 0 || c1 > N || c0 > c1) { overflow = 2; break; }
        window_reset(&w);
        w.intervals = intervals;
        w.min_distance = min_distance;
        Py_ssize_t k = c0, ok0 = obounds[s], ok1 = obounds[s + 1];
        /* the owners' bounds held to the owners given, as the commits' are (an ASan run found
         * otimes and oids read past their ends: issue 41) */
        if (ok0 < 0 || ok1 > O || ok0 > ok1) { overflow = 3; break; }
        Py_ssize_t cur = -1;   /* the commit in force */
        int64_t cur_stamp = 0;
        int cur_known = 0;
        Py_ssize_t near = -1, near_c = -1, near_o = -1; /* where the last row's instant, commit, offset were found */
        int64_t adv_t = INT64_MIN, adv_end = 0; /* the last commit's instant and end(T) there */
        Py_ssize_t own = ok0; /* the owner changes at or before the last row's instant: [ok0, own) */
        int64_t own_t = INT64_MIN;
        int64_t row_t_last = INT64_MIN;
        int have_rows = 0;
        /* the instants: each commit's time and first + j*step before the last commit or end
         * (whichever is later: a consumer that stopped committing has rows to the end), merged,
         * at most until */
        int64_t first = c1 > c0 ? when[c0] : 0, last = c1 > c0 ? when[c1 - 1] : 0;
        if (has_end && end > last && c1 > c0) last = end;
        Py_ssize_t ci = c0;
        int64_t next_step = (step > 0 && c1 > c0) ? first + step : INT64_MAX;
        int pass_end = 0;
        for (;;) {
            int64_t t;
            int at_end = 0;
            int64_t tc = ci < c1 ? when[ci] : INT64_MAX;
            int64_t tstep = next_step < last ? next_step : INT64_MAX;
            if (tc == INT64_MAX && tstep == INT64_MAX) {
                if (!has_end || pass_end) break;
                pass_end = 1;
                at_end = 1;
                t = end;
            } else {
                t = tc < tstep ? tc : tstep;
                if (tc == t) { /* every commit at this instant */
                    while (ci < c1 && when[ci] == t) ci++;
                }
                if (tstep == t) next_step += step;
                if (has_until && t > until) {
                    ci = c1;
                    next_step = INT64_MAX;
                    continue;
                }
            }
            while (k < c1 && when[k] <= t) { /* advance */
                if (off[k] == LAG_DELETED) {
                    window_reset(&w);
                } else {
                    if (when[k] != adv_t) {
                        adv_t = when[k];
                        adv_end = lag_end_at(inst, ends, M, adv_t, &near_c);
                    }
                    window_add(&w, off[k], when[k], adv_end);
                    Py_ssize_t j = lag_find(offs, U, off[k], &near_o);
                    cur_known = j < U && offs[j] == off[k] && known[j];
                    cur_stamp = cur_known ? stamps[j] : 0;
                }
                cur = k++;
            }
            if (cur < 0 || off[cur] == LAG_DELETED) continue;
            if (at_end && have_rows && row_t_last == end) { o_last[s] = r - 1; continue; }
            if (r >= tail) { overflow = 1; break; }
            /* a commit's row: end(T) as its commit found it */
            int64_t end_t = t == adv_t ? adv_end : lag_end_at(inst, ends, M, t, &near);
            int64_t committed = off[cur];
            int64_t lag = end_t - committed, lag_ms = 0;
            if (lag > 0 && cur_known) lag_ms = t - cur_stamp > 0 ? t - cur_stamp : 0;
            /* the owner: the last change at or before t (the rows' instants rise: a walk) */
            if (t < own_t) own = ok0;
            own_t = t;
            while (own < ok1 && otimes[own] <= t) own++;
            Py_ssize_t lo = own;
            Py_ssize_t i = at_end ? --tail : r++;
            o_seq[i] = (int32_t)s;
            o_t[i] = t;
            o_comm[i] = committed;
            o_end[i] = end_t;
            o_lag[i] = lag;
            o_lms[i] = lag_ms;
            o_status[i] = (uint8_t)window_status(&w, end_t, t);
            o_owner[i] = lo > ok0 ? oids[lo - 1] : -1;
            if (at_end) o_last[s] = i; else { have_rows = 1; row_t_last = t; }
        }
    }
    if (overflow)
        PyErr_SetString(PyExc_ValueError, overflow == 1   ? "lag_rows: more rows than the room given"
                                          : overflow == 2 ? "lag_rows: sequence bounds out of range"
                                                          : "lag_rows: owner bounds out of range");
    else
        result = Py_BuildValue("nn", r, cap - tail);
done:
    lag_release(b, 20);
    return result;
}

/* lag_runs(S, seq, t, lag, lag_ms, status, owner, n, m,
 *          ep_seq, ep_status, ep_start, ep_end, ep_last, ep_peak, ep_peak_ms, ep_owner_bounds, ep_owners,
 *          seq_peak, seq_peak_ms, seq_worst) -> (episodes, owners listed)
 *
 * The points of sequence s: its rows of the room's front [0, n) (in sequence order), then its
 * state at end when the back [cap - m, cap) holds one (the first sequence's at cap - 1). A run
 * is a stretch of a sequence's points with one status; each run whose status is not OK is an
 * episode: its status, first and last instants, the instant of the point after it in the
 * sequence (LAG_DELETED: none, still open), its peak lag and lag_ms, and its owners (each owner
 * id >= 0 of its points, consecutive repeats dropped: ep_owner_bounds[e] .. [e+1] of ep_owners).
 * seq_peak / seq_peak_ms / seq_worst: the largest lag, lag_ms and status of each sequence's
 * points (0 without points). kgtool.lag.timeline._runs_py is the pure twin. */
static PyObject *py_lag_runs(PyObject *self, PyObject *args) {
    Py_buffer b[18];
    Py_ssize_t S, n, m;
    memset(b, 0, sizeof b);
    if (!PyArg_ParseTuple(args, "ny*y*y*y*y*y*nnw*w*w*w*w*w*w*w*w*w*w*w*", &S, &b[0], &b[1], &b[2], &b[3], &b[4],
                          &b[5], &n, &m, &b[6], &b[7], &b[8], &b[9], &b[10], &b[11], &b[12], &b[13], &b[14],
                          &b[15], &b[16], &b[17]))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t cap = b[0].len / 4, E = b[7].len;
    if (S < 0 || n < 0 || m < 0 || n + m > cap || b[1].len != cap * 8 || b[2].len != cap * 8 ||
        b[3].len != cap * 8 || b[4].len != cap || b[5].len != cap * 4 || E < n + m || b[6].len != E * 4 ||
        b[8].len != E * 8 || b[9].len != E * 8 || b[10].len != E * 8 || b[11].len != E * 8 || b[12].len != E * 8 ||
        b[13].len != (E + 1) * 8 || b[14].len < (n + m) * 4 || b[15].len != S * 8 || b[16].len != S * 8 ||
        b[17].len != S) {
        PyErr_SetString(PyExc_ValueError, "lag_runs: arrays of mismatched lengths");
        goto done;
    }
    const int32_t *seq = b[0].buf, *owner = b[5].buf;
    const int64_t *t = b[1].buf, *lag = b[2].buf, *lms = b[3].buf;
    const uint8_t *status = b[4].buf;
    int32_t *e_seq = b[6].buf, *e_owners = b[14].buf;
    uint8_t *e_status = b[7].buf, *s_worst = b[17].buf;
    int64_t *e_start = b[8].buf, *e_end = b[9].buf, *e_last = b[10].buf, *e_peak = b[11].buf, *e_pms = b[12].buf,
            *e_ob = b[13].buf, *s_peak = b[15].buf, *s_pms = b[16].buf;
    for (Py_ssize_t s = 0; s < S; s++) { s_peak[s] = 0; s_pms[s] = 0; s_worst[s] = 0; }
    Py_ssize_t E_n = 0, P = 0, p = 0, q = 0; /* episodes, owners listed, next front row, next end row */
    int open = 0;             /* an episode is being built (E_n - 1) */
    int64_t run_seq = -1;
    int run_status = -1;
    int32_t run_owner = -1;   /* the last owner listed for the open episode */
    e_ob[0] = 0;
    for (;;) {
        Py_ssize_t i;
        if (p < n && (q >= m || seq[p] <= seq[cap - 1 - q])) i = p++;
        else if (q < m) i = cap - 1 - q++;
        else break;
        int64_t s = seq[i];
        if (s < 0 || s >= S) {
            PyErr_SetString(PyExc_ValueError, "lag_runs: a row's sequence out of range");
            goto done;
        }
        if (lag[i] > s_peak[s]) s_peak[s] = lag[i];
        if (lms[i] > s_pms[s]) s_pms[s] = lms[i];
        if (status[i] > s_worst[s]) s_worst[s] = status[i];
        if (s != run_seq || status[i] != run_status) {
            if (open) {
                e_end[E_n - 1] = s == run_seq ? t[i] : LAG_DELETED;
                e_ob[E_n] = P;
                open = 0;
            }
            run_seq = s;
            run_status = status[i];
            if (run_status != ST_OK) {
                if (E_n >= E) break; /* cannot happen: a run holds a point */
                e_seq[E_n] = (int32_t)s;
                e_status[E_n] = (uint8_t)run_status;
                e_start[E_n] = t[i];
                e_peak[E_n] = lag[i];
                e_pms[E_n] = lms[i];
                E_n++;
                open = 1;
                run_owner = -1;
            }
        }
        if (open) {
            e_last[E_n - 1] = t[i];
            if (lag[i] > e_peak[E_n - 1]) e_peak[E_n - 1] = lag[i];
            if (lms[i] > e_pms[E_n - 1]) e_pms[E_n - 1] = lms[i];
            if (owner[i] >= 0 && owner[i] != run_owner) {
                e_owners[P++] = owner[i];
                run_owner = owner[i];
            }
        }
    }
    if (open) {
        e_end[E_n - 1] = LAG_DELETED;
        e_ob[E_n] = P;
    }
    result = Py_BuildValue("nn", E_n, P);
done:
    lag_release(b, 18);
    return result;
}

/* lag_pick(key_index, key, timestamp, record_offset, offset, deleted, effective, effective_at,
 *          marker_offsets, marker_times, counts, out_key, out_rows, out_bounds) -> rows picked
 *
 * One chunk of the replay's commits (kgtool.lag.collector.LagInputs.commits): the rows that
 * took effect (effective, uint8) on a data partition given (key_index[key] >= 0, the partition's
 * lag index; int32 per store key): their store key (int32), and as an int64 pair when they took
 * effect (their record's timestamp, or the timestamp of the marker at effective_at when that is
 * neither LAG_DELETED (none) nor their own record offset: marker_offsets ascending,
 * marker_times beside; a marker not found leaves the record's) and the offset committed
 * (LAG_DELETED for a tombstone: deleted, uint8). The rows go out by data partition (out_bounds:
 * partition p's are out_bounds[p] .. out_bounds[p+1]-1, int64, one more than the partitions),
 * in log order within each. counts[key] (int64) counts the rows picked. */
static inline int64_t lag_pick_when(const int64_t *ts, const int64_t *rec, const int64_t *eat, const int64_t *mk,
                                    const int64_t *mt, Py_ssize_t nm, Py_ssize_t i) {
    int64_t when = ts[i];
    if (eat[i] != LAG_DELETED && eat[i] != rec[i] && nm) {
        Py_ssize_t lo = 0, hi = nm;
        while (lo < hi) {
            Py_ssize_t mid = (lo + hi) / 2;
            if (mk[mid] < eat[i]) lo = mid + 1; else hi = mid;
        }
        if (lo < nm && mk[lo] == eat[i]) when = mt[lo];
    }
    return when;
}

static PyObject *py_lag_pick(PyObject *self, PyObject *args) {
    Py_buffer b[14];
    memset(b, 0, sizeof b);
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*y*y*y*w*w*w*w*", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &b[6],
                          &b[7], &b[8], &b[9], &b[10], &b[11], &b[12], &b[13]))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t nk = b[0].len / 4, n = b[1].len / 8, nm = b[8].len / 8, np_ = b[13].len / 8 - 1;
    if (b[2].len != n * 8 || b[3].len != n * 8 || b[4].len != n * 8 || b[5].len != n || b[6].len != n ||
        b[7].len != n * 8 || b[9].len != b[8].len || b[10].len != nk * 8 || b[11].len < n * 4 ||
        b[12].len < n * 16 || np_ < 0) {
        PyErr_SetString(PyExc_ValueError, "lag_pick: arrays of mismatched lengths");
        goto done;
    }
    const int32_t *kidx = b[0].buf;
    const int64_t *key = b[1].buf, *ts = b[2].buf, *rec = b[3].buf, *off = b[4].buf, *eat = b[7].buf,
                  *mk = b[8].buf, *mt = b[9].buf;
    const uint8_t *del = b[5].buf, *eff = b[6].buf;
    int64_t *counts = b[10].buf, *orow = b[12].buf, *bounds = b[13].buf;
    int32_t *okey = b[11].buf;
    for (Py_ssize_t p = 0; p <= np_; p++) bounds[p] = 0;
    for (Py_ssize_t i = 0; i < n; i++) { /* count by partition */
        int64_t k = key[i];
        if (k < 0 || k >= nk || kidx[k] >= np_) {
            PyErr_SetString(PyExc_ValueError, "lag_pick: a key or partition out of range");
            goto done;
        }
        if (eff[i] && kidx[k] >= 0) bounds[kidx[k] + 1]++;
    }
    for (Py_ssize_t p = 0; p < np_; p++) bounds[p + 1] += bounds[p];
    for (Py_ssize_t i = 0; i < n; i++) { /* place */
        int64_t k = key[i];
        if (!eff[i] || kidx[k] < 0) continue;
        int64_t r = bounds[kidx[k]]++;
        okey[r] = (int32_t)k;
        orow[2 * r] = lag_pick_when(ts, rec, eat, mk, mt, nm, i);
        orow[2 * r + 1] = del[i] ? LAG_DELETED : off[i];
        counts[k]++;
    }
    for (Py_ssize_t p = np_; p > 0; p--) bounds[p] = bounds[p - 1]; /* back to each partition's first */
    bounds[0] = 0;
    result = PyLong_FromSsize_t(bounds[np_]);
done:
    lag_release(b, 14);
    return result;
}

/* lag_scatter(key, place, rows, out): row i (rows: int64 pairs, when and offset) goes to row
 * place[key[i]] of out (pairs), which then moves on by one (a counting sort's second pass: the
 * caller sets each key's first row; rows of one key keep their order). key int32, place int64. */
static PyObject *py_lag_scatter(PyObject *self, PyObject *args) {
    Py_buffer b[4];
    memset(b, 0, sizeof b);
    if (!PyArg_ParseTuple(args, "y*w*y*w*", &b[0], &b[1], &b[2], &b[3])) return NULL;
    PyObject *result = NULL;
    Py_ssize_t n = b[0].len / 4, nkeys = b[1].len / 8, m = b[3].len / 16;
    if (b[2].len != n * 16 || b[3].len % 16) {
        PyErr_SetString(PyExc_ValueError, "lag_scatter: arrays of mismatched lengths");
        goto done;
    }
    const int32_t *key = b[0].buf;
    int64_t *place = b[1].buf, *out = b[3].buf;
    const int64_t *rows = b[2].buf;
    for (Py_ssize_t i = 0; i < n; i++) { /* checked first: nothing written on bad input */
        int32_t k = key[i];
        if (k < 0 || k >= nkeys || place[k] < 0 || place[k] >= m) {
            PyErr_SetString(PyExc_ValueError, "lag_scatter: a key out of range");
            goto done;
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t at = place[key[i]]++;
        if (at >= m) {
            PyErr_SetString(PyExc_ValueError, "lag_scatter: more rows of a key than its room");
            goto done;
        }
        out[2 * at] = rows[2 * i];
        out[2 * at + 1] = rows[2 * i + 1];
    }
    result = Py_None;
    Py_INCREF(result);
done:
    lag_release(b, 4);
    return result;
}

/* lag_pick_steps(key_index, key_order, key, timestamp, record_offset, offset, deleted, effective,
 *                effective_at, marker_offsets, marker_times, counts, scratch,
 *                out_dt, out_doff, out_keys, out_count, out_start, out_first, out_bounds)
 *     -> (rows picked, keys present, largest dt, smallest and largest doff), or None when a
 *        step does not fit
 *
 * lag_pick's rows (the same rows, taking effect at the same instants), kept in 8 bytes a row
 * instead of 20: a chunk's rows by store key (the keys in key_order: by data partition, then
 * key; int32), each key's in log order, as its first row (out_first: when and offset, int64
 * pairs) and the steps from each row to the next (out_dt uint32 ms, out_doff int32; 0 at a
 * key's first row). out_keys / out_count / out_start (int32, int64, int64): the keys present, how
 * many rows each, where its rows start; out_bounds (int64, one more than the partitions): data
 * partition p's keys present are out_bounds[p] .. out_bounds[p+1]-1. scratch: int64, 4 a key.
 * A step that does not fit (an instant earlier than the one before, as a transaction's commit at
 * its later marker and the next commit are; a deleted offset; an offset step past int32): None,
 * and nothing counted (the caller keeps that chunk as lag_pick gives it). counts[key] (int64)
 * counts the rows picked, as lag_pick's. The rows kept are what the offsets-log task holds until
 * its end: fresh memory, which this machine's kernel hands out at up to 14 us a page (the caller
 * keeps the steps in 16 bits each when their range allows). */
static PyObject *py_lag_pick_steps(PyObject *self, PyObject *args) {
    Py_buffer b[20];
    memset(b, 0, sizeof b);
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*y*y*y*y*w*w*w*w*w*w*w*w*w*", &b[0], &b[1], &b[2], &b[3], &b[4],
                          &b[5], &b[6], &b[7], &b[8], &b[9], &b[10], &b[11], &b[12], &b[13], &b[14], &b[15],
                          &b[16], &b[17], &b[18], &b[19]))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t nk = b[0].len / 4, n = b[2].len / 8, nm = b[9].len / 8, np_ = b[19].len / 8 - 1;
    if (b[1].len != b[0].len || b[3].len != n * 8 || b[4].len != n * 8 || b[5].len != n * 8 || b[6].len != n ||
        b[7].len != n || b[8].len != n * 8 || b[10].len != b[9].len || b[11].len != nk * 8 ||
        b[12].len < nk * 32 || b[13].len < n * 4 || b[14].len < n * 4 || b[15].len < nk * 4 ||
        b[16].len < nk * 8 || b[17].len < nk * 8 || b[18].len < nk * 16 || np_ < 0) {
        PyErr_SetString(PyExc_ValueError, "lag_pick_steps: arrays of mismatched lengths");
        goto done;
    }
    const int32_t *kidx = b[0].buf, *korder = b[1].buf;
    const int64_t *key = b[2].buf, *ts = b[3].buf, *rec = b[4].buf, *off = b[5].buf, *eat = b[8].buf,
                  *mk = b[9].buf, *mt = b[10].buf;
    const uint8_t *del = b[6].buf, *eff = b[7].buf;
    int64_t *counts = b[11].buf, *scratch = b[12].buf, *ocount = b[16].buf, *ostart = b[17].buf,
            *ofirst = b[18].buf, *bounds = b[19].buf;
    uint32_t *odt = b[13].buf;
    int32_t *odoff = b[14].buf, *okeys = b[15].buf;
    /* scratch: a key's rows in the chunk (then where its next row goes), its place among the keys
     * present, its last instant and offset */
    int64_t *cnt = scratch, *slot = scratch + nk, *lw = scratch + 2 * nk, *lo = scratch + 3 * nk;
    for (Py_ssize_t k = 0; k < nk; k++) cnt[k] = 0;
    for (Py_ssize_t i = 0; i < n; i++) { /* count by key */
        int64_t k = key[i];
        if (k < 0 || k >= nk || kidx[k] >= np_) {
            PyErr_SetString(PyExc_ValueError, "lag_pick_steps: a key or partition out of range");
            goto done;
        }
        if (eff[i] && kidx[k] >= 0) cnt[k]++;
    }
    for (Py_ssize_t p = 0; p <= np_; p++) bounds[p] = 0;
    Py_ssize_t present = 0, rows = 0;
    int64_t max_dt = 0, min_doff = 0, max_doff = 0;
    int32_t last_dp = -1;
    for (Py_ssize_t j = 0; j < nk; j++) { /* the keys present, in key_order: by partition */
        int32_t k = korder[j];
        if (k < 0 || k >= nk) {
            PyErr_SetString(PyExc_ValueError, "lag_pick_steps: key_order out of range");
            goto done;
        }
        if (!cnt[k]) continue;
        if (kidx[k] < last_dp) {
            PyErr_SetString(PyExc_ValueError, "lag_pick_steps: key_order not by partition");
            goto done;
        }
        last_dp = kidx[k];
        okeys[present] = k;
        ocount[present] = cnt[k];
        ostart[present] = rows;
        bounds[kidx[k] + 1]++;
        slot[k] = present++;
        rows += cnt[k];
        cnt[k] = ostart[slot[k]];
    }
    for (Py_ssize_t p = 0; p < np_; p++) bounds[p + 1] += bounds[p];
    for (Py_ssize_t i = 0; i < n; i++) { /* place, as steps */
        int64_t k = key[i];
        if (!eff[i] || kidx[k] < 0) continue;
        int64_t at = cnt[k]++;
        int64_t when = lag_pick_when(ts, rec, eat, mk, mt, nm, i);
        int64_t o = del[i] ? LAG_DELETED : off[i];
        if (o == LAG_DELETED) goto wide;
        if (at == ostart[slot[k]]) {
            ofirst[2 * slot[k]] = when;
            ofirst[2 * slot[k] + 1] = o;
            odt[at] = 0;
            odoff[at] = 0;
        } else {
            int64_t dt = when - lw[k], doff = o - lo[k];
            if (dt < 0 || dt > (int64_t)UINT32_MAX || doff < INT32_MIN || doff > INT32_MAX) goto wide;
            odt[at] = (uint32_t)dt;
            odoff[at] = (int32_t)doff;
            if (dt > max_dt) max_dt = dt;
            if (doff < min_doff) min_doff = doff;
            if (doff > max_doff) max_doff = doff;
        }
        lw[k] = when;
        lo[k] = o;
    }
    for (Py_ssize_t s = 0; s < present; s++) counts[okeys[s]] += ocount[s];
    result = Py_BuildValue("nnLLL", rows, present, (long long)max_dt, (long long)min_doff, (long long)max_doff);
    goto done;
wide:
    result = Py_None;
    Py_INCREF(result);
done:
    lag_release(b, 20);
    return result;
}

/* lag_unsteps(keys, count, start, first, dt, doff, width, lo, hi, place, out): the rows of the
 * keys present lo .. hi-1 of a chunk lag_pick_steps kept (its out_* arrays; the steps uint32 and
 * int32, or uint16 and int16 with width 2) to rows place[key] .. of out (int64 pairs, when and
 * offset), place[key] moving on past them: lag_scatter's pass for such a chunk. */
static PyObject *py_lag_unsteps(PyObject *self, PyObject *args) {
    Py_buffer b[8];
    Py_ssize_t lo, hi;
    int width;
    memset(b, 0, sizeof b);
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*innw*w*", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &width, &lo, &hi,
                          &b[6], &b[7]))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t present = b[0].len / 4, n = (width == 2 || width == 4) ? b[4].len / width : 0, nkeys = b[6].len / 8,
               m = b[7].len / 16;
    if ((width != 2 && width != 4) || b[1].len != present * 8 || b[2].len != present * 8 ||
        b[3].len != present * 16 || b[4].len != n * width || b[5].len != n * width || b[7].len % 16 || lo < 0 ||
        hi > present || lo > hi) {
        PyErr_SetString(PyExc_ValueError, "lag_unsteps: arrays of mismatched lengths");
        goto done;
    }
    const int32_t *keys = b[0].buf;
    const int64_t *count = b[1].buf, *start = b[2].buf, *first = b[3].buf;
    int64_t *place = b[6].buf, *out = b[7].buf;
    /* checked first: nothing written on bad input. A key present twice has its second rows after
     * its first (lag_scatter's order), so each key's room is checked as place[k] moves on: the
     * check advances place[] and takes it back (an ASan run found a repeated key written past
     * out's end, each occurrence checked from the same place: issue 41). */
    Py_ssize_t bad = -1;
    for (Py_ssize_t s = lo; s < hi && bad < 0; s++) {
        int32_t k = keys[s];
        if (k < 0 || k >= nkeys || count[s] < 1 || start[s] < 0 || count[s] > n - start[s] || place[k] < 0 ||
            count[s] > m - place[k])
            bad = s;
        else
            place[k] += count[s];
    }
    for (Py_ssize_t s = bad < 0 ? hi : bad; s-- > lo;) place[keys[s]] -= count[s];
    if (bad >= 0) {
        PyErr_SetString(PyExc_ValueError, "lag_unsteps: a key out of range or more rows than its room");
        goto done;
    }
    for (Py_ssize_t s = lo; s < hi; s++) {
        int32_t k = keys[s];
        int64_t at = place[k], w = first[2 * s], o = first[2 * s + 1];
        out[2 * at] = w;
        out[2 * at + 1] = o;
        if (width == 4) {
            const uint32_t *d = (const uint32_t *)b[4].buf + start[s];
            const int32_t *e = (const int32_t *)b[5].buf + start[s];
            for (int64_t j = 1; j < count[s]; j++) {
                w += d[j];
                o += e[j];
                out[2 * (at + j)] = w;
                out[2 * (at + j) + 1] = o;
            }
        } else {
            const uint16_t *d = (const uint16_t *)b[4].buf + start[s];
            const int16_t *e = (const int16_t *)b[5].buf + start[s];
            for (int64_t j = 1; j < count[s]; j++) {
                w += d[j];
                o += e[j];
                out[2 * (at + j)] = w;
                out[2 * (at + j) + 1] = o;
            }
        }
        place[k] = at + count[s];
    }
    result = Py_None;
    Py_INCREF(result);
done:
    lag_release(b, 8);
    return result;
}

/* lag_members(rows, columns, new_group, owner_ids, member_ids, tp_cache, given)
 *   -> (group, rec, ts, owner, member, dp_size, dp_flat): kgtool.lag.collector's
 * LagInputs.member_tuples over members-table rows (tuples; ``columns``: the places of group,
 * record_offset, timestamp, member_id, client_id, client_host, assigned_partitions), as native
 * int64 arrays (bytes). A group's code is new_group(name), asked once a call for each group
 * (None: -1); an owner's id is owner_ids[(member_id, host, client_id)], a member's
 * member_ids[member_id], each added (the next id) when new; an assigned "topic-partition" is
 * tp_cache[text] or given(text), -1 (not given) left out. One assignment list (the replay shares
 * one between the rows of equal assignments) is converted once a call. */

typedef struct {
    int64_t *v;
    Py_ssize_t n, cap;
} lag_vec;

static int lag_vec_push(lag_vec *a, int64_t x) {
    if (a->n == a->cap) {
        Py_ssize_t cap = a->cap ? 2 * a->cap : 1024;
        int64_t *v = PyMem_Realloc(a->v, cap * sizeof(int64_t));
        if (v == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = x;
    return 0;
}

/* The vectors as a tuple of bytes (native int64 arrays), or NULL with an exception. */
static PyObject *lag_vecs_bytes(const lag_vec *v, int n) {
    PyObject *result = PyTuple_New(n);
    if (result == NULL)
        return NULL;
    for (int c = 0; c < n; c++) {
        const char *at = v[c].v ? (const char *)v[c].v : "";
        PyObject *b = PyBytes_FromStringAndSize(at, v[c].n * (Py_ssize_t)sizeof(int64_t));
        if (b == NULL) {
            Py_DECREF(result);
            return NULL;
        }
        PyTuple_SET_ITEM(result, c, b);
    }
    return result;
}

/* d[key], or (when absent) d[key] = len(d): the id; -1 with an exception. */
static int64_t lag_id_of(PyObject *d, PyObject *key) {
    PyObject *got = PyDict_GetItemWithError(d, key);
    if (got != NULL)
        return PyLong_AsLongLong(got);
    if (PyErr_Occurred())
        return -1;
    PyObject *id = PyLong_FromSsize_t(PyDict_GET_SIZE(d));
    if (id == NULL || PyDict_SetItem(d, key, id) < 0) {
        Py_XDECREF(id);
        return -1;
    }
    int64_t r = PyLong_AsLongLong(id);
    Py_DECREF(id);
    return r;
}

/* code = fn(key) through a cache dict (the call's own, or the caller's): -2 with an exception */
static int64_t lag_cached_call(PyObject *cache, PyObject *fn, PyObject *key) {
    PyObject *got = PyDict_GetItemWithError(cache, key);
    if (got == NULL) {
        if (PyErr_Occurred())
            return -2;
        got = PyObject_CallOneArg(fn, key);
        if (got == NULL)
            return -2;
        int64_t r = PyLong_AsLongLong(got);
        if ((r == -1 && PyErr_Occurred()) || PyDict_SetItem(cache, key, got) < 0) {
            Py_DECREF(got);
            return -2;
        }
        Py_DECREF(got);
        return r;
    }
    int64_t r = PyLong_AsLongLong(got);
    return (r == -1 && PyErr_Occurred()) ? -2 : r;
}

static PyObject *py_lag_members(PyObject *self, PyObject *args) {
    PyObject *rows, *cols, *new_group, *owner_ids, *member_ids, *tp_cache, *given;
    if (!PyArg_ParseTuple(args, "O!O!OO!O!O!O", &PyList_Type, &rows, &PyTuple_Type, &cols, &new_group,
                          &PyDict_Type, &owner_ids, &PyDict_Type, &member_ids, &PyDict_Type, &tp_cache, &given))
        return NULL;
    Py_ssize_t at[7];
    if (PyTuple_GET_SIZE(cols) != 7) {
        PyErr_SetString(PyExc_ValueError, "lag_members: 7 column places");
        return NULL;
    }
    Py_ssize_t width = 0;
    for (int c = 0; c < 7; c++) {
        at[c] = PyLong_AsSsize_t(PyTuple_GET_ITEM(cols, c));
        if (at[c] < 0) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "lag_members: a negative column place");
            return NULL;
        }
        width = at[c] >= width ? at[c] + 1 : width;
    }
    lag_vec out[7];
    memset(out, 0, sizeof out);
    PyObject *result = NULL, *seen = PyDict_New(), *lists = PyDict_New();
    if (seen == NULL || lists == NULL)
        goto done;
    Py_ssize_t n = PyList_GET_SIZE(rows);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *row = PyList_GET_ITEM(rows, i);
        if (!PyTuple_Check(row) || PyTuple_GET_SIZE(row) < width) {
            PyErr_SetString(PyExc_ValueError, "lag_members: a row that is not a members-table tuple");
            goto done;
        }
        PyObject *g = PyTuple_GET_ITEM(row, at[0]), *mid = PyTuple_GET_ITEM(row, at[3]),
                 *cid = PyTuple_GET_ITEM(row, at[4]), *host = PyTuple_GET_ITEM(row, at[5]),
                 *names = PyTuple_GET_ITEM(row, at[6]);
        int64_t code = -1;
        if (g != Py_None) {
            code = lag_cached_call(seen, new_group, g); /* once a call for each group: its owners made */
            if (code == -2)
                goto done;
        }
        int64_t rec = PyLong_AsLongLong(PyTuple_GET_ITEM(row, at[1]));
        int64_t ts = PyLong_AsLongLong(PyTuple_GET_ITEM(row, at[2]));
        if (PyErr_Occurred())
            goto done;
        PyObject *key = PyTuple_Pack(3, mid, host, cid);
        if (key == NULL)
            goto done;
        int64_t owner = lag_id_of(owner_ids, key);
        Py_DECREF(key);
        if (owner < 0)
            goto done;
        int64_t member = lag_id_of(member_ids, mid);
        if (member < 0)
            goto done;
        if (lag_vec_push(&out[0], code) || lag_vec_push(&out[1], rec) || lag_vec_push(&out[2], ts) ||
            lag_vec_push(&out[3], owner) || lag_vec_push(&out[4], member))
            goto done;
        /* the row's partitions: converted once a list object (by identity: the replay shares them) */
        Py_ssize_t start = out[6].n, size = 0;
        PyObject *ident = PyLong_FromVoidPtr(names);
        if (ident == NULL)
            goto done;
        PyObject *done_before = PyDict_GetItemWithError(lists, ident);
        if (done_before != NULL) {
            Py_ssize_t from = PyLong_AsSsize_t(PyTuple_GET_ITEM(done_before, 0));
            size = PyLong_AsSsize_t(PyTuple_GET_ITEM(done_before, 1));
            for (Py_ssize_t j = 0; j < size; j++)
                if (lag_vec_push(&out[6], out[6].v[from + j])) {
                    Py_DECREF(ident);
                    goto done;
                }
        } else if (PyErr_Occurred()) {
            Py_DECREF(ident);
            goto done;
        } else {
            if (names != Py_None) {
                PyObject *seq = PySequence_Fast(names, "lag_members: assigned partitions that are not a list");
                if (seq == NULL) {
                    Py_DECREF(ident);
                    goto done;
                }
                Py_ssize_t k = PySequence_Fast_GET_SIZE(seq);
                for (Py_ssize_t j = 0; j < k; j++) {
                    int64_t dp = lag_cached_call(tp_cache, given, PySequence_Fast_GET_ITEM(seq, j));
                    if (dp == -2 || (dp >= 0 && lag_vec_push(&out[6], dp))) {
                        Py_DECREF(seq);
                        Py_DECREF(ident);
                        goto done;
                    }
                }
                Py_DECREF(seq);
                size = out[6].n - start;
            }
            PyObject *place = Py_BuildValue("(nn)", start, size);
            if (place == NULL || PyDict_SetItem(lists, ident, place) < 0) {
                Py_XDECREF(place);
                Py_DECREF(ident);
                goto done;
            }
            Py_DECREF(place);
        }
        Py_DECREF(ident);
        if (lag_vec_push(&out[5], size))
            goto done;
    }
    result = lag_vecs_bytes(out, 7);
done:
    for (int c = 0; c < 7; c++)
        PyMem_Free(out[c].v);
    Py_XDECREF(seen);
    Py_XDECREF(lists);
    return result;
}

/* lag_classic(s_g, s_rec, s_ts, by_rec, m_rec, m_owner, m_size, m_start, flat, rows, n_dp)
 *   -> (dp, group, t, owner): kgtool.lag.collector._classic_entries without its temporaries
 * (int64 arrays, as bytes). Records s_* (each a classic group's whole assignment, GroupMetadata)
 * sorted by group then record offset, by_rec their order by record offset; members rows m_*
 * (record offset, owner id, how many partitions, where in ``flat`` they start) and the rows to
 * take (``rows``, their indices). A (group, partition) pair's line starts at the first record
 * that assigns it and runs to its group's last record; at each record its owner is the last
 * member row there that holds it, or -1; the last record of an instant stands for it; only the
 * changes are returned, pair by pair (first met first), each in record order. */

typedef struct {
    int64_t *key;
    int32_t *val;
    Py_ssize_t cap, n;
} lag_pairs;

static int32_t lag_pair_of(lag_pairs *h, int64_t key, int add) {
    if (add && 2 * (h->n + 1) > h->cap) {
        Py_ssize_t cap = h->cap ? 2 * h->cap : 4096;
        int64_t *k = PyMem_Malloc(cap * sizeof(int64_t));
        int32_t *v = PyMem_Malloc(cap * sizeof(int32_t));
        if (k == NULL || v == NULL) {
            PyMem_Free(k);
            PyMem_Free(v);
            PyErr_NoMemory();
            return -2;
        }
        for (Py_ssize_t i = 0; i < cap; i++)
            v[i] = -1;
        for (Py_ssize_t i = 0; i < h->cap; i++) {
            if (h->val[i] < 0)
                continue;
            uint64_t j = ((uint64_t)h->key[i] * 0x9E3779B97F4A7C15ull) & (uint64_t)(cap - 1);
            while (v[j] >= 0)
                j = (j + 1) & (uint64_t)(cap - 1);
            k[j] = h->key[i];
            v[j] = h->val[i];
        }
        PyMem_Free(h->key);
        PyMem_Free(h->val);
        h->key = k;
        h->val = v;
        h->cap = cap;
    }
    if (!h->cap)
        return -1;
    uint64_t j = ((uint64_t)key * 0x9E3779B97F4A7C15ull) & (uint64_t)(h->cap - 1);
    while (h->val[j] >= 0) {
        if (h->key[j] == key)
            return h->val[j];
        j = (j + 1) & (uint64_t)(h->cap - 1);
    }
    if (!add)
        return -1;
    h->key[j] = key;
    h->val[j] = (int32_t)h->n;
    return (int32_t)h->n++;
}

/* the place (in group order) of the record at offset ``rec``, -1 if none: a binary search of
 * the records by offset, the last answer first (a row's partitions, a record's rows, in a row) */
static Py_ssize_t lag_record(const int64_t *s_rec, const int64_t *by_rec, Py_ssize_t ns, int64_t rec,
                             Py_ssize_t *hint) {
    if (*hint >= 0 && s_rec[by_rec[*hint]] == rec)
        return by_rec[*hint];
    Py_ssize_t lo = 0, hi = ns;
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (s_rec[by_rec[mid]] < rec)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < ns && s_rec[by_rec[lo]] == rec) {
        *hint = lo;
        return by_rec[lo];
    }
    return -1;
}

static PyObject *py_lag_classic(PyObject *self, PyObject *args) {
    Py_buffer b[10];
    int64_t n_dp;
    memset(b, 0, sizeof b);
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*y*y*y*L", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &b[6], &b[7],
                          &b[8], &b[9], &n_dp))
        return NULL;
    PyObject *result = NULL;
    lag_pairs h = {NULL, NULL, 0, 0};
    lag_vec first = {NULL, 0, 0}, out[4];
    int64_t *cell_start = NULL, *end = NULL, *group_end = NULL;
    int32_t *owner = NULL;
    memset(out, 0, sizeof out);
    Py_ssize_t ns = b[0].len / 8, nm = b[4].len / 8, nflat = b[8].len / 8, nrows = b[9].len / 8;
    if (b[1].len != ns * 8 || b[2].len != ns * 8 || b[3].len != ns * 8 || b[5].len != nm * 8 || b[6].len != nm * 8 ||
        b[7].len != nm * 8 || b[0].len % 8 || b[4].len % 8 || b[8].len % 8 || b[9].len % 8 || n_dp < 1) {
        PyErr_SetString(PyExc_ValueError, "lag_classic: arrays of mismatched lengths");
        goto done;
    }
    const int64_t *s_g = b[0].buf, *s_rec = b[1].buf, *s_ts = b[2].buf, *by_rec = b[3].buf, *m_rec = b[4].buf,
                  *m_owner = b[5].buf, *m_size = b[6].buf, *m_start = b[7].buf, *flat = b[8].buf, *rows = b[9].buf;
    for (Py_ssize_t i = 0; i < ns; i++)
        if (by_rec[i] < 0 || by_rec[i] >= ns) {
            PyErr_SetString(PyExc_ValueError, "lag_classic: a record order out of range");
            goto done;
        }
    /* pass 1: the pairs (first met first) and the first record of each */
    Py_ssize_t hint = -1;
    for (Py_ssize_t r = 0; r < nrows; r++) {
        int64_t i = rows[r];
        if (i < 0 || i >= nm || m_start[i] < 0 || m_size[i] < 0 || m_start[i] + m_size[i] > nflat) {
            PyErr_SetString(PyExc_ValueError, "lag_classic: a members row out of range");
            goto done;
        }
        Py_ssize_t snap = lag_record(s_rec, by_rec, ns, m_rec[i], &hint);
        if (snap < 0) {
            PyErr_SetString(PyExc_ValueError, "lag_classic: a members row without its record");
            goto done;
        }
        for (int64_t j = m_start[i]; j < m_start[i] + m_size[i]; j++) {
            if (flat[j] < 0 || flat[j] >= n_dp) {
                PyErr_SetString(PyExc_ValueError, "lag_classic: a partition out of range");
                goto done;
            }
            int32_t p = lag_pair_of(&h, s_g[snap] * n_dp + flat[j], 1);
            if (p == -2)
                goto done;
            if (p == first.n) {
                if (lag_vec_push(&first, snap))
                    goto done;
            } else if (snap < first.v[p]) {
                first.v[p] = snap;
            }
        }
    }
    /* each pair's cells: its first record to its group's last */
    Py_ssize_t np_ = first.n;
    cell_start = PyMem_Malloc((np_ + 1) * sizeof(int64_t));
    end = PyMem_Malloc((np_ + 1) * sizeof(int64_t));
    if (cell_start == NULL || end == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    group_end = PyMem_Malloc((ns ? ns : 1) * sizeof(int64_t));
    if (group_end == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t k = ns - 1; k >= 0; k--)
        group_end[k] = (k + 1 < ns && s_g[k + 1] == s_g[k]) ? group_end[k + 1] : k + 1;
    cell_start[0] = 0;
    for (Py_ssize_t p = 0; p < np_; p++) {
        end[p] = group_end[first.v[p]];
        cell_start[p + 1] = cell_start[p] + (end[p] - first.v[p]);
    }
    owner = PyMem_Malloc((cell_start[np_] ? cell_start[np_] : 1) * sizeof(int32_t));
    if (owner == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (int64_t c = 0; c < cell_start[np_]; c++)
        owner[c] = -1;
    /* pass 2: each cell's owner, the later row winning */
    hint = -1;
    for (Py_ssize_t r = 0; r < nrows; r++) {
        int64_t i = rows[r];
        Py_ssize_t snap = lag_record(s_rec, by_rec, ns, m_rec[i], &hint);
        if (m_owner[i] < -1 || m_owner[i] > INT32_MAX) {
            PyErr_SetString(PyExc_ValueError, "lag_classic: an owner id out of range");
            goto done;
        }
        for (int64_t j = m_start[i]; j < m_start[i] + m_size[i]; j++) {
            int32_t p = lag_pair_of(&h, s_g[snap] * n_dp + flat[j], 0);
            owner[cell_start[p] + snap - first.v[p]] = (int32_t)m_owner[i];
        }
    }
    /* the changes: the last record of each instant, then only where the owner differs */
    for (Py_ssize_t p = 0; p < np_; p++) {
        int64_t a = first.v[p], z = end[p], g = s_g[a];
        int emitted = 0;
        int32_t last = 0;
        for (int64_t k = a; k < z; k++) {
            if (k + 1 < z && s_ts[k + 1] == s_ts[k])
                continue; /* a later record at the same instant stands for it */
            int32_t o = owner[cell_start[p] + k - a];
            if (emitted && o == last)
                continue;
            emitted = 1;
            last = o;
            if (lag_vec_push(&out[0], -1) || lag_vec_push(&out[1], g) || lag_vec_push(&out[2], s_ts[k]) ||
                lag_vec_push(&out[3], o))
                goto done;
            out[0].v[out[0].n - 1] = p; /* the pair, its partition found below */
        }
    }
    /* the pairs' partitions: the hash keys (group * n_dp + dp) by pair */
    {
        int64_t *dp_of = PyMem_Malloc((np_ ? np_ : 1) * sizeof(int64_t));
        if (dp_of == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        for (Py_ssize_t j = 0; j < h.cap; j++)
            if (h.val[j] >= 0)
                dp_of[h.val[j]] = h.key[j] % n_dp;
        for (Py_ssize_t k = 0; k < out[0].n; k++)
            out[0].v[k] = dp_of[out[0].v[k]];
        PyMem_Free(dp_of);
    }
    result = lag_vecs_bytes(out, 4);
done:
    for (int c = 0; c < 10; c++)
        PyBuffer_Release(&b[c]);
    for (int c = 0; c < 4; c++)
        PyMem_Free(out[c].v);
    PyMem_Free(first.v);
    PyMem_Free(h.key);
    PyMem_Free(h.val);
    PyMem_Free(cell_start);
    PyMem_Free(end);
    PyMem_Free(group_end);
    PyMem_Free(owner);
    return result;
}

/* lag_steps16(bounds, when, offset, when_steps, offset_steps) -> (when_first, when_big,
 * offset_first, offset_big): kgtool.lag.collector._deltas in one pass. Group g's commits are
 * bounds[g] .. bounds[g+1]-1; each group's first instant and offset (0 for a group without
 * commits) and the steps from each commit to the next in 16 bits into when_steps (uint16) and
 * offset_steps (int16), a group's first step 0; a step that does not fit, or equals the escape
 * (0xFFFF, -0x8000), is the escape there and its value in the big list (int64 bytes), in order.
 * Steps are taken modulo 2^64 (a deleted offset). */
static PyObject *py_lag_steps16(PyObject *self, PyObject *args) {
    Py_buffer b[5];
    memset(b, 0, sizeof b);
    if (!PyArg_ParseTuple(args, "y*y*y*w*w*", &b[0], &b[1], &b[2], &b[3], &b[4]))
        return NULL;
    PyObject *result = NULL;
    lag_vec wbig = {NULL, 0, 0}, obig = {NULL, 0, 0};
    int64_t *wfirst = NULL, *ofirst = NULL;
    Py_ssize_t ng = b[0].len / 8 - 1, n = b[1].len / 8;
    const int64_t *bounds = b[0].buf, *when = b[1].buf, *off = b[2].buf;
    if (ng < 0 || b[0].len % 8 || b[1].len % 8 || b[2].len != n * 8 || b[3].len != n * 2 || b[4].len != n * 2 ||
        bounds[0] != 0 || bounds[ng] != n) {
        PyErr_SetString(PyExc_ValueError, "lag_steps16: arrays of mismatched lengths");
        goto done;
    }
    for (Py_ssize_t g = 0; g < ng; g++)
        if (bounds[g + 1] < bounds[g]) {
            PyErr_SetString(PyExc_ValueError, "lag_steps16: bounds going back");
            goto done;
        }
    uint16_t *ws = b[3].buf;
    int16_t *os = b[4].buf;
    wfirst = PyMem_Calloc(ng ? ng : 1, sizeof(int64_t));
    ofirst = PyMem_Calloc(ng ? ng : 1, sizeof(int64_t));
    if (wfirst == NULL || ofirst == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t g = 0; g < ng; g++) {
        Py_ssize_t a = bounds[g], z = bounds[g + 1];
        if (a == z)
            continue;
        wfirst[g] = when[a];
        ofirst[g] = off[a];
        ws[a] = 0;
        os[a] = 0;
        for (Py_ssize_t i = a + 1; i < z; i++) {
            int64_t dw = (int64_t)((uint64_t)when[i] - (uint64_t)when[i - 1]);
            int64_t doff = (int64_t)((uint64_t)off[i] - (uint64_t)off[i - 1]);
            if (dw >= 0 && dw < 0xFFFF) {
                ws[i] = (uint16_t)dw;
            } else {
                ws[i] = 0xFFFF;
                if (lag_vec_push(&wbig, dw))
                    goto done;
            }
            if (doff > -0x8000 && doff <= 0x7FFF) {
                os[i] = (int16_t)doff;
            } else {
                os[i] = (int16_t)-0x8000;
                if (lag_vec_push(&obig, doff))
                    goto done;
            }
        }
    }
    /* (a NULL pointer would give None, not empty bytes) */
    result = Py_BuildValue("(y#y#y#y#)", (const char *)wfirst, ng * (Py_ssize_t)8,
                           wbig.v ? (const char *)wbig.v : "", wbig.n * (Py_ssize_t)8, (const char *)ofirst,
                           ng * (Py_ssize_t)8, obig.v ? (const char *)obig.v : "", obig.n * (Py_ssize_t)8);
done:
    lag_release(b, 5);
    PyMem_Free(wbig.v);
    PyMem_Free(obig.v);
    PyMem_Free(wfirst);
    PyMem_Free(ofirst);
    return result;
}
