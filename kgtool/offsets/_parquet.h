/* The two Parquet encodings the lag table's columns take, for kgtool.spark.parquet_pages
 * (included by _replay.c). Its pure-Python fallback is pyarrow's own writer: the table read back
 * is the same (tests/spark/test_parquet_pages.py reads both).
 *
 * parquet_delta(values, width, stats) -> (bytes, min, max): DELTA_BINARY_PACKED (Parquet's Encodings.md) of
 *   ``values`` (native int32 when width is 4, int64 when 8): the header <block size 128>
 *   <4 miniblocks> <count> <first value, zig-zag>, then per block of 128 deltas <min delta,
 *   zig-zag> <4 bit widths> and the miniblocks of 32 (delta - min delta) bit-packed, LSB first.
 *   Deltas wrap in the column's width (an INT32 column's in 32 bits), as the spec says; a last
 *   miniblock is padded with zeros, the widths of unused miniblocks are 0 and their bodies absent. min, max: of
 *   the values when ``stats`` (the column's statistics), else the first value twice.
 * parquet_rle(codes, bit_width, mode) -> (bytes, count): the RLE / bit-packing hybrid of
 *   int32 ``codes`` (no length prefix): mode 0 every code (a
 *   negative one is an error: a column without nulls); mode 1 the codes >= 0 only (a nullable
 *   dictionary column's values: the nulls, -1, have none); mode 2 the definition levels, 1 where
 *   the code is >= 0 and 0 where it is -1. ``count``: how many values were encoded. A run of 8 or
 *   more equal values is an RLE run; the rest go in bit-packed groups of 8 (the last padded). */

#define PQ_BLOCK 128
#define PQ_MINI 32

