/*
 * kgtool.partitioner._speedups: the hot loop of `kgtool partition-of`, the compiled twin of
 * kgtool/partitioner/keys.py:scan_lines_py (same arguments, same results, same errors).
 *
 * scan_lines(buf, pos, end, fmt, skip_empty, null_marker, families, hashes, kinds, spans, max_keys)
 *   -> (pos, nkeys, nlines, err, err_pos)
 *
 * Reads lines of buf[pos:end] (terminator "\n" or "\r\n"; the last line may lack it), turns each
 * into the serialized key of the key format (Kafka's serializers), and writes for key k the
 * unsigned 32-bit hash of every requested family f to hashes[f * max_keys + k], its kind
 * (0 key, 1 empty key, 2 null key) to kinds[k], and, when spans is not None, the line's text
 * span to spans[2k], spans[2k+1]. Stops after max_keys keys. On a line that is not valid for the
 * format it stops before that line: err != 0 and err_pos is the line's start; Python builds the
 * message (kgtool.partitioner.keys.serialize_key says why).
 *
 * Hashes (sources in kgtool/partitioner/rules.py and kgtool/java.py):
 *   0 murmur2 - Kafka Utils.murmur2 (seed 0x9747b28c), the Java producer and librdkafka murmur2;
 *   1 crc32   - librdkafka rd_crc32 = zlib crc32;
 *   2 fnv1a   - FNV-1a 32 (Sarama, librdkafka rd_fnv1a before its abs).
 * Key formats: 0 string (UTF-8, validated), 1 hex, 2 base64, 3 long (LongSerializer: 8 bytes
 * big-endian), 4 int (IntegerSerializer: 4 bytes), 5 uuid (UUIDSerializer: the lowercase
 * 36-character string).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <zlib.h>

enum { F_STRING = 0, F_HEX, F_BASE64, F_LONG, F_INT, F_UUID };
enum { H_MURMUR2 = 0, H_CRC32, H_FNV1A };
enum { K_KEY = 0, K_EMPTY = 1, K_NULL = 2 };
enum { E_NONE = 0, E_UTF8, E_HEX, E_BASE64, E_LONG, E_INT, E_UUID, E_TOO_LONG };

/* A line longer than this is refused (kgtool/partitioner/keys.py MAX_KEY_BYTES): no broker takes
 * a record that large, and the newline is looked for only this far, so that one endless line
 * is not read (nor mapped in) to its end. */
#define MAX_KEY_BYTES ((Py_ssize_t)64 << 20)

/* Utils.murmur2: 4-byte little-endian blocks, then the tail (switch falls through). */
static uint32_t murmur2(const uint8_t *d, Py_ssize_t len) {
    const uint32_t m = 0x5bd1e995u;
    uint32_t h = 0x9747b28cu ^ (uint32_t)len;
    Py_ssize_t n4 = len & ~(Py_ssize_t)3, i;
    for (i = 0; i < n4; i += 4) {
        uint32_t k = (uint32_t)d[i] | ((uint32_t)d[i + 1] << 8) | ((uint32_t)d[i + 2] << 16)
                     | ((uint32_t)d[i + 3] << 24);
        k *= m;
        k ^= k >> 24;
        k *= m;
        h *= m;
        h ^= k;
    }
    switch (len & 3) {
    case 3: h ^= (uint32_t)d[n4 + 2] << 16; /* fall through */
    case 2: h ^= (uint32_t)d[n4 + 1] << 8;  /* fall through */
    case 1: h ^= (uint32_t)d[n4]; h *= m;
    }
    h ^= h >> 13;
    h *= m;
    h ^= h >> 15;
    return h;
}

static uint32_t fnv1a(const uint8_t *d, Py_ssize_t len) {
    uint32_t h = 0x811c9dc5u;
    for (Py_ssize_t i = 0; i < len; i++) {
        h ^= d[i];
        h *= 0x01000193u;
    }
    return h;
}

static uint32_t crc32_all(const uint8_t *d, Py_ssize_t len) {
    uLong c = crc32(0L, Z_NULL, 0);
    while (len > 0) {
        uInt n = len > (1 << 30) ? (uInt)(1 << 30) : (uInt)len;
        c = crc32(c, d, n);
        d += n;
        len -= n;
    }
    return (uint32_t)c;
}

