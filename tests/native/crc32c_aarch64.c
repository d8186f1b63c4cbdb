/* The aarch64 CRC-32C path of kgtool/codec/_speedups.c (ARMv8 CRC32 instructions) against its
 * table, run under qemu-aarch64 by .ci/compilers: many lengths and alignments, and the check
 * value of "123456789" (0xE3069283, RFC 3720 appendix B.4). The rest of the extension is
 * linked with its Python and zlib symbols unresolved: only the CRC functions run. */
#include "../../kgtool/codec/_speedups.c"
#include <stdio.h>
int main(void) {
    crc_init();
    printf("path %s\n", crc_path());
    if (!have_arm_crc) return 2;
    static uint8_t buf[5000];
    uint32_t x = 12345;
    for (size_t i = 0; i < sizeof buf; i++) { x = x * 1103515245u + 12345u; buf[i] = (uint8_t)(x >> 16); }
    int bad = 0, n = 0;
    for (size_t off = 0; off < 9; off++)
        for (size_t len = 0; len + off <= sizeof buf; len += len < 64 ? 1 : 97, n++) {
            uint32_t hw = crc32c_compute(buf + off, len);
            uint32_t sw = crc_sw(0xFFFFFFFFu, buf + off, len) ^ 0xFFFFFFFFu;
            if (hw != sw) bad++;
        }
    uint32_t check = crc32c_compute((const uint8_t *)"123456789", 9);
    printf("%d lengths, %d differ; check 0x%08X\n", n, bad, check);
    return bad || check != 0xE3069283u;
}