static unsigned char *pq_varint(unsigned char *p, uint64_t v) {
    while (v >= 0x80) {
        *p++ = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    *p++ = (unsigned char)v;
    return p;
}

/* ``k`` values of ``w`` bits (w <= 64) bit-packed LSB first: exactly k * w / 8 bytes (k a multiple of 8). */
static unsigned char *pq_pack(unsigned char *p, const uint64_t *u, int k, int w) {
    if (w == 0)
        return p;
    uint64_t acc = 0;
    int bits = 0;
    for (int i = 0; i < k; i++) {
        uint64_t v = u[i];
        acc |= v << bits; /* bits < 64 */
        bits += w;
        if (bits >= 64) {
            memcpy(p, &acc, 8); /* little-endian hosts only (kgtool's targets: x86-64, arm64) */
            p += 8;
            bits -= 64;
            acc = bits ? v >> (w - bits) : 0;
        }
    }
    int rest = (bits + 7) / 8;
    memcpy(p, &acc, rest);
    return p + rest;
}

static PyObject *py_parquet_delta(PyObject *self, PyObject *args) {
    Py_buffer b;
    int width, stats;
    if (!PyArg_ParseTuple(args, "y*ip", &b, &width, &stats))
        return NULL;
    PyObject *out = NULL, *result = NULL;
    if ((width != 4 && width != 8) || b.len % width) {
        PyErr_SetString(PyExc_ValueError, "parquet_delta: width 4 or 8 and whole values");
        goto done;
    }
    Py_ssize_t n = b.len / width;
    /* the header (4 varints), then per block at most 10 + 4 + 128 * 8 bytes */
    Py_ssize_t bound = 40 + (n / PQ_BLOCK + 1) * (14 + PQ_BLOCK * (Py_ssize_t)width);
    out = PyBytes_FromStringAndSize(NULL, bound);
    if (out == NULL)
        goto done;
    unsigned char *p = (unsigned char *)PyBytes_AS_STRING(out);
    const int32_t *v32 = b.buf;
    const int64_t *v64 = b.buf;
    int64_t first = n ? (width == 4 ? v32[0] : v64[0]) : 0, vmin = first, vmax = first;
    p = pq_varint(p, PQ_BLOCK);
    p = pq_varint(p, PQ_BLOCK / PQ_MINI);
    p = pq_varint(p, (uint64_t)n);
    p = pq_varint(p, ((uint64_t)first << 1) ^ (uint64_t)(first >> 63));
    int64_t d[PQ_BLOCK];
    uint64_t u[PQ_BLOCK];
    for (Py_ssize_t start = 1; start < n; start += PQ_BLOCK) {
        int m = (int)(n - start < PQ_BLOCK ? n - start : PQ_BLOCK);
        if (width == 4) { /* deltas in 32 bits, wrapping */
            const int32_t *v = v32 + start;
            for (int i = 0; i < m; i++)
                d[i] = (int32_t)((uint32_t)v[i] - (uint32_t)v[i - 1]);
            for (int i = 0; stats && i < m; i++) {
                vmin = v[i] < vmin ? v[i] : vmin;
                vmax = v[i] > vmax ? v[i] : vmax;
            }
        } else {
            const int64_t *v = v64 + start;
            for (int i = 0; i < m; i++)
                d[i] = (int64_t)((uint64_t)v[i] - (uint64_t)v[i - 1]);
            for (int i = 0; stats && i < m; i++) {
                vmin = v[i] < vmin ? v[i] : vmin;
                vmax = v[i] > vmax ? v[i] : vmax;
            }
        }
        int64_t lo = d[0];
        for (int i = 1; i < m; i++)
            lo = d[i] < lo ? d[i] : lo;
        for (int i = m; i < PQ_BLOCK; i++)
            d[i] = lo; /* the padding: 0 once the minimum is taken off */
        if (width == 4) {
            for (int i = 0; i < PQ_BLOCK; i++)
                u[i] = (uint32_t)((uint32_t)d[i] - (uint32_t)lo);
        } else {
            for (int i = 0; i < PQ_BLOCK; i++)
                u[i] = (uint64_t)d[i] - (uint64_t)lo;
        }
        p = pq_varint(p, ((uint64_t)lo << 1) ^ (uint64_t)(lo >> 63));
        unsigned char *widths = p;
        p += PQ_BLOCK / PQ_MINI;
        for (int j = 0; j < PQ_BLOCK / PQ_MINI; j++) {
            int a = j * PQ_MINI;
            if (a >= m) {
                widths[j] = 0;
                continue;
            }
            uint64_t top = 0;
            for (int i = a; i < a + PQ_MINI; i++)
                top |= u[i];
            int w = top ? 64 - __builtin_clzll(top) : 0;
            widths[j] = (unsigned char)w;
            p = pq_pack(p, u + a, PQ_MINI, w);
        }
    }
    _PyBytes_Resize(&out, p - (unsigned char *)PyBytes_AS_STRING(out));
    if (out != NULL)
        result = Py_BuildValue("(OLL)", out, (long long)vmin, (long long)vmax);
done:
    Py_XDECREF(out);
    PyBuffer_Release(&b);
    return result;
}

/* A bit-packed run of the values x[a .. a + 8 * groups) (those at or past n as 0). */
static unsigned char *pq_literal(unsigned char *p, const int32_t *x, Py_ssize_t n, Py_ssize_t a, Py_ssize_t groups,
                                 int w) {
    uint64_t u[8];
    p = pq_varint(p, ((uint64_t)groups << 1) | 1);
    for (Py_ssize_t g = 0; g < groups; g++) {
        for (int i = 0; i < 8; i++) {
            Py_ssize_t k = a + 8 * g + i;
            u[i] = k < n ? (uint32_t)x[k] : 0;
        }
        p = pq_pack(p, u, 8, w);
    }
    return p;
}

static PyObject *py_parquet_rle(PyObject *self, PyObject *args) {
    Py_buffer b;
    int w, mode;
    if (!PyArg_ParseTuple(args, "y*ii", &b, &w, &mode))
        return NULL;
    PyObject *out = NULL, *result = NULL;
    int32_t *x = NULL;
    int owned = 0;
    if (w < 1 || w > 32 || mode < 0 || mode > 2 || b.len % 4) {
        PyErr_SetString(PyExc_ValueError, "parquet_rle: bit width 1-32, mode 0-2, int32 codes");
        goto done;
    }
    Py_ssize_t total = b.len / 4, n = 0;
    const int32_t *in = b.buf;
    uint32_t top = 0;
    int32_t lowest = 0;
    for (Py_ssize_t i = 0; i < total; i++) {
        top |= (uint32_t)in[i];
        lowest = in[i] < lowest ? in[i] : lowest;
    }
    if (mode == 0 && lowest < 0) {
        PyErr_SetString(PyExc_ValueError, "parquet_rle: a null (-1) in a column without nulls");
        goto done;
    }
    if (mode == 0 || (mode == 1 && lowest >= 0)) { /* the codes as they are */
        x = (int32_t *)in;
        n = total;
    } else {
        x = PyMem_Malloc((total ? total : 1) * sizeof(int32_t));
        if (x == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        owned = 1;
        top = 0;
        for (Py_ssize_t i = 0; i < total; i++) {
            int32_t c = in[i];
            if (mode == 2) {
                x[n++] = c >= 0;
            } else if (c >= 0) {
                x[n++] = c;
                top |= (uint32_t)c;
            }
        }
    }
    if (w < 32 && (top >> w)) {
        PyErr_SetString(PyExc_ValueError, "parquet_rle: a code wider than the bit width");
        goto done;
    }
    int vbytes = (w + 7) / 8;
    /* worst case: every value bit-packed (w bits each, padded to a group) plus a header per group */
    Py_ssize_t bound = (n / 8 + 1) * (w + 10) + 16;
    out = PyBytes_FromStringAndSize(NULL, bound);
    if (out == NULL)
        goto done;
    unsigned char *p = (unsigned char *)PyBytes_AS_STRING(out);
    Py_ssize_t i = 0, lit = -1, groups = 0;
    while (i < n) {
        int32_t v = x[i];
        Py_ssize_t r = 1;
        if (i + 8 <= n && x[i + 7] == v) { /* a long run: compared 8 at a time */
            int32_t pat[8] = {v, v, v, v, v, v, v, v};
            while (i + r + 8 <= n && !memcmp(x + i + r, pat, sizeof pat))
                r += 8;
        }
        while (i + r < n && x[i + r] == v)
            r++;
        if (r >= 8) {
            if (groups) {
                p = pq_literal(p, x, n, lit, groups, w);
                groups = 0;
            }
            p = pq_varint(p, (uint64_t)r << 1);
            uint32_t uv = (uint32_t)v;
            memcpy(p, &uv, vbytes);
            p += vbytes;
            i += r;
        } else {
            if (!groups)
                lit = i;
            groups++;
            i += 8;
        }
    }
    if (groups)
        p = pq_literal(p, x, n, lit, groups, w);
    _PyBytes_Resize(&out, p - (unsigned char *)PyBytes_AS_STRING(out));
    if (out != NULL)
        result = Py_BuildValue("(On)", out, n);
done:
    Py_XDECREF(out);
    if (owned)
        PyMem_Free(x);
    PyBuffer_Release(&b);
    return result;
}