/* Strict UTF-8 as Python's decoder: no overlongs, no surrogates, nothing above U+10FFFF. */
static int utf8_valid(const uint8_t *s, Py_ssize_t n) {
    Py_ssize_t i = 0;
    while (i < n) {
        while (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (w & 0x8080808080808080ull) break;
            i += 8;
        }
        if (i >= n) break;
        uint8_t c = s[i];
        if (c < 0x80) { i++; continue; }
        if (c >= 0xc2 && c <= 0xdf) {
            if (i + 1 >= n || (s[i + 1] & 0xc0) != 0x80) return 0;
            i += 2;
        } else if (c >= 0xe0 && c <= 0xef) {
            if (i + 2 >= n) return 0;
            uint8_t c1 = s[i + 1];
            if ((c1 & 0xc0) != 0x80 || (s[i + 2] & 0xc0) != 0x80) return 0;
            if (c == 0xe0 && c1 < 0xa0) return 0;  /* overlong */
            if (c == 0xed && c1 > 0x9f) return 0;  /* surrogates */
            i += 3;
        } else if (c >= 0xf0 && c <= 0xf4) {
            if (i + 3 >= n) return 0;
            uint8_t c1 = s[i + 1];
            if ((c1 & 0xc0) != 0x80 || (s[i + 2] & 0xc0) != 0x80 || (s[i + 3] & 0xc0) != 0x80) return 0;
            if (c == 0xf0 && c1 < 0x90) return 0;  /* overlong */
            if (c == 0xf4 && c1 > 0x8f) return 0;  /* above U+10FFFF */
            i += 4;
        } else {
            return 0;
        }
    }
    return 1;
}

static int8_t HEXVAL[256];
static int8_t B64VAL[256];

static void init_tables(void) {
    memset(HEXVAL, -1, sizeof HEXVAL);
    memset(B64VAL, -1, sizeof B64VAL);
    for (int i = 0; i < 10; i++) HEXVAL['0' + i] = (int8_t)i;
    for (int i = 0; i < 6; i++) {
        HEXVAL['a' + i] = (int8_t)(10 + i);
        HEXVAL['A' + i] = (int8_t)(10 + i);
    }
    const char *alpha = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (int i = 0; i < 64; i++) B64VAL[(uint8_t)alpha[i]] = (int8_t)i;
}

/* A growable scratch buffer for decoded keys. */
typedef struct {
    uint8_t *p;
    Py_ssize_t cap;
} scratch_t;

static int scratch_reserve(scratch_t *s, Py_ssize_t n) {
    if (n <= s->cap) return 0;
    Py_ssize_t cap = s->cap ? s->cap : 256;
    while (cap < n) cap *= 2;
    uint8_t *p = PyMem_Realloc(s->p, (size_t)cap);
    if (p == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    s->p = p;
    s->cap = cap;
    return 0;
}

static Py_ssize_t decode_hex(const uint8_t *s, Py_ssize_t n, uint8_t *out) {
    if (n & 1) return -1;
    for (Py_ssize_t i = 0; i < n; i += 2) {
        int hi = HEXVAL[s[i]], lo = HEXVAL[s[i + 1]];
        if ((hi | lo) < 0) return -1;
        out[i / 2] = (uint8_t)(hi << 4 | lo);
    }
    return n / 2;
}

/* RFC 4648 base64, standard alphabet; padding optional, but when present the length is a
 * multiple of 4 and "=" only ends it (at most two). */
static Py_ssize_t decode_base64(const uint8_t *s, Py_ssize_t n, uint8_t *out) {
    Py_ssize_t pad = 0;
    if (n > 0 && s[n - 1] == '=') {
        pad = 1;
        if (n > 1 && s[n - 2] == '=') pad = 2;
        if (n % 4 != 0) return -1;
        n -= pad;
    }
    if (n % 4 == 1) return -1;
    if (pad && (n + pad) % 4 != 0) return -1;
    if (pad == 1 && n % 4 != 3) return -1;
    if (pad == 2 && n % 4 != 2) return -1;
    Py_ssize_t o = 0, i = 0;
    for (; i + 4 <= n; i += 4) {
        int a = B64VAL[s[i]], b = B64VAL[s[i + 1]], c = B64VAL[s[i + 2]], d = B64VAL[s[i + 3]];
        if ((a | b | c | d) < 0) return -1;
        uint32_t v = (uint32_t)a << 18 | (uint32_t)b << 12 | (uint32_t)c << 6 | (uint32_t)d;
        out[o++] = (uint8_t)(v >> 16);
        out[o++] = (uint8_t)(v >> 8);
        out[o++] = (uint8_t)v;
    }
    Py_ssize_t r = n - i;
    if (r >= 2) {
        int a = B64VAL[s[i]], b = B64VAL[s[i + 1]];
        int c = r == 3 ? B64VAL[s[i + 2]] : 0;
        if ((a | b | c) < 0) return -1;
        uint32_t v = (uint32_t)a << 18 | (uint32_t)b << 12 | (uint32_t)c << 6;
        out[o++] = (uint8_t)(v >> 16);
        if (r == 3) out[o++] = (uint8_t)(v >> 8);
    }
    return o;
}

/* Long.parseLong / Integer.parseInt of [+-]?[0-9]+ within range, written big-endian in `width`
 * bytes (LongSerializer, IntegerSerializer). */
static int decode_integer(const uint8_t *s, Py_ssize_t n, int width, uint8_t *out) {
    Py_ssize_t i = 0;
    int neg = 0;
    if (n > 0 && (s[0] == '+' || s[0] == '-')) {
        neg = s[0] == '-';
        i = 1;
    }
    if (i >= n) return -1;
    uint64_t limit = width == 8 ? (uint64_t)INT64_MAX + (uint64_t)neg : (uint64_t)INT32_MAX + (uint64_t)neg;
    uint64_t v = 0;
    for (; i < n; i++) {
        uint8_t c = s[i];
        if (c < '0' || c > '9') return -1;
        uint64_t d = (uint64_t)(c - '0');
        if (v > (limit - d) / 10) return -1;
        v = v * 10 + d;
    }
    uint64_t u = neg ? (uint64_t)0 - v : v;
    for (int b = 0; b < width; b++) out[b] = (uint8_t)(u >> (8 * (width - 1 - b)));
    return width;
}

static int decode_uuid(const uint8_t *s, Py_ssize_t n, uint8_t *out) {
    if (n != 36) return -1;
    for (int i = 0; i < 36; i++) {
        uint8_t c = s[i];
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (c != '-') return -1;
            out[i] = c;
        } else {
            if (HEXVAL[c] < 0) return -1;
            out[i] = (c >= 'A' && c <= 'F') ? (uint8_t)(c + 32) : c;
        }
    }
    return 36;
}

