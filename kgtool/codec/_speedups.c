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
 *                        log_append_time|None, mode, slow, position) -> stats tuple | None
 *       The same walk without building records: timestamps, sizes, and (mode 1) the
 *       __consumer_offsets OffsetCommit key/value layouts parsed and validated in C;
 *       records it cannot fully decode are appended to `slow` as (offset, key, value,
 *       position of their batch), so that their messages name the batch as on the Python path.
 *       None: malformed (the caller re-decodes with decode_records_v2 for the exact error).
 *
 *   summarize_segment(data, i, hi, base_position, verify_crc, mode, slow, producers,
 *                     decompress) -> (stop index, stats tuple)
 *       Walks the batch chain from index i while batches are v2, uncompressed, not
 *       control, CRC-valid and well-formed, accumulating stats; stops at anything else
 *       (the caller handles that batch on the general path, then calls again).
 *
 *   decode_group_metadata_value(value) -> dict | None
 *       GroupMetadataValue v0-v4 as the schema-generated decoder's dict; None for anything
 *       unusual (the generated decoder then reports it). See "GroupMetadataValue" below.
 *
 *   crc32c(data) -> int   (SSE4.2 or ARMv8 CRC32 when the CPU has them, else a table)
 *   crc32c_path() -> "sse4.2" | "armv8-crc32" | "table"
 *   crc32c_shift(crc, n) -> int   (crc * x^(8n): combining CRCs of adjacent spans)
 *
 *   resync_v2(data, i, limit, max_message_size) -> (index | -1, crc_bytes)
 *       kgtool.codec.segment._resync: the next plausible v2 batch whose CRC checks out, in
 *       time linear in the bytes scanned; see "resynchronisation" below.
 *
 *   KeyIndex(), CommitScanner(key_index, max_rows), ColumnBuffer, scan_markers(...)
 *       kgtool.offsets.columns: plain OffsetCommit records appended to typed column buffers
 *       (handed to NumPy without a copy), keys interned per log partition, other records and
 *       transaction markers handed back; see "offset-commit columns" below.
 *
 * Sources: DefaultRecordBatch, DefaultRecord, ByteUtils (varints), OffsetCommitKey/Value
 * JSON schemas in group-coordinator/src/main/resources/common/message/.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <zlib.h>

/* ------------------------------------------------------------------ CRC-32C */

static uint32_t crc_table[8][256];
static int have_sse42 = 0;
#if defined(__x86_64__) && defined(__GNUC__)
static int have_pclmul = 0; /* carry-less multiplication (gf_mul_hw) */
#endif

/* aarch64: the ARMv8 CRC32 instructions (CRC32CX / CRC32CB, arm_acle.h's __crc32cd and
 * __crc32cb; ARM C Language Extensions, "CRC32 intrinsics"), as the x86 path uses SSE4.2's
 * crc32. Built in where the compiler targets them (__ARM_FEATURE_CRC32: Apple silicon,
 * -march=armv8.1-a and later); else compiled for them alone and used where the CPU says it has
 * them (Linux: getauxval(AT_HWCAP) & HWCAP_CRC32; macOS: sysctl hw.optional.armv8_crc32). They
 * are optional in ARMv8.0 only, and every ARMv8.1 core has them. */
#if defined(__aarch64__) && (defined(__GNUC__) || defined(__clang__))
#define KG_ARM_CRC 1
#include <arm_acle.h>
#if defined(__ARM_FEATURE_CRC32)
#define KG_ARM_CRC_TARGET
#elif defined(__clang__)
#define KG_ARM_CRC_TARGET __attribute__((target("crc")))
#else
#define KG_ARM_CRC_TARGET __attribute__((target("+crc")))
#endif
#if !defined(__ARM_FEATURE_CRC32) && defined(__linux__)
#include <sys/auxv.h>
#ifndef HWCAP_CRC32
#define HWCAP_CRC32 (1 << 7) /* arch/arm64/include/uapi/asm/hwcap.h */
#endif
#elif !defined(__ARM_FEATURE_CRC32) && defined(__APPLE__)
#include <sys/sysctl.h>
#endif
/* clang's arm_acle.h declares the intrinsics only where __ARM_FEATURE_CRC32 is on: its
 * builtins, which a function compiled for +crc may call, stand in for them there */
#if defined(__clang__) && !defined(__ARM_FEATURE_CRC32)
#define KG_CRC32CD(c, v) __builtin_arm_crc32cd(c, v)
#define KG_CRC32CB(c, b) __builtin_arm_crc32cb(c, b)
#else
#define KG_CRC32CD(c, v) __crc32cd(c, v)
#define KG_CRC32CB(c, b) __crc32cb(c, b)
#endif
static int have_arm_crc = 0;

KG_ARM_CRC_TARGET
static uint32_t crc_arm(uint32_t crc, const uint8_t *p, size_t n) {
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, p, 8); /* little-endian: the byte order CRC32CX takes (Linux and macOS on arm64) */
        crc = KG_CRC32CD(crc, v);
        p += 8;
        n -= 8;
    }
    while (n--) crc = KG_CRC32CB(crc, *p++);
    return crc;
}

static int arm_crc_supported(void) {
#if defined(__ARM_FEATURE_CRC32)
    return 1;
#elif defined(__linux__)
    return (getauxval(AT_HWCAP) & HWCAP_CRC32) != 0;
#elif defined(__APPLE__)
    int v = 0;
    size_t len = sizeof v;
    return sysctlbyname("hw.optional.armv8_crc32", &v, &len, NULL, 0) == 0 && v;
#else
    return 0;
#endif
}
#endif

/* The CRC path in use ("sse4.2", "armv8-crc32" or "table"), for crc32c_path() and the tests. */
static const char *crc_path(void);

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
    have_pclmul = have_sse42 && __builtin_cpu_supports("pclmul");
#endif
#if defined(KG_ARM_CRC)
    have_arm_crc = arm_crc_supported();
#endif
}

static const char *crc_path(void) {
#if defined(KG_ARM_CRC)
    if (have_arm_crc) return "armv8-crc32";
#endif
    return have_sse42 ? "sse4.2" : "table";
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

static int xpow_init(void);
static inline uint32_t crc32c_shift(uint32_t crc, uint32_t n);

#if defined(__x86_64__) && defined(__GNUC__)
/* Spans of at least this many bytes go as three streams (crc_hw3). */
#define CRC_HW3_MIN 1024

/* crc_hw over three thirds of the span at once: the crc32 instruction takes three cycles to
 * give its result but can start one a cycle, so three independent streams run about three
 * times as fast as one. Each third after the first starts from a zero register; the register is
 * linear in its start (a zero byte multiplies it by x^8), so reg(c, A || B) = c_A * x^(8|B|)
 * ^ reg(0, B): crc32c_shift joins them. */
__attribute__((target("sse4.2")))
static uint32_t crc_hw3(uint32_t crc, const uint8_t *p, size_t n) {
    size_t third = (n / 3) & ~(size_t)7;
    const uint8_t *p1 = p + third, *p2 = p + 2 * third;
    uint64_t c0 = crc, c1 = 0, c2 = 0;
    for (size_t i = 0; i < third; i += 8) {
        uint64_t v0, v1, v2;
        memcpy(&v0, p + i, 8);
        memcpy(&v1, p1 + i, 8);
        memcpy(&v2, p2 + i, 8);
        c0 = __builtin_ia32_crc32di(c0, v0);
        c1 = __builtin_ia32_crc32di(c1, v1);
        c2 = __builtin_ia32_crc32di(c2, v2);
    }
    uint32_t r = crc32c_shift((uint32_t)c0, (uint32_t)third) ^ (uint32_t)c1;
    r = crc32c_shift(r, (uint32_t)third) ^ (uint32_t)c2;
    return crc_hw(r, p + 3 * third, n - 3 * third);
}
#endif

/* The CRC-32C of a || p[0:n], given crc = the CRC-32C of a (0 for an empty a). */
static uint32_t crc32c_extend(uint32_t crc, const uint8_t *p, size_t n) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (have_sse42) {
        if (n >= CRC_HW3_MIN && n < ((size_t)1 << 31) && have_pclmul && !xpow_init())
            return crc_hw3(crc ^ 0xFFFFFFFFu, p, n) ^ 0xFFFFFFFFu;
        return crc_hw(crc ^ 0xFFFFFFFFu, p, n) ^ 0xFFFFFFFFu;
    }
#endif
#if defined(KG_ARM_CRC)
    if (have_arm_crc) return crc_arm(crc ^ 0xFFFFFFFFu, p, n) ^ 0xFFFFFFFFu;
#endif
    return crc_sw(crc ^ 0xFFFFFFFFu, p, n) ^ 0xFFFFFFFFu;
}

static uint32_t crc32c_compute(const uint8_t *p, size_t n) { return crc32c_extend(0, p, n); }

/* ---- CRC-32C arithmetic: the CRC of a span from two prefix CRCs
 *
 * CRC-32C is linear: crc(A || B) = crc(A) * x^(8|B|) ^ crc(B) (mod the Castagnoli
 * polynomial; zlib's crc32_combine), so crc(B) = crc(A || B) ^ crc(A) * x^(8|B|): with
 * prefix CRCs at hand, checking the CRC of any span costs two multiplications, whatever its
 * length. Polynomials are bit-reflected as in the CRC register (bit 31 = x^0). */

#define CRC32C_POLY 0x82F63B78u

/* a * b mod P, bit by bit (zlib's multmodp). */
static uint32_t gf_mul_sw(uint32_t a, uint32_t b) {
    uint32_t m = 1u << 31, p = 0;
    if (!a) return 0;
    for (;;) {
        if (a & m) {
            p ^= b;
            if ((a & (m - 1)) == 0) break;
        }
        m >>= 1;
        b = b & 1 ? (b >> 1) ^ CRC32C_POLY : b >> 1;
    }
    return p;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* The same with a carry-less multiplication: the 63-bit product, shifted to put x^0 at bit 63,
 * is hi (x^0..x^31) + lo * x^32, and CRC32 of four zero bytes over lo is lo * x^32 mod P. */
__attribute__((target("pclmul,sse4.2")))
static uint32_t gf_mul_hw(uint32_t a, uint32_t b) {
    __m128i prod = _mm_clmulepi64_si128(_mm_cvtsi32_si128((int)a), _mm_cvtsi32_si128((int)b), 0);
    uint64_t r = (uint64_t)_mm_cvtsi128_si64(prod) << 1;
    return (uint32_t)(r >> 32) ^ (uint32_t)_mm_crc32_u32((uint32_t)r, 0);
}
#endif

static inline uint32_t gf_mul(uint32_t a, uint32_t b) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (have_pclmul) return gf_mul_hw(a, b);
#endif
    return gf_mul_sw(a, b);
}

/* x^(8n) for n < 2^31 from two tables: x^(8 lo) and x^(8 * 65536 * hi), built once (384 KiB). */
static uint32_t *xpow_lo = NULL, *xpow_hi = NULL;

static int xpow_init(void) {
    if (xpow_lo) return 0;
    uint32_t *lo = (uint32_t *)malloc(65536 * sizeof(uint32_t)), *hi = (uint32_t *)malloc(32768 * sizeof(uint32_t));
    if (!lo || !hi) { free(lo); free(hi); return -1; }
    uint32_t v = 1u << 31; /* x^0 */
    for (int k = 0; k < 65536; k++) {
        lo[k] = v;
        v = (v >> 8) ^ crc_table[0][v & 0xff]; /* one zero byte: times x^8 */
    }
    hi[0] = 1u << 31;
    for (int k = 1; k < 32768; k++) hi[k] = gf_mul(hi[k - 1], v); /* v = x^(8 * 65536) */
    xpow_lo = lo;
    xpow_hi = hi;
    return 0;
}

/* crc * x^(8n) mod P: the CRC of a || n bytes, minus the CRC of those n bytes (xpow_init first). */
static inline uint32_t crc32c_shift(uint32_t crc, uint32_t n) {
    uint32_t w = xpow_lo[n & 0xffff];
    if (n >> 16) w = gf_mul(w, xpow_hi[n >> 16]);
    return gf_mul(w, crc);
}

/* CRC-32 (IEEE, zlib's), as the legacy formats use it (LegacyRecord.computeChecksum). */
static uint32_t crc32_table[256];

static void crc32_init(void) {
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0xEDB88320u : c >> 1;
        crc32_table[n] = c;
    }
}

static uint32_t crc32_ieee(const uint8_t *p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    while (n--) c = crc32_table[(c ^ *p++) & 0xff] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
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

/* The one varint reader (ByteUtils.readUnsignedVarint / readVarint / readVarlong): base 128,
 * least significant group first, at most maxb bytes (5 or 10); the caller keeps the low 32 or
 * 64 bits. Returns 0 ok, 1 ran out of data, 2 too long (continuation bit in byte maxb).
 * Twin of kgtool.codec.primitives (_base128); exposed to Python under the same names
 * (read_unsigned_varint, read_varint, read_varlong). */
static inline int rd_base128(const uint8_t **pp, const uint8_t *end, int maxb, uint64_t *out) {
    const uint8_t *p = *pp;
    uint64_t v = 0;
    for (int i = 0; i < maxb; i++) {
        if (p >= end) return 1;
        uint8_t b = *p++;
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *pp = p;
            *out = v;
            return 0;
        }
    }
    return 2;
}

