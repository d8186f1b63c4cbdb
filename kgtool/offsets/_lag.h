/* The lag table's rows and Burrow's verdicts for every (group, topic, partition) of one data
 * partition, in one pass over arrays (included by _replay.c). The pure-Python twin is
 * kgtool.offsets.lag.lag_rows with kgtool.offsets.burrow.CommitWindow, which this follows
 * step for step (tests/offsets/test_lag_kernel.py holds them equal):
 *
 * lag_rows(seq_bounds, when, offset, end_commit, stamp, stamp_known, instants, ends,
 *          owner_bounds, owner_times, owner_ids, step_ms, until, has_until, end, has_end,
 *          intervals, min_distance_ms,
 *          out_seq, out_t, out_committed, out_end, out_lag, out_lag_ms, out_status, out_owner,
 *          out_kind, out_last) -> rows written
 *
 * Inputs (native arrays): sequence s is commits seq_bounds[s] .. seq_bounds[s+1]-1, in the order
 * they took effect: when (ms), offset (LAG_DELETED: the committed offset was deleted),
 * end_commit (the log end at when), stamp / stamp_known (the timestamp of the next record read
 * from that offset). instants / ends: every instant asked about, ascending, and end(T) at each.
 * Owners of sequence s: owner_bounds[s] .. owner_bounds[s+1]-1, times ascending, ids (-1: none).
 * Rows (outputs, one per row): kind 0 a lag table row (an instant: a commit, or a step between
 * the first and the last commit, at most until); kind 1 the state at end only (the offsets
 * table, the episodes' last point). out_last[s]: the row holding the state at end, or -1.
 * out_status: a Burrow status (burrow.Status), or LAG_POLLS + the status to take when one of
 * the recent polls saw the consumer caught up (checkIfRecentLagZero: the caller looks). */

#define LAG_DELETED INT64_MIN
#define LAG_POLLS 16
enum { ST_OK = 1, ST_WARN = 2, ST_STOP = 4, ST_STALL = 5, ST_REWIND = 6 };
#define LAG_MAX_INTERVALS 64

typedef struct {
    int64_t offset[LAG_MAX_INTERVALS], ts[LAG_MAX_INTERVALS], lag[LAG_MAX_INTERVALS];
    int n, intervals;
    int64_t min_distance;
} window_t;

/* inmemory.go addConsumerOffset / mergeFrequentCommitIntoPrevious (burrow.CommitWindow.add) */
static void window_add(window_t *w, int64_t offset, int64_t ts, int64_t broker) {
    int64_t lag = broker > offset ? broker - offset : 0;
    if (w->n && ts - w->ts[w->n - 1] < w->min_distance) {
        w->offset[w->n - 1] = offset;
        w->lag[w->n - 1] = lag;
        return;
    }
    if (w->n == w->intervals) {
        memmove(w->offset, w->offset + 1, (size_t)(w->n - 1) * 8);
        memmove(w->ts, w->ts + 1, (size_t)(w->n - 1) * 8);
        memmove(w->lag, w->lag + 1, (size_t)(w->n - 1) * 8);
        w->n--;
    }
    w->offset[w->n] = offset;
    w->ts[w->n] = ts;
    w->lag[w->n] = lag;
    w->n++;
}

static inline int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/* caching.go calculatePartitionStatus (burrow.CommitWindow.status): the status, or LAG_POLLS +
 * the status without STOP when STOP depends on the recent polls. */
static int window_status(const window_t *w, int64_t log_end, int64_t now_ms) {
    if (!w->n) return ST_OK;
    int64_t last = w->offset[w->n - 1];
    int64_t current = log_end > last ? log_end - last : 0;
    if (current <= 0) return ST_OK;
    int stopped = floor_div(now_ms, 1000) * 1000 - w->ts[w->n - 1] > w->ts[w->n - 1] - w->ts[0];
    int always = 1, rewind = 0, stalled = 1, not_decreasing = 1;
    for (int i = 0; i < w->n; i++) {
        if (w->lag[i] == 0) always = 0;
        if (i) {
            if (w->lag[i] < w->lag[i - 1]) not_decreasing = 0;
            if (w->offset[i] < w->offset[i - 1]) rewind = 1;
            if (w->offset[i] != w->offset[i - 1]) stalled = 0;
        }
    }
    int rest = ST_OK;
    if (always) rest = rewind ? ST_REWIND : stalled ? ST_STALL : not_decreasing ? ST_WARN : ST_OK;
    return stopped ? LAG_POLLS + rest : rest;
}

/* end(t), t among the instants asked about: a sequence's rows rise in time, so the search
 * gallops from the previous row's place (*at) before it halves. */
static inline int64_t lag_end_at(const int64_t *instants, const int64_t *ends, Py_ssize_t m, int64_t t,
                                 Py_ssize_t *at) {
    Py_ssize_t lo = *at, hi, step = 1;
    if (lo < 0 || lo >= m || instants[lo] > t) {
        lo = 0;
        hi = m;
    } else {
        hi = lo + 1;
        while (hi < m && instants[hi] < t) {
            lo = hi;
            hi += step;
            step <<= 1;
        }
        if (hi > m) hi = m;
    }
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if (instants[mid] < t) lo = mid + 1; else hi = mid;
    }
    *at = lo;
    return lo < m ? ends[lo] : ends[m - 1];
}