static PyObject *py_scan_lines(PyObject *self, PyObject *args) {
    Py_buffer buf, fam, hashes, kinds, spans;
    Py_ssize_t pos, end, max_keys;
    int fmt, skip_empty;
    PyObject *null_obj, *spans_obj;
    if (!PyArg_ParseTuple(args, "y*nnipOy*w*w*On", &buf, &pos, &end, &fmt, &skip_empty, &null_obj,
                          &fam, &hashes, &kinds, &spans_obj, &max_keys))
        return NULL;
    PyObject *result = NULL;
    int have_spans = spans_obj != Py_None;
    const uint8_t *marker = NULL;
    Py_ssize_t marker_len = 0;
    scratch_t scratch = {NULL, 0};
    memset(&spans, 0, sizeof spans);
    if (have_spans && PyObject_GetBuffer(spans_obj, &spans, PyBUF_WRITABLE) < 0) goto done_nospans;
    if (null_obj != Py_None) {
        if (!PyBytes_Check(null_obj)) {
            PyErr_SetString(PyExc_TypeError, "null_marker must be bytes or None");
            goto done;
        }
        marker = (const uint8_t *)PyBytes_AS_STRING(null_obj);
        marker_len = PyBytes_GET_SIZE(null_obj);
    }
    Py_ssize_t nfam = fam.len;
    const uint8_t *fams = (const uint8_t *)fam.buf;
    if (end > buf.len) end = buf.len;
    if (pos < 0 || pos > end || max_keys < 0 || hashes.len < (Py_ssize_t)sizeof(uint32_t) * nfam * max_keys
        || kinds.len < max_keys || (have_spans && spans.len < (Py_ssize_t)sizeof(int64_t) * 2 * max_keys)) {
        PyErr_SetString(PyExc_ValueError, "scan_lines: bad range or output buffers too small");
        goto done;
    }
    for (Py_ssize_t f = 0; f < nfam; f++) {
        if (fams[f] > H_FNV1A) {
            PyErr_SetString(PyExc_ValueError, "scan_lines: unknown hash family");
            goto done;
        }
    }
    if (fmt < F_STRING || fmt > F_UUID) {
        PyErr_SetString(PyExc_ValueError, "scan_lines: unknown key format");
        goto done;
    }
    const uint8_t *data = (const uint8_t *)buf.buf;
    uint32_t *hout = (uint32_t *)hashes.buf;
    uint8_t *kout = (uint8_t *)kinds.buf;
    int64_t *sout = have_spans ? (int64_t *)spans.buf : NULL;
    Py_ssize_t nkeys = 0, nlines = 0;
    int err = E_NONE;
    Py_ssize_t err_pos = 0;
    uint8_t fixed[36];

    while (pos < end && nkeys < max_keys) {
        const uint8_t *line = data + pos;
        Py_ssize_t window = end - pos;
        if (window > MAX_KEY_BYTES + 2) window = MAX_KEY_BYTES + 2;
        const uint8_t *nl = memchr(line, '\n', (size_t)window);
        if (nl == NULL && window < end - pos) {
            err = E_TOO_LONG;
            err_pos = pos;
            break;
        }
        Py_ssize_t len = nl ? nl - line : end - pos;
        Py_ssize_t next = pos + len + (nl ? 1 : 0);
        if (nl && len > 0 && line[len - 1] == '\r') len--;  /* "\r\n" terminator */
        if (len > MAX_KEY_BYTES) {
            err = E_TOO_LONG;
            err_pos = pos;
            break;
        }
        if (len == 0 && skip_empty) {
            nlines++;
            pos = next;
            continue;
        }
        int kind = K_KEY;
        const uint8_t *key = line;
        Py_ssize_t klen = len;
        if (marker != NULL && len == marker_len && memcmp(line, marker, (size_t)len) == 0) {
            kind = K_NULL;
        } else {
            switch (fmt) {
            case F_STRING:
                if (!utf8_valid(line, len)) err = E_UTF8;
                break;
            case F_HEX:
                if (scratch_reserve(&scratch, len / 2 + 1) < 0) goto done;
                klen = decode_hex(line, len, scratch.p);
                key = scratch.p;
                if (klen < 0) err = E_HEX;
                break;
            case F_BASE64:
                if (scratch_reserve(&scratch, len / 4 * 3 + 3) < 0) goto done;
                klen = decode_base64(line, len, scratch.p);
                key = scratch.p;
                if (klen < 0) err = E_BASE64;
                break;
            case F_LONG:
            case F_INT:
                klen = decode_integer(line, len, fmt == F_LONG ? 8 : 4, fixed);
                key = fixed;
                if (klen < 0) err = fmt == F_LONG ? E_LONG : E_INT;
                break;
            case F_UUID:
                klen = decode_uuid(line, len, fixed);
                key = fixed;
                if (klen < 0) err = E_UUID;
                break;
            }
            if (err != E_NONE) {
                err_pos = pos;
                break;
            }
            if (klen == 0) kind = K_EMPTY;
        }
        for (Py_ssize_t f = 0; f < nfam; f++) {
            uint32_t h = 0;
            if (kind != K_NULL) {
                switch (fams[f]) {
                case H_MURMUR2: h = murmur2(key, klen); break;
                case H_CRC32: h = crc32_all(key, klen); break;
                default: h = fnv1a(key, klen); break;
                }
            }
            hout[f * max_keys + nkeys] = h;
        }
        kout[nkeys] = (uint8_t)kind;
        if (sout != NULL) {
            sout[2 * nkeys] = pos;
            sout[2 * nkeys + 1] = pos + len;
        }
        nkeys++;
        nlines++;
        pos = next;
    }
    result = Py_BuildValue("nnnin", pos, nkeys, nlines, err, err_pos);
done:
    if (have_spans) PyBuffer_Release(&spans);
done_nospans:
    PyMem_Free(scratch.p);
    PyBuffer_Release(&buf);
    PyBuffer_Release(&fam);
    PyBuffer_Release(&hashes);
    PyBuffer_Release(&kinds);
    return result;
}