static inline int rd_uvarint(const uint8_t **pp, const uint8_t *end, uint32_t *out) {
    uint64_t v;
    int c = rd_base128(pp, end, 5, &v);
    if (!c) *out = (uint32_t)v;
    return c;
}

static inline int rd_varint(const uint8_t **pp, const uint8_t *end, int32_t *out) {
    uint64_t v;
    int c = rd_base128(pp, end, 5, &v);
    if (!c) {
        uint32_t u = (uint32_t)v;
        *out = (int32_t)((u >> 1) ^ (0u - (u & 1)));
    }
    return c;
}

static inline int rd_varlong(const uint8_t **pp, const uint8_t *end, int64_t *out) {
    uint64_t v;
    int c = rd_base128(pp, end, 10, &v);
    if (!c) *out = (int64_t)((v >> 1) ^ (0ull - (v & 1)));
    return c;
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

/* ------------------------------------------------------------------ index_records_v2 */

/* index_records_v2(buf, start, end, count, step, step_bytes[, first, limit]) -> (err | None,
 * marks, firsts): walk the `count` records of [start, end) (records `first`.. of the batch)
 * without building anything (the check that lets a huge batch be decoded lazily, chunk by
 * chunk); a chunk starts at the first record and wherever the previous one reached `step`
 * records or `step_bytes` bytes: marks = their positions, firsts = their first record indices,
 * closed by (end, first + count) when all is well. Past `limit` bytes it stops at a chunk
 * start, left as the last mark (not closed: the caller resumes from it). err as
 * decode_records_v2 reports it. */
static int add_mark(PyObject *marks, PyObject *firsts, Py_ssize_t pos, Py_ssize_t idx) {
    PyObject *a = PyLong_FromSsize_t(pos), *b = PyLong_FromSsize_t(idx);
    int rc = (!a || !b || PyList_Append(marks, a) || PyList_Append(firsts, b)) ? -1 : 0;
    Py_XDECREF(a);
    Py_XDECREF(b);
    return rc;
}

static PyObject *py_index_records_v2(PyObject *self, PyObject *args) {
    Py_buffer buf;
    Py_ssize_t start, end, count, step, step_bytes, first = 0, limit = PY_SSIZE_T_MAX;
    if (!PyArg_ParseTuple(args, "y*nnnnn|nn", &buf, &start, &end, &count, &step, &step_bytes, &first, &limit))
        return NULL;
    if (start < 0 || end > buf.len || start > end || count < 0 || step <= 0 || step_bytes <= 0) {
        PyBuffer_Release(&buf);
        PyErr_SetString(PyExc_ValueError, "bad range");
        return NULL;
    }
    const uint8_t *base = (const uint8_t *)buf.buf;
    const uint8_t *p = base + start, *e = base + end, *mark_p = p;
    PyObject *marks = PyList_New(0), *firsts = PyList_New(0);
    PyObject *err = NULL;
    if (!marks || !firsts) goto fail;
    Py_ssize_t i, mark_i = 0;
    for (i = 0; i < count; i++) {
        rec_t r;
        rerr_t er;
        if (i == 0 || i - mark_i >= step || p - mark_p >= step_bytes) {
            if (add_mark(marks, firsts, p - base, first + i)) goto fail;
            if (i > 0 && p - (base + start) >= limit) break; /* resume from this last mark */
            mark_i = i;
            mark_p = p;
        }
        if (parse_record(&p, e, &r, &er)) {
            err = make_err(er.at - base, first + i, &er);
            if (!err) goto fail;
            break;
        }
    }
    if (i < count && !err) {
        PyBuffer_Release(&buf);
        return Py_BuildValue("(ONN)", Py_None, marks, firsts);
    }
    count += first;
    if (!err && p != e) {
        char reason[160];
        snprintf(reason, sizeof reason, "%lld bytes remain after the %lld records the header declares",
                 (long long)(e - p), (long long)count);
        err = Py_BuildValue("(nnss)", (Py_ssize_t)(p - base), count, "records", reason);
        if (!err) goto fail;
    }
    if (!err) {
        if (add_mark(marks, firsts, end, count)) goto fail;
        err = Py_None;
        Py_INCREF(err);
    }
    PyBuffer_Release(&buf);
    return Py_BuildValue("(NNN)", err, marks, firsts);
fail:
    PyBuffer_Release(&buf);
    Py_XDECREF(marks);
    Py_XDECREF(firsts);
    Py_XDECREF(err);
    return NULL;
}

/* ------------------------------------------------------------------ legacy inner messages */
/*
 * The inner message set of a compressed magic 0/1 wrapper (kgtool.codec.legacy._next_inner is
 * the Python twin and the one that words errors): Offset int64, MessageSize int32, then Crc
 * uint32, Magic int8 (0 or 1), Attributes int8 (no compression bits), Timestamp int64 (magic
 * 1), Key and Value as int32 length (< 0: null) + bytes; bytes after the value inside the
 * message are ignored (LegacyRecord reads the fields it knows).
 */
typedef struct {
    int64_t offset, timestamp;
    int32_t size, klen, vlen;
    int magic, attributes;
    const uint8_t *key, *value;
} inner_t;

/* 0: a valid inner message at *pp (advanced); -1: anything wrong with it. */
static int parse_inner(const uint8_t **pp, const uint8_t *e, int verify_crc, inner_t *m) {
    const uint8_t *p = *pp;
    if (e - p < 12) return -1;
    m->offset = be64(p);
    m->size = be32(p + 8);
    p += 12;
    if (m->size < 14 || m->size > e - p) return -1;
    const uint8_t *end = p + m->size;
    m->magic = (int8_t)p[4];
    if (m->magic != 0 && m->magic != 1) return -1;
    if (m->magic == 1 && m->size < 22) return -1;
    if (verify_crc && crc32_ieee(p + 4, (size_t)m->size - 4) != (uint32_t)be32(p)) return -1;
    m->attributes = (int8_t)p[5];
    if (m->attributes & 0x07) return -1;
    const uint8_t *q = p + 6;
    m->timestamp = -1;
    if (m->magic == 1) { m->timestamp = be64(q); q += 8; }
    m->klen = be32(q);
    q += 4;
    m->key = NULL;
    if (m->klen >= 0) {
        if (m->klen > end - q) return -1;
        m->key = q;
        q += m->klen;
    }
    if (end - q < 4) return -1;
    m->vlen = be32(q);
    q += 4;
    m->value = NULL;
    if (m->vlen >= 0) {
        if (m->vlen > end - q) return -1;
        m->value = q;
    }
    *pp = end;
    return 0;
}

/* index_legacy_inner(buf, start, end, verify_crc, step, step_bytes)
 *   -> (bad index or -1, count, first offset, last offset, marks, firsts): chunks as
 *   index_records_v2 makes them (marks/firsts not closed); on a bad message, its index and
 *   nothing after (the caller re-reads it from the last mark, which is at or before it). */
static PyObject *py_index_legacy_inner(PyObject *self, PyObject *args) {
    Py_buffer buf;
    Py_ssize_t start, end, step, step_bytes;
    int verify_crc;
    if (!PyArg_ParseTuple(args, "y*nnpnn", &buf, &start, &end, &verify_crc, &step, &step_bytes)) return NULL;
    if (start < 0 || end > buf.len || start > end || step <= 0 || step_bytes <= 0) {
        PyBuffer_Release(&buf);
        PyErr_SetString(PyExc_ValueError, "bad range");
        return NULL;
    }
    const uint8_t *base = (const uint8_t *)buf.buf;
    const uint8_t *p = base + start, *e = base + end, *mark_p = p;
    PyObject *marks = PyList_New(0), *firsts = PyList_New(0);
    if (!marks || !firsts) goto fail;
    Py_ssize_t n = 0, bad = -1, mark_n = 0;
    long long first = 0, last = 0;
    while (p < e) {
        inner_t m;
        if (n == 0 || n - mark_n >= step || p - mark_p >= step_bytes) {
            if (add_mark(marks, firsts, p - base, n)) goto fail;
            mark_n = n;
            mark_p = p;
        }
        if (parse_inner(&p, e, verify_crc, &m)) { bad = n; break; }
        if (n == 0) first = m.offset;
        last = m.offset;
        n++;
    }
    PyBuffer_Release(&buf);
    return Py_BuildValue("(nnLLNN)", bad, n, first, last, marks, firsts);
fail:
    PyBuffer_Release(&buf);
    Py_XDECREF(marks);
    Py_XDECREF(firsts);
    return NULL;
}

/* decode_legacy_inner(buf, start, n, verify_crc, abs_base|None, log_append_time|None)
 *   -> [(offset, timestamp, -1, key, value, [], attributes, size_in_bytes)] (Record's field
 *   order) of n messages already checked by index_legacy_inner: offset absolute (+ abs_base,
 *   magic 1), timestamp -1 for magic 0, else log_append_time when given, else the message's. */
static PyObject *py_decode_legacy_inner(PyObject *self, PyObject *args) {
    Py_buffer buf;
    Py_ssize_t start, count;
    int verify_crc;
    PyObject *base_obj, *lat_obj;
    if (!PyArg_ParseTuple(args, "y*nnpOO", &buf, &start, &count, &verify_crc, &base_obj, &lat_obj)) return NULL;
    long long abs_base = 0, lat = 0;
    int has_base = base_obj != Py_None, has_lat = lat_obj != Py_None;
    if (has_base) abs_base = PyLong_AsLongLong(base_obj);
    if (has_lat) lat = PyLong_AsLongLong(lat_obj);
    if (PyErr_Occurred()) { PyBuffer_Release(&buf); return NULL; }
    if (start < 0 || start > buf.len || count < 0) {
        PyBuffer_Release(&buf);
        PyErr_SetString(PyExc_ValueError, "bad range");
        return NULL;
    }
    const uint8_t *p = (const uint8_t *)buf.buf + start, *e = (const uint8_t *)buf.buf + buf.len;
    PyObject *list = PyList_New(0);
    if (!list) { PyBuffer_Release(&buf); return NULL; }
    for (Py_ssize_t i = 0; i < count; i++) {
        inner_t m;
        if (parse_inner(&p, e, verify_crc, &m)) {
            PyErr_SetString(PyExc_ValueError, "inner message not checked");
            goto fail;
        }
        PyObject *k = bytes_or_none(m.key, m.klen);
        PyObject *v = bytes_or_none(m.value, m.vlen);
        PyObject *h = PyList_New(0);
        if (!k || !v || !h) { Py_XDECREF(k); Py_XDECREF(v); Py_XDECREF(h); goto fail; }
        int64_t off = has_base ? wrap_add(m.offset, abs_base) : m.offset;
        int64_t ts = m.magic == 0 ? -1 : (has_lat ? lat : m.timestamp);
        PyObject *t = Py_BuildValue("(LLiNNNin)", (long long)off, (long long)ts, -1, k, v, h, m.attributes & 0xFF,
                                    (Py_ssize_t)m.size + 12);
        if (!t) goto fail;
        if (PyList_Append(list, t)) { Py_DECREF(t); goto fail; }
        Py_DECREF(t);
    }
    PyBuffer_Release(&buf);
    return list;
fail:
    PyBuffer_Release(&buf);
    Py_DECREF(list);
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
        /* OffsetCommitValue v4 defines one tagged field, TopicId (tag 0, a 16-byte uuid, Kafka
         * 4.1+); any other tag is unknown, and the Python decoder reports it (a warning), so
         * such values take the slow path. */
        if (ntags == 1) {
            uint32_t tag, size;
            if (rd_uvarint(&p, e, &tag) || tag != 0) return 0;
            if (rd_uvarint(&p, e, &size) || size != 16 || e - p < 16) return 0;
            p += 16;
        } else if (ntags != 0) {
            return 0;
        }
    }
    return p == e;
}

/* Walk `count` records of [p, e): accumulate; -1 on malformed data. */
static int summarize_records(const uint8_t *p, const uint8_t *e, int64_t count, int64_t base_offset,
                             int64_t base_ts, int has_lat, int64_t lat, int mode, PyObject *slow, int64_t pos,
                             stats_t *s) {
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
        PyObject *t = (k && v) ? Py_BuildValue("(LNNL)", (long long)off, k, v, (long long)pos) : NULL;
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
    long long position;
    PyObject *lat_obj, *slow;
    int mode;
    if (!PyArg_ParseTuple(args, "y*nnnLLOiO!L", &buf, &start, &end, &count, &base_offset, &base_ts, &lat_obj, &mode,
                          &PyList_Type, &slow, &position))
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
    int rc = summarize_records(b + start, b + end, count, base_offset, base_ts, has_lat, lat, mode, slow, position,
                               &s);
    PyBuffer_Release(&buf);
    if (rc == -2) return NULL;
    if (rc == -1) {
        /* drop what this call appended: the caller re-decodes the batch */
        if (PyList_SetSlice(slow, before, PyList_GET_SIZE(slow), NULL)) return NULL;
        Py_RETURN_NONE;
    }
    return stats_tuple(&s);
}