static PyObject *py_lag_rows(PyObject *self, PyObject *args) {
    Py_buffer b[21];
    long long step, until, end;
    int has_until, has_end, intervals;
    long long min_distance;
    memset(b, 0, sizeof b);
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*y*y*y*y*LLiLiiLw*w*w*w*w*w*w*w*w*w*", &b[0], &b[1], &b[2], &b[3], &b[4],
                          &b[5], &b[6], &b[7], &b[8], &b[9], &b[10], &step, &until, &has_until, &end, &has_end,
                          &intervals, &min_distance, &b[11], &b[12], &b[13], &b[14], &b[15], &b[16], &b[17], &b[18],
                          &b[19], &b[20]))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t S = b[0].len / 8 - 1, N = b[1].len / 8, M = b[6].len / 8, cap = b[12].len / 8;
    if (S < 0 || b[2].len != b[1].len || b[3].len != b[1].len || b[4].len != b[1].len || b[5].len != N ||
        b[7].len != b[6].len || b[8].len != b[0].len || b[10].len * 2 != b[9].len || intervals < 1 ||
        intervals > LAG_MAX_INTERVALS || b[11].len != cap * 4 || b[13].len != cap * 8 || b[14].len != cap * 8 ||
        b[15].len != cap * 8 || b[16].len != cap * 8 || b[17].len != cap || b[18].len != cap * 4 ||
        b[19].len != cap || b[20].len != S * 8 || (N && !M)) {
        PyErr_SetString(PyExc_ValueError, "lag_rows: arrays of mismatched lengths");
        goto done;
    }
    const int64_t *bounds = b[0].buf, *when = b[1].buf, *off = b[2].buf, *end_commit = b[3].buf, *stamp = b[4].buf;
    const uint8_t *known = b[5].buf;
    const int64_t *inst = b[6].buf, *ends = b[7].buf, *obounds = b[8].buf, *otimes = b[9].buf;
    const int32_t *oids = b[10].buf;
    int32_t *o_seq = b[11].buf, *o_owner = b[18].buf;
    int64_t *o_t = b[12].buf, *o_comm = b[13].buf, *o_end = b[14].buf, *o_lag = b[15].buf, *o_lms = b[16].buf,
            *o_last = b[20].buf;
    uint8_t *o_status = b[17].buf, *o_kind = b[19].buf;
    Py_ssize_t r = 0;
    int overflow = 0;
    window_t w;
    for (Py_ssize_t s = 0; s < S && !overflow; s++) {
        Py_ssize_t c0 = bounds[s], c1 = bounds[s + 1];
        o_last[s] = -1;
        if (c0 < 0 || c1 > N || c0 > c1) { overflow = 2; break; }
        w.n = 0;
        w.intervals = intervals;
        w.min_distance = min_distance;
        Py_ssize_t k = c0, ok0 = obounds[s], ok1 = obounds[s + 1];
        Py_ssize_t cur = -1;   /* the commit in force */
        Py_ssize_t near = -1;  /* where the last row's instant was found */
        int64_t row_t_last = INT64_MIN;
        int have_rows = 0;
        /* the instants: each commit's time and first + j*step before the last, merged, at most until */
        int64_t first = c1 > c0 ? when[c0] : 0, last = c1 > c0 ? when[c1 - 1] : 0;
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
                if (off[k] == LAG_DELETED) w.n = 0; else window_add(&w, off[k], when[k], end_commit[k]);
                cur = k++;
            }
            if (cur < 0 || off[cur] == LAG_DELETED) continue;
            if (at_end && have_rows && row_t_last == end) { o_last[s] = r - 1; continue; }
            if (r >= cap) { overflow = 1; break; }
            int64_t end_t = lag_end_at(inst, ends, M, t, &near);
            int64_t committed = off[cur];
            int64_t lag = end_t - committed, lag_ms = 0;
            if (lag > 0 && known[cur]) lag_ms = t - stamp[cur] > 0 ? t - stamp[cur] : 0;
            Py_ssize_t lo = ok0, hi = ok1; /* the owner: the last change at or before t */
            while (lo < hi) {
                Py_ssize_t mid = (lo + hi) / 2;
                if (otimes[mid] <= t) lo = mid + 1; else hi = mid;
            }
            o_seq[r] = (int32_t)s;
            o_t[r] = t;
            o_comm[r] = committed;
            o_end[r] = end_t;
            o_lag[r] = lag;
            o_lms[r] = lag_ms;
            o_status[r] = (uint8_t)window_status(&w, end_t, t);
            o_owner[r] = lo > ok0 ? oids[lo - 1] : -1;
            o_kind[r] = (uint8_t)at_end;
            if (at_end) o_last[s] = r; else { have_rows = 1; row_t_last = t; }
            r++;
        }
    }
    if (overflow)
        PyErr_SetString(PyExc_ValueError, overflow == 1 ? "lag_rows: more rows than the room given"
                                                        : "lag_rows: sequence bounds out of range");
    else
        result = PyLong_FromSsize_t(r);
done:
    for (int i = 0; i < 21; i++)
        if (b[i].obj) PyBuffer_Release(&b[i]);
    return result;
}