static PyObject *py_hash_keys(PyObject *self, PyObject *args) {
    /* hash_keys(family, keys: sequence of bytes) -> list of uint32 (for --check's record keys) */
    int family;
    PyObject *seq;
    Py_buffer out;
    if (!PyArg_ParseTuple(args, "iOw*", &family, &seq, &out)) return NULL;
    PyObject *fast = PySequence_Fast(seq, "hash_keys: keys must be a sequence");
    PyObject *result = NULL;
    if (fast == NULL) goto done;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    if (out.len < (Py_ssize_t)sizeof(uint32_t) * n || family < H_MURMUR2 || family > H_FNV1A) {
        PyErr_SetString(PyExc_ValueError, "hash_keys: output too small or unknown family");
        goto done;
    }
    uint32_t *o = (uint32_t *)out.buf;
    PyObject **items = PySequence_Fast_ITEMS(fast);
    for (Py_ssize_t i = 0; i < n; i++) {
        char *p;
        Py_ssize_t len;
        if (PyBytes_AsStringAndSize(items[i], &p, &len) < 0) goto done;
        const uint8_t *d = (const uint8_t *)p;
        o[i] = family == H_MURMUR2 ? murmur2(d, len) : family == H_CRC32 ? crc32_all(d, len) : fnv1a(d, len);
    }
    result = Py_NewRef(Py_None);
done:
    Py_XDECREF(fast);
    PyBuffer_Release(&out);
    return result;
}

static PyMethodDef methods[] = {
    {"scan_lines", py_scan_lines, METH_VARARGS, "Serialize and hash the keys of a buffer of lines."},
    {"hash_keys", py_hash_keys, METH_VARARGS, "Hash a sequence of bytes keys with one family."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, "_speedups", "kgtool partition-of hot loop", -1,
                                    methods};

PyMODINIT_FUNC PyInit__speedups(void) {
    init_tables();
    return PyModule_Create(&moddef);
}