/* summarize_legacy_inner(buf, start, n, verify_crc, abs_base|None, log_append_time|None, mode, slow)
 *   -> stats (as summarize_records_v2) of n inner messages already checked by
 *   index_legacy_inner, offsets and timestamps as decode_legacy_inner gives them; with a
 *   payload decoder (mode != 0) every message goes to `slow` as (offset, key, value). */
static PyObject *py_summarize_legacy_inner(PyObject *self, PyObject *args) {
    Py_buffer buf;
    Py_ssize_t start, count;
    int verify_crc, mode;
    PyObject *base_obj, *lat_obj, *slow;
    if (!PyArg_ParseTuple(args, "y*nnpOOiO!", &buf, &start, &count, &verify_crc, &base_obj, &lat_obj, &mode,
                          &PyList_Type, &slow))
        return NULL;
    long long abs_base = 0, lat = 0;
    int has_base = base_obj != Py_None, has_lat = lat_obj != Py_None;
    if (has_base) abs_base = PyLong_AsLongLong(base_obj);
    if (has_lat) lat = PyLong_AsLongLong(lat_obj);
    if (PyErr_Occurred() || start < 0 || start > buf.len || count < 0) {
        PyBuffer_Release(&buf);
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "bad range");
        return NULL;
    }
    const uint8_t *p = (const uint8_t *)buf.buf + start, *e = (const uint8_t *)buf.buf + buf.len;
    stats_t s;
    stats_init(&s);
    for (Py_ssize_t i = 0; i < count; i++) {
        inner_t m;
        if (parse_inner(&p, e, verify_crc, &m)) {
            PyBuffer_Release(&buf);
            PyErr_SetString(PyExc_ValueError, "inner message not checked");
            return NULL;
        }
        int64_t off = has_base ? wrap_add(m.offset, abs_base) : m.offset;
        int64_t ts = m.magic == 0 ? -1 : (has_lat ? lat : m.timestamp);
        s.records++;
        if (ts >= 0) {
            if (!s.have_ts) { s.min_ts = s.max_ts = ts; s.have_ts = 1; }
            else { if (ts < s.min_ts) s.min_ts = ts; if (ts > s.max_ts) s.max_ts = ts; }
        }
        if (!s.have_offset) { s.first_offset = off; s.have_offset = 1; }
        s.last_offset = off;
        if (m.key) s.key_bytes += m.klen; else s.null_keys++;
        if (m.value) s.value_bytes += m.vlen; else s.null_values++;
        if (mode == 0) continue;
        PyObject *k = bytes_or_none(m.key, m.klen);
        PyObject *v = bytes_or_none(m.value, m.vlen);
        PyObject *t = (k && v) ? Py_BuildValue("(LNN)", (long long)off, k, v) : NULL;
        if (!t) { Py_XDECREF(k); Py_XDECREF(v); PyBuffer_Release(&buf); return NULL; }
        if (PyList_Append(slow, t)) { Py_DECREF(t); PyBuffer_Release(&buf); return NULL; }
        Py_DECREF(t);
        s.slow++;
    }
    PyBuffer_Release(&buf);
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

/* summarize_segment(data, i, hi, base_position, verify_crc, mode, slow, producers, decompress|None)
 * decompress(codec, memoryview, index) -> bytes, or None when the payload does not decompress
 * (the general path then reports it); an exception it raises propagates. base_position: the
 * absolute position of data[0] (the batch positions in `slow`).
 * It stops before a batch that needs the general path: anything unusual, and a batch of more
 * than RECORDS_CHUNK records or RECORDS_CHUNK_BYTES bytes of records whose payloads go to
 * Python (mode != 0), which the general path checks first and then summarizes chunk by
 * chunk, so that `slow` stays bounded. */
#define RECORDS_CHUNK 4096 /* kgtool.codec.batch.RECORDS_CHUNK */
#define RECORDS_CHUNK_BYTES (16 << 20) /* kgtool.codec.batch.RECORDS_CHUNK_BYTES */
#define MIN_RECORD_SIZE 7  /* kgtool.codec.batch.MIN_RECORD_SIZE */
#define HUGE_BATCH (64 << 20) /* kgtool.codec.batch.HUGE_BATCH */
static PyObject *py_summarize_segment(PyObject *self, PyObject *args) {
    PyObject *data_obj;
    Py_buffer buf;
    Py_ssize_t i, hi;
    long long base_position;
    int verify_crc, mode;
    PyObject *slow, *producers, *decompress;
    if (!PyArg_ParseTuple(args, "OnnLpiO!O!O", &data_obj, &i, &hi, &base_position, &verify_crc, &mode, &PyList_Type,
                          &slow, &PySet_Type, &producers, &decompress))
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
        if (mode != 0 && !is_control && count > RECORDS_CHUNK) break; /* before decompressing */
        if (size > HUGE_BATCH) break; /* read by windows, pages released behind */
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
            plain = PyObject_CallFunction(decompress, "iOn", codec, slice, i);
            Py_DECREF(slice);
            if (!plain) goto error;
            /* None: it does not decompress; the general path reports it, with position */
            if (!PyBytes_Check(plain)) { Py_DECREF(plain); break; }
            rp = (const uint8_t *)PyBytes_AS_STRING(plain);
            re = rp + PyBytes_GET_SIZE(plain);
        }
        if (mode != 0 && !is_control && (count > RECORDS_CHUNK || re - rp > RECORDS_CHUNK_BYTES)) {
            Py_XDECREF(plain); /* the general path takes it chunk by chunk (and reuses `plain`) */
            break;
        }
        int rc;
        if (count > (re - rp) / MIN_RECORD_SIZE) rc = -1;
        else if (is_control) rc = summarize_control(rp, re, count, base_offset, base_ts, has_lat, max_ts, &t);
        else rc = summarize_records(rp, re, count, base_offset, base_ts, has_lat, max_ts, mode, slow,
                                    (int64_t)base_position + i, &t);
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

/* ------------------------------------------------------------------ offset-commit columns */
/*
 * kgtool.offsets.columns: a scan of v2 batches that appends the plain OffsetCommit records
 * (the bulk of a __consumer_offsets log) to typed column buffers, without a Python object
 * per record, and hands every other record back to Python.
 *
 * "Plain" is exactly what kgtool.coordinator.records.decode_offset_commit accepts (the
 * Python twin). The layouts below are the coordinator's schema tables (OffsetCommitKey,
 * OffsetCommitValue in kgtool.coordinator.schemas.classic); this file does not import them:
 * tests/coordinator/test_offset_commit_layout.py proves these checks, offset_commit_key_ok /
 * offset_commit_value_ok and the Python twin equal to the schema on every version:
 *   key   = OffsetCommitKey with record type 0 or 1 (CoordinatorRecordType: legacy
 *           OffsetCommit / OffsetCommit; GroupCoordinatorRecordHelpers reads key version 0):
 *           int16 type, string group, string topic, int32 partition, nothing after
 *           (offset_commit_key_ok, strict UTF-8);
 *   value = null (a tombstone) or OffsetCommitValue (OffsetCommitValue.json):
 *           v0, v2: offset int64, metadata string, commit_timestamp int64
 *           v1:     offset int64, metadata string, commit_timestamp int64, expire_timestamp int64
 *           v3:     offset int64, leader_epoch int32, metadata string, commit_timestamp int64
 *           v4 (flexible): v3's fields, metadata a compact string whose length varint is one
 *                  byte (length + 1 in 1..127), then the tagged fields: none (one 0 byte), or
 *                  only TopicId (tag 0, 16 bytes: 01 00 10 + the uuid), which Kafka 4.1+ writes
 *                  for a commit by topic id (OffsetCommitValue.json "topicId", versions 4+)
 *           nothing after the last field.
 *
 * Interning: keys, group ids and topics of one log partition live in a KeyIndex (hash tables
 * on the raw bytes; codes in order of first appearance), metadata strings of one chunk in
 * the columns object. A batch the scan declines after it started (a malformed record) rolls
 * every table back, so codes never depend on batches that did not decode.
 */

static inline uint64_t hash_bytes(const uint8_t *p, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ ((uint64_t)n * 0xff51afd7ed558ccdull);
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        h = (h ^ v) * 0xbf58476d1ce4e5b9ull;
        h ^= h >> 31;
        p += 8;
        n -= 8;
    }
    uint64_t v;
    if (n >= 4) {
        uint32_t a, b;
        memcpy(&a, p, 4);
        memcpy(&b, p + n - 4, 4);
        v = (uint64_t)a | ((uint64_t)b << 32);
    } else if (n) {
        v = (uint64_t)p[0] | ((uint64_t)p[n / 2] << 8) | ((uint64_t)p[n - 1] << 16);
    } else {
        v = 0;
    }
    h = (h ^ v) * 0x94d049bb133111ebull;
    h ^= h >> 29;
    return h;
}

typedef struct {
    uint32_t tag;  /* high half of the hash */
    int32_t code;  /* -1: empty slot */
} islot_t;

typedef struct {
    size_t off;
    uint32_t len;
} istr_t;

/* Append-only table of distinct byte strings; code = index in order of insertion. Slots are
 * 8 bytes (the one random access of a lookup); strings and their (offset, length) are in code
 * order, so the keys of one batch (interned together) sit together. */
typedef struct {
    islot_t *slots;
    size_t mask;
    int32_t count, cap;
    istr_t *strs;
    uint8_t *arena;
    size_t alen, acap;
} intern_t;

static int intern_init(intern_t *t) {
    memset(t, 0, sizeof *t);
    t->slots = (islot_t *)malloc(16 * sizeof(islot_t));
    t->arena = (uint8_t *)malloc(256);
    if (!t->slots || !t->arena) return -1;
    t->acap = 256;
    for (int k = 0; k < 16; k++) t->slots[k].code = -1;
    t->mask = 15;
    return 0;
}

static void intern_free(intern_t *t) {
    free(t->slots);
    free(t->strs);
    free(t->arena);
    memset(t, 0, sizeof *t);
}

static inline int bytes_eq(const uint8_t *a, const uint8_t *b, size_t n) {
    while (n >= 8) {
        uint64_t x, y;
        memcpy(&x, a, 8);
        memcpy(&y, b, 8);
        if (x != y) return 0;
        a += 8;
        b += 8;
        n -= 8;
    }
    while (n--)
        if (*a++ != *b++) return 0;
    return 1;
}

static inline int intern_eq(const intern_t *t, int32_t code, const uint8_t *p, size_t n) {
    const istr_t *e = &t->strs[code];
    return e->len == n && bytes_eq(t->arena + e->off, p, n);
}

static inline int32_t intern_find(const intern_t *t, const uint8_t *p, size_t n, uint64_t h) {
    size_t idx = (size_t)h & t->mask;
    uint32_t tag = (uint32_t)(h >> 32);
    for (;;) {
        const islot_t *s = &t->slots[idx];
        if (s->code < 0) return -1;
        if (s->tag == tag && intern_eq(t, s->code, p, n)) return s->code;
        idx = (idx + 1) & t->mask;
    }
}

static void intern_place(intern_t *t, uint64_t h, int32_t code) {
    size_t idx = (size_t)h & t->mask;
    while (t->slots[idx].code >= 0) idx = (idx + 1) & t->mask;
    t->slots[idx].tag = (uint32_t)(h >> 32);
    t->slots[idx].code = code;
}

static int intern_rehash(intern_t *t, size_t nslots) {
    islot_t *s = (islot_t *)malloc(nslots * sizeof(islot_t));
    if (!s) return -1;
    for (size_t k = 0; k < nslots; k++) s[k].code = -1;
    free(t->slots);
    t->slots = s;
    t->mask = nslots - 1;
    for (int32_t c = 0; c < t->count; c++) intern_place(t, hash_bytes(t->arena + t->strs[c].off, t->strs[c].len), c);
    return 0;
}

/* A new string (the caller checked it is absent): its code, or -1 out of memory. */
static int32_t intern_add(intern_t *t, const uint8_t *p, size_t n, uint64_t h) {
    if (t->count == INT32_MAX || n > UINT32_MAX) return -1;
    if ((size_t)(t->count + 1) * 2 > t->mask + 1) {
        if (intern_rehash(t, (t->mask + 1) * 2)) return -1;
    }
    if (t->count == t->cap) {
        int32_t cap = t->cap ? (t->cap > INT32_MAX / 2 ? INT32_MAX : t->cap * 2) : 64;
        istr_t *e = (istr_t *)realloc(t->strs, (size_t)cap * sizeof(istr_t));
        if (!e) return -1;
        t->strs = e;
        t->cap = cap;
    }
    if (t->alen + n > t->acap) {
        size_t cap = t->acap ? t->acap : 1024;
        while (cap < t->alen + n) cap *= 2;
        uint8_t *a = (uint8_t *)realloc(t->arena, cap);
        if (!a) return -1;
        t->arena = a;
        t->acap = cap;
    }
    if (n) memcpy(t->arena + t->alen, p, n);
    int32_t code = t->count++;
    t->strs[code].off = t->alen;
    t->strs[code].len = (uint32_t)n;
    t->alen += n;
    intern_place(t, h, code);
    return code;
}

/* Forget the codes >= c0 (roll back a declined batch; rare: rebuilds the slots). */
static int intern_truncate(intern_t *t, int32_t c0) {
    if (t->count <= c0) return 0;
    t->alen = t->strs[c0].off;
    t->count = c0;
    return intern_rehash(t, t->mask + 1);
}

static PyObject *intern_str(const intern_t *t, int32_t code) {
    return PyUnicode_DecodeUTF8((const char *)t->arena + t->strs[code].off, (Py_ssize_t)t->strs[code].len, "strict");
}

/* ---- KeyIndex: the interned OffsetCommitKeys of one log partition */

typedef struct {
    PyObject_HEAD
    intern_t keys, groups, topics;
    int32_t *kg, *kt, *kp;
    int8_t *ktype;
    int32_t kcap;
    int32_t last; /* code of the last key found (the next code is tried first) */
} KeyIndexObject;

static PyTypeObject KeyIndexType;

static PyObject *keyindex_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    KeyIndexObject *self = (KeyIndexObject *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    self->last = -1;
    if (intern_init(&self->keys) || intern_init(&self->groups) || intern_init(&self->topics)) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    return (PyObject *)self;
}

static void keyindex_dealloc(KeyIndexObject *self) {
    intern_free(&self->keys);
    intern_free(&self->groups);
    intern_free(&self->topics);
    free(self->kg);
    free(self->kt);
    free(self->kp);
    free(self->ktype);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int32_t intern_get(intern_t *t, const uint8_t *p, size_t n) {
    uint64_t h = hash_bytes(p, n);
    int32_t c = intern_find(t, p, n, h);
    return c >= 0 ? c : intern_add(t, p, n, h);
}

/* Intern a key that offset_commit_key_ok accepted and intern_find did not find (hash h).
 * Its code, or -1 out of memory. */
static int32_t keyindex_add(KeyIndexObject *ki, const uint8_t *k, int32_t n, uint64_t h) {
    int32_t gl = be16(k + 2);
    const uint8_t *g = k + 4;
    int32_t tl = be16(g + gl);
    const uint8_t *t = g + gl + 2;
    int32_t gc = intern_get(&ki->groups, g, (size_t)gl);
    if (gc < 0) return -1;
    int32_t tc = intern_get(&ki->topics, t, (size_t)tl);
    if (tc < 0) return -1;
    if (ki->keys.count == ki->kcap) {
        int32_t cap = ki->kcap ? ki->kcap * 2 : 64;
        int32_t *a = (int32_t *)realloc(ki->kg, (size_t)cap * 4);
        if (!a) return -1;
        ki->kg = a;
        a = (int32_t *)realloc(ki->kt, (size_t)cap * 4);
        if (!a) return -1;
        ki->kt = a;
        a = (int32_t *)realloc(ki->kp, (size_t)cap * 4);
        if (!a) return -1;
        ki->kp = a;
        int8_t *b = (int8_t *)realloc(ki->ktype, (size_t)cap);
        if (!b) return -1;
        ki->ktype = b;
        ki->kcap = cap;
    }
    int32_t code = intern_add(&ki->keys, k, (size_t)n, h);
    if (code < 0) return -1;
    ki->kg[code] = gc;
    ki->kt[code] = tc;
    ki->kp[code] = be32(t + tl);
    ki->ktype[code] = (int8_t)k[1];
    return code;
}

/* KeyIndex.add(raw) -> code, or -1 when raw is not an OffsetCommitKey decode_offset_commit
 * accepts. Replays keys interned on the pure-Python path (same order, same codes). */
static PyObject *keyindex_add_py(KeyIndexObject *self, PyObject *arg) {
    Py_buffer b;
    if (PyObject_GetBuffer(arg, &b, PyBUF_SIMPLE)) return NULL;
    const uint8_t *k = (const uint8_t *)b.buf;
    int32_t code = -1;
    if (b.len <= INT32_MAX && offset_commit_key_ok(k, (int32_t)b.len)) {
        uint64_t h = hash_bytes(k, (size_t)b.len);
        code = intern_find(&self->keys, k, (size_t)b.len, h);
        if (code < 0) {
            code = keyindex_add(self, k, (int32_t)b.len, h);
            if (code < 0) {
                PyBuffer_Release(&b);
                return PyErr_NoMemory();
            }
        }
    }
    PyBuffer_Release(&b);
    return PyLong_FromLong(code);
}

/* KeyIndex.export(k0, g0, t0) -> (raw keys, group codes, topic codes, partitions, types,
 * groups, topics): what was interned since the counts the caller already has. */
static PyObject *keyindex_export(KeyIndexObject *self, PyObject *args) {
    Py_ssize_t k0, g0, t0;
    if (!PyArg_ParseTuple(args, "nnn", &k0, &g0, &t0)) return NULL;
    if (k0 < 0 || g0 < 0 || t0 < 0 || k0 > self->keys.count || g0 > self->groups.count ||
        t0 > self->topics.count) {
        PyErr_SetString(PyExc_ValueError, "bad counts");
        return NULL;
    }
    Py_ssize_t nk = self->keys.count - k0;
    PyObject *raws = PyList_New(nk), *gc = PyList_New(nk), *tc = PyList_New(nk), *pc = PyList_New(nk),
             *yc = PyList_New(nk), *gs = PyList_New(self->groups.count - g0),
             *ts = PyList_New(self->topics.count - t0);
    if (!raws || !gc || !tc || !pc || !yc || !gs || !ts) goto fail;
    for (Py_ssize_t j = 0; j < nk; j++) {
        int32_t c = (int32_t)(k0 + j);
        PyObject *o = PyBytes_FromStringAndSize((const char *)self->keys.arena + self->keys.strs[c].off,
                                                (Py_ssize_t)self->keys.strs[c].len);
        if (!o) goto fail;
        PyList_SET_ITEM(raws, j, o);
        if (!(o = PyLong_FromLong(self->kg[c]))) goto fail;
        PyList_SET_ITEM(gc, j, o);
        if (!(o = PyLong_FromLong(self->kt[c]))) goto fail;
        PyList_SET_ITEM(tc, j, o);
        if (!(o = PyLong_FromLong(self->kp[c]))) goto fail;
        PyList_SET_ITEM(pc, j, o);
        if (!(o = PyLong_FromLong(self->ktype[c]))) goto fail;
        PyList_SET_ITEM(yc, j, o);
    }
    for (Py_ssize_t j = 0; j < self->groups.count - g0; j++) {
        PyObject *o = intern_str(&self->groups, (int32_t)(g0 + j));
        if (!o) goto fail;
        PyList_SET_ITEM(gs, j, o);
    }
    for (Py_ssize_t j = 0; j < self->topics.count - t0; j++) {
        PyObject *o = intern_str(&self->topics, (int32_t)(t0 + j));
        if (!o) goto fail;
        PyList_SET_ITEM(ts, j, o);
    }
    return Py_BuildValue("(NNNNNNN)", raws, gc, tc, pc, yc, gs, ts);
fail:
    Py_XDECREF(raws);
    Py_XDECREF(gc);
    Py_XDECREF(tc);
    Py_XDECREF(pc);
    Py_XDECREF(yc);
    Py_XDECREF(gs);
    Py_XDECREF(ts);
    return NULL;
}

static PyObject *keyindex_counts(KeyIndexObject *self, void *closure) {
    return Py_BuildValue("(iii)", self->keys.count, self->groups.count, self->topics.count);
}

static PyMethodDef keyindex_methods[] = {
    {"add", (PyCFunction)keyindex_add_py, METH_O, "Intern a raw OffsetCommitKey: its code, or -1."},
    {"export", (PyCFunction)keyindex_export, METH_VARARGS, "Keys, groups and topics interned since given counts."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef keyindex_getset[] = {
    {"counts", (getter)keyindex_counts, NULL, "(keys, groups, topics)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject KeyIndexType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kgtool.codec._speedups.KeyIndex",
    .tp_basicsize = sizeof(KeyIndexObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Interned OffsetCommitKeys of one log partition (raw bytes -> code).",
    .tp_new = keyindex_new,
    .tp_dealloc = (destructor)keyindex_dealloc,
    .tp_methods = keyindex_methods,
    .tp_getset = keyindex_getset,
};

/* ---- the value of a plain offset commit */

typedef struct {
    int8_t version;
    int64_t offset;
    int32_t leader_epoch;
    const uint8_t *md;
    int32_t mlen;
    int64_t commit_ts, expire_ts;
    const uint8_t *tid; /* v4's TopicId tag (16 bytes), or NULL */
} cval_t;

/* OffsetCommitValue v0-v4 exactly as decode_offset_commit (_fast_value) accepts it: 1, or 0. */
static int commit_value(const uint8_t *v, int32_t n, cval_t *o) {
    if (n < 2 || v[0] != 0) return 0;
    int version = v[1];
    int32_t ml;
    if (version == 3) {
        if (n < 16) return 0;
        ml = be16(v + 14);
        if (ml < 0 || n != 24 + ml) return 0;
    } else if (version == 1) {
        if (n < 12) return 0;
        ml = be16(v + 10);
        if (ml < 0 || n != 28 + ml) return 0;
    } else if (version == 0 || version == 2) {
        if (n < 12) return 0;
        ml = be16(v + 10);
        if (ml < 0 || n != 20 + ml) return 0;
    } else if (version == 4) {
        /* compact string: one-byte uvarint (length + 1, 1..127), then the tagged fields:
         * a count of 0, or of 1 with TopicId (tag 0, size 16) and its 16 bytes */
        if (n < 15) return 0;
        ml = (int32_t)v[14] - 1;
        if (ml < 0 || ml >= 127) return 0;
        if (n == 24 + ml) {
            if (v[n - 1] != 0) return 0;
        } else if (n == 24 + ml + 18) {
            const uint8_t *t = v + 23 + ml;
            if (t[0] != 1 || t[1] != 0 || t[2] != 16) return 0;

        } else {
            return 0;
        }
    } else {
        return 0;
    }
    o->version = (int8_t)version;
    o->offset = be64(v + 2);
    o->leader_epoch = -1;
    o->expire_ts = -1;
    o->tid = (version == 4 && n == 24 + ml + 18) ? v + 26 + ml : NULL;
    if (o->tid) { /* the zero uuid is TopicId's default: read as no topic id (the schema's view) */
        int zero = 1;
        for (int b = 0; b < 16; b++) zero &= o->tid[b] == 0;
        if (zero) o->tid = NULL;
    }
    const uint8_t *p;
    if (version >= 3) {
        o->leader_epoch = be32(v + 10);
        p = v + (version == 3 ? 16 : 15);
    } else {
        p = v + 12;
    }
    if (!utf8_ok(p, ml)) return 0;
    o->md = p;
    o->mlen = ml;
    o->commit_ts = be64(p + ml);
    if (version == 1) o->expire_ts = be64(p + ml + 8);
    return 1;
}

/* ---- Column memory: handed to NumPy without a copy, recycled through a small pool */

/* A chunk's column is given to Python as a ColumnBuffer (the buffer protocol over the
 * malloc'ed block, writable) instead of a copy; when the last view on it goes, its block
 * returns to a pool of at most POOL_MAX blocks, so the next chunks reuse memory that is
 * already mapped (fresh pages for every chunk cost more than the scan). */
#define POOL_MAX 16
#define POOL_BYTES ((size_t)32 << 20) /* about one chunk of 2^18 rows (66 bytes a row) */
static void *pool_p[POOL_MAX];
static size_t pool_cap[POOL_MAX];
static int pool_n = 0;
static size_t pool_bytes = 0;

static void *pool_get(size_t want, size_t *got) {
    int best = -1;
    for (int k = 0; k < pool_n; k++)
        if (pool_cap[k] >= want && (best < 0 || pool_cap[k] < pool_cap[best])) best = k;
    if (best >= 0) {
        void *p = pool_p[best];
        *got = pool_cap[best];
        pool_bytes -= pool_cap[best];
        pool_n--;
        pool_p[best] = pool_p[pool_n];
        pool_cap[best] = pool_cap[pool_n];
        return p;
    }
    *got = want;
    return malloc(want ? want : 1);
}

static void pool_put(void *p, size_t cap) {
    if (!p) return;
    if (pool_n < POOL_MAX && cap <= POOL_BYTES - pool_bytes) {
        pool_p[pool_n] = p;
        pool_cap[pool_n] = cap;
        pool_n++;
        pool_bytes += cap;
        return;
    }
    free(p);
}

typedef struct {
    PyObject_HEAD
    void *p;
    size_t cap;
    Py_ssize_t len;
} BufObject;

static char empty_block[8];

static int buf_getbuffer(BufObject *self, Py_buffer *view, int flags) {
    return PyBuffer_FillInfo(view, (PyObject *)self, self->p ? self->p : (void *)empty_block, self->len, 0, flags);
}

static void buf_dealloc(BufObject *self) {
    pool_put(self->p, self->cap);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyBufferProcs buf_as_buffer = {(getbufferproc)buf_getbuffer, NULL};

static PyTypeObject BufType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kgtool.codec._speedups.ColumnBuffer",
    .tp_basicsize = sizeof(BufObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One column of a chunk (buffer protocol; np.frombuffer views it without a copy).",
    .tp_dealloc = (destructor)buf_dealloc,
    .tp_as_buffer = &buf_as_buffer,
};

/* ---- CommitScanner: the column buffers of one chunk */

enum { C_ROFF, C_POS, C_TS, C_PID, C_PE, C_TXN, C_KEY, C_VER, C_OFF, C_LEP, C_META, C_CTS, C_ETS, C_TID, NCOLS };
static const size_t col_size[NCOLS] = {8, 8, 8, 8, 2, 1, 4, 1, 8, 4, 4, 8, 8, 4};

typedef struct {
    PyObject_HEAD
    KeyIndexObject *ki;
    Py_ssize_t n, cap, cap0;
    union {
        void *col[NCOLS];
        struct {
            int64_t *roff, *pos, *ts, *pid;
            int16_t *pe;
            uint8_t *txn;
            int32_t *key;
            int8_t *ver;
            int64_t *off;
            int32_t *lep, *meta;
            int64_t *cts, *ets;
            int32_t *tid;
        } c;
    } u;
    size_t colcap[NCOLS]; /* bytes allocated per column */
    intern_t metas;
    int32_t empty_meta; /* code of "" in this chunk, -1 before it appears */
    intern_t tids;      /* the chunk's v4 TopicIds (16 raw bytes each) */
    /* what the log cleaner leaves in a batch (kgtool.offsets.columns.BatchSigns): batches kept
     * without records, batches with a delete horizon, and one past the last offset of a batch
     * that shows cleaning (fewer records than offsets, none, or a delete horizon); -1 none */
    int64_t empty_batches, horizon_batches, sign_end;
} ColsObject;

static PyTypeObject ColsType;

/* CommitScanner(key_index, max_rows) */
static PyObject *cols_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    PyObject *ki;
    Py_ssize_t max_rows;
    if (!PyArg_ParseTuple(args, "O!n", &KeyIndexType, &ki, &max_rows)) return NULL;
    ColsObject *self = (ColsObject *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    Py_INCREF(ki);
    self->ki = (KeyIndexObject *)ki;
    self->empty_meta = -1;
    self->sign_end = -1;
    /* a chunk ends with the batch that reaches max_rows: room for that and a batch more */
    self->cap0 = max_rows < 1 ? 1024 : max_rows > (1 << 20) ? (1 << 20) : max_rows + 1024;
    if (intern_init(&self->metas) || intern_init(&self->tids)) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    return (PyObject *)self;
}

static void cols_dealloc(ColsObject *self) {
    for (int k = 0; k < NCOLS; k++) pool_put(self->u.col[k], self->colcap[k]);
    intern_free(&self->metas);
    intern_free(&self->tids);
    Py_XDECREF(self->ki);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int cols_grow(ColsObject *self) {
    Py_ssize_t cap = self->cap ? self->cap * 2 : self->cap0;
    for (int k = 0; k < NCOLS; k++) {
        size_t want = (size_t)cap * col_size[k];
        if (self->colcap[k] >= want) continue;
        if (!self->u.col[k]) {
            if (!(self->u.col[k] = pool_get(want, &self->colcap[k]))) return -1;
            continue;
        }
        void *q = realloc(self->u.col[k], want);
        if (!q) return -1;
        self->u.col[k] = q;
        self->colcap[k] = want;
    }
    self->cap = cap;
    return 0;
}

/* Offer one record of a non-control batch: 1 appended as a plain offset commit, 0 not
 * plain (the caller hands it to Python), -1 out of memory. */
static int cols_offer(ColsObject *self, int64_t pos, int64_t roff, int64_t ts, int64_t pid, int16_t pe, int txn,
                      const uint8_t *k, int32_t klen, const uint8_t *v, int32_t vlen) {
    if (!k) return 0; /* a null key: never an offset commit */
    KeyIndexObject *ki = self->ki;
    /* A commit batch usually lists a group's partitions in the order of an earlier one, and
     * keys get codes in order of appearance: try the code after the last key first. */
    int32_t code = ki->last + 1;
    uint64_t h = 0;
    if (code >= ki->keys.count || !intern_eq(&ki->keys, code, k, (size_t)klen)) {
        h = hash_bytes(k, (size_t)klen);
        code = intern_find(&ki->keys, k, (size_t)klen, h);
        if (code < 0 && !offset_commit_key_ok(k, klen)) return 0;
    }
    cval_t cv;
    if (v) {
        if (!commit_value(v, vlen, &cv)) return 0;
    } else {
        /* a tombstone (the offset deleted): no value fields */
        cv.version = -1;
        cv.offset = 0;
        cv.leader_epoch = -1;
        cv.md = NULL;
        cv.mlen = 0;
        cv.commit_ts = 0;
        cv.expire_ts = -1;
        cv.tid = NULL;
    }
    /* plain: only now is the key interned (a key whose value is not plain is not) */
    if (code < 0 && (code = keyindex_add(ki, k, klen, h)) < 0) return -1;
    ki->last = code;
    int32_t mcode = -1;
    if (v) {
        if (cv.mlen == 0) {
            if (self->empty_meta < 0) self->empty_meta = intern_get(&self->metas, cv.md, 0);
            mcode = self->empty_meta;
        } else {
            mcode = intern_get(&self->metas, cv.md, (size_t)cv.mlen);
        }
        if (mcode < 0) return -1;
    }
    int32_t tcode = -1;
    if (cv.tid && (tcode = intern_get(&self->tids, cv.tid, 16)) < 0) return -1;
    if (self->n == self->cap && cols_grow(self)) return -1;
    Py_ssize_t i = self->n++;
    self->u.c.roff[i] = roff;
    self->u.c.pos[i] = pos;
    self->u.c.ts[i] = ts;
    self->u.c.pid[i] = pid;
    self->u.c.pe[i] = pe;
    self->u.c.txn[i] = (uint8_t)(txn != 0);
    self->u.c.key[i] = code;
    self->u.c.ver[i] = cv.version;
    self->u.c.off[i] = cv.offset;
    self->u.c.lep[i] = cv.leader_epoch;
    self->u.c.cts[i] = cv.commit_ts;
    self->u.c.ets[i] = cv.expire_ts;
    self->u.c.meta[i] = mcode;
    self->u.c.tid[i] = tcode;
    return 1;
}

typedef struct {
    Py_ssize_t n;
    int32_t keys, groups, topics, metas, empty_meta, tids;
    Py_ssize_t raw;
} cols_mark_t;

static void cols_mark(ColsObject *self, PyObject *raw, cols_mark_t *m) {
    m->n = self->n;
    m->keys = self->ki->keys.count;
    m->groups = self->ki->groups.count;
    m->topics = self->ki->topics.count;
    m->metas = self->metas.count;
    m->tids = self->tids.count;
    m->empty_meta = self->empty_meta;
    m->raw = PyList_GET_SIZE(raw);
}

static int cols_rollback(ColsObject *self, PyObject *raw, const cols_mark_t *m) {
    self->n = m->n;
    self->empty_meta = m->empty_meta;
    self->ki->last = -1;
    if (intern_truncate(&self->ki->keys, m->keys) || intern_truncate(&self->ki->groups, m->groups) ||
        intern_truncate(&self->ki->topics, m->topics) || intern_truncate(&self->metas, m->metas) ||
        intern_truncate(&self->tids, m->tids)) {
        PyErr_NoMemory();
        return -1;
    }
    return PyList_SetSlice(raw, m->raw, PyList_GET_SIZE(raw), NULL);
}

/* Hand a record that is not a plain offset commit to Python: (position, offset, timestamp,
 * producer_id, producer_epoch, transactional, key, value, row index, False). */
static int raw_append(PyObject *raw, int64_t pos, int64_t roff, int64_t ts, int64_t pid, int pe, int txn,
                      const uint8_t *k, int32_t klen, const uint8_t *v, int32_t vlen, Py_ssize_t index) {
    PyObject *kb = bytes_or_none(k, klen);
    if (!kb) return -1;
    PyObject *vb = bytes_or_none(v, vlen);
    if (!vb) { Py_DECREF(kb); return -1; }
    PyObject *t = Py_BuildValue("(LLLLiiNNnO)", (long long)pos, (long long)roff, (long long)ts, (long long)pid, pe,
                                txn, kb, vb, index, Py_False);
    if (!t) return -1; /* Py_BuildValue released kb and vb ("N") */
    int rc = PyList_Append(raw, t);
    Py_DECREF(t);
    return rc;
}

/* One v2 batch at b[i], the checks decode_batch_v2 makes before its records, in its order:
 * a header within the data (size >= RECORD_BATCH_OVERHEAD), the CRC-32C of attributes..end,
 * codec 0-4, record count >= 0, the records section (decompress(codec, memoryview) -> bytes,
 * or None when the codec fails), count <= its size. */
typedef struct {
    const uint8_t *h;
    int64_t size, base_offset, base_ts, max_ts, pid, pos;
    int16_t attributes, pe;
    int32_t count;
    int txn, has_lat, control;
    const uint8_t *rp, *re;
    PyObject *plain; /* the decompressed records (owned), or NULL */
} vbatch_t;

/* gzip (offsets.topic.compression.codec=gzip: one small batch per consumer commit) inflated
 * here, without a Python call per batch: the payload as bytes when it is exactly one complete
 * gzip member (header, deflate stream, CRC-32 and ISIZE checked by zlib, nothing after it)
 * inflating to at most GZIP_FAST_MAX bytes; NULL (no error set) for anything else, which the
 * decompress callback then takes the whole way (kgtool.offsets.columns._decompress: the same
 * bytes for such a payload, and the codec's own checks, caps and error for the rest). */
#define GZIP_FAST_MAX (1 << 20)
static PyObject *gunzip_one_member(const uint8_t *p, size_t n) {
    if (n > (size_t)UINT_MAX) return NULL;
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit2(&zs, 31) != Z_OK) return NULL;
    size_t cap = n * 4 + 1024;
    if (cap > GZIP_FAST_MAX) cap = GZIP_FAST_MAX;
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)cap);
    if (!out) { inflateEnd(&zs); PyErr_Clear(); return NULL; }
    zs.next_in = (Bytef *)p;
    zs.avail_in = (uInt)n;
    for (;;) {
        zs.next_out = (Bytef *)PyBytes_AS_STRING(out) + zs.total_out;
        zs.avail_out = (uInt)(cap - zs.total_out);
        int rc = inflate(&zs, Z_FINISH);
        if (rc == Z_STREAM_END) break;
        if ((rc == Z_OK || rc == Z_BUF_ERROR) && zs.avail_out == 0 && cap < GZIP_FAST_MAX) {
            cap = cap * 2 > GZIP_FAST_MAX ? GZIP_FAST_MAX : cap * 2;
            if (_PyBytes_Resize(&out, (Py_ssize_t)cap) < 0) { inflateEnd(&zs); PyErr_Clear(); return NULL; }
            continue;
        }
        Py_DECREF(out);
        inflateEnd(&zs);
        return NULL;
    }
    size_t total = zs.total_out;
    uInt rest = zs.avail_in;
    inflateEnd(&zs);
    if (rest != 0) { Py_DECREF(out); return NULL; } /* another member, or bytes after it */
    if (_PyBytes_Resize(&out, (Py_ssize_t)total) < 0) { PyErr_Clear(); return NULL; }
    return out;
}

/* 1 ready, 0 declined (the general path takes it), -1 Python error. */
static int vbatch_open(vbatch_t *v, PyObject *data_obj, PyObject **mv, const uint8_t *b, Py_ssize_t n, Py_ssize_t i,
                       long long base_position, PyObject *decompress, int verify_crc) {
    v->plain = NULL;
    if (n - i < 61) return 0;
    const uint8_t *h = b + i;
    int64_t size = (int64_t)be32(h + 8) + 12;
    if (h[16] != 2 || size < 61 || size > n - i) return 0;
    int16_t attributes = be16(h + 21);
    uint32_t stored = (uint32_t)be32(h + 17);
    if (verify_crc && crc32c_compute(h + 21, (size_t)(size - 21)) != stored) return 0;
    int codec = attributes & 0x07;
    if (codec > 4) return 0;
    int32_t count = be32(h + 57);
    if (count < 0) return 0;
    v->h = h;
    v->size = size;
    v->attributes = attributes;
    v->count = count;
    v->base_offset = be64(h);
    v->base_ts = be64(h + 27);
    v->max_ts = be64(h + 35);
    v->pid = be64(h + 43);
    v->pe = be16(h + 51);
    v->txn = (attributes & 0x10) != 0;
    v->has_lat = (attributes & 0x08) != 0; /* LogAppendTime: every record takes MaxTimestamp */
    v->control = (attributes & 0x20) != 0;
    v->pos = (int64_t)base_position + i;
    v->rp = h + 61;
    v->re = h + size;
    if (codec) {
        PyObject *plain = codec == 1 ? gunzip_one_member(h + 61, (size_t)(size - 61)) : NULL;
        if (!plain) {
            if (!*mv && !(*mv = PyMemoryView_FromObject(data_obj))) return -1;
            PyObject *slice = PySequence_GetSlice(*mv, i + 61, i + (Py_ssize_t)size);
            if (!slice) return -1;
            plain = PyObject_CallFunction(decompress, "iO", codec, slice);
            Py_DECREF(slice);
            if (!plain) return -1;
            if (!PyBytes_Check(plain)) { Py_DECREF(plain); return 0; } /* None: it does not decompress */
        }
        v->plain = plain;
        v->rp = (const uint8_t *)PyBytes_AS_STRING(plain);
        v->re = v->rp + PyBytes_GET_SIZE(plain);
    }
    if (count > v->re - v->rp) {
        Py_CLEAR(v->plain);
        return 0;
    }
    return 1;
}

/* The records of a control batch as transaction markers: (position, offset, timestamp,
 * producer_id, producer_epoch, transactional, type, coordinator epoch | None, index, True)
 * appended to out. ControlRecordType.parse: key version int16 >= 0 then type int16; for
 * COMMIT (1) / ABORT (0) the value is EndTransactionMarker: version int16 >= 0 then
 * CoordinatorEpoch int32 (kgtool.codec.batch.parse_control_record). 1 ok, 0 anything else
 * (records malformed, or a key/value parse_control_record rejects: the caller removes what was
 * appended and declines), -1 Python error. */
static int control_records(const vbatch_t *v, PyObject *out, Py_ssize_t index) {
    const uint8_t *p = v->rp;
    for (int32_t r = 0; r < v->count; r++) {
        rec_t rec;
        rerr_t er;
        if (parse_record(&p, v->re, &rec, &er)) return 0;
        if (!rec.key || rec.klen < 4 || be16(rec.key) < 0) return 0;
        int16_t type = be16(rec.key + 2);
        PyObject *epoch;
        if (type == 0 || type == 1) {
            if (!rec.value || rec.vlen < 6 || be16(rec.value) < 0) return 0;
            if (!(epoch = PyLong_FromLong(be32(rec.value + 2)))) return -1;
        } else {
            epoch = Py_None;
            Py_INCREF(epoch);
        }
        int64_t ts = v->has_lat ? v->max_ts : wrap_add(v->base_ts, rec.ts_delta);
        int64_t roff = wrap_add(v->base_offset, rec.off_delta);
        PyObject *t = Py_BuildValue("(LLLLiiiNnO)", (long long)v->pos, (long long)roff, (long long)ts,
                                    (long long)v->pid, (int)v->pe, v->txn, (int)type, epoch, index, Py_True);
        if (!t) return -1;
        int rc = PyList_Append(out, t);
        Py_DECREF(t);
        if (rc) return -1;
    }
    return p == v->re;
}

/* CommitScanner.scan(data, i, hi, base_position, max_rows, decompress, raw) -> (j, declined)
 *
 * Walks the batch chain from index i while the batch at i starts before hi and is one the
 * general path would decode without a problem: v2 (DefaultRecordBatch), vbatch_open's checks,
 * every record well-formed (DefaultRecord.readFrom) and nothing after the last one ("records
 * still remaining"), and for a control batch every record a control record
 * parse_control_record accepts. Plain offset commits go into the columns, other records and
 * markers into `raw` (see raw_append, control_records). Stops after the batch that brings the
 * rows to max_rows (declined 0), at hi (0), or before a batch it declines (declined 1: the
 * caller takes exactly that entry on the general path). */
static PyObject *cols_scan(ColsObject *self, PyObject *args) {
    PyObject *data_obj, *decompress, *raw;
    Py_ssize_t i, hi, max_rows;
    long long base_position;
    if (!PyArg_ParseTuple(args, "OnnLnOO!", &data_obj, &i, &hi, &base_position, &max_rows, &decompress,
                          &PyList_Type, &raw))
        return NULL;
    Py_buffer buf;
    if (PyObject_GetBuffer(data_obj, &buf, PyBUF_SIMPLE)) return NULL;
    const uint8_t *b = (const uint8_t *)buf.buf;
    Py_ssize_t n = buf.len;
    PyObject *mv = NULL;
    int declined = 0;
    if (i < 0) i = 0;
    if (hi > n) hi = n;
    while (i < hi && self->n < max_rows) {
        vbatch_t v;
        int rc = vbatch_open(&v, data_obj, &mv, b, n, i, base_position, decompress, 1);
        if (rc < 0) goto error;
        if (rc == 0) { declined = 1; break; }
        cols_mark_t mark;
        cols_mark(self, raw, &mark);
        int ok;
        if (v.control) {
            ok = control_records(&v, raw, self->n);
            if (ok < 0) { Py_XDECREF(v.plain); goto error; }
        } else {
            const uint8_t *p = v.rp;
            ok = 1;
            for (int32_t r = 0; r < v.count; r++) {
                rec_t rec;
                rerr_t er;
                if (parse_record(&p, v.re, &rec, &er)) { ok = 0; break; }
                int64_t ts = v.has_lat ? v.max_ts : wrap_add(v.base_ts, rec.ts_delta);
                int64_t roff = wrap_add(v.base_offset, rec.off_delta);
                int c = cols_offer(self, v.pos, roff, ts, v.pid, v.pe, v.txn, rec.key, rec.klen, rec.value, rec.vlen);
                if (c < 0) { Py_XDECREF(v.plain); PyErr_NoMemory(); goto error; }
                if (c == 0 && raw_append(raw, v.pos, roff, ts, v.pid, v.pe, v.txn, rec.key, rec.klen, rec.value,
                                         rec.vlen, self->n)) {
                    Py_XDECREF(v.plain);
                    goto error;
                }
            }
            if (ok && p != v.re) ok = 0; /* "Incorrect declared batch size, records still remaining" */
        }
        Py_XDECREF(v.plain);
        if (!ok) {
            if (cols_rollback(self, raw, &mark)) goto error;
            declined = 1;
            break;
        }
        {   /* MemoryRecords.filterTo keeps a cleaned batch's base and last offset
             * (overrideLastOffset), writes an emptied one as a header (writeEmptyHeader) and
             * sets the delete horizon (attribute bit 6) on batches with tombstones or markers */
            int64_t delta = be32(v.h + 23);
            int horizon = (v.attributes & 0x40) != 0;
            if (v.count == 0) self->empty_batches++;
            if (horizon) self->horizon_batches++;
            if (v.count == 0 || (int64_t)v.count < delta + 1 || horizon) {
                int64_t end = wrap_add(v.base_offset, delta) + 1;
                if (end > self->sign_end) self->sign_end = end;
            }
        }
        i += (Py_ssize_t)v.size;
    }
    Py_XDECREF(mv);
    PyBuffer_Release(&buf);
    return Py_BuildValue("(ni)", i, declined);
error:
    Py_XDECREF(mv);
    PyBuffer_Release(&buf);
    return NULL;
}

/* CommitScanner.add(position, offset, timestamp, producer_id, producer_epoch, transactional,
 * key, value) -> bool: a record decoded by the general path (legacy message sets, ...). */
static PyObject *cols_add(ColsObject *self, PyObject *args) {
    long long pos, roff, ts, pid;
    int pe, txn;
    PyObject *ko, *vo;
    if (!PyArg_ParseTuple(args, "LLLLipOO", &pos, &roff, &ts, &pid, &pe, &txn, &ko, &vo)) return NULL;
    Py_buffer kb, vb;
    int hk = 0, hv = 0, rc = 0;
    if (ko != Py_None) {
        if (PyObject_GetBuffer(ko, &kb, PyBUF_SIMPLE)) return NULL;
        hk = 1;
    }
    if (vo != Py_None) {
        if (PyObject_GetBuffer(vo, &vb, PyBUF_SIMPLE)) { if (hk) PyBuffer_Release(&kb); return NULL; }
        hv = 1;
    }
    if ((hk && kb.len > INT32_MAX) || (hv && vb.len > INT32_MAX)) rc = 0;
    else
        rc = cols_offer(self, pos, roff, ts, pid, (int16_t)pe, txn, hk ? (const uint8_t *)kb.buf : NULL,
                        hk ? (int32_t)kb.len : -1, hv ? (const uint8_t *)vb.buf : NULL, hv ? (int32_t)vb.len : -1);
    if (hk) PyBuffer_Release(&kb);
    if (hv) PyBuffer_Release(&vb);
    if (rc < 0) return PyErr_NoMemory();
    return PyBool_FromLong(rc);
}

/* CommitScanner.take() -> (n, record_offset, position, timestamp, producer_id, producer_epoch,
 * transactional, key, version, offset, leader_epoch, metadata, commit_timestamp,
 * expire_timestamp, topic_id, metadata_values, topic_id_values): the columns as ColumnBuffers
 * (native byte order, no copy), the chunk's metadata strings and its TopicIds (16 raw bytes
 * each); the columns and the tables start over. */
static PyObject *cols_take(ColsObject *self, PyObject *noargs) {
    Py_ssize_t n = self->n;
    PyObject *t = PyTuple_New(NCOLS + 3);
    if (!t) return NULL;
    PyObject *metas = PyList_New(self->metas.count);
    if (!metas) goto fail;
    PyTuple_SET_ITEM(t, NCOLS + 1, metas);
    for (int32_t c = 0; c < self->metas.count; c++) {
        PyObject *s = intern_str(&self->metas, c);
        if (!s) goto fail;
        PyList_SET_ITEM(metas, c, s);
    }
    PyObject *tids = PyList_New(self->tids.count);
    if (!tids) goto fail;
    PyTuple_SET_ITEM(t, NCOLS + 2, tids);
    for (int32_t c = 0; c < self->tids.count; c++) {
        PyObject *b = PyBytes_FromStringAndSize((const char *)self->tids.arena + self->tids.strs[c].off, 16);
        if (!b) goto fail;
        PyList_SET_ITEM(tids, c, b);
    }
    PyObject *o = PyLong_FromSsize_t(n);
    if (!o) goto fail;
    PyTuple_SET_ITEM(t, 0, o);
    for (int k = 0; k < NCOLS; k++) {
        BufObject *b = PyObject_New(BufObject, &BufType);
        if (!b) goto fail;
        b->p = NULL;
        b->cap = 0;
        b->len = 0;
        PyTuple_SET_ITEM(t, k + 1, (PyObject *)b);
    }
    if (n) { /* hand the blocks over (an empty chunk keeps them) */
        for (int k = 0; k < NCOLS; k++) {
            BufObject *b = (BufObject *)PyTuple_GET_ITEM(t, k + 1);
            b->p = self->u.col[k];
            b->cap = self->colcap[k];
            b->len = n * (Py_ssize_t)col_size[k];
            self->u.col[k] = NULL;
            self->colcap[k] = 0;
        }
        self->cap = 0;
    }
    self->n = 0;
    self->empty_meta = -1;
    if (intern_truncate(&self->metas, 0) || intern_truncate(&self->tids, 0)) { Py_DECREF(t); return PyErr_NoMemory(); }
    return t;
fail:
    Py_DECREF(t);
    return NULL;
}

static PyObject *cols_get_n(ColsObject *self, void *closure) { return PyLong_FromSsize_t(self->n); }

/* CommitScanner.batch_signs() -> (empty_batches, horizon_batches, sign_end) of the batches
 * scanned since the last call; the counts start over. */
static PyObject *cols_batch_signs(ColsObject *self, PyObject *noargs) {
    PyObject *t = Py_BuildValue("(LLL)", (long long)self->empty_batches, (long long)self->horizon_batches,
                                (long long)self->sign_end);
    self->empty_batches = self->horizon_batches = 0;
    self->sign_end = -1;
    return t;
}

static PyMethodDef cols_methods[] = {
    {"scan", (PyCFunction)cols_scan, METH_VARARGS, "Walk plain v2 batches from an index, filling the columns."},
    {"add", (PyCFunction)cols_add, METH_VARARGS, "Offer one record decoded by the general path."},
    {"take", (PyCFunction)cols_take, METH_NOARGS, "The chunk's columns; start a new chunk."},
    {"batch_signs", (PyCFunction)cols_batch_signs, METH_NOARGS, "Cleaning signs of the batches scanned."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef cols_getset[] = {
    {"n", (getter)cols_get_n, NULL, "rows in the current chunk", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject ColsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kgtool.codec._speedups.CommitScanner",
    .tp_basicsize = sizeof(ColsObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Column buffers of plain offset commits (one chunk at a time).",
    .tp_new = cols_new,
    .tp_dealloc = (destructor)cols_dealloc,
    .tp_methods = cols_methods,
    .tp_getset = cols_getset,
};

/* scan_markers(data, i, hi, base_position, decompress, out) -> (j, declined)
 *
 * The transaction markers of a range without decoding anything else. Follows the chain from
 * index i past every entry that scan_segment steps over by exactly its own size without
 * yielding a marker: a header it trusts (LOG_OVERHEAD + magic readable, length >= 14 =
 * LegacyRecord.RECORD_OVERHEAD_V0, size >= the minimum of its magic, within the data) that is
 * not a v2 control batch; such an entry is a batch, or a crc_mismatch / malformed /
 * unsupported problem, never a CONTROL entry. Control batches that decode (vbatch_open,
 * control_records) append their markers to out. Stops at hi (declined 0) or before any other
 * entry (declined 1: a header needing resync or a tail, or a control batch that does not
 * decode: the caller takes exactly that entry on the general path). */
static PyObject *py_scan_markers(PyObject *self, PyObject *args) {
    PyObject *data_obj, *decompress, *out;
    Py_ssize_t i, hi;
    long long base_position;
    if (!PyArg_ParseTuple(args, "OnnLOO!", &data_obj, &i, &hi, &base_position, &decompress, &PyList_Type, &out))
        return NULL;
    Py_buffer buf;
    if (PyObject_GetBuffer(data_obj, &buf, PyBUF_SIMPLE)) return NULL;
    const uint8_t *b = (const uint8_t *)buf.buf;
    Py_ssize_t n = buf.len;
    PyObject *mv = NULL;
    int declined = 0;
    if (i < 0) i = 0;
    if (hi > n) hi = n;
    while (i < hi) {
        declined = 1;
        if (n - i < 17) break;
        const uint8_t *h = b + i;
        int32_t length = be32(h + 8);
        uint8_t magic = h[16];
        if (length < 14) break;
        int64_t size = (int64_t)length + 12;
        int64_t min = magic == 2 ? 61 : magic == 1 ? 34 : magic == 0 ? 26 : 0;
        if (size < min || size > n - i) break;
        if (magic == 2 && (be16(h + 21) & 0x20)) {
            vbatch_t v;
            int rc = vbatch_open(&v, data_obj, &mv, b, n, i, base_position, decompress, 1);
            if (rc < 0) goto error;
            if (rc == 0) break;
            Py_ssize_t before = PyList_GET_SIZE(out);
            rc = control_records(&v, out, 0);
            Py_XDECREF(v.plain);
            if (rc < 0) goto error;
            if (rc == 0) {
                if (PyList_SetSlice(out, before, PyList_GET_SIZE(out), NULL)) goto error;
                break;
            }
        }
        declined = 0;
        i += (Py_ssize_t)size;
    }
    if (i >= hi) declined = 0;
    Py_XDECREF(mv);
    PyBuffer_Release(&buf);
    return Py_BuildValue("(ni)", i, declined);
error:
    Py_XDECREF(mv);
    PyBuffer_Release(&buf);
    return NULL;
}

/* ------------------------------------------------------------------ GroupMetadataValue */
/* decode_group_metadata_value(value: bytes) -> dict | None
 *
 * GroupMetadataValue v0-v4 (group-coordinator/.../message/GroupMetadataValue.json) decoded into
 * exactly the dict the schema-generated decoder builds (kgtool.coordinator.schema): the same
 * keys in the same order per version, strings as str, subscription and assignment as bytes.
 * None (never an exception) for anything the generated decoder would warn about or reject:
 * an unknown version, a length out of bounds, a negative length other than a nullable field's
 * -1, invalid UTF-8, tagged fields (v4), a varint longer than 5 bytes, trailing bytes. The
 * caller then takes the generated decoder, which says what is wrong and where. */

typedef struct {
    const uint8_t *p, *end;
    int flexible;
} gmv_t;

/* A length prefix as Java reads it: INT16 (strings) or INT32 (bytes, arrays), or, flexible,
 * an unsigned varint minus one (ByteUtils.readUnsignedVarint() - 1, as an int). 0 ok. */
static inline int gmv_len(gmv_t *r, int wide, int64_t *out) {
    if (r->flexible) {
        uint32_t u;
        if (rd_uvarint(&r->p, r->end, &u)) return -1;
        *out = (int64_t)(int32_t)u - 1;
        return 0;
    }
    if (r->end - r->p < (wide ? 4 : 2)) return -1;
    *out = wide ? be32(r->p) : be16(r->p);
    r->p += wide ? 4 : 2;
    return 0;
}

/* A string (nullable: -1 is None); NULL on failure, with no Python error set. */
static PyObject *gmv_str(gmv_t *r, int nullable) {
    int64_t n;
    if (gmv_len(r, 0, &n)) return NULL;
    if (n == -1 && nullable) Py_RETURN_NONE;
    if (n < 0 || n > r->end - r->p) return NULL;
    PyObject *s = PyUnicode_DecodeUTF8((const char *)r->p, (Py_ssize_t)n, "strict");
    if (!s) {
        PyErr_Clear();
        return NULL;
    }
    r->p += n;
    return s;
}

static PyObject *gmv_bytes(gmv_t *r) {
    int64_t n;
    if (gmv_len(r, 1, &n) || n < 0 || n > r->end - r->p) return NULL;
    PyObject *b = PyBytes_FromStringAndSize((const char *)r->p, (Py_ssize_t)n);
    if (b) r->p += n;
    else PyErr_Clear();
    return b;
}

/* No tagged fields (v4): a count of 0. */
static inline int gmv_no_tags(gmv_t *r) {
    if (!r->flexible) return 0;
    uint32_t n;
    return rd_uvarint(&r->p, r->end, &n) || n != 0 ? -1 : 0;
}

/* The dict keys, interned once (the generated decoder's snake_case names). */
enum { K_MEMBER_ID, K_GROUP_INSTANCE_ID, K_CLIENT_ID, K_CLIENT_HOST, K_REBALANCE_TIMEOUT,
       K_SESSION_TIMEOUT, K_SUBSCRIPTION, K_ASSIGNMENT, K_PROTOCOL_TYPE, K_GENERATION, K_PROTOCOL,
       K_LEADER, K_CURRENT_STATE_TIMESTAMP, K_MEMBERS, K_COUNT };
static const char *gmv_names[K_COUNT] = {
    "member_id", "group_instance_id", "client_id", "client_host", "rebalance_timeout",
    "session_timeout", "subscription", "assignment", "protocol_type", "generation", "protocol",
    "leader", "current_state_timestamp", "members"};
static PyObject *gmv_keys[K_COUNT];

static int gmv_init(void) {
    for (int i = 0; i < K_COUNT; i++)
        if (!(gmv_keys[i] = PyUnicode_InternFromString(gmv_names[i]))) return -1;
    return 0;
}

static int gmv_set(PyObject *d, int k, PyObject *v) {
    if (!v) return -1;
    int rc = PyDict_SetItem(d, gmv_keys[k], v);
    Py_DECREF(v);
    if (rc) PyErr_Clear();
    return rc;
}

static PyObject *gmv_member(gmv_t *r, int version) {
    PyObject *d = PyDict_New();
    if (!d) {
        PyErr_Clear();
        return NULL;
    }
    if (gmv_set(d, K_MEMBER_ID, gmv_str(r, 0))) goto fail;
    if (version >= 3 && gmv_set(d, K_GROUP_INSTANCE_ID, gmv_str(r, 1))) goto fail;
    if (gmv_set(d, K_CLIENT_ID, gmv_str(r, 0))) goto fail;
    if (gmv_set(d, K_CLIENT_HOST, gmv_str(r, 0))) goto fail;
    if (version >= 1) {
        if (r->end - r->p < 4 || gmv_set(d, K_REBALANCE_TIMEOUT, PyLong_FromLong(be32(r->p)))) goto fail;
        r->p += 4;
    }
    if (r->end - r->p < 4 || gmv_set(d, K_SESSION_TIMEOUT, PyLong_FromLong(be32(r->p)))) goto fail;
    r->p += 4;
    if (gmv_set(d, K_SUBSCRIPTION, gmv_bytes(r))) goto fail;
    if (gmv_set(d, K_ASSIGNMENT, gmv_bytes(r))) goto fail;
    if (gmv_no_tags(r)) goto fail;
    return d;
fail:
    Py_DECREF(d);
    return NULL;
}

static PyObject *py_decode_group_metadata_value(PyObject *self, PyObject *arg) {
    if (!PyBytes_Check(arg)) Py_RETURN_NONE;
    const uint8_t *p = (const uint8_t *)PyBytes_AS_STRING(arg);
    Py_ssize_t n = PyBytes_GET_SIZE(arg);
    if (n < 2) Py_RETURN_NONE;
    int version = be16(p);
    if (version < 0 || version > 4) Py_RETURN_NONE;
    gmv_t r = {p + 2, p + n, version >= 4};
    PyObject *d = PyDict_New(), *members = NULL;
    if (!d) return NULL;
    if (gmv_set(d, K_PROTOCOL_TYPE, gmv_str(&r, 0))) goto none;
    if (r.end - r.p < 4 || gmv_set(d, K_GENERATION, PyLong_FromLong(be32(r.p)))) goto none;
    r.p += 4;
    if (gmv_set(d, K_PROTOCOL, gmv_str(&r, 1))) goto none;
    if (gmv_set(d, K_LEADER, gmv_str(&r, 1))) goto none;
    if (version >= 2) {
        if (r.end - r.p < 8 || gmv_set(d, K_CURRENT_STATE_TIMESTAMP, PyLong_FromLongLong(be64(r.p)))) goto none;
        r.p += 8;
    }
    int64_t count;
    /* each member takes at least 14 bytes: no list larger than the bytes could hold */
    if (gmv_len(&r, 1, &count) || count < 0 || count > (r.end - r.p) / 14) goto none;
    members = PyList_New((Py_ssize_t)count);
    if (!members) goto none;
    for (int64_t i = 0; i < count; i++) {
        PyObject *m = gmv_member(&r, version);
        if (!m) goto none;
        PyList_SET_ITEM(members, (Py_ssize_t)i, m);
    }
    if (gmv_no_tags(&r) || r.p != r.end) goto none;
    if (PyDict_SetItem(d, gmv_keys[K_MEMBERS], members)) goto none;
    Py_DECREF(members);
    return d;
none:
    PyErr_Clear();
    Py_XDECREF(members);
    Py_DECREF(d);
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ resynchronisation */
/*
 * resync_v2(data, i, limit, max_message_size) -> (index | -1, crc_bytes)
 *
 * kgtool.codec.segment._resync in C (the pure-Python twin, _resync_py, finds the same index):
 * the first index q in (i, limit) holding a v2 batch header that is plausible
 * (v2_header_plausible) and lies within the data, whose CRC-32C checks out. crc_bytes: the
 * bytes run through CRC-32C (tests bound it).
 *
 * Linear whatever the data: candidates are screened eight at a time on two bytes, then on the
 * cheap header fields, and a candidate's CRC costs O(1) however long its span: a short span is
 * checksummed directly; a long one from two prefix CRCs (crc32c_shift), a running one at the
 * span's start (start positions only grow) and one at its end from checkpoints every
 * RESYNC_STRIDE bytes, extended as far as some candidate's end needs (each byte once).
 */

#define RESYNC_DIRECT 256  /* spans up to this many bytes: CRC-32C directly */
#define RESYNC_STRIDE 128  /* prefix-CRC checkpoint spacing */

/* The header fields of a v2 batch at h (61 bytes readable) are ones Kafka writes: magic 2,
 * length from the minimum (RECORD_BATCH_OVERHEAD - LOG_OVERHEAD = 49) to max_len
 * (ByteBufferLogInputStream: "Record size %d exceeds the largest allowable message size"),
 * base offset >= 0, partition leader epoch >= -1 (RecordBatch.NO_PARTITION_LEADER_EPOCH),
 * attributes with a known codec (CompressionType.forId: 0-4) and none of the unused bits 7-15
 * (DefaultRecordBatch), record count >= 0 ("Found invalid record count"). Twin of
 * segment._v2_candidates and segment.implausible_header. */
static inline int v2_header_plausible(const uint8_t *h, int64_t max_len) {
    if (h[16] != 2 || (h[0] & 0x80) || h[21] != 0 || (h[22] & 0x80) || (h[22] & 0x07) > 4 || (h[57] & 0x80))
        return 0;
    int32_t length = be32(h + 8);
    return length >= 49 && (int64_t)length <= max_len && be32(h + 12) >= -1;
}

typedef struct {
    const uint8_t *b;
    Py_ssize_t o;       /* origin: prefix CRCs are of b[o:k] */
    Py_ssize_t pa;      /* running prefix: ca = crc32c(b[o:pa]) */
    uint32_t ca;
    uint32_t *ck;       /* ck[j] = crc32c(b[o : o + j * RESYNC_STRIDE]) */
    Py_ssize_t nck, capck;
    unsigned long long work;
} prefix_t;

/* crc32c(b[o:k]) for k at or after the last call's. */
static inline uint32_t prefix_running(prefix_t *x, Py_ssize_t k) {
    x->ca = crc32c_extend(x->ca, x->b + x->pa, (size_t)(k - x->pa));
    x->work += (unsigned long long)(k - x->pa);
    x->pa = k;
    return x->ca;
}

/* crc32c(b[o:k]) for any k >= o; 0 ok, -1 out of memory. */
static int prefix_at(prefix_t *x, Py_ssize_t k, uint32_t *out) {
    Py_ssize_t j = (k - x->o) / RESYNC_STRIDE;
    if (j >= x->nck) {
        if (j >= x->capck) {
            Py_ssize_t cap = x->capck ? x->capck : 1024;
            while (cap <= j) cap *= 2;
            uint32_t *c = (uint32_t *)realloc(x->ck, (size_t)cap * sizeof(uint32_t));
            if (!c) return -1;
            x->ck = c;
            x->capck = cap;
        }
        if (x->nck == 0) x->ck[x->nck++] = 0;
        while (x->nck <= j) {
            const uint8_t *p = x->b + x->o + (x->nck - 1) * RESYNC_STRIDE;
            x->ck[x->nck] = crc32c_extend(x->ck[x->nck - 1], p, RESYNC_STRIDE);
            x->work += RESYNC_STRIDE;
            x->nck++;
        }
    }
    Py_ssize_t base = x->o + j * RESYNC_STRIDE;
    *out = crc32c_extend(x->ck[j], x->b + base, (size_t)(k - base));
    x->work += (unsigned long long)(k - base);
    return 0;
}

/* Whether the batch at q (a candidate: v2_header_plausible) checks out: 1 yes, 0 no, -1 out of
 * memory. */
static int resync_check(prefix_t *x, Py_ssize_t n, Py_ssize_t q, int64_t max_len) {
    const uint8_t *h = x->b + q;
    if (!v2_header_plausible(h, max_len)) return 0;
    int64_t size = (int64_t)be32(h + 8) + 12;
    if (size > n - q) return 0;
    uint32_t stored = (uint32_t)be32(h + 17), crc;
    size_t span = (size_t)(size - 21);
    if (span <= RESYNC_DIRECT) {
        crc = crc32c_compute(h + 21, span);
        x->work += span;
    } else {
        uint32_t head = prefix_running(x, q + 21), whole;
        if (prefix_at(x, q + (Py_ssize_t)size, &whole)) return -1;
        crc = whole ^ crc32c_shift(head, (uint32_t)span);
    }
    return crc == stored;
}

static inline uint64_t load64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* A nonzero byte lane where v has a zero byte (maybe extra lanes above a real one: a filter). */
static inline uint64_t zero_lanes(uint64_t v) {
    return (v - 0x0101010101010101ull) & ~v & 0x8080808080808080ull;
}

/* The index (or -1; -2 out of memory); see resync_v2 above. Eight positions at a time are
 * screened on two bytes (magic 2, attributes' high byte 0) before anything else. */
static Py_ssize_t resync_scan(const uint8_t *b, Py_ssize_t n, Py_ssize_t i, Py_ssize_t limit, int64_t max_len,
                              unsigned long long *work) {
    prefix_t x = {b, i + 1, i + 1, 0, NULL, 0, 0, 0}; /* every span starts after i + 1 */
    Py_ssize_t found = -1;
    Py_ssize_t qend = limit < n - 60 ? limit : n - 60; /* q < qend: q + 61 <= n */
    Py_ssize_t q = i + 1;
    while (q < qend) {
        Py_ssize_t stop = qend - q >= 8 ? q + 8 : qend;
        if (stop - q == 8 &&
            !(zero_lanes(load64(b + q + 16) ^ 0x0202020202020202ull) & zero_lanes(load64(b + q + 21)))) {
            q = stop;
            continue;
        }
        for (; q < stop; q++) {
            if (b[q + 16] != 2 || b[q + 21] != 0) continue;
            int rc = resync_check(&x, n, q, max_len);
            if (rc) {
                found = rc > 0 ? q : -2;
                goto done;
            }
        }
    }
done:
    free(x.ck);
    *work = x.work;
    return found;
}

static PyObject *py_resync_v2(PyObject *self, PyObject *args) {
    PyObject *data_obj;
    Py_ssize_t i, limit;
    long long max_len;
    if (!PyArg_ParseTuple(args, "OnnL", &data_obj, &i, &limit, &max_len)) return NULL;
    Py_buffer buf;
    if (PyObject_GetBuffer(data_obj, &buf, PyBUF_SIMPLE)) return NULL;
    Py_ssize_t n = buf.len;
    if (i < -1) i = -1;
    if (limit > n) limit = n;
    if (xpow_init()) { PyBuffer_Release(&buf); return PyErr_NoMemory(); }
    unsigned long long work = 0;
    Py_ssize_t q = resync_scan((const uint8_t *)buf.buf, n, i, limit, (int64_t)max_len, &work);
    PyBuffer_Release(&buf);
    if (q == -2) return PyErr_NoMemory();
    return Py_BuildValue("(nK)", q, work);
}

/* crc32c_shift(crc, n) -> crc * x^(8n) mod P: crc32c(a + b) == crc32c_shift(crc32c(a), len(b)) ^ crc32c(b). */
static PyObject *py_crc32c_shift(PyObject *self, PyObject *args) {
    unsigned long crc;
    long long n;
    if (!PyArg_ParseTuple(args, "kL", &crc, &n)) return NULL;
    if (n < 0 || n > 0x7fffffffLL || crc > 0xffffffffUL) {
        PyErr_SetString(PyExc_ValueError, "crc32c_shift: crc must fit 32 bits and n be in [0, 2**31)");
        return NULL;
    }
    if (xpow_init()) return PyErr_NoMemory();
    return PyLong_FromUnsignedLong(crc32c_shift((uint32_t)crc, (uint32_t)n));
}

/* crc32c(data[, crc]): CRC-32C of data, continuing from a previous result `crc`. */
static PyObject *py_crc32c(PyObject *self, PyObject *args) {
    Py_buffer buf;
    unsigned int init = 0;
    if (!PyArg_ParseTuple(args, "y*|I", &buf, &init)) return NULL;
    uint32_t c = crc32c_extend(init, (const uint8_t *)buf.buf, (size_t)buf.len);
    PyBuffer_Release(&buf);
    return PyLong_FromUnsignedLong(c);
}

/* ---- the varint readers for Python callers: f(buf, i, end[, field]) -> (value, index after);
 * a malformed varint raises the class primitives registers (VarintError(i, reason, field)). */

static PyObject *py_crc32c_path(PyObject *self, PyObject *args) { return PyUnicode_FromString(crc_path()); }

static PyObject *varint_error = NULL;

static PyObject *py_set_varint_error(PyObject *self, PyObject *cls) {
    Py_XINCREF(cls);
    Py_XSETREF(varint_error, cls);
    Py_RETURN_NONE;
}

/* kind: 0 unsigned varint, 1 varint, 2 varlong */
static PyObject *read_base128_py(PyObject *args, int kind) {
    PyObject *obj, *field = Py_None;
    Py_ssize_t i, end;
    if (!PyArg_ParseTuple(args, "Onn|O", &obj, &i, &end, &field)) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_SIMPLE) < 0) return NULL;
    if (end > view.len) end = view.len;
    if (i < 0) i = 0;
    const uint8_t *b = (const uint8_t *)view.buf;
    const uint8_t *p = b + i, *e = b + (end > i ? end : i);
    int maxb = kind == 2 ? 10 : 5;
    uint64_t v = 0;
    int c = rd_base128(&p, e, maxb, &v);
    PyBuffer_Release(&view);
    if (c) {
        static const char *what[] = {"unsigned varint", "varint", "varlong"};
        PyObject *reason = c == 1
            ? PyUnicode_FromFormat("%s runs past the end of the data", what[kind])
            : PyUnicode_FromFormat("%s is too long: the continuation bit is set in byte %d (at most %d bytes)",
                                   what[kind], maxb, maxb);
        if (!reason) return NULL;
        PyObject *exc = PyObject_CallFunction(varint_error ? varint_error : PyExc_ValueError, "nOO", i, reason, field);
        Py_DECREF(reason);
        if (!exc) return NULL;
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
        Py_DECREF(exc);
        return NULL;
    }
    Py_ssize_t next = p - b;
    if (kind == 0) return Py_BuildValue("kn", (unsigned long)(uint32_t)v, next);
    if (kind == 1) {
        uint32_t u = (uint32_t)v;
        return Py_BuildValue("in", (int)(int32_t)((u >> 1) ^ (0u - (u & 1))), next);
    }
    return Py_BuildValue("Ln", (long long)(int64_t)((v >> 1) ^ (0ull - (v & 1))), next);
}

static PyObject *py_read_unsigned_varint(PyObject *self, PyObject *args) { return read_base128_py(args, 0); }
static PyObject *py_read_varint(PyObject *self, PyObject *args) { return read_base128_py(args, 1); }
static PyObject *py_read_varlong(PyObject *self, PyObject *args) { return read_base128_py(args, 2); }

#include "_dump.h"
#include "_seek.h"

static PyMethodDef methods[] = {
    {"seek_sweep", py_seek_sweep, METH_VARARGS, "ListOffsets by timestamp, or the timestamp at an offset, for many keys of one segment."},
    {"dump_tuples", py_dump_tuples, METH_VARARGS, "Decoded records (field tuples) as decode-batch prints them."},
    {"dump_records", py_dump_records, METH_VARARGS, "Records of a v2 batch as decode-batch prints them."},
    {"dump_segment", py_dump_segment, METH_VARARGS, "Plain v2 batches as decode-batch prints them (JSON Lines, JSON, text)."},
    {"decode_records_v2", py_decode_records_v2, METH_VARARGS, "Decode the records of a v2 records section."},
    {"index_records_v2", py_index_records_v2, METH_VARARGS, "Check the records of a v2 records section; chunk marks."},
    {"index_legacy_inner", py_index_legacy_inner, METH_VARARGS, "Check an inner message set; chunk marks."},
    {"decode_legacy_inner", py_decode_legacy_inner, METH_VARARGS, "Decode checked inner messages."},
    {"summarize_legacy_inner", py_summarize_legacy_inner, METH_VARARGS, "Summarize checked inner messages."},
    {"summarize_records_v2", py_summarize_records_v2, METH_VARARGS, "Summarize the records of a records section."},
    {"summarize_segment", py_summarize_segment, METH_VARARGS, "Summarize plain v2 batches from an index."},
    {"scan_markers", py_scan_markers, METH_VARARGS, "Transaction markers of a range, decoding only control batches."},
    {"decode_group_metadata_value", py_decode_group_metadata_value, METH_O,
     "GroupMetadataValue v0-v4 as the schema decoder's dict, or None for anything unusual."},
    {"crc32c", py_crc32c, METH_VARARGS, "CRC-32C (Castagnoli)."},
    {"crc32c_path", py_crc32c_path, METH_NOARGS, "The CRC-32C instructions in use: sse4.2, armv8-crc32 or table."},
    {"crc32c_shift", py_crc32c_shift, METH_VARARGS, "crc * x^(8n) mod the CRC-32C polynomial."},
    {"resync_v2", py_resync_v2, METH_VARARGS, "The next plausible v2 batch whose CRC-32C checks out."},
    {"read_unsigned_varint", py_read_unsigned_varint, METH_VARARGS, "ByteUtils.readUnsignedVarint: (value, index after)."},
    {"read_varint", py_read_varint, METH_VARARGS, "ByteUtils.readVarint: (value, index after)."},
    {"read_varlong", py_read_varlong, METH_VARARGS, "ByteUtils.readVarlong: (value, index after)."},
    {"set_varint_error", py_set_varint_error, METH_O, "The exception class the varint readers raise."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, "_speedups", "kgtool codec hot loops", -1, methods};

PyMODINIT_FUNC PyInit__speedups(void) {
    crc_init();
    crc32_init();
    if (gmv_init() < 0) return NULL;
    if (PyType_Ready(&KeyIndexType) < 0 || PyType_Ready(&ColsType) < 0 || PyType_Ready(&BufType) < 0) return NULL;
    PyObject *m = PyModule_Create(&moddef);
    if (!m) return NULL;
    Py_INCREF(&KeyIndexType);
    if (PyModule_AddObject(m, "KeyIndex", (PyObject *)&KeyIndexType) < 0) {
        Py_DECREF(&KeyIndexType);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&ColsType);
    if (PyModule_AddObject(m, "CommitScanner", (PyObject *)&ColsType) < 0) {
        Py_DECREF(&ColsType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
